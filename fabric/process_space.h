// One attached process's device virtual address space, as the driver's memory calls see it.
//
// model::AddressSpace keeps the reservations, mappings and access rights; this service adds what
// the node's calls need around it: the references mappings hold on the node's objects, the
// memory the driver reserves, backs and maps in one step (cuMemAlloc and pool memory, which the
// VMM calls may not touch), and what the node knows about an address (cuPointerGetAttribute).
// Multicast mappings are made by the multicast service (multicast_service.h), since they wait
// for the team.
//
// Guarded by the node's lock (node_host.cpp).
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "fabric/node.h"
#include "fabric/object_table.h"
#include "model/address_space.h"

namespace mcsim::fabric {

// cuMemAlloc hands out whole granules; its ranges and mappings are aligned to this.
constexpr uint64_t kLinearGranule = 2ull << 20;

class ProcessSpace {
 public:
  // The window [vaBase, vaBase + size) of a node of `gpuCount` devices.
  ProcessSpace(uint64_t vaBase, uint64_t size, int gpuCount, ObjectTable& objects, const FabricManager& fabric);

  model::AddressSpace& space() { return space_; }
  // Devices 0 .. gpuCount - 1, the accessors of cuMemAlloc memory.
  const std::vector<int>& everyDevice() const { return everyDevice_; }
  const model::AddressSpace& space() const { return space_; }

  // The VMM calls (Node's reserve ... getAccess), refusing the driver's internal reservations.
  Status reserve(uint64_t size, uint64_t alignment, uint64_t hint, uint64_t* va);
  Status freeReservation(uint64_t va, uint64_t size);
  // Maps a whole allocation, which the mapping then holds a reference on.
  Status mapAllocation(uint64_t va, uint64_t size, uint64_t offset, model::AllocId id);
  // Unmaps, giving back the references of the mappings removed (multicast ones included).
  Status unmap(uint64_t va, uint64_t size);
  Status setAccess(uint64_t va, uint64_t size, int device, Access access);
  Status getAccess(uint64_t va, int device, Access* access) const;

  // Memory the driver reserves, backs and maps in one step (cuMemAlloc, pools): rounded to whole
  // granules, used within `requested`, reachable read-write by `accessors`.
  Status allocInternal(AllocationProps props, uint64_t requested, AllocKind kind, const std::vector<int>& accessors,
                       uint64_t* va);
  Status freeInternal(uint64_t va, AllocKind kind);
  // cuMemPoolSetAccess on one of the pool's allocations.
  Status setPooledAccess(uint64_t va, int device, Access access);

  void pointerInfo(uint64_t va, int device, PointerInfo* info) const;

  // IPC of cuMemAlloc memory (cuIpcGetMemHandle, cuIpcOpenMemHandle, cuIpcCloseMemHandle).
  // The cuMemAlloc allocation of this process whose range holds `va` (any address in it, as the
  // real driver takes); kInvalidValue for any other memory (pool, VMM, none).
  Status linearAllocationAt(uint64_t va, model::AllocId* id) const;
  // Whether this process made allocation `id` with cuMemAlloc.
  bool madeLinear(model::AllocId id) const;
  // Maps another process's cuMemAlloc allocation `id`, readable and writable by every device, at
  // a new address of the driver's; a second open of the same allocation returns the same address
  // and counts one more open (as the real driver does for the same context).
  Status openImported(model::AllocId id, uint64_t* va);
  // One open less; the mapping goes with the last. kInvalidValue for an address no open returned.
  Status closeImported(uint64_t va);

  // What the process holds in its space, for the leak report (Node::holdings): its own
  // reservations and the mappings in them, its cuMemAlloc and pool memory, and the IPC memory it
  // opened, each kind in address order.
  void addHoldings(std::vector<Holding>* out) const;

  // Detaching: gives back the references every mapping holds.
  void releaseAll();

  size_t reservationCount() const { return space_.reservationCount(); }
  size_t mappingCount() const { return space_.mappingCount(); }
  void addToDigest(model::Digest& d) const;

 private:
  // Unmaps the driver's own range [va, va + size) and frees its reservation, giving back the
  // references its mappings held.
  void dropInternal(uint64_t va, uint64_t size);

  model::AddressSpace space_;
  int gpuCount_;
  std::vector<int> everyDevice_;
  ObjectTable& objects_;
  const FabricManager& fabric_;
  std::map<uint64_t, model::AllocId> internal_;  // cuMemAlloc and pool allocations by base address
  struct Imported {
    model::AllocId id = 0;
    uint64_t opens = 0;
  };
  std::map<uint64_t, Imported> imported_;  // other processes' cuMemAlloc memory opened here, by address
};

}  // namespace mcsim::fabric
