#include "fabric/node_server_processes.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "fabric/node_host.h"
#include "fabric/node_server_staging.h"
#include "fabric/node_server_status.h"
#include "fabric/node_server_transport.h"
#include "fabric/tray_node.h"
#include "model/engine.h"

namespace mcsim::fabric::server {

namespace {

int pidfdOpen(int pid) { return static_cast<int>(syscall(SYS_pidfd_open, pid, 0)); }

}  // namespace

std::shared_ptr<AttachedProcess> Processes::attach(UniqueFd* sock, int pid, int rank, int tray, uint64_t vaBase,
                                                   std::string* problem) {
  if (tray >= 0) {
    TraySpan span;
    if (!traySpan(host_.preset(), tray, &span, problem)) return nullptr;
  }
  auto p = std::make_shared<AttachedProcess>();
  p->pid = pid;
  p->rank = rank;
  p->tray = tray;
  p->pidfd.reset(pidfdOpen(pid));
  if (!p->pidfd) {
    *problem = std::string("pidfd_open: ") + std::strerror(errno);
    return nullptr;
  }
  p->sock = std::move(*sock);
  p->node = host_.attach(vaBase, tray);
  std::lock_guard<std::mutex> lock(mu_);
  p->number = ++lastNumber_;
  ++attachedEver_;
  p->leftBefore = leftEver_;
  byNumber_[p->number] = p;
  livePids_[pid] += 1;
  threadCache_.reset();
  return p;
}

void Processes::detach(const std::shared_ptr<AttachedProcess>& p) {
  if (p->gone.exchange(true)) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (--livePids_[p->pid] == 0) livePids_.erase(p->pid);
    ++leftEver_;
    threadCache_.reset();
  }
  const size_t stoppedKernels = p->node->abandonWaits(p->pid, p->who());
  channels_.closeAll(*p);
  const NodeStats held = p->node->held();
  p->node.reset();
  {
    std::lock_guard<std::mutex> lock(p->workMu);
    p->work.clear();
  }
  staging_.reclaim(p->number);
  {
    std::lock_guard<std::mutex> lock(mu_);
    byNumber_.erase(p->number);
  }
  log_.line("process " + p->who() + " left; reclaimed " + std::to_string(held.handles) + " handles, " +
            std::to_string(held.mappings) + " mappings, " + std::to_string(held.reservations) + " reservations" +
            (stoppedKernels > 0 ? "; stopped " + std::to_string(stoppedKernels) + " of its kernels that waited" : ""));
}

std::vector<std::shared_ptr<AttachedProcess>> Processes::list() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::shared_ptr<AttachedProcess>> out;
  for (const auto& [number, p] : byNumber_) out.push_back(p);
  return out;
}

int Processes::attachedThreads() {
  std::lock_guard<std::mutex> lock(mu_);
  const auto now = std::chrono::steady_clock::now();
  if (threadCache_ && now - threadCacheAt_ < std::chrono::milliseconds(20)) return *threadCache_;
  int n = 0;
  for (const auto& [pid, count] : livePids_) n += model::threadsOfProcess(pid);
  // Processes of the run that have not attached yet (--processes) may still add devices.
  if (attachedEver_ < expected_) n += expected_ - attachedEver_;
  threadCache_ = n;
  threadCacheAt_ = now;
  return n;
}

}  // namespace mcsim::fabric::server
