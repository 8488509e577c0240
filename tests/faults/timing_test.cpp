// Fault actions that take simulated time: `delay T return R` (a call that stalls, then fails), and
// `block until=T` / `block for=T` (a call held until simulated time reaches T, or a release comes
// first). Simulated time moves only when something takes time, so a timed block that nothing else
// can end makes time jump to its deadline rather than being reported as a deadlock.
#include <atomic>
#include <chrono>
#include <thread>

#include "fabric/fault_plan.h"
#include "fabric/json_source.h"
#include "tests/common/wait_until.h"
#include "tests/faults/fault_test.h"

namespace {

using namespace faulttest;
using mcsim::fabric::FaultActionKind;
using mcsim::fabric::parseFaultPlan;

constexpr uint64_t kMs = 1'000'000'000ull;  // picoseconds
constexpr uint64_t kS = 1000 * kMs;

uint64_t now() { return mcsim::api::simulatedTimePs(); }

class Timing : public McTest {
 protected:
  void install(const std::string& plan) { ASSERT_EQ("", mcsim::api::installFaultPlan(plan)); }
};

// --- Parsing ------------------------------------------------------------------------------------

TEST(TimedActions, Parse) {
  const auto rules = parseFaultPlan(
      "cuMulticastBindMem : nth=1 -> delay 7s return CUDA_ERROR_SYSTEM_NOT_READY\n"
      "cuMemMap : nth=1 -> delay 2ms then return CUDA_ERROR_ILLEGAL_STATE\n"
      "cuMemMap : nth=2 -> block until=5ms\n"
      "cuMemMap : nth=3 -> block name=g for=250us\n",
      "t.plan");
  ASSERT_EQ(4u, rules.size());
  EXPECT_EQ(FaultActionKind::kReturn, rules[0].action);
  EXPECT_EQ(7 * kS, rules[0].timePs);
  EXPECT_EQ("CUDA_ERROR_SYSTEM_NOT_READY", rules[0].result);
  EXPECT_EQ(FaultActionKind::kReturn, rules[1].action);
  EXPECT_EQ(2 * kMs, rules[1].timePs);
  EXPECT_EQ(FaultActionKind::kBlock, rules[2].action);
  EXPECT_EQ(static_cast<int64_t>(5 * kMs), rules[2].untilPs);
  EXPECT_EQ(-1, rules[2].forPs);
  EXPECT_EQ("g", rules[3].label);
  EXPECT_EQ(250'000'000, rules[3].forPs);
  EXPECT_EQ(-1, rules[3].untilPs);
}

TEST(TimedActions, Refusals) {
  struct Case {
    const char* plan;
    const char* problem;
  };
  const Case cases[] = {
      {"cuMemMap : always -> delay 7s return", "usage: -> delay TIME [wall] [then return CUDA_ERROR_NAME]"},
      {"cuMemMap : always -> delay 7s then", "usage: -> delay TIME [wall] [then return CUDA_ERROR_NAME]"},
      {"cuMemMap : always -> delay 7s fail CUDA_ERROR_UNKNOWN", "usage: -> delay TIME [wall] [then return CUDA_ERROR_NAME]"},
      {"cuMemMap : always -> delay 7s return SYSTEM_NOT_READY", "return takes a CUresult name"},
      {"cuMemMap : always -> delay soon return CUDA_ERROR_UNKNOWN", "delay takes a simulated time"},
      {"cuMemMap : always -> block until=later", "until= takes a simulated time such as 5ms"},
      {"cuMemMap : always -> block for=", "usage: -> block [name=ID] [until=TIME | for=TIME]"},
      {"cuMemMap : always -> block until=1ms for=1ms", "a block takes until= or for=, not both"},
      {"cuMemMap : always -> block when=1ms", "usage: -> block [name=ID] [until=TIME | for=TIME]"},
      {"fabric-manager : always -> delay 1s return CUDA_ERROR_UNKNOWN", "action 'delay' applies to driver entry points"},
  };
  for (const Case& c : cases) {
    std::string what = "accepted";
    try {
      parseFaultPlan(c.plan, "t.plan");
    } catch (const mcsim::fabric::InputError& e) {
      what = e.what();
    }
    EXPECT_EQ(0u, what.find("t.plan:1: ")) << c.plan << " -> " << what;
    EXPECT_NE(std::string::npos, what.find(c.problem)) << c.plan << " -> " << what;
  }
}

// --- delay then return -------------------------------------------------------------------------

// The call takes its simulated time, then fails, changing nothing else; the next call is not held.
TEST_F(Timing, DelayThenReturnStallsThenFailsCleanly) {
  INIT();
  const Snapshot base = Snapshot::now();
  install("cuMemCreate : nth=1 -> delay 7s return CUDA_ERROR_OUT_OF_MEMORY\n"
          "cuMemAddressReserve : nth=1 -> delay 20us then return CUDA_ERROR_OUT_OF_MEMORY");
  CUmemGenericAllocationHandle h = 0;
  CUmemAllocationProp p = devicePinned(0);
  const uint64_t t0 = now();
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_OUT_OF_MEMORY, cuMemCreate(&h, kMin, &p, 0));
  EXPECT_EQ(0u, h);
  EXPECT_EQ(t0 + 7 * kS, now());
  CUdeviceptr va = 0;
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_OUT_OF_MEMORY, cuMemAddressReserve(&va, kMin, 0, 0, 0));
  EXPECT_EQ(t0 + 7 * kS + 20'000'000, now());
  ASSERT_OK(cuMemCreate(&h, kMin, &p, 0));  // nth=1 is spent: no stall, no failure
  EXPECT_EQ(t0 + 7 * kS + 20'000'000, now());
  EXPECT_OK(cuMemRelease(h));
  EXPECT_EQ(1u, ruleReport("delay 7s").fired);
  expectNothingLeaked(base);
}

