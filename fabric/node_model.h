// The simulated hardware of one node, and device work executed on it.
//
// The preset's GPUs (memory system, PCIe), each GPU's NVLink links grouped by the switches they
// lead to (one port per GPU and plane of identically wired switches, a bandwidth server per
// direction), and the switches (crossbar, reduction engine, port-to-port latency). Device work (a copy, a memset, an event's record point) runs
// as a simulation process: it waits for the work it must follow, moves the data (unless timing
// only), then pays the copy engine's setup cost and streams its bytes in chunks through the
// resources on their path, keeping a window of chunks in flight. A chunk occupies each resource
// for bytes / bandwidth after it arrives there and then travels on after the hop's latency, so
// transfers that share a link, a switch or an HBM stack slow each other down.
#pragma once

#include <atomic>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <map>
#include <set>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <vector>

#include <systemc>

#include "fabric/memory_types.h"
#include "fabric/preset.h"
#include "mcsim/kernel_model.h"
#include "model/address_space.h"
#include "model/bandwidth_server.h"
#include "model/completion.h"
#include "model/engine.h"
#include "model/timeline.h"
#include "model/gpu.h"
#include "model/ordered_mutex.h"
#include "ptx/executor.h"

namespace mcsim::fabric {

// One side of a transfer.
struct MemoryRef {
  bool device = true;      // device memory, or host memory
  int gpu = -1;            // device memory: the GPU whose memory holds it
  uint64_t alloc = 0;      // device memory: the physical allocation (for the L2 and HBM stacks)
  uint64_t offset = 0;     // device memory: offset in it
  bool pageable = false;   // host memory the driver does not know as pinned
};

// A contiguous piece of a copy or memset.
struct WorkPiece {
  MemoryRef src, dst;       // `src` unused by memsets
  uint64_t bytes = 0;
  const uint8_t* srcData = nullptr;  // nullptr: device memory never written, which reads as zeros
  uint8_t* dstData = nullptr;
};

// A run of memory within one allocation: where it is (for timing) and its bytes (for data).
struct MemoryRun {
  MemoryRef ref;
  uint8_t* data = nullptr;  // nullptr in timing-only work
  uint64_t len = 0;
};
// An operand of a kernel step: runs that together cover its bytes, in address order.
using MemorySpan = std::vector<MemoryRun>;

// A kernel step with its operands resolved (KernelStep in include/mcsim/kernel_model.h).
struct ResolvedStep {
  KernelStep::Kind kind = KernelStep::Kind::kCopy;
  uint32_t dtype = 0, op = 0, value = 0;
  uint64_t bytes = 0;              // of each operand
  uint64_t count = 0;              // elements, for element-wise steps
  MemorySpan dst, src, src2;       // plain operands (this GPU's memory or a peer's)
  std::vector<int> memberGpus;     // the multicast operand: each member's GPU (ascending) ...
  std::vector<MemorySpan> members; // ... and its memory behind the operand
  uint64_t waitVa = 0;             // kWait: the word's address as the kernel named it (reports)
  // kWait of a stream memory operation (DeviceOp::kWaitValue), not a kernel's: its comparison and
  // its 32- or 64-bit operand; `bytes` is the word's width.
  bool streamWait = false;
  WaitCompare compare = WaitCompare::kGeq;
  uint64_t operand = 0;
};

// A program's own kernel, for the PTX executor (node_ptx.cpp): the parsed module, the launch,
// and how its accesses resolve when they happen: through the launching process's address space
// (its mappings and rights, read under the space's mappings lock) to the backing bytes of the
// allocations it maps, which the launch holds (`backing`, by allocation id; made when the launch
// was accepted, so that the simulation thread never touches the node's object table).
struct PtxLaunch {
  std::shared_ptr<const ptx::Module> module;
  std::string kernel;
  ptx::LaunchConfig config;
  const model::AddressSpace* space = nullptr;  // valid while `abandoned` is unset, under its lock
  std::shared_ptr<std::shared_mutex> spaceLock;  // the space's mappingsLock()
  struct Backing {
    uint8_t* data = nullptr;
    uint64_t size = 0;
    MemoryRef ref;  // where it lives, for timing
  };
  std::map<model::AllocId, Backing> backing;
  // The multicast objects it maps, as they were when the launch was accepted (binding must be
  // complete before use: docs/multimem.md): each member's bound memory, for multimem accesses.
  struct Bound {
    uint64_t mcOffset = 0, size = 0;
    uint8_t* data = nullptr;  // the bound bytes, from mcOffset on
    MemoryRef ref;            // where they live, for timing (ref.offset: the allocation offset)
  };
  struct Multicast {
    uint32_t numDevices = 0;        // the object's team size
    std::vector<int> devices;       // members added so far, ascending
    std::map<std::pair<int, uint64_t>, Bound> bindings;  // by (device, mcOffset)
  };
  std::map<model::AllocId, Multicast> multicast;
  // Host memory the program registered (Node::registerHost): its own pages, which the launch
  // cannot hold. A warp turn that reaches them holds `access` (shared) until the turn ends, and
  // finds `revoked` unset; unregistering sets it, then takes `access` once, so that no kernel
  // reaches the pages after Node::unregisterHost returns (the program may free them then).
  struct Registered {
    std::atomic<bool> revoked{false};
    std::shared_mutex access;
  };
  // The process's pinned host memory (Node::allocHost) and registered host memory, by its address:
  // reached where no mapping of the space answers. `keep` holds allocHost's bytes while the launch
  // may use them (embedded node). Registered memory has `registered`, and no `data` on a shared
  // node, whose kernels run in the node's process and cannot reach the program's own pages.
  struct Host {
    uint64_t size = 0;
    uint8_t* data = nullptr;
    std::shared_ptr<const void> keep;
    std::shared_ptr<Registered> registered;
  };
  std::map<uint64_t, Host> host;
};

struct DeviceWork {
  enum class Kind { kCopy, kFill, kMarker, kKernel };
  Kind kind = Kind::kMarker;
  int engineGpu = 0;                // whose copy engine runs it (the stream's device)
  std::vector<WorkPiece> pieces;
  uint32_t fillValue = 0;
  unsigned fillElementBytes = 1;
  bool functional = true;           // false: timing only, no data moves
  std::vector<std::shared_ptr<const void>> keepAlive;  // backing memory the data path uses
  std::vector<uint8_t> staging;     // pageable host data copied at submission
  bool crossGpu = false;            // kMarker: waits for another GPU's work
  bool stagedPeer = false;          // kCopy between GPUs without peer access: through host memory
  std::string stream;               // for the timeline
  std::string label;                // for the timeline
  // kKernel: the launch's steps, run in order by `engineGpu`'s SMs.
  std::vector<ResolvedStep> steps;
  uint64_t threads = 0;
  uint64_t blocks = 0;
  uint32_t bytesInFlightPerThread = 0;  // 0: the GPU's default
  bool memoryOperation = false;     // a stream memory operation: the front end runs it, no launch
  uint64_t notBeforePs = 0;         // it starts no earlier (DeviceOp::notBeforePs: the host's clock)
  // Set when the process that launched it died: a kernel waiting at a signal word stops there
  // and ends, as a real driver tears a dead process's kernels down (NodeModel::stopKernels).
  std::shared_ptr<const std::atomic<bool>> abandoned;
  // kKernel of a program's own kernel: run by the PTX executor instead of steps.
  std::shared_ptr<PtxLaunch> ptx;
  // Set by the work when it faulted (a PTX kernel's illegal access, trap ...).
  std::shared_ptr<const model::WorkFault> fault;
  // Set by a PTX kernel whose printf calls wrote something (docs/ptx.md, "printf and assert").
  std::shared_ptr<const std::string> output;
  // Its slice on the timeline, when one is kept (fabric/work_slice.h), and what the work adds to
  // the slice's arguments when it ends (a JSON object, or empty).
  model::SliceDetail slice;
  std::string sliceResult;
};

class NodeModel : public std::enable_shared_from_this<NodeModel> {
 public:
  // The hardware `preset` describes, simulated by `engine` (the node's), which must outlive the
  // model's owner; work in flight, which holds the model, ends with the engine's simulation.
  NodeModel(const Preset& preset, model::Engine& engine);
  ~NodeModel();
  NodeModel(const NodeModel&) = delete;
  NodeModel& operator=(const NodeModel&) = delete;

