// How plans behave once installed: each trigger fires on exactly the calls it documents, prob=
// is reproducible from the seed, filters select devices and ranks, `return` changes nothing,
// blocks wait until released (or are reported as the deadlock they are), delays move simulated
// time, fabric-level rules change the fabric, and faultReport counts all of it.
#include <atomic>
#include <chrono>
#include <thread>

#include "tests/common/wait_until.h"
#include "tests/faults/fault_test.h"

namespace {

using namespace faulttest;

class Mechanics : public McTest {
 protected:
  // Which of `calls` calls of cuDeviceGetCount fail (the call the plans below act on: it needs no
  // setup and changes nothing).
  std::vector<int> failingCalls(int calls, CUresult expected = CUDA_ERROR_UNKNOWN) {
    std::vector<int> failed;
    for (int i = 1; i <= calls; ++i) {
      int n = 0;
      const CUresult r = cuDeviceGetCount(&n);
      if (r != CUDA_SUCCESS) {
        EXPECT_CU(expected, r) << "call " << i;
        failed.push_back(i);
      }
    }
    return failed;
  }
  void install(const std::string& plan, uint64_t seed = 0) { ASSERT_EQ("", mcsim::api::installFaultPlan(plan, seed)); }
};

using Calls = std::vector<int>;

// --- Triggers -----------------------------------------------------------------------------------

TEST_F(Mechanics, NthFiresOnceOnTheNthMatchingCall) {
  INIT();
  install("cuDeviceGetCount : nth=3 -> return CUDA_ERROR_UNKNOWN");
  EXPECT_EQ((Calls{3}), failingCalls(10));
}

TEST_F(Mechanics, AfterFiresOnEveryCallAfterTheNth) {
  INIT();
  install("cuDeviceGetCount : after=2 -> return CUDA_ERROR_UNKNOWN");
  EXPECT_EQ((Calls{3, 4, 5, 6}), failingCalls(6));
}

TEST_F(Mechanics, MaxBoundsTheFirings) {
  INIT();
  install("cuDeviceGetCount : after=1 max=2 -> return CUDA_ERROR_UNKNOWN");
  EXPECT_EQ((Calls{2, 3}), failingCalls(8));
  install("cuDeviceGetCount : always max=1 -> return CUDA_ERROR_UNKNOWN");
  EXPECT_EQ((Calls{1}), failingCalls(4));
  install("cuDeviceGetCount : always -> return CUDA_ERROR_UNKNOWN");
  EXPECT_EQ((Calls{1, 2, 3}), failingCalls(3));
}

TEST_F(Mechanics, OnlyMatchingCallsCount) {
  INIT();
  // Other entry points neither fire the rule nor advance its count.
  install("cuDeviceGetCount : nth=2 -> return CUDA_ERROR_UNKNOWN");
  int v = 0;
  for (int i = 0; i < 5; ++i) EXPECT_OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED, 0));
  EXPECT_EQ((Calls{2}), failingCalls(3));
  // Versioned and per-thread symbols count as their base name; a prefix matches a family.
  install("cuCtxSynchronize : nth=3 -> return CUDA_ERROR_UNKNOWN");
  EXPECT_OK(cuCtxSynchronize());
  EXPECT_OK(cuCtxSynchronize_v2(nullptr));  // one call, counted once
  EXPECT_CU(CUDA_ERROR_UNKNOWN, cuCtxSynchronize_v2(nullptr));
  EXPECT_OK(cuCtxSynchronize());
  EXPECT_EQ(4u, mcsim::api::faultReport()[0].matched);
  // cuMemAllocHost is its own point, not cuMemHostAlloc's.
  install("cuMemAllocHost : nth=1 -> return CUDA_ERROR_OUT_OF_MEMORY\ncuMemHostAlloc : always -> return CUDA_ERROR_UNKNOWN");
  void* host = nullptr;
  EXPECT_CU(CUDA_ERROR_OUT_OF_MEMORY, cuMemAllocHost(&host, 4096));
  EXPECT_OK(cuMemAllocHost(&host, 4096));
  EXPECT_OK(cuMemFreeHost(host));
  EXPECT_CU(CUDA_ERROR_UNKNOWN, cuMemHostAlloc(&host, 4096, 0));
  EXPECT_EQ(2u, mcsim::api::faultReport()[0].matched);
  EXPECT_EQ(1u, mcsim::api::faultReport()[1].matched);
  install("cuDevice* : nth=2 -> return CUDA_ERROR_UNKNOWN");
  EXPECT_OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED, 0));
  EXPECT_EQ((Calls{1}), failingCalls(2));
}

