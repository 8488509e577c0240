// "Any calls to cuMulticastBindMem, cuMulticastBindMem_v2, cuMulticastBindAddr, or
// cuMulticastBindAddr_v2 will block until all devices have been added ... A call to cuMemMap will
// block until all devices have been added." mcsim blocks for real, and reports (then fails or
// aborts) a wait that nothing can end: a deadlock at once, a suspected hang after
// MCSIM_HANG_GRACE_S without progress.
#include <atomic>
#include <chrono>
#include <future>
#include <thread>

#include "tests/multicast/multicast_test.h"

namespace {

using namespace mctest;
using Clock = std::chrono::steady_clock;

class Blocking : public McTest {};
class Deadlock : public McTest {};
class Hang : public McTest {};
class HangDeathTest : public McTest {};

double secondsSince(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

bool contains(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

// A thread that has never called the driver adds the last device after `delay`. The delay gives
// the waiting call the chance to block first (the path under test), and is no timing assumption:
// a call that came after the add would find its team complete, and either way it returns only once
// the add has begun (`adding`), which is what the tests check.
std::thread lateAdder(CUmemGenericAllocationHandle mc, int dev, std::chrono::milliseconds delay,
                      std::atomic<bool>* adding, CUresult* result) {
  return std::thread([=] {
    std::this_thread::sleep_for(delay);
    adding->store(true);
    *result = cuMulticastAddDevice(mc, dev);
  });
}

TEST_F(Blocking, BindMemWaitsForTheLastDevice) {
  INIT();
  CUmemGenericAllocationHandle mc = makeTeam({0}, kMin, 0, 2);
  CUmemGenericAllocationHandle mem = makeMem(0, kMin);
  std::atomic<bool> adding{false};
  CUresult added = CUDA_ERROR_UNKNOWN;
  StderrCapture cap;
  const auto start = Clock::now();
  std::thread t = lateAdder(mc, 1, std::chrono::milliseconds(300), &adding, &added);
  const CUresult r = cuMulticastBindMem(mc, 0, mem, 0, kMin, 0);
  const bool wasAdding = adding.load();
  const double waited = secondsSince(start);
  t.join();
  const std::string err = cap.take();
  EXPECT_CU(CUDA_SUCCESS, r);
  EXPECT_CU(CUDA_SUCCESS, added);
  EXPECT_TRUE(wasAdding) << "the bind returned before the last device was being added";
  EXPECT_GE(waited, 0.25);
  EXPECT_FALSE(contains(err, "deadlock") || contains(err, "hang")) << err;
  EXPECT_OK(cuMulticastUnbind(mc, 0, 0, kMin));
  EXPECT_OK(cuMemRelease(mem));
  EXPECT_OK(cuMemRelease(mc));
  expectCountsEqual(baseline, Counts::now());
}

TEST_F(Blocking, BindAddrV2WaitsForTheLastDevice) {
  INIT();
  CUmemGenericAllocationHandle mc = makeTeam({5}, kMin, 0, 3);
  ASSERT_OK(cuMulticastAddDevice(mc, 2));
  CUmemGenericAllocationHandle mem = makeMem(5, kMin);
  CUdeviceptr va = mapRange(mem, kMin, {5});
  std::atomic<bool> adding{false};
  CUresult added = CUDA_ERROR_UNKNOWN;
  std::thread t = lateAdder(mc, 7, std::chrono::milliseconds(200), &adding, &added);
  const CUresult r = cuMulticastBindAddr_v2(mc, 5, 0, va, kMin, 0);
  const bool wasAdding = adding.load();
  t.join();
  EXPECT_CU(CUDA_SUCCESS, r);
  EXPECT_CU(CUDA_SUCCESS, added);
  EXPECT_TRUE(wasAdding);
  EXPECT_OK(cuMulticastUnbind(mc, 5, 0, kMin));
  unmapRange(va, kMin);
  EXPECT_OK(cuMemRelease(mem));
  EXPECT_OK(cuMemRelease(mc));
  expectCountsEqual(baseline, Counts::now());
}

TEST_F(Blocking, MemMapWaitsForTheLastDevice) {
  INIT();
  CUmemGenericAllocationHandle mc = makeTeam({0}, 2 * kMin, 0, 2);
  CUdeviceptr va = 0;
  ASSERT_OK(cuMemAddressReserve(&va, 2 * kMin, 0, 0, 0));
  std::atomic<bool> adding{false};
  CUresult added = CUDA_ERROR_UNKNOWN;
  const auto start = Clock::now();
  std::thread t = lateAdder(mc, 1, std::chrono::milliseconds(300), &adding, &added);
  const CUresult r = cuMemMap(va, 2 * kMin, 0, mc, 0);
  const bool wasAdding = adding.load();
  const double waited = secondsSince(start);
  t.join();
  EXPECT_CU(CUDA_SUCCESS, r);
  EXPECT_CU(CUDA_SUCCESS, added);
  EXPECT_TRUE(wasAdding) << "the map returned before the last device was being added";
  EXPECT_GE(waited, 0.25);
  EXPECT_OK(cuMemUnmap(va, 2 * kMin));
  EXPECT_OK(cuMemAddressFree(va, 2 * kMin));
  EXPECT_OK(cuMemRelease(mc));
  expectCountsEqual(baseline, Counts::now());
}

// Several binds, one per device and thread, all wait for the one device still missing.
TEST_F(Blocking, EveryWaiterWakes) {
  INIT();
  CUmemGenericAllocationHandle mc = makeTeam({0, 1, 2}, kMin, 0, 4);
  std::vector<CUmemGenericAllocationHandle> mem;
  for (int d = 0; d < 3; ++d) mem.push_back(makeMem(d, kMin));
  std::atomic<bool> adding{false};
  std::vector<CUresult> results(3, CUDA_ERROR_UNKNOWN);
  // A byte per thread: std::vector<bool> packs the three into one word, and three threads writing
  // their own bit of it race (ThreadSanitizer saw it).
  std::vector<uint8_t> early(3, 1);
  std::vector<std::thread> binders;
  for (int d = 0; d < 3; ++d) {
    binders.emplace_back([&, d] {
      results[d] = cuMulticastBindMem(mc, 0, mem[d], 0, kMin, 0);
      early[d] = !adding.load();
    });
  }
  // A chance for the binders to block first; they wake only after `adding` either way.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  adding.store(true);
  ASSERT_OK(cuMulticastAddDevice(mc, 3));
  for (auto& t : binders) t.join();
  for (int d = 0; d < 3; ++d) {
    EXPECT_CU(CUDA_SUCCESS, results[d]) << d;
    EXPECT_FALSE(early[d]) << d;
  }
  EXPECT_OK(cuMemRelease(mc));
  for (auto m : mem) EXPECT_OK(cuMemRelease(m));
  expectCountsEqual(baseline, Counts::now());
}

// A complete team does not block: the bind returns at once, even with a short grace period.
TEST_F(Blocking, CompleteTeamDoesNotWait) {
  INIT(nullptr, {{"MCSIM_HANG_GRACE_S", "0.2"}});
  CUmemGenericAllocationHandle mc = makeTeam({0, 1}, kMin);
  CUmemGenericAllocationHandle mem = makeMem(1, kMin);
  StderrCapture cap;
  EXPECT_OK(cuMulticastBindMem(mc, 0, mem, 0, kMin, 0));
  EXPECT_EQ("", cap.take());
  EXPECT_OK(cuMemRelease(mc));
  EXPECT_OK(cuMemRelease(mem));
}

// Releasing the object wakes its waiters; the handle they named is gone.
TEST_F(Blocking, ReleaseWakesTheWaiter) {
  INIT();
  CUmemGenericAllocationHandle mc = makeTeam({0}, kMin, 0, 2);
  CUmemGenericAllocationHandle mem = makeMem(0, kMin);
  CUresult r = CUDA_ERROR_UNKNOWN;
  std::thread t([&] { r = cuMulticastBindMem(mc, 0, mem, 0, kMin, 0); });
  // A chance for the bind to block first; a bind that came after the release would find the
  // handle gone, with the same answer.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  ASSERT_OK(cuMemRelease(mc));
  t.join();
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, r);
  EXPECT_OK(cuMemRelease(mem));
  expectCountsEqual(baseline, Counts::now());
}

// A waiter whose team has just become complete is no longer stuck, even before it has run again:
// the thread that completed the team may block next (on another team that the woken waiter will
// complete) without that being taken for a deadlock of every thread.
TEST_F(Blocking, AWokenWaiterIsNotCountedAsStuck) {
  INIT();
  CUmemGenericAllocationHandle x = makeTeam({0}, kMin, 0, 2);
  CUmemGenericAllocationHandle y = makeTeam({2}, kMin, 0, 2);
  CUmemGenericAllocationHandle m0 = makeMem(0, kMin), m2 = makeMem(2, kMin);
  CUresult bindX = CUDA_ERROR_UNKNOWN, addY = CUDA_ERROR_UNKNOWN;
  StderrCapture cap;
  std::thread a([&] {
    bindX = cuMulticastBindMem(x, 0, m0, 0, kMin, 0);  // waits for device 1
    addY = cuMulticastAddDevice(y, 3);                  // then completes y
  });
  // A chance for `a` to block in its bind first; had it not, its bind returns at once and it
  // completes y all the same.
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  ASSERT_OK(cuMulticastAddDevice(x, 1));
  // At once, before `a` has run again: both threads are in the driver, but `a` can go on.
  const CUresult bindY = cuMulticastBindMem(y, 0, m2, 0, kMin, 0);
  a.join();
  const std::string err = cap.take();
  EXPECT_CU(CUDA_SUCCESS, bindX);
  EXPECT_CU(CUDA_SUCCESS, addY);
  EXPECT_CU(CUDA_SUCCESS, bindY);
  EXPECT_FALSE(contains(err, "deadlock")) << err;
  for (auto h : {x, y, m0, m2}) EXPECT_OK(cuMemRelease(h));
  expectCountsEqual(baseline, Counts::now());
}

// ---- deadlock: every thread of the process is blocked in the driver -----------------------------

// A team of every GPU: the report names the devices still missing, and lists the added ones
// sorted whatever order they were added in.
TEST_F(Deadlock, ReportNamesTheMissingDevicesSorted) {
  INIT();
  CUmemGenericAllocationHandle mc = makeTeam({6, 0, 3, 1, 2, 7, 4}, kMin, 0, 8);
  CUmemGenericAllocationHandle mem = makeMem(0, kMin);
  StderrCapture cap;
  EXPECT_CU(CUDA_ERROR_ILLEGAL_STATE, cuMulticastBindMem(mc, 0, mem, 0, kMin, 0));
  const std::string err = cap.take();
  EXPECT_TRUE(contains(err, "team of 8, devices added [0 1 2 3 4 6 7], 1 still to be added, missing devices: [5]"))
      << err;
  for (auto h : {mc, mem}) EXPECT_OK(cuMemRelease(h));
}

TEST_F(Deadlock, SingleThreadedBindIsReportedAndFails) {
  INIT();
  CUmemGenericAllocationHandle mc = makeTeam({0}, kMin, 0, 3);
  CUmemGenericAllocationHandle mem = makeMem(0, kMin);
  const uint64_t before = mcsim::api::stateDigest();
  StderrCapture cap;
  const auto start = Clock::now();
  const CUresult r = cuMulticastBindMem(mc, 0, mem, 0, kMin, 0);
  const double waited = secondsSince(start);
  const std::string err = cap.take();
  EXPECT_CU(CUDA_ERROR_ILLEGAL_STATE, r);
  EXPECT_EQ(before, mcsim::api::stateDigest());
  EXPECT_LT(waited, 5.0) << "a deadlock is reported at once, not after the grace period";
  EXPECT_TRUE(contains(err, "deadlock")) << err;
  EXPECT_TRUE(contains(err, "multicast object 1")) << err;
  EXPECT_TRUE(contains(err, "team of 3")) << err;
  EXPECT_TRUE(contains(err, "2 still to be added")) << err;
  // A team smaller than the node: which two of the others would complete it is not known.
  EXPECT_TRUE(contains(err, "devices added [0], 2 still to be added, from the devices not added: [1 2 3 4 5 6 7]")) << err;
  EXPECT_TRUE(contains(err, "cuMulticastBindMem")) << err;
  // The object is as it was: adding the missing devices lets the same bind through.
  ASSERT_OK(cuMulticastAddDevice(mc, 1));
  ASSERT_OK(cuMulticastAddDevice(mc, 2));
  EXPECT_OK(cuMulticastBindMem(mc, 0, mem, 0, kMin, 0));
  EXPECT_OK(cuMemRelease(mc));
  EXPECT_OK(cuMemRelease(mem));
  expectCountsEqual(baseline, Counts::now());
}

TEST_F(Deadlock, EveryBindFormIsReported) {
  INIT();
  CUmemGenericAllocationHandle mc = makeTeam({0}, kMin, 0, 2);
  CUmemGenericAllocationHandle mem = makeMem(0, kMin);
  CUdeviceptr va = mapRange(mem, kMin, {0});
  const uint64_t before = mcsim::api::stateDigest();
  struct Case {
    const char* name;
    std::function<CUresult()> call;
  };
  const std::vector<Case> cases = {
      {"cuMulticastBindMem", [&] { return cuMulticastBindMem(mc, 0, mem, 0, kMin, 0); }},
      {"cuMulticastBindMem", [&] { return cuMulticastBindMem_v2(mc, 0, 0, mem, 0, kMin, 0); }},
      {"cuMulticastBindAddr", [&] { return cuMulticastBindAddr(mc, 0, va, kMin, 0); }},
      {"cuMulticastBindAddr", [&] { return cuMulticastBindAddr_v2(mc, 0, 0, va, kMin, 0); }},
  };
  for (const Case& c : cases) {
    StderrCapture cap;
    EXPECT_CU(CUDA_ERROR_ILLEGAL_STATE, c.call()) << c.name;
    const std::string err = cap.take();
    EXPECT_TRUE(contains(err, "deadlock")) << err;
    EXPECT_TRUE(contains(err, c.name)) << err;
    EXPECT_TRUE(contains(err, "1 still to be added")) << err;
    EXPECT_EQ(before, mcsim::api::stateDigest()) << c.name;
  }
  unmapRange(va, kMin);
  EXPECT_OK(cuMemRelease(mem));
  EXPECT_OK(cuMemRelease(mc));
  expectCountsEqual(baseline, Counts::now());
}

TEST_F(Deadlock, SingleThreadedMapIsReportedAndFails) {
  INIT();
  CUmemGenericAllocationHandle mc = makeTeam({4, 6}, kMin, 0, 4);
  CUdeviceptr va = 0;
  ASSERT_OK(cuMemAddressReserve(&va, kMin, 0, 0, 0));
  const uint64_t before = mcsim::api::stateDigest();
  StderrCapture cap;
  EXPECT_CU(CUDA_ERROR_ILLEGAL_STATE, cuMemMap(va, kMin, 0, mc, 0));
  const std::string err = cap.take();
  EXPECT_EQ(before, mcsim::api::stateDigest());
  EXPECT_TRUE(contains(err, "deadlock")) << err;
  EXPECT_TRUE(contains(err, "cuMemMap")) << err;
  EXPECT_TRUE(contains(err, "devices added [4 6]")) << err;
  EXPECT_TRUE(contains(err, "2 still to be added")) << err;
  EXPECT_EQ(baseline.mappings, Counts::now().mappings);
  EXPECT_OK(cuMemAddressFree(va, kMin));
  EXPECT_OK(cuMemRelease(mc));
  expectCountsEqual(baseline, Counts::now());
}

TEST_F(Deadlock, HangResultChoosesTheCode) {
  INIT(nullptr, {{"MCSIM_HANG_RESULT", "CUDA_ERROR_TIMEOUT"}});
  CUmemGenericAllocationHandle mc = makeTeam({0}, kMin, 0, 2);
  CUmemGenericAllocationHandle mem = makeMem(0, kMin);
  CUdeviceptr va = 0;
  ASSERT_OK(cuMemAddressReserve(&va, kMin, 0, 0, 0));
  StderrCapture cap;
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_TIMEOUT, cuMulticastBindMem(mc, 0, mem, 0, kMin, 0));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_TIMEOUT, cuMemMap(va, kMin, 0, mc, 0));
  EXPECT_TRUE(contains(cap.take(), "deadlock"));
  EXPECT_OK(cuMemAddressFree(va, kMin));
  EXPECT_OK(cuMemRelease(mem));
  EXPECT_OK(cuMemRelease(mc));
}

