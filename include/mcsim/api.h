// mcsim's C++ API: the C API of mcsim/mcsim.h in C++ terms (std::string, std::vector), for tests
// and tools that want to look inside the simulated node; a program that only uses cuda.h never
// needs it. Header-only: every function calls its mcsim_* counterpart, which mcsim's
// libcuda.so.1 exports (CMake: link mcsim::api).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mcsim/mcsim.h"

namespace mcsim::api {

struct NodeStats {
  uint64_t allocations = 0;   // live physical allocations (cuMemCreate, cuMemAlloc, imports)
  uint64_t handles = 0;       // live allocation handle values
  uint64_t reservations = 0;  // VA reservations, cuMemAlloc's included
  uint64_t mappings = 0;
  uint64_t exportedFds = 0;   // exported descriptors the node still recognises
  uint64_t residentBytes = 0; // host memory actually backing simulated memory
  uint64_t hostAllocations = 0;  // pinned host allocations
  uint64_t multicastObjects = 0;  // live multicast objects
  int freeMulticastSlots = 0;     // multicast group slots left on each switch
};

// Whether cuInit has succeeded in this process.
inline bool initialized() { return mcsim_initialized() != 0; }

// A digest of every piece of state a driver call can change: the node's allocations, handles,
// address space and exports, and the driver's own tables. Equal digests before and after a
// failing call show that it changed nothing. 0 before cuInit.
inline uint64_t stateDigest() {
  uint64_t d = 0;
  mcsim_get_state_digest(&d);
  return d;
}

// All zero before cuInit.
inline NodeStats nodeStats() {
  mcsim_node_stats s{};
  mcsim_get_node_stats(&s);
  return NodeStats{s.allocations,       s.handles,          s.reservations,      s.mappings,
                   s.exported_fds,      s.resident_bytes,   s.host_allocations,  s.multicast_objects,
                   s.free_multicast_slots};
}

// The driver's tables of handles (API version 2): what each holds now; equal before and after
// cycles of making and destroying handles. All zero before cuInit.
struct DriverStats {
  uint64_t contexts = 0, modules = 0, functions = 0, libraries = 0, kernels = 0, memoryPools = 0;
  uint64_t graphs = 0, graphNodes = 0, graphExecs = 0, streams = 0, events = 0;
  uint64_t destroyedStreamWork = 0;  // work of destroyed streams kept for cuCtxSynchronize
  bool operator==(const DriverStats& o) const {
    return contexts == o.contexts && modules == o.modules && functions == o.functions && libraries == o.libraries &&
           kernels == o.kernels && memoryPools == o.memoryPools && graphs == o.graphs && graphNodes == o.graphNodes &&
           graphExecs == o.graphExecs && streams == o.streams && events == o.events &&
           destroyedStreamWork == o.destroyedStreamWork;
  }
};

inline DriverStats driverStats() {
  mcsim_driver_stats s{};
  mcsim_get_driver_stats(&s);
  return DriverStats{s.contexts, s.modules,     s.functions,   s.libraries, s.kernels,
                     s.memory_pools, s.graphs, s.graph_nodes, s.graph_execs, s.streams,
                     s.events,   s.destroyed_stream_work};
}

// The PTX modules the node keeps parsed (API version 3; on a shared node, every process's): equal
// before and after cycles of loading and unloading modules. 0 before cuInit.
inline uint64_t nodePtxModules() {
  mcsim_node_module_stats s{};
  mcsim_get_node_module_stats(&s);
  return s.ptx_modules;
}

// The preset the node was built from ("hgx-h100"); "" before cuInit.
inline std::string presetName() { return mcsim_preset_name(); }

// Simulated time, in picoseconds (0 before the first cuInit).
inline uint64_t simulatedTimePs() {
  uint64_t ps = 0;
  mcsim_get_simulated_time_ps(&ps);
  return ps;
}

// Lets `ps` picoseconds of simulated time pass, as a host thread sleeping would; false (and nothing
// done) before cuInit or in a process attached to a shared node (mcsim_advance_simulated_time).
inline bool advanceSimulatedTime(uint64_t ps, uint64_t* reachedPs = nullptr) {
  return mcsim_advance_simulated_time(ps, reachedPs) == MCSIM_SUCCESS;
}

// The simulation's own work so far: pieces of work started (one per copy, memset, kernel or event
// record, and one per timer a waiting host thread set) and timed waits they made (the events the
// SystemC kernel scheduled).
struct SimulationStats {
  uint64_t processes = 0;
  uint64_t timedWaits = 0;
  uint64_t simulatedPs = 0;
};
inline SimulationStats simulationStats() {
  mcsim_simulation_stats s{};
  mcsim_get_simulation_stats(&s);
  return SimulationStats{s.processes, s.timed_waits, s.simulated_ps};
}

// Fault plans (docs/faults.md). installFaultPlan replaces the plan in force with `text` (the
// plan format; rules drawing random numbers use `seed`) and returns "" or the problem
// ("MCSIM_API:LINE: ..."); the plan in force is unchanged on error. Requires cuInit.
inline std::string installFaultPlan(const std::string& text, uint64_t seed = 0) {
  return mcsim_install_fault_plan(text.c_str(), seed) == MCSIM_SUCCESS ? std::string() : mcsim_last_error();
}
// Removes the plan in force.
inline void clearFaultPlan() { mcsim_clear_fault_plan(); }
// Releases the calls held by block rules named `label`.
inline void releaseFault(const std::string& label) { mcsim_release_fault(label.c_str()); }

struct FaultRuleReport {
  std::string rule;   // the rule as written
  std::string where;  // FILE:LINE
  uint64_t matched = 0;  // events at its point that passed its filters
  uint64_t fired = 0;
};
inline std::vector<FaultRuleReport> faultReport() {
  const mcsim_fault_rule_report* rules = nullptr;
  size_t count = 0;
  std::vector<FaultRuleReport> out;
  if (mcsim_get_fault_report(&rules, &count) != MCSIM_SUCCESS) return out;
  for (size_t i = 0; i < count; ++i) out.push_back({rules[i].rule, rules[i].where, rules[i].matched, rules[i].fired});
  return out;
}

}  // namespace mcsim::api
