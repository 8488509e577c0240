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
  uint64_t pos = offset;
  const uint64_t end = offset + bytes;
  while (pos < end) {
    const uint64_t line = pos / lb;
    const uint64_t n = std::min(end, (line + 1) * lb) - pos;
    const uint64_t k = key(alloc, line);
    auto it = index_.find(k);
    if (it != index_.end()) {
      out.hitBytes += n;
      it->second->dirty = it->second->dirty || write;
      lru_.splice(lru_.begin(), lru_, it->second);
    } else {
      if (write) out.hitBytes += n;  // written into the L2
      else out.missBytes += n;       // read from HBM, then kept
      if (lru_.size() >= capacityLines_) {
        const Line& victim = lru_.back();
        if (victim.dirty) out.writebackBytes += lb;
        index_.erase(victim.key);
        lru_.pop_back();
      }
      lru_.push_front(Line{k, write});
      index_[k] = lru_.begin();
    }
    pos += n;
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
