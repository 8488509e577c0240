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

// Pinned host memory: made by cuMemAllocHost / cuMemHostAlloc, or registered by cuMemHostRegister.
struct HostAllocation {
  uint64_t base = 0;
  uint64_t size = 0;
  unsigned flags = 0;
  CUctx_st* ctx = nullptr;
  uint64_t id = 0;  // process-wide buffer id (pointer attributes)
  bool registered = false;  // the program's own memory, page-locked by cuMemHostRegister
};
bool findHostAllocation(uint64_t p, HostAllocation* out);
// The context that made the cuMemAlloc allocation at `base`, or nullptr.
CUctx_st* linearOwner(uint64_t base);
// Memory this process mapped with cuIpcOpenMemHandle at `base`: the device of the context that
// opened it (its CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL here), or -1 for memory not opened so.
void noteIpcOpened(uint64_t base, int device);
void forgetIpcOpened(uint64_t base);
int ipcOpenerDevice(uint64_t base);

// Whether a stream argument names a usable stream (NULL, the special handles, or a live stream).
CUresult checkStream(CUstream stream);

// How an entry point orders its operation: asynchronous calls go on `stream`; synchronous ones
// on the calling thread's default stream, and wait for it. `perThreadDefault`: the entry point's
// ABI reads a NULL stream as the per-thread default stream.
struct Ordering {
  CUstream stream = nullptr;
  bool async = false;
  bool perThreadDefault = false;
};

CUresult copyUnified(uint64_t dst, uint64_t src, size_t bytes, const Ordering& o);
CUresult copyHtoD(uint64_t dst, const void* src, size_t bytes, const Ordering& o);
CUresult copyDtoH(void* dst, uint64_t src, size_t bytes, const Ordering& o);
CUresult copyDtoD(uint64_t dst, uint64_t src, size_t bytes, const Ordering& o);
CUresult copyPeer(uint64_t dst, CUcontext dstCtx, uint64_t src, CUcontext srcCtx, size_t bytes, const Ordering& o);
CUresult fill(uint64_t dst, uint32_t value, unsigned elementBytes, size_t count, const Ordering& o);
// The 2D and 3D forms (memory2d.cpp): rectangles of rows and boxes of slices, as cuMemcpy2D*,
// cuMemcpy3D*, cuMemcpy3DPeer* and cuMemsetD2D* take them.
CUresult copy2D(const CUDA_MEMCPY2D* copy, const Ordering& o);
CUresult copy3D(const CUDA_MEMCPY3D* copy, const Ordering& o);
CUresult copy3DPeer(const CUDA_MEMCPY3D_PEER* copy, const Ordering& o);
CUresult fill2D(CUdeviceptr dst, size_t pitch, uint32_t value, unsigned elementBytes, size_t width, size_t height,
                const Ordering& o);

}  // namespace mcsim::driver
