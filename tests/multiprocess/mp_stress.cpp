// mp_stress: the shared node under chaos (scripts/stress.sh, docs/reliability.md).
//
//   mp_stress [--seconds S] [--processes N] [--seed X] [--kill-every-ms M] [--grace G] [--slack L]
//             [--topology PRESET]
//
// Starts a node of its own (MCSIM_HANG_GRACE_S=G) and, for S seconds, keeps N worker processes
// attached to it, each doing random driver work drawn from its seed: copies of every size
// (staged ones included), VMM memory mapped and checked, multicast teams set up, bound and torn
// down, streams with queued work and events, exported and imported descriptors; some of it held
// across rounds. A chaos loop kills a random worker with SIGKILL at random moments (on average
// every M ms) and starts a new one in its place. A keeper process, never killed, holds memory
// with a known pattern throughout. Fails when:
//   - a worker gets a result or data it should not (it exits 1 and says what),
//   - a driver call of any process takes longer than G + L seconds (a hang past the grace period),
//   - the node process dies,
//   - afterwards: the keeper's memory changed, a fresh process cannot copy 16 bytes, the node's
//     counts are not all 0, or its segment use or open descriptors are not back to what they
//     were before any process came.
// Every decision (which work, which worker, when) comes from the seed; what the processes
// interleave with does not. Prints what it did and exits 0 when nothing failed.
//
// Also `mp_stress worker SLOT SEED CONTROL` and `mp_stress keeper SLOT SEED CONTROL`: the
// processes it starts (the same binary, executed again).
#include <cuda.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "tests/common/vmm_props.h"
#include "tests/common/wait_until.h"
#include "tests/multiprocess/broker.h"

namespace {

// ---- What the harness and its processes share: a file mapped by all of them ----

constexpr int kMaxSlots = 64;

// The kinds of work a worker draws from.
enum Op : uint32_t { kCopy, kLargeCopy, kVmm, kMulticast, kStreams, kShareable, kHold, kRelease, kOps };
// The names, and one more for a process still attaching (cuInit and its first calls).
constexpr const char* kOpNames[kOps + 1] = {"copy",          "large-copy", "vmm",     "multicast", "streams",
                                            "export-import", "hold",       "release", "attaching"};
// How often each is drawn, in sixteenths: large copies take the longest, so they come seldom.
constexpr uint32_t kOpWeights[kOps] = {3, 1, 2, 2, 2, 2, 2, 2};

struct Slot {
  std::atomic<uint64_t> callSinceNs;  // when the driver call it is in began; 0 when in none
  std::atomic<uint32_t> op;           // the work it is doing
  std::atomic<uint32_t> ready;        // the keeper: its memory is filled
};

struct Control {
  std::atomic<uint32_t> stop;
  std::array<std::atomic<uint64_t>, kOps> done;  // work finished, of each kind, by every process
  std::array<Slot, kMaxSlots + 1> slots;         // workers 0..N-1, the keeper at N
};

uint64_t nowNs() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count());
}

Control* mapControl(const std::string& path, bool create) {
  const int fd = open(path.c_str(), create ? O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC : O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0 || (create && ftruncate(fd, sizeof(Control)) != 0)) return nullptr;
  void* p = mmap(nullptr, sizeof(Control), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  return p == MAP_FAILED ? nullptr : static_cast<Control*>(p);  // a new file reads as zeros
}

// ---- A worker ----

int gSlot = 0;
Control* gControl = nullptr;

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "mp_stress process %d: %s\n", gSlot, what.c_str());
  std::exit(1);
}

const char* resultName(CUresult r) {
  const char* n = nullptr;
  cuGetErrorName(r, &n);
  return n != nullptr ? n : "?";
}

