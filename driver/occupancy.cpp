// Occupancy (cuOccupancy*): how many blocks of a kernel an SM holds at once, from the device's SM
// limits (the preset's device attributes) and the kernel's own (cuFuncGetAttribute), by the rules
// of NVIDIA's occupancy calculator as the toolkit's cuda_occupancy.h states them for compute
// capability 9.0. A block fits
//   by warps:     maxThreadsPerSM / 32 / ceil(blockSize / 32) blocks;
//   by blocks:    the SM's maximum (MAX_BLOCKS_PER_MULTIPROCESSOR, 32 on an H100);
//   by registers: a warp takes roundup(regs x 32, 256) registers; the SM's registers are split in
//                 4 sub-partitions, each holding floor(regsPerSM / 4 / regsPerWarp) warps, so
//                 floor(that x 4 / warpsPerBlock) blocks; none when a block's registers (its warps
//                 rounded up to the 4 sub-partitions) exceed the registers per block;
//   by shared memory: a block takes roundup(static + dynamic + the reserved 1 KiB, 128) bytes;
//                 none when the dynamic part exceeds the kernel's MAX_DYNAMIC_SHARED_SIZE_BYTES;
//                 the SM holds floor(carveout / that), where the carveout is all of the SM's shared
//                 memory (the default preference) or the kernel's preferred percentage of it,
//                 rounded up to the next of the SM's configurations (0, 8, 16, 32, 64, 100, 132,
//                 164, 196, 228 KiB), and never less than one block's share so rounded;
// and the answer is the least of these. Block barriers (64 per SM on compute capability 9.0, one
// per block) never bind before the block limit does.
#include <algorithm>

#include "driver/context.h"
#include "driver/driver.h"
#include "driver/stream.h"

// The kernel's attributes as a program reads them (module.cpp); a fault plan's rules for these
// calls apply to these reads too.
extern "C" CUresult CUDAAPI cuFuncGetAttribute(int* pi, CUfunction_attribute attrib, CUfunction hfunc);
extern "C" CUresult CUDAAPI cuKernelGetFunction(CUfunction* pFunc, CUkernel kernel);

using namespace mcsim::driver;

namespace {

constexpr int kWarp = 32;
constexpr int kRegisterGranule = 256;  // registers are given to a warp in units of this
constexpr int kSubPartitions = 4;
constexpr int kSharedGranule = 128;    // shared memory is given to a block in units of this
// The shared memory configurations of a compute capability 9.0 SM, in KiB (cuda_occupancy.h).
constexpr int kCarveoutsKiB[] = {0, 8, 16, 32, 64, 100, 132, 164, 196, 228};

struct Limits {  // the device's
  int maxThreadsPerSm, maxBlocksPerSm, regsPerSm, regsPerBlock, maxThreadsPerBlock, smCount;
  long sharedPerSm, reservedPerBlock;
};

struct Kernel {  // the function's
  int regs, maxThreads, carveout;
  long staticShared, maxDynamicShared;
};

int roundUp(long v, long unit) { return static_cast<int>((v + unit - 1) / unit * unit); }

// The smallest SM configuration that holds `bytes`; the largest if none does.
long carveoutFor(long bytes) {
  for (int kib : kCarveoutsKiB) {
    if (bytes <= kib * 1024L) return kib * 1024L;
  }
  return kCarveoutsKiB[sizeof kCarveoutsKiB / sizeof kCarveoutsKiB[0] - 1] * 1024L;
}

CUresult deviceLimits(int device, Limits* l) {
  const auto& a = state().attributes[static_cast<size_t>(device)];
  l->maxThreadsPerSm = a[CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR];
  l->maxBlocksPerSm = a[CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR];
  l->regsPerSm = a[CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR];
  l->regsPerBlock = a[CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK];
  l->maxThreadsPerBlock = a[CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK];
  l->smCount = a[CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT];
  l->sharedPerSm = a[CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR];
  l->reservedPerBlock = a[CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK];
  return CUDA_SUCCESS;
}

CUresult kernelOf(CUfunction f, Kernel* k) {
  int v = 0;
  // A CUkernel stands for its function in the current context, as in cuLaunchKernel (the
  // runtime passes its kernels so).
  CUfunction inContext = nullptr;
  if (cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_NUM_REGS, f) == CUDA_ERROR_INVALID_HANDLE &&
      cuKernelGetFunction(&inContext, reinterpret_cast<CUkernel>(f)) == CUDA_SUCCESS) {
    f = inContext;
  }
  MCSIM_TRY(cuFuncGetAttribute(&k->regs, CU_FUNC_ATTRIBUTE_NUM_REGS, f));
  MCSIM_TRY(cuFuncGetAttribute(&k->maxThreads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, f));
  MCSIM_TRY(cuFuncGetAttribute(&k->carveout, CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, f));
  MCSIM_TRY(cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, f));
  k->staticShared = v;
  MCSIM_TRY(cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, f));
  k->maxDynamicShared = v;
  return CUDA_SUCCESS;
}

