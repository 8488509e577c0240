// Re-issuing a trace's calls against a libcuda.so.1 (mcsim's, or the recording library in front
// of a real driver), in the recorded admission order, with the trace's names bound to what the
// target returns. The replay runs in a child process (mcsim elaborates SystemC once per process,
// and a replay may hang or crash), which records its own trace through the target's wrappers; the
// caller compares that trace with the original (trace_diff.h).
#pragma once

#include <functional>
#include <string>

#include "traces/lib/trace_reader.h"

namespace mcsim::trace {

struct ReplayOptions {
  std::string library;     // the libcuda.so.1 to load (full path)
  std::string recordTo;    // the replay's own trace
  bool simulated = true;   // an mcsim target: the header's settings and fault plan apply
  bool overrideFaults = false;
  std::string faultsText;  // with overrideFaults: the plan to use instead of the recorded one
  std::string faultsPath;  // where to write the plan for the child
  std::string stderrTo;    // "" to let the child's stderr through
  std::string outcomeTo;   // where the child reports (approximations, invariant violations)
  // A shared node to replay on (MCSIM_NODE for the child; "": the embedded node). The records'
  // node admissions then go with each call (mcsim_trace_node_plan), for a node that follows them.
  std::string nodeName;
  // The processes replayed beside this one (a shared node's run): a directory they all see, where
  // each publishes the shareable handles it exports for the others to import, and their number,
  // so that none exits (closing what it exported) before all are done.
  std::string peerDir;
  int peers = 0;
  double timeoutSeconds = 300;
  bool checkInvariants = true;  // mcsim only: a failing call must leave the state digest unchanged
  // Called in the child once the replay has ended, just before it exits (the replay fuzzer hands
  // the child's coverage back to its parent through it); not called when the child crashed.
  std::function<void()> atChildEnd;
};

struct ReplayOutcome {
  bool finished = false;   // the child ran to the end
  std::string problem;     // why not (could not load the library, killed, crashed)
  uint64_t approximated = 0;  // calls issued with data or names the trace could not supply
  std::string firstApproximation;
  std::string invariant;   // the first invariant violation, or ""
  std::string stderrText;  // with stderrTo
  // The replay aborted on a hang as the trace's MCSIM_ON_HANG=abort asks (then `finished` too:
  // its trace ends with the calls that hung, like the recording's).
  bool abortedOnHang = false;
};

ReplayOutcome replayInChild(const Trace& t, const ReplayOptions& o);

// The same in two steps, for replays that must run side by side (the processes of a run on a
// shared node): start the child, then wait for it (from the start, at most o.timeoutSeconds).
struct ReplayChild {
  int pid = -1;
  double startedAt = 0;  // steady-clock seconds
  std::string problem;   // it could not start
  bool abortsOnHang = false;  // the trace was recorded with MCSIM_ON_HANG=abort (mcsim target)
};
ReplayChild startReplayChild(const Trace& t, const ReplayOptions& o);
ReplayOutcome awaitReplayChild(const ReplayChild& child, const ReplayOptions& o);

}  // namespace mcsim::trace
