// Random fault plans for `mcsim campaign`, FoundationDB style: every fault point is switched on
// for a run with some probability (itself drawn per run: swarm testing), and a point that is on
// fires with a probability (or at the Nth event) of its own. The plan depends on nothing but the
// seed and the workload's points.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mcsim::tools {

// The fabric-level points every plan may use besides the workload's driver entry points.
const std::vector<std::string>& fabricFaultPoints();

struct PlanSettings {
  // The most a point is switched on for a run: each run takes a quarter, half or all of it.
  double pointOn = 0.3;
  int devices = 8;          // device= filters name devices below this
  uint64_t horizon = 200;   // about how many driver calls the workload makes (for nth= of fabric rules)
};

// The plan for `seed`, one line (rules separated by " ; "), over the driver entry points the
// workload calls and the fabric-level points. Every rule is one the driver accepts.
// `workload` names the stream the choices come from, so that one seed gives each workload a plan
// of its own.
std::string generatePlan(uint64_t seed, const std::string& workload, const std::vector<std::string>& entryPoints,
                         const PlanSettings& settings);

// The CUresults a fault rule may make `entry` return: the codes the reference documents for it.
const std::vector<const char*>& faultCodesFor(const std::string& entry);
// Teardown calls (releases, unmaps, frees, unbinds): the workloads retry them a few times, so
// rules at these points fire at most twice (a run can still clean up, and a leak stays a bug).
bool isTeardownPoint(const std::string& entry);

}  // namespace mcsim::tools
