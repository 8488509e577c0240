#include "model/bandwidth_server.h"

#include <algorithm>
#include <cmath>
#include <iterator>

namespace mcsim::model {

BandwidthServer::BandwidthServer(double bytesPerSecond, TimelineTrack track, const Horizon* horizon)
    : BandwidthServer(bytesPerSecond, std::vector<TimelineTrack>{track}, horizon) {}

BandwidthServer::BandwidthServer(double bytesPerSecond, const std::vector<TimelineTrack>& tracks,
                                 const Horizon* horizon)
    : psPerByte_(bytesPerSecond > 0 ? 1e12 / bytesPerSecond : 0),
      horizon_(horizon != nullptr ? horizon : &kNoHorizon) {
  for (const TimelineTrack& t : tracks) {
    if (t.valid()) tracks_.push_back(t);
  }
}

size_t BandwidthServer::insertAt(size_t i, Interval v) {
  // Whichever side of the insertion point is shorter moves: bookings land both just after the
  // horizon (a read asked for now) and far ahead (a store arriving after the fabric), so moving
  // only the later promises, as a plain vector insert does, moves the whole calendar for the
  // first kind. The slots before head_ are the room the earlier side moves into.
  if (i - head_ < busy_.size() - i) {
    if (head_ == 0) {
      const size_t room = std::max<size_t>(16, busy_.size() / 2);
      busy_.insert(busy_.begin(), room, Interval{0, 0});
      head_ = room;
      i += room;
    }
    std::move(busy_.begin() + static_cast<std::ptrdiff_t>(head_), busy_.begin() + static_cast<std::ptrdiff_t>(i),
              busy_.begin() + static_cast<std::ptrdiff_t>(head_ - 1));
    --head_;
    busy_[i - 1] = v;
    return i - 1;
  }
  busy_.insert(busy_.begin() + static_cast<std::ptrdiff_t>(i), v);
  return i;
}

size_t BandwidthServer::removeAt(size_t i) {
  if (i - head_ < busy_.size() - i) {
    std::move_backward(busy_.begin() + static_cast<std::ptrdiff_t>(head_), busy_.begin() + static_cast<std::ptrdiff_t>(i),
                       busy_.begin() + static_cast<std::ptrdiff_t>(i + 1));
    ++head_;
    return i;
  }
  busy_.erase(busy_.begin() + static_cast<std::ptrdiff_t>(i));
  return i - 1;
}

size_t BandwidthServer::book(size_t i, uint64_t start, uint64_t end, const char* what) {
  for (const TimelineTrack& t : tracks_) t.span(start, end, what);
  // Merged with neighbours that touch it, so the calendar stays short.
  const bool joinsPrev = i > head_ && busy_[i - 1].second == start;
  const bool joinsNext = i < busy_.size() && busy_[i].first == end;
  if (joinsPrev && joinsNext) {
    busy_[i - 1].second = busy_[i].second;
    return removeAt(i);
  }
  if (joinsPrev) {
    busy_[i - 1].second = end;
    return i - 1;
  }
  if (joinsNext) {
    busy_[i].first = start;
    return i;
  }
  return insertAt(i, Interval{start, end});
}

size_t BandwidthServer::firstEndingAfter(uint64_t t) const {
  // The first promise starting after t, searched from both ends at once in growing steps: most
  // arrivals lie just past the horizon or past the last promise, so the search costs the
  // logarithm of the distance from the nearer end rather than of the calendar's length.
  size_t lo = head_, hi = busy_.size();  // the answer lies in [lo, hi]
  for (size_t step = 1; lo < hi; step *= 2) {
    const size_t front = std::min(hi, lo + step) - 1;  // busy_[front].first > t: answer <= front
    if (busy_[front].first > t) {
      hi = front;
      break;
    }
    lo = front + 1;
    if (lo >= hi) break;
    const size_t back = hi - std::min(hi - lo, step);  // busy_[back].first <= t: answer > back
    if (busy_[back].first <= t) {
      lo = back + 1;
      break;
    }
    hi = back;
  }
  auto it = std::upper_bound(busy_.begin() + static_cast<std::ptrdiff_t>(lo), busy_.begin() + static_cast<std::ptrdiff_t>(hi),
                             t, [](uint64_t v, const Interval& i) { return v < i.first; });
  if (it != busy_.begin() + static_cast<std::ptrdiff_t>(head_) && std::prev(it)->second > t) --it;
  return static_cast<size_t>(it - busy_.begin());
}

void BandwidthServer::forgetBeforeHorizon() {
  const uint64_t horizonPs = horizon_->ps;
  while (head_ < busy_.size() && busy_[head_].second <= horizonPs) ++head_;
  // Drop the forgotten front in batches, so that each promise is moved O(1) times.
  if (head_ > 64 && head_ * 2 > busy_.size()) {
    busy_.erase(busy_.begin(), busy_.begin() + static_cast<std::ptrdiff_t>(head_));
    head_ = 0;
  }
}

uint64_t BandwidthServer::serve(uint64_t arrivePs, uint64_t bytes, const char* what) {
  forgetBeforeHorizon();
  auto left = static_cast<uint64_t>(std::llround(static_cast<double>(bytes) * psPerByte_));
  bytes_ += bytes;
  uint64_t t = arrivePs;
  if (left == 0) return t;
  size_t i = firstEndingAfter(t);
  while (left > 0) {
    if (i == busy_.size() || busy_[i].first > t) {
      const uint64_t gapEnd = i == busy_.size() ? UINT64_MAX : busy_[i].first;
      const uint64_t take = std::min(left, gapEnd - t);
      const uint64_t start = t;
      t += take;
      left -= take;
      // Booking may merge with the promise at i; i is then the promise holding the booking.
      i = book(i, start, t, what);
      if (left == 0) break;
    }
    // Inside a promise: skip to its end.
    if (i != busy_.size() && busy_[i].first <= t) {
      t = std::max(t, busy_[i].second);
      ++i;
    }
  }
  return t;
}

}  // namespace mcsim::model
