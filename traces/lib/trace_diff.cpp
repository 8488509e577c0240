#include "traces/lib/trace_diff.h"

#include <cstdio>
#include <algorithm>
#include <map>

namespace mcsim::trace {

namespace {

// A call's duration, a launch's kernel's where the trace has it.
double durationNs(const Record& r, bool* timed) {
  *timed = r.hasSimTime || r.hasWallTime || r.hasKernelTime;
  if (r.hasKernelTime) return static_cast<double>(r.kernelEndPs - r.kernelStartPs) / 1000.0;
  if (r.hasSimTime) return static_cast<double>(r.t1Ps - r.t0Ps) / 1000.0;
  return static_cast<double>(r.durNs);
}

bool isLaunch(const Record& r) { return trace::isLaunch(callTable()[r.call]) && r.args.contains("kernel"); }

// The durations table's row of a call: its name, and a launch's kernel ("cuLaunchKernel mcsim_barrier").
std::string durationKey(const Record& r) {
  std::string key = callTable()[r.call].base;
  if (isLaunch(r) && r.args.at("kernel").is_string()) key += " " + r.args.at("kernel").get<std::string>();
  return key;
}

// A record's outputs without their data digests (compared apart).
Json withoutDigests(const Record& r) {
  Json out = r.out;
  if (!out.is_object()) return out;
  const CallDesc& d = callTable()[r.call];
  for (int i = 0; i < d.nparams; ++i) {
    if (d.params[i].kind == Kind::kHostOut && out.contains(d.params[i].name)) out.erase(d.params[i].name);
  }
  return out;
}

// The data digests of a record's host output buffers, by parameter.
std::map<std::string, std::string> digests(const Record& r) {
  std::map<std::string, std::string> out;
  if (!r.out.is_object()) return out;
  const CallDesc& d = callTable()[r.call];
  for (int i = 0; i < d.nparams; ++i) {
    const ParamDesc& p = d.params[i];
    if (p.kind != Kind::kHostOut || !r.out.contains(p.name)) continue;
    const Json& v = r.out.at(p.name);
    if (v.is_object() && v.contains("digest")) out[p.name] = v.at("digest").dump();
  }
  return out;
}

std::string where(const Trace& t, const Record& r) { return t.path + ":" + std::to_string(r.line); }


std::string shortDump(const Json& j) {
  std::string s = j.dump();
  return s.size() <= 160 ? s : s.substr(0, 150) + "...(" + std::to_string(s.size()) + " chars)";
}

// The arguments (or outputs) that differ, by name, each value shortened (images run to megabytes).
std::string fieldsDifference(const Json& a, const Json& b) {
  if (!a.is_object() || !b.is_object()) return shortDump(a) + " vs " + shortDump(b);
  std::string s;
  for (const auto& [k, v] : a.items()) {
    const Json w = b.contains(k) ? b.at(k) : Json();
    if (v != w) s += (s.empty() ? "" : ", ") + k + " " + shortDump(v) + " vs " + shortDump(w);
  }
  for (const auto& [k, w] : b.items()) {
    if (!a.contains(k)) s += (s.empty() ? "" : ", ") + k + " (absent) vs " + shortDump(w);
  }
  return s;
}

// What a launch's two recordings differ in: the kernel, else the first parameter that differs.
std::string launchDifference(const Json& a, const Json& b) {
  const std::string name = a.value("kernel", Json()).is_string() ? a.at("kernel").get<std::string>() : std::string("?");
  if (a.value("kernel", Json()) != b.value("kernel", Json())) {
    return "kernel " + a.value("kernel", Json()).dump() + " vs " + b.value("kernel", Json()).dump();
  }
  for (const char* key : {"kernelParams", "extra"}) {
    const Json pa = a.value(key, Json()), pb = b.value(key, Json());
    if (pa == pb) continue;
    const Json la = pa.value("params", Json()), lb = pb.value("params", Json());
    if (la.is_array() && lb.is_array()) {
      for (size_t i = 0; i < std::max(la.size(), lb.size()); ++i) {
        const Json x = i < la.size() ? la[i] : Json(), y = i < lb.size() ? lb[i] : Json();
        if (x != y) return "kernel " + name + ", " + key + " parameter " + std::to_string(i) + ": " + shortDump(x) + " vs " + shortDump(y);
      }
    }
    return "kernel " + name + ", " + key + ": " + shortDump(pa) + " vs " + shortDump(pb);
  }
  return "kernel " + name + ": parameters " + shortDump(a) + " vs " + shortDump(b);
}

// Arguments as compared: mcsim's kernel library image is named by the trace, and two builds of it
// (a fatbin with nvcc, the PTX without) are the same library; an image file is compared by its
// bytes, not by where it lay. What the normalisation hides becomes a note.
// Host data held by digest only is not compared where data is not (DiffOptions::dataFrom): a
// replay read a pattern in its place.
Json comparableArgs(const Record& r, bool dataComparable, std::vector<std::string>* hidden) {
  Json args = r.args;
  const CallDesc& d = callTable()[r.call];
  for (int i = 0; i < d.nparams; ++i) {
    const ParamDesc& p = d.params[i];
    if (!args.contains(p.name) || !args.at(p.name).is_object()) continue;
    Json& a = args.at(p.name);
    if (p.kind == Kind::kHostIn && !dataComparable && !a.contains("data")) a.erase("digest");
    // A handle another process exported: its descriptor number (or a FABRIC handle's bytes) is
    // the importer's own, which no two runs share; the handle is the one `shared` names, and
    // that name is what a replay hands over by (never compared itself: a file's identity differs
    // between runs too).
    if (p.kind == Kind::kShareableIn && !r.shared.empty() && (a.contains("raw_fd") || a.contains("data"))) {
      a = Json{{"shared", "from another process"}};
    }
    // Where the recorder learned a launch's parameter layout says nothing of the launch.
    if (p.kind == Kind::kKernelParams || p.kind == Kind::kKernelExtra) a.erase("layout");
    if (p.kind != Kind::kImage && p.kind != Kind::kImageFile) continue;
    if (p.kind == Kind::kImageFile && a.contains("path")) {
      hidden->push_back(std::string(p.name) + " path " + a.at("path").dump());
      a.erase("path");
    }
    if (a.contains("library")) {
      hidden->push_back(std::string(p.name) + " " + a.value("format", Json()).dump() + " digest " + a.value("digest", Json()).dump());
      for (const char* k : {"format", "wrapper_version", "bytes", "digest"}) a.erase(k);
    }
  }
  return args;
}

// A record's node admissions, clock reads included, as number@simulation-runs: "12@3 13@3 14@5".
// (How many requests had finished before each is a lower bound the replay keeps to, not
// compared: a request that finishes a moment sooner changes no result.)
std::string admissionsText(const Record& r) {
  std::string s;
  for (const NodeAdmission& a : nodeAdmissionsInOrder(r)) {
    s += (s.empty() ? "" : " ") + std::to_string(a.number) + "@" + std::to_string(a.simRuns);
  }
  return s.empty() ? "none" : s;
}

}  // namespace

std::vector<UnrecordedData> unrecordedHostData(const Trace& t) {
  std::vector<UnrecordedData> list;
  for (size_t i = 0; i < t.records.size(); ++i) {
    const Record& r = t.records[i];
    const CallDesc& d = callTable()[r.call];
    for (int k = 0; k < d.nparams; ++k) {
      const ParamDesc& p = d.params[k];
      if (p.kind != Kind::kHostIn || !r.args.contains(p.name)) continue;
      const Json& a = r.args.at(p.name);
      // "unreadable": the program's buffer was shorter than its count, and the call failed there.
      if (!a.is_object() || a.contains("data") || a.value("unreadable", false) || !a.contains("bytes")) continue;
      list.push_back({i, where(t, r) + " " + d.symbol + " (" + a.at("bytes").dump() + " bytes of '" + p.name + "')"});
      break;
    }
  }
  return list;
}

std::string describeUnrecordedData(const Trace& t, const std::vector<UnrecordedData>& calls) {
  if (calls.empty()) return "";
  const uint64_t limit = t.header.value("data_limit", uint64_t{0});
  std::string s = std::to_string(calls.size()) + (calls.size() == 1 ? " call reads" : " calls read") +
                  " host data the trace holds by digest only (larger than MCSIM_RECORD_DATA=" + std::to_string(limit) +
                  " when recorded): " + calls.front().what;
  if (calls.size() > 1) s += " and " + std::to_string(calls.size() - 1) + " more";
  s += ". The replay fills it with a pattern, so data digests from that call on are not compared; record with "
       "MCSIM_RECORD_DATA set to the largest size or more to replay them exactly\n";
  return s;
}

bool bothSimulated(const Trace& a, const Trace& b) { return a.target == "mcsim" && b.target == "mcsim"; }

DiffResult diffTraces(const Trace& a, const Trace& b, const DiffOptions& o) {
  DiffResult res;
  const size_t n = std::min(a.records.size(), b.records.size());
  std::map<std::string, DurationRow> rows;
  for (size_t i = 0; i < n; ++i) {
    const Record& ra = a.records[i];
    const Record& rb = b.records[i];
    const std::string name = callTable()[ra.call].symbol;
    ++res.compared;
    if (ra.call != rb.call) {
      res.differences.push_back({i, "call " + std::to_string(i) + ": " + name + " (" + where(a, ra) + ") vs " +
                                        callTable()[rb.call].symbol + " (" + where(b, rb) + ")"});
      continue;
    }
    const std::string head = "call " + std::to_string(i) + " " + name + " (" + where(a, ra) + ", " + where(b, rb) + "): ";
    if (ra.result != rb.result) res.differences.push_back({i, head + "result " + ra.result + " vs " + rb.result});
    const bool dataComparable = i < o.dataFrom;
    const auto da = digests(ra), db = digests(rb);
    for (const auto& [param, digest] : da) {
      auto it = db.find(param);
      if (it != db.end() && it->second != digest) {
        if (dataComparable) {
          res.differences.push_back({i, head + "data digest of '" + param + "' " + digest + " vs " + it->second});
        } else {
          ++res.uncomparedDigests;
        }
      }
    }
    std::vector<Difference>& soft = o.exact ? res.differences : res.notes;
    if (ra.thread != rb.thread) soft.push_back({i, head + "thread " + std::to_string(ra.thread) + " vs " + std::to_string(rb.thread)});
    bool argsReported = false;
    if (o.compareLaunches && isLaunch(ra) && isLaunch(rb)) {
      const Json la = launchParamValues(ra.args), lb = launchParamValues(rb.args);
      if (la != lb) {
        res.differences.push_back({i, head + launchDifference(la, lb)});
        argsReported = true;
      }
    }
    std::vector<std::string> hiddenA, hiddenB;
    const Json ca = comparableArgs(ra, dataComparable, &hiddenA), cb = comparableArgs(rb, dataComparable, &hiddenB);
    if (!argsReported && ca != cb) soft.push_back({i, head + "arguments: " + fieldsDifference(ca, cb)});
    for (size_t k = 0; k < hiddenA.size() && k < hiddenB.size(); ++k) {
      if (hiddenA[k] != hiddenB[k]) res.notes.push_back({i, head + hiddenA[k] + " vs " + hiddenB[k]});
    }
    if (ra.result == rb.result && ra.out != rb.out) {
      const Json oa = dataComparable ? ra.out : withoutDigests(ra), ob = dataComparable ? rb.out : withoutDigests(rb);
      if (oa != ob) soft.push_back({i, head + "outputs: " + fieldsDifference(oa, ob)});
    }
    if (o.exact && ra.hasSimTime && rb.hasSimTime && (ra.t0Ps != rb.t0Ps || ra.t1Ps != rb.t1Ps)) {
      res.differences.push_back({i, head + "simulated time [" + std::to_string(ra.t0Ps) + ", " + std::to_string(ra.t1Ps) +
                                        "] ps vs [" + std::to_string(rb.t0Ps) + ", " + std::to_string(rb.t1Ps) + "] ps"});
    }
    // Where the calls fell in a shared node's admission order (both recorded on one).
    if (o.exact && !a.nodeSettings.is_null() && !b.nodeSettings.is_null()) {
      const std::string na = admissionsText(ra), nb = admissionsText(rb);
      if (na != nb) res.differences.push_back({i, head + "node admissions " + na + " vs " + nb});
    }
    if (o.exact && ra.hasKernelTime && rb.hasKernelTime &&
        (ra.kernelStartPs != rb.kernelStartPs || ra.kernelEndPs != rb.kernelEndPs)) {
      res.differences.push_back({i, head + "kernel ran [" + std::to_string(ra.kernelStartPs) + ", " +
                                        std::to_string(ra.kernelEndPs) + "] ps vs [" + std::to_string(rb.kernelStartPs) +
                                        ", " + std::to_string(rb.kernelEndPs) + "] ps"});
    }
  }
  // Durations per call name and per kernel, each trace's calls under their own names: two traces
  // of different kernels list both.
  for (const auto& [t, side] : {std::pair<const Trace*, int>{&a, 0}, std::pair<const Trace*, int>{&b, 1}}) {
    for (const Record& r : t->records) {
      bool timed = false;
      const double ns = durationNs(r, &timed);
      if (!timed) continue;
      DurationRow& row = rows[durationKey(r)];
      row.call = durationKey(r);
      ++(side == 0 ? row.count : row.countB);
      (side == 0 ? row.aNs : row.bNs) += ns;
    }
  }
  if (a.records.size() != b.records.size()) {
    res.differences.push_back({n, "the traces have " + std::to_string(a.records.size()) + " and " +
                                      std::to_string(b.records.size()) + " calls"});
  }
  for (auto& [name, row] : rows) res.durations.push_back(row);
  return res;
}

std::string describeDiff(const DiffResult& r, const Trace& a, const Trace& b, const std::string& verb,
                         const DiffOptions& o, bool withDurations) {
  std::string s = verb + " " + std::to_string(r.compared) + " calls, " + std::to_string(r.differences.size()) +
                  " differences\n";
  for (size_t i = 0; i < r.differences.size() && i < o.explain; ++i) s += "  " + r.differences[i].what + "\n";
  if (r.differences.size() > o.explain) s += "  ... and " + std::to_string(r.differences.size() - o.explain) + " more\n";
  if (r.uncomparedDigests > 0) {
    s += std::to_string(r.uncomparedDigests) + " data digests differ after host data the trace does not hold (not counted)\n";
  }
  if (!r.notes.empty()) {
    s += std::to_string(r.notes.size()) + " outputs or arguments differ (not counted: " + a.target + " vs " + b.target +
         " trace)\n";
    for (size_t i = 0; i < r.notes.size() && i < 3; ++i) s += "  note: " + r.notes[i].what + "\n";
  }
  if (withDurations && !r.durations.empty()) {
    s += "durations (ns, summed per call; ratio = B / A):\n";
    char line[200];
    for (const DurationRow& d : r.durations) {
      const double ratio = d.aNs > 0 ? d.bNs / d.aNs : 0;
      const std::string calls = d.count == d.countB ? std::to_string(d.count) + " calls"
                                                    : std::to_string(d.count) + " vs " + std::to_string(d.countB) + " calls";
      if (d.count == 0 || d.countB == 0) {
        std::snprintf(line, sizeof line, "  %-36s %12s  %14.0f  %14.0f  (only in %s)\n", d.call.c_str(), calls.c_str(), d.aNs,
                      d.bNs, d.count == 0 ? "B" : "A");
      } else if (d.aNs > 0) {
        std::snprintf(line, sizeof line, "  %-36s %12s  %14.0f  %14.0f  x%.3g\n", d.call.c_str(), calls.c_str(), d.aNs, d.bNs, ratio);
      } else {
        std::snprintf(line, sizeof line, "  %-36s %12s  %14.0f  %14.0f  (A took no time)\n", d.call.c_str(), calls.c_str(), d.aNs, d.bNs);
      }
      s += line;
    }
  }
  return s;
}

}  // namespace mcsim::trace