// ---- suspected hang: another thread is alive but outside the driver -------------------------------

TEST_F(Hang, SleepingThreadMakesASuspectedHangAfterTheGracePeriod) {
  INIT(nullptr, {{"MCSIM_HANG_GRACE_S", "0.4"}});
  CUmemGenericAllocationHandle mc = makeTeam({0}, kMin, 0, 2);
  CUmemGenericAllocationHandle mem = makeMem(0, kMin);
  std::promise<void> release;
  std::thread sleeper([f = release.get_future()]() mutable { f.wait(); });  // never calls the driver
  const uint64_t before = mcsim::api::stateDigest();
  StderrCapture cap;
  const auto start = Clock::now();
  const CUresult r = cuMulticastBindMem(mc, 0, mem, 0, kMin, 0);
  const double waited = secondsSince(start);
  const std::string err = cap.take();
  release.set_value();
  sleeper.join();
  EXPECT_CU(CUDA_ERROR_ILLEGAL_STATE, r);
  EXPECT_EQ(before, mcsim::api::stateDigest());
  EXPECT_GE(waited, 0.35) << "given up before the grace period";
  EXPECT_LT(waited, 5.0);
  EXPECT_TRUE(contains(err, "suspected hang")) << err;
  EXPECT_FALSE(contains(err, "deadlock")) << err;
  EXPECT_TRUE(contains(err, "multicast object 1")) << err;
  EXPECT_TRUE(contains(err, "1 still to be added")) << err;
  EXPECT_OK(cuMemRelease(mem));
  EXPECT_OK(cuMemRelease(mc));
}

