#include "ptx/address_space_memory.h"

#include <algorithm>

namespace mcsim::ptx {

MemoryError AddressSpaceMemory::resolve(uint64_t va, AccessKind kind, int device, MemoryWindow* out) {
  const model::Mapping* m = space_.mappingContaining(va);
  if (m == nullptr) return MemoryError::kUnmapped;
  if (device >= 0) {
    if (static_cast<size_t>(device) >= m->access.size()) return MemoryError::kNoAccess;
    const auto have = static_cast<uint8_t>(m->access[static_cast<size_t>(device)]);
    const auto need = static_cast<uint8_t>(kind == AccessKind::kRead ? model::Access::kRead : model::Access::kReadWrite);
    if ((have & need) != need) return MemoryError::kNoAccess;
  }
  uint64_t allocBytes = 0;
  uint8_t* data = backing_(m->alloc, &allocBytes);
  if (data == nullptr || m->allocOffset >= allocBytes) return MemoryError::kUnmapped;
  out->va = m->va;
  out->size = std::min(m->size, allocBytes - m->allocOffset);
  out->host = data + m->allocOffset;
  if (va - out->va >= out->size) return MemoryError::kUnmapped;
  return MemoryError::kNone;
}

}  // namespace mcsim::ptx
