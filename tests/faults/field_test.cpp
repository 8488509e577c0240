// The failures of the field (shared/reference/clients.md, "How it fails in the field"), each
// switched on by its one-line plan in examples/faults/ (MCSIM_FAULTS_FILE) under a program shaped
// like the clients that met it: one thread per device, as NCCL's single-process mode runs, with
// the hand-offs those clients make (a POSIX descriptor from rank 0, barriers, all-gathers of
// success). Each test checks what the program sees, and that every failure, injected or natural,
// changed nothing (stateDigest around the failing calls), leaked nothing (node counts, multicast
// objects and slots, open descriptors) and left the data of untouched memory as it was.
#include <atomic>
#include <optional>
#include <set>

#include "tests/faults/fault_test.h"

namespace {

using namespace faulttest;

constexpr unsigned kPosix = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
constexpr uint64_t kSecondPs = 1'000'000'000'000ull;
constexpr CUmemAllocationHandleType kPosixType = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;

class Field : public McTest {
 protected:
  // Runs the ranks, then makes device 0's context current again on the test's thread (rank 0's
  // RankContext left none current).
  void run(int ranks, const std::function<void(int)>& rank) {
    runRanks(ranks, rank);
    EXPECT_OK(cuCtxSetCurrent(ctx));
  }
};

// The results one call returned on every rank.
using Results = std::vector<CUresult>;
Results all(int ranks, CUresult r) { return Results(static_cast<size_t>(ranks), r); }

// Compares result vectors by name, so that a failure reads well.
std::vector<std::string> names(const Results& rs) {
  std::vector<std::string> out;
  for (CUresult r : rs) out.push_back(cutest::resultName(r));
  return out;
}
#define EXPECT_RESULTS(expected, actual) EXPECT_EQ(names(expected), names(actual))

// The first failure of each rank's setup calls (calls that must all succeed).
class SetupLog {
 public:
  explicit SetupLog(int ranks) : first_(static_cast<size_t>(ranks), CUDA_SUCCESS), what_(static_cast<size_t>(ranks)) {}
  void check(int r, CUresult res, const char* what) {
    if (res != CUDA_SUCCESS && first_[static_cast<size_t>(r)] == CUDA_SUCCESS) {
      first_[static_cast<size_t>(r)] = res;
      what_[static_cast<size_t>(r)] = what;
    }
  }
  void expectAllSucceeded() const {
    for (size_t r = 0; r < first_.size(); ++r) {
      EXPECT_CU(CUDA_SUCCESS, first_[r]) << "rank " << r << ": " << what_[r];
    }
  }

