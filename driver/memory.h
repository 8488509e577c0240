// Memory operations shared by the legacy-stream entry points (memory.cpp) and their per-thread
// default-stream twins (ptds.cpp, compiled with CUDA_API_PER_THREAD_DEFAULT_STREAM).
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>

#include "model/digest.h"

struct CUctx_st;

namespace mcsim::driver {

// For mcsim::api: the driver's memory tables in digests and counts.
void addMemoryTablesToDigest(model::Digest& d);
uint64_t hostAllocationCount();

// Pinned host memory made by cuMemAllocHost / cuMemHostAlloc.
struct HostAllocation {
  uint64_t base = 0;
  uint64_t size = 0;
  unsigned flags = 0;
  CUctx_st* ctx = nullptr;
  uint64_t id = 0;  // process-wide buffer id (pointer attributes)
};
bool findHostAllocation(uint64_t p, HostAllocation* out);
// The context that made the cuMemAlloc allocation at `base`, or nullptr.
CUctx_st* linearOwner(uint64_t base);

// Streams that exist before issue-4 stream objects: the NULL stream, CU_STREAM_LEGACY and
// CU_STREAM_PER_THREAD. Anything else is an unknown handle.
CUresult checkStream(CUstream stream);

CUresult copyUnified(uint64_t dst, uint64_t src, size_t bytes);
CUresult copyHtoD(uint64_t dst, const void* src, size_t bytes);
CUresult copyDtoH(void* dst, uint64_t src, size_t bytes);
CUresult copyDtoD(uint64_t dst, uint64_t src, size_t bytes);
CUresult copyPeer(uint64_t dst, CUcontext dstCtx, uint64_t src, CUcontext srcCtx, size_t bytes);
CUresult fill(uint64_t dst, uint32_t value, unsigned elementBytes, size_t count);

}  // namespace mcsim::driver
