#include "ptx/memory.h"

namespace mcsim::ptx {

const char* memoryErrorText(MemoryError e) {
  switch (e) {
    case MemoryError::kNone: return "mapped";
    case MemoryError::kUnmapped: return "unmapped";
    case MemoryError::kNoAccess: return "the device has no access to it";
    case MemoryError::kMulticast: return "a multicast address, which only multimem instructions and plain stores may access";
    case MemoryError::kNotMulticast: return "not a multicast address, which multimem instructions need";
    case MemoryError::kUnbound: return "a multicast address some member device has no memory bound at";
    case MemoryError::kLinkDown: return "the NVLink path to its memory is down";
    case MemoryError::kHostUnreachable:
      return "host memory the program registered (cuMemHostRegister), which a shared node's kernels cannot reach: "
             "they run in the node's process, and the pages are the program's own";
  }
  return "?";
}

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
  if (auto mc = multicast_.upper_bound(va); mc != multicast_.begin() && va - std::prev(mc)->first < std::prev(mc)->second.size)
    return MemoryError::kMulticast;
  auto it = buffers_.upper_bound(va);
  if (it == buffers_.begin()) return MemoryError::kUnmapped;
  --it;
  if (va - it->first >= it->second.size()) return MemoryError::kUnmapped;
  out->va = it->first;
  out->size = it->second.size();
  out->host = it->second.data();
  return MemoryError::kNone;
}

uint64_t FlatMemory::allocateMulticast(const std::vector<uint64_t>& members, uint64_t size) {
  const uint64_t va = nextMulticast_;
  multicast_[va] = Multicast{size, members};
  nextMulticast_ = (va + size + 256 + 255) & ~uint64_t{255};
  return va;
}

MemoryError FlatMemory::resolveMulticast(uint64_t va, AccessKind kind, int device, MulticastWindow* out) {
  auto it = multicast_.upper_bound(va);
  if (it == multicast_.begin() || va - std::prev(it)->first >= std::prev(it)->second.size) {
    MemoryWindow w;
    return resolve(va, kind, device, &w) == MemoryError::kNone ? MemoryError::kNotMulticast : MemoryError::kUnmapped;
  }
  --it;
  out->va = it->first;
  out->size = it->second.size;
  out->object = it->first;
  out->offset = 0;
  out->members.clear();
  out->devices.clear();
  for (size_t i = 0; i < it->second.members.size(); ++i) {
    const uint64_t m = it->second.members[i];
    if (m == 0) return MemoryError::kUnbound;
    uint8_t* p = host(m);
    if (p == nullptr) return MemoryError::kUnbound;
    out->members.push_back(p);
    out->devices.push_back(static_cast<int>(i));
  }
  return MemoryError::kNone;
}

}  // namespace mcsim::ptx
