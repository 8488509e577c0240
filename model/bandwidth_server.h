// A resource that moves bytes at a fixed rate: an HBM stack, one direction of a GPU's NVLink
// links to one switch, a switch crossbar, one direction of a PCIe link.
//
// A transfer is offered when it is timed (when its chunk leaves its copy engine) together with
// the time it will reach this resource, which may lie ahead: a chunk reaches the destination's
// memory only after crossing the fabric. So the resource keeps a calendar of the intervals it is
// already promised for, and a transfer takes the free time from its arrival on, filling gaps
// between earlier promises, as the bytes of a real link or stack would interleave. (A single
// "busy until" would make a chunk offered now wait behind a promise for later, and leave the
// resource idle meanwhile.) Intervals before the simulation's horizon (the current simulated
// time: nothing can arrive earlier) are dropped. Pure arithmetic on the simulation thread.
//
// The horizon belongs to the simulation the resource is part of (a node's: each node has its own
// clock), so a resource reads it from the Horizon its node owns rather than from anything
// process-wide.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "model/timeline.h"

namespace mcsim::model {

// A simulation's horizon: no transfer arrives before it. Its owner (a node's model) moves it on
// with simulated time, on the simulation thread.
struct Horizon {
  uint64_t ps = 0;
};

class BandwidthServer {
 public:
  BandwidthServer() = default;
  // `bytesPerSecond` is the rate the resource sustains (peak times efficiency). `horizon` is the
  // simulation's, which must outlive the server; none: a horizon that stays at 0.
  BandwidthServer(double bytesPerSecond, TimelineTrack track, const Horizon* horizon = nullptr);

  // Serves `bytes` that arrive at `arrivePs`; returns when the last byte has been served.
  uint64_t serve(uint64_t arrivePs, uint64_t bytes, const char* what = nullptr);
  uint64_t bytesServed() const { return bytes_; }

 private:
  using Interval = std::pair<uint64_t, uint64_t>;  // [start, end)
  void book(uint64_t start, uint64_t end, const char* what);
  // The index of the first promise that could overlap [t, ...): the one holding t, else the next.
  size_t firstEndingAfter(uint64_t t) const;
  void forgetBeforeHorizon();
  double psPerByte_ = 0;
  // The promises, sorted, disjoint and not touching, from busy_[head_] on (those before head_ lie
  // before the horizon and are dropped in batches). A sorted vector rather than a tree: new
  // promises land at or near the end, and a busy link holds thousands of them, so searching and
  // inserting in contiguous memory is several times faster than chasing tree nodes.
  std::vector<Interval> busy_;
  size_t head_ = 0;
  uint64_t bytes_ = 0;
  TimelineTrack track_;
  static constexpr Horizon kNoHorizon{};
  const Horizon* horizon_ = &kNoHorizon;
};

}  // namespace mcsim::model