TEST_F(Mechanics, TheFirstRuleThatHoldsFiresAndTheOthersStillCount) {
  INIT();
  install("cuDeviceGetCount : nth=2 -> return CUDA_ERROR_INVALID_VALUE\n"
          "cuDeviceGetCount : nth=2 -> return CUDA_ERROR_UNKNOWN\n"
          "cuDeviceGetCount : nth=3 -> return CUDA_ERROR_UNKNOWN\n");
  int n = 0;
  EXPECT_OK(cuDeviceGetCount(&n));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuDeviceGetCount(&n));
  EXPECT_CU(CUDA_ERROR_UNKNOWN, cuDeviceGetCount(&n));
  EXPECT_OK(cuDeviceGetCount(&n));
  const auto report = mcsim::api::faultReport();
  ASSERT_EQ(3u, report.size());
  for (const auto& r : report) EXPECT_EQ(4u, r.matched) << r.rule;
  EXPECT_EQ(1u, report[0].fired);
  EXPECT_EQ(0u, report[1].fired);  // its nth came, but an earlier rule fired
  EXPECT_EQ(1u, report[2].fired);
}

TEST_F(Mechanics, ProbIsReproducibleFromTheSeed) {
  INIT();
  const std::string plan = "cuDeviceGetCount : prob=0.5 -> return CUDA_ERROR_UNKNOWN";
  install(plan, 42);
  const Calls first = failingCalls(200);
  install(plan, 42);  // the same plan and seed again: the same calls fail
  EXPECT_EQ(first, failingCalls(200));
  install(plan, 43);  // another seed: other calls
  const Calls other = failingCalls(200);
  EXPECT_NE(first, other);
  for (const Calls* c : {&first, &other}) {
    EXPECT_GT(c->size(), 60u);
    EXPECT_LT(c->size(), 140u);
  }
  install("cuDeviceGetCount : prob=0 -> return CUDA_ERROR_UNKNOWN", 42);
  EXPECT_TRUE(failingCalls(50).empty());
  install("cuDeviceGetCount : prob=1 -> return CUDA_ERROR_UNKNOWN", 42);
  EXPECT_EQ(50u, failingCalls(50).size());
  // Draws are made only when the other triggers hold: after=10 leaves the first ten alone, and the
  // draws that follow are the same as those of a plan without after= shifted by ten calls.
  install("cuDeviceGetCount : after=10 prob=0.5 -> return CUDA_ERROR_UNKNOWN", 42);
  Calls shifted = failingCalls(210);
  for (int& c : shifted) c -= 10;
  EXPECT_EQ(first, shifted);
}

// A rule that lists devices draws for each device from a stream of its own: threads that each
// drive one device see the same failures whatever their interleaving, and the same as a single
// thread visiting the devices one after the other.
TEST_F(Mechanics, ProbWithDevicesIsReproducibleAcrossThreads) {
  INIT();
  const std::string plan = "cuCtxSynchronize device=0,1,2,3 : prob=0.5 -> return CUDA_ERROR_UNKNOWN";
  constexpr int kDevices = 4, kCalls = 60;
  auto threaded = [&] {
    std::vector<Calls> failed(kDevices);
    runRanks(kDevices, [&](int d) {
      RankContext rc(d);
      for (int i = 1; i <= kCalls; ++i) {
        if (cuCtxSynchronize() != CUDA_SUCCESS) failed[d].push_back(i);
        if (i % 7 == d) std::this_thread::yield();  // vary the interleaving
      }
    });
    EXPECT_OK(cuCtxSetCurrent(ctx));
    return failed;
  };
  install(plan, 5);
  const std::vector<Calls> first = threaded();
  install(plan, 5);
  EXPECT_EQ(first, threaded());
  install(plan, 5);
  std::vector<Calls> sequential(kDevices);
  for (int d = 0; d < kDevices; ++d) {
    RankContext rc(d);
    for (int i = 1; i <= kCalls; ++i) {
      if (cuCtxSynchronize() != CUDA_SUCCESS) sequential[d].push_back(i);
    }
  }
  EXPECT_OK(cuCtxSetCurrent(ctx));
  EXPECT_EQ(first, sequential);
  for (int d = 1; d < kDevices; ++d) EXPECT_NE(first[0], first[d]) << "devices draw from streams of their own";
}

// MCSIM_SEED seeds a plan loaded at cuInit, as the seed argument does for installFaultPlan.
TEST_F(Mechanics, McsimSeedSeedsTheEnvironmentPlan) {
  const char* plan = "cuCtxSynchronize : prob=0.5 -> return CUDA_ERROR_UNKNOWN";
  INIT(nullptr, {{"MCSIM_FAULTS", plan}, {"MCSIM_SEED", "42"}});
  auto failing = [] {
    Calls out;
    for (int i = 1; i <= 200; ++i) {
      if (cuCtxSynchronize() != CUDA_SUCCESS) out.push_back(i);
    }
    return out;
  };
  const Calls fromEnvironment = failing();
  install(plan, 42);
  EXPECT_EQ(failing(), fromEnvironment);
  install(plan, 7);
  EXPECT_NE(failing(), fromEnvironment);
}

