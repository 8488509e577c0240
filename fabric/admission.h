// The order in which a shared node takes requests in, across the processes attached to it.
//
// A shared node serves every attached process on threads of its own, and what one request does
// can depend on the requests taken in before it: a fault plan's counts, free memory, a team's
// members, simulated time. So that a run of several processes can be replayed, the node numbers
// each request when it enters the node (under the node's lock: the number is the order in which
// requests really changed or read the node) and tells the caller its number, how many traced
// requests had finished by then, and how many runs the simulation had started (model/engine.h:
// the request is pinned at that count from its admission on, so that what it reads of the clock
// and of device work, and where its own work starts, is fixed by it); traces keep all three
// (docs/traces.md). A node replaying a run follows the recorded schedule: a request tagged with
// its recorded number waits for its turn (the number before it, and as many finished requests as
// there were when it was recorded) and is pinned at its recorded count; the simulation starts no
// run past the next request's count.
//
// Requests outside a recorded call (a process's exit, a trace's own bookkeeping) are numbered too
// but carry no tag and are not scheduled; only traced requests count as finished, so that the
// counts of a replay, whose untraced requests may fall elsewhere, match the recording's.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "model/ordered_mutex.h"

namespace mcsim::model {
class Engine;
}

namespace mcsim::fabric {

struct Admission {
  uint64_t number = 0;          // 1, 2, ... in the order the node took requests in
  uint64_t finishedBefore = 0;  // traced requests that had finished when it was taken in
  uint64_t simRuns = 0;         // runs of the node's simulation started when it was taken in
};

// The request the current thread serves (a shared node's server thread sets it for each one).
struct Request {
  uint64_t tag = 0;      // replay: the recorded admission number it is to take (0: none)
  bool traced = false;   // made inside a recorded call: counts towards finishedBefore
  Admission admission;   // number 0 until it is taken in
  bool admitted() const { return admission.number != 0; }
};

// Makes `r` the current thread's request for the scope's life.
class RequestScope {
 public:
  explicit RequestScope(Request* r);
  ~RequestScope();
  RequestScope(const RequestScope&) = delete;
  RequestScope& operator=(const RequestScope&) = delete;

 private:
  Request* saved_;
};
Request* currentRequest();

class AdmissionOrder {
 public:
  // The order of the node whose simulation `engine` is (it pins requests there).
  explicit AdmissionOrder(model::Engine& engine) : engine_(engine) {}

  // Replaying: the recorded admissions to follow, by number (no number twice). A tagged request
  // that waits `patienceSeconds` without any request being taken in or finishing meanwhile ends
  // the following (the replay has diverged: the number before it never came); what happened is
  // then in divergence().
  void follow(std::vector<Admission> schedule, double patienceSeconds);

  // The rest is called with the node's lock held (`lock`, or `mu` below it).
  // Takes the current thread's request in, if it has one that was not: at once when recording;
  // when following, once its turn has come. The thread is then pinned to the simulation's runs
  // (model::Engine::pin) until released: the node releases it when the request's lock scope ends,
  // or its wait begins.
  void admit(OrderedLock& lock);
  // The current thread's request is done (admitting it first, if nothing did).
  void finish(OrderedLock& lock);
  // Recorded numbers that a replayed call did not use: their turns pass.
  void skip(const std::vector<uint64_t>& numbers);
  // Why the node stopped following the schedule ("" while it follows, or never did).
  std::string divergence() const { return divergence_; }

 private:
  // The schedule's index of `number`, or npos.
  size_t indexOf(uint64_t number) const;
  void taken(size_t index);  // marks it and moves next_ past what has been taken
  void limitSimulation() const;  // the simulation may run up to the next entry's recorded count
  bool turnOf(size_t index) const;  // the entry's turn has come

  model::Engine& engine_;
  uint64_t counter_ = 0;          // numbers given (recording), or beyond the schedule (following)
  uint64_t finishedTraced_ = 0;
  bool following_ = false;
  std::vector<Admission> schedule_;
  std::vector<bool> done_;        // per schedule entry: taken in or skipped
  size_t next_ = 0;               // first entry not done
  double patienceSeconds_ = 60;
  std::chrono::steady_clock::time_point lastProgress_;
  OrderedCondition turn_;
  std::string divergence_;
};

}  // namespace mcsim::fabric
