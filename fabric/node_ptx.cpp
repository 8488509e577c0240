// A program's own kernel on the node model: its PTX run by the executor (ptx/executor.h) as device
// work, in simulated time (docs/ptx.md, "On the node").
//
// Co-scheduling: every running PTX kernel (of every GPU of the node) is a simulation process that
// runs its launch piecewise: a slice of warp instructions at the kernel's own simulated time, then
// it waits until the slice's instructions have issued, and runs the next. The simulation thread
// runs the processes in simulated-time order, so kernels that run at the same time interleave
// slice by slice, deterministically: the order follows from simulated time alone. A slice's effects
// on memory appear at its start, but for its release stores to another GPU's memory (a store after
// a fence at .gpu or .sys scope, or a st.release there: the flag that publishes data), which are
// written when the traffic the kernel issued before them has landed, so that a flag never passes
// the data it publishes (LaunchMemory::deferRelease, `held` below). A warp that makes a fence at
// .gpu or .sys scope waits until the stores to peers before it have landed or left, at least the
// fence's own cost (LaunchMemory::fence, `fenceAt` below), and the kernel's next slice starts no
// earlier. A kernel whose every warp spins (Executor::advance answers
// kWaiting) waits for memory to change (NodeModel::memoryChanged: another kernel's store, a copy,
// a behavioural kernel's step) and resumes then, at that simulated time; a kernel that waits on
// a word nothing will write leaves the simulation with nothing to do, and the engine reports the
// hang with what each waiting kernel waits on (describeWaitingKernels).
//
// Data: global accesses (multimem ones to every member's memory of the multicast objects the
// launch holds, PtxLaunch::multicast) are resolved as they happen, each under the launching process's
// mappings lock (shared), through its address space (mappings and rights, as copies and the
// behavioural models resolve them: ptx/address_space_memory.h) to the backing bytes of the
// allocations the launch holds. So another thread's map or unmap waits at most for one access.
//
// Timing: a slice's instructions issue from the SMs the grid occupies (one block an SM, up to the
// GPU's SMs) at the preset's rate per SM, after the previous slice's; its memory traffic (the
// bytes it read and wrote in each allocation) streams in chunks through that memory's path as a
// behavioural model's copy step streams them (this GPU's HBM and L2, or a peer's over NVLink and
// the switches), with the loads the resident threads keep in flight, and bounded by the SMs' own
// bytes per second; its multimem traffic as the behavioural models' multimem steps stream theirs
// (the switches replicate st and red, their reduction engines combine ld_reduce). The slice's
// streams (each allocation's reads and writes, each multicast object's accesses) take turns chunk
// by chunk in one window of bytes in flight, from which each chunk leaves when its own access is
// done. Warp turns that only polled a word cost nothing. The kernel ends when its last slice's instructions and traffic
// are done.
#include <algorithm>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <queue>
#include <set>
#include <shared_mutex>
#include <utility>

#include "fabric/fabric_manager.h"
#include "fabric/node_model.h"
#include "model/engine.h"
#include "ptx/address_space_memory.h"

namespace mcsim::fabric {

using model::Engine;

namespace {

// Warp instructions a kernel runs before the simulation moves on to other work: small enough that
// kernels that run at the same time see each other's writes within a few hundred nanoseconds of
// simulated time (64 Ki warp instructions on 132 SMs issuing 4 a cycle at 1.98 GHz: 63 ns), large
// enough that a slice's bookkeeping costs nothing measurable.
constexpr uint64_t kSliceWarpInstructions = 1 << 16;

// Global memory as a launch sees it: resolved through the process's address space to the bytes
// the launch holds, with the bytes moved through each allocation counted for the timing.
class LaunchMemory : public ptx::GlobalMemory {
 public:
  // Bytes moved in one direction (whole sectors, as the memory system moves them:
  // ptx::AccessRun), and the range of offsets in the allocation they came from.
  struct Direction {
    uint64_t bytes = 0;
    uint64_t low = UINT64_MAX, high = 0;
    void add(uint64_t n, uint64_t from, uint64_t to) {
      bytes += n;
      low = std::min(low, from);
      high = std::max(high, to);
    }
    void add(const Direction& d) { add(d.bytes, d.low, d.high); }
  };
  struct Traffic {
    Direction read, written;
  };

  // `health`: the fabric's, as the model has it (simulation thread).
  ~LaunchMemory() override { releaseRegistered(); }
  LaunchMemory(const LaunchMemory&) = delete;
  LaunchMemory& operator=(const LaunchMemory&) = delete;

  LaunchMemory(const PtxLaunch& launch, const std::atomic<bool>* abandoned, const model::LinkHealth& health, int device,
               const model::SmSpec& sm)
      : launch_(launch), abandoned_(abandoned), health_(health), sm_(sm),
        inner_(
            *launch.space, [this](model::AllocId id, uint64_t* size) { return backing(id, size); },
            [this](model::AllocId id, uint64_t offset, ptx::MulticastWindow* out) { return members(id, offset, out); }),
        device_(device) {}

