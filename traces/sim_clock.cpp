// Simulated time for the records of mcsim's own trace. Compiled into the driver, beside it.
#include "driver/driver.h"
#include "model/engine.h"

namespace mcsim::trace {

// Zero until cuInit has built the node: asking the engine earlier would start SystemC.
// The node's clock: a shared node's is in the node process.
uint64_t simulatedNowPs() { return driver::initialized() ? driver::node().nowPs() : 0; }

}  // namespace mcsim::trace
