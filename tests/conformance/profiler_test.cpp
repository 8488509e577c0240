// cuProfilerStart / cuProfilerStop without a profiler attached: they succeed and change nothing.
#include <cudaProfiler.h>

#include "tests/conformance/conformance.h"

namespace {

using Profiler = conformance::DriverTest;
using ProfilerNoContext = conformance::InitTest;

TEST_F(Profiler, StartAndStopSucceedWithNoProfilerAttached) {
  EXPECT_OK(cuProfilerStart());
  EXPECT_OK(cuProfilerStart());
  EXPECT_OK(cuProfilerStop());
  EXPECT_OK(cuProfilerStop());
}

TEST_F(ProfilerNoContext, StartAndStopNeedAContext) {
  EXPECT_CU(CUDA_ERROR_INVALID_CONTEXT, cuProfilerStart());
  EXPECT_CU(CUDA_ERROR_INVALID_CONTEXT, cuProfilerStop());
}

}  // namespace