// The blocks of `blockSize` threads and `dynamicShared` bytes one SM holds.
int activeBlocks(const Limits& l, const Kernel& k, int blockSize, long dynamicShared) {
  if (blockSize > l.maxThreadsPerBlock || blockSize > k.maxThreads) return 0;
  const int warps = (blockSize + kWarp - 1) / kWarp;
  int blocks = std::min(l.maxBlocksPerSm, l.maxThreadsPerSm / kWarp / warps);
  // Registers.
  const int regsPerWarp = roundUp(static_cast<long>(k.regs) * kWarp, kRegisterGranule);
  if (regsPerWarp > 0) {
    if (regsPerWarp * roundUp(warps, kSubPartitions) > l.regsPerBlock || regsPerWarp * warps > l.regsPerBlock) return 0;
    const int warpsPerSub = l.regsPerSm / kSubPartitions / regsPerWarp;
    blocks = std::min(blocks, warpsPerSub * kSubPartitions / warps);
  }
  // Shared memory.
  if (dynamicShared > k.maxDynamicShared) return 0;
  const long perBlock = roundUp(k.staticShared + dynamicShared + l.reservedPerBlock, kSharedGranule);
  long perSm = k.carveout < 0 ? l.sharedPerSm : carveoutFor(static_cast<long>(k.carveout) * l.sharedPerSm / 100);
  if (perSm < perBlock) perSm = carveoutFor(perBlock);
  if (perBlock > 0) blocks = std::min<long>(blocks, perSm / perBlock);
  return blocks;
}

CUresult setUp(CUfunction f, Limits* l, Kernel* k) {
  CUctx_st* ctx = nullptr;
  MCSIM_TRY(currentContext(&ctx));
  MCSIM_TRY(deviceLimits(ctx->device, l));
  return kernelOf(f, k);
}

// CU_OCCUPANCY_DISABLE_CACHING_OVERRIDE concerns partitioned global caching, which compute
// capability 9.0 does not have: it changes nothing.
bool knownFlags(unsigned flags) { return (flags & ~unsigned{CU_OCCUPANCY_DISABLE_CACHING_OVERRIDE}) == 0; }

CUresult maxActiveBlocks(int* numBlocks, CUfunction func, int blockSize, size_t dynamicSMemSize, unsigned flags) {
  if (numBlocks == nullptr || !knownFlags(flags)) return CUDA_ERROR_INVALID_VALUE;
  Limits l;
  Kernel k;
  MCSIM_TRY(setUp(func, &l, &k));
  if (blockSize <= 0) return CUDA_ERROR_INVALID_VALUE;
  *numBlocks = activeBlocks(l, k, blockSize, static_cast<long>(dynamicSMemSize));
  return CUDA_SUCCESS;
}

// The block size of the most threads per SM (the largest such, trying multiples of the warp size
// from the largest down, as the calculator does), and the grid that fills every SM with it.
CUresult maxPotentialBlockSize(int* minGridSize, int* blockSize, CUfunction func, CUoccupancyB2DSize toDynamic,
                               size_t dynamicSMemSize, int blockSizeLimit, unsigned flags) {
  if (minGridSize == nullptr || blockSize == nullptr || !knownFlags(flags) || blockSizeLimit < 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  Limits l;
  Kernel k;
  MCSIM_TRY(setUp(func, &l, &k));
  int limit = std::min(l.maxThreadsPerBlock, k.maxThreads);
  if (blockSizeLimit > 0) limit = std::min(limit, blockSizeLimit);
  int best = 0, bestBlocks = 0, bestThreads = 0;
  for (int aligned = roundUp(limit, kWarp); aligned > 0; aligned -= kWarp) {
    const int size = std::min(limit, aligned);
    const size_t dynamic = toDynamic != nullptr ? toDynamic(size) : dynamicSMemSize;
    const int blocks = activeBlocks(l, k, size, static_cast<long>(dynamic));
    if (blocks * size > bestThreads) {
      best = size;
      bestBlocks = blocks;
      bestThreads = blocks * size;
    }
    if (bestThreads == l.maxThreadsPerSm) break;
  }
  *blockSize = best;
  *minGridSize = bestBlocks * l.smCount;
  return CUDA_SUCCESS;
}

}  // namespace