 private:
  Results first_;
  std::vector<std::string> what_;
};
#define SETUP(log, r, call) (log).check((r), (call), #call)

// --- The fabric manager not running -------------------------------------------------------------

// NCCL: every rank adds its device and makes its memory, meets the others, binds. The manager is
// not running: MULTICAST_SUPPORTED is 1 and create / add succeed, but every bind, and every map of
// the multicast handle, fails with ILLEGAL_STATE, changing nothing.
TEST_F(Field, FmNotRunning) {
  const std::string plan = planPath("fm-not-running");
  INIT(nullptr, {{"MCSIM_FAULTS_FILE", plan.c_str()}});
  const Snapshot base = Snapshot::now();
  constexpr int kRanks = 8;
  Barrier barrier(kRanks);
  FdBroadcast fds;
  std::mutex serial;
  SetupLog setup(kRanks);
  Results bind = all(kRanks, CUDA_SUCCESS), map = bind;
  std::vector<int> supported(kRanks, 0);
  run(kRanks, [&](int r) {
    RankContext rc(r);
    SETUP(setup, r, cuDeviceGetAttribute(&supported[r], CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED, r));
    CUmemGenericAllocationHandle mc = 0;
    SETUP(setup, r, joinObject(r, mcProp(kRanks, kMin, kPosix), fds, &mc));
    SETUP(setup, r, cuMulticastAddDevice(mc, r));
    UcBuffer buf;
    SETUP(setup, r, buf.make(r, kMin));
    SETUP(setup, r, writePattern(buf.va, kPatternBytes, static_cast<uint32_t>(r)));
    CUdeviceptr mcVa = 0;
    SETUP(setup, r, cuMemAddressReserve(&mcVa, kMin, 0, 0, 0));
    barrier.arriveAndWait();
    {
      std::lock_guard<std::mutex> lock(serial);
      const uint64_t before = mcsim::api::stateDigest();
      bind[r] = cuMulticastBindMem(mc, 0, buf.mem, 0, kMin, 0);
      map[r] = cuMemMap(mcVa, kMin, 0, mc, 0);
      EXPECT_EQ(before, mcsim::api::stateDigest()) << "rank " << r;
    }
    barrier.arriveAndWait();
    EXPECT_TRUE(holdsPattern(buf.va, kPatternBytes, static_cast<uint32_t>(r))) << r;
    // The fallback: release everything.
    SETUP(setup, r, cuMemAddressFree(mcVa, kMin));
    SETUP(setup, r, cuMemRelease(mc));
    SETUP(setup, r, buf.release());
  });
  fds.close();
  setup.expectAllSucceeded();
  EXPECT_EQ(std::vector<int>(kRanks, 1), supported);
  EXPECT_RESULTS(all(kRanks, CUDA_ERROR_ILLEGAL_STATE), bind);
  EXPECT_RESULTS(all(kRanks, CUDA_ERROR_ILLEGAL_STATE), map);
  expectNothingLeaked(base);
}

// --- A stall while forming a team: some ranks' binds fail ---------------------------------------

// NCCL with a lockstep retry: every rank binds, all learn who failed (an all-gather), the failed
// ranks bind again, until all have. Exactly devices 1, 4 and 6 fail their first bind, each after a
// stall of 7 s of simulated time; the retry succeeds without a stall and the team works.
TEST_F(Field, FmStallPartialBind) {
  const std::string plan = planPath("fm-stall-partial-bind");
  INIT(nullptr, {{"MCSIM_FAULTS_FILE", plan.c_str()}});
  const Snapshot base = Snapshot::now();
  constexpr int kRanks = 8;
  Barrier barrier(kRanks);
  FdBroadcast fds;
  std::mutex serial;
  SetupLog setup(kRanks);
  std::vector<Results> attempts(kRanks);
  std::vector<std::vector<uint64_t>> stalls(kRanks);  // simulated time each attempt took
  std::atomic<int> boundRanks{0};
  std::vector<int> rounds(kRanks, 0);
  run(kRanks, [&](int r) {
    RankContext rc(r);
    CUmemGenericAllocationHandle mc = 0;
    SETUP(setup, r, joinObject(r, mcProp(kRanks, kMin, kPosix), fds, &mc));
    SETUP(setup, r, cuMulticastAddDevice(mc, r));
    UcBuffer buf;
    SETUP(setup, r, buf.make(r, kMin));
    SETUP(setup, r, writePattern(buf.va, kPatternBytes, static_cast<uint32_t>(r)));
    barrier.arriveAndWait();
    bool bound = false;
    for (int round = 1; round <= 4; ++round) {
      if (!bound) {
        std::lock_guard<std::mutex> lock(serial);
        const uint64_t before = mcsim::api::stateDigest();
        const uint64_t t0 = mcsim::api::simulatedTimePs();
        const CUresult res = cuMulticastBindMem(mc, 0, buf.mem, 0, kMin, 0);
        stalls[r].push_back(mcsim::api::simulatedTimePs() - t0);
        attempts[r].push_back(res);
        if (res == CUDA_SUCCESS) {
          bound = true;
          ++boundRanks;
        } else {
          EXPECT_EQ(before, mcsim::api::stateDigest()) << "rank " << r << " round " << round;
        }
      }
      barrier.arriveAndWait();  // the all-gather of success
      const bool everyone = boundRanks.load() == kRanks;
      rounds[r] = round;
      barrier.arriveAndWait();
      if (everyone) break;
    }
    // The team works: map the multicast range, then tear down as NCCL does.
    McMapping map;
    SETUP(setup, r, map.make(mc, r, kMin));
    barrier.arriveAndWait();
    EXPECT_TRUE(holdsPattern(buf.va, kPatternBytes, static_cast<uint32_t>(r))) << r;
    SETUP(setup, r, cuMulticastUnbind(mc, r, 0, kMin));
    SETUP(setup, r, map.release());
    SETUP(setup, r, cuMemRelease(mc));
    SETUP(setup, r, buf.release());
  });
  fds.close();
  setup.expectAllSucceeded();
  const std::set<int> failing = {1, 4, 6};
  for (int r = 0; r < kRanks; ++r) {
    const Results want = failing.count(r) != 0 ? Results{CUDA_ERROR_SYSTEM_NOT_READY, CUDA_SUCCESS} : Results{CUDA_SUCCESS};
    EXPECT_RESULTS(want, attempts[r]) << "rank " << r;
    EXPECT_EQ(2, rounds[r]) << "rank " << r;
    // The failing bind stalls 7 s before it answers; no other bind takes anything like it.
    for (size_t a = 0; a < stalls[r].size(); ++a) {
      if (attempts[r][a] == CUDA_SUCCESS) EXPECT_LT(stalls[r][a], kSecondPs) << "rank " << r;
      else EXPECT_GE(stalls[r][a], 7 * kSecondPs) << "rank " << r;
    }
  }
  const auto rule = ruleReport("cuMulticastBindMem");
  EXPECT_EQ(6u, rule.matched);  // devices 1, 4 and 6, twice each
  EXPECT_EQ(3u, rule.fired);
  expectNothingLeaked(base);
}

// --- The fabric not yet initialised -------------------------------------------------------------

// PyTorch symmetric memory: rank 0 creates and exports; every rank, rank 0 too, imports, adds its
// device and binds; an all-gather of success. Every bind (and map) says SYSTEM_NOT_READY, nobody
// succeeded, so all fall back and release.
TEST_F(Field, FabricNotInitialised) {
  const std::string plan = planPath("fabric-not-initialised");
  INIT(nullptr, {{"MCSIM_FAULTS_FILE", plan.c_str()}});
  const Snapshot base = Snapshot::now();
  constexpr int kRanks = 8;
  Barrier barrier(kRanks);
  FdBroadcast fds;
  std::mutex serial;
  SetupLog setup(kRanks);
  Results bind = all(kRanks, CUDA_SUCCESS), map = bind;
  std::atomic<int> bound{0};
  std::vector<int> multicastUsed(kRanks, -1);
  CUmemGenericAllocationHandle creation = 0;
  run(kRanks, [&](int r) {
    RankContext rc(r);
    const size_t size = 2 * kMin;
    if (r == 0) {
      int fd = -1;
      CUmulticastObjectProp mp = mcProp(kRanks, size, kPosix);
      SETUP(setup, r, cuMulticastCreate(&creation, &mp));
      SETUP(setup, r, cuMemExportToShareableHandle(&fd, creation, kPosixType, 0));
      fds.publish(fd);
    }
    CUmemGenericAllocationHandle mc = 0;
    SETUP(setup, r, cuMemImportFromShareableHandle(&mc, fdArg(fds.get()), kPosixType));
    SETUP(setup, r, cuMulticastAddDevice(mc, r));
    UcBuffer buf;
    SETUP(setup, r, buf.make(r, size));
    SETUP(setup, r, writePattern(buf.va, kPatternBytes, 100u + static_cast<uint32_t>(r)));
    CUdeviceptr mcVa = 0;
    SETUP(setup, r, cuMemAddressReserve(&mcVa, size, 0, 0, 0));
    barrier.arriveAndWait();
    {
      std::lock_guard<std::mutex> lock(serial);
      const uint64_t before = mcsim::api::stateDigest();
      bind[r] = cuMulticastBindMem(mc, 0, buf.mem, 0, size, 0);
      map[r] = cuMemMap(mcVa, size, 0, mc, 0);
      EXPECT_EQ(before, mcsim::api::stateDigest()) << "rank " << r;
    }
    if (bind[r] == CUDA_SUCCESS) ++bound;
    barrier.arriveAndWait();  // the all-gather of success
    multicastUsed[r] = bound.load() == kRanks ? 1 : 0;
    EXPECT_TRUE(holdsPattern(buf.va, kPatternBytes, 100u + static_cast<uint32_t>(r))) << r;
    if (r == 0) SETUP(setup, r, cuMemRelease(creation));
    SETUP(setup, r, cuMemAddressFree(mcVa, size));
    SETUP(setup, r, cuMemRelease(mc));
    SETUP(setup, r, buf.release());
  });
  fds.close();
  setup.expectAllSucceeded();
  EXPECT_RESULTS(all(kRanks, CUDA_ERROR_SYSTEM_NOT_READY), bind);
  EXPECT_RESULTS(all(kRanks, CUDA_ERROR_SYSTEM_NOT_READY), map);
  EXPECT_EQ(std::vector<int>(kRanks, 0), multicastUsed);
  expectNothingLeaked(base);
}

// --- A peer that never joins --------------------------------------------------------------------

// NCCL: device 7's cuMulticastAddDevice never returns. The others wait for it at their barrier
// (outside the driver) until mcsim gives the held call up as a suspected hang; rank 7 then dies
// (as a rank whose AddDevice failed does). The survivors go on to bind, which blocks for the
// missing device; with rank 7 gone every thread is blocked in the driver, and mcsim reports the
// deadlock and fails the binds.
TEST_F(Field, PeerNeverJoins) {
  const std::string plan = planPath("peer-never-joins");
  INIT(nullptr, {{"MCSIM_FAULTS_FILE", plan.c_str()}, {"MCSIM_HANG_GRACE_S", "0.3"}});
  const Snapshot base = Snapshot::now();
  constexpr int kRanks = 8;
  Barrier everyone(kRanks), survivors(kRanks - 1);
  FdBroadcast fds;
  SetupLog setup(kRanks);
  Results add = all(kRanks, CUDA_SUCCESS), bind = add;
  uint64_t digestBeforeBinds = 0;
  // What rank 7 leaves behind when it dies (the process teardown would free it).
  CUmemGenericAllocationHandle deadMc = 0;
  UcBuffer deadBuf;
  StderrCapture capture;
  run(kRanks, [&](int r) {
    std::optional<RankContext> rc(std::in_place, r);
    CUmemGenericAllocationHandle mc = 0;
    SETUP(setup, r, joinObject(r, mcProp(kRanks, kMin, kPosix), fds, &mc));
    add[r] = cuMulticastAddDevice(mc, r);
    UcBuffer buf;
    SETUP(setup, r, buf.make(r, kMin));
    SETUP(setup, r, writePattern(buf.va, kPatternBytes, static_cast<uint32_t>(r)));
    const bool dies = add[r] != CUDA_SUCCESS;
    if (dies) {
      deadMc = mc;
      deadBuf = buf;
      rc.reset();  // its context goes first, so that the digest below sees the survivors only
    }
    everyone.arriveAndWait();
    if (r == 0) digestBeforeBinds = mcsim::api::stateDigest();
    everyone.arriveAndWait();
    if (dies) return;
    bind[r] = cuMulticastBindMem(mc, 0, buf.mem, 0, kMin, 0);
    survivors.arriveAndWait();
    if (r == 0) {
      EXPECT_EQ(digestBeforeBinds, mcsim::api::stateDigest()) << "a failed bind changed state";
    }
    survivors.arriveAndWait();
    EXPECT_TRUE(holdsPattern(buf.va, kPatternBytes, static_cast<uint32_t>(r))) << r;
    SETUP(setup, r, cuMemRelease(mc));
    SETUP(setup, r, buf.release());
  });
  const std::string err = capture.take();
  EXPECT_OK(cuMemRelease(deadMc));
  EXPECT_OK(deadBuf.release());
  fds.close();
  setup.expectAllSucceeded();
  Results wantAdd = all(kRanks, CUDA_SUCCESS);
  wantAdd[7] = CUDA_ERROR_ILLEGAL_STATE;
  EXPECT_RESULTS(wantAdd, add);
  Results wantBind = all(kRanks, CUDA_ERROR_ILLEGAL_STATE);
  wantBind[7] = CUDA_SUCCESS;  // never called
  EXPECT_RESULTS(wantBind, bind);
  // First the held AddDevice, given up for lack of progress, then the deadlock of the binds.
  const std::string where = ruleReport("cuMulticastAddDevice").where;
  const size_t hang = err.find("mcsim: suspected hang");
  const size_t held = err.find("cuMulticastAddDevice on device 7 (held by the fault rule at " + where + ", unnamed: never released)");
  const size_t deadlock = err.find("mcsim: deadlock: every thread of this process is blocked in the driver");
  EXPECT_NE(std::string::npos, hang) << err;
  EXPECT_NE(std::string::npos, held) << err;
  EXPECT_NE(std::string::npos, deadlock) << err;
  EXPECT_LT(hang, deadlock) << err;
  EXPECT_NE(std::string::npos, err.find("team of 8, devices added [", deadlock)) << err;
  EXPECT_NE(std::string::npos, err.find("], 1 still to be added", deadlock)) << err;
  EXPECT_NE(std::string::npos, err.find("in cuMulticastBindMem (multicast object 1)", deadlock)) << err;
  expectNothingLeaked(base);
}

// --- The fabric manager rejects the team --------------------------------------------------------

// NCCL: the team is complete, but every bind hangs. With every thread blocked in the driver mcsim
// proves the deadlock at once and fails the binds. Once the manager accepts the team (the test
// releases the block), a lockstep retry binds.
TEST_F(Field, FmRejectsTeam) {
  const std::string plan = planPath("fm-rejects-team");
  INIT(nullptr, {{"MCSIM_FAULTS_FILE", plan.c_str()}, {"MCSIM_HANG_GRACE_S", "30"}});
  const Snapshot base = Snapshot::now();
  constexpr int kRanks = 8;
  Barrier barrier(kRanks);
  FdBroadcast fds;
  SetupLog setup(kRanks);
  Results bind = all(kRanks, CUDA_SUCCESS), retry = bind;
  uint64_t digestBeforeBinds = 0;
  const auto start = std::chrono::steady_clock::now();
  StderrCapture capture;
  run(kRanks, [&](int r) {
    RankContext rc(r);
    CUmemGenericAllocationHandle mc = 0;
    SETUP(setup, r, joinObject(r, mcProp(kRanks, kMin, kPosix), fds, &mc));
    SETUP(setup, r, cuMulticastAddDevice(mc, r));
    UcBuffer buf;
    SETUP(setup, r, buf.make(r, kMin));
    SETUP(setup, r, writePattern(buf.va, kPatternBytes, static_cast<uint32_t>(r)));
    barrier.arriveAndWait();
    if (r == 0) digestBeforeBinds = mcsim::api::stateDigest();
    barrier.arriveAndWait();
    bind[r] = cuMulticastBindMem(mc, 0, buf.mem, 0, kMin, 0);
    barrier.arriveAndWait();
    if (r == 0) {
      EXPECT_EQ(digestBeforeBinds, mcsim::api::stateDigest()) << "a failed bind changed state";
      mcsim::api::releaseFault("fm-team-request");
    }
    barrier.arriveAndWait();
    retry[r] = cuMulticastBindMem(mc, 0, buf.mem, 0, kMin, 0);
    barrier.arriveAndWait();
    EXPECT_TRUE(holdsPattern(buf.va, kPatternBytes, static_cast<uint32_t>(r))) << r;
    if (retry[r] == CUDA_SUCCESS) SETUP(setup, r, cuMulticastUnbind(mc, r, 0, kMin));
    SETUP(setup, r, cuMemRelease(mc));
    SETUP(setup, r, buf.release());
  });
  const std::string err = capture.take();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10)) << "found by the grace period, not as a deadlock";
  fds.close();
  setup.expectAllSucceeded();
  EXPECT_RESULTS(all(kRanks, CUDA_ERROR_ILLEGAL_STATE), bind);
  EXPECT_RESULTS(all(kRanks, CUDA_SUCCESS), retry);
  const std::string where = ruleReport("cuMulticastBindMem").where;
  EXPECT_NE(std::string::npos, err.find("mcsim: deadlock: every thread of this process is blocked in the driver")) << err;
  EXPECT_NE(std::string::npos, err.find("calls held by fault plan block rules")) << err;
  for (int r = 0; r < kRanks; ++r) {
    EXPECT_NE(std::string::npos, err.find("in cuMulticastBindMem on device " + std::to_string(r) + " (held by the fault rule at " +
                                          where + ", released by 'release fm-team-request'")) << err;
  }
  EXPECT_EQ(std::string::npos, err.find("a released multicast object")) << err;
  expectNothingLeaked(base);
}

