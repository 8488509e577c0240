// Delta debugging (Zeller's ddmin) over a trace's calls: the smallest trace found that still
// fails the same way when replayed. Candidates whose calls use names no remaining call produces
// are not replayed (they count as not failing), so every result is a well-formed trace.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "traces/lib/replayer.h"

namespace mcsim::trace {

// What "fails the same way" means.
struct Condition {
  enum class Kind { kResult, kDeadlock, kInvariant } kind = Kind::kResult;
  std::string result;  // kResult: the CUresult name
  std::string call;    // kResult: the call (base name or symbol), or "" for any call
};

// "result=CUDA_ERROR_X", "result=CUDA_ERROR_X@cuCall", "deadlock", "invariant". "" or the problem.
std::string parseCondition(const std::string& text, Condition* out);
std::string describeCondition(const Condition& c);

struct MinimizeOptions {
  ReplayOptions replay;  // recordTo/stderrTo/outcomeTo are scratch files
  Condition until;
  int maxReplays = 500;
  std::function<void(const std::string&)> progress;
};

struct MinimizeResult {
  std::string problem;          // "" on success
  std::vector<Record> records;  // the minimal trace's calls
  int replays = 0;
  // The search stopped at maxReplays with candidates left to try: `records` fail the same way
  // and are smaller, not necessarily minimal (minimising them again goes on from there).
  bool stoppedAtBudget = false;
};

MinimizeResult minimizeTrace(const Trace& t, const MinimizeOptions& o);

// Renames the handles, regions and OS handles of a subset of a trace's calls as a recording of
// just those calls names them: in the order they first appear, each kind from 1 ("event3" becomes
// "event1" when events 1 and 2 went with the calls dropped).
void renumberNames(std::vector<Record>* records);

// Whether one replay of `t` meets the condition (for the first check, and for tests).
bool failsAsExpected(const Trace& t, const MinimizeOptions& o, std::string* why);

}  // namespace mcsim::trace
