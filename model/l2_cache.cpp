#include "model/l2_cache.h"

#include <algorithm>

namespace mcsim::model {

uint32_t& L2Cache::indexOf(uint64_t alloc, uint64_t line) {
  if (last_ == nullptr || lastAlloc_ != alloc) {
    last_ = &index_[alloc];
    lastAlloc_ = alloc;
  }
  if (line >= last_->size()) last_->resize(line + 1, kNone);
  return (*last_)[line];
}

void L2Cache::unlink(uint32_t i) {
  Line& l = lines_[i];
  if (l.newer != kNone) lines_[l.newer].older = l.older;
  else front_ = l.older;
  if (l.older != kNone) lines_[l.older].newer = l.newer;
  else back_ = l.newer;
}

void L2Cache::pushFront(uint32_t i) {
  Line& l = lines_[i];
  l.newer = kNone;
  l.older = front_;
  if (front_ != kNone) lines_[front_].newer = i;
  front_ = i;
  if (back_ == kNone) back_ = i;
}

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
    uint32_t i = indexOf(alloc, line);
    if (i == kNone) {
      if (inUse_ >= capacityLines_) {
        i = back_;
        const Line& victim = lines_[i];
        out.writebackBytes += static_cast<uint64_t>(__builtin_popcountll(victim.dirty)) * part;
        // The victim's allocation may be another one: look its slot up without moving last_.
        index_.find(victim.alloc)->second[victim.line] = kNone;
        unlink(i);
        --inUse_;
      } else if (!free_.empty()) {
        i = free_.back();
        free_.pop_back();
      } else {
        i = static_cast<uint32_t>(lines_.size());
        lines_.push_back(Line{});
      }
      lines_[i].alloc = alloc;
      lines_[i].line = line;
      lines_[i].held = 0;
      lines_[i].dirty = 0;
      // Looked up again: the victim's removal above may have been from this allocation's array,
      // but never resized it, so the slot found first is still the one.
      indexOf(alloc, line) = i;
      ++inUse_;
      pushFront(i);
    } else if (front_ != i) {
      unlink(i);
      pushFront(i);
    }
    Line& l = lines_[i];
    // The parts [pos, lineEnd) reaches, as one mask: a write lands in the L2; a read of a part
    // the line holds is a hit, of one it does not, a miss (read from HBM, then held). Only the
    // first and last parts can be reached partly; the ones between count whole.
    const uint64_t base = line * lb;
    const uint64_t first = (pos - base) / part;
    const uint64_t last = (lineEnd - 1 - base) / part;
    const uint64_t mask = (last == 63 ? ~uint64_t{0} : (uint64_t{1} << (last + 1)) - 1) & ~((uint64_t{1} << first) - 1);
    if (write) {
      out.hitBytes += lineEnd - pos;
    } else {
      const uint64_t firstBit = uint64_t{1} << first;
      const uint64_t lastBit = uint64_t{1} << last;
      uint64_t hit = 0;
      if (first == last) {
        hit = (l.held & firstBit) != 0 ? lineEnd - pos : 0;
      } else {
        if ((l.held & firstBit) != 0) hit += base + (first + 1) * part - pos;
        if ((l.held & lastBit) != 0) hit += lineEnd - (base + last * part);
        const uint64_t middle = mask & ~firstBit & ~lastBit & l.held;
        hit += static_cast<uint64_t>(__builtin_popcountll(middle)) * part;
      }
      out.hitBytes += hit;
      out.missBytes += (lineEnd - pos) - hit;
    }
    l.held |= mask;
    if (write) l.dirty |= mask;
    pos = lineEnd;
  }
  return out;
}

void L2Cache::drop(uint64_t alloc) {
  auto it = index_.find(alloc);
  if (it == index_.end()) return;
  for (uint32_t i : it->second) {
    if (i == kNone) continue;
    unlink(i);
    free_.push_back(i);
    --inUse_;
  }
  index_.erase(it);
  if (lastAlloc_ == alloc) last_ = nullptr;
}

}  // namespace mcsim::model