// --- The fabric manager restarted without a GPU reset -------------------------------------------

// NCCL, twice: a communicator is set up and used; the program waits in cuCtxSynchronize while the
// manager restarts; every multicast call on the old object is then refused with INVALID_VALUE
// (changing nothing), a new communicator works, and releasing the old one cleans everything up.
TEST_F(Field, FmRestartWithoutReset) {
  const std::string plan = planPath("fm-restart-without-reset");
  INIT(nullptr, {{"MCSIM_FAULTS_FILE", plan.c_str()}});
  const Snapshot base = Snapshot::now();
  constexpr int kRanks = 4;
  Barrier barrier(kRanks);
  FdBroadcast oldFds, newFds;
  std::mutex serial;
  SetupLog setup(kRanks);
  run(kRanks, [&](int r) {
    RankContext rc(r);
    // The first communicator.
    CUmemGenericAllocationHandle oldMc = 0;
    SETUP(setup, r, joinObject(r, mcProp(kRanks, 2 * kMin, kPosix), oldFds, &oldMc));
    SETUP(setup, r, cuMulticastAddDevice(oldMc, r));
    UcBuffer oldBuf;
    SETUP(setup, r, oldBuf.make(r, 2 * kMin));
    SETUP(setup, r, writePattern(oldBuf.va, kPatternBytes, static_cast<uint32_t>(r)));
    barrier.arriveAndWait();
    SETUP(setup, r, cuMulticastBindMem(oldMc, 0, oldBuf.mem, 0, kMin, 0));
    McMapping oldMap;
    SETUP(setup, r, oldMap.make(oldMc, r, kMin));
    CUdeviceptr spareVa = 0;
    SETUP(setup, r, cuMemAddressReserve(&spareVa, kMin, 0, 0, 0));
    barrier.arriveAndWait();
    // The program waits for its work; meanwhile (1 s of simulated time) the manager restarts.
    if (r == 0) {
      SETUP(setup, r, cuCtxSynchronize());
      EXPECT_GE(mcsim::api::simulatedTimePs(), 1'000'000'000'000ull);
      int n = 0;
      SETUP(setup, r, cuDeviceGetCount(&n));  // the first call after the restart time: it happens now
    }
    barrier.arriveAndWait();
    {
      std::lock_guard<std::mutex> lock(serial);
      EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastAddDevice(oldMc, r));
      EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastBindMem(oldMc, kMin, oldBuf.mem, kMin, kMin, 0));
      EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastUnbind(oldMc, r, 0, kMin));
      EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMemMap(spareVa, kMin, 0, oldMc, 0));
    }
    barrier.arriveAndWait();
    // A new communicator works.
    CUmemGenericAllocationHandle newMc = 0;
    SETUP(setup, r, joinObject(r, mcProp(kRanks, kMin, kPosix), newFds, &newMc));
    SETUP(setup, r, cuMulticastAddDevice(newMc, r));
    UcBuffer newBuf;
    SETUP(setup, r, newBuf.make(r, kMin));
    SETUP(setup, r, writePattern(newBuf.va, kPatternBytes, 50u + static_cast<uint32_t>(r)));
    barrier.arriveAndWait();
    SETUP(setup, r, cuMulticastBindMem(newMc, 0, newBuf.mem, 0, kMin, 0));
    McMapping newMap;
    SETUP(setup, r, newMap.make(newMc, r, kMin));
    barrier.arriveAndWait();
    EXPECT_TRUE(holdsPattern(oldBuf.va, kPatternBytes, static_cast<uint32_t>(r))) << r;
    EXPECT_TRUE(holdsPattern(newBuf.va, kPatternBytes, 50u + static_cast<uint32_t>(r))) << r;
    // Teardown: the old object can only be released (its binding goes with it).
    SETUP(setup, r, cuMulticastUnbind(newMc, r, 0, kMin));
    SETUP(setup, r, newMap.release());
    SETUP(setup, r, cuMemRelease(newMc));
    SETUP(setup, r, newBuf.release());
    SETUP(setup, r, oldMap.release());
    SETUP(setup, r, cuMemRelease(oldMc));
    SETUP(setup, r, oldBuf.release());
    SETUP(setup, r, cuMemAddressFree(spareVa, kMin));
  });
  oldFds.close();
  newFds.close();
  setup.expectAllSucceeded();
  EXPECT_EQ(1u, ruleReport("state restarted").fired);
  EXPECT_EQ(1u, ruleReport("delay 1s").fired);
  expectNothingLeaked(base);
}