  // Host threads, while the simulation is idle: the kernels that wait at a signal word, one line
  // each ("" if none).
  std::string describeWaitingKernels();

  // Host threads: runs `work` once everything in `after` has completed; returns its completion.
  // The model must be held by a shared_ptr (the work in flight keeps it alive).
  model::CompletionPtr submit(std::shared_ptr<DeviceWork> work, std::vector<model::CompletionPtr> after);
  // Host threads: the fabric's links and switches are now as `health` says (a fault plan's link
  // or switch rule fired). Posted like work, so that work the node took in before sees the old
  // health and work after it the new (model/link_health.h): traffic spreads over the links that
  // are left, at their bandwidth, and kernels' accesses over a cut path fault.
  void setHealth(const model::LinkHealth& health);
  // Host threads: allocation `alloc` on `gpu` was freed; its cached lines go.
  void forget(int gpu, uint64_t alloc);
  // Host threads, once `abandoned` is set: the kernels launched with it that wait at a signal
  // word stop waiting and end. Returns how many were waiting.
  size_t stopKernels(const std::shared_ptr<const std::atomic<bool>>& abandoned);

  int gpuCount() const { return static_cast<int>(gpus_.size()); }

 private:
  // The switches, grouped into planes. Every GPU reaches a switch over the same number of links
  // (nvswitch.links_per_gpu_per_switch is one list for all GPUs), and a chunk spreads over the
  // switches in proportion to those links, so switches reached over equally many links carry
  // identical shares of every transfer at identical times: a plane times them as one resource of
  // their summed rate (the same times, to a byte of the shares' rounding), and a chunk costs one
  // booking per plane instead of one per switch. hgx-h100 (5/4/4/5 links) has two planes;
  // gb200-nvl72 (one link to each of 18 switches) has one, so a multicast chunk there books each
  // member's port once instead of 18 times. Planes follow the order of their first switch.
  struct Plane {
    std::vector<int> switches;    // which switches it stands for (timeline rows)
    model::BandwidthServer crossbar;
    uint64_t latencyPs = 0;
  };
  // A GPU's links to one plane (to all of its switches), as one port per direction, and the
  // switches' reduction of the operands that come in through it (docs/multimem.md: a port takes
  // a member's operands into a load-with-reduction at a fraction of its line rate, so a member's
  // operands are reduced no faster however few GPUs the team has).
  struct Port {
    int links = 0;
    model::BandwidthServer up;      // GPU to switch
    model::BandwidthServer down;    // switch to GPU
    model::BandwidthServer reduce;  // operand bytes into the switches' reduction, from this GPU
  };
  // Runs `work` as its slice of the timeline (fabric/work_slice.h); executeWork does it.
  void execute(DeviceWork& work);
  void executeWork(DeviceWork& work);
  // Moves `bytes` of piece `p` starting `offset` bytes in, leaving at `t`; returns arrival.
  uint64_t moveChunk(const DeviceWork& w, const WorkPiece& p, uint64_t offset, uint64_t bytes, uint64_t t);
  // How a transfer among some GPUs spreads over the planes while links or switches are down:
  // each plane in proportion to the live links the worst-off of those GPUs has to it (a plane a
  // GPU has no live link to carries none of it). `healthy`: nothing is down, the preset's split.
  struct Route {
    bool healthy = true;
    std::vector<uint64_t> weight;  // per plane
    uint64_t total = 0;
    size_t last = 0;  // the last plane of nonzero weight, which takes what the others left
  };
  Route routeOf(std::initializer_list<int> gpus, const std::vector<int>* more = nullptr) const;
  // Plane p's part of a `bytes` chunk of `gpu`'s on `route` (`sent` counts what earlier planes took).
  uint64_t shareOf(const Route& route, int gpu, size_t p, uint64_t bytes, uint64_t* sent) const;
  // The bytes to book on `gpu`'s port to plane p for a share: its bandwidth is that of its live
  // links, so a share takes nominal / live as long.
  uint64_t portBytes(int gpu, size_t p, uint64_t share) const;
  // The same for plane p's crossbar, of which only the switches that are up work.
  uint64_t crossbarBytes(size_t p, uint64_t share) const;
  // The GPU whose memory `w`'s step `st` reaches and `gpu` cannot (over a cut NVLink path),
  // or -1 when it can reach them all.
  int unreachable(int gpu, const ResolvedStep& st) const;
  // `left` (if given): when the last byte has left the switches for `to` (see writeSpan).
  // `fromSms`: the chunk is SMs' loads or stores of a peer's memory, which move at
  // nvlink.sm_efficiency of the line rate (the ports and crossbar book more bytes for them);
  // otherwise a copy engine's, at nvlink.efficiency.
  uint64_t acrossFabric(int from, int to, uint64_t bytes, uint64_t t, const char* what, uint64_t* left = nullptr,
                        bool fromSms = false);
  // A chunk of a staged peer copy: out of `from` to pinned host memory, the driver's staging, and
  // into `to`.
  uint64_t throughHost(int from, int to, uint64_t bytes, uint64_t t);
  // Plane p's part of a `bytes` chunk that `gpu` sends or receives, in proportion to the links
  // between them; the last plane takes what the others left (`sent` counts what they took).
  uint64_t planeShare(int gpu, size_t p, uint64_t bytes, uint64_t* sent) const;
  // Carries out the pieces of a copy or memset; with `syncOnly` (a timing-only run) only those
  // into allocations kernels synchronise on (syncAllocs_).
  void moveData(DeviceWork& w, bool syncOnly);
  // Timing-only runs move no data, except into the allocations that kernels synchronise on (a
  // wait or a signal step named them): those words must hold what a functional run holds, or a
  // barrier that a memset re-arms would pass at once, and the simulated time of a kernel would
  // depend on what ran before it. (GPU, allocation) pairs; engine thread only.
  std::set<std::pair<int, uint64_t>> syncAllocs_;
  void noteSyncAllocs(const ResolvedStep& st);

