#include "fabric/node_server.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "fabric/node_host.h"
#include "fabric/node_ipc.h"
#include "fabric/node_server_dispatch.h"
#include "fabric/node_server_processes.h"
#include "fabric/node_server_staging.h"
#include "fabric/node_server_status.h"
#include "fabric/node_server_transport.h"
#include "fabric/unique_fd.h"

namespace mcsim::fabric {

namespace {

// The write end of the stop pipe, for the signal handler.
std::atomic<int> gStopFd{-1};

void onStopSignal(int) {
  const int fd = gStopFd.load();
  if (fd >= 0) {
    const char c = 's';
    [[maybe_unused]] ssize_t n = write(fd, &c, 1);
  }
}

std::string errnoText(const std::string& what) { return what + ": " + std::strerror(errno); }

void writeAll(int fd, const std::string& s) {
  size_t done = 0;
  while (done < s.size()) {
    const ssize_t n = write(fd, s.data() + done, s.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

int pidfdOpen(int pid) { return static_cast<int>(syscall(SYS_pidfd_open, pid, 0)); }

// The node process: it takes the node's place (its lock, segment and socket), hosts the node, and
// puts together the parts that serve the attached processes: the staging (the segment and its
// blocks), the dispatch (the calls), the channels and the socket (the transport), the processes'
// lifecycle, and the status.
class NodeServer {
 public:
  explicit NodeServer(const NodeServerOptions& o)
      : options_(o), paths_(ipc::nodePaths(o.name, o.settings.nodeDir)), log_(o.name) {}

  // Takes the node's place: its lock, a fresh segment and socket (cleaning up what a node that
  // died left behind), the host. "" or the problem.
  std::string start() {
    if (!ipc::validNodeName(options_.name)) return "'" + options_.name + "' is no node name ([A-Za-z0-9._-], at most 64)";
    std::string problem = ipc::prepareDirectory(paths_.dir);
    if (!problem.empty()) return problem;
    lock_.reset(open(paths_.lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
    if (!lock_) return errnoText("cannot open " + paths_.lock);
    if (flock(lock_.get(), LOCK_EX | LOCK_NB) != 0) {
      int pid = 0;
      char buf[32] = {};
      if (pread(lock_.get(), buf, sizeof buf - 1, 0) > 0) pid = std::atoi(buf);
      return "node '" + options_.name + "' is already running (pid " + std::to_string(pid) + ")";
    }
    // Holding the lock, this is the only node of that name: a segment or socket still there was
    // left by a node that died without cleaning up.
    if (server::Staging::removeStale(paths_.segment)) {
      std::fprintf(stderr, "mcsim node: removed the stale segment /dev/shm/%s of a node '%s' that died\n",
                   paths_.segment.c_str(), options_.name.c_str());
    }
    unlink(paths_.socket.c_str());
    const std::string pid = std::to_string(getpid()) + "\n";
    if (ftruncate(lock_.get(), 0) != 0 || pwrite(lock_.get(), pid.data(), pid.size(), 0) < 0) {
      return errnoText("cannot write " + paths_.lock);
    }

    Preset preset;
    try {
      preset = loadPreset(options_.topology);
    } catch (const std::exception& e) {
      return std::string("cannot load topology preset: ") + e.what();
    }
    NodeSettings nodeSettings = options_.settings;
    HangPolicy& policy = nodeSettings.hang;
    // Whether a process aborts on a hang is its own choice (MCSIM_ON_HANG in its environment); the
    // node itself never aborts for one.
    policy.abortOnHang = false;
    // A process still starting is not counted yet: a deadlock across processes must last a
    // moment (a new process attaching is progress) before it is reported.
    policy.deadlockSettleSeconds = std::min(1.0, policy.graceSeconds / 2);
    host_ = std::make_unique<NodeHost>(preset, nodeSettings);
    host_->setIdentity(options_.name);
    host_->installFaultPlan(options_.faults, options_.seed);
    if (!options_.follow.empty()) host_->followAdmissions(options_.follow, options_.followPatienceSeconds);
    // What a process that attaches is told of the node, for its trace (a replay rebuilds the node
    // from it).
    nlohmann::ordered_json settings{{"name", options_.name},
                                    {"topology", options_.topology},
                                    {"seed", options_.seed},
                                    {"hang_grace_s", policy.graceSeconds}};
    settings["faults"] = options_.faults.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(options_.faultsText);

    problem = staging_.create(paths_.segment, options_.segmentBytes);
    if (!problem.empty()) return problem;
    channel::SegmentHeader& header = staging_.header();
    header.nodePid = getpid();
    header.uid = getuid();
    header.faultsActive.store(options_.faults.empty() ? 0 : 1);
    header.imexPresent.store(preset.imexChannel ? 1 : 0);

    // The parts that serve the attached processes (node_server_*.h).
    dispatch_ = std::make_unique<server::Dispatch>(*host_, staging_);
    channels_ = std::make_unique<server::Channels>(*host_, staging_, *dispatch_, log_);
    processes_ = std::make_unique<server::Processes>(*host_, staging_, *channels_, log_, options_.processes);
    host_->setThreadCounter([this] { return processes_->attachedThreads(); });
    status_ = std::make_unique<server::StatusReport>(options_, paths_, *host_, staging_, *processes_, *channels_, log_);
    transport_ = std::make_unique<server::Transport>(options_, paths_, settings.dump(), *processes_, *channels_,
                                                     *dispatch_, *status_, log_, [] { onStopSignal(0); });
    problem = transport_->listen();
    if (!problem.empty()) return problem;


    int pipeFds[2];
    if (pipe2(pipeFds, O_CLOEXEC) != 0) return errnoText("pipe");
    stopRead_.reset(pipeFds[0]);
    stopWrite_.reset(pipeFds[1]);
    gStopFd.store(stopWrite_.get());
    struct sigaction sa {};
    sa.sa_handler = onStopSignal;
    sigaction(SIGTERM, &sa, nullptr);
    sigaction(SIGINT, &sa, nullptr);
    signal(SIGPIPE, SIG_IGN);
    if (options_.exitWith > 0) {
      exitWith_.reset(pidfdOpen(options_.exitWith));
      if (!exitWith_) return errnoText("--exit-with " + std::to_string(options_.exitWith));
    }
    return "";
  }

  // Accepts attachments until stopped; then removes the segment and the socket.
  void serve() {
    for (;;) {
      // The third: the process the node is to go with (--exit-with), when there is one.
      pollfd fds[3] = {
          {transport_->listeningFd(), POLLIN, 0}, {stopRead_.get(), POLLIN, 0}, {exitWith_.get(), POLLIN, 0}};
      if (poll(fds, exitWith_ ? 3 : 2, -1) < 0) {
        if (errno == EINTR) continue;
        break;
      }
      if (fds[1].revents != 0) break;
      if (exitWith_ && fds[2].revents != 0) {
        log_.line("process " + std::to_string(options_.exitWith) + " exited (--exit-with)");
        break;
      }
      if ((fds[0].revents & POLLIN) != 0) transport_->acceptOne();
    }
    shutdown();
  }

 private:
  void shutdown() {
    if (!options_.follow.empty()) log_.line("replay: " + status_->replayState());
    log_.line("stopping (" + std::to_string(host_->processCount()) + " processes attached)");
    for (const std::string& line : host_->unfiredFaultRules()) log_.line(line);
    staging_.header().stopping.store(1);
    transport_->close();
    staging_.removeName();
    // The lock file stays (a starting node takes it over); its lock goes with the process.
  }

  NodeServerOptions options_;
  ipc::NodePaths paths_;
  server::ServerLog log_;
  UniqueFd lock_, stopRead_, stopWrite_, exitWith_;
  std::unique_ptr<NodeHost> host_;
  server::Staging staging_;
  std::unique_ptr<server::Dispatch> dispatch_;
  std::unique_ptr<server::Channels> channels_;
  std::unique_ptr<server::Processes> processes_;
  std::unique_ptr<server::StatusReport> status_;
  std::unique_ptr<server::Transport> transport_;
};

}  // namespace

int runNodeServer(const NodeServerOptions& options, int readyFd) {
  channel::setSpinRounds(options.settings.channelSpin);
  NodeServer node(options);
  const std::string problem = node.start();
  if (readyFd >= 0) {
    writeAll(readyFd, problem.empty() ? std::string("ready\n") : "error: " + problem + "\n");
    close(readyFd);
  }
  if (!problem.empty()) {
    std::fprintf(stderr, "mcsim node: %s\n", problem.c_str());
    return 1;
  }
  node.serve();
  // Threads of attached processes may still be inside calls; the process ends without waiting
  // for them (its clients see the node gone).
  std::fflush(stderr);
  _exit(0);
}

}  // namespace mcsim::fabric
