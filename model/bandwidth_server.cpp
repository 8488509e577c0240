#include "model/bandwidth_server.h"

#include <algorithm>
#include <cmath>
#include <iterator>

namespace mcsim::model {

BandwidthServer::BandwidthServer(double bytesPerSecond, TimelineTrack track, const Horizon* horizon)
    : psPerByte_(bytesPerSecond > 0 ? 1e12 / bytesPerSecond : 0),
      track_(track),
      horizon_(horizon != nullptr ? horizon : &kNoHorizon) {}

void BandwidthServer::book(uint64_t start, uint64_t end, const char* what) {
  if (end <= start) return;
  if (track_.valid()) track_.span(start, end, what);
  // Where [start, end) goes, merged with neighbours that touch it so the calendar stays short.
  auto first = busy_.begin() + static_cast<std::ptrdiff_t>(head_);
  auto next = std::lower_bound(first, busy_.end(), start, [](const Interval& i, uint64_t v) { return i.first < v; });
  const bool joinsPrev = next != first && std::prev(next)->second == start;
  const bool joinsNext = next != busy_.end() && next->first == end;
  if (joinsPrev && joinsNext) {
    std::prev(next)->second = next->second;
    busy_.erase(next);
  } else if (joinsPrev) {
    std::prev(next)->second = end;
  } else if (joinsNext) {
    next->first = start;
  } else {
    busy_.insert(next, Interval{start, end});
  }
}

size_t BandwidthServer::firstEndingAfter(uint64_t t) const {
  auto first = busy_.begin() + static_cast<std::ptrdiff_t>(head_);
  auto it = std::upper_bound(first, busy_.end(), t, [](uint64_t v, const Interval& i) { return v < i.first; });
  if (it != first && std::prev(it)->second > t) --it;
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
      // Booking may merge with the promise at i; look it up again afterwards.
      book(start, t, what);
      i = firstEndingAfter(start);
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
