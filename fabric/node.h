// The Node interface: the simulated machine as the driver sees it.
//
// The driver validates arguments in the order the reference documents and then asks the node.
// The node owns everything that outlives a single call: physical allocations and their backing
// memory, each attached process's handles and virtual address space, exported handles, and
// (later) the fabric manager's multicast objects. Calls are plain data in, Status and plain data
// out, so that the same interface can be served in-process (the embedded node) or across
// processes (a shared node). The driver does not know which transport it has.
//
// Every failing call leaves the node exactly as it was: no half-made object, no leaked handle.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "fabric/admission.h"
#include "fabric/fabric_manager.h"
#include "fabric/fault_injector.h"
#include "fabric/memory_types.h"
#include "fabric/preset.h"
#include "mcsim/kernel_model.h"
#include "model/address_space.h"
#include "model/completion.h"
#include "model/status.h"

namespace mcsim::fabric {

struct AllocationProps {
  Location location;
  uint64_t size = 0;
  uint32_t handleTypes = 0;  // HandleTypeBits the allocation may be exported as
  uint8_t compressionType = 0;
  bool gpuDirectRdmaCapable = false;
  uint16_t usage = 0;
};

// What the node knows about the memory at one virtual address.
struct PointerInfo {
  bool mapped = false;
  bool linear = false;          // made by allocLinear (cuMemAlloc), not by the VMM calls
  bool pooled = false;          // made by allocPooled (a stream-ordered pool)
  Location location;            // where the backing memory lives
  uint64_t allocationId = 0;    // stable id of the physical allocation
  uint32_t handleTypes = 0;
  bool gpuDirectRdmaCapable = false;
  Access access = Access::kNone;  // of the device asked about
  uint64_t mappingBase = 0, mappingSize = 0;
  uint64_t reservationBase = 0, reservationSize = 0;
  uint64_t requestedSize = 0;   // what cuMemAlloc or the pool was asked for
};

struct NodeStats {
  uint64_t allocations = 0;     // live physical allocations
  uint64_t handles = 0;         // live handle values
  uint64_t reservations = 0;
  uint64_t mappings = 0;
  uint64_t exportedFds = 0;     // export records still tracked (their descriptors may be open)
  uint64_t residentBytes = 0;   // host memory actually backing simulated memory
  uint64_t multicastObjects = 0;
  int freeMulticastSlots = 0;   // per switch
};

// The completion of device work the node accepted.
using WorkDone = model::CompletionPtr;

// A device operation as a stream hands it to the node: a copy, a memset, or a marker (an event's
// record point, which completes when the work it follows has).
struct DeviceOp {
  enum class Kind { kCopy, kFill, kMarker, kKernel };
  Kind kind = Kind::kMarker;
  int engineDevice = 0;  // the stream's device, whose copy engine runs the operation
  // kCopy: each side is a device address (used with its accessor's rights) or a host pointer.
  uint64_t dst = 0, src = 0;
  bool dstDevice = true, srcDevice = true;
  bool dstPinned = false, srcPinned = false;  // host sides: pinned (else pageable) memory
  int dstAccessor = 0, srcAccessor = 0;
  uint64_t bytes = 0;
  // kFill: `count` elements of `elementBytes` at `dst`, written with `dstAccessor`'s rights.
  uint32_t value = 0;
  unsigned elementBytes = 1;
  uint64_t count = 0;
  // The caller waits for the operation before touching its host memory again, so pageable host
  // data need not be staged at submission.
  bool callerWaits = false;
  // The host source is valid only during `submit` (a transport's buffer): it is staged at
  // submission whatever kind of memory it stands for.
  bool stageSource = false;
  // kMarker: it follows work of another GPU (a stream waiting for another GPU's event), which
  // costs the cross-GPU synchronisation time.
  bool crossGpu = false;
  // kKernel: what a launch does (its model's steps), run in order by `engineDevice`'s SMs with
  // that device's rights; `threads` (grid x block) times `bytesInFlightPerThread` (0: the GPU's
  // default) sets how many bytes of loads it keeps in flight.
  std::vector<KernelStep> steps;
  uint64_t threads = 0;
  uint64_t blocks = 0;  // grid size: each block runs on an SM of its own, up to the GPU's SMs
  uint32_t bytesInFlightPerThread = 0;
  std::string label;   // the kernel's name, for the timeline
  std::string stream;  // the stream's name, for the timeline
};

class Node {
 public:
  virtual ~Node() = default;

  virtual const Preset& preset() const = 0;
  // The simulated device virtual address range; host pointers never fall inside it.
  virtual uint64_t vaBase() const = 0;
  virtual uint64_t vaLimit() const = 0;

