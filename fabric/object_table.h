// The node's objects and the references that keep them alive.
//
// Physical allocations (cuMemCreate, cuMemAlloc, pool memory) live here with their backing memory
// and the memory each location has left; multicast objects live in the fabric manager, but their
// references are counted the same way, so the table answers for both kinds by id. An object goes
// when its last reference does (handle values, mappings and bindings, in every process), unless
// an exported descriptor of it is still open somewhere (export_table.h): then it is held for the
// descriptors until they are all closed, or an import takes it up again.
//
// Guarded by the node's lock (node_host.cpp); it never blocks.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <unordered_map>
#include <vector>

#include "fabric/node.h"
#include "model/address_space.h"
#include "model/digest.h"
#include "model/lazy_region.h"

namespace mcsim::fabric {

class ExportTable;
class NodeModel;

// How an allocation was made: by cuMemCreate, by cuMemAlloc, or from a stream-ordered pool.
enum class AllocKind { kVmm, kLinear, kPooled };

struct Allocation {
  model::AllocId id = 0;
  AllocationProps props;
  AllocKind kind = AllocKind::kVmm;
  uint64_t requested = 0;  // what cuMemAlloc or the pool was asked for
  uint64_t refs = 0;             // live handle values + mappings + bindings, in every process
  bool heldByDescriptors = false;  // no refs left, but an exported descriptor is still open
  std::shared_ptr<model::LazyRegion> region;  // made on first write; device work in flight shares it
};

class ObjectTable {
 public:
  // `fabric` holds the multicast objects, `exports` says whether a descriptor of an object is
  // still open, `model` forgets device allocations with them.
  ObjectTable(const Preset& preset, FabricManager& fabric, ExportTable& exports, NodeModel& model);
  // Called when an object is forgotten (after its export records, before its memory or bindings
  // go): the node forgets every process's handle values for it.
  void setOnDestroyed(std::function<void(uint64_t id)> fn) { onDestroyed_ = std::move(fn); }

  // A new allocation with one reference, charged to its location (kOutOfMemory when it does not
  // fit, kInvalidDevice / kInvalidValue for a location the node has not).
  Status create(const AllocationProps& props, AllocKind kind, uint64_t requested, model::AllocId* id);
  // Frees an allocation at once, whatever its references (one just made that could not be placed).
  void destroyAllocation(model::AllocId id);

  Allocation& at(model::AllocId id) { return allocs_.at(id); }
  const Allocation& at(model::AllocId id) const { return allocs_.at(id); }
  const Allocation* find(model::AllocId id) const;

  // Either kind of object, by id.
  bool exists(uint64_t id) const;
  uint32_t handleTypes(uint64_t id);
  // One more reference.
  void retain(uint64_t id) { ++*viewOf(id).refs; }
  // One more reference, taken by an import: an object held only by descriptors is live again.
  void retainImported(uint64_t id);
  // One reference less: the object goes with its last, unless a descriptor of it is still open.
  void release(uint64_t id);
  // Forgets the objects that only exported descriptors kept, once those are all closed. Costs
  // nothing while no object is held that way, so calls can afford it.
  void sweep();

  // Device memory used on `device`.
  uint64_t deviceUsed(int device) const { return deviceUsed_[static_cast<size_t>(device)]; }

  // Host pointers for segments about to be written, backing allocations on first touch; false
  // when backing memory could not be made.
  bool back(const std::vector<model::Segment>& segs, std::vector<uint8_t*>* out);
  // Host pointers for segments about to be read; nullptr where nothing was ever written.
  std::vector<const uint8_t*> peek(const std::vector<model::Segment>& segs) const;

  size_t count() const { return allocs_.size(); }
  uint64_t residentBytes() const;
  // The digest's parts, in the order the node's digest has always taken them: the allocations,
  // then (after the export records) the memory used per location.
  void addAllocationsToDigest(model::Digest& d) const;
  void addUsageToDigest(model::Digest& d) const;

 private:
  // The bookkeeping that allocations and multicast objects share.
  struct View {
    uint64_t* refs;
    bool* heldByDescriptors;
    uint32_t handleTypes;
  };
  View viewOf(uint64_t id);
  uint64_t* usedFor(const Location& loc, uint64_t* capacity);
  // Forgets an object whose last reference is gone: its export records, every process's handle
  // value for it, and (a multicast object) its bindings' references.
  void destroy(uint64_t id);

  const Preset& preset_;
  FabricManager& fabric_;
  ExportTable& exports_;
  NodeModel& model_;
  std::function<void(uint64_t)> onDestroyed_;
  // A hash map: lookups stay flat however many objects live. Digests sort its keys.
  std::unordered_map<model::AllocId, Allocation> allocs_;
  std::set<uint64_t> held_;  // objects that only exported descriptors keep
  std::vector<uint64_t> deviceUsed_;
  std::vector<uint64_t> hostUsed_;
  model::AllocId nextAlloc_ = 0;
};

}  // namespace mcsim::fabric
