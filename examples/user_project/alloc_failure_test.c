/* A test of the kind a project writes for its own error handling: does my code survive
 * cuMemAlloc running out of memory, and does the failed call leave nothing behind? mcsim's C API
 * (mcsim/mcsim.h) makes the failure happen on demand and shows what the node holds. */
#include <cuda.h>
#include <stdio.h>

#include "mcsim/mcsim.h"

static int failures = 0;

#define CHECK(cond)                                                 \
  do {                                                              \
    if (!(cond)) {                                                  \
      fprintf(stderr, "%s:%d: FAILED: %s\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                   \
    }                                                               \
  } while (0)

/* The code under test: a buffer, or an error the caller can handle. */
static CUresult make_buffer(CUdeviceptr* out, size_t bytes) {
  *out = 0;
  return cuMemAlloc(out, bytes);
}

int main(void) {
  CUdevice dev;
  CUcontext ctx;
  CUdeviceptr buf = 0;
  uint64_t before = 0, after = 0, t0 = 0, t1 = 0;
  mcsim_node_stats empty, held;

  CHECK(cuInit(0) == CUDA_SUCCESS);
  CHECK(cuDeviceGet(&dev, 0) == CUDA_SUCCESS);
  CHECK(cuDevicePrimaryCtxRetain(&ctx, dev) == CUDA_SUCCESS);
  CHECK(cuCtxSetCurrent(ctx) == CUDA_SUCCESS);
  printf("mcsim %s (C API %u), preset %s\n", mcsim_version(), (unsigned)mcsim_api_version(), mcsim_preset_name());

  /* The second allocation runs out of memory. */
  CHECK(mcsim_install_fault_plan("cuMemAlloc : nth=2 -> return CUDA_ERROR_OUT_OF_MEMORY\n", 0) == MCSIM_SUCCESS);
  CHECK(make_buffer(&buf, 1 << 20) == CUDA_SUCCESS);
  CHECK(cuMemFree(buf) == CUDA_SUCCESS);
  CHECK(mcsim_get_state_digest(&before) == MCSIM_SUCCESS);
  CHECK(mcsim_get_node_stats(&empty) == MCSIM_SUCCESS);
  CHECK(make_buffer(&buf, 1 << 20) == CUDA_ERROR_OUT_OF_MEMORY);
  CHECK(buf == 0);
  /* The failed call changed nothing. */
  CHECK(mcsim_get_state_digest(&after) == MCSIM_SUCCESS);
  CHECK(after == before);

  /* A malformed plan is refused with its line, and the plan in force stays. */
  CHECK(mcsim_install_fault_plan("cuMemAlloc : nth=1 -> retrun CUDA_ERROR_UNKNOWN", 0) == MCSIM_ERROR_INVALID_PLAN);
  printf("refused: %s\n", mcsim_last_error());

  /* Without a plan, allocations succeed again and show in the node's counters. */
  CHECK(mcsim_clear_fault_plan() == MCSIM_SUCCESS);
  CHECK(make_buffer(&buf, 1 << 20) == CUDA_SUCCESS);
  CHECK(mcsim_get_node_stats(&held) == MCSIM_SUCCESS);
  CHECK(held.allocations == empty.allocations + 1);
  CHECK(cuMemFree(buf) == CUDA_SUCCESS);
  CHECK(mcsim_get_node_stats(&held) == MCSIM_SUCCESS);
  CHECK(held.allocations == empty.allocations);  /* nothing leaked */

  /* Simulated time: a millisecond passes when asked to. */
  CHECK(mcsim_get_simulated_time_ps(&t0) == MCSIM_SUCCESS);
  CHECK(mcsim_advance_simulated_time(1000000000ull, &t1) == MCSIM_SUCCESS);
  CHECK(t1 == t0 + 1000000000ull);

  CHECK(cuDevicePrimaryCtxRelease(dev) == CUDA_SUCCESS);
  if (failures != 0) {
    fprintf(stderr, "%d checks failed\n", failures);
    return 1;
  }
  printf("passed\n");
  return 0;
}
