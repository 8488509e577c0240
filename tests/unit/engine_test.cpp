// The engine's pins and run limit (model/engine.h), with which a shared node ties each request to
// the simulation's runs, and a replay puts it back at the same run; and engines as instances, each
// a simulation of its own (its SystemC context and clock), several in one process.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <future>
#include <memory>
#include <thread>

#include "model/engine.h"

namespace mcsim::model {
namespace {

// Work a pinned thread posts starts at the time the thread read while pinned, however busy other
// threads keep the simulation and however long the thread takes between its read and its post:
// unpinned, the simulation could run on in between, and the work would start later.
TEST(EnginePin, WorkPostedByAPinnedThreadStartsAtTheTimeItRead) {
  Engine e;
  std::atomic<bool> stop{false};
  std::thread busy([&] {
    for (uint64_t d = 1; !stop.load(); d = d % 997 + 1) e.run([d] { return d * 1000; });
  });
  for (int i = 0; i < 300; ++i) {
    e.pin();
    const uint64_t t = e.nowPs();
    const uint64_t d = 250 + static_cast<uint64_t>(i);
    // A window for the other thread's waits to move time on, were it not pinned. Not a timing
    // assumption: pinned, the check holds after any pause; the pause only gives a broken pin the
    // chance to show (nothing observable says the other thread tried to run meanwhile: it is
    // held inside run(), where it cannot say so).
    std::this_thread::sleep_for(std::chrono::microseconds(50));
    EXPECT_EQ(t + d, e.run([d] { return d; })) << "round " << i;  // run() releases the pin
  }
  stop.store(true);
  busy.join();
}

// The run limit keeps further runs from starting; a thread pinned at a count reads the state
// after exactly that run; raising the limit lets the rest run; a read pinned at a count that can
// never come returns once nothing is left to run.
TEST(EnginePin, RunLimitStopsTheSimulationWhereAPinnedReadWaitsForIt) {
  Engine e;
  const uint64_t r0 = e.pin();
  const uint64_t t0 = e.nowPs();
  Engine::release();
  e.limitRuns(r0 + 2);
  std::promise<void> pinned;
  std::thread steps([&] {
    for (int i = 0; i < 5; ++i) {
      e.pin();  // a request's post and wait fall into one run, as on a shared node
      if (i == 1) pinned.set_value();
      e.run([] { return 1000; });
    }
  });
  // Once the second step is pinned (taken in, as a request before this one would be on a
  // replaying node), the work of both is sure to come: the read below waits for it.
  pinned.get_future().wait();
  EXPECT_EQ(r0 + 2, e.pin(r0 + 2));
  EXPECT_EQ(t0 + 2000, e.nowPs()) << "the simulation ran past its limit";
  Engine::release();
  e.limitRuns(UINT64_MAX);
  steps.join();
  e.pin(r0 + 100);
  EXPECT_EQ(t0 + 5000, e.nowPs()) << "a read waited for runs that could never come";
  Engine::release();
}

// Two engines alive in one process, driven from two threads at once, each read the time their own
// work took: their simulations take turns at SystemC, and neither moves the other's clock.
TEST(Engines, TwoEnginesKeepTheirOwnClocks) {
  Engine a;
  Engine b;
  std::thread other([&] {
    for (int i = 0; i < 200; ++i) b.run([] { return 7; });
  });
  for (int i = 0; i < 300; ++i) a.run([] { return 1000; });
  other.join();
  EXPECT_EQ(a.nowPs(), 300000u);
  EXPECT_EQ(b.nowPs(), 1400u);
  EXPECT_EQ(a.stats().processes, 300u);
  EXPECT_EQ(b.stats().processes, 200u);
}

// An engine made after another one ended starts a simulation of its own, at time 0.
TEST(Engines, ANewEngineStartsAtTimeZero) {
  {
    Engine first;
    EXPECT_EQ(first.run([] { return 5000; }), 5000u);
  }
  Engine second;
  EXPECT_FALSE(second.started());
  EXPECT_EQ(second.nowPs(), 0u);
  EXPECT_EQ(second.run([] { return 10; }), 10u);
}

// An engine whose simulation still has a process waiting for something that never comes (device
// work that never finished) is destroyed all the same.
TEST(Engines, AnEngineWithWorkThatNeverEndsIsDestroyed) {
  auto never = std::make_shared<Completion>();
  {
    Engine e;
    e.post([&e, never] { e.spawn([never] { never->waitDone(); }); });
    EXPECT_EQ(e.run([] { return 100; }), 100u);
  }
  EXPECT_FALSE(never->done());
}

}  // namespace
}  // namespace mcsim::model