// Every driver call is timed through the control block, so that the harness sees a call that
// does not return.
template <typename Call>
CUresult timed(Call call) {
  Slot& me = gControl->slots[static_cast<size_t>(gSlot)];
  me.callSinceNs.store(nowNs());
  const CUresult r = call();
  me.callSinceNs.store(0);
  return r;
}
#define CU(expr)                                                                       \
  do {                                                                                 \
    const CUresult r_ = timed([&] { return (expr); });                                 \
    if (r_ != CUDA_SUCCESS) fail(std::string(#expr) + " returned " + resultName(r_)); \
  } while (0)

// What a worker holds across rounds (released later, at its end, or by the node when it is killed).
struct Held {
  enum Kind { kMemory, kVmm, kTeam, kStream } kind;
  CUdeviceptr ptr = 0;  // kMemory: cuMemAlloc'd, filled with `pattern`; kVmm: the mapping
  size_t bytes = 0;
  uint32_t pattern = 0;
  CUmemGenericAllocationHandle handle = 0, mc = 0, other = 0;
  CUstream stream = nullptr;
  CUevent event = nullptr;
};

class Worker {
 public:
  Worker(int slot, uint64_t seed) : rng_(seed), slot_(slot) {}

  void start() {
    CU(cuInit(0));
    int n = 0;
    CU(cuDeviceGetCount(&n));
    d0_ = slot_ % n;
    d1_ = (slot_ + 1) % n;
    CU(cuDevicePrimaryCtxRetain(&ctx_, d0_));
    CU(cuCtxSetCurrent(ctx_));
    const CUmemAllocationProp prop = cutest::devicePinned(d0_);
    CU(cuMemGetAllocationGranularity(&gran_, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    const CUmulticastObjectProp mcProp = cutest::mcProp(2, 0);
    CU(cuMulticastGetGranularity(&mcGran_, &mcProp, CU_MULTICAST_GRANULARITY_MINIMUM));
  }

  void round() {
    uint32_t draw16 = std::uniform_int_distribution<uint32_t>(0, 15)(rng_), op = 0;
    while (draw16 >= kOpWeights[op]) draw16 -= kOpWeights[op++];
    gControl->slots[static_cast<size_t>(slot_)].op.store(op);
    switch (op) {
      case kCopy: copy(size_t{16} << std::uniform_int_distribution<int>(0, 16)(rng_)); break;  // 16 B .. 1 MiB
      case kLargeCopy: copy(size_t{8} << 20); break;  // staged through the segment in blocks
      case kVmm: vmm(false); break;
      case kMulticast: team(false); break;
      case kStreams: streams(false); break;
      case kShareable: shareable(); break;
      case kHold: hold(); break;
      case kRelease: releaseOne(); break;
      default: break;
    }
    gControl->done[op].fetch_add(1);
  }

  void finish() {
    while (!held_.empty()) releaseOne();
    CU(cuCtxSetCurrent(nullptr));
    CU(cuDevicePrimaryCtxRelease(d0_));
    if (keptOther_) CU(cuDevicePrimaryCtxRelease(d1_));
  }

  // The keeper: memory on two devices filled with a pattern, checked when told to stop.
  void keep() {
    for (int d : {d0_, d1_}) {
      CUcontext c = nullptr;
      CU(cuDevicePrimaryCtxRetain(&c, d));
      if (d != d0_) keptOther_ = true;
      CU(cuCtxSetCurrent(c));
      for (int i = 0; i < 4; ++i) held_.push_back(filled(size_t{1} << (16 + 2 * i)));  // 64 KiB .. 4 MiB
    }
    CU(cuCtxSetCurrent(ctx_));
  }
  void checkKept() {
    for (const Held& h : held_) check(h);
  }

 private:
  uint32_t draw() { return static_cast<uint32_t>(rng_()); }

  std::vector<uint32_t> pattern(size_t bytes, uint32_t seed) {
    std::vector<uint32_t> v((bytes + 3) / 4);
    uint32_t x = seed | 1;
    for (auto& w : v) {
      x ^= x << 13;
      x ^= x >> 17;
      x ^= x << 5;
      w = x;
    }
    return v;
  }

  Held filled(size_t bytes) {
    Held h{Held::kMemory};
    h.bytes = bytes;
    h.pattern = draw();
    CU(cuMemAlloc(&h.ptr, bytes));
    const std::vector<uint32_t> data = pattern(bytes, h.pattern);
    CU(cuMemcpyHtoD(h.ptr, data.data(), bytes));
    return h;
  }

  void check(const Held& h) {
    if (h.kind != Held::kMemory) return;
    std::vector<uint32_t> got((h.bytes + 3) / 4);
    CU(cuMemcpyDtoH(got.data(), h.ptr, h.bytes));
    const std::vector<uint32_t> want = pattern(h.bytes, h.pattern);
    if (std::memcmp(got.data(), want.data(), h.bytes) != 0) {
      fail("memory of " + std::to_string(h.bytes) + " bytes held since it was filled reads back other bytes");
    }
  }

  void copy(size_t bytes) {
    Held h = filled(bytes);
    check(h);
    CU(cuMemFree(h.ptr));
  }

  void vmm(bool keep) {
    Held h{Held::kVmm};
    const CUmemAllocationProp prop = cutest::devicePinned(d0_);
    h.bytes = gran_;
    CU(cuMemCreate(&h.handle, gran_, &prop, 0));
    CU(cuMemAddressReserve(&h.ptr, gran_, 0, 0, 0));
    CU(cuMemMap(h.ptr, gran_, 0, h.handle, 0));
    const CUmemAccessDesc rw = cutest::readWrite(d0_);
    CU(cuMemSetAccess(h.ptr, gran_, &rw, 1));
    const uint32_t value = draw();
    CU(cuMemsetD32(h.ptr, value, gran_ / 4));
    uint32_t got[4] = {};
    CU(cuMemcpyDtoH(got, h.ptr + gran_ - sizeof got, sizeof got));
    for (uint32_t w : got) {
      if (w != value) fail("VMM memory set to " + std::to_string(value) + " reads back " + std::to_string(w));
    }
    if (keep) {
      held_.push_back(h);
    } else {
      release(h);
    }
  }

  // A team of the worker's two devices: the object, a device's memory bound on each.
  void team(bool keep) {
    Held h{Held::kTeam};
    const CUmulticastObjectProp p = cutest::mcProp(2, mcGran_);
    CU(cuMulticastCreate(&h.mc, &p));
    CU(cuMulticastAddDevice(h.mc, d0_));
    CU(cuMulticastAddDevice(h.mc, d1_));
    const CUmemAllocationProp p0 = cutest::devicePinned(d0_), p1 = cutest::devicePinned(d1_);
    CU(cuMemCreate(&h.handle, mcGran_, &p0, 0));
    CU(cuMemCreate(&h.other, mcGran_, &p1, 0));
    CU(cuMulticastBindMem(h.mc, 0, h.handle, 0, mcGran_, 0));
    CU(cuMulticastBindMem(h.mc, 0, h.other, 0, mcGran_, 0));
    if (keep) {
      held_.push_back(h);
    } else {
      release(h);
    }
  }

  // Work queued on a stream of its own, an event after it; waited for, or left queued.
  void streams(bool keep) {
    Held h{Held::kStream};
    CU(cuStreamCreate(&h.stream, CU_STREAM_NON_BLOCKING));
    CU(cuEventCreate(&h.event, CU_EVENT_DISABLE_TIMING));
    h.bytes = 4096;
    CU(cuMemAlloc(&h.ptr, h.bytes));
    const int n = 1 + static_cast<int>(draw() % 64);
    uint32_t value = 0;
    for (int i = 0; i < n; ++i) {
      value = draw();
      CU(cuMemsetD32Async(h.ptr, value, h.bytes / 4, h.stream));
    }
    CU(cuEventRecord(h.event, h.stream));
    if (keep) {
      held_.push_back(h);
      return;
    }
    if (draw() % 2 == 0) {
      CUresult q;
      while ((q = timed([&] { return cuEventQuery(h.event); })) == CUDA_ERROR_NOT_READY) {
      }
      if (q != CUDA_SUCCESS) fail(std::string("cuEventQuery returned ") + resultName(q));
    } else {
      CU(cuStreamSynchronize(h.stream));
    }
    uint32_t got = 0;
    CU(cuMemcpyDtoH(&got, h.ptr + h.bytes - 4, 4));
    if (got != value) fail("the last of " + std::to_string(n) + " queued memsets did not stick");
    release(h);
  }

  // Memory exported as a descriptor and imported again.
  void shareable() {
    const CUmemAllocationProp prop = cutest::devicePinned(d0_, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    CUmemGenericAllocationHandle h = 0, imported = 0;
    CU(cuMemCreate(&h, gran_, &prop, 0));
    int fd = -1;
    CU(cuMemExportToShareableHandle(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
    CU(cuMemImportFromShareableHandle(&imported, reinterpret_cast<void*>(static_cast<intptr_t>(fd)),
                                      CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
    close(fd);
    CU(cuMemRelease(imported));
    CU(cuMemRelease(h));
  }

  void hold() {
    if (held_.size() >= 12) return releaseOne();
    // At most two teams each: a switch has 128 multicast slots for every process together.
    const auto teams = std::count_if(held_.begin(), held_.end(), [](const Held& h) { return h.kind == Held::kTeam; });
    switch (draw() % 4) {
      case 0: held_.push_back(filled(size_t{4096} << (draw() % 8))); break;
      case 1: vmm(true); break;
      case 2:
        if (teams < 2) team(true);
        break;
      default: streams(true); break;
    }
  }

  void releaseOne() {
    if (held_.empty()) return;
    const size_t i = draw() % held_.size();
    const Held h = held_[i];
    held_.erase(held_.begin() + static_cast<std::ptrdiff_t>(i));
    release(h);
  }

  void release(const Held& h) {
    switch (h.kind) {
      case Held::kMemory:
        check(h);
        CU(cuMemFree(h.ptr));
        break;
      case Held::kVmm:
        CU(cuMemUnmap(h.ptr, h.bytes));
        CU(cuMemAddressFree(h.ptr, h.bytes));
        CU(cuMemRelease(h.handle));
        break;
      case Held::kTeam:
        CU(cuMulticastUnbind(h.mc, d0_, 0, mcGran_));
        CU(cuMulticastUnbind(h.mc, d1_, 0, mcGran_));
        CU(cuMemRelease(h.handle));
        CU(cuMemRelease(h.other));
        CU(cuMemRelease(h.mc));
        break;
      case Held::kStream:
        CU(cuStreamSynchronize(h.stream));
        CU(cuEventDestroy(h.event));
        CU(cuStreamDestroy(h.stream));
        CU(cuMemFree(h.ptr));
        break;
    }
  }

  std::mt19937_64 rng_;
  int slot_;
  int d0_ = 0, d1_ = 0;
  CUcontext ctx_ = nullptr;
  size_t gran_ = 0, mcGran_ = 0;
  std::vector<Held> held_;
  bool keptOther_ = false;  // the keeper's second device's context
};

int processMain(bool keeper, int slot, uint64_t seed, const std::string& controlPath) {
  gSlot = slot;
  gControl = mapControl(controlPath, false);
  if (gControl == nullptr) fail("cannot map " + controlPath);
  Worker w(slot, seed);
  w.start();
  if (keeper) {
    w.keep();
    gControl->slots[static_cast<size_t>(slot)].ready.store(1);
    while (gControl->stop.load() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    w.checkKept();
  } else {
    while (gControl->stop.load() == 0) w.round();
  }
  w.finish();
  return 0;
}

// ---- The harness ----

struct Options {
  double seconds = 60;
  int processes = 8;
  uint64_t seed = 1;
  int killEveryMs = 400;
  double grace = 5;   // the node's MCSIM_HANG_GRACE_S
  double slack = 60;  // beyond the grace, before a call counts as hung (a loaded machine is slow)
  std::string topology = "hgx-h100";
};

struct Process {
  pid_t pid = -1;
  int generation = 0;
  std::string output;
};

class Harness {
 public:
  explicit Harness(const Options& o) : o_(o), rng_(o.seed) {}

  int run() {
    char tmpl[] = "/tmp/mcsim-stress-XXXXXX";
    if (mkdtemp(tmpl) == nullptr) return 2;
    dir_ = tmpl;
    name_ = "stress" + std::to_string(getpid());
    control_ = mapControl(dir_ + "/control", true);
    if (control_ == nullptr) return 2;
    const bool ok = stress();
    mptest::runProgram({mcsim_, "node", "stop", "--name", name_}, nodeEnv());
    if (ok) {
      mptest::runProgram({"/bin/rm", "-rf", dir_}, {});
    } else {
      std::printf("  kept for a look: %s (the node's log, each process's output)\n", dir_.c_str());
    }
    std::printf("  %s\n", ok ? "the node survived: nothing hung, leaked or changed" : "FAILED");
    return ok ? 0 : 1;
  }

 private:
  mptest::Env nodeEnv() const { return {{"MCSIM_NODE_DIR", dir_}}; }
  std::string status() const { return mptest::runProgram({mcsim_, "node", "status", "--name", name_}, nodeEnv()).output; }

  bool problem(const std::string& what) {
    std::printf("  problem: %s\n", what.c_str());
    return false;
  }

  void spawn(int slot, bool keeper) {
    Process& p = procs_[static_cast<size_t>(slot)];
    const uint64_t seed = o_.seed * 1000003 + static_cast<uint64_t>(slot) * 7919 + static_cast<uint64_t>(p.generation);
    p.output = dir_ + "/process" + std::to_string(slot) + "-" + std::to_string(p.generation) + ".out";
    ++p.generation;
    control_->slots[static_cast<size_t>(slot)].callSinceNs.store(0);
    control_->slots[static_cast<size_t>(slot)].op.store(kOps);  // attaching
    const std::string slotText = std::to_string(slot), seedText = std::to_string(seed), controlPath = dir_ + "/control";
    const pid_t pid = fork();
    if (pid == 0) {
      setenv("MCSIM_NODE", name_.c_str(), 1);
      setenv("MCSIM_NODE_DIR", dir_.c_str(), 1);
      setenv("MCSIM_RANK", slotText.c_str(), 1);
      const int log = open(p.output.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      dup2(log, 1);
      dup2(log, 2);
      execl("/proc/self/exe", "mp_stress", keeper ? "keeper" : "worker", slotText.c_str(), seedText.c_str(),
            controlPath.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    p.pid = pid;
    ++spawned_;
  }

  // A process that ended by itself: only after the stop, and only with status 0.
  bool ended(int slot, int st) {
    Process& p = procs_[static_cast<size_t>(slot)];
    p.pid = -1;
    if (WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL && killedPending_[static_cast<size_t>(slot)]) {
      killedPending_[static_cast<size_t>(slot)] = false;
      return true;
    }
    if (WIFEXITED(st) && WEXITSTATUS(st) == 0 && control_->stop.load() != 0) return true;
    return problem("process " + std::to_string(slot) + " ended with " +
                   (WIFEXITED(st) ? "status " + std::to_string(WEXITSTATUS(st)) : std::string("signal ") + strsignal(WTERMSIG(st))) +
                   ":\n" + mptest::readFile(p.output));
  }

  // Every call in progress began less than the grace and the slack ago.
  bool noneHung() {
    const uint64_t now = nowNs(), limit = static_cast<uint64_t>((o_.grace + o_.slack) * 1e9);
    for (int s = 0; s <= o_.processes; ++s) {
      const uint64_t since = control_->slots[static_cast<size_t>(s)].callSinceNs.load();
      if (since != 0 && now > since) longest_ = std::max(longest_, now - since);
      if (since != 0 && now > since + limit && procs_[static_cast<size_t>(s)].pid > 0) {
        return problem("process " + std::to_string(s) + " has been in a driver call (" +
                       kOpNames[std::min<uint32_t>(control_->slots[static_cast<size_t>(s)].op.load(), kOps)] + ") for " +
                       std::to_string((now - since) / 1000000000) + " s, past the grace period");
      }
    }
    return true;
  }

  bool nodeAlive() { return kill(nodePid_, 0) == 0 || problem("the node process died; its log:\n" + mptest::readFile(log())); }
  std::string log() const { return dir_ + "/" + name_ + ".log"; }
  int nodeFds() const { return mptest::countEntries("/proc/" + std::to_string(nodePid_) + "/fd"); }

  // Reaps what ended; a worker killed by the chaos loop gets a successor.
  bool reap(bool respawn) {
    for (int s = 0; s <= o_.processes; ++s) {
      Process& p = procs_[static_cast<size_t>(s)];
      int st = 0;
      if (p.pid <= 0 || waitpid(p.pid, &st, WNOHANG) != p.pid) continue;
      if (!ended(s, st)) return false;
      if (respawn && s < o_.processes) spawn(s, false);
    }
    return true;
  }

  bool stress() {
    std::printf("mp_stress: %d processes on %s for %.0f s, seed %llu, a kill every %d ms on average, grace %.1f s\n",
                o_.processes, o_.topology.c_str(), o_.seconds, static_cast<unsigned long long>(o_.seed), o_.killEveryMs,
                o_.grace);
    mptest::Env env = nodeEnv();
    env.emplace_back("MCSIM_HANG_GRACE_S", std::to_string(o_.grace));
    const mptest::Ran started = mptest::runProgram({mcsim_, "node", "start", "--name", name_, "--topology", o_.topology,
                                                    "--exit-with", std::to_string(getpid())},
                                                   env);
    if (started.status != 0) return problem("the node did not start: " + started.output);
    nodePid_ = std::atoi(mptest::readFile(dir_ + "/" + name_ + ".lock").c_str());
    const unsigned long long inUseBefore = mptest::segmentInUse(status());
    // The status command's connection closes a moment after its answer: the baseline is the
    // fewest descriptors seen over a few looks, and the end waits for no more than it.
    int fdsBefore = nodeFds();
    for (int i = 0; i < 20; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      fdsBefore = std::min(fdsBefore, nodeFds());
    }

    procs_.assign(static_cast<size_t>(o_.processes) + 1, Process{});
    killedPending_.assign(procs_.size(), false);
    spawn(o_.processes, true);
    if (!cutest::waitUntil([&] { return control_->slots[static_cast<size_t>(o_.processes)].ready.load() != 0 || procs_.back().pid < 0 ||
                                        waitpid(procs_.back().pid, nullptr, WNOHANG) != 0; }) ||
        control_->slots[static_cast<size_t>(o_.processes)].ready.load() == 0) {
      return problem("the keeper did not fill its memory:\n" + mptest::readFile(procs_.back().output));
    }
    for (int s = 0; s < o_.processes; ++s) spawn(s, false);

    // The chaos: kill a random worker after a random pause, watching everything meanwhile.
    const auto start = std::chrono::steady_clock::now();
    const auto end = start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(o_.seconds));
    std::uniform_int_distribution<int> pause(0, 2 * o_.killEveryMs), victim(0, o_.processes - 1);
    std::array<uint64_t, kOps + 1> killedIn{};
    uint64_t killedInCall = 0;
    while (std::chrono::steady_clock::now() < end) {
      const auto next = std::chrono::steady_clock::now() + std::chrono::milliseconds(pause(rng_));
      while (std::chrono::steady_clock::now() < std::min(next, end)) {
        if (!reap(true) || !noneHung() || !nodeAlive()) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
      if (std::chrono::steady_clock::now() >= end) break;
      const int v = victim(rng_);
      Process& p = procs_[static_cast<size_t>(v)];
      if (p.pid <= 0 || killedPending_[static_cast<size_t>(v)]) continue;
      const Slot& slot = control_->slots[static_cast<size_t>(v)];
      killedIn[std::min<uint32_t>(slot.op.load(), kOps)]++;
      killedInCall += slot.callSinceNs.load() != 0 ? 1 : 0;
      killedPending_[static_cast<size_t>(v)] = true;
      kill(p.pid, SIGKILL);
      ++kills_;
    }

    // The end: every process finishes what it holds and exits; the keeper checks its memory.
    control_->stop.store(1);
    const bool allEnded = cutest::waitUntil(
        [&] {
          if (!reap(false) || !noneHung()) return true;
          return std::all_of(procs_.begin(), procs_.end(), [](const Process& p) { return p.pid <= 0; });
        },
        std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(o_.grace + o_.slack)));
    bool ok = allEnded && std::all_of(procs_.begin(), procs_.end(), [](const Process& p) { return p.pid <= 0; });
    for (Process& p : procs_) {
      if (p.pid > 0) {
        problem("a process did not end when told to: its output:\n" + mptest::readFile(p.output));
        kill(p.pid, SIGKILL);
        waitpid(p.pid, nullptr, 0);
      }
    }
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    uint64_t rounds = 0;
    std::string byOp, killsByOp;
    for (uint32_t op = 0; op <= kOps; ++op) {
      killsByOp += std::string(op ? ", " : "") + kOpNames[op] + " " + std::to_string(killedIn[op]);
      if (op == kOps) break;
      rounds += control_->done[op].load();
      byOp += std::string(op ? ", " : "") + kOpNames[op] + " " + std::to_string(control_->done[op].load());
    }
    std::printf("  %.1f s: %llu kills survived (%llu in a driver call; by the work the victim was doing: %s)\n", wall,
                static_cast<unsigned long long>(kills_), static_cast<unsigned long long>(killedInCall), killsByOp.c_str());
    std::printf("  %llu processes started; %llu rounds of work finished (%s)\n", static_cast<unsigned long long>(spawned_),
                static_cast<unsigned long long>(rounds), byOp.c_str());
    std::printf("  longest driver call seen: %.3f s\n", static_cast<double>(longest_) / 1e9);
    if (!ok || !nodeAlive()) return false;

    // The node reclaims every process; then a fresh one is served and sees nothing left.
    std::string after;
    if (!cutest::waitUntil([&] { return (after = status()).find("processes: 0 attached") != std::string::npos; })) {
      return problem("the node never reclaimed every process:\n" + after);
    }
    // One after the other: the counts must not see the copying process's own memory.
    const mptest::Env clientEnv = {{"MCSIM_NODE", name_}, {"MCSIM_NODE_DIR", dir_}};
    const auto client = [&](const std::string& scenario, const std::string& key, std::string* output) {
      mptest::Broker b(MCSIM_MP_RANK, dir_);
      b.spawn(scenario, 0, 1, clientEnv);
      b.start();
      const std::string value = b.noted(0, key, o_.grace + o_.slack);
      b.wait(0);
      b.finish();
      *output = b.output(0);
      return value;
    };
    std::string smallOutput, countsOutput;
    const std::string small = client("small", "small", &smallOutput);
    const std::string counts = client("counts", "counts", &countsOutput);
    if (small != "ok") ok = problem("a fresh process's 16-byte copy failed:\n" + smallOutput);
    if (counts != "0 0 0 0 0 0") {
      ok = problem("the node's counts after every process left (allocations handles reservations mappings "
                   "multicast-objects exports): " + counts);
    }
    if (!cutest::waitUntil([&] { return (after = status()).find("processes: 0 attached") != std::string::npos; })) {
      return problem("the node never reclaimed the fresh processes:\n" + after);
    }
    const unsigned long long inUseAfter = mptest::segmentInUse(after);
    int fdsAfter = 0;
    const bool fdsBack = cutest::waitUntil([&] { return (fdsAfter = nodeFds()) <= fdsBefore; });
    std::printf("  afterwards: node counts %s, segment in use %llu bytes (before: %llu), node descriptors %d (before: %d)\n",
                counts.c_str(), inUseAfter, inUseBefore, fdsAfter, fdsBefore);
    if (inUseAfter != inUseBefore) ok = problem("the segment's use did not come back");
    if (!fdsBack) ok = problem("the node's descriptors did not come back");
    return ok;
  }

  Options o_;
  std::mt19937_64 rng_;
  std::string dir_, name_, mcsim_ = MCSIM_BIN_DIR "/mcsim";
  Control* control_ = nullptr;
  pid_t nodePid_ = -1;
  std::vector<Process> procs_;
  std::vector<bool> killedPending_;
  uint64_t kills_ = 0, spawned_ = 0, longest_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc == 5 && (std::strcmp(argv[1], "worker") == 0 || std::strcmp(argv[1], "keeper") == 0)) {
    return processMain(std::strcmp(argv[1], "keeper") == 0, std::atoi(argv[2]), std::strtoull(argv[3], nullptr, 10), argv[4]);
  }
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--seconds") o.seconds = std::atof(v.c_str());
    else if (k == "--processes") o.processes = std::atoi(v.c_str());
    else if (k == "--seed") o.seed = std::strtoull(v.c_str(), nullptr, 10);
    else if (k == "--kill-every-ms") o.killEveryMs = std::atoi(v.c_str());
    else if (k == "--grace") o.grace = std::atof(v.c_str());
    else if (k == "--slack") o.slack = std::atof(v.c_str());
    else if (k == "--topology") o.topology = v;
    else {
      o.processes = -1;
      break;
    }
  }
  if ((argc - 1) % 2 != 0 || o.processes < 1 || o.processes > kMaxSlots || o.seconds < 0 || o.killEveryMs < 1) {
    std::fprintf(stderr,
                 "usage: mp_stress [--seconds S] [--processes N (1 to %d)] [--seed X] [--kill-every-ms M] [--grace G] "
                 "[--slack L] [--topology PRESET]\n",
                 kMaxSlots);
    return 2;
  }
  return Harness(o).run();
}