TEST_F(Mechanics, AtFiresFromASimulatedTimeOn) {
  INIT();
  // Simulated time moves only when something takes time: here a delay of 5 ms.
  install("cuDeviceGetCount : at=5ms -> return CUDA_ERROR_UNKNOWN\ncuCtxSynchronize : nth=1 -> delay 5ms");
  EXPECT_TRUE(failingCalls(3).empty());
  EXPECT_OK(cuCtxSynchronize());
  EXPECT_EQ((Calls{1, 2, 3}), failingCalls(3));
}

TEST_F(Mechanics, DelayAdvancesSimulatedTime) {
  INIT();
  install("cuCtxSynchronize : always -> delay 5ms\ncuDeviceGetCount : nth=2 -> delay 150ns");
  const uint64_t t0 = mcsim::api::simulatedTimePs();
  EXPECT_OK(cuCtxSynchronize());
  EXPECT_EQ(t0 + 5'000'000'000ull, mcsim::api::simulatedTimePs());
  EXPECT_OK(cuCtxSynchronize());
  EXPECT_EQ(t0 + 10'000'000'000ull, mcsim::api::simulatedTimePs());
  EXPECT_TRUE(failingCalls(3).empty());  // a delayed call still does its work and succeeds
  EXPECT_EQ(t0 + 10'000'150'000ull, mcsim::api::simulatedTimePs());
}

// `delay TIME wall`: the same simulated time, and the call also waits that long on the wall clock
// (only a lower bound is checked: a loaded machine makes it longer, never shorter).
TEST_F(Mechanics, WallDelayAlsoWaitsInWallTime) {
  INIT();
  install("cuCtxSynchronize : nth=1 -> delay 30ms wall");
  const uint64_t t0 = mcsim::api::simulatedTimePs();
  const auto start = std::chrono::steady_clock::now();
  EXPECT_OK(cuCtxSynchronize());
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(30));
  EXPECT_EQ(t0 + 30'000'000'000ull, mcsim::api::simulatedTimePs());
}

// --- Filters ------------------------------------------------------------------------------------

TEST_F(Mechanics, DeviceFilterSeesTheDeviceTheCallNames) {
  INIT();
  install("cuDeviceGetAttribute device=2,5 : always -> return CUDA_ERROR_UNKNOWN");
  for (int d = 0; d < deviceCount; ++d) {
    int v = 0;
    EXPECT_CU(d == 2 || d == 5 ? CUDA_ERROR_UNKNOWN : CUDA_SUCCESS,
              cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED, d)) << d;
  }
  // ... and the current context's device for calls that name none.
  install("cuCtxSynchronize device=1 : always -> return CUDA_ERROR_UNKNOWN");
  EXPECT_OK(cuCtxSynchronize());  // device 0's context is current
  CUcontext c1 = nullptr;
  ASSERT_OK(cuDevicePrimaryCtxRetain(&c1, 1));
  ASSERT_OK(cuCtxSetCurrent(c1));
  EXPECT_CU(CUDA_ERROR_UNKNOWN, cuCtxSynchronize());
  ASSERT_OK(cuCtxSetCurrent(ctx));
  EXPECT_OK(cuDevicePrimaryCtxRelease(1));
  // Before any context is current, a call that names a device is still filtered by it.
  install("cuDevicePrimaryCtxRetain device=3 : always -> return CUDA_ERROR_OUT_OF_MEMORY");
  ASSERT_OK(cuCtxSetCurrent(nullptr));
  CUcontext c = nullptr;
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_OUT_OF_MEMORY, cuDevicePrimaryCtxRetain(&c, 3));
  EXPECT_OK(cuDevicePrimaryCtxRetain(&c, 4));
  EXPECT_OK(cuDevicePrimaryCtxRelease(4));
  ASSERT_OK(cuCtxSetCurrent(ctx));
}

// With device=, nth counts each listed device's calls on its own: nth=1 is the first call of
// every listed device (the partial-bind failure of the field needs exactly that).
TEST_F(Mechanics, DeviceFilterCountsEachDeviceOnItsOwn) {
  INIT();
  install("cuDeviceGetAttribute device=1,4,6 : nth=1 -> return CUDA_ERROR_UNKNOWN\n"
          "cuDeviceGetName device=2,3 : max=1 -> return CUDA_ERROR_UNKNOWN");
  for (int round = 0; round < 2; ++round) {
    for (int d = 0; d < deviceCount; ++d) {
      int v = 0;
      const bool fails = round == 0 && (d == 1 || d == 4 || d == 6);
      EXPECT_CU(fails ? CUDA_ERROR_UNKNOWN : CUDA_SUCCESS,
                cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED, d)) << "round " << round << " device " << d;
      char name[64];
      EXPECT_CU(round == 0 && (d == 2 || d == 3) ? CUDA_ERROR_UNKNOWN : CUDA_SUCCESS, cuDeviceGetName(name, 64, d));
    }
  }
  const auto report = mcsim::api::faultReport();
  EXPECT_EQ(6u, report[0].matched);  // totals over the listed devices
  EXPECT_EQ(3u, report[0].fired);
  EXPECT_EQ(4u, report[1].matched);
  EXPECT_EQ(2u, report[1].fired);
}

