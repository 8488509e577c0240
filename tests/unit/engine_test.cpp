// The engine's holds and run limit (model/engine.h), which a shared node uses to pin each request
// to a point between two runs of the simulation, and a replay to put it back there.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <future>
#include <thread>
#include <vector>

#include "model/engine.h"

namespace mcsim::model {
namespace {

// Work posted by a thread that holds the simulation starts at the time the thread read under the
// hold, however busy other threads keep the simulation: without the hold, the simulation could
// run on between the read and the post, and the work would start later than the time read.
TEST(EngineHold, WorkPostedUnderAHoldStartsAtTheTimeReadUnderIt) {
  Engine& e = Engine::instance();
  std::atomic<bool> stop{false};
  std::thread busy([&] {
    for (uint64_t d = 1; !stop.load(); d = d % 997 + 1) e.run([d] { return d * 1000; });
  });
  for (int i = 0; i < 300; ++i) {
    e.hold();
    const uint64_t t = e.nowPs();
    const uint64_t d = 250 + static_cast<uint64_t>(i);
    // However long the thread takes between its read and its post (here: long enough for the
    // other thread's waits to move time on many times, were the simulation not held).
    std::this_thread::sleep_for(std::chrono::microseconds(50));
    EXPECT_EQ(t + d, e.run([d] { return d; })) << "round " << i;  // run() gives the hold back
  }
  stop.store(true);
  busy.join();
}

// The run limit stops the simulation after a given number of runs; a hold asking for that many
// runs returns exactly there, at the simulated time those runs reach; raising the limit lets the
// rest run; a hold asking for more runs than can ever come returns once nothing is left to run.
TEST(EngineHold, RunLimitStopsTheSimulationWhereAHoldWaitsForIt) {
  Engine& e = Engine::instance();
  const uint64_t r0 = e.hold();
  const uint64_t t0 = e.nowPs();
  Engine::release();
  e.limitRuns(r0 + 2);
  std::promise<void> holding;
  std::thread steps([&] {
    for (int i = 0; i < 5; ++i) {
      e.hold();  // a request's post and wait fall in one run, as on a shared node
      if (i == 1) holding.set_value();
      e.run([] { return 1000; });
    }
  });
  // Once the second step holds (it is taken in, as a request before this one would be on a
  // replaying node), the work of both is sure to come: the hold below waits for it.
  holding.get_future().wait();
  EXPECT_EQ(r0 + 2, e.hold(r0 + 2));
  EXPECT_EQ(t0 + 2000, e.nowPs()) << "the simulation ran past its limit";
  Engine::release();
  e.limitRuns(UINT64_MAX);
  steps.join();
  EXPECT_EQ(r0 + 5, e.hold(r0 + 100)) << "a hold waited for runs that could never come";
  EXPECT_EQ(t0 + 5000, e.nowPs());
  Engine::release();
}

}  // namespace
}  // namespace mcsim::model
