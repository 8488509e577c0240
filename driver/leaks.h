// What a program left behind at exit (MCSIM_LEAK_CHECK; docs/user-guide.md, "What a program
// leaves behind"): device and pinned host memory, handle values of physical memory and multicast
// objects, reservations and mappings, opened IPC memory, created contexts, streams and events.
//
// Reported as compute-sanitizer's leak check reports device memory a program did not free: a
// summary line when anything is left (`summary`, the default), a line per object (`full`), and
// optionally a failing exit status (`error`).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace mcsim::driver {

// The objects left, by kind; kinds print in the order of Kind.
class LeakReport {
 public:
  enum class Kind {
    kLinear,           // cuMemAlloc
    kPooled,           // cuMemAllocAsync
    kPinned,           // cuMemAllocHost / cuMemHostAlloc
    kRegistered,       // cuMemHostRegister
    kAllocationHandle, // cuMemCreate, imports, retains
    kMulticastHandle,  // cuMulticastCreate, imports
    kMapping,          // cuMemMap
    kReservation,      // cuMemAddressReserve
    kIpcOpen,          // cuIpcOpenMemHandle
    kContext,          // cuCtxCreate
    kStream,           // cuStreamCreate
    kEvent,            // cuEventCreate
  };
  // One object of `kind`, of `bytes` (0: not memory), described by `detail` for the full list
  // (what it is after the kind's name: its size, device, address or id).
  void add(Kind kind, uint64_t bytes, std::string detail);

  // Adds `other`'s objects after this report's own, kind by kind.
  void merge(const LeakReport& other);

  bool empty() const { return byKind_.empty(); }
  // "2 cuMemAlloc allocations (4 MiB), 1 multicast object, 1 stream".
  std::string summary() const;
  // One line per object, kinds in order, each kind's objects in the order they were added.
  std::vector<std::string> lines() const;

 private:
  struct Left {
    uint64_t bytes = 0;
    std::vector<std::string> details;
  };
  std::map<Kind, Left> byKind_;
};

// Each table's part of the report, under its own lock (memory.cpp, stream.cpp, context.cpp).
void addHostMemoryLeft(LeakReport& r);
void addStreamsAndEventsLeft(LeakReport& r);
void addContextsLeft(LeakReport& r);

// What a context still held when it went (cuCtxDestroy, cuDevicePrimaryCtxReset, the last
// cuDevicePrimaryCtxRelease, which the CUDA runtime makes as the process exits): its memory,
// streams and events go with it, and they were left behind as much as what outlives it (as
// compute-sanitizer's leak check counts memory still allocated when a context is destroyed).
// Kept for the report at exit; `how` ends the detail ("when context 1 was reset").
void noteLeftInContext(LeakReport::Kind kind, uint64_t bytes, const std::string& detail, const std::string& how);
// Whether anything will read what noteLeftInContext keeps (MCSIM_LEAK_CHECK is not `off`).
bool leakReportArmed();

// How many handles of each kind the driver's tables know now (mcsim_get_driver_stats): a handle is
// in its table from the call that made it to the one that destroyed it, so these are equal before
// and after cycles of making and destroying handles (docs/reliability.md, "What is freed when").
struct HandleCounts {
  uint64_t contexts = 0, modules = 0, functions = 0, libraries = 0, kernels = 0, memoryPools = 0;
  uint64_t graphs = 0, graphNodes = 0, graphExecs = 0, streams = 0, events = 0;
  uint64_t destroyedStreamWork = 0;  // kept for cuCtxSynchronize (stream.cpp)
};
// Each table's part, under its own lock (context.cpp, module.cpp, pool.cpp, graph.cpp,
// graph_exec.cpp, stream.cpp).
void countContexts(HandleCounts& c);
void countModules(HandleCounts& c);
void countPools(HandleCounts& c);
void countGraphs(HandleCounts& c);
void countGraphExecs(HandleCounts& c);
void countStreamsAndEvents(HandleCounts& c);
HandleCounts countHandles();

// "0x7f12...": how the report shows an address.
std::string hexAddress(uint64_t v);

// What MCSIM_LEAK_CHECK asks for, read at cuInit (the report runs after the process's own static
// destructors, when the settings may already be gone).
void armLeakReport();

// The report as it stands now: the node's part (its holdings of this process) and the driver's.
LeakReport gatherLeftovers();

}  // namespace mcsim::driver
