// The node's objects and their references (object_table.h).
#include "fabric/object_table.h"

#include "fabric/export_table.h"
#include "fabric/fabric_manager.h"
#include "fabric/node_model.h"

namespace mcsim::fabric {

using model::AllocId;
using model::Segment;

ObjectTable::ObjectTable(const Preset& preset, FabricManager& fabric, ExportTable& exports, NodeModel& model)
    : preset_(preset),
      fabric_(fabric),
      exports_(exports),
      model_(model),
      deviceUsed_(static_cast<size_t>(preset.gpuCount), 0),
      hostUsed_(static_cast<size_t>(preset.hostNumaNodes), 0) {}

uint64_t* ObjectTable::usedFor(const Location& loc, uint64_t* capacity) {
  if (loc.kind == LocationKind::kDevice) {
    *capacity = preset_.gpu.memoryBytes;
    return &deviceUsed_[static_cast<size_t>(loc.id)];
  }
  *capacity = preset_.hostMemoryBytesPerNumaNode;
  // Plain host memory (no NUMA node named) is charged to node 0.
  return &hostUsed_[loc.kind == LocationKind::kHost ? 0 : static_cast<size_t>(loc.id)];
}

Status ObjectTable::create(const AllocationProps& props, AllocKind kind, uint64_t requested, AllocId* id) {
  const bool device = props.location.kind == LocationKind::kDevice;
  const int limit = device ? preset_.gpuCount : preset_.hostNumaNodes;
  if (props.location.kind != LocationKind::kHost && (props.location.id < 0 || props.location.id >= limit)) {
    return device ? Status::kInvalidDevice : Status::kInvalidValue;
  }
  uint64_t capacity = 0;
  uint64_t* used = usedFor(props.location, &capacity);
  if (props.size > capacity - *used) return Status::kOutOfMemory;
  *used += props.size;
  Allocation a;
  a.id = ++nextAlloc_;
  a.props = props;
  a.kind = kind;
  a.requested = requested;
  a.refs = 1;
  *id = a.id;
  allocs_.emplace(a.id, std::move(a));
  return Status::kOk;
}

void ObjectTable::destroyAllocation(AllocId id) {
  auto it = allocs_.find(id);
  uint64_t capacity = 0;
  *usedFor(it->second.props.location, &capacity) -= it->second.props.size;
  if (it->second.props.location.kind == LocationKind::kDevice) model_.forget(it->second.props.location.id, id);
  allocs_.erase(it);  // unmaps the backing region, giving its pages back
}

const Allocation* ObjectTable::find(AllocId id) const {
  auto it = allocs_.find(id);
  return it == allocs_.end() ? nullptr : &it->second;
}

bool ObjectTable::exists(uint64_t id) const {
  return isMulticastId(id) ? fabric_.find(id) != nullptr : allocs_.count(id) != 0;
}

ObjectTable::View ObjectTable::viewOf(uint64_t id) {
  if (isMulticastId(id)) {
    MulticastObject& mc = *fabric_.find(id);
    return {&mc.refs, &mc.heldByDescriptors, mc.props.handleTypes};
  }
  Allocation& a = allocs_.at(id);
  return {&a.refs, &a.heldByDescriptors, a.props.handleTypes};
}

uint32_t ObjectTable::handleTypes(uint64_t id) { return viewOf(id).handleTypes; }

void ObjectTable::retainImported(uint64_t id) {
  const View o = viewOf(id);
  *o.heldByDescriptors = false;
  held_.erase(id);
  ++*o.refs;
}

void ObjectTable::release(uint64_t id) {
  if (!exists(id)) return;
  const View o = viewOf(id);
  if (--*o.refs != 0) return;
  if (exports_.stillOpen(id)) {
    *o.heldByDescriptors = true;
    held_.insert(id);
  } else {
    destroy(id);
  }
}

void ObjectTable::sweep() {
  std::vector<uint64_t> done;
  for (uint64_t id : held_) {
    if (!exports_.stillOpen(id)) done.push_back(id);
  }
  for (uint64_t id : done) destroy(id);
}

void ObjectTable::destroy(uint64_t id) {
  held_.erase(id);
  exports_.forget(id);
  if (onDestroyed_) onDestroyed_(id);
  if (!isMulticastId(id)) {
    destroyAllocation(id);
    return;
  }
  // The object's bindings held references on the bound memory.
  for (const MulticastBinding& b : fabric_.destroy(id)) release(b.alloc);
}

bool ObjectTable::back(const std::vector<Segment>& segs, std::vector<uint8_t*>* out) {
  for (const Segment& sg : segs) {
    Allocation& a = allocs_.at(sg.alloc);
    if (!a.region) {
      a.region = model::LazyRegion::create(a.props.size);
      if (!a.region) return false;
    }
    out->push_back(a.region->data() + sg.allocOffset);
  }
  return true;
}

std::vector<const uint8_t*> ObjectTable::peek(const std::vector<Segment>& segs) const {
  std::vector<const uint8_t*> out;
  for (const Segment& sg : segs) {
    const Allocation& a = allocs_.at(sg.alloc);
    out.push_back(a.region ? a.region->data() + sg.allocOffset : nullptr);
  }
  return out;
}

uint64_t ObjectTable::residentBytes() const {
  uint64_t bytes = 0;
  for (const auto& [id, a] : allocs_) bytes += a.region ? a.region->residentBytes() : 0;
  return bytes;
}

void ObjectTable::addAllocationsToDigest(model::Digest& d) const {
  d.add(nextAlloc_);
  d.add(allocs_.size());
  for (AllocId id : model::sortedKeys(allocs_)) {
    const Allocation& a = allocs_.at(id);
    d.add(id).add(a.refs).add(static_cast<uint64_t>(a.kind)).add(a.props.size).add(a.props.handleTypes);
    d.add(a.heldByDescriptors ? 1 : 0);
    d.add(static_cast<uint64_t>(a.props.location.kind)).add(static_cast<uint64_t>(a.props.location.id));
  }
}

void ObjectTable::addUsageToDigest(model::Digest& d) const {
  for (uint64_t u : deviceUsed_) d.add(u);
  for (uint64_t u : hostUsed_) d.add(u);
}

}  // namespace mcsim::fabric
