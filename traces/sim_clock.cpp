// Simulated time for the records of mcsim's own trace. Compiled into the driver, beside it.
#include "driver/driver.h"
#include "traces/lib/recorder.h"

namespace mcsim::trace {

// The node's clock (a shared node's is in the node process); zero until cuInit has built or
// attached the node (asking the engine earlier would start SystemC).
uint64_t simulatedNowPs() { return driver::initialized() ? driver::node().nowPs() : 0; }

// A shared node's admission order of the calling thread's requests (none on the embedded node).
void nodeBegin(const std::vector<uint64_t>& tags) {
  if (driver::state().node) driver::node().beginTraced(tags);
}
void nodeEnd(std::vector<NodeAdmission>* out) {
  out->clear();
  if (!driver::state().node) return;
  for (const fabric::Admission& a : driver::node().endTraced()) out->push_back({a.number, a.finishedBefore, a.simRuns});
}
std::string nodeSettings() { return driver::state().node ? driver::node().sharedSettings() : std::string(); }

}  // namespace mcsim::trace