  // Kernels (node_kernels.cpp).
  void executeKernel(DeviceWork& w);
  // A program's own kernel through the PTX executor (node_ptx.cpp).
  void executePtxKernel(DeviceWork& w);
  void applyStep(const ResolvedStep& st, bool functional);
  // A chunk of a step: `released` is when the SMs are done with it (its loads have returned and
  // its stores have been accepted: see writeSpan), `done` when its last byte is in memory.
  struct ChunkTimes {
    uint64_t released = 0, done = 0;
  };
  ChunkTimes timeStepChunk(int gpu, const ResolvedStep& st, uint64_t offset, uint64_t bytes, uint64_t t);
  uint64_t readSpan(int gpu, const MemorySpan& span, uint64_t offset, uint64_t bytes, uint64_t t, const char* what);
  // Stores from `gpu` issued at `t`; returns when they are in memory, and sets `*left` to when
  // the SMs are rid of them: stores are posted, so a thread does not wait for them to land, but
  // the links' flow control lets a GPU have only so much in the switches, so a remote store
  // counts as gone once its last byte has left the switch towards its destination (a multicast
  // store: towards every member). A store to this GPU's own memory is gone at once.
  uint64_t writeSpan(int gpu, const MemorySpan& span, uint64_t offset, uint64_t bytes, uint64_t t, bool rmw,
                     const char* what, uint64_t* left);
  uint64_t multicastOut(int gpu, const ResolvedStep& st, uint64_t offset, uint64_t bytes, uint64_t t, bool rmw,
                        uint64_t* left);
  uint64_t multicastIn(int gpu, const ResolvedStep& st, uint64_t offset, uint64_t bytes, uint64_t t);
  uint64_t hopPs() const;  // GPU to switch to GPU, unloaded
  sc_core::sc_event& signalled();
  // Kernels waiting at a signal word (a barrier), for the stall report.
  struct WaitingKernel {
    int gpu = 0;
    std::string label;
    const ResolvedStep* step = nullptr;  // a behavioural kernel's wait step, or nullptr
    const std::atomic<bool>* abandoned = nullptr;  // its launching process's (DeviceWork)
    std::string ptxWait;  // a PTX kernel: what its blocks wait on (ptx::Executor::describeWait)
  };
  // Stream memory operations waiting for a word, and PTX kernels whose every warp spins
  // (simulation thread): while there are any, work that writes memory wakes them to look again.
  int valueWaiters_ = 0;
  int memoryWatchers_ = 0;
  // Writes to memory so far (by a copy, a memset, a kernel's step or a PTX kernel's slice): a
  // waiting PTX kernel resumes once it has moved on.
  uint64_t memoryEpoch_ = 0;
  // Per GPU (engine ordinal), when the NVLink traffic its PTX kernels have issued so far lands: a
  // fence at .sys scope waits for it (executePtxKernel). Sized once, with the GPUs: a running
  // kernel holds a reference to its GPU's.
  std::vector<uint64_t> smRemoteLanded_;
  // Simulation thread: memory has changed; whoever waits for it looks again.
  void memoryChanged();
  // Device work running (execute), and of it the work that can only wait or spin until memory
  // changes: kernels at a wait step, stream memory operations waiting for a word, PTX kernels
  // waiting or spinning (ptx::Executor::spinning). When all of it is so, nothing but a host's new
  // work can change anything: noteStuck tells the engine (Engine::noteSpinOnly), which reports
  // a suspected hang if that lasts for the grace period (docs/reliability.md).
  int executing_ = 0;
  int stuck_ = 0;
  void noteStuck(int change);
  // Simulation thread: stuck work did something all the same (a PTX kernel released from a wait
  // that waits again within one slice): the engine's run is not one of spinning only.
  void noteProgress();
  OrderedMutex waitingMu_{LockRank::kNodeModelWaiting};
  std::map<uint64_t, WaitingKernel> waitingKernels_;
  uint64_t nextWaitingId_ = 0;

  Preset preset_;
  model::Engine& engine_;
  model::LinkHealth health_;  // simulation thread (setHealth posts)
  // This node's simulation horizon (bandwidth_server.h), which each resource below reads:
  // moved on to the current simulated time before a chunk is timed.
  model::Horizon horizon_;
  std::vector<std::unique_ptr<model::Gpu>> gpus_;
  std::vector<Plane> planes_;             // none: no switch fabric
  std::vector<std::vector<Port>> ports_;  // [gpu][plane]
  uint64_t nvlinkLatencyPs_ = 0;
  double smWireScale_ = 1;  // nvlink.efficiency / nvlink.sm_efficiency: wire bytes per byte of SM traffic
  uint64_t reduceLatencyPs_ = 0;  // the switches' reduction engines, per load-with-reduction
  uint64_t pullLatencyPs_ = 0;
  uint64_t crossGpuSyncPs_ = 0;
  sc_core::sc_event* signalled_ = nullptr;  // a kernel's signal changed a word (simulation thread)
};

}  // namespace mcsim::fabric
