// A GPU as bulk transfers see it: its memory system (L2 in front of HBM), its PCIe link to the
// host, and its copy engines' fixed cost per operation. NVLink ports belong to the fabric
// (fabric/node_model.h), which wires GPUs to switches.
#pragma once

#include <cstdint>
#include <string>

#include "model/bandwidth_server.h"
#include "model/hbm.h"
#include "model/l2_cache.h"

namespace mcsim::model {

struct CopyEngineSpec {
  int count = 1;
  uint64_t setupPs = 0;         // front-end and copy-engine cost of starting one operation
  uint64_t chunkBytes = 262144; // transfers move in chunks of this size
  int windowChunks = 8;         // chunks one operation keeps in flight (flow control)
};

struct PcieSpec {
  double bytesPerSecond = 0;          // sustained per direction, pinned host memory
  double pageableBytesPerSecond = 0;  // the driver's staging copy for pageable host memory
  uint64_t latencyPs = 0;
  // A copy between two GPUs without peer access: the driver stages it through pinned host memory
  // (D2H by one GPU, H2D by the other), at this rate once both hops overlap, after this setup.
  double stagedPeerBytesPerSecond = 0;
  uint64_t stagedPeerSetupPs = 0;
};

// The SMs as kernels' memory traffic sees them: a launch costs `launchPs` before its first
// access; its loads, stores and multimem operations stream in chunks of `chunkBytes`, with as
// many bytes outstanding as its threads keep in flight (`bytesInFlightPerThread` each, for at
// most `maxResidentThreads` threads: the GPU's SMs times the threads each holds). Throughput
// then follows from the round trip the rest of the model gives (Little's law), up to what the
// SMs the launch occupies can move (`bytesPerSecPerSm` each, counting bytes loaded and stored;
// one block per SM, up to `smCount`).
struct SmSpec {
  uint64_t launchPs = 0;
  uint64_t chunkBytes = 65536;
  uint64_t bytesInFlightPerThread = 16;
  uint64_t maxResidentThreads = 1;
  double bytesPerSecPerSm = 0;  // 0: no per-SM limit
  uint64_t smCount = 1;
  // Warp instructions one SM issues a second (a PTX kernel's instructions, docs/ptx.md): its warp
  // schedulers times the SM clock.
  double warpInstructionsPerSecPerSm = 0;
  // What a fence at .gpu and at .sys scope costs the warp that makes it, beyond waiting for the
  // traffic it orders to land (docs/ptx.md, "Fences"); 0: fences cost nothing.
  uint64_t fenceGpuPs = 0;
  uint64_t fenceSysPs = 0;
};

struct GpuTimingSpec {
  HbmSpec hbm;
  L2Spec l2;
  CopyEngineSpec copyEngine;
  PcieSpec pcie;
  SmSpec sm;
};

class Gpu {
 public:
  // `horizon`: the simulation's (bandwidth_server.h), which every resource of the GPU reads.
  Gpu(int ordinal, const GpuTimingSpec& spec, const Horizon* horizon);

  // Reads or writes `bytes` at `offset` of physical allocation `alloc` in this GPU's memory,
  // arriving at `arrivePs`; returns when done. The L2 decides what reaches HBM.
  uint64_t read(uint64_t arrivePs, uint64_t alloc, uint64_t offset, uint64_t bytes);
  uint64_t write(uint64_t arrivePs, uint64_t alloc, uint64_t offset, uint64_t bytes);
  // Host memory in and out over PCIe (the host's own memory is not a bottleneck here).
  uint64_t fromHost(uint64_t arrivePs, uint64_t bytes, bool pageable);
  uint64_t toHost(uint64_t arrivePs, uint64_t bytes, bool pageable);
  // The driver's staging of a peer copy without peer access, between this GPU's D2H hop and the
  // other GPU's H2D hop (pcie.stagedPeerBytesPerSecond).
  uint64_t stagePeer(uint64_t arrivePs, uint64_t bytes);
  void forget(uint64_t alloc) { l2_.drop(alloc); }

  const GpuTimingSpec& spec() const { return spec_; }

 private:
  // Where allocation `alloc`'s bytes sit in the HBM address space, for the stack interleave:
  // allocations start at different stacks, as physical placement would have them.
  uint64_t physical(uint64_t alloc, uint64_t offset) const {
    return alloc * spec_.hbm.interleaveBytes * 7 + offset;
  }
  uint64_t memory(uint64_t arrivePs, uint64_t alloc, uint64_t offset, uint64_t bytes, bool write);
  GpuTimingSpec spec_;
  Hbm hbm_;
  L2Cache l2_;
  BandwidthServer l2Port_;
  BandwidthServer pcieIn_, pcieOut_, stagingIn_, stagingOut_, stagingPeer_;
};

}  // namespace mcsim::model
