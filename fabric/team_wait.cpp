#include "fabric/team_wait.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "model/engine.h"
#include "model/hang_abort.h"

namespace mcsim::fabric {

namespace {
thread_local Caller tCaller;
}  // namespace

CallerScope::CallerScope(const Caller& c) : saved_(tCaller) { tCaller = c; }
CallerScope::~CallerScope() { tCaller = saved_; }

TeamWaiter::TeamWaiter(HangPolicy policy, model::Engine& engine)
    : policy_(policy), engine_(engine), threadCount_(&model::Engine::applicationThreads) {}

Status TeamWaiter::wait(OrderedLock& lock, const std::string& call, uint64_t object,
                        const std::function<bool()>& ready,
                        const std::function<std::string(uint64_t)>& describe, uint64_t wakeAtPs) {
  if (ready()) return Status::kOk;
  // The simulation may have to run for the team to form (another process's copy before its
  // AddDevice): a request that waits is released from its pin (fabric/admission.h).
  model::Engine::release();
  const uint64_t ticket = nextTicket_++;
  Caller caller = tCaller;
  if (caller.pid == 0) caller.thread = static_cast<long>(syscall(SYS_gettid));
  waiters_[ticket] = Waiter{call, object, caller, false, &ready, wakeAtPs};
  using Clock = std::chrono::steady_clock;
  uint64_t seenProgress = progress_;
  Clock::time_point quietSince = Clock::now();
  // Since when every thread has been seen stuck, without progress in between (deadlockSettleSeconds).
  bool allStuck = false;
  Clock::time_point stuckSince;
  // Polling is what lets a waiter notice that the others are stuck too; the period only bounds
  // how soon a deadlock is reported.
  constexpr auto kPoll = std::chrono::milliseconds(20);
  Status result = Status::kOk;
  for (;;) {
    if (waiters_[ticket].givenUp) {
      result = Status::kHang;
      break;
    }
    if (ready()) break;
    if (progress_ != seenProgress) {
      seenProgress = progress_;
      quietSince = Clock::now();
      allStuck = false;
    }
    // Only waiters that cannot go on count: one whose team was just completed (by the thread that
    // now waits here, say) has not run yet but is no longer blocked, and counting it would report
    // a deadlock that is none and fail it too (multicast.Blocking.AWokenWaiterIsNotCountedAsStuck).
    if (static_cast<int>(stuckWaiters()) < threadCount_()) {
      allStuck = false;
    } else if (!allStuck) {
      allStuck = true;
      stuckSince = Clock::now();
    }
    if (allStuck && Clock::now() - stuckSince >= std::chrono::duration<double>(policy_.deadlockSettleSeconds)) {
      if (advanceToDeadline()) continue;  // a timed block ends: not a deadlock after all
      giveUpAll(caller.pid == 0 ? "deadlock: every thread of this process is blocked in the driver, so nothing can add the missing devices"
                                : "deadlock: every thread of every attached process is blocked in the driver, so nothing can add the missing devices",
                describe);
      continue;
    }
    if (Clock::now() - quietSince >= std::chrono::duration<double>(policy_.graceSeconds)) {
      if (advanceToDeadline()) continue;
      char verdict[160];
      std::snprintf(verdict, sizeof verdict, "suspected hang: the node made no progress for %g s while calls waited for teams (MCSIM_HANG_GRACE_S)", policy_.graceSeconds);
      giveUpAll(verdict, describe);
      continue;
    }
    cv_.wait_for(lock, kPoll);
  }
  waiters_.erase(ticket);
  return result;
}

void TeamWaiter::abandon(int pid, const std::string& who, const std::vector<uint64_t>& held) {
  for (auto& [ticket, w] : waiters_) {
    if (w.caller.pid == pid) w.givenUp = true;
  }
  if (!held.empty()) {
    if (departures_.size() == kMaxDepartures) departures_.pop_front();
    departures_.push_back({who, held});
  }
  cv_.notify_all();
}

void TeamWaiter::progress() {
  ++progress_;
  cv_.notify_all();
}

bool TeamWaiter::advanceToDeadline() {
  uint64_t earliest = kNoDeadline;
  for (const auto& [ticket, w] : waiters_) {
    if (w.stuck() && w.wakeAtPs < earliest) earliest = w.wakeAtPs;
  }
  if (earliest == kNoDeadline) return false;
  model::Engine& engine = engine_;
  const uint64_t now = engine.nowPs();
  // A stuck waiter's deadline is still ahead (its ready() holds from the deadline on); were it
  // not, advancing would wake nobody and the loop would spin, so that counts as no deadline.
  if (earliest <= now) return false;
  engine.run([d = earliest - now] { return d; });
  progress();
  return true;
}

size_t TeamWaiter::stuckWaiters() const {
  size_t n = 0;
  for (const auto& [ticket, w] : waiters_) n += w.stuck() ? 1 : 0;
  return n;
}

void TeamWaiter::giveUpAll(const char* verdict, const std::function<std::string(uint64_t)>& describe) {
  // Waiters that can go on are left to do so; the report and the failure are for the stuck ones.
  std::vector<uint64_t> stuck;
  for (const auto& [ticket, w] : waiters_) {
    if (w.stuck()) stuck.push_back(ticket);
  }
  std::string report = std::string("mcsim: ") + verdict + "\n";
  std::set<uint64_t> objects;
  for (uint64_t t : stuck) objects.insert(waiters_.at(t).object);
  for (uint64_t o : objects) {
    report += "  " + describe(o) + "\n";
    for (const Departure& d : departures_) {
      if (std::binary_search(d.held.begin(), d.held.end(), o)) {
        report += "    left the node holding a handle on it: process " + d.who + "\n";
      }
    }
  }
  for (uint64_t t : stuck) {
    const Waiter& w = waiters_.at(t);
    report += "  waiting: ";
    if (w.caller.pid != 0) {
      report += "process " + std::to_string(w.caller.pid) +
                (w.caller.rank >= 0 ? " (rank " + std::to_string(w.caller.rank) + ")" : std::string()) + ", ";
    }
    report += "thread " + std::to_string(w.caller.thread) + " in " + w.call + "\n";
  }
  report += policy_.abortOnHang ? "mcsim: aborting (MCSIM_ON_HANG=abort)\n"
                                : "mcsim: failing the waiting calls (MCSIM_HANG_RESULT; MCSIM_ON_HANG=abort aborts instead)\n";
  lastReport_ = report;
  std::fputs(report.c_str(), stderr);
  std::fflush(stderr);
  if (policy_.abortOnHang) model::abortOnHang();
  for (uint64_t t : stuck) waiters_.at(t).givenUp = true;
  cv_.notify_all();
}

}  // namespace mcsim::fabric
