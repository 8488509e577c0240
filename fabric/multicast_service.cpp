// Multicast binds, maps and team waits (multicast_service.h).
#include "fabric/multicast_service.h"

#include <algorithm>

namespace mcsim::fabric {

MulticastService::MulticastService(const Preset& preset, FabricManager& fabric, TeamWaiter& waiter,
                                   ObjectTable& objects, const FabricHealth& health)
    : preset_(preset), fabric_(fabric), waiter_(waiter), objects_(objects), health_(health) {}

MulticastObject* MulticastService::live(uint64_t id) {
  MulticastObject* mc = fabric_.find(id);
  return mc != nullptr && mc->stale ? nullptr : mc;
}

Status MulticastService::addDevice(MulticastObject& mc, int device) {
  // The fabric manager takes a GPU with no NVLink left out of the fabric: it joins no team.
  if (!health_.links.attached(device)) {
    return MCSIM_REFUSE(Status::kIllegalState, "device ", std::to_string(device),
                        " has no NVLink up to an NVSwitch that is up (fault plan): the fabric manager took it out of the fabric");
  }
  Status s = fabric_.addDevice(mc, device);
  if (s == Status::kOk) waiter_.progress();  // a bind or map may be waiting for this device
  return s;
}

void MulticastService::setState(FabricManagerState s) {
  fabric_.setState(s);
  waiter_.progress();
}

Status MulticastService::gate(const MulticastObject& mc) const {
  const model::LinkHealth& h = health_.links;
  if (h.switches() > 0) {
    bool anySwitch = false;
    for (int s = 0; s < h.switches(); ++s) anySwitch = anySwitch || h.switchUp(s);
    if (!anySwitch) return MCSIM_REFUSE(Status::kIllegalState, "every NVSwitch is down (fault plan)");
  }
  // A team whose member lost every NVLink is degraded: the fabric manager cannot set it up (a
  // switch or some links down leave the rest of the fabric to it, at lower bandwidth).
  for (int d : mc.members) {
    if (!h.attached(d)) {
      return MCSIM_REFUSE(Status::kIllegalState, "team member device ", std::to_string(d),
                          " has no NVLink up to an NVSwitch that is up (fault plan)");
    }
  }
  return fabric_.gate();
}

Status MulticastService::bindSourceOf(model::AllocId id, uint64_t offset, uint64_t size, BindSource* src) const {
  const Allocation& a = objects_.at(id);
  if (offset > a.props.size || size > a.props.size - offset) {
    return MCSIM_REFUSE(Status::kInvalidValue, "memory offset ", std::to_string(offset), " + size ", std::to_string(size),
                        " passes the end of the physical memory (", std::to_string(a.props.size), " bytes)");
  }
  *src = BindSource{id, a.props.location, a.props.size, a.props.handleTypes, offset};
  return Status::kOk;
}

// The first forms bind for the memory's own device, which must be device memory; the _v2 forms
// name the device, and device memory must be on it, host memory on the NUMA node closest to it
// (CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID).
Status MulticastService::bindDevice(int requested, const BindSource& src, int* device) const {
  const Location& loc = src.location;
  if (requested < 0) {
    if (loc.kind != LocationKind::kDevice) {
      return MCSIM_REFUSE(Status::kInvalidDevice, "host memory binds only through the _v2 calls, which name the device");
    }
    *device = loc.id;
    return Status::kOk;
  }
  if (loc.kind == LocationKind::kDevice) {
    if (loc.id != requested) {
      return MCSIM_REFUSE(Status::kInvalidDevice, "the memory is on device ", std::to_string(loc.id), ", not on device ",
                          std::to_string(requested));
    }
  } else {
    const int numa = loc.kind == LocationKind::kHost ? 0 : loc.id;
    if (numa != preset_.gpuNumaNode[static_cast<size_t>(requested)]) {
      return MCSIM_REFUSE(Status::kInvalidValue, "the host memory is on NUMA node ", std::to_string(numa), ", device ",
                          std::to_string(requested), "'s is ",
                          std::to_string(preset_.gpuNumaNode[static_cast<size_t>(requested)]));
    }
  }
  *device = requested;
  return Status::kOk;
}

Status MulticastService::bind(OrderedLock& lock, const char* call, const ObjectLookup& object, int device,
                              uint64_t mcOffset, uint64_t size, const SourceLookup& source, uint64_t owner) {
  auto check = [&](MulticastObject** mc, BindSource* src) {
    *mc = object();
    if (*mc == nullptr) return MCSIM_REFUSE(Status::kInvalidValue, "mcHandle is not a live multicast object of this process");
    Status s = source(src);
    if (s != Status::kOk) return s;
    if (mcOffset > (*mc)->props.size || size > (*mc)->props.size - mcOffset) {
      return MCSIM_REFUSE(Status::kInvalidValue, "multicast offset ", std::to_string(mcOffset), " + size ",
                          std::to_string(size), " passes the end of the multicast object (",
                          std::to_string((*mc)->props.size), " bytes)");
    }
    // Externally shareable and imported multicast objects bind only shareable memory.
    if ((*mc)->props.handleTypes != 0 && src->handleTypes == 0) {
      return MCSIM_REFUSE(Status::kInvalidValue, "the multicast object has shareable handle types, and the memory "
                          "was created with none (CUmemAllocationProp::requestedHandleTypes = 0)");
    }
    return Status::kOk;
  };
  MulticastObject* mc = nullptr;
  BindSource src;
  Status s = check(&mc, &src);
  if (s != Status::kOk) return s;
  const uint64_t id = mc->id;
  s = waitForTeam(lock, id, call, device);
  if (s != Status::kOk) return s;
  s = check(&mc, &src);
  if (s != Status::kOk) return s;
  if (mc->id != id) return MCSIM_REFUSE(Status::kInvalidValue, "the multicast object was released while the bind waited");
  // The fabric manager sets the team up when it is first used.
  s = gate(*mc);
  if (s != Status::kOk) return s;
  int dev = 0;
  s = bindDevice(device, src, &dev);
  if (s != Status::kOk) return s;
  // Objects that only since-closed descriptors kept are gone in fact, and so are their switch
  // slots: sweep them before the slot check, or a loop of create / export / bind / release /
  // close runs out of slots at its 129th bind (multicast.Slots.ClosingTheLastDescriptorFreesTheSlot).
  // Neither `mc` nor the bound memory can be swept: a handle or a mapping holds each.
  objects_.sweep();
  src.owner = owner;
  s = fabric_.bind(*mc, dev, mcOffset, src, size);
  if (s != Status::kOk) return s;
  objects_.retain(src.alloc);  // the binding keeps the bound memory alive
  return Status::kOk;
}

Status MulticastService::unbind(MulticastObject& mc, int device, uint64_t mcOffset, uint64_t size) {
  if (mcOffset > mc.props.size || size > mc.props.size - mcOffset) {
    return MCSIM_REFUSE(Status::kInvalidValue, "multicast offset ", std::to_string(mcOffset), " + size ",
                        std::to_string(size), " passes the end of the multicast object (", std::to_string(mc.props.size),
                        " bytes)");
  }
  MulticastBinding removed;
  Status s = fabric_.unbind(mc, device, mcOffset, size, &removed);
  if (s != Status::kOk) return s;
  objects_.release(removed.alloc);
  return Status::kOk;
}

void MulticastService::unbindOwnedBy(uint64_t owner) {
  for (const MulticastBinding& b : fabric_.unbindOwnedBy(owner)) objects_.release(b.alloc);
}

Status MulticastService::map(OrderedLock& lock, ProcessSpace& space, uint64_t va, uint64_t size, uint64_t offset,
                             uint64_t id) {
  const uint64_t gran = preset_.multicast.granularityMinimum;
  MulticastObject* mc = fabric_.find(id);
  // An object from before a fabric manager restart is refused here as by every other multicast
  // call (live); the map used to go through and map an object the manager forgot.
  if (mc->stale) return MCSIM_REFUSE(Status::kInvalidValue, "the multicast object is from before a fabric manager restart");
  if (offset != 0) return MCSIM_REFUSE(Status::kNotSupported, "a multicast object maps only at offset 0");
  if (size == 0 || size > mc->props.size || size % gran != 0 || va % gran != 0) {
    return MCSIM_REFUSE(Status::kInvalidValue, "address and size must be multiples of the multicast granularity (",
                        std::to_string(gran), " bytes), and the size at most the object's (",
                        std::to_string(mc->props.size), " bytes)");
  }
  const model::Reservation* r = space.space().reservationContaining(va);
  if (r == nullptr || r->internal) {
    return MCSIM_REFUSE(Status::kInvalidValue, "the address is not in a range reserved with cuMemAddressReserve");
  }
  Status s = waitForTeam(lock, id, "cuMemMap", -1);
  if (s != Status::kOk) return s;
  mc = fabric_.find(id);
  if (mc == nullptr || mc->stale) return MCSIM_REFUSE(Status::kInvalidValue, "the multicast object was released while the map waited");
  s = gate(*mc);
  if (s != Status::kOk) return s;
  s = space.space().map(va, size, id, 0);
  if (s != Status::kOk) return s;
  ++mc->refs;
  return Status::kOk;
}

// `call` and `device` only name the waiter in reports, so nothing is formatted unless the call
// really has to wait.
Status MulticastService::waitForTeam(OrderedLock& lock, uint64_t id, const char* call, int device) {
  auto ready = [&] {
    const MulticastObject* mc = fabric_.find(id);
    return mc == nullptr || mc->complete();  // a released object wakes its waiters too
  };
  if (ready()) return Status::kOk;
  const std::string who = std::string(call) + (device >= 0 ? " on device " + std::to_string(device) : "") +
                          " (multicast object " + std::to_string(id & ~kMulticastIdBit) + ")";
  return waiter_.wait(lock, who, id, ready, [&](uint64_t object) { return describeWait(object); });
}

std::string MulticastService::describeWait(uint64_t object) const {
  if (object == kFaultHold) return "calls held by fault plan block rules (each waiting call below names its rule)";
  const MulticastObject* mc = fabric_.find(object);
  if (mc == nullptr) return std::string("a released multicast object");
  // Sorted, and the devices not added named: with a team of every GPU those are the missing ones;
  // with a smaller team, the ones it could still take.
  std::vector<int> added = mc->members;
  std::sort(added.begin(), added.end());
  std::vector<int> notAdded;
  for (int d = 0; d < preset_.gpuCount; ++d) {
    if (!std::binary_search(added.begin(), added.end(), d)) notAdded.push_back(d);
  }
  auto list = [](const std::vector<int>& v) {
    std::string out;
    for (int d : v) out += (out.empty() ? "" : " ") + std::to_string(d);
    return "[" + out + "]";
  };
  const size_t toAdd = mc->props.numDevices - mc->members.size();
  std::string missing = toAdd == notAdded.size() ? ", missing devices: " + list(notAdded)
                                                 : ", from the devices not added: " + list(notAdded);
  return "multicast object " + std::to_string(object & ~kMulticastIdBit) + ": team of " +
         std::to_string(mc->props.numDevices) + ", devices added " + list(added) + ", " + std::to_string(toAdd) +
         " still to be added" + missing;
}

}  // namespace mcsim::fabric
