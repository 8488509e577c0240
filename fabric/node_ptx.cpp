// A program's own kernel on the node model: its PTX run by the executor (ptx/executor.h) as device
// work, in simulated time (docs/ptx.md, "On the node").
//
// Data: the kernel runs when its turn comes in simulated time (after the work it follows and the
// launch cost), all of it at that instant, its global accesses resolved as they happen through
// the launching process's address space (mappings and rights, as copies and the behavioural
// models resolve them: ptx/address_space_memory.h) to the backing bytes of the allocations.
// The space's mappings lock is held shared meanwhile, so that another thread's map or unmap
// waits for the kernel rather than changing what it reads under it.
//
// Timing, a first version: the kernel ends when both its instructions and its memory traffic are
// done. Instructions: its warp instructions issued by the SMs its blocks occupy (one block an
// SM, up to the GPU's SMs) at the preset's rate per SM. Memory: the bytes it read and wrote in
// each allocation, streamed in chunks through that memory's path as a behavioural model's copy
// step streams them (this GPU's HBM and L2, or a peer's over NVLink and the switches), with the
// loads the resident threads keep in flight, and bounded by the SMs' own bytes per second.
#include <algorithm>
#include <deque>
#include <mutex>
#include <shared_mutex>

#include "fabric/node_model.h"
#include "model/engine.h"
#include "ptx/address_space_memory.h"

namespace mcsim::fabric {

using model::Engine;

namespace {

// Global memory as a launch sees it: resolved through the process's address space to the bytes
// the launch holds, with the bytes moved through each allocation counted for the timing.
class LaunchMemory : public ptx::GlobalMemory {
 public:
  struct Traffic {
    uint64_t read = 0, written = 0;
  };

  explicit LaunchMemory(const PtxLaunch& launch)
      : launch_(launch), inner_(*launch.space, [this](model::AllocId id, uint64_t* size) { return backing(id, size); }) {}

  ptx::MemoryError resolve(uint64_t va, ptx::AccessKind kind, int device, ptx::MemoryWindow* out) override {
    const ptx::MemoryError e = inner_.resolve(va, kind, device, out);
    if (e == ptx::MemoryError::kNone) windows_[out->host] = lastAlloc_;
    return e;
  }

  void accessed(const ptx::MemoryWindow& window, ptx::AccessKind kind, uint64_t bytes) override {
    auto it = windows_.find(window.host);
    if (it == windows_.end()) return;
    Traffic& t = traffic_[it->second];
    (kind == ptx::AccessKind::kRead ? t.read : t.written) += bytes;
  }

  // Per allocation, in id order.
  const std::map<model::AllocId, Traffic>& traffic() const { return traffic_; }

 private:
  uint8_t* backing(model::AllocId id, uint64_t* size) {
    // An allocation the launch holds no bytes of (a multicast object, or memory made after the
    // launch was accepted) reads as unmapped.
    auto it = launch_.backing.find(id);
    if (it == launch_.backing.end()) return nullptr;
    lastAlloc_ = id;
    *size = it->second.size;
    return it->second.data;
  }

