// Simulated time for the records of mcsim's own trace. Compiled into the driver, beside it.
#include <algorithm>

#include "driver/driver.h"
#include "driver/stream.h"
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
// Kernel times (docs/traces.md): the one kernel a launch call submitted, kept until the trace
// ends; then when it ran, from when it could start (its launch, at `launchPs`, and the work it
// followed) to its completion, as far as this process knows (a shared node's completions are
// known once the program waited for them).
void keepKernelTimes() { driver::keepSubmittedKernels(); }
void* takeKernel(bool keep) {
  std::vector<driver::SubmittedKernel> k = driver::takeSubmittedKernels();
  return keep && k.size() == 1 ? new driver::SubmittedKernel(std::move(k.front())) : nullptr;
}
bool kernelTimes(void* kernel, uint64_t launchPs, uint64_t* startPs, uint64_t* endPs) {
  const auto* k = static_cast<const driver::SubmittedKernel*>(kernel);
  if (!k->done->done()) return false;
  uint64_t start = launchPs;
  for (const fabric::WorkDone& w : k->after) {
    if (!w->done()) return false;
    start = std::max(start, w->donePs());
  }
  *startPs = std::min(start, k->done->donePs());
  *endPs = k->done->donePs();
  return true;
}

std::string nodeSettings() { return driver::state().node ? driver::node().sharedSettings() : std::string(); }

}  // namespace mcsim::trace
