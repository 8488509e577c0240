// mcsim's exported C++ API (include/mcsim/api.h).
#include "mcsim/api.h"

#include "driver/context.h"
#include "driver/driver.h"
#include "driver/stream.h"
#include "driver/memory.h"
#include "driver/pool.h"
#include "model/digest.h"
#include "model/engine.h"

namespace mcsim::api {

bool initialized() { return driver::initialized(); }

uint64_t stateDigest() {
  if (!driver::initialized()) return 0;
  model::Digest d;
  d.add(driver::node().stateDigest());
  driver::addMemoryTablesToDigest(d);
  driver::addContextsToDigest(d);
  driver::addPoolsToDigest(d);
  driver::addStreamsToDigest(d);
  return d.value();
}

NodeStats nodeStats() {
  NodeStats out;
  if (!driver::initialized()) return out;
  const fabric::NodeStats s = driver::node().stats();
  out.allocations = s.allocations;
  out.handles = s.handles;
  out.reservations = s.reservations;
  out.mappings = s.mappings;
  out.exportedFds = s.exportedFds;
  out.residentBytes = s.residentBytes;
  out.hostAllocations = driver::hostAllocationCount();
  out.multicastObjects = s.multicastObjects;
  out.freeMulticastSlots = s.freeMulticastSlots;
  return out;
}

std::string presetName() { return driver::initialized() ? driver::node().preset().name : std::string(); }

uint64_t simulatedTimePs() { return driver::state().node ? driver::node().nowPs() : 0; }

SimulationStats simulationStats() {
  // A process attached to a shared node runs no engine of its own (and must not start one: its
  // thread would count as the program's in the node's deadlock detection); the node's clock is
  // all it reports.
  if (!model::Engine::exists()) return SimulationStats{0, 0, simulatedTimePs()};
  const model::EngineStats e = model::Engine::instance().stats();
  return SimulationStats{e.processes, e.activations, e.nowPs};
}

std::string installFaultPlan(const std::string& text, uint64_t seed) {
  if (!driver::initialized()) return "cuInit has not succeeded";
  try {
    std::vector<fabric::FaultRule> rules = fabric::parseFaultPlan(text, "MCSIM_API");
    driver::resolveFaultPlanNames(&rules);
    driver::node().installFaultPlan(std::move(rules), seed);
  } catch (const fabric::InputError& e) {
    return e.what();
  }
  return "";
}

void releaseFault(const std::string& label) {
  if (driver::initialized()) driver::node().releaseFault(label);
}

std::vector<FaultRuleReport> faultReport() {
  std::vector<FaultRuleReport> out;
  if (!driver::initialized()) return out;
  const auto rules = driver::node().faultRules();
  const auto counts = driver::node().faultCounts();
  for (size_t i = 0; i < rules.size(); ++i) {
    out.push_back(FaultRuleReport{rules[i].text, rules[i].file + ":" + std::to_string(rules[i].line),
                                  counts[i].matched, counts[i].fired});
  }
  return out;
}

}  // namespace mcsim::api
