// mcsim's exported C++ API (include/mcsim/api.h).
#include "mcsim/api.h"

#include "driver/context.h"
#include "driver/driver.h"
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

uint64_t simulatedTimePs() { return model::Engine::instance().nowPs(); }

}  // namespace mcsim::api
