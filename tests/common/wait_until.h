// Waiting in a test for something another thread or process does: poll the condition until it
// holds, with a deadline that only bounds a test that fails. Never a sleep for a guessed time: the
// wait ends as soon as the condition holds, however fast or loaded the machine is. Needs only the
// standard library, so that every suite (the conformance suite against the real driver too) can
// use it.
#pragma once

#include <chrono>
#include <thread>

namespace cutest {

// How long a condition may take before the test calls it failed: far beyond anything a passing
// run needs, even under a sanitizer on a loaded machine, and within ctest's timeout.
constexpr std::chrono::seconds kConditionLimit{60};

// Whether `ready()` held within `limit`. Polls every millisecond: the interval only decides how
// soon after the condition comes true the wait notices it.
template <typename Ready>
bool waitUntil(Ready ready, std::chrono::steady_clock::duration limit = kConditionLimit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!ready()) {
    if (std::chrono::steady_clock::now() >= deadline) return ready();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

}  // namespace cutest
