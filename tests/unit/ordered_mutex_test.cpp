// OrderedMutex: locks taken in increasing rank go through; a lock taken against the order aborts
// in builds with assertions (the sanitizer build runs these), naming the order's page.
#include "model/ordered_mutex.h"

#include <gtest/gtest.h>

#include <thread>

namespace mcsim {
namespace {

TEST(OrderedMutex, IncreasingRanksNestAndReleaseInAnyOrder) {
  OrderedMutex low(LockRank::kDriverStreams), high(LockRank::kNode);
  std::unique_lock<OrderedMutex> a(low);
  std::unique_lock<OrderedMutex> b(high);
  a.unlock();  // out of order: the held record forgets the right rank
  b.unlock();
  // Nothing is held now, so the high one may come first.
  std::lock_guard<OrderedMutex> c(high);
}

TEST(OrderedMutex, ConditionWaitKeepsTheOrder) {
  OrderedMutex low(LockRank::kDriverStreams), node(LockRank::kNode);
  OrderedCondition cv;
  bool ready = false;
  std::thread t([&] {
    std::lock_guard<OrderedMutex> l(node);
    ready = true;
    cv.notify_all();
  });
  {
    std::lock_guard<OrderedMutex> outer(low);
    OrderedLock lock(node);
    cv.wait(lock, [&] { return ready; });
  }
  t.join();
  // After the wait the thread holds nothing: a low rank may be taken again.
  std::lock_guard<OrderedMutex> again(low);
}

TEST(OrderedMutexDeathTest, TakingALowerRankWhileHoldingAHigherOneAborts) {
#ifdef NDEBUG
  GTEST_SKIP() << "the order is checked in builds with assertions only";
#else
  OrderedMutex low(LockRank::kDriverStreams), high(LockRank::kNode);
  EXPECT_DEATH(
      {
        std::lock_guard<OrderedMutex> h(high);
        std::lock_guard<OrderedMutex> l(low);
      },
      "lock order violated: taking a lock of rank 40 while holding one of rank 60");
#endif
}

TEST(OrderedMutexDeathTest, TakingTheSameRankTwiceAborts) {
#ifdef NDEBUG
  GTEST_SKIP() << "the order is checked in builds with assertions only";
#else
  OrderedMutex one(LockRank::kDriverStreams), other(LockRank::kDriverStreams);
  EXPECT_DEATH(
      {
        std::lock_guard<OrderedMutex> a(one);
        std::lock_guard<OrderedMutex> b(other);
      },
      "lock order violated");
#endif
}

}  // namespace
}  // namespace mcsim
