// HBM: a GPU's stacks of high-bandwidth memory. Addresses interleave across the stacks in
// `interleaveBytes` blocks, so a large access spreads evenly over all of them and a small one
// touches only some; each stack is a bandwidth server (its share of the device's sustained
// bandwidth), and every access pays the access latency once.
#pragma once

#include <cstdint>
#include <vector>

#include "model/bandwidth_server.h"

namespace mcsim::model {

struct HbmSpec {
  int stacks = 1;
  int channelsPerStack = 1;      // descriptive: a stack's channels work as one server here
  double bytesPerSecond = 0;     // sustained, all stacks together (peak times efficiency)
  uint64_t latencyPs = 0;
  uint64_t interleaveBytes = 4096;
};

class Hbm {
 public:
  static constexpr int kMaxStacks = 64;  // what a preset may ask for (fabric/preset.cpp)
  Hbm() = default;
  // `horizon`: the simulation's (bandwidth_server.h), for every stack.
  Hbm(const HbmSpec& spec, const std::vector<TimelineTrack>& stackTracks, const Horizon* horizon = nullptr);
  // Moves `bytes` at device-physical address `addr` (reads and writes share the stacks);
  // returns when the last byte is through.
  uint64_t access(uint64_t arrivePs, uint64_t addr, uint64_t bytes, const char* what);
  const std::vector<BandwidthServer>& stacks() const { return stacks_; }
  const HbmSpec& spec() const { return spec_; }

 private:
  HbmSpec spec_;
  std::vector<BandwidthServer> stacks_;
};

}  // namespace mcsim::model