  ptx::MemoryError resolve(uint64_t va, ptx::AccessKind kind, int device, ptx::MemoryWindow* out) override {
    // One access at a time under the mappings lock: a map or unmap of another thread waits for
    // no more than this. The window stays valid after it: the launch holds the bytes.
    std::shared_lock<std::shared_mutex> reading(*launch_.spaceLock);
    // Its process is gone (and the space with it): nothing is mapped any more.
    if (abandoned_ != nullptr && abandoned_->load()) return ptx::MemoryError::kUnmapped;
    const ptx::MemoryError e = inner_.resolve(va, kind, device, out);
    if (e == ptx::MemoryError::kUnmapped) {
      // Pinned host memory (Node::allocHost) or registered host memory (Node::registerHost), which
      // every device reaches; not timed (PCIe).
      auto h = launch_.host.upper_bound(va);
      if (h != launch_.host.begin() && va - std::prev(h)->first < std::prev(h)->second.size) {
        --h;
        const PtxLaunch::Host& host = h->second;
        if (host.registered != nullptr) {
          // The program's own pages, on a shared node out of the node's reach.
          if (host.data == nullptr) return ptx::MemoryError::kHostUnreachable;
          // Held for the rest of the warp's turn, so that an unregistering thread waits for it.
          if (std::find(held_.begin(), held_.end(), host.registered.get()) == held_.end()) {
            host.registered->access.lock_shared();
            held_.push_back(host.registered.get());
          }
          if (host.registered->revoked.load()) return ptx::MemoryError::kUnmapped;  // unregistered meanwhile
        }
        out->va = h->first;
        out->size = host.size;
        out->host = host.data;
        out->turnOnly = host.registered != nullptr;
        return ptx::MemoryError::kNone;
      }
    }
    if (e != ptx::MemoryError::kNone) return e;
    // A peer's memory is reached over NVLink: not when the path is down (model/link_health.h).
    if (!health_.healthy()) {
      auto it = launch_.backing.find(lastAlloc_);
      if (it != launch_.backing.end() && it->second.ref.device && !health_.reach(device, it->second.ref.gpu)) {
        return ptx::MemoryError::kLinkDown;
      }
    }
    windows_[out->host] = lastAlloc_;
    return e;
  }

  void accessed(const ptx::MemoryWindow& window, ptx::AccessKind kind, const ptx::AccessRun& run) override {
    auto it = windows_.find(window.host);
    if (it == windows_.end()) return;
    sliceBytes_ += run.sectorBytes;
    Traffic& t = turn_[it->second];
    // Where in the allocation: the window's bytes are the allocation's from window.host on.
    const uint64_t base = static_cast<uint64_t>(window.host - launch_.backing.at(it->second).data) - window.va;
    (kind == ptx::AccessKind::kRead ? t.read : t.written).add(run.sectorBytes, base + run.low, base + run.high);
  }

  // A turn that only polled a word: on a GPU such re-reads hit in the cache while the warp waits,
  // so they are not streamed through memory (what a polling turn wrote, an atomic that changed
  // nothing, still is).
  void turnEnded(bool polling) override {
    releaseRegistered();
    for (const auto& [alloc, t] : turn_) {
      Traffic& all = traffic_[alloc];
      if (!polling && t.read.bytes > 0) all.read.add(t.read);
      if (t.written.bytes > 0) all.written.add(t.written);
    }
    turn_.clear();
  }

  ptx::MemoryError resolveMulticast(uint64_t va, ptx::AccessKind kind, int device, ptx::MulticastWindow* out) override {
    std::shared_lock<std::shared_mutex> reading(*launch_.spaceLock);
    if (abandoned_ != nullptr && abandoned_->load()) return ptx::MemoryError::kUnmapped;
    const ptx::MemoryError e = inner_.resolveMulticast(va, kind, device, out);
    // Multimem traffic goes through the switches to every member: each must be reachable.
    if (e == ptx::MemoryError::kNone && !health_.healthy()) {
      if (!health_.attached(device)) return ptx::MemoryError::kLinkDown;
      for (int d : out->devices) {
        if (!health_.reach(device, d)) return ptx::MemoryError::kLinkDown;
      }
    }
    return e;
  }

  // A release store to another GPU's memory is held until the traffic the kernel issued before it
  // has landed (the node writes it then: Released, wrote); one to this GPU's memory, host memory or
  // anything else is written at once. A later store to where a held one is to is held behind it,
  // or the held one, landing after it, would put the older value back (a step counter posted
  // once after a fence and once without).
  bool deferRelease(const ptx::MemoryWindow& window, uint8_t* p, const uint8_t* bytes, unsigned n, bool release) override {
    if (!release && heldAt_.count(p) == 0) return false;
    if (p < window.host || p + n > window.host + window.size || n > sizeof(Released::bytes)) return false;
    auto it = windows_.find(window.host);
    if (it == windows_.end()) return false;
    const PtxLaunch::Backing& b = launch_.backing.at(it->second);
    if (!b.ref.device || b.ref.gpu == device_) return false;
    Released r;
    r.at = p;
    r.n = n;
    std::memcpy(r.bytes, bytes, n);
    r.mark = sliceBytes_;
    released_.push_back(r);
    ++heldAt_[p];
    return true;
  }
  bool holding() const override { return !heldAt_.empty(); }

