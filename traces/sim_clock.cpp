// Simulated time for the records of mcsim's own trace. Compiled into the driver, beside it.
#include "driver/driver.h"

namespace mcsim::trace {

// The node's clock (a shared node's is in the node process); zero until cuInit has built or
// attached the node (asking the engine earlier would start SystemC).
uint64_t simulatedNowPs() { return driver::initialized() ? driver::node().nowPs() : 0; }

// The admission numbers of the calling thread's node requests (a shared node's; none otherwise).
void nodeAdmissions(std::vector<uint64_t>* out) {
  if (driver::state().node) *out = driver::node().takeAdmissions();
}

}  // namespace mcsim::trace
