#include "traces/lib/trace_diff.h"

#include <cstdio>
#include <map>

namespace mcsim::trace {

namespace {

double durationNs(const Record& r, bool* timed) {
  *timed = r.hasSimTime || r.hasWallTime;
  if (r.hasSimTime) return static_cast<double>(r.t1Ps - r.t0Ps) / 1000.0;
  return static_cast<double>(r.durNs);
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

}  // namespace

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
    const auto da = digests(ra), db = digests(rb);
    for (const auto& [param, digest] : da) {
      auto it = db.find(param);
      if (it != db.end() && it->second != digest) {
        res.differences.push_back({i, head + "data digest of '" + param + "' " + digest + " vs " + it->second});
      }
    }
    std::vector<Difference>& soft = o.exact ? res.differences : res.notes;
    if (ra.thread != rb.thread) soft.push_back({i, head + "thread " + std::to_string(ra.thread) + " vs " + std::to_string(rb.thread)});
    if (ra.args != rb.args) soft.push_back({i, head + "arguments " + ra.args.dump() + " vs " + rb.args.dump()});
    if (ra.result == rb.result && ra.out != rb.out) {
      soft.push_back({i, head + "outputs " + ra.out.dump() + " vs " + rb.out.dump()});
    }
    if (o.exact && ra.hasSimTime && rb.hasSimTime && (ra.t0Ps != rb.t0Ps || ra.t1Ps != rb.t1Ps)) {
      res.differences.push_back({i, head + "simulated time [" + std::to_string(ra.t0Ps) + ", " + std::to_string(ra.t1Ps) +
                                        "] ps vs [" + std::to_string(rb.t0Ps) + ", " + std::to_string(rb.t1Ps) + "] ps"});
    }
    bool ta = false, tb = false;
    const double na = durationNs(ra, &ta), nb = durationNs(rb, &tb);
    if (ta && tb) {
      DurationRow& row = rows[callTable()[ra.call].base];
      row.call = callTable()[ra.call].base;
      ++row.count;
      row.aNs += na;
      row.bNs += nb;
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
      if (d.aNs > 0) {
        std::snprintf(line, sizeof line, "  %-36s %5zu calls  %14.0f  %14.0f  x%.3g\n", d.call.c_str(), d.count, d.aNs, d.bNs, ratio);
      } else {
        std::snprintf(line, sizeof line, "  %-36s %5zu calls  %14.0f  %14.0f  (A took no time)\n", d.call.c_str(), d.count, d.aNs, d.bNs);
      }
      s += line;
    }
  }
  return s;
}

}  // namespace mcsim::trace
