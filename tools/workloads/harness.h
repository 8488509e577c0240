// The harness of the campaign workloads (tools/workloads/*.cpp): small client-style programs that
// `mcsim campaign` runs under randomized fault plans. They use only cuda.h and mcsim's public C++
// API (include/mcsim/api.h).
//
// The threads of a workload take turns: a thread runs only while it holds the turn, and passes it
// on after each driver call (round robin among the threads that are neither waiting at a barrier
// nor finished). So the sequence of calls the driver sees, and with it every fault a seeded plan
// fires, depends on nothing but the seed, and state shared between the threads needs no lock.
// (mcsim has no call sequencer yet; without the turns, which thread meets the Nth call of a rule,
// or which draw of a prob= trigger, would change from run to run.)
// Every driver call a workload makes goes through Harness::call, which
//   - records (call name, result) per thread, for the trace digest;
//   - checks that a call that failed left mcsim::api::stateDigest() unchanged (unless a
//     fabric-level rule, which changes the fabric by itself, fired during the call).
// At the end the harness checks that nothing leaked (mcsim::api::nodeStats() and the process's
// open descriptors are back to where they were after cuInit) and prints the lines the campaign
// reads:
//
//   mcsim-digest: <16 hex digits>      FNV-1a over every thread's (name, result) sequence, in thread order
//   mcsim-fired: <point> <count>       per fault point of the plan in force (mcsim::api::faultReport)
//   mcsim-calls: <calls> <failed>
//   mcsim-invariants: ok               or one `mcsim-invariants: violation <what>` line per violation
//
// The exit status is 0 when the invariants hold, 1 otherwise. `PROGRAM --points` prints the
// driver entry points the workload calls (the campaign draws its fault points from them).
#pragma once

#include <cuda.h>

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "mcsim/api.h"

namespace mcsim::workload {

class Harness {
 public:
  explicit Harness(int threads);

  // cuInit and the baselines. False (with a violation recorded) when the driver does not start.
  bool begin();

  // Thread `t` waits for its first turn (the first thing a thread does).
  void start(int t);
  // A driver call by thread `t`, which holds the turn; returns with the turn held again.
  CUresult call(int t, const char* name, const std::function<CUresult()>& fn);
  // A teardown call (release, unmap, free, unbind): a fault plan may fail it a few times, so it is
  // retried while it fails, up to kTeardownTries times in all.
  CUresult teardown(int t, const char* name, const std::function<CUresult()>& fn);
  static constexpr int kTeardownTries = 5;

  // Thread `t` waits until every thread that has not finished has arrived.
  void barrier(int t);
  // Thread `t` passes the turn for good (the last thing a thread does).
  void finish(int t);

  // Records an invariant violation (thread-safe).
  void violation(const std::string& what);

  // Reads `words` 32-bit words at `src` (retrying while a fault plan fails the copy) and compares
  // them with `expected`; a mismatch is a violation naming `what`. Returns false when the copy
  // never succeeded (nothing could be checked).
  bool verify(int t, CUdeviceptr src, const std::vector<uint32_t>& expected, const std::string& what);

  // After every thread has joined: the leak checks and the report. Returns the exit status.
  int end();

  // MCSIM_WORKLOAD_LEAK=1: the workload deliberately leaks one allocation (to show that the
  // campaign catches a violation).
  static bool plantLeak();

  // Runs body(t) for every thread t on a thread of its own, and joins them.
  void runThreads(const std::function<void(int)>& body);

 private:
  enum class ThreadState { kRunnable, kAtBarrier, kDone };
  void waitTurn(std::unique_lock<std::mutex>& lock, int t);
  void passTurn(int t);  // under mu_
  static uint64_t fabricFired();
  static int openDescriptors();

  std::mutex mu_;
  std::condition_variable cv_;
  int current_ = 0;
  std::vector<ThreadState> state_;
  std::vector<std::vector<std::pair<std::string, CUresult>>> trace_;
  uint64_t calls_ = 0, failed_ = 0;

  std::mutex violationsMu_;
  std::vector<std::string> violations_;

  mcsim::api::NodeStats startStats_;
  int startFds_ = 0;
};

inline bool ok(CUresult r) { return r == CUDA_SUCCESS; }

// The part of a rank's life that the one-thread-per-device workloads (NCCL's and PyTorch's) share:
// its first turn, its device's primary context, the team's abort flag, and leaving. Construct it
// as the rank's first act; every path of the rank ends in leave().
class Rank {
 public:
  // `abortFlag` is the team's (NCCL's abort flag); `cleanup` releases what the workload made
  // (called by leave, before the context goes).
  Rank(Harness& h, int rank, bool* abortFlag, std::function<void()> cleanup);

  int rank() const { return r_; }
  // Retains the rank's device's primary context and makes it current. False when a call failed.
  bool enterContext();
  // A call from the bind on: a failure raises the abort flag at once, in the rank's turn, so that
  // the ranks after it see the flag before their own next call.
  CUresult team(const char* name, const std::function<CUresult()>& fn);
  // Imports the multicast object from the POSIX descriptor the creating rank exported (the
  // threads share descriptors as processes would pass them over a Unix socket).
  CUresult importPosix(int fd, CUmemGenericAllocationHandle* mc);
  // Leaves the team: before the bind without a word (raiseAbort false: the others' binds then
  // wait until mcsim reports the hang), from the bind on with the abort flag raised. Cleans up,
  // releases the context, and passes the turn for good.
  void leave(bool raiseAbort);

 private:
  Harness& h_;
  int r_;
  bool* abort_;
  std::function<void()> cleanup_;
  bool ctxRetained_ = false, ctxCurrent_ = false;
};

// Helpers for the sequences.
std::string resultName(CUresult r);
CUmemAllocationProp deviceProp(int dev, unsigned long long handleTypes);
CUmemAccessDesc readWrite(int dev);
CUmulticastObjectProp multicastProp(unsigned numDevices, size_t size, unsigned long long handleTypes);
// The pattern thread/device `owner` writes, word `i`.
inline uint32_t patternWord(int owner, size_t i) { return 0xC0000000u | (uint32_t(owner) << 20) | uint32_t(i & 0xFFFFF); }

// Prints the workload's entry points (for --points) and returns 0.
int printPoints(const std::vector<const char*>& points);
bool wantsPoints(int argc, char** argv);

}  // namespace mcsim::workload
