// One process attached to a shared node, as the node process's parts see it (node_server.cpp).
//
// Each part keeps its own state of the process under its own lock: the transport its request
// channels (`channelsMu`), the dispatch its device work (`workMu`); the staging keeps its segment
// blocks itself (node_server_staging.h). What is set at attach (number, pid, rank, socket, pidfd,
// node) does not change until the process is detached, when `gone` is set first.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "fabric/node_channel.h"
#include "fabric/node_host.h"
#include "fabric/unique_fd.h"

namespace mcsim::fabric::server {

// A request channel and the node thread that serves it alone.
struct ChannelWorker {
  channel::Channel* channel = nullptr;
  std::thread thread;
};

struct AttachedProcess {
  uint64_t number = 0;  // 1, 2, ... in attach order (status lists them so)
  int pid = 0;
  int rank = -1;        // its MCSIM_RANK (-1: unset)
  int tray = -1;        // its MCSIM_TRAY (-1: unset, the whole node)
  // Processes that had attached and left again when it attached: a run after an earlier one on
  // the same node (its trace's end record tells a replay so).
  int leftBefore = 0;
  UniqueFd sock;        // its connection: the end of the socket is one sign that it is gone
  UniqueFd pidfd;       // readable once it has exited: the other sign
  std::unique_ptr<AttachedNode> node;
  std::atomic<bool> gone{false};

  std::mutex channelsMu;  // guards `channels` (the transport's)
  std::vector<std::unique_ptr<ChannelWorker>> channels;

  std::mutex workMu;  // guards what follows (the dispatch's)
  std::map<uint64_t, WorkDone> work;  // the node's ids of its device work -> completion
  uint64_t nextWork = 0;

  // "4242", "4242 (rank 3)" or "4242 (rank 3, tray 1)", for the log and the status.
  std::string who() const {
    std::string s = rank >= 0 ? "rank " + std::to_string(rank) : "";
    if (tray >= 0) s += (s.empty() ? "tray " : ", tray ") + std::to_string(tray);
    return std::to_string(pid) + (s.empty() ? "" : " (" + s + ")");
  }
};

}  // namespace mcsim::fabric::server
