#include "model/address_space.h"

#include <algorithm>
#include <iterator>

namespace mcsim::model {

namespace {
bool isPow2(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }
uint64_t alignUp(uint64_t v, uint64_t a) { return (v + a - 1) & ~(a - 1); }
}  // namespace

AddressSpace::AddressSpace(uint64_t base, uint64_t size, int deviceCount)
    : base_(base), size_(size), deviceCount_(deviceCount) {}

namespace {
// The end of an entry of `m` (keyed by start, with .va/.size) overlapping [va, va+size), or 0.
template <typename Map>
uint64_t overlapEnd(const Map& m, uint64_t va, uint64_t size) {
  auto it = m.lower_bound(va + size);
  if (it == m.begin()) return 0;
  --it;
  return it->second.va + it->second.size > va ? it->second.va + it->second.size : 0;
}
}  // namespace

uint64_t AddressSpace::occupiedUntil(uint64_t va, uint64_t size) const {
  return std::max(overlapEnd(reservations_, va, size), overlapEnd(mappings_, va, size));
}

bool AddressSpace::rangeFree(uint64_t va, uint64_t size) const {
  if (va < base_ || size > size_ || va - base_ > size_ - size) return false;
  return occupiedUntil(va, size) == 0;
}

Status AddressSpace::reserve(uint64_t size, uint64_t alignment, uint64_t hint, bool internal,
                             uint64_t* va) {
  if (size == 0 || !isPow2(alignment)) return Status::kInvalidValue;
  uint64_t at = 0;
  if (hint != 0 && hint % alignment == 0 && rangeFree(hint, size)) {
    at = hint;
  } else {
    // Lowest-address first fit: deterministic, and it keeps the space compact. Each step jumps
    // past one occupied entry, so the walk is bounded by the number of entries.
    uint64_t cursor = alignUp(base_, alignment);
    for (;;) {
      if (cursor < base_ || size > size_ || cursor - base_ > size_ - size) return Status::kOutOfMemory;
      const uint64_t end = occupiedUntil(cursor, size);
      if (end == 0) break;
      cursor = alignUp(end, alignment);
    }
    at = cursor;
  }
  reservations_[at] = Reservation{at, size, internal};
  *va = at;
  return Status::kOk;
}

Status AddressSpace::free(uint64_t va, uint64_t size) {
  auto it = reservations_.find(va);
  if (it == reservations_.end() || it->second.size != size) return Status::kInvalidValue;
  auto m = mappings_.lower_bound(va);
  if (m != mappings_.end() && m->first < va + size) return Status::kInvalidValue;
  reservations_.erase(it);
  return Status::kOk;
}

const Reservation* AddressSpace::reservationContaining(uint64_t va) const {
  auto it = reservations_.upper_bound(va);
  if (it == reservations_.begin()) return nullptr;
  --it;
  return va < it->second.va + it->second.size ? &it->second : nullptr;
}

Status AddressSpace::map(uint64_t va, uint64_t size, AllocId alloc, uint64_t allocOffset,
                         const std::vector<int>& readWrite) {
  for (int d : readWrite) {
    if (d < 0 || d >= deviceCount_) return Status::kInvalidValue;
  }
  std::unique_lock<std::shared_mutex> writing(*mappingsMu_);
  if (reservationContaining(va) == nullptr || size == 0 || va + size < va || va + size > limit()) {
    return Status::kInvalidValue;
  }
  if (overlapEnd(mappings_, va, size) != 0) return Status::kAlreadyMapped;
  Mapping m;
  m.va = va;
  m.size = size;
  m.alloc = alloc;
  m.allocOffset = allocOffset;
  m.access.assign(static_cast<size_t>(deviceCount_), Access::kNone);
  for (int d : readWrite) m.access[static_cast<size_t>(d)] = Access::kReadWrite;
  mappings_.emplace(va, std::move(m));
  return Status::kOk;
}

Status AddressSpace::unmap(uint64_t va, uint64_t size, std::vector<Mapping>* removed) {
  std::unique_lock<std::shared_mutex> writing(*mappingsMu_);
  if (size == 0 || va + size < va) return Status::kInvalidValue;
  if (reservationContaining(va) == nullptr && mappingContaining(va) == nullptr) return Status::kInvalidValue;
  // Every mapping touching the range must lie wholly inside it.
  auto first = mappings_.lower_bound(va);
  if (first != mappings_.begin()) {
    auto prev = std::prev(first);
    if (prev->second.va + prev->second.size > va) return Status::kInvalidValue;
  }
  auto last = first;
  while (last != mappings_.end() && last->first < va + size) {
    if (last->second.va + last->second.size > va + size) return Status::kInvalidValue;
    ++last;
  }
  for (auto e = first; e != last;) {
    if (removed != nullptr) removed->push_back(e->second);
    e = mappings_.erase(e);
  }
  return Status::kOk;
}

std::vector<Mapping*> AddressSpace::tiling(uint64_t va, uint64_t size) {
  std::vector<Mapping*> out;
  uint64_t cursor = va;
  while (cursor < va + size) {
    auto it = mappings_.find(cursor);
    if (it == mappings_.end() || it->second.size > va + size - cursor) return {};
    out.push_back(&it->second);
    cursor += it->second.size;
  }
  return out;
}

Status AddressSpace::setAccess(uint64_t va, uint64_t size, int device, Access access) {
  std::unique_lock<std::shared_mutex> writing(*mappingsMu_);
  if (size == 0 || va + size < va || device < 0 || device >= deviceCount_) return Status::kInvalidValue;
  const std::vector<Mapping*> touched = tiling(va, size);
  if (touched.empty()) return Status::kInvalidValue;
  for (Mapping* m : touched) m->access[static_cast<size_t>(device)] = access;
  return Status::kOk;
}

const Mapping* AddressSpace::mappingContaining(uint64_t va) const {
  auto it = mappings_.upper_bound(va);
  if (it == mappings_.begin()) return nullptr;
  --it;
  return va < it->second.va + it->second.size ? &it->second : nullptr;
}

Status AddressSpace::resolve(uint64_t va, uint64_t len, int device, Access need,
                             std::vector<Segment>* out) const {
  uint64_t cursor = va;
  const uint64_t end = va + len;
  if (end < va) return Status::kIllegalAddress;
  if (device >= deviceCount_) return Status::kInvalidDevice;
  while (cursor < end) {
    const Mapping* m = mappingContaining(cursor);
    if (m == nullptr) return Status::kIllegalAddress;
    if (device >= 0) {
      const auto have = static_cast<uint8_t>(m->access[static_cast<size_t>(device)]);
      if ((have & static_cast<uint8_t>(need)) != static_cast<uint8_t>(need)) {
        return Status::kIllegalAddress;
      }
    }
    const uint64_t take = std::min(end, m->va + m->size) - cursor;
    out->push_back(Segment{m->alloc, m->allocOffset + (cursor - m->va), take});
    cursor += take;
  }
  return Status::kOk;
}

void AddressSpace::forEachMapping(const std::function<void(const Mapping&)>& fn) const {
  for (const auto& [va, m] : mappings_) fn(m);
}

void AddressSpace::forEachReservation(const std::function<void(const Reservation&)>& fn) const {
  for (const auto& [va, r] : reservations_) fn(r);
}

void AddressSpace::addToDigest(Digest& d) const {
  d.add(reservations_.size());
  for (const auto& [va, r] : reservations_) d.add(r.va).add(r.size).add(r.internal ? 1 : 0);
  d.add(mappings_.size());
  for (const auto& [va, m] : mappings_) {
    d.add(m.va).add(m.size).add(m.alloc).add(m.allocOffset);
    for (Access a : m.access) d.add(static_cast<uint64_t>(a));
  }
}

}  // namespace mcsim::model
