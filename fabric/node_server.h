// A shared node: the node process that `mcsim node start` runs (tools/node/mcsim_node.cpp).
//
// It hosts one node (node_host.h) and serves the processes that attach to it (MCSIM_NODE=name):
// each gets a Node of its own inside the host, reached through its socket and the shared segment
// (node_ipc.h, node_channel.h). When a process goes away, killed or not, the node learns it from a
// pidfd and the socket's end, gives up the calls it had waiting, and detaches it, which gives back
// everything it held; calls of other processes waiting for a team it can no longer complete are
// then reported as a deadlock (or, after the grace period, a suspected hang) and fail.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fabric/admission.h"
#include "fabric/fault_plan.h"
#include "fabric/node_settings.h"

namespace mcsim::fabric {

struct NodeServerOptions {
  std::string name;
  std::string topology;            // what loadPreset takes: a built-in name or a path
  std::vector<FaultRule> faults;   // the node's fault plan (names resolved)
  std::string faultsText;          // its text, which attached processes' traces keep
  uint64_t seed = 0;
  // Replaying a recorded run: the admissions to follow (admission.h), and how long a request may
  // wait for its turn with nothing else moving before the node gives the order up.
  std::vector<Admission> follow;
  double followPatienceSeconds = 60;
  uint64_t segmentBytes = 1ull << 30;
  int exitWith = 0;  // stop when this process exits (0: never)
  // The processes the run will attach (0: unknown). Until that many have attached, each missing
  // one counts as a thread that may still complete a team, so that no deadlock is called while a
  // rank is still starting (a suspected hang after the grace period still is).
  int processes = 0;
  // The node process's own settings (MCSIM_HANG_GRACE_S, MCSIM_TIMING_ONLY, ...; mcsim-node reads them).
  NodeSettings settings;
};

// Runs the node until it is stopped (SIGTERM, SIGINT, `mcsim node stop`). Once it accepts
// attachments, or has failed to start, it writes "ready\n" or "error: PROBLEM\n" to `readyFd`
// (when >= 0) and closes it. Returns the process's exit code.
int runNodeServer(const NodeServerOptions& options, int readyFd);

}  // namespace mcsim::fabric