TEST_F(Mechanics, RankFilterMatchesMcsimRank) {
  INIT(nullptr, {{"MCSIM_RANK", "3"}});
  install("cuDeviceGetCount rank=0,1,2 : always -> return CUDA_ERROR_INVALID_VALUE\n"
          "cuDeviceGetCount rank=3 : nth=2 -> return CUDA_ERROR_UNKNOWN");
  EXPECT_EQ((Calls{2}), failingCalls(4));
  EXPECT_EQ(0u, mcsim::api::faultReport()[0].matched);
  EXPECT_EQ(4u, mcsim::api::faultReport()[1].matched);
}

TEST_F(Mechanics, RankFilterNeverMatchesWithoutMcsimRank) {
  INIT();
  install("cuDeviceGetCount rank=0 : always -> return CUDA_ERROR_UNKNOWN");
  EXPECT_TRUE(failingCalls(3).empty());
}

// --- Actions ------------------------------------------------------------------------------------

TEST_F(Mechanics, ReturnChangesNothing) {
  INIT();
  const Snapshot base = Snapshot::now();
  install("cuMemCreate : always -> return CUDA_ERROR_OUT_OF_MEMORY\n"
          "cuMemAddressReserve : always -> return CUDA_ERROR_OUT_OF_MEMORY\n"
          "cuMulticastCreate : always -> return CUDA_ERROR_NOT_SUPPORTED");
  CUmemGenericAllocationHandle h = 0;
  CUmemAllocationProp p = devicePinned(0);
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_OUT_OF_MEMORY, cuMemCreate(&h, kMin, &p, 0));
  EXPECT_EQ(0u, h);
  CUdeviceptr va = 0;
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_OUT_OF_MEMORY, cuMemAddressReserve(&va, kMin, 0, 0, 0));
  EXPECT_EQ(0u, va);
  CUmulticastObjectProp mp = mcProp(2, kMin);
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_NOT_SUPPORTED, cuMulticastCreate(&h, &mp));
  EXPECT_EQ(0u, h);
  // Calls on existing objects: the objects stay as they were, data included.
  install("");
  UcBuffer buf;
  ASSERT_OK(buf.make(0, kMin));
  ASSERT_OK(writePattern(buf.va, kPatternBytes, 7));
  CUdeviceptr va2 = 0;
  ASSERT_OK(cuMemAddressReserve(&va2, kMin, 0, 0, 0));
  install("cuMemRelease : nth=1 -> return CUDA_ERROR_UNKNOWN\n"
          "cuMemMap : nth=1 -> return CUDA_ERROR_ILLEGAL_STATE\n"
          "cuMemcpyHtoD : nth=1 -> return CUDA_ERROR_ILLEGAL_ADDRESS\n"
          "cuMemsetD32 : nth=1 -> return CUDA_ERROR_ILLEGAL_ADDRESS");
  const std::vector<uint32_t> other = pattern(kPatternBytes, 8);
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_ILLEGAL_ADDRESS, cuMemcpyHtoD(buf.va, other.data(), kPatternBytes));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_ILLEGAL_ADDRESS, cuMemsetD32(buf.va, 0, kPatternBytes / 4));
  EXPECT_TRUE(holdsPattern(buf.va, kPatternBytes, 7));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_UNKNOWN, cuMemRelease(buf.mem));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_ILLEGAL_STATE, cuMemMap(va2, kMin, 0, buf.mem, 0));
  EXPECT_OK(cuMemMap(va2, kMin, 0, buf.mem, 0));  // nth=1 is spent
  CUmemAccessDesc rw = readWrite(0);
  EXPECT_OK(cuMemSetAccess(va2, kMin, &rw, 1));
  EXPECT_TRUE(holdsPattern(va2, kPatternBytes, 7));
  EXPECT_OK(cuMemUnmap(va2, kMin));
  EXPECT_OK(cuMemAddressFree(va2, kMin));
  EXPECT_TRUE(holdsPattern(buf.va, kPatternBytes, 7));
  EXPECT_OK(buf.release());  // the handle the failed release left is still good
  expectNothingLeaked(base);
}

