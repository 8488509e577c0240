// The calendar of a bandwidth resource (model/bandwidth_server.h): what a transfer is promised,
// given the promises already made. Rate 1e12 bytes/s makes one byte one picosecond.
#include "model/bandwidth_server.h"

#include <gtest/gtest.h>

#include <vector>

#include "model/random.h"

namespace mcsim::model {
namespace {

class Calendar : public ::testing::Test {
 protected:
  Horizon horizon;
  BandwidthServer link{1e12, TimelineTrack(), &horizon};
};

TEST_F(Calendar, AnIdleResourceServesAtItsRate) {
  EXPECT_EQ(link.serve(100, 50), 150u);
  EXPECT_EQ(link.bytesServed(), 50u);
  BandwidthServer half(0.5e12, TimelineTrack());
  EXPECT_EQ(half.serve(0, 50), 100u);
}

TEST_F(Calendar, TransfersArrivingTogetherQueue) {
  EXPECT_EQ(link.serve(0, 100), 100u);
  EXPECT_EQ(link.serve(0, 100), 200u);
  EXPECT_EQ(link.serve(50, 10), 210u);
}

TEST_F(Calendar, AnEarlierArrivalFillsTheGapBeforeALaterPromise) {
  EXPECT_EQ(link.serve(1000, 100), 1100u);  // promised for later
  EXPECT_EQ(link.serve(0, 100), 100u);      // offered afterwards, served before it
  EXPECT_EQ(link.serve(100, 50), 150u);     // still room before 1000
}

TEST_F(Calendar, ATransferTooLargeForAGapFlowsAroundThePromise) {
  EXPECT_EQ(link.serve(100, 100), 200u);  // [100, 200)
  // 150 bytes from 0: 100 before the promise, the other 50 after it.
  EXPECT_EQ(link.serve(0, 150), 250u);
  // Everything from 0 to 250 is now taken.
  EXPECT_EQ(link.serve(0, 1), 251u);
}

TEST_F(Calendar, AdjacentPromisesBehaveAsOne) {
  for (uint64_t t = 0; t < 1000; t += 10) EXPECT_EQ(link.serve(t, 10), t + 10);
  EXPECT_EQ(link.serve(0, 5), 1005u);
  EXPECT_EQ(link.serve(2000, 5), 2005u);
  EXPECT_EQ(link.serve(1005, 1000), 2010u);  // around [2000, 2005)
}

TEST_F(Calendar, PromisesBeforeTheHorizonAreForgotten) {
  for (uint64_t i = 0; i < 500; ++i) link.serve(i * 100, 10);  // many separate promises
  horizon.ps = 100000;
  // Nothing can arrive before the horizon; what lay before it no longer delays anything.
  EXPECT_EQ(link.serve(100000, 10), 100010u);
  EXPECT_EQ(link.serve(100000, 10), 100020u);
}

// Each simulation (a node) has a horizon of its own: one moving on forgets nothing of another's
// resources, whose transfers may still arrive early in their own simulated time.
TEST_F(Calendar, AnotherSimulationsHorizonForgetsNothingHere) {
  Horizon other;
  BandwidthServer elsewhere(1e12, TimelineTrack(), &other);
  EXPECT_EQ(elsewhere.serve(0, 10), 10u);
  horizon.ps = 100000;
  EXPECT_EQ(link.serve(100000, 10), 100010u);
  EXPECT_EQ(elsewhere.serve(0, 10), 20u);  // still behind its own promise for [0, 10)
}

TEST_F(Calendar, ZeroBytesTakeNoTime) {
  link.serve(0, 100);
  EXPECT_EQ(link.serve(50, 0), 50u);
  EXPECT_EQ(link.bytesServed(), 100u);
}

// Bookings near the horizon and far ahead, merging on both sides, with the horizon moving on:
// the calendar (which inserts and removes by moving whichever side of its list is shorter) gives
// exactly what a plain picosecond-by-picosecond record of the busy time gives.
TEST_F(Calendar, ManyInterleavedBookingsMatchAPlainRecordOfBusyTime) {
  constexpr uint64_t kSpan = 200000;
  std::vector<bool> busy(kSpan + 20000, false);
  auto reference = [&](uint64_t at, uint64_t bytes) {
    uint64_t t = at;
    for (uint64_t left = bytes; left > 0; ++t) {
      if (!busy[t]) {
        busy[t] = true;
        --left;
      }
    }
    return t;
  };
  RandomStream rng(20);
  for (int i = 0; i < 4000; ++i) {
    const uint64_t now = static_cast<uint64_t>(i) * 40;
    horizon.ps = now;
    // Mostly just after the horizon (a read asked for now), sometimes far ahead (a store that
    // arrives after the fabric), in sizes that leave gaps and that close them.
    const uint64_t ahead = rng.next() % 4 == 0 ? 2000 + rng.next() % 6000 : rng.next() % 300;
    const uint64_t bytes = 1 + rng.next() % 30;
    ASSERT_EQ(link.serve(now + ahead, bytes), reference(now + ahead, bytes)) << "booking " << i;
  }
}

}  // namespace
}  // namespace mcsim::model
