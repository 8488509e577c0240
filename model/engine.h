// The engine: owns the SystemC kernel, which runs on a thread of its own, and simulated time.
//
// Work enters through submit(): jobs are admitted in submission order (callers serialise
// submission under the node's lock, so that order is the node's admission order) and run on the
// simulation thread as SystemC processes, so simulated time advances only here and wall-clock
// time never changes a result. SystemC allows one elaboration per process, so there is one
// engine per process, created on first use.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

namespace mcsim::model {

class Engine {
 public:
  // A unit of simulated work: `run` executes on the simulation thread and returns the simulated
  // duration (picoseconds) the work occupies; the job completes when that time has passed.
  using Work = std::function<uint64_t()>;

  static Engine& instance();

  // Runs `work` on the simulation thread and blocks the caller until it completes. Returns the
  // simulated time (ps) at completion.
  uint64_t run(Work work);
  uint64_t nowPs();
  // Threads mcsim itself runs in this process (the simulation thread, once started), which
  // deadlock detection must not count as the application's.
  static int internalThreads();

  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;
  ~Engine();

 private:
  Engine();
  struct Job;
  struct Core;
  void threadMain();

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Job>> queue_;
  bool stopping_ = false;
  uint64_t nowPs_ = 0;  // simulated time, published by the simulation thread
  std::unique_ptr<Core> core_;  // made and used on the simulation thread
  std::thread thread_;
};

}  // namespace mcsim::model
