// cuProfilerStart / cuProfilerStop: they start and stop a profiler's collection. Without a
// profiler attached the real driver does nothing and succeeds, and mcsim has none to attach: both
// succeed with a current context, as the reference lists (CUDA_SUCCESS, or
// CUDA_ERROR_INVALID_CONTEXT without one).
#include "driver/context.h"
#include "driver/driver.h"

// After driver.h, which renames the entry points this file defines.
#include <cudaProfiler.h>

namespace {

CUresult profilerCall() {
  CUctx_st* ctx = nullptr;
  return mcsim::driver::currentContext(&ctx);
}

}  // namespace

extern "C" {

CUresult CUDAAPI cuProfilerStart(void) {
  MCSIM_REQUIRE_INIT();
  return profilerCall();
}

CUresult CUDAAPI cuProfilerStop(void) {
  MCSIM_REQUIRE_INIT();
  return profilerCall();
}

}  // extern "C"
