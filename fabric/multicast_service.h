// Multicast as the node's calls see it: creating objects, adding devices, binding memory and
// mapping objects, each bind and map blocking until its team is complete.
//
// The fabric manager (fabric_manager.h) keeps the objects, teams, bindings and switch slots and
// never blocks; this service adds the node's side: the references bindings and mappings hold
// (object_table.h), the waits for teams (team_wait.h, on the node's lock), the switches' and the
// manager's word on a bind or map, and what a wait still lacks for hang and deadlock reports.
//
// Guarded by the node's lock (node_host.cpp): a team wait releases it while it waits, so every
// bind and map checks the world again after waiting.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "fabric/fabric_manager.h"
#include "fabric/fault_service.h"
#include "fabric/object_table.h"
#include "fabric/process_space.h"
#include "fabric/team_wait.h"
#include "model/ordered_mutex.h"

namespace mcsim::fabric {

class MulticastService {
 public:
  // The wait object of calls held by fault plan block rules (team waits use multicast ids, which
  // are never 0).
  static constexpr uint64_t kFaultHold = 0;

  MulticastService(const Preset& preset, FabricManager& fabric, TeamWaiter& waiter, ObjectTable& objects,
                   const FabricHealth& health);

  FabricManager& fabric() { return fabric_; }
  Status create(const MulticastProps& props, uint64_t* id) { return fabric_.create(props, id); }
  // The object `id`, unless it is gone or from before a fabric manager restart (those answer as
  // unknown until released).
  MulticastObject* live(uint64_t id);
  Status addDevice(MulticastObject& mc, int device);

  // The path every bind takes: check what can be checked at once, wait for the team, check
  // again (the world may have changed while waiting), then let the fabric manager bind; the
  // binding holds a reference on the bound memory. `object` and `source` look the object and the
  // memory up (by the caller's handles, which another thread may release while this one waits);
  // `owner` is the binding process.
  using ObjectLookup = std::function<MulticastObject*()>;
  using SourceLookup = std::function<Status(BindSource*)>;
  Status bind(OrderedLock& lock, const char* call, const ObjectLookup& object, int device, uint64_t mcOffset,
              uint64_t size, const SourceLookup& source, uint64_t owner);
  // What a bind of `size` bytes at `offset` of allocation `id` binds, if they fit.
  Status bindSourceOf(model::AllocId id, uint64_t offset, uint64_t size, BindSource* src) const;
  Status unbind(MulticastObject& mc, int device, uint64_t mcOffset, uint64_t size);
  // Detaching: removes the bindings process `owner` made, giving back their references.
  void unbindOwnedBy(uint64_t owner);

  // A multicast object maps from offset 0, any size up to its own, aligned to the multicast
  // granularity; the map blocks until the team is complete, and holds a reference on the object.
  Status map(OrderedLock& lock, ProcessSpace& space, uint64_t va, uint64_t size, uint64_t offset, uint64_t id);

  FabricManagerState state() const { return fabric_.state(); }
  void setState(FabricManagerState s);

  // What a wait object still lacks, for hang and deadlock reports.
  std::string describeWait(uint64_t object) const;

 private:
  // The switches' and the manager's word on a multicast bind or map.
  Status gate(const MulticastObject& mc) const;
  // The device a binding is for.
  Status bindDevice(int requested, const BindSource& src, int* device) const;
  // Blocks until the team of object `id` is complete.
  Status waitForTeam(OrderedLock& lock, uint64_t id, const char* call, int device);

  const Preset& preset_;
  FabricManager& fabric_;
  TeamWaiter& waiter_;
  ObjectTable& objects_;
  const FabricHealth& health_;
};

}  // namespace mcsim::fabric