  // A fence is timed when the GPU's preset gives its scope a cost: the node places it among the
  // slice's chunks (`mark`, as a held release's) and completes it (fenceCompleted).
  uint64_t fence(bool system) override {
    if ((system ? sm_.fenceSysPs : sm_.fenceGpuPs) == 0) return 0;
    fences_.push_back(Fence{++lastTicket_, sliceBytes_, system});
    pendingFences_.insert(lastTicket_);
    return lastTicket_;
  }
  bool fenceDone(uint64_t ticket) override { return pendingFences_.count(ticket) == 0; }
  void fenceCompleted(uint64_t ticket) { pendingFences_.erase(ticket); }
  struct Fence {
    uint64_t ticket = 0;
    uint64_t mark = 0;  // bytes of traffic the kernel had moved in its slice before it
    bool system = false;
  };
  // The fences made since the last call, in the order they were made.
  std::vector<Fence> takeFences() { return std::exchange(fences_, {}); }
  // The node wrote a held store.
  void wrote(const uint8_t* at) {
    auto it = heldAt_.find(at);
    if (it != heldAt_.end() && --it->second == 0) heldAt_.erase(it);
  }

  void accessedMulticast(const ptx::MulticastWindow& window, ptx::MultimemKind kind, uint64_t bytes) override {
    auto [it, fresh] = multimem_.try_emplace({window.object, kind});
    it->second.start = fresh ? window.offset : std::min(it->second.start, window.offset);
    it->second.bytes += bytes;
    sliceBytes_ += kind == ptx::MultimemKind::kLoadReduce ? 0 : bytes;  // (ld_reduce pairs with st)
  }

  // A release store held back: its bytes, and how many bytes of traffic the kernel had moved in
  // its slice before it (`mark`), which places it among the slice's chunks.
  struct Released {
    uint8_t* at = nullptr;
    unsigned n = 0;
    uint8_t bytes[32] = {};
    uint64_t mark = 0;
  };
  // The release stores held back since the last call, in the order they were made; the slice's
  // count of bytes starts again (call takeFences first).
  std::vector<Released> takeReleased() {
    sliceBytes_ = 0;
    return std::exchange(released_, {});
  }

  // Per allocation, in id order, since the last call.
  std::map<model::AllocId, Traffic> takeTraffic() { return std::exchange(traffic_, {}); }
  // Multimem bytes per (multicast object, kind), in that order, since the last call, and the
  // lowest offset in the object they were accessed from.
  struct MultimemTraffic {
    uint64_t bytes = 0, start = 0;
  };
  std::map<std::pair<model::AllocId, ptx::MultimemKind>, MultimemTraffic> takeMultimemTraffic() { return std::exchange(multimem_, {}); }

 private:
  // The registered host ranges the running warp turn reached: they stay reachable until it ends.
  void releaseRegistered() {
    for (PtxLaunch::Registered* r : held_) r->access.unlock_shared();
    held_.clear();
  }

  uint8_t* backing(model::AllocId id, uint64_t* size) {
    // An allocation the launch holds no bytes of (a multicast object) reads as unmapped.
    auto it = launch_.backing.find(id);
    if (it == launch_.backing.end()) return nullptr;
    lastAlloc_ = id;
    *size = it->second.size;
    return it->second.data;
  }

  // The members' bound memory behind offset `offset` of multicast object `id`, from the launch's
  // snapshot of it (PtxLaunch::multicast), in ascending device ordinal.
  ptx::MemoryError members(model::AllocId id, uint64_t offset, ptx::MulticastWindow* out) const {
    if (!isMulticastId(id)) return ptx::MemoryError::kNotMulticast;
    auto it = launch_.multicast.find(id);
    if (it == launch_.multicast.end()) return ptx::MemoryError::kUnmapped;  // mapped after the launch
    const PtxLaunch::Multicast& mc = it->second;
    if (mc.devices.size() < mc.numDevices) return ptx::MemoryError::kUnbound;
    out->members.clear();
    out->devices.clear();
    out->size = UINT64_MAX;
    for (int d : mc.devices) {
      auto b = mc.bindings.upper_bound({d, offset});
      if (b == mc.bindings.begin()) return ptx::MemoryError::kUnbound;
      --b;
      const PtxLaunch::Bound& bound = b->second;
      if (b->first.first != d || offset < bound.mcOffset || offset - bound.mcOffset >= bound.size) return ptx::MemoryError::kUnbound;
      out->members.push_back(bound.data + (offset - bound.mcOffset));
      out->devices.push_back(d);
      out->size = std::min(out->size, bound.size - (offset - bound.mcOffset));
    }
    return ptx::MemoryError::kNone;
  }