// Two threads wait on the same incomplete team while the main thread sits in join: a suspected
// hang gives up both.
TEST_F(Hang, EveryWaiterIsGivenUp) {
  INIT(nullptr, {{"MCSIM_HANG_GRACE_S", "0.3"}, {"MCSIM_HANG_RESULT", "CUDA_ERROR_TIMEOUT"}});
  CUmemGenericAllocationHandle mc = makeTeam({0, 1}, kMin, 0, 3);
  CUmemGenericAllocationHandle m0 = makeMem(0, kMin), m1 = makeMem(1, kMin);
  CUresult r0 = CUDA_SUCCESS, r1 = CUDA_SUCCESS;
  StderrCapture cap;
  std::thread a([&] { r0 = cuMulticastBindMem(mc, 0, m0, 0, kMin, 0); });
  std::thread b([&] { r1 = cuMulticastBindMem_v2(mc, 1, 0, m1, 0, kMin, 0); });
  a.join();
  b.join();
  const std::string err = cap.take();
  EXPECT_CU(CUDA_ERROR_TIMEOUT, r0);
  EXPECT_CU(CUDA_ERROR_TIMEOUT, r1);
  EXPECT_TRUE(contains(err, "suspected hang")) << err;
  EXPECT_TRUE(contains(err, "on device 1")) << err;
  EXPECT_OK(cuMemRelease(mc));
  EXPECT_OK(cuMemRelease(m0));
  EXPECT_OK(cuMemRelease(m1));
  expectCountsEqual(baseline, Counts::now());
}

