#include "model/hbm.h"

#include <algorithm>

namespace mcsim::model {

Hbm::Hbm(const HbmSpec& spec, const std::vector<TimelineTrack>& stackTracks) : spec_(spec) {
  const double perStack = spec.bytesPerSecond / spec.stacks;
  for (int i = 0; i < spec.stacks; ++i) {
    stacks_.emplace_back(perStack, i < static_cast<int>(stackTracks.size()) ? stackTracks[static_cast<size_t>(i)]
                                                                              : TimelineTrack());
  }
}

uint64_t Hbm::access(uint64_t arrivePs, uint64_t addr, uint64_t bytes, const char* what) {
  if (bytes == 0) return arrivePs;
  const uint64_t n = stacks_.size();
  const uint64_t block = spec_.interleaveBytes;
  // Bytes per stack: whole rounds of the interleave cover every stack alike; the partial blocks at
  // either end go to the stacks their addresses select.
  std::vector<uint64_t> share(n, 0);
  uint64_t a = addr, left = bytes;
  const uint64_t round = block * n;
  // Leading partial blocks, one stack at a time, until the address is at a round boundary.
  while (left > 0 && a % round != 0) {
    const uint64_t inBlock = std::min(left, block - a % block);
    share[(a / block) % n] += inBlock;
    a += inBlock;
    left -= inBlock;
  }
  const uint64_t rounds = left / round;
  for (uint64_t& s : share) s += rounds * block;
  a += rounds * round;
  left -= rounds * round;
  while (left > 0) {
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
