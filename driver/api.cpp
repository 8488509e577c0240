// mcsim's C API (include/mcsim/mcsim.h): versions, the node's state, simulated time and fault
// plans. The kernel-model part is api_kernel_models.cpp. The C++ API (include/mcsim/api.h) is
// written on top of these functions, so this is the one implementation of both.
#include "mcsim/mcsim.h"

#include <algorithm>
#include <string>
#include <vector>

#include "driver/api_errors.h"
#include "driver/context.h"
#include "driver/driver.h"
#include "driver/leaks.h"
#include "driver/memory.h"
#include "driver/pool.h"
#include "driver/stream.h"
#include "fabric/node_host.h"
#include "model/digest.h"
#include "model/engine.h"
#include "model/thread_owned.h"

namespace mcsim::driver {

namespace {
struct LastErrorTag;
std::string& lastError() { return threadOwned<std::string, LastErrorTag>(); }

mcsim_status notInitialized() { return apiFailure(MCSIM_ERROR_NOT_INITIALIZED, "cuInit has not succeeded"); }
mcsim_status nullArgument(const char* name) {
  return apiFailure(MCSIM_ERROR_INVALID_VALUE, std::string(name) + " is NULL");
}

// Installs `rules` (already parsed) as the plan in force.
mcsim_status installRules(std::vector<fabric::FaultRule> rules, uint64_t seed) {
  try {
    resolveFaultPlanNames(&rules);
    fabric::checkFaultPlanFor(rules, node().preset());
  } catch (const fabric::InputError& e) {
    return apiFailure(MCSIM_ERROR_INVALID_PLAN, e.what());
  }
  node().installFaultPlan(std::move(rules), seed);
  return apiSuccess();
}
}  // namespace

mcsim_status apiFailure(mcsim_status status, std::string why) {
  lastError() = std::move(why);
  return status;
}

mcsim_status apiSuccess() {
  lastError().clear();
  return MCSIM_SUCCESS;
}

}  // namespace mcsim::driver

using mcsim::driver::apiFailure;
using mcsim::driver::apiSuccess;
using mcsim::driver::node;
namespace driver = mcsim::driver;

