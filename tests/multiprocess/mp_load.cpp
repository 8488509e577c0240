// mp_load: the load benchmark of a shared node (bench/node_load.sh, docs/multiprocess.md).
//
//   mp_load [--ranks N] [--cycles C] [--topology PRESET] [--segment-mib M]
//
// Starts a node of its own, runs N mp_rank processes that each do C team setups and teardowns
// (mp_rank's "cycles" scenario: NCCL's order, the multicast object's descriptor passed through
// this process over socketpairs), and checks that nothing leaked: the node's counts back to 0,
// its segment use and its open descriptors back to what they were before the processes came,
// and every process's own descriptors the same before and after its cycles. Prints the figures;
// exits 1 if anything leaked or a process failed.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "tests/common/wait_until.h"
#include "tests/multiprocess/broker.h"

namespace {

// A line of /proc/PID/status, e.g. "VmHWM".
std::string procStatus(int pid, const std::string& key) {
  const std::string s = mptest::readFile("/proc/" + std::to_string(pid) + "/status");
  const size_t at = s.find(key + ":");
  if (at == std::string::npos) return "?";
  std::string v = s.substr(at + key.size() + 1, s.find('\n', at) - at - key.size() - 1);
  v.erase(0, v.find_first_not_of(" \t"));
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  int ranks = 8, cycles = 1000;
  std::string topology = "hgx-h100";
  unsigned segmentMiB = 1024;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--ranks") ranks = std::atoi(v.c_str());
    else if (k == "--cycles") cycles = std::atoi(v.c_str());
    else if (k == "--topology") topology = v;
    else if (k == "--segment-mib") segmentMiB = static_cast<unsigned>(std::atoi(v.c_str()));
    else {
      std::fprintf(stderr, "usage: mp_load [--ranks N] [--cycles C] [--topology PRESET] [--segment-mib M]\n");
      return 2;
    }
  }
  char tmpl[] = "/tmp/mcsim-load-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) return 1;
  const std::string dir = tmpl, name = "load" + std::to_string(getpid());
  const std::string mcsim = MCSIM_BIN_DIR "/mcsim";
  const mptest::Env nodeEnv = {{"MCSIM_NODE_DIR", dir}};
  auto status = [&] { return mptest::runProgram({mcsim, "node", "status", "--name", name}, nodeEnv).output; };
  const mptest::Ran started = mptest::runProgram(
      {mcsim, "node", "start", "--name", name, "--topology", topology, "--segment-mib", std::to_string(segmentMiB),
       "--exit-with", std::to_string(getpid())},
      nodeEnv);
  if (started.status != 0) {
    std::fprintf(stderr, "%s", started.output.c_str());
    return 1;
  }
  const int nodePid = std::atoi(mptest::readFile(dir + "/" + name + ".lock").c_str());
  const std::string fdDir = "/proc/" + std::to_string(nodePid) + "/fd";
  // The node's descriptors once it is idle: the status command's connection (and, just after
  // the start, the readiness pipe) close a moment after the answer. Nothing says when that moment
  // is, so the count is taken once it has stayed the same for 20 ms: a heuristic this benchmark
  // (run by hand through bench/node_load.sh, never by the test suite) can afford.
  auto settledFds = [&] {
    int n = mptest::countEntries(fdDir);
    for (int i = 0; i < 100; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      const int m = mptest::countEntries(fdDir);
      if (m == n) break;
      n = m;
    }
    return n;
  };
  const unsigned long long inUseBefore = mptest::segmentInUse(status());
  const int nodeFdsBefore = settledFds();

  mptest::Broker b(MCSIM_MP_RANK, dir);
  mptest::Env env = {{"MCSIM_NODE", name}, {"MCSIM_NODE_DIR", dir}, {"MCSIM_CYCLES", std::to_string(cycles)}};
  const auto t0 = std::chrono::steady_clock::now();
  for (int r = 0; r < ranks; ++r) b.spawn("cycles", r, ranks, env);
  b.start();
  bool ok = true;
  double slowest = 0;
  std::vector<std::string> fdsNotes;
  for (int r = 0; r < ranks; ++r) {
    if (b.wait(r) != 0) {
      std::fprintf(stderr, "rank %d failed:\n%s\n", r, b.output(r).c_str());
      ok = false;
      continue;
    }
    slowest = std::max(slowest, std::atof(b.noted(r, "seconds").c_str()));
    const std::string fds = b.noted(r, "fds");
    const size_t sp = fds.find(' ');
    if (sp == std::string::npos || fds.substr(0, sp) != fds.substr(sp + 1)) {
      std::fprintf(stderr, "rank %d: open descriptors before and after the cycles: %s\n", r, fds.c_str());
      ok = false;
    }
    if (r == 0) fdsNotes.push_back(fds);
  }
  b.finish();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const std::string peakRss = procStatus(nodePid, "VmHWM");
  // The node reclaims each process as it goes; wait until all have.
  std::string after;
  cutest::waitUntil([&] {
    after = status();
    return after.find("processes: 0 attached") != std::string::npos;
  });
  const int nodeFdsAfter = settledFds();
  const unsigned long long inUseAfter = mptest::segmentInUse(after);
  mptest::Broker c(MCSIM_MP_RANK, dir);
  c.spawn("counts", 0, 1, {{"MCSIM_NODE", name}, {"MCSIM_NODE_DIR", dir}});
  c.start();
  const std::string counts = c.noted(0, "counts");
  c.wait(0);
  c.finish();
  mptest::runProgram({mcsim, "node", "stop", "--name", name}, nodeEnv);
  mptest::runProgram({"/bin/rm", "-rf", dir}, {});

  const bool clean = counts == "0 0 0 0 0 0" && nodeFdsAfter == nodeFdsBefore && inUseAfter == inUseBefore;
  std::printf("mp_load: %d processes x %d cycles on %s\n", ranks, cycles, topology.c_str());
  std::printf("  cycles:            %.3f s for the slowest process (%.3f ms per cycle, %.0f cycles/s); %.3f s in all\n",
              slowest, cycles > 0 ? 1e3 * slowest / cycles : 0.0, slowest > 0 ? cycles / slowest : 0.0, wall);
  std::printf("  node counts after: %s (allocations handles reservations mappings multicast-objects exports)\n",
              counts.c_str());
  std::printf("  segment in use:    %llu bytes before, %llu after\n", inUseBefore, inUseAfter);
  std::printf("  node descriptors:  %d before, %d after\n", nodeFdsBefore, nodeFdsAfter);
  std::printf("  rank 0 descriptors before and after its cycles: %s\n", fdsNotes.empty() ? "?" : fdsNotes[0].c_str());
  std::printf("  node peak RSS:     %s\n", peakRss.c_str());
  std::printf("  %s\n", ok && clean ? "nothing leaked" : "LEAK OR FAILURE");
  return ok && clean ? 0 : 1;
}
