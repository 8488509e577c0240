#include "fabric/admission.h"

#include <algorithm>

#include "model/engine.h"

namespace mcsim::fabric {

namespace {

thread_local Request* tRequest = nullptr;
constexpr size_t kNone = static_cast<size_t>(-1);

}  // namespace

RequestScope::RequestScope(Request* r) : saved_(tRequest) { tRequest = r; }
RequestScope::~RequestScope() { tRequest = saved_; }
Request* currentRequest() { return tRequest; }

void AdmissionOrder::follow(std::vector<Admission> schedule, double patienceSeconds) {
  std::sort(schedule.begin(), schedule.end(), [](const Admission& a, const Admission& b) { return a.number < b.number; });
  schedule_ = std::move(schedule);
  done_.assign(schedule_.size(), false);
  next_ = 0;
  // Requests the schedule does not know are numbered past it, so that no number is given twice.
  counter_ = schedule_.empty() ? 0 : schedule_.back().number;
  patienceSeconds_ = patienceSeconds;
  lastProgress_ = std::chrono::steady_clock::now();
  following_ = !schedule_.empty();
  limitSimulation();
}

void AdmissionOrder::limitSimulation() const {
  const bool limited = following_ && next_ < schedule_.size();
  engine_.limitRuns(limited ? schedule_[next_].simRuns : UINT64_MAX);
}

size_t AdmissionOrder::indexOf(uint64_t number) const {
  auto it = std::lower_bound(schedule_.begin(), schedule_.end(), number,
                             [](const Admission& a, uint64_t n) { return a.number < n; });
  return (it != schedule_.end() && it->number == number) ? static_cast<size_t>(it - schedule_.begin()) : kNone;
}

void AdmissionOrder::taken(size_t index) {
  done_[index] = true;
  while (next_ < done_.size() && done_[next_]) ++next_;
  lastProgress_ = std::chrono::steady_clock::now();
  limitSimulation();
  turn_.notify_all();
}

bool AdmissionOrder::turnOf(size_t index) const {
  return index == next_ && finishedTraced_ >= schedule_[index].finishedBefore;
}

void AdmissionOrder::admit(OrderedLock& lock) {
  Request* r = tRequest;
  if (r == nullptr || r->admitted()) return;
  if (following_ && r->tag != 0) {
    const size_t i = indexOf(r->tag);
    if (i != kNone) {
      while (following_ && !done_[i] && !turnOf(i)) {
        if (turn_.wait_for(lock, std::chrono::milliseconds(100)) != std::cv_status::timeout) continue;
        const double quiet =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - lastProgress_).count();
        if (quiet < patienceSeconds_ || turnOf(i)) continue;
        // Nothing moved for the whole patience: the request the schedule wants next is not coming.
        const Admission& want = schedule_[next_];
        divergence_ = "admission " + std::to_string(r->tag) + " waited " + std::to_string(static_cast<int>(quiet)) +
                      " s for admission " + std::to_string(want.number) +
                      (finishedTraced_ < want.finishedBefore
                           ? " (which waits for " + std::to_string(want.finishedBefore) + " finished requests; " +
                                 std::to_string(finishedTraced_) + " have finished)"
                           : ", which never came") +
                      "; the rest of the run is taken in as it comes";
        following_ = false;
        limitSimulation();
        turn_.notify_all();
      }
      if (!done_[i]) {
        // Its turn: pinned at its recorded run count (the limit is this entry's until it is in;
        // what it posts and reads then waits for the simulation to get there).
        const uint64_t runs = engine_.pin(schedule_[i].simRuns);
        r->admission = {r->tag, finishedTraced_, runs};
        taken(i);
        return;
      }
    }
  }
  const uint64_t runs = engine_.pin();
  r->admission = {++counter_, finishedTraced_, runs};
  if (following_) {
    lastProgress_ = std::chrono::steady_clock::now();
    turn_.notify_all();
  }
}

void AdmissionOrder::finish(OrderedLock& lock) {
  Request* r = tRequest;
  if (r == nullptr) return;
  admit(lock);
  if (r->traced) ++finishedTraced_;
  if (following_) {
    lastProgress_ = std::chrono::steady_clock::now();
    turn_.notify_all();
  }
}

void AdmissionOrder::skip(const std::vector<uint64_t>& numbers) {
  for (uint64_t n : numbers) {
    const size_t i = indexOf(n);
    if (i != kNone && !done_[i]) taken(i);
  }
}

}  // namespace mcsim::fabric