extern "C" {

uint32_t mcsim_api_version(void) { return MCSIM_API_VERSION; }

const char* mcsim_version(void) { return MCSIM_VERSION_STRING; }

const char* mcsim_last_error(void) { return driver::lastError().c_str(); }

int mcsim_initialized(void) { return driver::initialized() ? 1 : 0; }

const char* mcsim_preset_name(void) { return driver::initialized() ? node().preset().name.c_str() : ""; }

mcsim_status mcsim_get_state_digest(uint64_t* digest) {
  if (digest == nullptr) return driver::nullArgument("digest");
  *digest = 0;
  if (!driver::initialized()) return driver::notInitialized();
  mcsim::model::Digest d;
  d.add(node().stateDigest());
  driver::addMemoryTablesToDigest(d);
  driver::addContextsToDigest(d);
  driver::addPoolsToDigest(d);
  driver::addStreamsToDigest(d);
  *digest = d.value();
  return apiSuccess();
}

mcsim_status mcsim_get_node_stats(mcsim_node_stats* stats) {
  if (stats == nullptr) return driver::nullArgument("stats");
  *stats = mcsim_node_stats{};
  if (!driver::initialized()) return driver::notInitialized();
  const mcsim::fabric::NodeStats s = node().stats();
  stats->allocations = s.allocations;
  stats->handles = s.handles;
  stats->reservations = s.reservations;
  stats->mappings = s.mappings;
  stats->exported_fds = s.exportedFds;
  stats->resident_bytes = s.residentBytes;
  stats->host_allocations = driver::hostAllocationCount();
  stats->multicast_objects = s.multicastObjects;
  stats->free_multicast_slots = s.freeMulticastSlots;
  return apiSuccess();
}

mcsim_status mcsim_get_node_module_stats(mcsim_node_module_stats* stats) {
  if (stats == nullptr) return driver::nullArgument("stats");
  *stats = mcsim_node_module_stats{};
  if (!driver::initialized()) return driver::notInitialized();
  stats->ptx_modules = node().stats().ptxModules;
  return apiSuccess();
}

mcsim_status mcsim_get_driver_stats(mcsim_driver_stats* stats) {
  if (stats == nullptr) return driver::nullArgument("stats");
  *stats = mcsim_driver_stats{};
  if (!driver::initialized()) return driver::notInitialized();
  const driver::HandleCounts c = driver::countHandles();
  stats->contexts = c.contexts;
  stats->modules = c.modules;
  stats->functions = c.functions;
  stats->libraries = c.libraries;
  stats->kernels = c.kernels;
  stats->memory_pools = c.memoryPools;
  stats->graphs = c.graphs;
  stats->graph_nodes = c.graphNodes;
  stats->graph_execs = c.graphExecs;
  stats->streams = c.streams;
  stats->events = c.events;
  stats->destroyed_stream_work = c.destroyedStreamWork;
  return apiSuccess();
}

// The node's clock from the first cuInit on, even one a fault plan failed (the node is up); with
// the host's clock (docs/model.md, "What the host costs"), the calling thread's clock when it is
// later: the time the thread has reached.
mcsim_status mcsim_get_simulated_time_ps(uint64_t* ps) {
  if (ps == nullptr) return driver::nullArgument("ps");
  *ps = 0;
  if (!driver::state().node) return driver::notInitialized();
  *ps = node().nowPs();
  if (driver::hostclock::enabled()) *ps = std::max(*ps, driver::hostclock::nowPs());
  return apiSuccess();
}

mcsim_status mcsim_advance_simulated_time(uint64_t ps, uint64_t* reachedPs) {
  if (!driver::initialized()) return driver::notInitialized();
  uint64_t reached = 0;
  if (node().advanceTime(ps, &reached) != mcsim::Status::kOk) {
    return apiFailure(MCSIM_ERROR_NOT_SUPPORTED,
                      "simulated time cannot be advanced from a process attached to a shared node (MCSIM_NODE)");
  }
  driver::hostclock::reached(reached);  // the thread waited for the time to pass
  if (reachedPs != nullptr) *reachedPs = reached;
  return apiSuccess();
}

mcsim_status mcsim_get_simulation_stats(mcsim_simulation_stats* stats) {
  if (stats == nullptr) return driver::nullArgument("stats");
  *stats = mcsim_simulation_stats{};
  if (!driver::state().node) return driver::notInitialized();
  // A process attached to a shared node runs no engine of its own: the node's clock is all it
  // reports. The embedded node's engine runs here.
  auto* local = dynamic_cast<mcsim::fabric::AttachedNode*>(&node());
  if (local == nullptr) {
    stats->simulated_ps = node().nowPs();
    return apiSuccess();
  }
  const mcsim::model::EngineStats e = local->engineStats();
  stats->processes = e.processes;
  stats->timed_waits = e.activations;
  stats->simulated_ps = e.nowPs;
  return apiSuccess();
}

mcsim_status mcsim_install_fault_plan(const char* text, uint64_t seed) {
  if (text == nullptr) return driver::nullArgument("text");
  if (!driver::initialized()) return driver::notInitialized();
  std::vector<mcsim::fabric::FaultRule> rules;
  try {
    rules = mcsim::fabric::parseFaultPlan(text, "MCSIM_API");
  } catch (const mcsim::fabric::InputError& e) {
    return apiFailure(MCSIM_ERROR_INVALID_PLAN, e.what());
  }
  return driver::installRules(std::move(rules), seed);
}

mcsim_status mcsim_clear_fault_plan(void) {
  if (!driver::initialized()) return driver::notInitialized();
  return driver::installRules({}, 0);
}

mcsim_status mcsim_release_fault(const char* label) {
  if (label == nullptr) return driver::nullArgument("label");
  if (!driver::initialized()) return driver::notInitialized();
  node().releaseFault(label);
  return apiSuccess();
}

mcsim_status mcsim_get_fault_report(const mcsim_fault_rule_report** rules, size_t* count) {
  // The calling thread's last report: its strings and the array the caller reads.
  struct Report {
    std::vector<std::string> rule, where;
    std::vector<mcsim_fault_rule_report> entries;
  };
  struct ReportTag;
  Report& report = mcsim::threadOwned<Report, ReportTag>();
  if (rules == nullptr) return driver::nullArgument("rules");
  if (count == nullptr) return driver::nullArgument("count");
  *rules = nullptr;
  *count = 0;
  if (!driver::initialized()) return driver::notInitialized();
  const auto plan = node().faultRules();
  const auto counts = node().faultCounts();
  const size_t n = std::min(plan.size(), counts.size());
  report = Report{};
  for (size_t i = 0; i < n; ++i) {
    report.rule.push_back(plan[i].text);
    report.where.push_back(plan[i].file + ":" + std::to_string(plan[i].line));
  }
  for (size_t i = 0; i < n; ++i) {
    report.entries.push_back({report.rule[i].c_str(), report.where[i].c_str(), counts[i].matched, counts[i].fired});
  }
  *rules = report.entries.data();
  *count = n;
  return apiSuccess();
}

}  // extern "C"