  const PtxLaunch& launch_;
  const std::atomic<bool>* abandoned_;
  const model::LinkHealth& health_;
  const model::SmSpec& sm_;
  ptx::AddressSpaceMemory inner_;
  model::AllocId lastAlloc_ = 0;
  std::map<const uint8_t*, model::AllocId> windows_;  // resolved window -> its allocation
  std::map<model::AllocId, Traffic> traffic_;
  std::map<model::AllocId, Traffic> turn_;  // the running warp turn's, until turnEnded
  std::map<std::pair<model::AllocId, ptx::MultimemKind>, MultimemTraffic> multimem_;
  std::vector<PtxLaunch::Registered*> held_;  // held (shared) until the turn ends
  int device_;                // the GPU the kernel runs on
  uint64_t sliceBytes_ = 0;   // bytes of traffic told (accessed) this slice
  std::vector<Released> released_;
  std::map<const uint8_t*, int> heldAt_;  // where held stores are to, and how many to each
  std::vector<Fence> fences_;
  std::set<uint64_t> pendingFences_;  // fences made and not yet completed
  uint64_t lastTicket_ = 0;
};

model::WorkFault::Kind faultKind(ptx::Fault f) {
  switch (f) {
    case ptx::Fault::kIllegalAddress: return model::WorkFault::Kind::kIllegalAddress;
    case ptx::Fault::kMisalignedAddress: return model::WorkFault::Kind::kMisalignedAddress;
    // A kernel that can never finish fails its synchronisation as a hang does.
    case ptx::Fault::kBarrierDeadlock:
    case ptx::Fault::kTimeout: return model::WorkFault::Kind::kTimeout;
    case ptx::Fault::kAssert: return model::WorkFault::Kind::kAssert;
    case ptx::Fault::kNvlink: return model::WorkFault::Kind::kNvlink;
    case ptx::Fault::kIllegalInstruction: return model::WorkFault::Kind::kIllegalInstruction;
    case ptx::Fault::kTrap:
    case ptx::Fault::kInvalidPc:  // brx.idx past its list: what a GPU reports is not known (docs/ptx.md)
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
  const auto stopped = [&] { return w.abandoned != nullptr && w.abandoned->load(); };
  // Its process is gone (the space with it): the kernel never runs.
  if (stopped()) return;

  // Instructions: the SMs the grid occupies issue them, a warp instruction in warpInstructionPs,
  // which %globaltimer's clock moves on by too (Executor::setClock before each slice).
  const uint64_t blocks = uint64_t{launch.config.grid.x} * launch.config.grid.y * launch.config.grid.z;
  const uint64_t sms = std::min(std::max<uint64_t>(blocks, 1), sm.smCount);
  launch.config.warpInstructionPs =
      sm.warpInstructionsPerSecPerSm > 0 ? 1e12 / (sm.warpInstructionsPerSecPerSm * static_cast<double>(sms)) : 0;
  LaunchMemory memory(launch, w.abandoned.get(), health_, w.engineGpu, sm);
  ptx::Executor executor(*launch.module, memory);
  ptx::Executor::RunPtr run = executor.start(launch.kernel, launch.config);

  const auto issuePs = [&](uint64_t instructions) {
    return static_cast<uint64_t>(static_cast<double>(instructions) * launch.config.warpInstructionPs);
  };
  // Memory: each allocation's bytes through its path, chunk by chunk, as a copy step's.
  const uint64_t threads = blocks * launch.config.block.x * launch.config.block.y * launch.config.block.z;
  // Each thread keeps what its code loads before using any of it in flight (its unroll, as the
  // behavioural models state theirs), at least the GPU's default (one 16-byte access).
  const ptx::Function* fn = launch.module->find(launch.kernel);
  const uint64_t perThread = std::max<uint64_t>(sm.bytesInFlightPerThread, fn != nullptr ? ptx::loadBytesInFlight(*fn) : 0);
  const uint64_t inflight = std::min(std::max<uint64_t>(threads, 1), sm.maxResidentThreads) * perThread;
  const size_t window = static_cast<size_t>(std::max<uint64_t>(1, inflight / sm.chunkBytes));
  const uint64_t chunk = std::min(sm.chunkBytes, std::max<uint64_t>(inflight, 512));
  model::BandwidthServer smIssue(sm.bytesPerSecPerSm * static_cast<double>(sms), model::TimelineTrack(), &horizon_);
  // The loads in flight, in bytes (Little's law, as the behavioural models keep them): a chunk goes
  // out while fewer bytes than the window's are outstanding. Counted in bytes, not chunks, because a
  // slice's accesses come in every size (a barrier's few-byte multimem.red beside 64 KiB chunks of
  // data): a 4-byte arrival holds 4 bytes of the window, not a whole chunk's place, and does not
  // hold a chunk of data back. (The models' steps stream equal chunks, for which the two counts
  // agree: with `window` chunks out, no more goes.)
  //
  // Bytes leave the window when their own access is done, in whatever order that is: a chunk that
  // takes long (a multimem round trip through the switches' reduction engines) holds its own bytes,
  // not the place of every chunk that went out after it and came back sooner (before 2026-11-29
  // the window retired in the order chunks went out, and one such chunk stalled a whole window of
  // local loads behind it).
  const uint64_t windowBytes = static_cast<uint64_t>(window) * chunk;
  std::priority_queue<std::pair<uint64_t, uint64_t>, std::vector<std::pair<uint64_t, uint64_t>>, std::greater<>>
      outstanding;  // (when it leaves the window, bytes), the first to leave on top
  uint64_t inFlight = 0;
  const auto admit = [&] {
    while (!outstanding.empty() && inFlight >= windowBytes) {
      engine.waitUntil(outstanding.top().first);
      inFlight -= outstanding.top().second;
      outstanding.pop();
    }
  };
  const auto enter = [&](uint64_t leaves, uint64_t n) {
    outstanding.emplace(leaves, n);
    inFlight += n;
  };

  // A slice's traffic as streams: an allocation's reads or writes, or a multicast object's multimem
  // accesses of one kind. The streams take turns chunk by chunk, so a slice's copies and its
  // multimem traffic go out side by side, as the warps that issue them run side by side on a GPU
  // (before 2026-11-29 a slice's streams went one after another, its multimem traffic last: NCCL's
  // NVLS reductions waited for the slice's scatter and gather copies to be in flight).
  enum class Mode { kRead, kWrite, kLoad, kStore, kReduce, kLoadStore };
  struct Stream {
    Mode mode;
    model::AllocId id;  // the allocation, or the multicast object
    uint64_t bytes;     // still to stream
    // Reads and writes: the allocation's bytes stream through [from, to), wrapping to `from`; from
    // the shared cursor (`cursor`) when the slice moved no more bytes than its range, else from `at`.
    uint64_t from = 0, to = 0, at = 0;
    bool rereads = false;
    MemorySpan span;  // reads and writes: the allocation's backing, as a span of one run
    // Stores to another GPU's memory, which fences wait for (below); reads are done when their
    // data is used. Multimem traffic is left out: what a fence costs behind it was not measured
    // (no multicast call is ever made on the real machines), and counted as landing at every
    // member it took NCCL's NVLS all-reduce on 8x H100 from 0.90 to 0.52 of its published rate.
    bool remoteWrite = false;
  };
  // Where each allocation's reads and writes have got to. A slice that moved no more bytes than
  // the range of the allocation it reached streams on from where the previous slice left off
  // (moved to the range's start when it lies outside the range): a kernel streaming through an
  // allocation, in any order of its warps and loop iterations, moves each byte once and in
  // order, as one stream would. A slice that moved more bytes than its range (it read some twice:
  // a table, a tile) cycles through that range, and the L2 serves the second reading.
  std::map<std::pair<model::AllocId, bool>, uint64_t> cursor;
  std::vector<Stream> streams;
  const auto addTraffic = [&](const std::map<model::AllocId, LaunchMemory::Traffic>& traffic) {
    for (const auto& [alloc, t] : traffic) {
      const PtxLaunch::Backing& b = launch.backing.at(alloc);
      // Host memory mapped for the device is not timed here (its path is PCIe, which kernels'
      // steps do not model either).
      if (!b.ref.device || b.ref.gpu < 0 || b.ref.gpu >= gpuCount()) continue;
      const uint64_t size = std::max<uint64_t>(b.size, 1);
      for (const bool write : {false, true}) {
        const LaunchMemory::Direction& d = write ? t.written : t.read;
        if (d.bytes == 0) continue;
        const uint64_t low = std::min(d.low, size - 1), high = std::min(std::max(d.high, low + 1), size);
        Stream s{write ? Mode::kWrite : Mode::kRead, alloc, d.bytes};
        s.span = MemorySpan{MemoryRun{b.ref, nullptr, size}};
        s.remoteWrite = write && b.ref.gpu != w.engineGpu;
        s.rereads = d.bytes > high - low;
        auto [cur, fresh] = cursor.try_emplace({alloc, write}, low);
        if (!fresh && (cur->second < low || cur->second >= high)) cur->second = low;
        s.from = s.rereads ? low : 0;
        s.to = s.rereads ? high : size;
        s.at = low;
        streams.push_back(s);
      }
    }
  };

  // Multimem traffic: each multicast object's bytes as a behavioural model's multimem step
  // streams them (multicastOut for st and red: replicated by the switches, every member's port
  // down and memory, red a read-modify-write; multicastIn for ld_reduce: every member's memory
  // and port up, the switches' reduction engines, this GPU's port down), chunk by chunk, from the
  // lowest offset the slice accessed in the object.
  std::map<model::AllocId, ResolvedStep> mcSteps;
  const auto stepOf = [&](model::AllocId id) -> const ResolvedStep& {
    auto [it, fresh] = mcSteps.try_emplace(id);
    ResolvedStep& st = it->second;
    if (fresh) {
      const PtxLaunch::Multicast& mc = launch.multicast.at(id);
      for (int d : mc.devices) {
        MemorySpan span;
        for (const auto& [k, b] : mc.bindings) {
          if (k.first == d) span.push_back(MemoryRun{b.ref, b.data, b.size});
        }
        st.memberGpus.push_back(d);
        st.members.push_back(std::move(span));
      }
      // The bytes every member has bound, one after another: the range the traffic cycles over.
      st.bytes = st.members.empty() ? 0 : UINT64_MAX;
      for (const MemorySpan& m : st.members) {
        uint64_t n = 0;
        for (const MemoryRun& r : m) n += r.len;
        st.bytes = std::min(st.bytes, n);
      }
    }
    return st;
  };
  // A slice's ld_reduce and st on one object are paired, chunk for chunk, as one load-reduce-store:
  // the store leaves when the reduced data is back and the chunk holds its place in the window
  // until the store has left the switches, as the behavioural model's multimemLoadReduceStore step
  // (the data dependence of an all-reduce's loop, which stores what it has just reduced); the rest
  // of either streams on its own.
  const auto addMultimem = [&](const std::map<std::pair<model::AllocId, ptx::MultimemKind>, LaunchMemory::MultimemTraffic>& traffic) {
    for (const auto& [key, t] : traffic) {
      const uint64_t bytes = t.bytes;
      const uint64_t startAt = t.start;
      const model::AllocId object = key.first;  // (a lambda cannot use a structured binding in C++17)
      const auto other = [&](ptx::MultimemKind k) {
        auto it = traffic.find({object, k});
        return it == traffic.end() ? uint64_t{0} : it->second.bytes;
      };
      const auto add = [&](Mode mode, uint64_t n) {
        Stream s{mode, object, n};
        s.at = startAt;
        streams.push_back(s);
      };
      switch (key.second) {
        case ptx::MultimemKind::kLoadReduce: {
          const uint64_t paired = std::min(bytes, other(ptx::MultimemKind::kStore));
          if (paired > 0) add(Mode::kLoadStore, paired);
          if (bytes > paired) add(Mode::kLoad, bytes - paired);
          break;
        }
        case ptx::MultimemKind::kStore: {
          const uint64_t paired = std::min(bytes, other(ptx::MultimemKind::kLoadReduce));
          if (bytes > paired) add(Mode::kStore, bytes - paired);
          break;
        }
        case ptx::MultimemKind::kReduce: add(Mode::kReduce, bytes); break;
      }
    }
  };

  // When the kernel's stores to peers issued so far have left the switch, and when those of every
  // PTX kernel of its GPU have landed (what a .gpu and a .sys fence wait for: below).
  uint64_t remoteLeft = start;
  uint64_t& gpuRemoteLanded = smRemoteLanded_[static_cast<size_t>(w.engineGpu)];
  // One chunk of stream `s`, going out now; the time it leaves the window. `end`: when all is done.
  const auto issue = [&](Stream& s, uint64_t* end) {
    const uint64_t now = Engine::simNowPs();
    horizon_.ps = now;
    uint64_t n = 0, released = now, done = now, smBytes = 0;
    if (s.mode == Mode::kRead || s.mode == Mode::kWrite) {
      const bool write = s.mode == Mode::kWrite;
      const MemorySpan& span = s.span;
      uint64_t& off = s.rereads ? s.at : cursor.at({s.id, write});
      n = std::min({chunk, s.bytes, s.to - off});
      smBytes = n;
      if (write) {
        done = writeSpan(w.engineGpu, span, off, n, now, false, "store", &released);
      } else {
        done = readSpan(w.engineGpu, span, off, n, now, "load");
        released = done;
      }
      off += n;
      if (off == s.to) off = s.from;
    } else {
      const ResolvedStep& st = stepOf(s.id);
      if (st.bytes == 0) {
        s.bytes = 0;
        return now;
      }
      s.at %= st.bytes;
      n = std::min({chunk, s.bytes, st.bytes - s.at});
      smBytes = s.mode == Mode::kLoadStore ? 2 * n : n;
      switch (s.mode) {
        case Mode::kLoad:
          done = multicastIn(w.engineGpu, st, s.at, n, now);
          released = done;
          break;
        case Mode::kStore:
        case Mode::kReduce:
          done = multicastOut(w.engineGpu, st, s.at, n, now, s.mode == Mode::kReduce, &released);
          break;
        case Mode::kLoadStore:
          done = multicastOut(w.engineGpu, st, s.at, n, multicastIn(w.engineGpu, st, s.at, n, now), false, &released);
          break;
        case Mode::kRead:
        case Mode::kWrite: break;
      }
      s.at = (s.at + n) % st.bytes;
    }
    const uint64_t smDone = sm.bytesPerSecPerSm > 0 ? smIssue.serve(now, smBytes) : now;
    s.bytes -= n;
    *end = std::max({*end, done, smDone});
    if (s.remoteWrite) {
      remoteLeft = std::max(remoteLeft, released);
      gpuRemoteLanded = std::max(gpuRemoteLanded, done);
    }
    return std::max(released, smDone);
  };
  // The slice's streams, chunk by chunk, in turn.
  // `progress`: before the first chunk and after each, the slice's bytes issued so far, when
  // everything issued so far (the slice's and before) is done, when the kernel's stores to peers
  // have left the switch and the GPU's have landed, and the time; for placing its release stores
  // and fences (below).
  struct Progress {
    uint64_t moved, end, remoteLeft, gpuRemoteLanded, at;
  };
  std::vector<Progress> progress;
  const auto streamAll = [&](uint64_t* end) {
    progress.clear();
    uint64_t moved = 0;
    progress.push_back(Progress{0, *end, remoteLeft, gpuRemoteLanded, Engine::simNowPs()});
    for (bool more = true; more;) {
      more = false;
      for (Stream& s : streams) {
        if (s.bytes == 0) continue;
        admit();
        const uint64_t before = s.bytes;
        const uint64_t leaves = issue(s, end);
        enter(leaves, before - s.bytes);
        moved += before - s.bytes;
        progress.push_back(Progress{moved, *end, remoteLeft, gpuRemoteLanded, Engine::simNowPs()});
        more = more || s.bytes > 0;
      }
    }
    streams.clear();
  };

  uint64_t timed = 0;                       // warp instructions timed so far
  uint64_t issued = Engine::simNowPs();      // when those have issued
  uint64_t end = issued;                     // when everything so far is done
  uint64_t landed = issued;                  // when the traffic issued so far is done
  ptx::RunState state = ptx::RunState::kProgress;
  // The memory epoch this kernel's parked warps have seen. Other kernels (other GPUs', the copy
  // engines) may write between two slices while this one still runs with some warps parked: those
  // warps look again before the next slice, or a write that released them would go unseen until a
  // later one, which may never come (a grid barrier of 132 blocks on 8 GPUs deadlocked so).
  uint64_t seen = memoryEpoch_;
  // Release stores to another GPU's memory (a step flag after the data it publishes: a fence at
  // .gpu or .sys scope, then a store, or a st.release there; LaunchMemory::deferRelease) are
  // written, and signalled (memoryChanged), when the traffic the kernel issued before them has
  // landed: on a GPU the fence holds the flag back until the earlier writes are performed, so a
  // flag cannot pass the data before it (the trips of their acknowledgement and of the flag itself
  // are not added: below). A release is placed among its
  // slice's chunks by the bytes the slice had moved before it (its mark): it lands when every chunk
  // up to the one holding that byte is done, and never before an earlier release. Everything else
  // a slice writes is in memory, and signalled, at the slice's start, as before. Held stores
  // wait here, in order, their times non-decreasing.
  std::deque<std::pair<uint64_t, LaunchMemory::Released>> held;
  // (Two trips across the fabric more, for the earlier stores' acknowledgement and the flag's own
  // trip, were tried: neither NCCL's ring on two H200s nor on eight H100s came closer to the real
  // figures with them; docs/ptx.md, "NCCL's ring on two H200s".)
  // Writes the held stores that have landed by now (all of them with `all`, waiting until each),
  // and signals them; the kernel's own parked warps look again too (`seen` stays behind).
  const auto writeLanded = [&](bool all) {
    while (!held.empty()) {
      if (all) engine.waitUntil(held.front().first);
      const uint64_t now = Engine::simNowPs();
      if (held.front().first > now) return;
      for (; !held.empty() && held.front().first <= now; held.pop_front()) {
        const LaunchMemory::Released& r = held.front().second;
        std::memcpy(r.at, r.bytes, r.n);
        memory.wrote(r.at);
      }
      memoryChanged();
    }
  };
  // Places the slice's release stores (after its traffic has been streamed: `progress`).
  const auto holdReleased = [&](std::vector<LaunchMemory::Released> released) {
    for (LaunchMemory::Released& r : released) {
      auto at = std::upper_bound(progress.begin(), progress.end(), r.mark,
                                 [](uint64_t m, const Progress& p) { return m < p.moved; });
      uint64_t t = at != progress.end() ? at->end : landed;
      if (!held.empty()) t = std::max(t, held.back().first);
      held.emplace_back(t, r);
    }
  };
  // Fences (LaunchMemory::fence): a warp that makes one at .gpu or .sys scope waits, as on a GPU,
  // while the writes before it are made visible at that scope. Measured on two H200s
  // (docs/real-driver.md, section 17): on an idle GPU a .sys fence takes 0.8-1.3 us and a .gpu
  // one 0.3 us, with or without a step of data to a peer before it; beside other kernels'
  // traffic to a peer that fills the links, a .sys fence takes 6-13 us even with nothing of its
  // own to order (it waits for the GPU's NVLink traffic queued before it, whoever issued it),
  // while traffic within the GPU leaves it alone; a .gpu fence waits behind its own stores to a
  // peer (8-11 us when they queue behind such traffic), little for other kernels' (0.8-2.5 us).
  // So a .sys fence completes when every PTX kernel's stores to peers, issued from the GPU before
  // it, have landed, a .gpu fence when its kernel's have left the switch (its kernel's stand for
  // its own, as the slice does not tell warps apart), each no sooner than the preset's cost for
  // its scope after it (sm.fence_sys_ns, sm.fence_gpu_ns: the idle figures). Its place among the
  // slice's chunks is its mark, as a held release's. Completion times, with tickets, in time order.
  std::multimap<uint64_t, uint64_t> fenceAt;
  const auto placeFences = [&](const std::vector<LaunchMemory::Fence>& fences) {
    for (const LaunchMemory::Fence& f : fences) {
      auto at = std::lower_bound(progress.begin(), progress.end(), f.mark,
                                 [](const Progress& p, uint64_t m) { return p.moved < m; });
      const Progress& p = at != progress.end() ? *at : progress.back();
      const uint64_t least = p.at + (f.system ? sm.fenceSysPs : sm.fenceGpuPs);
      fenceAt.emplace(std::max(least, f.system ? p.gpuRemoteLanded : p.remoteLeft), f.ticket);
    }
  };
  // Completes the fences due by now; returns whether one was.
  const auto completeFences = [&] {
    bool any = false;
    for (; !fenceAt.empty() && fenceAt.begin()->first <= Engine::simNowPs(); fenceAt.erase(fenceAt.begin())) {
      memory.fenceCompleted(fenceAt.begin()->second);
      any = true;
    }
    return any;
  };
  // Whether the kernel can only wait or spin (NodeModel::noteStuck), and while it spins without
  // waiting, its entry among the waiting kernels, for the hang report.
  bool stuck = false;
  uint64_t spinEntry = UINT64_MAX;
  // Lists the kernel among the waiting kernels, with what its blocks wait on; returns the entry.
  const auto listWaiting = [&] {
    std::lock_guard<OrderedMutex> lock(waitingMu_);
    const uint64_t id = nextWaitingId_++;
    WaitingKernel k;
    k.gpu = w.engineGpu;
    k.label = w.label;
    k.abandoned = w.abandoned.get();
    k.ptxWait = ptx::Executor::describeWait(*run);
    waitingKernels_[id] = std::move(k);
    return id;
  };
  const auto dropSpinEntry = [&] {
    if (spinEntry == UINT64_MAX) return;
    std::lock_guard<OrderedMutex> lock(waitingMu_);
    waitingKernels_.erase(spinEntry);
    spinEntry = UINT64_MAX;
  };
  const auto setStuck = [&](bool now) {
    if (now != stuck) noteStuck(now ? 1 : -1);
    stuck = now;
    if (!now) dropSpinEntry();
  };
  for (;;) {
    writeLanded(false);
    completeFences();
    if (memoryEpoch_ != seen) ptx::Executor::wake(*run);
    ptx::Executor::setClock(*run, Engine::simNowPs() / 1000);
    state = ptx::Executor::advance(*run, kSliceWarpInstructions);
    // A kernel that waits before and after a slice may have worked in between (released, it
    // answered and waits again): that breaks a run of spinning (NodeModel::noteProgress).
    if (ptx::Executor::progressed(*run)) noteProgress();
    const ptx::LaunchResult& r = ptx::Executor::result(*run);
    if (ptx::Executor::wroteGlobal(*run)) memoryChanged();
    seen = memoryEpoch_;
    // Instructions of warps that spun a whole turn and were parked are polling: on a GPU those
    // warps poll the word while the others work, and see a change within a poll, so they cost the
    // kernel no issue time (LaunchResult::pollingInstructions).
    const uint64_t work = r.warpInstructions - r.pollingInstructions;
    issued = std::max(issued, Engine::simNowPs()) + issuePs(work - timed);
    timed = work;
    end = std::max(end, issued);
    addTraffic(memory.takeTraffic());
    addMultimem(memory.takeMultimemTraffic());
    streamAll(&landed);
    end = std::max(end, landed);
    placeFences(memory.takeFences());
    holdReleased(memory.takeReleased());
    writeLanded(false);
    if (state == ptx::RunState::kFinished || state == ptx::RunState::kFaulted) break;
    if (state == ptx::RunState::kProgress) {
      const bool spinning = ptx::Executor::spinning(*run);
      if (spinning && spinEntry == UINT64_MAX) spinEntry = listWaiting();
      setStuck(spinning);
    }
    if (state == ptx::RunState::kWaiting) {
      dropSpinEntry();
      // A kernel whose warps wait on a fence goes on by itself when it completes, unless what
      // it goes on to is a spin with a fence in its loop (Executor::spinning).
      setStuck(fenceAt.empty() || ptx::Executor::spinning(*run));
      // Every warp spins or waits on a fence: the kernel waits, from when its slice's
      // instructions have issued, until memory changes or a fence completes; it cannot resume
      // earlier than the write that releases it. (Its traffic still in flight goes on meanwhile,
      // as a running kernel's does, and bounds its end.)
      engine.waitUntil(issued);
      writeLanded(false);
      const uint64_t id = listWaiting();
      ++memoryWatchers_;
      // It waits for memory to change, its own next held store to land or its next fence to
      // complete, whichever comes first (the kernel it waits on may wait on that store: a ring's
      // two directions).
      while (memoryEpoch_ == seen && !stopped() && !completeFences()) {
        uint64_t next = held.empty() ? UINT64_MAX : held.front().first;
        if (!fenceAt.empty()) next = std::min(next, fenceAt.begin()->first);
        if (next == UINT64_MAX) {
          sc_core::wait(signalled());
        } else {
          sc_core::wait(sc_core::sc_time(static_cast<double>(next - Engine::simNowPs()), sc_core::SC_PS), signalled());
          writeLanded(false);
        }
      }
      --memoryWatchers_;
      {
        std::lock_guard<OrderedMutex> lock(waitingMu_);
        waitingKernels_.erase(id);
      }
      if (stopped()) break;  // its process died: the rest of the kernel never runs
      issued = Engine::simNowPs();
      continue;  // its warps look again at the top of the loop (the epoch moved)
    }
    // A warp waiting on a fence resumes when it completes: the next slice starts no earlier, or
    // the warp would wait for the whole next slice's traffic to be streamed (its warps run on
    // while it waits, and a slice's traffic takes as long as it takes), however soon its fence
    // completed: NCCL's step flag, posted after the fence, came a step late so.
    engine.waitUntil(fenceAt.empty() ? issued : std::max(issued, fenceAt.begin()->first));
    if (stopped()) break;
  }
  setStuck(false);
  writeLanded(true);  // every held store is written, a stopped kernel's too
  engine.waitUntil(end);

  const ptx::LaunchResult& result = ptx::Executor::result(*run);
  if (state == ptx::RunState::kFaulted && result.fault != ptx::Fault::kNone) {
    auto f = std::make_shared<model::WorkFault>();
    f->kind = faultKind(result.fault);
    // An assert's message leads with the runtime's lines, which the driver prints as they are.
    f->message = result.fault == ptx::Fault::kAssert ? result.assertOutput + result.message : result.message;
    w.fault = std::move(f);
  }
  if (!result.printfOutput.empty()) w.output = std::make_shared<const std::string>(result.printfOutput);
  if (!w.slice.category.empty()) {
    w.sliceResult = "{\"global bytes read\":" + std::to_string(result.globalBytesRead) +
                    ",\"global bytes written\":" + std::to_string(result.globalBytesWritten) +
                    ",\"warp instructions\":" + std::to_string(result.warpInstructions) + "}";
  }
}

}  // namespace mcsim::fabric