// `return CUDA_SUCCESS` is a fault too: the call claims success and does nothing.
TEST_F(Mechanics, ReturnSuccessDoesNothing) {
  INIT();
  const Snapshot base = Snapshot::now();
  CUmemGenericAllocationHandle h = makeMem(0, kMin);
  install("cuMemRelease : nth=1 -> return CUDA_SUCCESS\ncuMulticastAddDevice device=1 : always -> return CUDA_SUCCESS");
  EXPECT_FAILS_CLEANLY(CUDA_SUCCESS, cuMemRelease(h));
  EXPECT_OK(cuMemRelease(h));  // still there: the first release did nothing
  CUmemGenericAllocationHandle mc = makeTeam({0}, kMin, 0, 2);
  EXPECT_FAILS_CLEANLY(CUDA_SUCCESS, cuMulticastAddDevice(mc, 1));
  // Device 1 never joined: the team is still incomplete (a bind would wait), and device 1 can
  // still be added once the plan is gone.
  install("");
  EXPECT_OK(cuMulticastAddDevice(mc, 1));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMulticastAddDevice(mc, 1));  // now it is a member
  EXPECT_OK(cuMemRelease(mc));
  expectNothingLeaked(base);
}

TEST_F(Mechanics, BlockedCallGoesOnWhenAReleaseRuleFires) {
  INIT(nullptr, {{"MCSIM_HANG_GRACE_S", "20"}});
  install("cuCtxSynchronize : nth=1 -> block name=gate\ncuDeviceGetCount : nth=1 -> release gate");
  std::atomic<bool> returned{false};
  CUresult blocked = CUDA_ERROR_UNKNOWN;
  std::thread t([&] {
    RankContext rc(1);
    blocked = cuCtxSynchronize();
    returned = true;
  });
  // Wait until the block has fired, then give a call wrongly let go a chance to return: the call
  // must still be held. Not a timing assumption: while the block holds, the check passes after any
  // pause; only a broken block can fail it.
  EXPECT_TRUE(cutest::waitUntil([] { return mcsim::api::faultReport()[0].fired != 0; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(returned.load());
  int n = 0;
  EXPECT_OK(cuDeviceGetCount(&n));  // fires the release (and itself goes on)
  t.join();
  EXPECT_TRUE(returned.load());
  EXPECT_CU(CUDA_SUCCESS, blocked);
  EXPECT_EQ(1u, mcsim::api::faultReport()[1].fired);
  // Once released, the label stays released: later matching calls are not held.
  install("cuCtxSynchronize : always -> block name=gate2\ncuMemGetInfo : nth=1 -> release gate2");
  size_t freeB = 0, totalB = 0;
  EXPECT_OK(cuMemGetInfo(&freeB, &totalB));
  EXPECT_OK(cuCtxSynchronize());
}

TEST_F(Mechanics, BlockedCallGoesOnWhenTheApiReleasesIt) {
  INIT(nullptr, {{"MCSIM_HANG_GRACE_S", "20"}});
  install("cuMemAlloc device=2 : always -> block name=alloc-gate");
  const Snapshot base = Snapshot::now();
  std::atomic<bool> returned{false};
  CUresult result = CUDA_ERROR_UNKNOWN;
  CUdeviceptr p = 0;
  std::thread t([&] {
    RankContext rc(2);
    result = cuMemAlloc(&p, kMin);
    returned = true;
    if (result == CUDA_SUCCESS) { EXPECT_OK(cuMemFree(p)); }
  });
  EXPECT_TRUE(cutest::waitUntil([] { return mcsim::api::faultReport()[0].fired != 0; }));
  // As above: a chance for a call wrongly let go to return; the check holds after any pause.
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(returned.load());
  EXPECT_EQ(base.counts.allocations, Counts::now().allocations);  // held before it did anything
  mcsim::api::releaseFault("alloc-gate");
  t.join();
  EXPECT_CU(CUDA_SUCCESS, result);
  EXPECT_NE(0u, p);
  expectNothingLeaked(base);
}

// A single-threaded program blocked by a rule nobody releases can never go on: mcsim says so at
// once and fails the call with MCSIM_HANG_RESULT (CUDA_ERROR_ILLEGAL_STATE by default).
TEST_F(Mechanics, UnreleasedBlockInASingleThreadIsADeadlock) {
  INIT(nullptr, {{"MCSIM_HANG_GRACE_S", "30"}});
  const uint64_t before = mcsim::api::stateDigest();
  install("cuCtxSynchronize : always -> block\ncuMemGetInfo : always -> block name=never-released");
  const auto start = std::chrono::steady_clock::now();
  StderrCapture capture;
  EXPECT_CU(CUDA_ERROR_ILLEGAL_STATE, cuCtxSynchronize());
  size_t f = 0, t = 0;
  EXPECT_CU(CUDA_ERROR_ILLEGAL_STATE, cuMemGetInfo(&f, &t));
  const std::string err = capture.take();
  // Found at once, not after the 30 s grace period.
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_NE(std::string::npos, err.find("mcsim: deadlock: every thread of this process is blocked in the driver")) << err;
  EXPECT_NE(std::string::npos, err.find("calls held by fault plan block rules")) << err;
  EXPECT_NE(std::string::npos, err.find("cuCtxSynchronize on device 0 (held by the fault rule at MCSIM_API:1, unnamed: never released)")) << err;
  EXPECT_NE(std::string::npos, err.find("(held by the fault rule at MCSIM_API:2, released by 'release never-released' or mcsim::api::releaseFault)")) << err;
  EXPECT_EQ(before, mcsim::api::stateDigest());
}

TEST_F(Mechanics, HangResultNamesTheCodeOfAGivenUpBlock) {
  INIT(nullptr, {{"MCSIM_HANG_RESULT", "CUDA_ERROR_TIMEOUT"}});
  install("cuCtxSynchronize : always -> block");
  StderrCapture capture;
  EXPECT_CU(CUDA_ERROR_TIMEOUT, cuCtxSynchronize());
  capture.take();
}

// A block in a thread whose peer is busy outside the driver is not provably a deadlock; it is
// given up after MCSIM_HANG_GRACE_S without progress.
TEST_F(Mechanics, UnreleasedBlockWithAnotherThreadAliveIsASuspectedHang) {
  INIT(nullptr, {{"MCSIM_HANG_GRACE_S", "0.2"}});
  install("cuCtxSynchronize device=3 : always -> block");
  CUresult result = CUDA_SUCCESS;
  StderrCapture capture;
  std::thread t([&] {
    RankContext rc(3);
    result = cuCtxSynchronize();
  });
  // The main thread waits outside the driver (in join): alive, so the block is no provable
  // deadlock; the grace period decides.
  t.join();
  const std::string err = capture.take();
  EXPECT_CU(CUDA_ERROR_ILLEGAL_STATE, result);
  EXPECT_NE(std::string::npos, err.find("mcsim: suspected hang: the node made no progress for 0.2 s")) << err;
  EXPECT_NE(std::string::npos, err.find("cuCtxSynchronize on device 3 (held by the fault rule at MCSIM_API:1")) << err;
}

// --- Fabric-level rules -------------------------------------------------------------------------

TEST_F(Mechanics, LinkDownFailsCopiesOverItAndLinkUpRestoresThem) {
  INIT();
  const Snapshot base = Snapshot::now();
  CUcontext c1 = nullptr, c2 = nullptr;
  ASSERT_OK(cuDevicePrimaryCtxRetain(&c1, 1));
  ASSERT_OK(cuDevicePrimaryCtxRetain(&c2, 2));
  CUdeviceptr a = 0, b = 0, c = 0;
  ASSERT_OK(cuMemAlloc(&a, kMin));  // device 0 (current)
  ASSERT_OK(cuCtxSetCurrent(c1));
  ASSERT_OK(cuMemAlloc(&b, kMin));
  ASSERT_OK(cuCtxSetCurrent(c2));
  ASSERT_OK(cuMemAlloc(&c, kMin));
  ASSERT_OK(cuCtxSetCurrent(ctx));
  ASSERT_OK(writePattern(a, kPatternBytes, 1));
  ASSERT_OK(writePattern(b, kPatternBytes, 2));
  install("link gpu=1 : always -> down");
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_NVLINK_UNCORRECTABLE, cuMemcpyDtoD(b, a, kPatternBytes));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_NVLINK_UNCORRECTABLE, cuMemcpyDtoD(a, b, kPatternBytes));
  EXPECT_TRUE(holdsPattern(b, kPatternBytes, 2));
  EXPECT_TRUE(holdsPattern(a, kPatternBytes, 1));
  EXPECT_OK(cuMemcpyDtoD(c, a, kPatternBytes));  // 0 -> 2 does not cross GPU 1's links
  EXPECT_TRUE(holdsPattern(c, kPatternBytes, 1));
  install("link gpu=1 : always -> up");
  EXPECT_OK(cuMemcpyDtoD(b, a, kPatternBytes));
  EXPECT_TRUE(holdsPattern(b, kPatternBytes, 1));
  EXPECT_OK(cuMemFree(a));
  EXPECT_OK(cuMemFree(b));
  EXPECT_OK(cuMemFree(c));
  EXPECT_OK(cuDevicePrimaryCtxRelease(1));
  EXPECT_OK(cuDevicePrimaryCtxRelease(2));
  expectNothingLeaked(base);
}

TEST_F(Mechanics, SwitchDownFailsMulticastBinds) {
  INIT();
  const Snapshot base = Snapshot::now();
  CUmemGenericAllocationHandle mc = makeTeam({0}, kMin);
  CUmemGenericAllocationHandle mem = makeMem(0, kMin);
  install("switch : always -> down");
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_ILLEGAL_STATE, cuMulticastBindMem(mc, 0, mem, 0, kMin, 0));
  install("switch : always -> up");
  EXPECT_OK(cuMulticastBindMem(mc, 0, mem, 0, kMin, 0));
  EXPECT_OK(cuMulticastUnbind(mc, 0, 0, kMin));
  EXPECT_OK(cuMemRelease(mc));
  EXPECT_OK(cuMemRelease(mem));
  expectNothingLeaked(base);
}