// Issue 19, item 16: a delay that took simulated time past 2^64 ps wrapped round to a time
// already past and was dropped without a word. It stops at the end of simulated time (2^63 ps).
TEST_F(Timing, DelaysPastTheEndOfSimulatedTimeStopThere) {
  INIT();
  install("cuCtxSynchronize : always -> delay 5000000s");  // 5e18 ps a call
  const uint64_t t0 = now();
  ASSERT_OK(cuCtxSynchronize());
  EXPECT_EQ(t0 + 5'000'000 * kS, now());
  ASSERT_OK(cuCtxSynchronize());  // would pass 2^63 ps
  EXPECT_EQ(mcsim::fabric::kEndOfSimulatedTimePs, now());
  ASSERT_OK(cuCtxSynchronize());  // and so would every one after it (past 2^64, it wrapped round)
  ASSERT_OK(cuCtxSynchronize());
  EXPECT_EQ(mcsim::fabric::kEndOfSimulatedTimePs, now());
  EXPECT_EQ(4u, ruleReport("delay 5000000s").fired);
}

// --- Timed blocks -------------------------------------------------------------------------------

// A single thread held until 5 ms: nothing else can end the wait, so simulated time moves to 5 ms
// and the call goes on and does its work. No deadlock is reported.
TEST_F(Timing, BlockUntilInASingleThreadMovesTimeToTheDeadline) {
  INIT(nullptr, {{"MCSIM_HANG_GRACE_S", "30"}});
  install("cuMemCreate : nth=1 -> block until=5ms");
  const uint64_t t0 = now();
  ASSERT_LT(t0, 5 * kMs);
  StderrCapture capture;
  const auto wall = std::chrono::steady_clock::now();
  CUmemGenericAllocationHandle h = 0;
  CUmemAllocationProp p = devicePinned(0);
  const uint64_t allocationsBefore = Counts::now().allocations;
  EXPECT_OK(cuMemCreate(&h, kMin, &p, 0));
  EXPECT_EQ("", capture.take());
  EXPECT_LT(std::chrono::steady_clock::now() - wall, std::chrono::seconds(5));  // found at once, not after the grace
  EXPECT_EQ(5 * kMs, now());
  EXPECT_EQ(allocationsBefore + 1, Counts::now().allocations);  // released, it did its work
  EXPECT_OK(cuMemRelease(h));
  // A deadline already passed holds nothing.
  install("cuCtxSynchronize : always -> block until=1ms");
  EXPECT_OK(cuCtxSynchronize());
  EXPECT_EQ(5 * kMs, now());
}

// for= counts from the call's arrival.
TEST_F(Timing, BlockForCountsFromTheCall) {
  INIT();
  install("cuCtxSynchronize : nth=1 -> delay 3ms\ncuCtxSynchronize : nth=2 -> block for=2ms\n"
          "cuCtxSynchronize : nth=3 -> block name=n for=0");
  const uint64_t t0 = now();
  EXPECT_OK(cuCtxSynchronize());
  EXPECT_EQ(t0 + 3 * kMs, now());
  EXPECT_OK(cuCtxSynchronize());
  EXPECT_EQ(t0 + 5 * kMs, now());
  EXPECT_OK(cuCtxSynchronize());  // for=0: nothing to wait for
  EXPECT_EQ(t0 + 5 * kMs, now());
}

