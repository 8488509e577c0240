#include "fabric/fabric_manager.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace mcsim::fabric {

const char* fabricManagerStateName(FabricManagerState s) {
  switch (s) {
    case FabricManagerState::kNotStarted: return "not-started";
    case FabricManagerState::kInitialising: return "initialising";
    case FabricManagerState::kReady: return "ready";
    case FabricManagerState::kDegraded: return "degraded";
  }
  return "?";
}

FabricManagerState initialFabricManagerState(const Preset& preset, const std::string& override) {
  // MCSIM_FABRIC_MANAGER (settings/settings.def lets only these names through).
  for (auto s : {FabricManagerState::kNotStarted, FabricManagerState::kInitialising, FabricManagerState::kReady,
                 FabricManagerState::kDegraded}) {
    if (override == fabricManagerStateName(s)) return s;
  }
  // The preset's fabric_manager.initial_state (checked when the preset was read).
  for (auto s : {FabricManagerState::kNotStarted, FabricManagerState::kInitialising, FabricManagerState::kReady,
                 FabricManagerState::kDegraded}) {
    if (preset.fabricManagerInitialState == fabricManagerStateName(s)) return s;
  }
  return preset.multicastSupported() ? FabricManagerState::kReady : FabricManagerState::kNotStarted;
}

bool MulticastObject::hasMember(int dev) const {
  return std::find(members.begin(), members.end(), dev) != members.end();
}

FabricManager::FabricManager(const Preset& preset, const std::string& initialState)
    : preset_(preset),
      state_(initialFabricManagerState(preset, initialState)),
      boundPerDevice_(static_cast<size_t>(preset.gpuCount), 0) {}

Status FabricManager::gate() const {
  switch (state_) {
    case FabricManagerState::kReady: return Status::kOk;
    case FabricManagerState::kInitialising:
      return MCSIM_REFUSE(Status::kSystemNotReady, "the fabric manager is still initialising");
    case FabricManagerState::kNotStarted:
      return MCSIM_REFUSE(Status::kIllegalState, "the fabric manager is not running");
    case FabricManagerState::kDegraded:
      return MCSIM_REFUSE(Status::kIllegalState, "the fabric manager is degraded");
  }
  return Status::kIllegalState;
}

Status FabricManager::create(const MulticastProps& props, uint64_t* id) {
  const uint64_t gran = preset_.multicast.granularityMinimum;
  if (props.numDevices == 0 || props.numDevices > static_cast<unsigned>(preset_.multicast.maxTeamSize)) {
    return Status::kInvalidValue;
  }
  if (props.size == 0 || props.size % gran != 0) return Status::kInvalidValue;
  MulticastObject mc;
  mc.id = kMulticastIdBit | ++nextId_;
  mc.props = props;
  mc.refs = 1;
  *id = mc.id;
  objects_.emplace(mc.id, std::move(mc));
  return Status::kOk;
}

MulticastObject* FabricManager::find(uint64_t id) {
  auto it = objects_.find(id);
  return it == objects_.end() ? nullptr : &it->second;
}

const MulticastObject* FabricManager::find(uint64_t id) const {
  auto it = objects_.find(id);
  return it == objects_.end() ? nullptr : &it->second;
}

Status FabricManager::addDevice(MulticastObject& mc, int device) {
  // max_team_size bounds how many devices a team holds (checked at create), not which ones: a
  // preset whose teams are smaller than the node must still let its high-numbered devices join
  // (multicast.AddDevice.AnyDeviceJoinsWhenTeamsAreSmallerThanTheNode).
  if (device < 0 || device >= preset_.gpuCount) {
    return MCSIM_REFUSE(Status::kInvalidDevice, "device ", std::to_string(device), " is not one of the node's ",
                        std::to_string(preset_.gpuCount), " GPUs");
  }
  // A device joins once, into a team that still has room; the reference names no code for
  // either, and CUDA_ERROR_INVALID_VALUE is the one it lists for a bad argument.
  if (mc.hasMember(device)) return MCSIM_REFUSE(Status::kInvalidValue, "device ", std::to_string(device), " was already added");
  if (mc.complete()) {
    return MCSIM_REFUSE(Status::kInvalidValue, "the team is complete: all ", std::to_string(mc.props.numDevices),
                        " devices (numDevices) were added");
  }
  mc.members.push_back(device);
  return Status::kOk;
}

