#include "traces/lib/trace_reader.h"

#include <cmath>
#include <limits>
#include <set>
#include <sstream>

#include "files/bounded_file.h"
#include "settings/settings.h"
#include "traces/lib/results.h"
#include "traces/lib/trace_format.h"

namespace mcsim::trace {

namespace {

bool usesName(Kind k) {
  return k == Kind::kHandleIn || k == Kind::kAddrIn || k == Kind::kHostPtr || k == Kind::kShareableIn ||
         k == Kind::kLaunchFunc;
}

bool isStructured(Kind k) {
  switch (k) {
    case Kind::kImage: case Kind::kImageFile: case Kind::kOptions: case Kind::kLaunchFunc:
    case Kind::kKernelParams: case Kind::kKernelExtra: case Kind::kLaunchConfig: return true;
    default: return false;
  }
}

bool producesName(Kind k) {
  switch (k) {
    case Kind::kHandleOut: case Kind::kHandleNew: case Kind::kAddrOut: case Kind::kAddrNew:
    case Kind::kHostNew: case Kind::kShareableOut: case Kind::kPtrAttr: case Kind::kPtrAttrs:
    case Kind::kHandleArray: return true;
    default: return false;
  }
}

void addName(const Json& v, std::vector<std::string>* out) {
  if (!v.is_string()) return;
  if (auto p = parseName(v.get<std::string>())) out->push_back(p->base);
}

bool isUnsigned(const Json& j) { return j.is_number_unsigned() || (j.is_number_integer() && j.get<int64_t>() >= 0); }

// Whether `j` holds no number with a fraction or an exponent (a JSON float) anywhere: every number
// of an argument is an integer in C but a float's, and a float converted to an integer type out of
// its range is undefined (a trace asking for 1.3e102 bytes reached one in the decoder).
bool onlyIntegers(const Json& j) {
  if (j.is_number_float()) return false;
  if (j.is_structured()) {
    for (const auto& e : j) {
      if (!onlyIntegers(e)) return false;
    }
  }
  return true;
}

// A float argument: a finite number a float holds.
bool fitsFloat(const Json& j) {
  if (!j.is_number()) return false;
  const double v = j.get<double>();
  return std::isfinite(v) && std::fabs(v) <= static_cast<double>(std::numeric_limits<float>::max());
}

// Checks an argument's shape for its kind; "" or the problem.
std::string checkArgument(const ParamDesc& p, const Json& a) {
  if (a.is_null()) return "";
  if (isStructured(p.kind)) return checkStructured(p.kind, a);
  switch (p.kind) {
    case Kind::kScalar:
      return a.is_number() ? "" : "expected a number";
    case Kind::kHandleIn: case Kind::kAddrIn: case Kind::kHostPtr: {
      if (a.is_number()) return "";
      if (a.is_object() && a.contains("raw") && a.at("raw").is_string()) return "";
      if (a.is_object() && a.contains("raw_ptr")) return "";
      if (a.is_string()) {
        const std::string s = a.get<std::string>();
        if (s == "legacy" || s == "per_thread" || parseName(s)) return "";
      }
      return std::string("expected a ") + kindName(p.kind) + " name, got " + a.dump();
    }
    case Kind::kHostIn: {
      if (!a.is_object() || !a.contains("bytes") || !isUnsigned(a.at("bytes"))) return "expected {\"bytes\": N, ...}";
      if (a.contains("unreadable")) return a.at("unreadable").is_boolean() ? "" : "unreadable must be true or false";
      if (a.at("bytes").get<uint64_t>() > (uint64_t{1} << 34)) return "host buffer larger than 16 GiB";
      if (a.contains("data")) {
        std::vector<uint8_t> b;
        if (!a.at("data").is_string() || !fromBase64(a.at("data").get<std::string>(), &b) ||
            b.size() != a.at("bytes").get<uint64_t>()) {
          return "data is not base64 of 'bytes' bytes";
        }
      }
      return "";
    }
    case Kind::kStrIn: return a.is_string() ? "" : "expected a string";
    case Kind::kAccessDescs: {
      if (a.is_object() && a.contains("raw_ptr")) return "";
      if (!a.is_array() || a.size() > 4096) return "expected an array of access descriptors";
      return "";
    }
    case Kind::kShareableIn: {
      if (a.is_object() && ((a.contains("raw_fd") && a.at("raw_fd").is_number_integer()) || a.contains("raw_ptr"))) return "";
      if (a.is_object() && a.contains("data") && a.at("data").is_string()) return "";
      if (a.is_string() && parseName(a.get<std::string>())) return "";
      return "expected an OS handle name";
    }
    case Kind::kPtrAttrs: {
      if (a.is_object() && a.contains("raw_ptr")) return "";
      if (!a.is_object() || !a.contains("attributes") || !a.at("attributes").is_array() || a.at("attributes").size() > 4096)
        return "expected {\"attributes\": [...]}";
      for (const Json& e : a.at("attributes")) {
        if (!e.is_number_integer()) return "attributes must be numbers";
      }
      return "";
    }
    case Kind::kRaw:
      if (a.is_object() && (a.contains("raw_ptr") || (a.contains("raw") && a.at("raw").is_number()))) return "";
      return "expected a raw value";
    default:
      // Outputs are "out" or null; descriptors are checked by decoding them below.
      if (a.is_string() && a.get<std::string>() == "out") return "";
      if (a.is_object() || a.is_number()) return "";
      return std::string("unexpected value for a ") + kindName(p.kind);
  }
}

std::string fail(const std::string& path, int line, const std::string& why) {
  return path + ":" + std::to_string(line) + ": " + why;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> namesUsedWhere(const Record& r) {
  std::vector<std::pair<std::string, std::string>> out;
  const CallDesc& d = callTable()[r.call];
  for (int i = 0; i < d.nparams; ++i) {
    const ParamDesc& p = d.params[i];
    if (!r.args.contains(p.name)) continue;
    const Json& a = r.args.at(p.name);
    const size_t before = out.size();
    if (usesName(p.kind) && a.is_string()) {
      std::vector<std::string> one;
      addName(a, &one);
      for (std::string& n : one) out.emplace_back(std::move(n), "");
    } else {
      structuredNamesUsed(p.kind, a, &out);
    }
    for (size_t k = before; k < out.size(); ++k) {
      out[k].second = std::string("argument '") + p.name + "'" + (out[k].second.empty() ? "" : ", " + out[k].second);
    }
  }
  return out;
}

std::vector<std::string> namesUsed(const Record& r) {
  std::vector<std::string> out;
  for (auto& [name, where] : namesUsedWhere(r)) out.push_back(name);
  return out;
}

std::vector<std::string> namesProduced(const Record& r) {
  std::vector<std::string> out;
  if (!r.out.is_object()) return out;
  const CallDesc& d = callTable()[r.call];
  for (int i = 0; i < d.nparams; ++i) {
    if (!producesName(d.params[i].kind) || !r.out.contains(d.params[i].name)) continue;
    const Json& v = r.out.at(d.params[i].name);
    if (v.is_array()) {
      for (const Json& e : v) addName(e, &out);
    } else {
      addName(v, &out);
    }
  }
  return out;
}

namespace {

// A node admission as a record writes it: [number, finished-before, simulation runs], the number
// from 1 and the count below it. "" or the problem.
std::string parseAdmission(const Json& v, NodeAdmission* a) {
  if (!v.is_array() || v.size() != 3 || !isUnsigned(v[0]) || !isUnsigned(v[1]) || !isUnsigned(v[2])) {
    return "a node admission is [number, finished before, simulation runs], three numbers";
  }
  a->number = v[0].get<uint64_t>();
  a->finishedBefore = v[1].get<uint64_t>();
  a->simRuns = v[2].get<uint64_t>();
  if (a->number == 0) return "node admission numbers start at 1";
  if (a->finishedBefore >= a->number) {
    return "node admission " + std::to_string(a->number) + " cannot follow " + std::to_string(a->finishedBefore) +
           " finished requests";
  }
  return "";
}

// The record's "node" and "node_clock" (docs/traces.md); "" or the problem.
std::string parseNodeAdmissions(const Json& j, Record* r) {
  if (j.contains("node")) {
    if (!j.at("node").is_array() || j.at("node").empty()) return "\"node\" must be a list of node admissions";
    for (const Json& v : j.at("node")) {
      NodeAdmission a;
      const std::string why = parseAdmission(v, &a);
      if (!why.empty()) return "\"node\": " + why;
      r->node.push_back(a);
    }
  }
  if (j.contains("node_clock")) {
    const Json& c = j.at("node_clock");
    if (!c.is_array() || c.size() != 2) return "\"node_clock\" must be [at admission, at return], each an admission or null";
    for (size_t i = 0; i < 2; ++i) {
      if (c[i].is_null()) continue;
      const std::string why = parseAdmission(c[i], &r->clock[i]);
      if (!why.empty()) return "\"node_clock\": " + why;
    }
  }
  // One thread makes a call's requests one after another: the clock read at admission, the
  // call's own, the clock read at return.
  uint64_t last = 0;
  for (const NodeAdmission& a : nodeAdmissionsInOrder(*r)) {
    if (a.number <= last) return "the call's node admissions must increase (" + std::to_string(a.number) + " after " + std::to_string(last) + ")";
    last = a.number;
  }
  return "";
}

// The end record's "kernels": [[seq, start_ps, end_ps], ...], each a launch of the trace, onto
// its record. "" or the problem.
std::string readKernelTimes(const Json& k, Trace* out) {
  if (!k.is_array()) return "the end record's \"kernels\" must be an array of [seq, start_ps, end_ps]";
  std::map<uint64_t, Record*> bySeq;
  for (Record& r : out->records) bySeq[r.seq] = &r;
  for (const Json& e : k) {
    if (!e.is_array() || e.size() != 3 || !isUnsigned(e[0]) || !isUnsigned(e[1]) || !isUnsigned(e[2])) {
      return "the end record's kernels: " + e.dump() + " is not [seq, start_ps, end_ps], three numbers";
    }
    auto it = bySeq.find(e[0].get<uint64_t>());
    if (it == bySeq.end() || !isLaunch(callTable()[it->second->call])) {
      return "the end record's kernels: admission number " + e[0].dump() + " is no launch of the trace";
    }
    Record& r = *it->second;
    if (r.hasKernelTime) return "the end record's kernels: admission number " + e[0].dump() + " appears twice";
    if (e[1].get<uint64_t>() > e[2].get<uint64_t>()) return "the end record's kernels: " + e.dump() + " ends before it starts";
    r.hasKernelTime = true;
    r.kernelStartPs = e[1].get<uint64_t>();
    r.kernelEndPs = e[2].get<uint64_t>();
  }
  return "";
}

// The end record's "node": the shared node's settings. "" or the problem.
std::string checkNodeSettings(const Json& s) {
  if (!s.is_object()) return "the end record's \"node\" must be an object";
  if (!s.contains("name") || !s.at("name").is_string()) return "the end record's node has no \"name\"";
  if (!s.contains("topology") || !s.at("topology").is_string()) return "the end record's node has no \"topology\"";
  if (!s.contains("seed") || !isUnsigned(s.at("seed"))) return "the end record's node has no \"seed\" number";
  if (s.contains("hang_grace_s") && !s.at("hang_grace_s").is_number()) return "the end record's node: \"hang_grace_s\" must be a number";
  if (s.contains("faults") && !s.at("faults").is_null() && !s.at("faults").is_string()) {
    return "the end record's node: \"faults\" must be the plan's text or null";
  }
  return "";
}

// The header's "env": settings a replay restores, so only those a trace records
// (kRecordedEnvironment), each a value its setting accepts. A trace is a shared file: it must not
// set anything else in the replay (MCSIM_FAULTS_FILE=/etc/passwd). "" or the problem.
std::string checkRecordedEnvironment(const Json& env) {
  if (!env.is_object()) return "the header's env must be an object";
  for (const auto& [name, value] : env.items()) {
    if (!isRecordedSetting(name)) {
      std::string list;
      for (const char* r : kRecordedEnvironment) list += (list.empty() ? "" : ", ") + std::string(r);
      return "the header's env sets " + name + ", which a trace does not restore (only " + list + ")";
    }
    if (!value.is_string()) return "the header's env: " + name + " must be a string";
    const std::string assignment = name + "=" + value.get<std::string>();
    const char* const one[] = {assignment.c_str(), nullptr};
    std::vector<std::string> warnings;
    settings::parse(one, &warnings);
    if (!warnings.empty()) return "the header's env: " + warnings.front();
  }
  return "";
}

}  // namespace

std::vector<NodeAdmission> nodeAdmissionsInOrder(const Record& r) {
  std::vector<NodeAdmission> out;
  if (r.clock[0].number != 0) out.push_back(r.clock[0]);
  out.insert(out.end(), r.node.begin(), r.node.end());
  if (r.clock[1].number != 0) out.push_back(r.clock[1]);
  return out;
}

std::string parseTrace(const std::string& text, const std::string& path, Trace* out) {
  *out = Trace{};
  out->path = path;
  std::istringstream in(text);
  std::string line;
  int n = 0;
  bool ended = false;
  std::set<uint64_t> seqs;
  std::set<uint64_t> nodeNumbers;
  std::set<int> threads;
  std::map<std::string, int> producedBy;  // name -> record index
  while (std::getline(in, line)) {
    ++n;
    if (ended) return fail(path, n, "text after the end record");
    if (in.eof() && !text.empty() && text.back() != '\n') return fail(path, n, "truncated: the last line is incomplete");
    Json j;
    try {
      j = Json::parse(line);
    } catch (const Json::exception& e) {
      return fail(path, n, std::string("not JSON: ") + e.what());
    }
    if (!j.is_object()) return fail(path, n, "expected a JSON object");
    if (n == 1) {
      if (!j.contains("mcsim_trace")) return fail(path, n, "not an mcsim trace (no \"mcsim_trace\" header)");
      if (!j.at("mcsim_trace").is_number_integer() || j.at("mcsim_trace").get<int64_t>() != kTraceVersion) {
        return fail(path, n, "trace version " + j.at("mcsim_trace").dump() + " (this mcsim reads version " +
                                 std::to_string(kTraceVersion) + ")");
      }
      if (!j.contains("target") || !j.at("target").is_string() ||
          (j.at("target") != "mcsim" && j.at("target") != "real")) {
        return fail(path, n, "the header's target must be \"mcsim\" or \"real\"");
      }
      if (j.contains("env")) {
        const std::string why = checkRecordedEnvironment(j.at("env"));
        if (!why.empty()) return fail(path, n, why);
      }
      if (j.contains("faults") && !j.at("faults").is_null() && !j.at("faults").is_string()) {
        return fail(path, n, "the header's faults must be a string");
      }
      // (a replay records with it: MCSIM_RECORD_DATA)
      if (j.contains("data_limit") && !isUnsigned(j.at("data_limit"))) {
        return fail(path, n, "the header's data_limit must be a number of bytes");
      }
      out->header = j;
      out->target = j.at("target").get<std::string>();
      continue;
    }
    if (j.contains("end")) {
      if (!j.contains("calls") || !isUnsigned(j.at("calls")) || j.at("calls").get<uint64_t>() != out->records.size()) {
        return fail(path, n, "the end record counts " + j.value("calls", Json()).dump() + " calls, the trace has " +
                                 std::to_string(out->records.size()));
      }
      if (j.contains("node")) {
        const std::string why = checkNodeSettings(j.at("node"));
        if (!why.empty()) return fail(path, n, why);
        out->nodeSettings = j.at("node");
      }
      if (j.contains("kernels")) {
        const std::string why = readKernelTimes(j.at("kernels"), out);
        if (!why.empty()) return fail(path, n, why);
      }
      ended = true;
      continue;
    }
    Record r;
    r.line = n;
    if (!j.contains("seq") || !isUnsigned(j.at("seq"))) return fail(path, n, "no \"seq\" (admission number)");
    if (!j.contains("thread") || !isUnsigned(j.at("thread")) || j.at("thread").get<uint64_t>() >= 4096) {
      return fail(path, n, "no \"thread\" ordinal (0 to 4095)");
    }
    if (!j.contains("call") || !j.at("call").is_string()) return fail(path, n, "no \"call\"");
    r.seq = j.at("seq").get<uint64_t>();
    if (j.contains("fin")) {
      if (!isUnsigned(j.at("fin")) || j.at("fin").get<uint64_t>() > r.seq) return fail(path, n, "\"fin\" must be a number no larger than seq");
      r.fin = j.at("fin").get<uint64_t>();
    }
    r.thread = static_cast<int>(j.at("thread").get<uint64_t>());
    r.call = findCall(j.at("call").get<std::string>());
    if (r.call < 0) return fail(path, n, "unknown call '" + j.at("call").get<std::string>() + "'");
    if (!seqs.insert(r.seq).second) return fail(path, n, "admission number " + std::to_string(r.seq) + " appears twice");
    if (!j.contains("args") || !j.at("args").is_object()) return fail(path, n, "no \"args\" object");
    r.args = j.at("args");
    if (!j.contains("result") || !j.at("result").is_string()) return fail(path, n, "no \"result\"");
    r.result = j.at("result").get<std::string>();
    CUresult code;
    if (!resultByName(r.result, &code)) return fail(path, n, "unknown result '" + r.result + "'");
    if (j.contains("out")) {
      if (!j.at("out").is_object()) return fail(path, n, "\"out\" must be an object");
      r.out = j.at("out");
    }
    if (j.contains("t0_ps") || j.contains("t1_ps")) {
      if (!isUnsigned(j.value("t0_ps", Json())) || !isUnsigned(j.value("t1_ps", Json()))) {
        return fail(path, n, "t0_ps and t1_ps must both be numbers");
      }
      r.hasSimTime = true;
      r.t0Ps = j.at("t0_ps").get<uint64_t>();
      r.t1Ps = j.at("t1_ps").get<uint64_t>();
    }
    {
      const std::string why = parseNodeAdmissions(j, &r);
      if (!why.empty()) return fail(path, n, why);
      for (const NodeAdmission& a : nodeAdmissionsInOrder(r)) {
        if (!nodeNumbers.insert(a.number).second) {
          return fail(path, n, "node admission " + std::to_string(a.number) + " appears twice");
        }
      }
    }
    if (j.contains("shared")) {
      if (!j.at("shared").is_string()) return fail(path, n, "\"shared\" must name a shareable handle");
      r.shared = j.at("shared").get<std::string>();
    }
    if (j.contains("dur_ns")) {
      if (!isUnsigned(j.at("dur_ns"))) return fail(path, n, "dur_ns must be a number");
      r.hasWallTime = true;
      r.durNs = j.at("dur_ns").get<uint64_t>();
    }
    const CallDesc& d = callTable()[r.call];
    // A launch's record names its kernel beside the function handle.
    if (r.args.contains("kernel") && !r.args.at("kernel").is_null() && !r.args.at("kernel").is_string()) {
      return fail(path, n, "argument 'kernel': expected the kernel's name or null");
    }
    for (int i = 0; i < d.nparams; ++i) {
      const ParamDesc& p = d.params[i];
      if (p.kind == Kind::kAux) continue;
      if (!r.args.contains(p.name)) return fail(path, n, std::string("argument '") + p.name + "' is missing");
      const std::string why = checkArgument(p, r.args.at(p.name));
      if (!why.empty()) return fail(path, n, std::string("argument '") + p.name + "': " + why);
      if (p.kind == Kind::kScalar && p.ctype == CType::kF32) {
        if (!r.args.at(p.name).is_null() && !fitsFloat(r.args.at(p.name))) {
          return fail(path, n, std::string("argument '") + p.name + "': expected a number a float holds");
        }
      } else if (!onlyIntegers(r.args.at(p.name))) {
        return fail(path, n, std::string("argument '") + p.name + "': a number with a fraction or an exponent where C has an integer");
      }
    }
    // Decoding with every name answered checks the descriptors' fields.
    try {
      Binder any;
      for (const std::string& name : namesUsed(r)) any.bind(name, 0);
      Arena arena;
      uint64_t slots[32];
      bool approximate = false;
      decodeInputs(d, r.args, any, arena, slots, &approximate);
    } catch (const std::exception& e) {
      return fail(path, n, std::string("arguments: ") + e.what());
    }
    out->records.push_back(std::move(r));
    threads.insert(out->records.back().thread);
  }
  if (n == 0) return fail(path, 1, "empty file");
  if (!ended) return fail(path, n, "truncated: no end record (did the recorded program end abnormally?)");
  std::stable_sort(out->records.begin(), out->records.end(),
                   [](const Record& a, const Record& b) { return a.seq < b.seq; });
  for (size_t i = 0; i < out->records.size(); ++i) {
    Record& r = out->records[i];
    for (const auto& [name, where] : namesUsedWhere(r)) {
      auto it = producedBy.find(name);
      if (it == producedBy.end()) {
        return fail(path, r.line, "dangling id '" + name + "' (" + where + "): no earlier call produced it");
      }
      r.producers.push_back(it->second);
    }
    for (const std::string& name : namesProduced(r)) producedBy.emplace(name, static_cast<int>(i));
  }
  out->threads = static_cast<int>(threads.size());
  return "";
}

std::string readTrace(const std::string& path, Trace* out) {
  const files::FileRead read = files::readBoundedFile(path, files::kMaxTraceBytes);
  if (!read.ok()) return read.why;  // it names the path
  return parseTrace(read.bytes, path, out);
}

std::string writeTrace(const Json& header, const std::vector<Record>& records) {
  std::string text = header.dump() + "\n";
  uint64_t seq = 0;
  Json kernels = Json::array();
  for (const Record& r : records) {
    // The renumbered trace keeps each call's place among those kept: no more finished before it
    // than there are calls before it.
    Json j{{"seq", seq}, {"fin", std::min(r.fin, seq)}, {"thread", r.thread}, {"call", callTable()[r.call].symbol}, {"args", r.args}, {"result", r.result}};
    if (r.out.is_object()) j["out"] = r.out;
    if (r.hasSimTime) {
      j["t0_ps"] = r.t0Ps;
      j["t1_ps"] = r.t1Ps;
    }
    if (r.hasWallTime) j["dur_ns"] = r.durNs;
    if (r.hasKernelTime) kernels.push_back(Json::array({seq, r.kernelStartPs, r.kernelEndPs}));
    text += j.dump() + "\n";
    ++seq;
  }
  Json end{{"end", true}, {"calls", records.size()}};
  if (!kernels.empty()) end["kernels"] = std::move(kernels);
  text += end.dump() + "\n";
  return text;
}

}  // namespace mcsim::trace