TEST_F(Mechanics, ImexAbsentAndPresent) {
  INIT();  // hgx-h100: no IMEX channel, although the GPUs support FABRIC handles
  CUmemGenericAllocationHandle h = 0;
  CUmemAllocationProp p = devicePinned(0, CU_MEM_HANDLE_TYPE_FABRIC);
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_NOT_PERMITTED, cuMemCreate(&h, kMin, &p, 0));
  install("imex : always -> present");
  ASSERT_OK(cuMemCreate(&h, kMin, &p, 0));
  CUmemFabricHandle fh;
  EXPECT_OK(cuMemExportToShareableHandle(&fh, h, CU_MEM_HANDLE_TYPE_FABRIC, 0));
  install("imex : always -> absent");
  CUmemGenericAllocationHandle h2 = 0;
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_NOT_PERMITTED, cuMemCreate(&h2, kMin, &p, 0));
  EXPECT_OK(cuMemRelease(h));
}

TEST_F(Mechanics, FabricManagerStatesGateMulticastBinds) {
  INIT();
  CUmemGenericAllocationHandle mc = makeTeam({0}, kMin);
  CUmemGenericAllocationHandle mem = makeMem(0, kMin);
  const std::vector<std::pair<std::string, CUresult>> states = {
      {"initialising", CUDA_ERROR_SYSTEM_NOT_READY}, {"not-started", CUDA_ERROR_ILLEGAL_STATE},
      {"degraded", CUDA_ERROR_ILLEGAL_STATE}};
  for (const auto& [state, code] : states) {
    SCOPED_TRACE(state);
    install("fabric-manager : always -> state " + state);
    // Fabric-level rules fire at driver calls: let this one fire before the digest is taken, so
    // that the bind's own effect (none) is what is measured.
    EXPECT_OK(cuCtxSynchronize());
    EXPECT_FAILS_CLEANLY(code, cuMulticastBindMem(mc, 0, mem, 0, kMin, 0));
  }
  install("fabric-manager : nth=1 -> state ready");
  EXPECT_OK(cuMulticastBindMem(mc, 0, mem, 0, kMin, 0));
  EXPECT_OK(cuMulticastUnbind(mc, 0, 0, kMin));
  EXPECT_OK(cuMemRelease(mc));
  EXPECT_OK(cuMemRelease(mem));
}

