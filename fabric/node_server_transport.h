// How attached processes reach a node process: its Unix socket (the hello, new channels, exported
// descriptors passed with SCM_RIGHTS, `mcsim node status|stop`) and its request channels in the
// segment, each served by a node thread of its own (node_channel.h, node_ipc.h).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "fabric/node_ipc.h"
#include "fabric/node_server.h"
#include "fabric/node_server_process.h"
#include "fabric/unique_fd.h"

namespace mcsim::fabric {
class NodeHost;
}

namespace mcsim::fabric::server {

class Dispatch;
class Processes;
class ServerLog;
class Staging;
class StatusReport;

// The request channels of the attached processes and their threads.
class Channels {
 public:
  Channels(NodeHost& host, Staging& staging, Dispatch& dispatch, const ServerLog& log)
      : host_(host), staging_(staging), dispatch_(dispatch), log_(log) {}
  // One more channel for `p` and the thread that serves it; its offset in the segment (0: the
  // segment is full).
  uint64_t open(const std::shared_ptr<AttachedProcess>& p);
  // `p` is gone: the threads of its channels leave (after the call each may be in) and the
  // channels go back to the segment.
  void closeAll(AttachedProcess& p);
  size_t count(AttachedProcess& p);

 private:
  void serve(const std::shared_ptr<AttachedProcess>& p, channel::Channel* ch);

  NodeHost& host_;
  Staging& staging_;
  Dispatch& dispatch_;
  const ServerLog& log_;
};

// The node's socket and one thread per connection.
class Transport {
 public:
  Transport(const NodeServerOptions& options, const ipc::NodePaths& paths, std::string settings,
            Processes& processes, Channels& channels, Dispatch& dispatch, StatusReport& status, const ServerLog& log,
            std::function<void()> stop)
      : options_(options), paths_(paths), settings_(std::move(settings)), processes_(processes),
        channels_(channels), dispatch_(dispatch), status_(status), log_(log), stop_(std::move(stop)) {}

  // Binds and listens on the node's socket (mode 0600). "" or the problem.
  std::string listen();
  int listeningFd() const { return listen_.get(); }
  // Takes the next connection (the listening socket is readable) and serves it on a thread.
  void acceptOne();
  // No more connections: the socket goes.
  void close();

 private:
  void connection(UniqueFd sock);
  void refuse(int sock, const std::string& why);
  // An attached process's socket: channels and exports, until it closes or the process exits.
  void serveProcess(const std::shared_ptr<AttachedProcess>& p);

  const NodeServerOptions& options_;
  const ipc::NodePaths& paths_;
  const std::string settings_;  // the node's settings as JSON (the welcome carries them)
  Processes& processes_;
  Channels& channels_;
  Dispatch& dispatch_;
  StatusReport& status_;
  const ServerLog& log_;
  std::function<void()> stop_;
  UniqueFd listen_;
};

}  // namespace mcsim::fabric::server
