#include "traces/lib/minimize.h"

#include <algorithm>
#include <map>
#include <set>

#include "traces/lib/ids.h"
#include "traces/lib/results.h"

namespace mcsim::trace {

namespace {

// Renames the names in `j` ("event3", "va2+64") through `renamed`, giving a name not seen yet the
// next number of its kind. Values that are data, not names (base64, digests, hex, a kernel's own
// name, a file path) are left alone.
void renameIn(Json& j, std::map<std::string, std::string>& renamed, std::map<std::string, int>& count) {
  static const std::set<std::string> kinds = {"ctx",  "mem",    "pool",    "stream", "event", "module", "func",
                                              "library", "kernel", "obj", "va",     "host",  "fd",     "fabric", "ipc"};
  if (j.is_object()) {
    for (auto& [key, v] : j.items()) {
      if (key == "data" || key == "digest" || key == "hex" || key == "path" || key == "format" || key == "library") continue;
      renameIn(v, renamed, count);
    }
    return;
  }
  if (j.is_array()) {
    for (Json& v : j) renameIn(v, renamed, count);
    return;
  }
  if (!j.is_string()) return;
  const auto name = parseName(j.get<std::string>());
  if (!name || kinds.count(name->prefix) == 0) return;
  auto it = renamed.find(name->base);
  if (it == renamed.end()) {
    it = renamed.emplace(name->base, name->prefix + std::to_string(++count[name->prefix])).first;
  }
  j = name->offset == 0 ? Json(it->second) : Json(it->second + "+" + std::to_string(name->offset));
}

}  // namespace

void renumberNames(std::vector<Record>* records) {
  std::map<std::string, std::string> renamed;
  std::map<std::string, int> count;
  // In the order the recorder names them: a call's inputs when it is admitted, its outputs when
  // it returns (the order of the trace's lines).
  std::vector<Record*> byLine;
  for (Record& r : *records) byLine.push_back(&r);
  std::stable_sort(byLine.begin(), byLine.end(), [](const Record* a, const Record* b) { return a->line < b->line; });
  for (Record* r : byLine) {
    // The launched kernel's own name is no handle name ("kernel":"kernel1" is a kernel so named).
    Json kernel = isLaunch(callTable()[r->call]) && r->args.contains("kernel") ? r->args.at("kernel") : Json();
    renameIn(r->args, renamed, count);
    if (!kernel.is_null()) r->args["kernel"] = kernel;
    renameIn(r->out, renamed, count);
  }
}

std::string parseCondition(const std::string& text, Condition* out) {
  *out = Condition{};
  if (text == "deadlock") {
    out->kind = Condition::Kind::kDeadlock;
    return "";
  }
  if (text == "invariant") {
    out->kind = Condition::Kind::kInvariant;
    return "";
  }
  if (text.rfind("result=", 0) == 0) {
    std::string rest = text.substr(7);
    const size_t at = rest.find('@');
    if (at != std::string::npos) {
      out->call = rest.substr(at + 1);
      rest = rest.substr(0, at);
      if (findCall(out->call) < 0) {
        bool known = false;
        for (size_t i = 0; i < callCount(); ++i) known = known || out->call == callTable()[i].base;
        if (!known) return "'" + out->call + "' is no driver entry point";
      }
    }
    CUresult code;
    if (!resultByName(rest, &code)) return "'" + rest + "' is no CUresult name";
    out->result = rest;
    return "";
  }
  return "'" + text + "': expected result=CUDA_ERROR_...[@call], deadlock or invariant";
}

std::string describeCondition(const Condition& c) {
  switch (c.kind) {
    case Condition::Kind::kDeadlock: return "a reported deadlock or hang";
    case Condition::Kind::kInvariant: return "a failed invariant";
    case Condition::Kind::kResult: break;
  }
  return c.result + (c.call.empty() ? " from any call" : " from " + c.call);
}

namespace {

bool matchesResult(const Condition& c, const Record& rec) {
  const CallDesc& d = callTable()[rec.call];
  return rec.result == c.result && (c.call.empty() || c.call == d.base || c.call == d.symbol);
}

// One replay of `t` against the condition. With a result condition, `before` (when given: what
// each call of `t` returned in the replay of the whole trace) must hold for every call before the
// first that fails as the condition says: a candidate that fails earlier, or otherwise (a call
// that lost the context it needed), is not failing the same way. `results` receives what each
// call returned.
bool meetsCondition(const Trace& t, const MinimizeOptions& o, const std::vector<std::string>* before,
                    std::vector<std::string>* results, std::string* why) {
  const ReplayOutcome r = replayInChild(t, o.replay);
  switch (o.until.kind) {
    case Condition::Kind::kDeadlock: {
      const bool hit = r.stderrText.find("deadlock") != std::string::npos ||
                       r.stderrText.find("suspected hang") != std::string::npos;
      if (why != nullptr) *why = hit ? "" : "no deadlock or hang was reported";
      return hit;
    }
    case Condition::Kind::kInvariant:
      if (why != nullptr) *why = r.invariant.empty() ? "no invariant failed" : r.invariant;
      return !r.invariant.empty();
    case Condition::Kind::kResult: break;
  }
  Trace replayed;
  if (!r.finished || !readTrace(o.replay.recordTo, &replayed).empty()) {
    if (why != nullptr) *why = r.problem.empty() ? "the replay left no readable trace" : r.problem;
    return false;
  }
  if (results != nullptr) {
    for (const Record& rec : replayed.records) results->push_back(rec.result);
  }
  for (size_t i = 0; i < replayed.records.size(); ++i) {
    const Record& rec = replayed.records[i];
    if (matchesResult(o.until, rec)) return true;
    if (before != nullptr && (i >= before->size() || rec.result != (*before)[i])) {
      if (why != nullptr) *why = "call " + std::to_string(i) + " returned " + rec.result + " before the failure";
      return false;
    }
  }
  if (why != nullptr) *why = "no call returned " + describeCondition(o.until);
  return false;
}

}  // namespace

bool failsAsExpected(const Trace& t, const MinimizeOptions& o, std::string* why) {
  return meetsCondition(t, o, nullptr, nullptr, why);
}

namespace {

// What the minimiser changes, made as a recording of the kept calls would have it, so that a
// replay of the minimal trace shows the failure and nothing else: the names renumbered, and the
// simulated times and outputs of each call that succeeds or fails as recorded taken from one
// replay of the kept calls (dropping calls shifts the clock; a query of free memory answers
// otherwise). A call that fails otherwise than recorded keeps its record: that is the failure.
void normalise(const Trace& t, const MinimizeOptions& o, MinimizeResult* res) {
  renumberNames(&res->records);
  Trace kept;
  if (!parseTrace(writeTrace(t.header, res->records), t.path, &kept).empty()) return;
  ++res->replays;
  const ReplayOutcome r = replayInChild(kept, o.replay);
  Trace replayed;
  if (!r.finished || !readTrace(o.replay.recordTo, &replayed).empty()) return;
  for (size_t i = 0; i < res->records.size() && i < replayed.records.size(); ++i) {
    Record& mine = res->records[i];
    const Record& again = replayed.records[i];
    if (mine.call != again.call || mine.result != again.result) continue;
    mine.out = again.out;
    mine.hasSimTime = again.hasSimTime;
    mine.t0Ps = again.t0Ps;
    mine.t1Ps = again.t1Ps;
    mine.hasKernelTime = again.hasKernelTime;
    mine.kernelStartPs = again.kernelStartPs;
    mine.kernelEndPs = again.kernelEndPs;
  }
}

}  // namespace

MinimizeResult minimizeTrace(const Trace& t, const MinimizeOptions& o) {
  MinimizeResult res;
  std::string why;
  ++res.replays;
  // What every call returns in a replay of the whole trace: a candidate's calls must return the
  // same up to the failure.
  std::vector<std::string> whole;
  if (!meetsCondition(t, o, nullptr, &whole, &why)) {
    res.problem = "the trace does not fail that way when replayed: " + why;
    return res;
  }
  // A candidate is a subset of the calls, in their original order.
  auto test = [&](const std::vector<size_t>& keep) {
    if (res.replays >= o.maxReplays) {
      res.stoppedAtBudget = true;
      return false;
    }
    std::vector<Record> recs;
    for (size_t i : keep) recs.push_back(t.records[i]);
    Trace candidate;
    if (!parseTrace(writeTrace(t.header, recs), t.path, &candidate).empty()) return false;  // dangling names
    ++res.replays;
    std::vector<std::string> expected;
    for (size_t i : keep) expected.push_back(i < whole.size() ? whole[i] : std::string());
    return meetsCondition(candidate, o, &expected, nullptr, nullptr);
  };
  std::vector<size_t> cur(t.records.size());
  for (size_t i = 0; i < cur.size(); ++i) cur[i] = i;
  size_t n = 2;
  while (cur.size() >= 2) {
    if (res.replays >= o.maxReplays) {
      res.stoppedAtBudget = true;
      break;
    }
    const size_t chunk = (cur.size() + n - 1) / n;
    std::vector<std::vector<size_t>> parts;
    for (size_t s = 0; s < cur.size(); s += chunk) {
      parts.emplace_back(cur.begin() + static_cast<std::ptrdiff_t>(s),
                         cur.begin() + static_cast<std::ptrdiff_t>(std::min(cur.size(), s + chunk)));
    }
    bool reduced = false;
    for (const auto& part : parts) {
      if (part.size() < cur.size() && test(part)) {
        cur = part;
        n = 2;
        reduced = true;
        break;
      }
    }
    if (!reduced && parts.size() > 2) {
      for (size_t k = 0; k < parts.size(); ++k) {
        std::vector<size_t> rest;
        for (size_t m = 0; m < parts.size(); ++m) {
          if (m != k) rest.insert(rest.end(), parts[m].begin(), parts[m].end());
        }
        if (test(rest)) {
          cur = rest;
          n = std::max<size_t>(n - 1, 2);
          reduced = true;
          break;
        }
      }
    }
    if (!reduced) {
      if (n >= cur.size()) break;
      n = std::min(cur.size(), 2 * n);
    }
    if (o.progress) o.progress(std::to_string(cur.size()) + " calls after " + std::to_string(res.replays) + " replays");
  }
  for (size_t i : cur) res.records.push_back(t.records[i]);
  normalise(t, o, &res);
  return res;
}

}  // namespace mcsim::trace
