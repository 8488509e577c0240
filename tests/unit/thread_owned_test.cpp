// Per-thread objects that outlive the thread's thread_local destructors and the main thread's
// exit() (model/thread_owned.h): the driver keeps its context stacks, call-log reasons' siblings,
// trace plans and admissions so, because it is called from those moments.
#include "model/thread_owned.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

namespace {

struct NumbersTag;
std::vector<int>& numbers() { return mcsim::threadOwned<std::vector<int>, NumbersTag>(); }

// Made before the thread's first use of numbers(), so destroyed after any thread_local made then.
struct AddsAtThreadEnd {
  size_t* seen;
  ~AddsAtThreadEnd() {
    numbers().push_back(2);
    *seen = numbers().size();
  }
};

TEST(ThreadOwned, EachThreadHasItsOwn) {
  numbers().assign({7});
  size_t other = 99;
  std::thread t([&] { other = numbers().size(); });
  t.join();
  EXPECT_EQ(0u, other);
  EXPECT_EQ(std::vector<int>{7}, numbers());
}

TEST(ThreadOwned, LivesThroughTheThreadsThreadLocalDestructors) {
  size_t seen = 0;
  std::thread t([&] {
    thread_local AddsAtThreadEnd guard{nullptr};
    guard.seen = &seen;
    numbers().push_back(1);
  });
  t.join();
  EXPECT_EQ(2u, seen);  // the 1 pushed while the thread ran, and the 2 from the destructor
}

struct GreetingTag;
std::string& greeting() { return mcsim::threadOwned<std::string, GreetingTag>(); }

void printGreetingAtExit() { std::fprintf(stderr, "at exit: %s\n", greeting().c_str()); }

TEST(ThreadOwned, LivesThroughExit) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        greeting() = "a string long enough to live on the heap, not in the object";
        std::atexit(printGreetingAtExit);
        std::exit(0);
      },
      ::testing::ExitedWithCode(0), "^at exit: a string long enough to live on the heap, not in the object\n$");
}

}  // namespace
