// One process's device address space (process_space.h).
#include "fabric/process_space.h"

#include "fabric/fabric_manager.h"

namespace mcsim::fabric {

using model::AllocId;

ProcessSpace::ProcessSpace(uint64_t vaBase, uint64_t size, int gpuCount, ObjectTable& objects,
                           const FabricManager& fabric)
    : space_(vaBase, size, gpuCount), gpuCount_(gpuCount), objects_(objects), fabric_(fabric) {
  for (int d = 0; d < gpuCount; ++d) everyDevice_.push_back(d);
}

Status ProcessSpace::reserve(uint64_t size, uint64_t alignment, uint64_t hint, uint64_t* va) {
  return space_.reserve(size, alignment, hint, false, va);
}

Status ProcessSpace::freeReservation(uint64_t va, uint64_t size) {
  const model::Reservation* r = space_.reservationContaining(va);
  if (r == nullptr || r->internal) return Status::kInvalidValue;
  return space_.free(va, size);
}

Status ProcessSpace::mapAllocation(uint64_t va, uint64_t size, uint64_t offset, AllocId id) {
  const Allocation& a = objects_.at(id);
  // The real driver maps only a whole allocation, from its start.
  if (offset != 0 || size != a.props.size) return Status::kNotSupported;
  const model::Reservation* r = space_.reservationContaining(va);
  if (r != nullptr && r->internal) return Status::kInvalidValue;
  Status s = space_.map(va, size, a.id, offset);
  if (s != Status::kOk) return s;
  objects_.retain(id);
  return Status::kOk;
}

Status ProcessSpace::unmap(uint64_t va, uint64_t size) {
  const model::Reservation* r = space_.reservationContaining(va);
  if (r == nullptr || r->internal) return Status::kInvalidValue;
  std::vector<model::Mapping> removed;
  Status s = space_.unmap(va, size, &removed);
  if (s != Status::kOk) return s;
  for (const auto& m : removed) objects_.release(m.alloc);
  return Status::kOk;
}

Status ProcessSpace::setAccess(uint64_t va, uint64_t size, int device, Access access) {
  const model::Reservation* r = space_.reservationContaining(va);
  if (r != nullptr && r->internal) return Status::kInvalidValue;
  return space_.setAccess(va, size, device, access);
}

Status ProcessSpace::getAccess(uint64_t va, int device, Access* access) const {
  const model::Mapping* m = space_.mappingContaining(va);
  if (m == nullptr || device < 0 || device >= gpuCount_) return Status::kInvalidValue;
  *access = m->access[static_cast<size_t>(device)];
  return Status::kOk;
}

Status ProcessSpace::allocInternal(AllocationProps props, uint64_t requested, AllocKind kind,
                                   const std::vector<int>& accessors, uint64_t* va) {
  const uint64_t rounded = (requested + kLinearGranule - 1) & ~(kLinearGranule - 1);
  if (requested == 0 || rounded < requested) return Status::kInvalidValue;
  props.size = rounded;
  AllocId id = 0;
  Status s = objects_.create(props, kind, requested, &id);
  if (s != Status::kOk) return s;
  uint64_t at = 0;
  s = space_.reserve(rounded, kLinearGranule, 0, true, &at);
  if (s != Status::kOk) {
    objects_.destroyAllocation(id);
    return s;
  }
  space_.map(at, rounded, id, 0, accessors);
  internal_[at] = id;
  *va = at;
  return Status::kOk;
}

Status ProcessSpace::freeInternal(uint64_t va, AllocKind kind) {
  auto it = internal_.find(va);
  if (it == internal_.end() || objects_.at(it->second).kind != kind) return Status::kInvalidValue;
  const uint64_t size = objects_.at(it->second).props.size;
  internal_.erase(it);
  dropInternal(va, size);
  return Status::kOk;
}

void ProcessSpace::dropInternal(uint64_t va, uint64_t size) {
  std::vector<model::Mapping> removed;
  space_.unmap(va, size, &removed);
  space_.free(va, size);
  for (const auto& m : removed) objects_.release(m.alloc);
}

Status ProcessSpace::setPooledAccess(uint64_t va, int device, Access access) {
  auto it = internal_.find(va);
  if (it == internal_.end() || objects_.at(it->second).kind != AllocKind::kPooled) return Status::kInvalidValue;
  return space_.setAccess(va, objects_.at(it->second).props.size, device, access);
}

void ProcessSpace::pointerInfo(uint64_t va, int device, PointerInfo* info) const {
  *info = PointerInfo{};
  const model::Mapping* m = space_.mappingContaining(va);
  if (m == nullptr) return;
  const model::Reservation* r = space_.reservationContaining(va);
  info->mapped = true;
  info->mappingBase = m->va;
  info->mappingSize = m->size;
  // A mapping may run past its reservation's end (the real driver allows it); then the address
  // is in no reservation.
  info->reservationBase = r != nullptr ? r->va : 0;
  info->reservationSize = r != nullptr ? r->size : 0;
  if (device >= 0 && device < gpuCount_) info->access = m->access[static_cast<size_t>(device)];
  if (isMulticastId(m->alloc)) {
    const MulticastObject& mc = *fabric_.find(m->alloc);
    info->location = Location{LocationKind::kDevice, -1};  // every member's memory at once
    info->allocationId = mc.id;
    info->handleTypes = mc.props.handleTypes;
    return;
  }
  const Allocation& a = objects_.at(m->alloc);
  info->linear = a.kind == AllocKind::kLinear;
  info->pooled = a.kind == AllocKind::kPooled;
  info->location = a.props.location;
  info->allocationId = a.id;
  info->handleTypes = a.props.handleTypes;
  info->gpuDirectRdmaCapable = a.kind == AllocKind::kLinear || a.props.gpuDirectRdmaCapable;
  info->requestedSize = a.requested;
}

Status ProcessSpace::linearAllocationAt(uint64_t va, AllocId* id) const {
  const model::Mapping* m = space_.mappingContaining(va);
  if (m == nullptr) return Status::kInvalidValue;
  auto it = internal_.find(m->va);
  if (it == internal_.end() || it->second != m->alloc || objects_.at(m->alloc).kind != AllocKind::kLinear) {
    return Status::kInvalidValue;
  }
  *id = m->alloc;
  return Status::kOk;
}

bool ProcessSpace::madeLinear(AllocId id) const {
  for (const auto& [va, alloc] : internal_) {
    if (alloc == id) return true;
  }
  return false;
}

Status ProcessSpace::openImported(AllocId id, uint64_t* va) {
  for (auto& [at, imported] : imported_) {
    if (imported.id != id) continue;
    ++imported.opens;
    *va = at;
    return Status::kOk;
  }
  const uint64_t size = objects_.at(id).props.size;
  uint64_t at = 0;
  const Status s = space_.reserve(size, kLinearGranule, 0, true, &at);
  if (s != Status::kOk) return s;
  space_.map(at, size, id, 0, everyDevice_);
  objects_.retain(id);
  imported_[at] = Imported{id, 1};
  *va = at;
  return Status::kOk;
}

Status ProcessSpace::closeImported(uint64_t va) {
  auto it = imported_.find(va);
  if (it == imported_.end()) return Status::kInvalidValue;
  if (--it->second.opens > 0) return Status::kOk;
  const uint64_t size = objects_.at(it->second.id).props.size;
  imported_.erase(it);
  dropInternal(va, size);
  return Status::kOk;
}

void ProcessSpace::addToDigest(model::Digest& d) const {
  space_.addToDigest(d);
  d.add(imported_.size());
  for (const auto& [va, imported] : imported_) d.add(va).add(imported.id).add(imported.opens);
}

void ProcessSpace::addHoldings(std::vector<Holding>* out) const {
  // The device an allocation lives on (-1: host memory, or a multicast object's several).
  const auto deviceOf = [this](model::AllocId id) {
    const Allocation* a = objects_.find(id);
    return a != nullptr && a->props.location.kind == LocationKind::kDevice ? a->props.location.id : -1;
  };
  space_.forEachReservation([&](const model::Reservation& r) {
    if (!r.internal) out->push_back(Holding{Holding::Kind::kReservation, r.va, r.size, -1});
  });
  space_.forEachMapping([&](const model::Mapping& m) {
    const model::Reservation* r = space_.reservationContaining(m.va);
    if (r != nullptr && !r->internal) out->push_back(Holding{Holding::Kind::kMapping, m.va, m.size, deviceOf(m.alloc)});
  });
  for (const auto& [va, id] : internal_) {
    const Allocation* a = objects_.find(id);
    if (a == nullptr) continue;
    const Holding::Kind kind = a->kind == AllocKind::kPooled ? Holding::Kind::kPooled : Holding::Kind::kLinear;
    out->push_back(Holding{kind, va, a->requested != 0 ? a->requested : a->props.size, deviceOf(id)});
  }
  for (const auto& [va, imp] : imported_) {
    const Allocation* a = objects_.find(imp.id);
    out->push_back(Holding{Holding::Kind::kIpcOpen, va, a != nullptr ? a->requested : 0, deviceOf(imp.id)});
  }
}

void ProcessSpace::releaseAll() {
  std::vector<AllocId> mapped;
  space_.forEachMapping([&](const model::Mapping& m) { mapped.push_back(m.alloc); });
  for (AllocId id : mapped) objects_.release(id);
}

}  // namespace mcsim::fabric
