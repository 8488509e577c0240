// The processes attached to a node process, from attach to detach: each one's pidfd and Node,
// how many application threads they have (deadlock detection counts them), and, when one goes
// (it exited, was killed or closed its socket: the node cannot tell which), the reclaiming of
// everything it held: its waits given up, its channels' threads gone, its Node detached (which
// gives its handles, mappings and reservations back) and its segment blocks.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "fabric/node_server_process.h"

namespace mcsim::fabric {
class NodeHost;
}

namespace mcsim::fabric::server {

class Channels;
class ServerLog;
class Staging;

class Processes {
 public:
  // `expected`: the processes the run will attach (0: unknown); until that many have, each missing
  // one counts as a thread that may still complete a team.
  Processes(NodeHost& host, Staging& staging, Channels& channels, const ServerLog& log, int expected)
      : host_(host), staging_(staging), channels_(channels), log_(log), expected_(expected) {}

  // Process `pid`, connected on `sock`, attaches with its device window at `vaBase`: its pidfd and
  // its Node. nullptr with the problem when it cannot (the socket is then given back in `sock`).
  // `tray`: the compute tray it runs on (-1: the whole node); nullptr and the problem for a tray
  // the node's preset does not have.
  std::shared_ptr<AttachedProcess> attach(UniqueFd* sock, int pid, int rank, int tray, uint64_t vaBase,
                                          std::string* problem);
  // The process is gone, or never got going: everything it held is given back (once).
  void detach(const std::shared_ptr<AttachedProcess>& p);
  // The attached processes, in attach order.
  std::vector<std::shared_ptr<AttachedProcess>> list();
  // Application threads of the attached processes, for deadlock detection. Asked by every waiting
  // call every 20 ms, so the count is kept for that long.
  int attachedThreads();

 private:
  NodeHost& host_;
  Staging& staging_;
  Channels& channels_;
  const ServerLog& log_;
  const int expected_;

  // Guards what follows. Never held while calling into the host (whose lock the thread counter
  // takes this one under) or into another part.
  std::mutex mu_;
  std::map<uint64_t, std::shared_ptr<AttachedProcess>> byNumber_;
  uint64_t lastNumber_ = 0;
  int attachedEver_ = 0;
  int leftEver_ = 0;  // processes that attached and have left
  std::map<int, int> livePids_;  // pid -> attachments (a process may attach more than once)
  std::optional<int> threadCache_;
  std::chrono::steady_clock::time_point threadCacheAt_;
};

}  // namespace mcsim::fabric::server