// --- Multicast slots exhausted ------------------------------------------------------------------

// NCCL, three communicators in turn. The switches have room for two more groups: the first two
// communicators bind; every bind of the third returns OUT_OF_MEMORY and changes nothing.
TEST_F(Field, SlotsExhausted) {
  const std::string plan = planPath("slots-exhausted");
  INIT(nullptr, {{"MCSIM_FAULTS_FILE", plan.c_str()}});
  const Snapshot base = Snapshot::now();
  constexpr int kRanks = 8, kComms = 3;
  Barrier barrier(kRanks);
  FdBroadcast fds[kComms];
  std::mutex serial;
  SetupLog setup(kRanks);
  std::vector<Results> bind(kComms, all(kRanks, CUDA_SUCCESS));
  int slotsWhileHeld = 0;
  run(kRanks, [&](int r) {
    RankContext rc(r);
    CUmemGenericAllocationHandle mc[kComms] = {};
    UcBuffer buf[kComms];
    for (int c = 0; c < kComms; ++c) {
      SETUP(setup, r, joinObject(r, mcProp(kRanks, kMin, kPosix), fds[c], &mc[c]));
      SETUP(setup, r, cuMulticastAddDevice(mc[c], r));
      SETUP(setup, r, buf[c].make(r, kMin));
      SETUP(setup, r, writePattern(buf[c].va, kPatternBytes, static_cast<uint32_t>(10 * c + r)));
      barrier.arriveAndWait();
      {
        std::lock_guard<std::mutex> lock(serial);
        const uint64_t before = mcsim::api::stateDigest();
        bind[c][r] = cuMulticastBindMem(mc[c], 0, buf[c].mem, 0, kMin, 0);
        if (bind[c][r] != CUDA_SUCCESS) {
          EXPECT_EQ(before, mcsim::api::stateDigest()) << "rank " << r;
        }
      }
      barrier.arriveAndWait();
    }
    if (r == 0) slotsWhileHeld = mcsim::api::nodeStats().freeMulticastSlots;
    barrier.arriveAndWait();
    for (int c = 0; c < kComms; ++c) {
      EXPECT_TRUE(holdsPattern(buf[c].va, kPatternBytes, static_cast<uint32_t>(10 * c + r))) << r;
      if (bind[c][r] == CUDA_SUCCESS) SETUP(setup, r, cuMulticastUnbind(mc[c], r, 0, kMin));
      SETUP(setup, r, cuMemRelease(mc[c]));
      SETUP(setup, r, buf[c].release());
    }
  });
  for (auto& f : fds) f.close();
  setup.expectAllSucceeded();
  EXPECT_RESULTS(all(kRanks, CUDA_SUCCESS), bind[0]);
  EXPECT_RESULTS(all(kRanks, CUDA_SUCCESS), bind[1]);
  EXPECT_RESULTS(all(kRanks, CUDA_ERROR_OUT_OF_MEMORY), bind[2]);
  EXPECT_EQ(base.freeMulticastSlots - 2, slotsWhileHeld);
  const auto rule = ruleReport("multicast-slot");
  EXPECT_EQ(2u + kRanks, rule.matched);  // one slot request per object, then one per refused bind
  EXPECT_EQ(static_cast<uint64_t>(kRanks), rule.fired);
  expectNothingLeaked(base);
}

