// The fabric manager: multicast objects, their teams and bindings, the NVSwitch multicast
// resources they hold, and the manager's own state (not started, initialising, ready,
// degraded). It is part of the node and runs under the node's lock; it never blocks. Waiting
// for a team to complete is the node's business (node_host.cpp), since it must release the
// lock while it waits.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "fabric/memory_types.h"
#include "fabric/preset.h"
#include "model/address_space.h"
#include "model/digest.h"
#include "model/status.h"

namespace mcsim::fabric {

using model::AllocId;

enum class FabricManagerState { kNotStarted, kInitialising, kReady, kDegraded };
const char* fabricManagerStateName(FabricManagerState s);

// Multicast object ids carry this bit, so that one id space serves allocations and multicast
// objects (a mapping records either).
constexpr uint64_t kMulticastIdBit = uint64_t{1} << 63;
inline bool isMulticastId(uint64_t id) { return (id & kMulticastIdBit) != 0; }

struct MulticastProps {
  unsigned numDevices = 0;
  uint64_t size = 0;          // bytes that can be bound per device
  uint32_t handleTypes = 0;   // HandleTypeBits it may be exported as
};

// One binding: `size` bytes of a device's team memory at `mcOffset` of the object.
struct MulticastBinding {
  int device = 0;
  uint64_t mcOffset = 0;
  uint64_t size = 0;
  AllocId alloc = 0;          // the bound memory (the binding holds a reference on it)
  uint64_t allocOffset = 0;
  uint64_t owner = 0;         // the attached process that made it (node_host.h)
};

struct MulticastObject {
  uint64_t id = 0;
  MulticastProps props;
  bool shared = false;               // exported or imported: binds only shareable memory
  std::vector<int> members;          // devices added, in order
  std::map<std::pair<int, uint64_t>, MulticastBinding> bindings;  // keyed by (device, mcOffset)
  uint64_t refs = 0;                 // handle values + mappings, in every attached process
  bool heldByDescriptors = false;
  bool holdsGroup = false;           // holds a multicast group slot on every switch
  bool stale = false;                // made before a fabric manager restart: refused until released
  uint64_t boundBytes = 0;

  bool complete() const { return members.size() == props.numDevices; }
  bool hasMember(int dev) const;
};

// What a bind needs to know of the memory being bound.
struct BindSource {
  AllocId alloc = 0;
  Location location;
  uint64_t allocSize = 0;
  uint32_t handleTypes = 0;
  uint64_t offset = 0;        // into the allocation
  uint64_t owner = 0;         // the attached process that binds it
};

class FabricManager {
 public:
  // `initialState`: as initialFabricManagerState's `override`.
  FabricManager(const Preset& preset, const std::string& initialState);

  FabricManagerState state() const { return state_; }
  void setState(FabricManagerState s) { state_ = s; }
  // A restart without a GPU reset: the manager runs again, but the objects it knew are stale and
  // refused (CUDA_ERROR_INVALID_VALUE) until released, as field reports describe (nccl 1488).
  void restart();
  // Consulted before a switch group slot is taken; true denies it (fault injection).
  void setSlotVeto(std::function<bool()> veto) { slotVeto_ = std::move(veto); }
  // What a multicast call meets when the manager is not ready: kIllegalState when it is not
  // running (field reports: pytorch ci-infra 541, nccl 1788), kSystemNotReady while it is
  // still initialising (nccl-tests 264), kOk otherwise.
  Status gate() const;

  Status create(const MulticastProps& props, uint64_t* id);
  MulticastObject* find(uint64_t id);
  const MulticastObject* find(uint64_t id) const;
  Status addDevice(MulticastObject& mc, int device);
  // Checks and records a binding on a complete team. `device` is the device the binding
  // applies to. Allocates the object's switch group on its first binding.
  Status bind(MulticastObject& mc, int device, uint64_t mcOffset, const BindSource& src, uint64_t size);
  // Removes exactly the binding made at (device, mcOffset) with `size`.
  Status unbind(MulticastObject& mc, int device, uint64_t mcOffset, uint64_t size, MulticastBinding* removed);
  // Removes every binding that process `owner` made (it detached), returning them (whose
  // references the caller drops).
  std::vector<MulticastBinding> unbindOwnedBy(uint64_t owner);
  // Forgets the object, returning its bindings (whose references the caller drops).
  std::vector<MulticastBinding> destroy(uint64_t id);

  int freeSlots() const { return preset_.nvswitch.multicastSlots - groups_; }
  size_t objectCount() const { return objects_.size(); }
  void addToDigest(model::Digest& d) const;

 private:
  const Preset& preset_;
  FabricManagerState state_;
  std::unordered_map<uint64_t, MulticastObject> objects_;  // hash: lookups stay flat; digests sort
  uint64_t nextId_ = 0;
  int groups_ = 0;                      // groups held; every switch holds one per group
  std::function<bool()> slotVeto_;
  std::vector<uint64_t> boundPerDevice_;
};

// The manager's initial state: `override` (MCSIM_FABRIC_MANAGER: not-started | initialising |
// ready | degraded) when it names one, else the preset's fabric_manager.initial_state (by default
// ready on a fabric and not-started without one).
FabricManagerState initialFabricManagerState(const Preset& preset, const std::string& override);

}  // namespace mcsim::fabric
