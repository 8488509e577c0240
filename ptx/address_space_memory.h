// GlobalMemory (ptx/memory.h) over the node's own bookkeeping: a model::AddressSpace (mappings
// and per-device access rights) and the backing bytes of each physical allocation (a
// model::LazyRegion in the node). This is how the node's memory path serves the executor: an
// access is resolved when it happens, through the same mappings and rights that copies and the
// behavioural kernel models resolve through.
//
// The address space and the backing must not change while an instruction runs (the executor
// runs on the simulation thread, where the node applies mapping changes in simulated-time
// order); between instructions they may.
#pragma once

#include <functional>

#include "model/address_space.h"
#include "ptx/memory.h"

namespace mcsim::ptx {

class AddressSpaceMemory : public GlobalMemory {
 public:
  // The backing bytes of an allocation and their size; nullptr for an allocation that has none
  // (timing-only memory), which the executor then treats as unmapped.
  using Backing = std::function<uint8_t*(model::AllocId alloc, uint64_t* size)>;

  // The members' memory behind offset `offset` of allocation `alloc` when it is a multicast object:
  // `out->members` (ascending device ordinal) point at that offset, `out->size` is how many bytes
  // from there every member has bound contiguously; kNotMulticast for any other allocation,
  // kUnbound where some member has no memory bound.
  using Multicast = std::function<MemoryError(model::AllocId alloc, uint64_t offset, MulticastWindow* out)>;

  AddressSpaceMemory(const model::AddressSpace& space, Backing backing, Multicast multicast = nullptr)
      : space_(space), backing_(std::move(backing)), multicast_(std::move(multicast)) {}

  // The window is the mapping containing `va`, cut to its allocation's bytes. Reads need the
  // device's read right, writes and atomics read-write (kNoAccess otherwise).
  // A plain access to a multicast mapping is kMulticast.
  MemoryError resolve(uint64_t va, AccessKind kind, int device, MemoryWindow* out) override;
  // The window starts at `va` and ends where the mapping or some member's binding does.
  MemoryError resolveMulticast(uint64_t va, AccessKind kind, int device, MulticastWindow* out) override;

 private:
  const model::Mapping* mapped(uint64_t va, AccessKind kind, int device, MemoryError* e) const;
  const model::AddressSpace& space_;
  Backing backing_;
  Multicast multicast_;
};

}  // namespace mcsim::ptx