// --- The creator never releases its reference ---------------------------------------------------

// mscclpp: repeated 1 GiB multicast setups between two ranks. Rank 0 creates and exports, rank 1
// imports; both add, allocate, bind; teardown unbinds and frees everything but the creator's
// handle (the bug). Each leaked object keeps its switch group, so iteration 129 cannot bind.
// `leak` false: the same loop with the release, which runs on.
void creatorLoop(bool leak, int iterations, int* failedAt, Results* failure) {
  constexpr int kRanks = 2;
  constexpr size_t kSize = size_t{1} << 30;
  Barrier barrier(kRanks);
  SetupLog setup(kRanks);
  std::vector<CUmemGenericAllocationHandle> leaked;
  int sharedFd = -1;
  Results bind = all(kRanks, CUDA_SUCCESS);
  *failedAt = -1;
  runRanks(kRanks, [&](int r) {
    RankContext rc(r);
    for (int i = 0; i < iterations; ++i) {
      CUmemGenericAllocationHandle mc = 0;
      if (r == 0) {
        CUmulticastObjectProp mp = mcProp(kRanks, kSize, kPosix);
        SETUP(setup, r, cuMulticastCreate(&mc, &mp));
        SETUP(setup, r, cuMemExportToShareableHandle(&sharedFd, mc, kPosixType, 0));
      }
      barrier.arriveAndWait();
      if (r == 1) SETUP(setup, r, cuMemImportFromShareableHandle(&mc, fdArg(sharedFd), kPosixType));
      barrier.arriveAndWait();
      if (r == 0) ::close(sharedFd);
      SETUP(setup, r, cuMulticastAddDevice(mc, r));
      CUmemGenericAllocationHandle mem = 0;
      CUmemAllocationProp p = devicePinned(r, kPosix);
      SETUP(setup, r, cuMemCreate(&mem, kSize, &p, 0));
      barrier.arriveAndWait();
      bind[r] = cuMulticastBindMem(mc, 0, mem, 0, kSize, 0);
      barrier.arriveAndWait();  // the all-gather of success
      const bool ok = bind[0] == CUDA_SUCCESS && bind[1] == CUDA_SUCCESS;
      if (bind[r] == CUDA_SUCCESS) SETUP(setup, r, cuMulticastUnbind(mc, r, 0, kSize));
      SETUP(setup, r, cuMemRelease(mem));
      if (r == 1 || !leak) SETUP(setup, r, cuMemRelease(mc));
      else leaked.push_back(mc);
      barrier.arriveAndWait();
      if (!ok) {
        if (r == 0) *failedAt = i + 1;
        break;
      }
    }
  });
  setup.expectAllSucceeded();
  *failure = bind;
  // What the process exit would have done for the leaky program.
  for (CUmemGenericAllocationHandle mc : leaked) EXPECT_OK(cuMemRelease(mc));
}

TEST_F(Field, CreatorNeverReleasesRunsOutAtIteration129) {
  const std::string plan = planPath("creator-never-releases");
  INIT(nullptr, {{"MCSIM_FAULTS_FILE", plan.c_str()}});
  EXPECT_TRUE(mcsim::api::faultReport().empty());  // the plan holds no rule
  const Snapshot base = Snapshot::now();
  int failedAt = 0;
  Results failure;
  creatorLoop(true, 200, &failedAt, &failure);
  EXPECT_OK(cuCtxSetCurrent(ctx));
  EXPECT_EQ(base.freeMulticastSlots + 1, failedAt);  // 128 groups per switch
  EXPECT_RESULTS(all(2, CUDA_ERROR_OUT_OF_MEMORY), failure);
  expectNothingLeaked(base);
}

TEST_F(Field, CreatorNeverReleasesFixedLoopRunsOn) {
  const std::string plan = planPath("creator-never-releases");
  INIT(nullptr, {{"MCSIM_FAULTS_FILE", plan.c_str()}});
  const Snapshot base = Snapshot::now();
  int failedAt = 0;
  Results failure;
  creatorLoop(false, 200, &failedAt, &failure);
  EXPECT_OK(cuCtxSetCurrent(ctx));
  EXPECT_EQ(-1, failedAt);
  EXPECT_RESULTS(all(2, CUDA_SUCCESS), failure);
  expectNothingLeaked(base);
}

// --- The creator releases before everyone has imported ------------------------------------------

