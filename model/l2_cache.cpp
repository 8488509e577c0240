#include "model/l2_cache.h"

#include <algorithm>

namespace mcsim::model {

L2Cache::Outcome L2Cache::access(uint64_t alloc, uint64_t offset, uint64_t bytes, bool write) {
  Outcome out;
  if (capacityLines_ == 0 || bytes == 0) {
    (write ? out.writebackBytes : out.missBytes) = bytes;
    return out;
  }
  const uint64_t lb = spec_.lineBytes;
  const uint64_t part = std::max<uint64_t>(lb / 64, 1);
  uint64_t pos = offset;
  const uint64_t end = offset + bytes;
  while (pos < end) {
    const uint64_t line = pos / lb;
    const uint64_t lineEnd = std::min(end, (line + 1) * lb);
    const uint64_t k = key(alloc, line);
    auto it = index_.find(k);
    if (it == index_.end()) {
      if (lru_.size() >= capacityLines_) {
        const Line& victim = lru_.back();
        out.writebackBytes += static_cast<uint64_t>(__builtin_popcountll(victim.dirty)) * part;
        index_.erase(victim.key);
        lru_.pop_back();
      }
      lru_.push_front(Line{k, 0, 0});
      it = index_.emplace(k, lru_.begin()).first;
    } else {
      lru_.splice(lru_.begin(), lru_, it->second);
    }
    Line& l = *it->second;
    // Part by part: a write lands in the L2; a read of a part the line holds is a hit, of one it
    // does not, a miss (read from HBM, then held).
    for (uint64_t p = pos; p < lineEnd;) {
      const uint64_t i = (p - line * lb) / part;
      const uint64_t n = std::min(lineEnd, line * lb + (i + 1) * part) - p;
      const uint64_t bit = uint64_t{1} << i;
      if (write || (l.held & bit) != 0) out.hitBytes += n;
      else out.missBytes += n;
      l.held |= bit;
      if (write) l.dirty |= bit;
      p += n;
    }
    pos = lineEnd;
  }
  return out;
}

void L2Cache::drop(uint64_t alloc) {
  for (auto it = lru_.begin(); it != lru_.end();) {
    if ((it->key >> 32) == alloc) {
      index_.erase(it->key);
      it = lru_.erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace mcsim::model