namespace mcsim::driver {

int occupancyBlocksPerSm(int device, int regs, int maxThreads, int carveout, long staticShared, long maxDynamicShared,
                         int blockSize, long dynamicShared) {
  Limits l;
  (void)deviceLimits(device, &l);
  const Kernel k{regs, maxThreads, carveout, staticShared, maxDynamicShared};
  return activeBlocks(l, k, blockSize, dynamicShared);
}

}  // namespace mcsim::driver

extern "C" {

CUresult CUDAAPI cuOccupancyMaxActiveBlocksPerMultiprocessor(int* numBlocks, CUfunction func, int blockSize,
                                                             size_t dynamicSMemSize) {
  MCSIM_REQUIRE_INIT();
  return maxActiveBlocks(numBlocks, func, blockSize, dynamicSMemSize, CU_OCCUPANCY_DEFAULT);
}

CUresult CUDAAPI cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int* numBlocks, CUfunction func, int blockSize,
                                                                      size_t dynamicSMemSize, unsigned int flags) {
  MCSIM_REQUIRE_INIT();
  return maxActiveBlocks(numBlocks, func, blockSize, dynamicSMemSize, flags);
}

CUresult CUDAAPI cuOccupancyMaxPotentialBlockSize(int* minGridSize, int* blockSize, CUfunction func,
                                                  CUoccupancyB2DSize blockSizeToDynamicSMemSize, size_t dynamicSMemSize,
                                                  int blockSizeLimit) {
  MCSIM_REQUIRE_INIT();
  return maxPotentialBlockSize(minGridSize, blockSize, func, blockSizeToDynamicSMemSize, dynamicSMemSize,
                               blockSizeLimit, CU_OCCUPANCY_DEFAULT);
}

CUresult CUDAAPI cuOccupancyMaxPotentialBlockSizeWithFlags(int* minGridSize, int* blockSize, CUfunction func,
                                                           CUoccupancyB2DSize blockSizeToDynamicSMemSize,
                                                           size_t dynamicSMemSize, int blockSizeLimit,
                                                           unsigned int flags) {
  MCSIM_REQUIRE_INIT();
  return maxPotentialBlockSize(minGridSize, blockSize, func, blockSizeToDynamicSMemSize, dynamicSMemSize,
                               blockSizeLimit, flags);
}

// The dynamic shared memory each of `numBlocks` blocks of `blockSize` threads may have with them
// all on one SM: one block alone may have up to the per-block limit; several share the SM's
// carveout (in whole allocation units); capped by the per-block limit and by the kernel's
// MAX_DYNAMIC_SHARED_SIZE_BYTES. More blocks than the SM holds is CUDA_ERROR_INVALID_VALUE.
CUresult CUDAAPI cuOccupancyAvailableDynamicSMemPerBlock(size_t* dynamicSmemSize, CUfunction func, int numBlocks,
                                                         int blockSize) {
  MCSIM_REQUIRE_INIT();
  if (dynamicSmemSize == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Limits l;
  Kernel k;
  MCSIM_TRY(setUp(func, &l, &k));
  if (numBlocks <= 0 || blockSize <= 0) return CUDA_ERROR_INVALID_VALUE;
  if (activeBlocks(l, k, blockSize, 0) < numBlocks) return CUDA_ERROR_INVALID_VALUE;
  CUctx_st* ctx = nullptr;
  MCSIM_TRY(currentContext(&ctx));
  // A block's limit: the default 48 KiB, or the opt-in maximum once the kernel allows more.
  const auto& a = state().attributes[static_cast<size_t>(ctx->device)];
  const long byDefault = a[CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK];
  const long perBlockLimit = (k.staticShared + k.maxDynamicShared > byDefault
                                  ? a[CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN]
                                  : byDefault) +
                             l.reservedPerBlock;
  const long perSm = numBlocks == 1 ? perBlockLimit
                                    : (k.carveout < 0 ? l.sharedPerSm
                                                      : carveoutFor(static_cast<long>(k.carveout) * l.sharedPerSm / 100));
  long available = perSm / numBlocks / kSharedGranule * kSharedGranule;
  available = std::min(available, perBlockLimit) - k.staticShared;
  available = std::min(available, k.maxDynamicShared);
  *dynamicSmemSize = static_cast<size_t>(std::max(0L, available));
  return CUDA_SUCCESS;
}

}  // extern "C"
