// Blocking until a multicast team is complete, and knowing when it never will be.
//
// The reference says binds and maps of a multicast object block until every device has been
// added. A blocked call waits for real (a condition variable, under the node's lock). Blocking
// alone is no deadlock: a thread that has not called the driver yet may still add the missing
// device. The wait is given up when
//   - every application thread of the process is blocked in such a wait (a deadlock: nothing can
//     ever add the device; the single-threaded program blocked in a bind is the common case), or
//   - the node has made no progress for the grace period (a suspected hang: e.g. the thread that
//     should add the device is itself waiting for something outside mcsim).
// Either way mcsim prints a report naming the objects, how many devices each still misses, and
// who is waiting, then fails every waiter with Status::kHang (MCSIM_ON_HANG=fail, the default)
// or aborts the process (MCSIM_ON_HANG=abort).
//
// A shared node (node_server.cpp) waits on behalf of threads of other processes: it counts the
// threads of every attached process (setThreadCounter), names the waiting process and thread in
// reports (CallerScope), and gives up the waits of a process that died (abandon).
#pragma once

#include <condition_variable>
#include <deque>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "model/ordered_mutex.h"
#include "model/status.h"

namespace mcsim::model {
class Engine;
}

namespace mcsim::fabric {

struct HangPolicy {
  double graceSeconds = 10.0;  // MCSIM_HANG_GRACE_S
  // How long every thread must stay stuck, with nothing happening, before that is called a
  // deadlock: 0 within a process; a shared node waits a little, since a process that has not
  // attached yet may still come and add the missing device.
  double deadlockSettleSeconds = 0;
  bool abortOnHang = false;    // MCSIM_ON_HANG=abort
};

// Who the calls of the current thread are made for, as reports name them: by default this thread
// of this process; a shared node's server thread serves a thread of an attached process.
struct Caller {
  int pid = 0;        // 0: this process
  long thread = 0;
  int rank = -1;
};
class CallerScope {
 public:
  explicit CallerScope(const Caller& c);
  ~CallerScope();
  CallerScope(const CallerScope&) = delete;
  CallerScope& operator=(const CallerScope&) = delete;

 private:
  Caller saved_;
};

class TeamWaiter {
 public:
  // Waits of the node whose simulation `engine` is (a timed block's deadline is in its time).
  TeamWaiter(HangPolicy policy, model::Engine& engine);

  // How many application threads could still complete a team (model::Engine::applicationThreads).
  void setThreadCounter(std::function<int()> count) { threadCount_ = std::move(count); }

  // Waits, with `lock` (the node's) held on entry and on return, until `ready()` is true.
  // `call` names the waiting call ("cuMulticastBindMem on device 3"); `object` names what it
  // waits for, and `describe()` says what that still lacks (called under the lock, when a
  // report is written). Returns kOk, or kHang when the wait was given up.
  //
  // `wakeAtPs` (a fault plan's `block until=`) is a simulated time at which the waiter's
  // `ready()` becomes true by itself. Simulated time moves only when something takes time, so
  // when every waiter is stuck and the run would be a deadlock (or the grace period passes
  // without progress), time instead jumps to the earliest such deadline, as a discrete-event
  // simulator does when nothing else can happen first.
  static constexpr uint64_t kNoDeadline = UINT64_MAX;
  Status wait(OrderedLock& lock, const std::string& call, uint64_t object,
              const std::function<bool()>& ready, const std::function<std::string(uint64_t)>& describe,
              uint64_t wakeAtPs = kNoDeadline);

  // Something changed that may let a waiter go on (a device was added, an object released).
  // Call under the node's lock.
  void progress();

  size_t waiting() const { return waiters_.size(); }
  const HangPolicy& policy() const { return policy_; }

  // Gives up, without a report, the waits of calls made for process `pid`. Under the lock.
  // `who` names the process and `held` the objects it held a handle on as it left: a report
  // written later on one of them says so (a rank killed before it added its device is why the
  // others wait).
  void abandon(int pid, const std::string& who = {}, const std::vector<uint64_t>& held = {});
  // The last report written (empty if none). Under the lock.
  const std::string& lastReport() const { return lastReport_; }

 private:
  struct Waiter {
    std::string call;
    uint64_t object;
    Caller caller;
    bool givenUp = false;
    // The waiter's own condition (it lives in the waiting call's frame while the waiter is
    // listed). A waiter whose condition already holds is about to go on, so it is not stuck,
    // even if it has not run since.
    const std::function<bool()>* ready = nullptr;
    uint64_t wakeAtPs = kNoDeadline;
    bool stuck() const { return !givenUp && !(*ready)(); }
  };
  // Moves simulated time to the earliest deadline of a stuck waiter; false when none has one.
  // Under the lock.
  bool advanceToDeadline();
  // Waiters that cannot go on by themselves. Under the lock.
  size_t stuckWaiters() const;
  // Gives up every stuck waiter after writing the report. Under the lock.
  void giveUpAll(const char* verdict, const std::function<std::string(uint64_t)>& describe);

  HangPolicy policy_;
  model::Engine& engine_;
  std::function<int()> threadCount_;
  std::string lastReport_;
  OrderedCondition cv_;
  std::map<uint64_t, Waiter> waiters_;  // by ticket, in arrival order
  // Processes that left holding handles on objects, oldest first; the last kMaxDepartures kept
  // (a node serves processes for as long as it runs).
  struct Departure {
    std::string who;
    std::vector<uint64_t> held;  // sorted
  };
  static constexpr size_t kMaxDepartures = 64;
  std::deque<Departure> departures_;
  uint64_t nextTicket_ = 0;
  uint64_t progress_ = 0;
};

}  // namespace mcsim::fabric
