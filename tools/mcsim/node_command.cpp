// `mcsim node start|stop|status`: a shared node in a process of its own (bin/mcsim-node), which
// programs attach to with MCSIM_NODE=<name> (docs/multiprocess.md).
#include <CLI/CLI.hpp>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "commands.h"
#include "driver_library.h"
#include "fabric/node_ipc.h"
#include "fabric/unique_fd.h"
#include "fabric/wire.h"
#include "node_start.h"
#include "tool_settings.h"

namespace mcsim::tools {

namespace {

namespace ipc = fabric::ipc;
using fabric::UniqueFd;

// The files of the node `name`, in the directory MCSIM_NODE_DIR or XDG_RUNTIME_DIR says.
ipc::NodePaths pathsOf(const std::string& name) {
  const settings::Settings& s = toolSettings();
  return ipc::nodePaths(name, ipc::nodeDirectory(s.nodeDir, s.xdgRuntimeDir));
}

std::string defaultNodeName() {
  const std::string& n = toolSettings().node;
  return !n.empty() ? n : "default";
}

// A path that names an existing file, made absolute: the node and the programs that attach to it
// may run in other directories.
std::string absoluteIfFile(const std::string& s) {
  struct stat st {};
  if (s.empty() || stat(s.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return s;
  char buf[PATH_MAX];
  return realpath(s.c_str(), buf) != nullptr ? std::string(buf) : s;
}

bool segmentExists(const ipc::NodePaths& p) {
  return access(("/dev/shm/" + p.segment).c_str(), F_OK) == 0;
}

// One exchange with the running node: hello of `kind`, and its answer.
bool askNode(const ipc::NodePaths& paths, ipc::HelloKind kind, ipc::Msg* type, std::vector<uint8_t>* reply,
             std::string* error) {
  UniqueFd s(ipc::connectToNode(paths, error));
  if (!s) return false;
  ipc::Hello hello;
  hello.kind = kind;
  if (!ipc::sendMessage(s.get(), ipc::Msg::kHello, ipc::encode(hello)) || !ipc::receiveMessage(s.get(), type, reply)) {
    *error = "the node did not answer";
    return false;
  }
  return true;
}

}  // namespace

int startNode(const NodeOptions& o) {
  if (!ipc::validNodeName(o.name)) {
    std::fprintf(stderr, "mcsim node start: '%s' is no node name (1 to 64 of A-Z a-z 0-9 . _ -)\n", o.name.c_str());
    return kExitBadInput;
  }
  const ipc::NodePaths paths = pathsOf(o.name);
  const std::string problem = ipc::prepareDirectory(paths.dir);
  if (!problem.empty()) {
    std::fprintf(stderr, "mcsim node start: %s\n", problem.c_str());
    return kExitFailure;
  }
  int pid = 0;
  if (ipc::nodeRunning(paths, &pid)) {
    std::fprintf(stderr, "mcsim node start: node '%s' is already running (pid %d)\n", o.name.c_str(), pid);
    return kExitFailure;
  }
  const CompanionProgram node = findCompanionProgram("mcsim-node");
  if (node.path.empty()) {
    std::fprintf(stderr, "mcsim node start: %s\n", node.problem.c_str());
    return kExitCannotStart;
  }
  std::vector<std::string> args = {node.path, "--name", o.name, "--seed", std::to_string(o.seed),
                                   "--segment", std::to_string(o.segmentMiB << 20)};
  if (!o.topology.empty()) args.insert(args.end(), {"--topology", absoluteIfFile(o.topology)});
  if (!o.faults.empty()) args.insert(args.end(), {"--faults", absoluteIfFile(o.faults)});
  if (o.exitWith > 0) args.insert(args.end(), {"--exit-with", std::to_string(o.exitWith)});
  if (!o.follow.empty()) args.insert(args.end(), {"--follow", absoluteIfFile(o.follow)});
  if (o.processes > 0) args.insert(args.end(), {"--processes", std::to_string(o.processes)});
  int ready[2];
  if (pipe2(ready, O_CLOEXEC) != 0) {
    std::perror("mcsim node start: pipe");
    return kExitFailure;
  }
  args.insert(args.end(), {"--ready-fd", std::to_string(ready[1])});
  const pid_t child = fork();
  if (child < 0) {
    std::perror("mcsim node start: fork");
    return kExitFailure;
  }
  if (child == 0) {
    // The node outlives this command: a session of its own, its output in the log.
    setsid();
    const int devnull = open("/dev/null", O_RDONLY);
    const int log = open(paths.log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (devnull < 0 || log < 0) _exit(127);
    dup2(devnull, 0);
    dup2(log, 1);
    dup2(log, 2);
    fcntl(ready[1], F_SETFD, 0);
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(ready[1]);
  UniqueFd readEnd(ready[0]);
  std::string line;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (line.find('\n') == std::string::npos && std::chrono::steady_clock::now() < deadline) {
    pollfd p{readEnd.get(), POLLIN, 0};
    if (poll(&p, 1, 200) <= 0) continue;
    char buf[512];
    const ssize_t n = read(readEnd.get(), buf, sizeof buf);
    if (n <= 0) break;
    line.append(buf, static_cast<size_t>(n));
  }
  if (line.rfind("ready", 0) == 0) {
    if (o.quiet) return kExitOk;
    std::printf("mcsim: node '%s' started (pid %d)\n  attach with MCSIM_NODE=%s\n  log: %s\n", o.name.c_str(),
                static_cast<int>(child), o.name.c_str(), paths.log.c_str());
    return kExitOk;
  }
  const bool saidWhy = line.rfind("error: ", 0) == 0;
  if (saidWhy) {
    std::fprintf(stderr, "mcsim node start: %s", line.substr(7).c_str());
  } else {
    std::fprintf(stderr, "mcsim node start: the node process did not get ready; see %s\n", paths.log.c_str());
    kill(child, SIGKILL);
  }
  waitpid(child, nullptr, 0);
  // A start that failed leaves no files behind, except the log of a node that failed without
  // saying why (the message above points at it). Only while nobody holds the lock: a node of the
  // same name started meanwhile by someone else keeps its files.
  UniqueFd lock(open(paths.lock.c_str(), O_RDONLY | O_CLOEXEC));
  if (lock.get() >= 0 && flock(lock.get(), LOCK_EX | LOCK_NB) == 0) {
    unlink(paths.lock.c_str());
    if (saidWhy) unlink(paths.log.c_str());
  }
  return kExitFailure;
}

int stopNode(const NodeOptions& o) {
  const ipc::NodePaths paths = pathsOf(o.name);
  int pid = 0;
  if (!ipc::nodeRunning(paths, &pid)) {
    if (segmentExists(paths)) {
      // Left by a node that died: clean up as `start` would.
      shm_unlink(("/" + paths.segment).c_str());
      unlink(paths.socket.c_str());
      std::printf("mcsim: node '%s' was not running; removed the segment it left\n", o.name.c_str());
      return kExitOk;
    }
    std::fprintf(stderr, "mcsim node stop: no node '%s' is running\n", o.name.c_str());
    return kExitFailure;
  }
  ipc::Msg type{};
  std::vector<uint8_t> reply;
  std::string error;
  if (!askNode(paths, ipc::HelloKind::kStop, &type, &reply, &error)) kill(pid, SIGTERM);
  // The lock goes with the process.
  for (int i = 0; i < 500 && ipc::nodeRunning(paths, &pid); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (i == 250) kill(pid, SIGKILL);
  }
  if (!o.quiet) std::printf("mcsim: node '%s' stopped\n", o.name.c_str());
  return kExitOk;
}

std::string nodeLogPath(const std::string& name) { return pathsOf(name).log; }

namespace {

int status(const NodeOptions& o) {
  const ipc::NodePaths paths = pathsOf(o.name);
  int pid = 0;
  if (!ipc::nodeRunning(paths, &pid)) {
    std::printf("node '%s': not running%s\n", o.name.c_str(),
                segmentExists(paths) ? " (a node that died left its segment; `mcsim node start` or stop cleans it)" : "");
    return kExitFailure;
  }
  ipc::Msg type{};
  std::vector<uint8_t> reply;
  std::string error;
  if (!askNode(paths, ipc::HelloKind::kStatus, &type, &reply, &error)) {
    std::fprintf(stderr, "mcsim node status: node '%s' (pid %d): %s\n", o.name.c_str(), pid, error.c_str());
    return kExitFailure;
  }
  if (type != ipc::Msg::kStatusText) {
    std::fprintf(stderr, "mcsim node status: %s\n", ipc::describeRefusal(o.name, reply).c_str());
    return kExitFailure;
  }
  fabric::wire::Reader r(reply.data(), reply.size());
  std::fputs(r.getString().c_str(), stdout);
  return kExitOk;
}

}  // namespace

Command addNodeCommand(CLI::App& parent) {
  auto o = std::make_shared<NodeOptions>();
  CLI::App* cmd = parent.add_subcommand("node", "Host a node in a process of its own, for programs of several processes");
  cmd->require_subcommand(1);
  auto nameOption = [&](CLI::App* sub) {
    sub->add_option("--name", o->name, "Node name (default: $MCSIM_NODE, else 'default')");
  };
  CLI::App* startCmd = cmd->add_subcommand("start", "Start a node; returns once it accepts attachments");
  nameOption(startCmd);
  startCmd->add_option("--topology", o->topology, "Topology preset: a built-in name or a JSON file (default: hgx-h100)");
  startCmd->add_option("--seed", o->seed, "Seed of the fault plan's random draws (MCSIM_SEED)");
  startCmd->add_option("--faults", o->faults, "Fault plan file for the whole node (docs/faults.md)");
  startCmd->add_option("--segment-mib", o->segmentMiB, "Size of the shared segment in MiB (default 1024; sparse)")
      ->check(CLI::Range(16, 1 << 20));
  startCmd->add_option("--processes", o->processes,
                       "How many processes the run will attach: no deadlock is reported before they all have "
                       "(a rank that starts late is not taken for one that never comes)")
      ->check(CLI::Range(1, 1 << 16));
  startCmd->add_option("--exit-with", o->exitWith,
                       "Stop the node when the process of this pid exits (for scripts and test harnesses)");
  CLI::App* stopCmd = cmd->add_subcommand("stop", "Stop a node; attached programs' calls then fail");
  nameOption(stopCmd);
  CLI::App* statusCmd = cmd->add_subcommand("status", "Show a node: its processes, segment and state");
  nameOption(statusCmd);
  return Command{cmd, [o, startCmd, stopCmd] {
                   if (o->name.empty()) o->name = defaultNodeName();
                   if (startCmd->parsed()) return startNode(*o);
                   if (stopCmd->parsed()) return stopNode(*o);
                   return status(*o);
                 }};
}

}  // namespace mcsim::tools