// PyTorch symmetric memory with the creator's release moved before the imports (the bug). Every
// rank imports, adds its device and binds. With the plan, the late importer's (device 3's) add
// joins nothing: every bind waits for it, and with every thread blocked mcsim reports the
// deadlock and fails them.
void creatorReleasesEarly(int ranks, Results* add, Results* bind, bool* dataKept) {
  Barrier barrier(ranks);
  FdBroadcast fds;
  SetupLog setup(ranks);
  *add = all(ranks, CUDA_SUCCESS);
  *bind = *add;
  std::vector<int> kept(static_cast<size_t>(ranks), 0);
  uint64_t digestBeforeBinds = 0;
  runRanks(ranks, [&](int r) {
    RankContext rc(r);
    if (r == 0) {
      CUmemGenericAllocationHandle creation = 0;
      CUmulticastObjectProp mp = mcProp(static_cast<unsigned>(ranks), kMin, kPosix);
      int fd = -1;
      SETUP(setup, r, cuMulticastCreate(&creation, &mp));
      SETUP(setup, r, cuMemExportToShareableHandle(&fd, creation, kPosixType, 0));
      SETUP(setup, r, cuMemRelease(creation));  // the bug: before the others have imported
      fds.publish(fd);
    }
    CUmemGenericAllocationHandle mc = 0;
    SETUP(setup, r, cuMemImportFromShareableHandle(&mc, fdArg(fds.get()), kPosixType));
    (*add)[r] = cuMulticastAddDevice(mc, r);
    UcBuffer buf;
    SETUP(setup, r, buf.make(r, kMin));
    SETUP(setup, r, writePattern(buf.va, kPatternBytes, static_cast<uint32_t>(r)));
    barrier.arriveAndWait();
    if (r == 0) digestBeforeBinds = mcsim::api::stateDigest();
    barrier.arriveAndWait();
    (*bind)[r] = cuMulticastBindMem(mc, 0, buf.mem, 0, kMin, 0);
    barrier.arriveAndWait();
    if (r == 0 && (*bind)[0] != CUDA_SUCCESS) { EXPECT_EQ(digestBeforeBinds, mcsim::api::stateDigest()); }
    barrier.arriveAndWait();
    kept[static_cast<size_t>(r)] = holdsPattern(buf.va, kPatternBytes, static_cast<uint32_t>(r)) ? 1 : 0;
    if ((*bind)[r] == CUDA_SUCCESS) SETUP(setup, r, cuMulticastUnbind(mc, r, 0, kMin));
    SETUP(setup, r, cuMemRelease(mc));
    SETUP(setup, r, buf.release());
  });
  fds.close();
  setup.expectAllSucceeded();
  *dataKept = kept == std::vector<int>(static_cast<size_t>(ranks), 1);
}

TEST_F(Field, CreatorReleasesEarly) {
  const std::string plan = planPath("creator-releases-early");
  INIT(nullptr, {{"MCSIM_FAULTS_FILE", plan.c_str()}, {"MCSIM_HANG_GRACE_S", "30"}});
  const Snapshot base = Snapshot::now();
  Results add, bind;
  bool dataKept = false;
  StderrCapture capture;
  creatorReleasesEarly(4, &add, &bind, &dataKept);
  const std::string err = capture.take();
  EXPECT_OK(cuCtxSetCurrent(ctx));
  EXPECT_RESULTS(all(4, CUDA_SUCCESS), add);  // device 3's too: it "joined" the empty object
  EXPECT_RESULTS(all(4, CUDA_ERROR_ILLEGAL_STATE), bind);
  EXPECT_TRUE(dataKept);
  EXPECT_NE(std::string::npos, err.find("mcsim: deadlock: every thread of this process is blocked in the driver")) << err;
  EXPECT_NE(std::string::npos, err.find("team of 4, devices added [")) << err;
  EXPECT_NE(std::string::npos, err.find("], 1 still to be added")) << err;
  EXPECT_EQ(std::string::npos, err.find("devices added [0 1 2 3]")) << err;
  EXPECT_EQ(1u, ruleReport("cuMulticastAddDevice").fired);
  expectNothingLeaked(base);
}

// Without the plan the same program does not hang in mcsim: the creator's descriptor keeps the
// object alive until the late import (mcsim is more lenient than the driver of the report).
TEST_F(Field, CreatorReleasesEarlyWithoutThePlanDoesNotHang) {
  INIT();
  const Snapshot base = Snapshot::now();
  Results add, bind;
  bool dataKept = false;
  creatorReleasesEarly(4, &add, &bind, &dataKept);
  EXPECT_OK(cuCtxSetCurrent(ctx));
  EXPECT_RESULTS(all(4, CUDA_SUCCESS), add);
  EXPECT_RESULTS(all(4, CUDA_SUCCESS), bind);
  EXPECT_TRUE(dataKept);
  expectNothingLeaked(base);
}

// --- FABRIC handles without IMEX ----------------------------------------------------------------

// NCCL's FABRIC probe on a GB200 rack whose IMEX channel is gone: the attribute says FABRIC is
// supported, yet memory and multicast objects with FABRIC handles are NOT_PERMITTED. The program
// drops FABRIC and shares POSIX descriptors instead, which work.
TEST_F(Field, FabricWithoutImex) {
  const std::string plan = planPath("fabric-without-imex");
  INIT("gb200-nvl72", {{"MCSIM_FAULTS_FILE", plan.c_str()}});
  const Snapshot base = Snapshot::now();
  constexpr int kRanks = 4;
  const int devices[kRanks] = {0, 9, 36, 71};
  Barrier barrier(kRanks);
  FdBroadcast fds;
  std::mutex serial;
  SetupLog setup(kRanks);
  std::vector<int> fabricSupported(kRanks, 0);
  Results probeMem = all(kRanks, CUDA_SUCCESS), probeMc = probeMem, bind = probeMem;
  run(kRanks, [&](int r) {
    const int dev = devices[r];
    RankContext rc(dev);
    SETUP(setup, r, cuDeviceGetAttribute(&fabricSupported[r], CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED, dev));
    barrier.arriveAndWait();
    {
      // The probe: create with FABRIC (and export, import); any failure drops FABRIC.
      std::lock_guard<std::mutex> lock(serial);
      const uint64_t before = mcsim::api::stateDigest();
      CUmemGenericAllocationHandle h = 0;
      CUmemAllocationProp p = devicePinned(dev, CU_MEM_HANDLE_TYPE_FABRIC);
      probeMem[r] = cuMemCreate(&h, kMin, &p, 0);
      CUmulticastObjectProp mp = mcProp(kRanks, kMin, CU_MEM_HANDLE_TYPE_FABRIC);
      probeMc[r] = cuMulticastCreate(&h, &mp);
      EXPECT_EQ(before, mcsim::api::stateDigest()) << "rank " << r;
    }
    barrier.arriveAndWait();
    // The fallback: POSIX descriptors.
    CUmemGenericAllocationHandle mc = 0;
    SETUP(setup, r, joinObject(r, mcProp(kRanks, kMin, kPosix), fds, &mc));
    SETUP(setup, r, cuMulticastAddDevice(mc, dev));
    UcBuffer buf;
    SETUP(setup, r, buf.make(dev, kMin, kPosix));
    barrier.arriveAndWait();
    bind[r] = cuMulticastBindMem(mc, 0, buf.mem, 0, kMin, 0);
    barrier.arriveAndWait();
    if (bind[r] == CUDA_SUCCESS) SETUP(setup, r, cuMulticastUnbind(mc, dev, 0, kMin));
    SETUP(setup, r, cuMemRelease(mc));
    SETUP(setup, r, buf.release());
  });
  fds.close();
  setup.expectAllSucceeded();
  EXPECT_EQ(std::vector<int>(kRanks, 1), fabricSupported);
  EXPECT_RESULTS(all(kRanks, CUDA_ERROR_NOT_PERMITTED), probeMem);
  EXPECT_RESULTS(all(kRanks, CUDA_ERROR_NOT_PERMITTED), probeMc);
  EXPECT_RESULTS(all(kRanks, CUDA_SUCCESS), bind);
  expectNothingLeaked(base);
}

