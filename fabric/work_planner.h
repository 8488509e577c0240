// Work planning: a device operation as a stream hands it to the node (DeviceOp: a copy, a memset,
// a marker, a kernel launch) checked against the submitting process's address space and rights
// and turned into work for the timing model (DeviceWork, node_model.h): its addresses resolved
// to pieces of the node's memory with their host data, multimem operands to every team member's
// bound memory, and the links it needs checked.
//
// Planning changes nothing a digest sees: only memory about to be written is backed on first
// touch. Guarded by the node's lock (node_host.cpp).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "fabric/fault_service.h"
#include "fabric/node.h"
#include "fabric/node_model.h"
#include "fabric/object_table.h"
#include "model/address_space.h"

namespace mcsim::fabric {

class WorkPlanner {
 public:
  // `functional`: whether copies move data (false: MCSIM_TIMING_ONLY=1).
  WorkPlanner(const Preset& preset, ObjectTable& objects, const FabricManager& fabric, const FabricHealth& health,
              bool functional);

  bool functional() const { return functional_; }
  // Checks `op` as the process whose address space is `space` submits it and fills `work`.
  // Kernels carry `abandoned` (the process died: they stop).
  Status plan(const model::AddressSpace& space, const std::shared_ptr<std::atomic<bool>>& abandoned,
              const DeviceOp& op, DeviceWork* work);

 private:
  struct Side;
  struct Run;
  Status resolveSide(const model::AddressSpace& space, uint64_t addr, bool device, bool pinned, uint64_t bytes,
                     int accessor, bool write, Side* side, DeviceWork* work);
  std::vector<Run> runsOf(const Side& side, uint64_t bytes) const;
  Status resolvePlain(const model::AddressSpace& space, uint64_t va, uint64_t bytes, int accessor, bool write,
                      MemorySpan* span, DeviceWork* work);
  Status resolveMulticast(const model::AddressSpace& space, uint64_t va, uint64_t bytes, int accessor,
                          std::vector<int>* gpus, std::vector<MemorySpan>* members, DeviceWork* work);
  // plan() without the timeline's description of the work.
  Status planWork(const model::AddressSpace& space, const std::shared_ptr<std::atomic<bool>>& abandoned,
                  const DeviceOp& op, DeviceWork* work);
  Status planKernel(const model::AddressSpace& space, const std::shared_ptr<std::atomic<bool>>& abandoned,
                    const DeviceOp& op, DeviceWork* work);
  Status planWaitValue(const model::AddressSpace& space, const std::shared_ptr<std::atomic<bool>>& abandoned,
                       const DeviceOp& op, DeviceWork* work);
  MemoryRef memoryRefOf(const model::Segment& sg) const;
  int deviceOf(const std::vector<model::Segment>& segs) const;
  bool withinLinear(const std::vector<model::Segment>& segs) const;
  bool stagedPeer(const DeviceOp& op, const Side& src, const Side& dst) const;

  const Preset& preset_;
  ObjectTable& objects_;
  const FabricManager& fabric_;
  const FabricHealth& health_;
  const bool functional_;
};

}  // namespace mcsim::fabric
