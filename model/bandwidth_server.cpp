#include "model/bandwidth_server.h"

#include <algorithm>
#include <cmath>
#include <iterator>

namespace mcsim::model {

BandwidthServer::BandwidthServer(double bytesPerSecond, TimelineTrack track)
    : psPerByte_(bytesPerSecond > 0 ? 1e12 / bytesPerSecond : 0), track_(track) {}

void BandwidthServer::book(uint64_t start, uint64_t end, const char* what) {
  if (end <= start) return;
  if (track_.valid()) track_.span(start, end, what);
  // Merge with neighbours that touch, so the calendar stays short.
  auto next = busy_.lower_bound(start);
  if (next != busy_.begin()) {
    auto prev = std::prev(next);
    if (prev->second == start) {
      start = prev->first;
      busy_.erase(prev);
    }
  }
  if (next != busy_.end() && next->first == end) {
    end = next->second;
    busy_.erase(next);
  }
  busy_[start] = end;
}

std::map<uint64_t, uint64_t>::iterator BandwidthServer::firstEndingAfter(uint64_t t) {
  auto it = busy_.upper_bound(t);
  if (it != busy_.begin() && std::prev(it)->second > t) --it;
  return it;
}

uint64_t BandwidthServer::serve(uint64_t arrivePs, uint64_t bytes, const char* what) {
  // Forget what lies wholly before the horizon.
  while (!busy_.empty() && busy_.begin()->second <= horizonPs_) busy_.erase(busy_.begin());
  auto left = static_cast<uint64_t>(std::llround(static_cast<double>(bytes) * psPerByte_));
  bytes_ += bytes;
  uint64_t t = arrivePs;
  if (left == 0) return t;
  auto it = firstEndingAfter(t);
  while (left > 0) {
    if (it == busy_.end() || it->first > t) {
      const uint64_t gapEnd = it == busy_.end() ? UINT64_MAX : it->first;
      const uint64_t take = std::min(left, gapEnd - t);
      const uint64_t start = t;
      t += take;
      left -= take;
      // Booking may merge with the promise at `it`; look it up again afterwards.
      book(start, t, what);
      it = firstEndingAfter(start);
      if (left == 0) break;
    }
    // Inside a promise: skip to its end.
    if (it != busy_.end() && it->first <= t) {
      t = std::max(t, it->second);
      ++it;
    }
  }
  return t;
}

}  // namespace mcsim::model