  const PtxLaunch& launch_;
  ptx::AddressSpaceMemory inner_;
  model::AllocId lastAlloc_ = 0;
  std::map<const uint8_t*, model::AllocId> windows_;  // resolved window -> its allocation
  std::map<model::AllocId, Traffic> traffic_;
};

model::WorkFault::Kind faultKind(ptx::Fault f) {
  switch (f) {
    case ptx::Fault::kIllegalAddress: return model::WorkFault::Kind::kIllegalAddress;
    case ptx::Fault::kMisalignedAddress: return model::WorkFault::Kind::kMisalignedAddress;
    // A kernel that can never finish fails its synchronisation as a hang does.
    case ptx::Fault::kBarrierDeadlock:
    case ptx::Fault::kTimeout: return model::WorkFault::Kind::kTimeout;
    case ptx::Fault::kTrap:
    case ptx::Fault::kInvalidLaunch:
    case ptx::Fault::kNone: break;
  }
  return model::WorkFault::Kind::kLaunchFailed;
}

}  // namespace

void NodeModel::executePtxKernel(DeviceWork& w) {
  Engine& engine = engine_;
  const uint64_t start = Engine::simNowPs();
  model::Gpu& gpu = *gpus_[static_cast<size_t>(w.engineGpu)];
  const model::SmSpec& sm = gpu.spec().sm;
  engine.waitUntil(start + sm.launchPs);
  PtxLaunch& launch = *w.ptx;
  launch.config.device = w.engineGpu;
  launch.config.smCount = static_cast<uint32_t>(sm.smCount);
  launch.config.globalTimerNs = Engine::simNowPs() / 1000;

  ptx::LaunchResult result;
  std::map<model::AllocId, LaunchMemory::Traffic> traffic;
  {
    std::shared_lock<std::shared_mutex> reading(*launch.spaceLock);
    // Its process is gone (the space with it): the kernel never runs.
    if (w.abandoned != nullptr && w.abandoned->load()) return;
    LaunchMemory memory(launch);
    ptx::Executor executor(*launch.module, memory);
    result = executor.launch(launch.kernel, launch.config);
    traffic = memory.traffic();
  }
  const uint64_t begun = Engine::simNowPs();

  // Instructions: the SMs the grid occupies issue them.
  const uint64_t blocks = uint64_t{launch.config.grid.x} * launch.config.grid.y * launch.config.grid.z;
  const uint64_t sms = std::min(std::max<uint64_t>(blocks, 1), sm.smCount);
  uint64_t end = begun;
  if (sm.warpInstructionsPerSecPerSm > 0) {
    end += static_cast<uint64_t>(static_cast<double>(result.warpInstructions) * 1e12 /
                                 (sm.warpInstructionsPerSecPerSm * static_cast<double>(sms)));
  }

  // Memory: each allocation's bytes through its path, chunk by chunk, as a copy step's.
  const uint64_t threads = blocks * launch.config.block.x * launch.config.block.y * launch.config.block.z;
  const uint64_t inflight = std::min(std::max<uint64_t>(threads, 1), sm.maxResidentThreads) * sm.bytesInFlightPerThread;
  const size_t window = static_cast<size_t>(std::max<uint64_t>(1, inflight / sm.chunkBytes));
  const uint64_t chunk = std::min(sm.chunkBytes, std::max<uint64_t>(inflight, 512));
  model::BandwidthServer smIssue(sm.bytesPerSecPerSm * static_cast<double>(sms), model::TimelineTrack(), &horizon_);
  std::deque<uint64_t> outstanding;
  for (const auto& [alloc, t] : traffic) {
    const PtxLaunch::Backing& b = launch.backing.at(alloc);
    // Host memory mapped for the device is not timed here (its path is PCIe, which kernels'
    // steps do not model either).
    if (!b.ref.device || b.ref.gpu < 0 || b.ref.gpu >= gpuCount()) continue;
    for (const bool write : {false, true}) {
      const uint64_t bytes = write ? t.written : t.read;
      MemorySpan span{MemoryRun{b.ref, nullptr, bytes}};
      for (uint64_t off = 0; off < bytes; off += chunk) {
        if (outstanding.size() >= window) {
          engine.waitUntil(outstanding.front());
          outstanding.pop_front();
        }
        const uint64_t n = std::min(chunk, bytes - off);
        const uint64_t now = Engine::simNowPs();
        horizon_.ps = now;
        const uint64_t smDone = sm.bytesPerSecPerSm > 0 ? smIssue.serve(now, n) : now;
        uint64_t released = now, done = now;
        if (write) {
          done = writeSpan(w.engineGpu, span, off, n, now, false, "store", &released);
        } else {
          done = readSpan(w.engineGpu, span, off, n, now, "load");
          released = done;
        }
        outstanding.push_back(std::max(released, smDone));
        end = std::max({end, done, smDone});
      }
    }
  }
  engine.waitUntil(end);

  if (result.fault != ptx::Fault::kNone) {
    auto f = std::make_shared<model::WorkFault>();
    f->kind = faultKind(result.fault);
    f->message = result.message;
    w.fault = std::move(f);
  }
  if (model::Timeline::active() != nullptr && !w.stream.empty()) {
    model::Timeline::trackIfActive("GPU " + std::to_string(w.engineGpu), "stream " + w.stream)
        .span(start, Engine::simNowPs(), w.label.c_str());
  }
}

}  // namespace mcsim::fabric