  // Physical memory (cuMemCreate and friends). A handle value is per process.
  virtual Status createAllocation(const AllocationProps& props, uint64_t* handle) = 0;
  virtual Status releaseHandle(uint64_t handle) = 0;
  // An imported handle reports no shareable handle types, as the real driver's do.
  virtual Status handleProps(uint64_t handle, AllocationProps* props) = 0;
  // The allocation mapped at `va`, by the handle value this process first had for it (even if
  // that handle was released since), with one more reference on it.
  virtual Status retainHandleAt(uint64_t va, uint64_t* handle) = 0;

  // Shareable handles. A POSIX fd export is a real open descriptor owned by the caller; like the
  // real driver's, it keeps the allocation alive for as long as it is open anywhere in the
  // process, so an import succeeds after every handle was released. A descriptor that is not one
  // of this node's exports is kNotShareable.
  virtual Status exportPosixFd(uint64_t handle, int* fd) = 0;
  virtual Status importPosixFd(int fd, uint64_t* handle) = 0;
  virtual Status exportFabric(uint64_t handle, uint8_t out[64]) = 0;
  virtual Status importFabric(const uint8_t in[64], uint64_t* handle) = 0;

  // Virtual memory. `map` takes a whole allocation at offset 0 (kNotSupported otherwise, as the
  // real driver answers).
  virtual Status reserve(uint64_t size, uint64_t alignment, uint64_t hint, uint64_t* va) = 0;
  virtual Status freeReservation(uint64_t va, uint64_t size) = 0;
  virtual Status map(uint64_t va, uint64_t size, uint64_t offset, uint64_t handle) = 0;
  virtual Status unmap(uint64_t va, uint64_t size) = 0;
  virtual Status setAccess(uint64_t va, uint64_t size, int device, Access access) = 0;
  virtual Status getAccess(uint64_t va, int device, Access* access) = 0;

  // Linear device memory (cuMemAlloc): reserved, backed and mapped in one step, readable and
  // writable by every device's copy engines.
  virtual Status allocLinear(int device, uint64_t size, uint64_t* va) = 0;
  virtual Status freeLinear(uint64_t va) = 0;
  // Stream-ordered pool memory (cuMemAllocAsync): made like linear memory, but it keeps the
  // pool's properties (location, shareable handle types), `accessors` get read-write access,
  // and cuMulticastBindAddr accepts it.
  virtual Status allocPooled(const AllocationProps& props, uint64_t size, const std::vector<int>& accessors,
                             uint64_t* va) = 0;
  virtual Status freePooled(uint64_t va) = 0;
  // cuMemPoolSetAccess, applied to one of the pool's allocations.
  virtual Status setPooledAccess(uint64_t va, int device, Access access) = 0;

  virtual Status pointerInfo(uint64_t va, int device, PointerInfo* info) = 0;
  // Device memory left and in all (cuMemGetInfo).
  virtual Status memoryInfo(int device, uint64_t* free, uint64_t* total) = 0;

  // Device work. `submit` checks the operation (addresses mapped, rights, links up), then queues
  // it. A kernel whose steps touch memory they may not (an unmapped or inaccessible address,
  // multimem on an address that is no multicast mapping, a multicast range some member has no
  // memory bound for) is refused with kIllegalAddress, a misaligned operand with kMisaligned:
  // the driver turns those into the context's sticky error. Otherwise `submit` queues
  // it to run once everything in `after` has completed; the operation takes simulated time in
  // the node's timing model. A refused operation changes nothing.
  virtual Status submit(const DeviceOp& op, const std::vector<WorkDone>& after, WorkDone* done) = 0;
  // Blocks until `w` completes (simulated time runs as far as that); returns the time it did, or
  // model::Engine::kGaveUp when the work can never complete and the wait was given up (reported
  // on stderr as the hang policy says).
  virtual uint64_t waitFor(const WorkDone& w) = 0;
  // Whether `w` is done; when it is not, lets simulated time run on for the host's polling
  // interval first (so that a program spinning on a query makes progress, deterministically).
  virtual bool poll(const WorkDone& w) = 0;
  // Whether `w` is done, letting no time run (its donePs() is valid once it is).
  virtual bool isDone(const WorkDone& w) { return w->done(); }
  virtual uint64_t nowPs() = 0;
  // Lets `ps` of simulated time pass, as a host thread sleeping that long would (device work runs
  // meanwhile), and sets the time reached. kNotSupported where the process runs no simulation of
  // its own to advance (a shared node's client), the default.
  virtual Status advanceTime(uint64_t ps, uint64_t* reachedPs) {
    (void)ps;
    (void)reachedPs;
    return Status::kNotSupported;
  }

