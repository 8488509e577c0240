#include "model/address_space.h"

namespace mcsim::model {

namespace {
bool isPow2(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }
uint64_t alignUp(uint64_t v, uint64_t a) { return (v + a - 1) & ~(a - 1); }
// True when [a, a+as) and [b, b+bs) overlap.
bool overlaps(uint64_t a, uint64_t as, uint64_t b, uint64_t bs) { return a < b + bs && b < a + as; }
}  // namespace

AddressSpace::AddressSpace(uint64_t base, uint64_t size, int deviceCount)
    : base_(base), size_(size), deviceCount_(deviceCount) {}

bool AddressSpace::rangeFree(uint64_t va, uint64_t size) const {
  if (va < base_ || size > size_ || va - base_ > size_ - size) return false;
  auto it = reservations_.upper_bound(va);
  if (it != reservations_.end() && overlaps(va, size, it->second.va, it->second.size)) return false;
  if (it != reservations_.begin()) {
    --it;
    if (overlaps(va, size, it->second.va, it->second.size)) return false;
  }
  return true;
}

Status AddressSpace::reserve(uint64_t size, uint64_t alignment, uint64_t hint, bool internal,
                             uint64_t* va) {
  if (size == 0 || !isPow2(alignment)) return Status::kInvalidValue;
  uint64_t at = 0;
  if (hint != 0 && hint % alignment == 0 && rangeFree(hint, size)) {
    at = hint;
  } else {
    // Lowest-address first fit: deterministic, and it keeps the space compact.
    uint64_t cursor = alignUp(base_, alignment);
    bool found = false;
    for (const auto& [start, r] : reservations_) {
      if (cursor + size <= start && cursor + size >= cursor) {
        found = true;
        break;
      }
      if (r.va + r.size > cursor) cursor = alignUp(r.va + r.size, alignment);
    }
    if (!found) found = cursor + size <= limit() && cursor + size > cursor;
    if (!found) return Status::kOutOfMemory;
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

Status AddressSpace::map(uint64_t va, uint64_t size, AllocId alloc, uint64_t allocOffset) {
  const Reservation* r = reservationContaining(va);
  if (r == nullptr || size == 0 || size > r->va + r->size - va) return Status::kInvalidValue;
  auto it = mappings_.upper_bound(va);
  if (it != mappings_.end() && overlaps(va, size, it->second.va, it->second.size)) {
    return Status::kAlreadyMapped;
  }
  if (it != mappings_.begin()) {
    auto prev = std::prev(it);
    if (overlaps(va, size, prev->second.va, prev->second.size)) return Status::kAlreadyMapped;
  }
  Mapping m;
  m.va = va;
  m.size = size;
  m.alloc = alloc;
  m.allocOffset = allocOffset;
  m.access.assign(static_cast<size_t>(deviceCount_), Access::kNone);
  mappings_.emplace(va, std::move(m));
  return Status::kOk;
}

Status AddressSpace::unmap(uint64_t va, uint64_t size, std::vector<Mapping>* removed) {
  if (size == 0) return Status::kInvalidValue;
  // The range must start at a mapping and be tiled exactly by whole, adjacent mappings.
  auto first = mappings_.find(va);
  if (first == mappings_.end()) return Status::kInvalidValue;
  uint64_t cursor = va;
  auto it = first;
  while (cursor < va + size) {
    if (it == mappings_.end() || it->first != cursor) return Status::kInvalidValue;
    cursor += it->second.size;
    ++it;
  }
  if (cursor != va + size) return Status::kInvalidValue;
  for (auto e = first; e != it;) {
    if (removed != nullptr) removed->push_back(e->second);
    e = mappings_.erase(e);
  }
  return Status::kOk;
}

Status AddressSpace::setAccess(uint64_t va, uint64_t size, int device, Access access) {
  if (size == 0 || device < 0 || device >= deviceCount_) return Status::kInvalidValue;
  // Check first, then apply, so that a refused call changes nothing.
  std::vector<Mapping*> touched;
  uint64_t cursor = va;
  while (cursor < va + size) {
    auto it = mappings_.upper_bound(cursor);
    if (it == mappings_.begin()) return Status::kInvalidValue;
    --it;
    Mapping& m = it->second;
    if (cursor >= m.va + m.size) return Status::kInvalidValue;
    touched.push_back(&m);
    cursor = m.va + m.size;
  }
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