// --- Multicast advertised, creation fails -------------------------------------------------------

// PyTorch symmetric memory after pytorch 136577: every rank checks MULTICAST_SUPPORTED (1), rank 0
// tries to create, fails, tells the others (an invalid descriptor), and all go on without
// multicast, using their unicast buffers.
TEST_F(Field, MulticastCreateFails) {
  const std::string plan = planPath("multicast-create-fails");
  INIT(nullptr, {{"MCSIM_FAULTS_FILE", plan.c_str()}});
  const Snapshot base = Snapshot::now();
  constexpr int kRanks = 8;
  Barrier barrier(kRanks);
  FdBroadcast fds;
  SetupLog setup(kRanks);
  std::vector<int> supported(kRanks, 0), usedMulticast(kRanks, -1);
  CUresult create = CUDA_SUCCESS;
  run(kRanks, [&](int r) {
    RankContext rc(r);
    SETUP(setup, r, cuDeviceGetAttribute(&supported[r], CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED, r));
    UcBuffer buf;
    SETUP(setup, r, buf.make(r, kMin));
    SETUP(setup, r, writePattern(buf.va, kPatternBytes, static_cast<uint32_t>(r)));
    barrier.arriveAndWait();
    if (r == 0) {
      // The others wait for the broadcast outside the driver: this is the only call in flight.
      const uint64_t before = mcsim::api::stateDigest();
      CUmemGenericAllocationHandle mc = 0xfeed;
      CUmulticastObjectProp mp = mcProp(kRanks, kMin, kPosix);
      create = cuMulticastCreate(&mc, &mp);
      EXPECT_EQ(before, mcsim::api::stateDigest());
      EXPECT_EQ(0xfeedu, mc);  // untouched
      fds.publish(create == CUDA_SUCCESS ? 0 : -1);
    }
    usedMulticast[r] = fds.get() >= 0 ? 1 : 0;
    barrier.arriveAndWait();
    EXPECT_TRUE(holdsPattern(buf.va, kPatternBytes, static_cast<uint32_t>(r))) << r;
    SETUP(setup, r, buf.release());
  });
  setup.expectAllSucceeded();
  EXPECT_EQ(std::vector<int>(kRanks, 1), supported);
  EXPECT_CU(CUDA_ERROR_NOT_SUPPORTED, create);
  EXPECT_EQ(std::vector<int>(kRanks, 0), usedMulticast);
  EXPECT_EQ(1u, ruleReport("cuMulticastCreate").fired);
  expectNothingLeaked(base);
}

// --- A cuMulticastUnbind failure swallowed ------------------------------------------------------

// NCCL's buffer deregistration ignores cuMulticastUnbind's result. Device 2's unbind fails and
// unbinds nothing; the buffer's unmap and release "succeed", yet its memory lives on in the live
// binding, and the range cannot be registered again on device 2, until the communicator's
// multicast object is released.
TEST_F(Field, UnbindFailureSwallowed) {
  const std::string plan = planPath("unbind-failure-swallowed");
  INIT(nullptr, {{"MCSIM_FAULTS_FILE", plan.c_str()}});
  const Snapshot base = Snapshot::now();
  constexpr int kRanks = 4;
  Barrier barrier(kRanks);
  FdBroadcast fds;
  std::mutex serial;
  SetupLog setup(kRanks);
  Results unbind = all(kRanks, CUDA_SUCCESS), dereg = unbind, reregister = unbind;
  uint64_t allocationsAfterDereg = 0;
  run(kRanks, [&](int r) {
    RankContext rc(r);
    CUmemGenericAllocationHandle mc = 0;
    SETUP(setup, r, joinObject(r, mcProp(kRanks, kMin, kPosix), fds, &mc));
    SETUP(setup, r, cuMulticastAddDevice(mc, r));
    UcBuffer first;
    SETUP(setup, r, first.make(r, kMin));
    barrier.arriveAndWait();
    SETUP(setup, r, cuMulticastBindMem(mc, 0, first.mem, 0, kMin, 0));  // register
    barrier.arriveAndWait();
    {
      std::lock_guard<std::mutex> lock(serial);  // deregister: the unbind ...
      const uint64_t before = mcsim::api::stateDigest();
      unbind[r] = cuMulticastUnbind(mc, r, 0, kMin);
      if (unbind[r] != CUDA_SUCCESS) { EXPECT_EQ(before, mcsim::api::stateDigest()); }
    }
    barrier.arriveAndWait();
    dereg[r] = first.release();  // ... whose result is ignored
    barrier.arriveAndWait();
    if (r == 0) allocationsAfterDereg = mcsim::api::nodeStats().allocations;
    barrier.arriveAndWait();
    UcBuffer second;
    SETUP(setup, r, second.make(r, kMin));
    SETUP(setup, r, writePattern(second.va, kPatternBytes, static_cast<uint32_t>(r)));
    barrier.arriveAndWait();
    {
      std::lock_guard<std::mutex> lock(serial);
      const uint64_t before = mcsim::api::stateDigest();
      reregister[r] = cuMulticastBindMem(mc, 0, second.mem, 0, kMin, 0);
      if (reregister[r] != CUDA_SUCCESS) { EXPECT_EQ(before, mcsim::api::stateDigest()); }
    }
    barrier.arriveAndWait();
    EXPECT_TRUE(holdsPattern(second.va, kPatternBytes, static_cast<uint32_t>(r))) << r;
    if (reregister[r] == CUDA_SUCCESS) SETUP(setup, r, cuMulticastUnbind(mc, r, 0, kMin));
    SETUP(setup, r, second.release());
    SETUP(setup, r, cuMemRelease(mc));  // the communicator goes, and the stale binding with it
  });
  fds.close();
  setup.expectAllSucceeded();
  Results wantUnbind = all(kRanks, CUDA_SUCCESS);
  wantUnbind[2] = CUDA_ERROR_UNKNOWN;
  EXPECT_RESULTS(wantUnbind, unbind);
  EXPECT_RESULTS(all(kRanks, CUDA_SUCCESS), dereg);  // the release "succeeds" everywhere
  EXPECT_EQ(base.counts.allocations + 1, allocationsAfterDereg) << "device 2's buffer should live on in its binding";
  Results wantReregister = all(kRanks, CUDA_SUCCESS);
  wantReregister[2] = CUDA_ERROR_INVALID_VALUE;
  EXPECT_RESULTS(wantReregister, reregister);
  expectNothingLeaked(base);
}