TEST_F(Mechanics, MulticastSlotRuleRankFilter) {
  INIT(nullptr, {{"MCSIM_RANK", "1"}});
  CUmemGenericAllocationHandle mem = makeMem(0, 2 * kMin);
  install("multicast-slot rank=0 : always -> exhaust\nmulticast-slot rank=1 : after=1 -> exhaust");
  CUmemGenericAllocationHandle a = makeTeam({0}, kMin), b = makeTeam({0}, kMin);
  EXPECT_OK(cuMulticastBindMem(a, 0, mem, 0, kMin, 0));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_OUT_OF_MEMORY, cuMulticastBindMem(b, 0, mem, kMin, kMin, 0));
  EXPECT_EQ(0u, mcsim::api::faultReport()[0].matched);
  EXPECT_EQ(2u, mcsim::api::faultReport()[1].matched);
  EXPECT_OK(cuMemRelease(a));
  EXPECT_OK(cuMemRelease(b));
  EXPECT_OK(cuMemRelease(mem));
}

// --- faultReport --------------------------------------------------------------------------------

TEST_F(Mechanics, FaultReportCountsMatchesAndFirings) {
  INIT();
  install("# counts\ncuDeviceGetCount : after=3 max=2 -> return CUDA_ERROR_UNKNOWN\n"
          "cuCtxSynchronize device=5 : always -> return CUDA_ERROR_UNKNOWN ; imex : nth=2 -> absent");
  failingCalls(10);
  EXPECT_OK(cuCtxSynchronize());  // device 0: filtered out
  const auto report = mcsim::api::faultReport();
  ASSERT_EQ(3u, report.size());
  EXPECT_EQ("cuDeviceGetCount : after=3 max=2 -> return CUDA_ERROR_UNKNOWN", report[0].rule);
  EXPECT_EQ("MCSIM_API:2", report[0].where);
  EXPECT_EQ(10u, report[0].matched);
  EXPECT_EQ(2u, report[0].fired);
  EXPECT_EQ(0u, report[1].matched);
  EXPECT_EQ(0u, report[1].fired);
  EXPECT_EQ("MCSIM_API:3", report[2].where);
  EXPECT_EQ(11u, report[2].matched);  // every driver call is a moment for fabric-level rules
  EXPECT_EQ(1u, report[2].fired);
}

}  // namespace

