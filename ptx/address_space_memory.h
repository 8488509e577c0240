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

  AddressSpaceMemory(const model::AddressSpace& space, Backing backing) : space_(space), backing_(std::move(backing)) {}

  // The window is the mapping containing `va`, cut to its allocation's bytes. Reads need the
  // device's read right, writes and atomics read-write (kNoAccess otherwise).
  MemoryError resolve(uint64_t va, AccessKind kind, int device, MemoryWindow* out) override;

 private:
  const model::AddressSpace& space_;
  Backing backing_;
};

}  // namespace mcsim::ptx
