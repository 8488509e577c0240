// mcsim's C++ API, exported by libcuda.so.1 beside the driver's C ABI. For tests and tools that
// want to look inside the simulated node; a program that only uses cuda.h never needs it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

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
bool initialized();
// A digest of every piece of state a driver call can change: the node's allocations, handles,
// address space and exports, and the driver's own tables. Equal digests before and after a
// failing call show that it changed nothing. Requires cuInit.
uint64_t stateDigest();
NodeStats nodeStats();
// The preset the node was built from ("hgx-h100").
std::string presetName();
// Simulated time, in picoseconds.
uint64_t simulatedTimePs();
// The simulation's own work so far: processes spawned (one per copy, memset or event record)
// and timed waits they made (the events the SystemC kernel scheduled).
struct SimulationStats {
  uint64_t processes = 0;
  uint64_t timedWaits = 0;
  uint64_t simulatedPs = 0;
};
SimulationStats simulationStats();

// Fault plans (docs/faults.md). installFaultPlan replaces the plan in force with `text` (the
// plan format; rules drawing random numbers use `seed`) and returns "" or the problem
// ("MCSIM_API:LINE: ..."); the plan in force is unchanged on error. Requires cuInit.
std::string installFaultPlan(const std::string& text, uint64_t seed = 0);
// Releases the calls held by block rules named `label`.
void releaseFault(const std::string& label);

struct FaultRuleReport {
  std::string rule;   // the rule as written
  std::string where;  // FILE:LINE
  uint64_t matched = 0;  // events at its point that passed its filters
  uint64_t fired = 0;
};
std::vector<FaultRuleReport> faultReport();

}  // namespace mcsim::api
