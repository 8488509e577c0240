// What a node process tells: its log (standard error, which `mcsim node start` sends to the
// node's .log file) and `mcsim node status`.
#pragma once

#include <chrono>
#include <string>

#include "fabric/node_ipc.h"
#include "fabric/node_server.h"

namespace mcsim::fabric {
class NodeHost;
}

namespace mcsim::fabric::server {

class Processes;
class Channels;
class Staging;

// One line of the node's log: "mcsim node NAME [SECONDS s]: LINE", seconds since the node started.
class ServerLog {
 public:
  explicit ServerLog(std::string name) : name_(std::move(name)), started_(std::chrono::steady_clock::now()) {}
  void line(const std::string& text) const;
  double uptimeSeconds() const;

 private:
  std::string name_;
  std::chrono::steady_clock::time_point started_;
};

class StatusReport {
 public:
  StatusReport(const NodeServerOptions& options, const ipc::NodePaths& paths, NodeHost& host, Staging& staging,
               Processes& processes, Channels& channels, const ServerLog& log)
      : options_(options), paths_(paths), host_(host), staging_(staging), processes_(processes), channels_(channels),
        log_(log) {}

  // What `mcsim node status` prints.
  std::string text();
  // A replaying node's progress along the recorded order (`mcsim replay` looks for "gave the
  // recorded admission order up" in the log).
  std::string replayState();

 private:
  const NodeServerOptions& options_;
  const ipc::NodePaths& paths_;
  NodeHost& host_;
  Staging& staging_;
  Processes& processes_;
  Channels& channels_;
  const ServerLog& log_;
};

}  // namespace mcsim::fabric::server
