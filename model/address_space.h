// One process's simulated GPU virtual address space: reservations, the mappings placed in them,
// and per-device access rights. Purely bookkeeping: which physical allocation a mapping shows is
// an opaque id owned by the node. Ordered maps keep every walk deterministic.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <vector>

#include "model/digest.h"
#include "model/status.h"

namespace mcsim::model {

using AllocId = uint64_t;

// Access rights as the driver's CUmemAccess_flags numbers them.
enum class Access : uint8_t { kNone = 0, kRead = 1, kReadWrite = 3 };

struct Reservation {
  uint64_t va = 0;
  uint64_t size = 0;
  bool internal = false;  // made by cuMemAlloc/pools, not by cuMemAddressReserve
};

struct Mapping {
  uint64_t va = 0;
  uint64_t size = 0;
  AllocId alloc = 0;
  uint64_t allocOffset = 0;
  std::vector<Access> access;  // indexed by device ordinal
};

// A piece of a resolved VA range: `len` bytes at `allocOffset` of allocation `alloc`.
struct Segment {
  AllocId alloc;
  uint64_t allocOffset;
  uint64_t len;
};

class AddressSpace {
 public:
  AddressSpace(uint64_t base, uint64_t size, int deviceCount);

  uint64_t base() const { return base_; }
  uint64_t limit() const { return base_ + size_; }
  bool contains(uint64_t va) const { return va >= base_ && va < base_ + size_; }

  // Reserves `size` bytes aligned to `alignment` (a power of two). `hint`, when non-zero and
  // free, is honoured; otherwise the lowest free fit is used, as a hint is only a hint. Space
  // held by a reservation or by a mapping is not free.
  Status reserve(uint64_t size, uint64_t alignment, uint64_t hint, bool internal, uint64_t* va);
  // Frees exactly one whole reservation that holds no mapping.
  Status free(uint64_t va, uint64_t size);
  const Reservation* reservationContaining(uint64_t va) const;

  // Places a mapping. Its first byte must be reserved and it may overlap no mapping; like the
  // real driver, it may run on past the end of its reservation.
  // `readWrite` names the devices that may read and write it from the start (the others have no
  // access until setAccess), set under the same exclusive lock as the mapping itself.
  Status map(uint64_t va, uint64_t size, AllocId alloc, uint64_t allocOffset,
             const std::vector<int>& readWrite = {});
  // Removes every mapping inside [va, va+size), whose first byte must be reserved or mapped.
  // Unmapped stretches are fine; a mapping only partly inside the range is refused.
  // `removed` receives the removed mappings in address order.
  Status unmap(uint64_t va, uint64_t size, std::vector<Mapping>* removed);
  // Sets `access` for `device` on the mappings that exactly tile [va, va+size): no holes, and no
  // mapping only partly inside. All or nothing.
  Status setAccess(uint64_t va, uint64_t size, int device, Access access);

  const Mapping* mappingContaining(uint64_t va) const;
  // Resolves [va, va+len) into allocation segments; kIllegalAddress when any byte is unmapped.
  // With `device` >= 0, every mapping must grant that device at least `need`.
  Status resolve(uint64_t va, uint64_t len, int device, Access need, std::vector<Segment>* out) const;

  size_t reservationCount() const { return reservations_.size(); }
  size_t mappingCount() const { return mappings_.size(); }
  void forEachMapping(const std::function<void(const Mapping&)>& fn) const;
  void forEachReservation(const std::function<void(const Reservation&)>& fn) const;
  void addToDigest(Digest& d) const;

  // The lock of the mappings, for a reader that does not hold the owner's lock: a kernel of the
  // PTX executor resolving its accesses on the simulation thread (fabric/node_ptx.cpp) holds it
  // shared; map, unmap and setAccess take it exclusively while they change the mappings. Nothing
  // else is taken under it, and no holder waits for the simulation, so it cannot deadlock. A
  // shared_ptr, so that a reader can lock it whatever becomes of the space meanwhile.
  const std::shared_ptr<std::shared_mutex>& mappingsLock() const { return mappingsMu_; }

 private:
  bool rangeFree(uint64_t va, uint64_t size) const;
  // The end of a reservation or mapping overlapping [va, va+size), or 0 when there is none.
  uint64_t occupiedUntil(uint64_t va, uint64_t size) const;
  // The mappings exactly tiling [va, va+size), or an empty list when they do not.
  std::vector<Mapping*> tiling(uint64_t va, uint64_t size);
  uint64_t base_, size_;
  int deviceCount_;
  std::map<uint64_t, Reservation> reservations_;  // keyed by start
  std::map<uint64_t, Mapping> mappings_;          // keyed by start
  std::shared_ptr<std::shared_mutex> mappingsMu_ = std::make_shared<std::shared_mutex>();
};

}  // namespace mcsim::model
