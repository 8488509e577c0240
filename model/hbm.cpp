#include "model/hbm.h"

#include <algorithm>
#include <array>

namespace mcsim::model {

Hbm::Hbm(const HbmSpec& spec, const std::vector<TimelineTrack>& stackTracks, const Horizon* horizon) : spec_(spec) {
  const double perStack = spec.bytesPerSecond / spec.stacks;
  for (int i = 0; i < spec.stacks; ++i) {
    stacks_.emplace_back(perStack, i < static_cast<int>(stackTracks.size()) ? stackTracks[static_cast<size_t>(i)]
                                                                              : TimelineTrack(),
                         horizon);
  }
}

uint64_t Hbm::access(uint64_t arrivePs, uint64_t addr, uint64_t bytes, const char* what) {
  if (bytes == 0) return arrivePs;
  const uint64_t n = stacks_.size();
  const uint64_t block = spec_.interleaveBytes;
  // Bytes per stack: any run of n blocks' worth of bytes, aligned or not, covers every stack by
  // one block, so whole rounds go to all stacks alike; what is left (under a round) goes block by
  // block to the stacks its addresses select. A fixed array: this runs for every chunk.
  std::array<uint64_t, kMaxStacks> share{};
  const uint64_t round = block * n;
  const uint64_t rounds = bytes / round;
  for (size_t i = 0; i < n; ++i) share[i] = rounds * block;
  for (uint64_t a = addr + rounds * round, left = bytes - rounds * round; left > 0;) {
    const uint64_t inBlock = std::min(left, block - a % block);
    share[(a / block) % n] += inBlock;
    a += inBlock;
    left -= inBlock;
  }
  uint64_t end = arrivePs;
  for (size_t i = 0; i < n; ++i) {
    if (share[i] > 0) end = std::max(end, stacks_[i].serve(arrivePs, share[i], what));
  }
  return end + spec_.latencyPs;
}

}  // namespace mcsim::model
