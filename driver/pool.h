// Stream-ordered memory pools (cuMemPoolCreate, cuMemAllocAsync, ...). Every operation completes
// when its call returns (there is no stream model yet), so stream order holds trivially: an
// allocation exists from its cuMemAllocAsync until its cuMemFreeAsync.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <set>
#include <vector>

#include "fabric/node.h"
#include "model/digest.h"

// Every use of a pool is under the pools' lock (pool.cpp), after its handle was checked against
// the pools that exist: a destroyed pool is refused, and freed once none of its memory is out
// (docs/reliability.md, "What is freed when").
struct CUmemPoolHandle_st {
  mcsim::fabric::AllocationProps props;           // location and handle types of its memory
  bool isDefault = false;
  bool destroyed = false;
  std::vector<mcsim::fabric::Access> access;      // per device; the owner always read-write
  std::set<uint64_t> allocations;                 // live allocations, by address
  uint64_t usedBytes = 0, usedHigh = 0, reservedHigh = 0;
  uint64_t releaseThreshold = 0;
  int reuseFlags[3] = {1, 1, 1};                  // the three CU_MEMPOOL_ATTR_REUSE_* settings
};

namespace mcsim::driver {

// cuMemAllocAsync / cuMemAllocFromPoolAsync: `pool` nullptr means the current device's pool.
CUresult poolAlloc(CUdeviceptr* dptr, size_t bytes, CUmemoryPool pool, CUstream stream);
CUresult poolFree(CUdeviceptr dptr, CUstream stream);
// The pool an address was allocated from, or nullptr.
CUmemoryPool poolOf(uint64_t va);
void addPoolsToDigest(model::Digest& d);

}  // namespace mcsim::driver