// A release that comes first ends the wait before its time; simulated time stays where it was.
TEST_F(Timing, AReleaseBeforeTheDeadlineWins) {
  INIT(nullptr, {{"MCSIM_HANG_GRACE_S", "30"}});
  install("cuCtxSynchronize device=1 : nth=1 -> block name=gate until=1s\ncuDeviceGetCount : nth=1 -> release gate");
  const uint64_t t0 = now();
  std::atomic<bool> returned{false};
  CUresult result = CUDA_ERROR_UNKNOWN;
  std::thread t([&] {
    RankContext rc(1);
    result = cuCtxSynchronize();
    returned = true;
  });
  EXPECT_TRUE(cutest::waitUntil([&] { return ruleReport("block").fired != 0; }));
  // A chance for a call wrongly let go to return before the check. Not a timing assumption: while
  // the block holds, the check passes after any pause; only a broken block can fail it.
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(returned.load());  // the main thread is alive outside the driver: no jump in time
  int n = 0;
  EXPECT_OK(cuDeviceGetCount(&n));  // fires the release
  t.join();
  EXPECT_CU(CUDA_SUCCESS, result);
  EXPECT_EQ(t0, now());
  // The API releases too.
  install("cuCtxSynchronize device=2 : nth=1 -> block name=api until=1s");
  std::thread t2([&] {
    RankContext rc(2);
    result = cuCtxSynchronize();
  });
  EXPECT_TRUE(cutest::waitUntil([&] { return ruleReport("block").fired != 0; }));
  mcsim::api::releaseFault("api");
  t2.join();
  EXPECT_CU(CUDA_SUCCESS, result);
  EXPECT_EQ(t0, now());
}

// A peer that joins late in simulated time: the bind of device 0 waits for the team, device 1's
// add is held for 3 ms. Both threads are then blocked in the driver, which is no deadlock: time
// moves to 3 ms, device 1 joins, and the bind completes.
TEST_F(Timing, TimedBlockEndsAWaitThatWouldBeADeadlock) {
  INIT(nullptr, {{"MCSIM_HANG_GRACE_S", "30"}});
  const Snapshot base = Snapshot::now();
  CUmemGenericAllocationHandle mem = makeMem(0, kMin);
  CUmemGenericAllocationHandle mc = makeTeam({0}, kMin, 0, 2);
  install("cuMulticastAddDevice device=1 : nth=1 -> block for=3ms");
  const uint64_t t0 = now();
  StderrCapture capture;
  CUresult add = CUDA_ERROR_UNKNOWN;
  // Either may come first: the add is held until 3 ms whenever it comes, and the bind cannot
  // complete before it; once both threads are blocked in the driver, time moves to 3 ms.
  std::thread peer([&] { add = cuMulticastAddDevice(mc, 1); });
  EXPECT_OK(cuMulticastBindMem(mc, 0, mem, 0, kMin, 0));
  peer.join();
  EXPECT_EQ("", capture.take());
  EXPECT_CU(CUDA_SUCCESS, add);
  EXPECT_EQ(t0 + 3 * kMs, now());
  EXPECT_OK(cuMulticastUnbind(mc, 0, 0, kMin));
  EXPECT_OK(cuMemRelease(mc));
  EXPECT_OK(cuMemRelease(mem));
  expectNothingLeaked(base);
}

// A timed block whose only peer is busy outside the driver: after the grace period without
// progress, time moves to the deadline instead of a hang being reported.
TEST_F(Timing, TimedBlockWithAThreadAliveEndsAfterTheGrace) {
  INIT(nullptr, {{"MCSIM_HANG_GRACE_S", "0.2"}});
  install("cuCtxSynchronize device=3 : always -> block until=2s");
  CUresult result = CUDA_ERROR_UNKNOWN;
  StderrCapture capture;
  std::thread t([&] {
    RankContext rc(3);
    result = cuCtxSynchronize();
  });
  // The main thread waits outside the driver (in join): a thread that could still call it, so the
  // blocked call is no deadlock; the grace period decides.
  t.join();
  EXPECT_EQ("", capture.take());
  EXPECT_CU(CUDA_SUCCESS, result);
  EXPECT_EQ(2 * kS, now());
}

// A timed block ends by itself; an untimed one in the same single-threaded program is still the
// deadlock it is.
TEST_F(Timing, UntimedBlockIsStillADeadlock) {
  INIT(nullptr, {{"MCSIM_HANG_GRACE_S", "30"}});
  install("cuCtxSynchronize : nth=1 -> block name=x until=1ms\ncuCtxSynchronize : nth=2 -> block");
  StderrCapture capture;
  EXPECT_OK(cuCtxSynchronize());
  EXPECT_CU(CUDA_ERROR_ILLEGAL_STATE, cuCtxSynchronize());
  const std::string err = capture.take();
  EXPECT_NE(std::string::npos, err.find("mcsim: deadlock")) << err;
  EXPECT_NE(std::string::npos, err.find("(held by the fault rule at MCSIM_API:2, unnamed: never released)")) << err;
}

}  // namespace