// --- Driver and fabric manager versions differ --------------------------------------------------

// TensorRT-LLM maps the multicast range and sets access before it binds. The manager did not
// start: once the team is complete, the map and the bind both fail with ILLEGAL_STATE and change
// nothing.
TEST_F(Field, FmVersionMismatch) {
  const std::string plan = planPath("fm-version-mismatch");
  INIT(nullptr, {{"MCSIM_FAULTS_FILE", plan.c_str()}});
  const Snapshot base = Snapshot::now();
  constexpr int kRanks = 4;
  const size_t size = 4 * kMin;
  Barrier barrier(kRanks);
  FdBroadcast fds;
  std::mutex serial;
  SetupLog setup(kRanks);
  Results map = all(kRanks, CUDA_SUCCESS), bind = map;
  std::vector<int> supported(kRanks, 0);
  run(kRanks, [&](int r) {
    RankContext rc(r);
    SETUP(setup, r, cuDeviceGetAttribute(&supported[r], CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED, r));
    CUmemGenericAllocationHandle mc = 0;
    SETUP(setup, r, joinObject(r, mcProp(kRanks, size, kPosix), fds, &mc));
    SETUP(setup, r, cuMulticastAddDevice(mc, r));
    CUdeviceptr mcVa = 0;
    SETUP(setup, r, cuMemAddressReserve(&mcVa, size, 0, 0, 0));
    UcBuffer buf;
    SETUP(setup, r, buf.make(r, size));
    SETUP(setup, r, writePattern(buf.va, kPatternBytes, static_cast<uint32_t>(r)));
    barrier.arriveAndWait();
    {
      std::lock_guard<std::mutex> lock(serial);
      const uint64_t before = mcsim::api::stateDigest();
      map[r] = cuMemMap(mcVa, size, 0, mc, 0);
      bind[r] = cuMulticastBindMem(mc, 0, buf.mem, 0, size, 0);
      EXPECT_EQ(before, mcsim::api::stateDigest()) << "rank " << r;
    }
    barrier.arriveAndWait();
    EXPECT_TRUE(holdsPattern(buf.va, kPatternBytes, static_cast<uint32_t>(r))) << r;
    SETUP(setup, r, cuMemAddressFree(mcVa, size));
    SETUP(setup, r, buf.release());
    SETUP(setup, r, cuMemRelease(mc));
  });
  fds.close();
  setup.expectAllSucceeded();
  EXPECT_EQ(std::vector<int>(kRanks, 1), supported);
  EXPECT_RESULTS(all(kRanks, CUDA_ERROR_ILLEGAL_STATE), map);
  EXPECT_RESULTS(all(kRanks, CUDA_ERROR_ILLEGAL_STATE), bind);
  expectNothingLeaked(base);
}

TEST_F(Field, NvlinkFatalGpu) {
  const std::string plan = planPath("nvlink-fatal-gpu");
  INIT(nullptr, {{"MCSIM_FAULTS_FILE", plan.c_str()}});
  const Snapshot base = Snapshot::now();
  CUcontext c3 = nullptr, c4 = nullptr;
  ASSERT_OK(cuDevicePrimaryCtxRetain(&c3, 3));
  ASSERT_OK(cuDevicePrimaryCtxRetain(&c4, 4));
  CUdeviceptr on0 = 0, on3 = 0, on4 = 0;
  ASSERT_OK(cuMemAlloc(&on0, kPatternBytes));  // device 0
  ASSERT_OK(writePattern(on0, kPatternBytes, 0));
  ASSERT_OK(cuCtxSetCurrent(c3));
  ASSERT_OK(cuMemAlloc(&on3, kPatternBytes));
  ASSERT_OK(writePattern(on3, kPatternBytes, 3));  // its own memory it still reaches
  ASSERT_OK(cuCtxSetCurrent(c4));
  ASSERT_OK(cuMemAlloc(&on4, kPatternBytes));
  ASSERT_OK(writePattern(on4, kPatternBytes, 4));
  ASSERT_OK(cuCtxSetCurrent(ctx));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_NVLINK_UNCORRECTABLE, cuMemcpyPeer(on4, c4, on3, c3, kPatternBytes));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_NVLINK_UNCORRECTABLE, cuMemcpyPeer(on3, c3, on0, ctx, kPatternBytes));
  EXPECT_OK(cuMemcpyPeer(on4, c4, on0, ctx, kPatternBytes));  // 0 -> 4 does not need GPU 3
  EXPECT_TRUE(holdsPattern(on4, kPatternBytes, 0));
  EXPECT_TRUE(holdsPattern(on3, kPatternBytes, 3));
  int can = -1;
  ASSERT_OK(cuDeviceCanAccessPeer(&can, 0, 3));
  EXPECT_EQ(0, can);
  ASSERT_OK(cuDeviceCanAccessPeer(&can, 0, 4));
  EXPECT_EQ(1, can);
  CUmemGenericAllocationHandle mc = 0;
  const CUmulticastObjectProp p = mcProp(2, kMin);
  ASSERT_OK(cuMulticastCreate(&mc, &p));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_ILLEGAL_STATE, cuMulticastAddDevice(mc, 3));
  EXPECT_OK(cuMemRelease(mc));
  EXPECT_OK(cuMemFree(on0));
  EXPECT_OK(cuMemFree(on3));
  EXPECT_OK(cuMemFree(on4));
  EXPECT_OK(cuDevicePrimaryCtxRelease(3));
  EXPECT_OK(cuDevicePrimaryCtxRelease(4));
  expectNothingLeaked(base);
}

// Every plan of examples/faults/ has its test above.
TEST(FieldPlans, EveryPlanHasATest) {
  const std::set<std::string> tested = {
      "fm-not-running",         "fm-stall-partial-bind",  "fabric-not-initialised", "peer-never-joins",
      "fm-rejects-team",        "fm-restart-without-reset", "slots-exhausted",      "creator-never-releases",
      "creator-releases-early", "fabric-without-imex",    "multicast-create-fails", "unbind-failure-swallowed",
      "fm-version-mismatch",    "nvlink-fatal-gpu",
  };
  std::set<std::string> found;
  DIR* dir = opendir(MCSIM_FAULT_PLANS_DIR);
  ASSERT_NE(nullptr, dir);
  while (dirent* e = readdir(dir)) {
    const std::string name = e->d_name;
    if (name.size() > 5 && name.compare(name.size() - 5, 5, ".plan") == 0) found.insert(name.substr(0, name.size() - 5));
  }
  closedir(dir);
  EXPECT_EQ(tested, found);
}

}  // namespace
