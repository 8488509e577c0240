#include "traces/lib/minimize.h"

#include <algorithm>

#include "traces/lib/results.h"

namespace mcsim::trace {

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

bool failsAsExpected(const Trace& t, const MinimizeOptions& o, std::string* why) {
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
  for (const Record& rec : replayed.records) {
    const CallDesc& d = callTable()[rec.call];
    if (rec.result == o.until.result && (o.until.call.empty() || o.until.call == d.base || o.until.call == d.symbol)) {
      return true;
    }
  }
  if (why != nullptr) *why = "no call returned " + describeCondition(o.until);
  return false;
}

MinimizeResult minimizeTrace(const Trace& t, const MinimizeOptions& o) {
  MinimizeResult res;
  std::string why;
  ++res.replays;
  if (!failsAsExpected(t, o, &why)) {
    res.problem = "the trace does not fail that way when replayed: " + why;
    return res;
  }
  // A candidate is a subset of the calls, in their original order.
  auto test = [&](const std::vector<size_t>& keep) {
    if (res.replays >= o.maxReplays) return false;
    std::vector<Record> recs;
    for (size_t i : keep) recs.push_back(t.records[i]);
    Trace candidate;
    if (!parseTrace(writeTrace(t.header, recs), t.path, &candidate).empty()) return false;  // dangling names
    ++res.replays;
    return failsAsExpected(candidate, o, nullptr);
  };
  std::vector<size_t> cur(t.records.size());
  for (size_t i = 0; i < cur.size(); ++i) cur[i] = i;
  size_t n = 2;
  while (cur.size() >= 2 && res.replays < o.maxReplays) {
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
  return res;
}

}  // namespace mcsim::trace
