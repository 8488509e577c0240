#include "ptx/address_space_memory.h"

#include <algorithm>

namespace mcsim::ptx {

// The mapping holding `va`, if `device` may access it as `kind` asks (reads need the read right,
// writes and atomics read-write); nullptr with *e set otherwise.
const model::Mapping* AddressSpaceMemory::mapped(uint64_t va, AccessKind kind, int device, MemoryError* e) const {
  const model::Mapping* m = space_.mappingContaining(va);
  if (m == nullptr) {
    *e = MemoryError::kUnmapped;
    return nullptr;
  }
  if (device >= 0) {
    const auto have = static_cast<size_t>(device) < m->access.size() ? static_cast<uint8_t>(m->access[static_cast<size_t>(device)]) : 0;
    const auto need = static_cast<uint8_t>(kind == AccessKind::kRead ? model::Access::kRead : model::Access::kReadWrite);
    if ((have & need) != need) {
      *e = MemoryError::kNoAccess;
      return nullptr;
    }
  }
  *e = MemoryError::kNone;
  return m;
}

MemoryError AddressSpaceMemory::resolve(uint64_t va, AccessKind kind, int device, MemoryWindow* out) {
  MemoryError e = MemoryError::kNone;
  const model::Mapping* m = mapped(va, kind, device, &e);
  if (m == nullptr) return e;
  uint64_t allocBytes = 0;
  uint8_t* data = backing_(m->alloc, &allocBytes);
  if (data == nullptr) {
    MulticastWindow mc;
    if (multicast_ && multicast_(m->alloc, m->allocOffset, &mc) != MemoryError::kNotMulticast) return MemoryError::kMulticast;
    return MemoryError::kUnmapped;
  }
  if (m->allocOffset >= allocBytes) return MemoryError::kUnmapped;
  out->va = m->va;
  out->size = std::min(m->size, allocBytes - m->allocOffset);
  out->host = data + m->allocOffset;
  if (va - out->va >= out->size) return MemoryError::kUnmapped;
  return MemoryError::kNone;
}

MemoryError AddressSpaceMemory::resolveMulticast(uint64_t va, AccessKind kind, int device, MulticastWindow* out) {
  MemoryError e = MemoryError::kNone;
  const model::Mapping* m = mapped(va, kind, device, &e);
  if (m == nullptr) return e;
  if (!multicast_) return MemoryError::kNotMulticast;
  const uint64_t in = va - m->va;
  e = multicast_(m->alloc, m->allocOffset + in, out);
  if (e != MemoryError::kNone) return e;
  out->va = va;
  out->size = std::min(out->size, m->size - in);
  out->object = m->alloc;
  out->offset = m->allocOffset + in;
  return MemoryError::kNone;
}

}  // namespace mcsim::ptx
