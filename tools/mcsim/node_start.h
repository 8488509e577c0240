// Starting and stopping a shared node's process (bin/mcsim-node): what `mcsim node start|stop`
// do, also for `mcsim replay`, which replays a run of several processes on a node of its own.
#pragma once

#include <cstdint>
#include <string>

namespace mcsim::tools {

struct NodeOptions {
  std::string name;
  std::string topology;
  std::string faults;   // a fault plan file
  uint64_t seed = 0;
  uint64_t segmentMiB = 1024;
  int exitWith = 0;     // stop with this process (0: never)
  std::string follow;   // a recorded admission order to follow (a replay's; mcsim-node --follow)
  int processes = 0;    // processes the run will attach (0: unknown)
  bool quiet = false;   // no "started"/"stopped" lines on stdout
};

// Starts the node; returns once it accepts attachments (an exit status: 0 when it does).
int startNode(const NodeOptions& o);
// Stops it (an exit status).
int stopNode(const NodeOptions& o);
// Where the node's log is.
std::string nodeLogPath(const std::string& name);

}  // namespace mcsim::tools