  // Synchronous data movement (submit, then wait), for callers outside any stream. Device
  // addresses are resolved against the rights of device `accessor`; host pointers are plain
  // pointers into this process. A copy reads through `srcAccessor`'s rights and writes through
  // `dstAccessor`'s (a peer copy names two contexts, hence two devices).
  Status write(uint64_t va, const void* src, uint64_t bytes, int accessor);
  Status read(void* dst, uint64_t va, uint64_t bytes, int accessor);
  Status copy(uint64_t dstVa, uint64_t srcVa, uint64_t bytes, int dstAccessor, int srcAccessor);
  Status fill(uint64_t va, uint32_t value, unsigned elementBytes, uint64_t count, int accessor);

  // Multicast, through the fabric manager. Multicast handles share the value space of
  // allocation handles: releaseHandle, map, export and import take either kind.
  virtual Status multicastCreate(const MulticastProps& props, uint64_t* handle) = 0;
  virtual Status multicastAddDevice(uint64_t handle, int device) = 0;
  // Binds block until every device of the team has been added. `device` < 0 binds for the
  // memory's own device (cuMulticastBindMem / BindAddr); >= 0 is the _v2 forms' device.
  virtual Status multicastBindMem(uint64_t mcHandle, int device, uint64_t mcOffset, uint64_t memHandle,
                                  uint64_t memOffset, uint64_t size) = 0;
  virtual Status multicastBindAddr(uint64_t mcHandle, int device, uint64_t mcOffset, uint64_t va,
                                   uint64_t size) = 0;
  virtual Status multicastUnbind(uint64_t mcHandle, int device, uint64_t mcOffset, uint64_t size) = 0;
  virtual FabricManagerState fabricManagerState() = 0;
  virtual void setFabricManagerState(FabricManagerState s) = 0;

  // Fault injection. Before a driver call does anything, the driver asks what the plan says
  // about it: `symbol` is the exported name, `device` the call's device (-1: none), `rank` the
  // process's MCSIM_RANK (-1: unset), `args` the `argCount` arguments it reports for argument
  // filters (fault_arguments.def). Fabric-level rules (when `fabricMoment`) (fabric manager, IMEX, links, switches)
  // are evaluated at every such event too. A blocked call waits here, and counts as blocked in
  // the driver for deadlock detection.
  struct FaultOutcome {
    bool fail = false;
    std::string result;  // a CUresult name for `return` rules (the driver resolves it)
    Status status = Status::kOk;  // kHang when a block was given up
  };
  virtual bool faultsActive() const = 0;
  virtual FaultOutcome onEntry(const char* symbol, int device, int rank, const FaultArgument* args,
                               size_t argCount, bool fabricMoment) = 0;
  virtual void installFaultPlan(std::vector<FaultRule> rules, uint64_t seed) = 0;
  virtual void releaseFault(const std::string& label) = 0;
  virtual std::vector<FaultRuleCounts> faultCounts() = 0;
  virtual std::vector<FaultRule> faultRules() = 0;
  // Whether an IMEX channel is present (the preset's answer, until a fault plan changes it).
  virtual bool imexChannelPresent() const = 0;
  // Whether `gpu`'s NVLinks are up (a fault plan can take them down).
  virtual bool nvlinkUp(int gpu) = 0;

  // A shared node's admission order (admission.h), which traces record. The requests this thread
  // makes from beginTraced to endTraced are traced: the node counts them as finished for the
  // requests after them, and endTraced returns their admissions in the order the node took them
  // in (one driver call may make several). `tags` (a replay) are the recorded admission numbers
  // the next requests are to take, in order; those still unused at endTraced are given up. The
  // embedded node numbers nothing: a process's own trace order is all there is.
  virtual void beginTraced(std::vector<uint64_t> tags) { (void)tags; }
  virtual std::vector<Admission> endTraced() { return {}; }
  // A shared node's settings as JSON (name, topology, seed, fault plan, hang grace), as it told
  // this process when it attached; "" for the embedded node.
  virtual std::string sharedSettings() const { return ""; }

  // A digest of all state a call can change (for "a failure leaves no trace" checks).
  virtual uint64_t stateDigest() = 0;
  virtual NodeStats stats() = 0;
};

// A node hosted inside this process: the default.
std::unique_ptr<Node> makeEmbeddedNode(Preset preset);
// A node hosted by `mcsim node` in a process of its own (node_server.cpp), which this process
// attaches to (MCSIM_NODE=name); `rank` (MCSIM_RANK, -1: unset) names it in reports. Detaches when
// destroyed. nullptr with the problem in `error`.
std::unique_ptr<Node> attachSharedNode(const std::string& name, int rank, std::string* error);

}  // namespace mcsim::fabric
