#include "ptx/memory.h"

namespace mcsim::ptx {

uint64_t FlatMemory::allocate(uint64_t size) {
  const uint64_t va = next_;
  buffers_[va].assign(size, 0);
  // A 256-byte gap after each buffer, so that running off its end is unmapped, as on a GPU
  // whose allocations are not adjacent.
  next_ = (va + size + 256 + 255) & ~uint64_t{255};
  return va;
}

uint8_t* FlatMemory::host(uint64_t va) {
  MemoryWindow w;
  if (resolve(va, AccessKind::kRead, 0, &w) != MemoryError::kNone) return nullptr;
  return w.host + (va - w.va);
}

MemoryError FlatMemory::resolve(uint64_t va, AccessKind, int, MemoryWindow* out) {
  auto it = buffers_.upper_bound(va);
  if (it == buffers_.begin()) return MemoryError::kUnmapped;
  --it;
  if (va - it->first >= it->second.size()) return MemoryError::kUnmapped;
  out->va = it->first;
  out->size = it->second.size();
  out->host = it->second.data();
  return MemoryError::kNone;
}

}  // namespace mcsim::ptx