Status FabricManager::bind(MulticastObject& mc, int device, uint64_t mcOffset, const BindSource& src,
                           uint64_t size) {
  if (!mc.hasMember(device)) {
    return MCSIM_REFUSE(Status::kInvalidDevice, "device ", std::to_string(device),
                        " was not added to the multicast object (cuMulticastAddDevice)");
  }
  if (mc.shared && src.handleTypes == 0) {
    return MCSIM_REFUSE(Status::kInvalidValue, "an imported multicast object binds only memory created with a "
                        "shareable handle type (CUmemAllocationProp::requestedHandleTypes)");
  }
  // One binding per device and multicast range.
  for (const auto& entry : mc.bindings) {
    const auto& b = entry.second;  // (not a structured binding: MCSIM_REFUSE's lambda uses it)
    if (b.device == device && mcOffset < b.mcOffset + b.size && b.mcOffset < mcOffset + size) {
      return MCSIM_REFUSE(Status::kInvalidValue, "device ", std::to_string(device), " already has memory bound at ",
                          "multicast offsets [", std::to_string(b.mcOffset), ", ", std::to_string(b.mcOffset + b.size),
                          "), which overlap this bind");
    }
  }
  // Switch resources: the object's multicast group takes a slot on every switch at its first
  // binding (running out is CUDA_ERROR_OUT_OF_MEMORY: nccl issue 2077).
  if (!mc.holdsGroup && (groups_ >= preset_.nvswitch.multicastSlots || (slotVeto_ && slotVeto_()))) {
    return MCSIM_REFUSE(Status::kOutOfMemory, "every switch's multicast slots are taken (",
                        std::to_string(preset_.nvswitch.multicastSlots), " groups)");
  }
  uint64_t& bound = boundPerDevice_[static_cast<size_t>(device)];
  if (size > preset_.gpu.memoryBytes - std::min(bound, preset_.gpu.memoryBytes)) {
    return MCSIM_REFUSE(Status::kOutOfMemory, "device ", std::to_string(device), " has ", std::to_string(bound),
                        " bytes bound to multicast objects already; this bind would pass its memory size");
  }
  if (!mc.holdsGroup) {
    mc.holdsGroup = true;
    ++groups_;
  }
  bound += size;
  mc.boundBytes += size;
  mc.bindings[{device, mcOffset}] = MulticastBinding{device, mcOffset, size, src.alloc, src.offset, src.owner};
  return Status::kOk;
}

Status FabricManager::unbind(MulticastObject& mc, int device, uint64_t mcOffset, uint64_t size,
                             MulticastBinding* removed) {
  if (!mc.hasMember(device)) {
    return MCSIM_REFUSE(Status::kInvalidDevice, "device ", std::to_string(device), " is not in the multicast object's team");
  }
  auto it = mc.bindings.find({device, mcOffset});
  if (it == mc.bindings.end() || it->second.size != size) {
    // Undefined in the reference; refused here rather than guessed at.
    std::fprintf(stderr, "mcsim: cuMulticastUnbind(device %d, offset %llu, size %llu) matches no "
                         "binding of multicast object %llu; an unbind must repeat a bind's offset "
                         "and size\n", device, static_cast<unsigned long long>(mcOffset),
                 static_cast<unsigned long long>(size),
                 static_cast<unsigned long long>(mc.id & ~kMulticastIdBit));
    return Status::kInvalidValue;
  }
  *removed = it->second;
  boundPerDevice_[static_cast<size_t>(device)] -= size;
  mc.boundBytes -= size;
  mc.bindings.erase(it);
  return Status::kOk;
}

std::vector<MulticastBinding> FabricManager::unbindOwnedBy(uint64_t owner) {
  std::vector<MulticastBinding> out;
  std::vector<uint64_t> ids;
  for (const auto& kv : objects_) ids.push_back(kv.first);
  std::sort(ids.begin(), ids.end());
  for (uint64_t id : ids) {
    MulticastObject& mc = objects_.at(id);
    for (auto it = mc.bindings.begin(); it != mc.bindings.end();) {
      if (it->second.owner != owner) {
        ++it;
        continue;
      }
      boundPerDevice_[static_cast<size_t>(it->second.device)] -= it->second.size;
      mc.boundBytes -= it->second.size;
      out.push_back(it->second);
      it = mc.bindings.erase(it);
    }
  }
  return out;
}

std::vector<MulticastBinding> FabricManager::destroy(uint64_t id) {
  std::vector<MulticastBinding> out;
  auto it = objects_.find(id);
  if (it == objects_.end()) return out;
  for (const auto& [key, b] : it->second.bindings) {
    boundPerDevice_[static_cast<size_t>(b.device)] -= b.size;
    out.push_back(b);
  }
  if (it->second.holdsGroup) --groups_;
  objects_.erase(it);
  return out;
}

void FabricManager::restart() {
  for (auto& [id, mc] : objects_) mc.stale = true;
  state_ = FabricManagerState::kReady;
}

void FabricManager::addToDigest(model::Digest& d) const {
  d.add(static_cast<uint64_t>(state_)).add(nextId_).add(static_cast<uint64_t>(groups_));
  d.add(objects_.size());
  std::vector<uint64_t> ids;
  for (const auto& kv : objects_) ids.push_back(kv.first);
  std::sort(ids.begin(), ids.end());
  for (uint64_t id : ids) {
    const MulticastObject& mc = objects_.at(id);
    d.add(id).add(mc.props.numDevices).add(mc.props.size).add(mc.props.handleTypes);
    d.add(mc.shared ? 1 : 0).add(mc.refs).add(mc.holdsGroup ? 1 : 0).add(mc.stale ? 1 : 0);
    d.add(mc.members.size());
    for (int m : mc.members) d.add(static_cast<uint64_t>(m));
    d.add(mc.bindings.size());
    for (const auto& [key, b] : mc.bindings) {
      d.add(static_cast<uint64_t>(b.device)).add(b.mcOffset).add(b.size).add(b.alloc).add(b.allocOffset);
    }
  }
  for (uint64_t b : boundPerDevice_) d.add(b);
}

}  // namespace mcsim::fabric