// At exit, the rules of the plan loaded at cuInit that never fired are listed, so that a plan aimed
// at the wrong call (here: a device the program never allocates on) does not pass as survived.
TEST_F(Mechanics, RulesThatNeverFiredAreListedAtExit) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  INIT(nullptr, {{"MCSIM_FAULTS", "cuCtxSynchronize : nth=1 -> return CUDA_ERROR_UNKNOWN\n"
                                  "cuMemAlloc device=7 : nth=1 -> return CUDA_ERROR_OUT_OF_MEMORY"}});
  EXPECT_EXIT(
      {
        cuCtxSynchronize();
        CUdeviceptr p = 0;
        if (cuMemAlloc(&p, 4096) == CUDA_SUCCESS) cuMemFree(p);  // on device 0
        std::exit(0);
      },
      ::testing::ExitedWithCode(0),
      "mcsim: fault rule at MCSIM_FAULTS:2 never fired \\(0 matching events\\): cuMemAlloc device=7 : nth=1");
}

// A rule that fired is not listed: the only line about the plan at exit names the other rule.
TEST_F(Mechanics, RulesThatFiredAreNotListedAtExit) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  INIT(nullptr, {{"MCSIM_FAULTS", "cuCtxSynchronize : nth=1 -> return CUDA_ERROR_UNKNOWN"}});
  EXPECT_EXIT(
      {
        if (cuCtxSynchronize() == CUDA_ERROR_UNKNOWN) std::fprintf(stderr, "fired as planned\n");
        std::exit(0);
      },
      ::testing::ExitedWithCode(0), "^fired as planned\n$");
}

namespace {

// A library's teardown that calls the driver from an atexit handler (or a static destructor)
// registered before cuInit: NCCL's statically linked CUDA runtime unloads its modules so
// (cuLibraryUnload from libnccl.so.2's destructors). Its handler runs after everything the driver
// registered at cuInit, so the driver's lookup tables must outlive static destruction. The heap is
// in use meanwhile (the runtime frees and allocates as it tears down): freed memory is reused here,
// which a table destroyed too early does not survive.
void callTheDriverUnderThePlanAtExit() {
  std::vector<std::string> heapInUse;
  for (int i = 0; i < 512; ++i) heapInUse.emplace_back(static_cast<size_t>(40 + i % 64), '\xff');
  int n = 0;
  for (int i = 0; i < 3; ++i) {
    if (cuDeviceGetCount(&n) != CUDA_ERROR_UNKNOWN) _exit(3);
  }
  std::fprintf(stderr, "the plan held at exit\n");
  _exit(0);
}

}  // namespace

TEST(MechanicsAtExit, DriverCallsFromAnAtexitHandlerRegisteredBeforeCuInitStillMeetThePlan) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        ::setenv("MCSIM_FAULTS", "cuDeviceGetCount : after=1 -> return CUDA_ERROR_UNKNOWN", 1);
        std::atexit(callTheDriverUnderThePlanAtExit);
        if (cuInit(0) != CUDA_SUCCESS) _exit(1);
        int n = 0;
        if (cuDeviceGetCount(&n) != CUDA_SUCCESS || n != 8) _exit(2);  // the rule's first call goes through
        std::exit(5);  // the handler ends the process first, with its own status
      },
      ::testing::ExitedWithCode(0), "the plan held at exit");
}
