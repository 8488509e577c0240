// The Node interface: the simulated machine as the driver sees it.
//
// The driver validates arguments in the order the reference documents and then asks the node.
// The node owns everything that outlives a single call: physical allocations and their backing
// memory, each attached process's handles and virtual address space, exported handles, and
// (later) the fabric manager's multicast objects. Calls are plain data in, Status and plain data
// out, so that the same interface can be served in-process (the embedded node) or across
// processes (a shared node). The driver does not know which transport it has. The calls are
// declared once, in node_ops.def, which makes both this interface and the shared node's transport.
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
#include "fabric/node_op_macros.h"
#include "fabric/node_settings.h"
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
  uint64_t ptxModules = 0;      // PTX modules the node holds parsed (loadPtx, not yet unloadPtx), every process's
};

// One thing a process holds on the node, as the leak report at exit lists it (driver/leaks.cpp).
struct Holding {
  enum class Kind : uint8_t {
    kAllocationHandle,  // a handle value of physical memory (cuMemCreate, an import, a retain)
    kMulticastHandle,   // a handle value of a multicast object
    kReservation,       // a range of cuMemAddressReserve
    kMapping,           // a range cuMemMap mapped in one of those
    kLinear,            // cuMemAlloc memory
    kPooled,            // cuMemAllocAsync memory not yet freed
    kIpcOpen,           // another process's memory opened by cuIpcOpenMemHandle
  };
  Kind kind = Kind::kAllocationHandle;
  uint64_t key = 0;   // the handle value, or the range's address
  uint64_t size = 0;  // bytes (of the object a handle names; of the range)
  int device = -1;    // the memory's device; -1: a multicast object, host memory, or several
};

// The completion of device work the node accepted.
using WorkDone = model::CompletionPtr;

// A device operation as a stream hands it to the node: a copy, a memset, or a marker (an event's
// record point, which completes when the work it follows has).
struct DeviceOp {
  enum class Kind { kCopy, kFill, kMarker, kKernel, kWaitValue };
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
  // kCopy: the devices whose cuMemAlloc memory the stream's context may reach (itself and those
  // cuCtxEnablePeerAccess named). A copy that reaches another GPU's cuMemAlloc memory without that
  // access is staged through host memory by the driver (the CUDA C++ Programming Guide, "Peer-to-Peer
  // Memory Copy"), at the rate a real node showed (docs/real-driver.md, section 15).
  std::vector<int> peers;
  // kKernel: what a launch does (its model's steps), run in order by `engineDevice`'s SMs with
  // that device's rights; `threads` (grid x block) times `bytesInFlightPerThread` (0: the GPU's
  // default) sets how many bytes of loads it keeps in flight.
  std::vector<KernelStep> steps;
  uint64_t threads = 0;
  uint64_t blocks = 0;  // grid size: each block runs on an SM of its own, up to the GPU's SMs
  uint32_t bytesInFlightPerThread = 0;
  // kWaitValue: holds the stream until the `elementBytes`-byte word at `dst` (4 or 8, aligned, read
  // with `dstAccessor`'s rights) compares with `waitValue` as `waitCompare` says.
  WaitCompare waitCompare = WaitCompare::kGeq;
  uint64_t waitValue = 0;
  std::string label;   // the kernel's name, for the timeline
  std::string stream;  // the stream's name, for the timeline
  // kKernel of a program's own kernel (docs/ptx.md): not steps but PTX, kernel `label` of the
  // module loadPtx registered as `ptxModule` (0: a behavioural model's steps, above), run by the
  // PTX executor with these dimensions, dynamic shared memory and parameter bytes (in the
  // kernel's .param layout). `globalsVa`: where the module's .global variables live in device
  // memory (0: in the executor).
  uint64_t ptxModule = 0;
  uint32_t gridX = 1, gridY = 1, gridZ = 1, blockX = 1, blockY = 1, blockZ = 1;
  uint32_t dynamicShared = 0;
  std::vector<uint8_t> params;
  uint64_t globalsVa = 0;
  // Blocks of it resident at once: the device's SMs times the blocks an SM holds (the driver's
  // occupancy calculation); 0: every block.
  uint64_t residentBlocks = 0;
  // The context's CU_LIMIT_PRINTF_FIFO_SIZE: how many bytes of printf records a launch keeps
  // (0: the executor's default).
  uint64_t printfFifoBytes = 0;
  // The timeline's arrow from the driver call that queued it (model::Timeline::flowFromLastCall;
  // 0: none). Not sent to a shared node, which keeps a timeline of its own.
  uint64_t flowId = 0;
  // The submitting host thread's simulated clock when it made the call (docs/model.md, "What the
  // host costs"): the operation starts on the device no earlier. 0: no such bound (the host's
  // cost off, MCSIM_HOST_COST_PERCENT=0), as before host time was modelled.
  uint64_t notBeforePs = 0;
};

class Node {
 public:
  virtual ~Node() = default;

  // What a process reads without asking the node (a shared node's client has them from the
  // attach and the segment's header).
  virtual const Preset& preset() const = 0;
  // The simulated device virtual address range; host pointers never fall inside it.
  virtual uint64_t vaBase() const = 0;
  virtual uint64_t vaLimit() const = 0;
  // Whether a fault plan is installed (onEntry need not be asked otherwise).
  virtual bool faultsActive() const = 0;
  // Whether an IMEX channel is present (the preset's answer, until a fault plan changes it).
  virtual bool imexChannelPresent() const = 0;
  // Whether the node is known to be gone (a shared node whose process died or stopped): every
  // call of the node then fails with kNodeLost. The embedded node is never lost.
  virtual bool lost() const { return false; }

  // What a driver call's fault-plan check (onEntry) answers.
  struct FaultOutcome {
    bool fail = false;
    std::string result;  // a CUresult name for `return` rules (the driver resolves it)
    Status status = Status::kOk;  // kHang when a block was given up
  };

  // The node's operations, one pure virtual per NODE_OP and NODE_CALL line of node_ops.def, where
  // each is declared and described.
#define NODE_OP(Return, name, params) virtual Return name(MCSIM_NODE_DECLS(params)) = 0;
#define NODE_CALL(Return, name, params) virtual Return name(MCSIM_NODE_DECLS(params)) = 0;
#define NODE_WIRE(name, inputs, outputs)
#include "fabric/node_ops.def"

  // Lets `ps` of simulated time pass, as a host thread sleeping that long would (device work runs
  // meanwhile), and sets the time reached. kNotSupported where the process runs no simulation of
  // its own to advance (a shared node's client), the default. (Not in node_ops.def: it does not
  // cross to a shared node, whose time every attached process shares.)
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
};

// A node hosted inside this process: the default.
std::unique_ptr<Node> makeEmbeddedNode(Preset preset, const NodeSettings& settings);
// A node hosted by `mcsim node` in a process of its own (node_server.cpp), which this process
// attaches to (MCSIM_NODE=name); `rank` (MCSIM_RANK, -1: unset) names it in reports; `tray`
// (MCSIM_TRAY, -1: unset) is the compute tray it runs on, which the node checks and which decides
// what handles reach it (docs/multiprocess.md, "Trays"); of `settings`, where the node lives and
// whether a hang report aborts this process. Detaches when destroyed. nullptr with the problem in
// `error`.
std::unique_ptr<Node> attachSharedNode(const std::string& name, int rank, int tray, const NodeSettings& settings,
                                       std::string* error);

}  // namespace mcsim::fabric
