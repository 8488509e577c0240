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
  // A resource that stands for several identical ones (the switches of one plane: node_model.h),
  // each with its own timeline track showing the same activity.
  BandwidthServer(double bytesPerSecond, const std::vector<TimelineTrack>& tracks, const Horizon* horizon);

  // Serves `bytes` that arrive at `arrivePs`; returns when the last byte has been served.
  uint64_t serve(uint64_t arrivePs, uint64_t bytes, const char* what = nullptr);
  uint64_t bytesServed() const { return bytes_; }

 private:
  using Interval = std::pair<uint64_t, uint64_t>;  // [start, end)
  // Books [start, end) as the promise before index i (every promise before i ends by `start`,
  // the one at i starts after it), merged with the neighbours it touches; returns the index of
  // the promise that holds it.
  size_t book(size_t i, uint64_t start, uint64_t end, const char* what);
  // Inserts v at index i, or removes the promise at i, moving the shorter side; each returns the
  // index of v, or of the promise that was before i.
  size_t insertAt(size_t i, Interval v);
  size_t removeAt(size_t i);
  // The index of the first promise that could overlap [t, ...): the one holding t, else the next.
  size_t firstEndingAfter(uint64_t t) const;
  void forgetBeforeHorizon();
  double psPerByte_ = 0;
  // The promises, sorted, disjoint and not touching, from busy_[head_] on (the slots before head_
  // are promises before the horizon, dropped in batches, and room for inserting at the front).
  // A sorted vector rather than a tree: new promises land near the horizon or near the end, an
  // insertion moves whichever side is shorter, and a busy link holds thousands of them, so
  // searching and inserting in contiguous memory is several times faster than chasing tree nodes.
  std::vector<Interval> busy_;
  size_t head_ = 0;
  uint64_t bytes_ = 0;
  std::vector<TimelineTrack> tracks_;  // only valid ones: empty when no timeline is written
  static constexpr Horizon kNoHorizon{};
  const Horizon* horizon_ = &kNoHorizon;
};

}  // namespace mcsim::model