// ---- MCSIM_ON_HANG=abort -----------------------------------------------------------------------

// What runs in the death test's child: a fresh driver with the given environment binds on a team
// that lacks a device.
void bindOnIncompleteTeam(bool withSleeper) {
  setEnv("MCSIM_ON_HANG", "abort");
  setEnv("MCSIM_HANG_GRACE_S", "0.3");
  if (cuInit(0) != CUDA_SUCCESS) std::_Exit(3);
  CUmemGenericAllocationHandle mc = 0, mem = 0;
  CUmulticastObjectProp p = mcProp(2, kMin);
  CUmemAllocationProp mp = devicePinned(0);
  if (cuMulticastCreate(&mc, &p) != CUDA_SUCCESS || cuMulticastAddDevice(mc, 0) != CUDA_SUCCESS ||
      cuMemCreate(&mem, kMin, &mp, 0) != CUDA_SUCCESS) {
    std::_Exit(4);
  }
  // A thread alive outside the driver, waiting for something that never comes (the process ends
  // first, aborted by the hang report).
  static std::promise<void> never;
  std::thread sleeper;
  if (withSleeper) sleeper = std::thread([] { never.get_future().wait(); });
  cuMulticastBindMem(mc, 0, mem, 0, kMin, 0);
  std::_Exit(0);  // not reached when mcsim aborts
}

TEST_F(HangDeathTest, AbortOnDeadlock) {
  if (mcsim::api::initialized()) GTEST_SKIP() << "needs a process of its own (run it through ctest)";
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(bindOnIncompleteTeam(false), "deadlock: every thread");
}

TEST_F(HangDeathTest, AbortOnSuspectedHang) {
  if (mcsim::api::initialized()) GTEST_SKIP() << "needs a process of its own (run it through ctest)";
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(bindOnIncompleteTeam(true), "suspected hang");
}

}  // namespace
