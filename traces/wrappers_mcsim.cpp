// The exported entry points of mcsim's libcuda.so.1: the generated wrappers, forwarding straight
// to the driver's implementations, which mcsim_internal_names.h renamed to mcsim_impl_<symbol>.
// This translation unit is the one part of the library compiled without those renames.
#undef MCSIM_DRIVER_IMPL
#include "traces/lib/wrapper_prologue.h"

namespace mcsim::trace {
uint64_t simulatedNowPs();  // traces/sim_clock.cpp
bool describeSimFunction(uint64_t f, bool isKernel, const std::string& label, FunctionInfo* out);  // sim_functions.cpp
void nodeBegin(const std::vector<uint64_t>& tags);  // sim_clock.cpp
void nodeEnd(std::vector<NodeAdmission>* out);
std::string nodeSettings();
void keepKernelTimes();
void* takeKernel(bool keep);
bool kernelTimes(void* kernel, uint64_t launchPs, uint64_t* startPs, uint64_t* endPs);
}

#define MCSIM_TRACE_DECLARE(sym, pfn) extern "C" std::remove_pointer_t<pfn> mcsim_impl_##sym;
#define MCSIM_TRACE_PRELUDE(i)
#define MCSIM_TRACE_MULTICAST_GUARD(i)
#define MCSIM_TRACE_FORWARD(sym, pfn, i) mcsim_impl_##sym
#define MCSIM_TRACE_IMPL_TABLE

#include "trace_wrappers.inc"

namespace {
// Before main (and before any call): MCSIM_RECORD decides, once, whether calls are recorded. The
// settings are checked, and their warnings printed, at cuInit (driver/driver.cpp).
__attribute__((constructor)) void startRecording() {
  mcsim::trace::startRecorder(mcsim::trace::Target{"mcsim", &mcsim::trace::simulatedNowPs, kWrapperTable, kImplTable,
                                                      &mcsim::trace::describeSimFunction,
                                                      &mcsim::trace::nodeBegin, &mcsim::trace::nodeEnd,
                                                      &mcsim::trace::nodeSettings, &mcsim::trace::takeKernel,
                                                      &mcsim::trace::kernelTimes},
                              mcsim::settings::fromEnvironmentQuietly());
  if (mcsim::trace::gRecording) mcsim::trace::keepKernelTimes();
}
}  // namespace
