// Stream-ordered memory pools.
#include "driver/pool.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>

#include "driver/context.h"
#include "driver/driver.h"
#include "driver/graph.h"
#include "driver/leaks.h"
#include "driver/stream.h"
#include "driver/memory.h"
#include "model/ordered_mutex.h"

namespace mcsim::driver {

namespace {

struct Pools {
  OrderedMutex mu{LockRank::kDriverPools};
  // Every pool that exists: live ones, and destroyed ones whose memory is still out (membership
  // checks only; a pool goes when it is destroyed with nothing out, or when its last allocation is
  // freed after: forgetPool).
  std::set<CUmemPoolHandle_st*> registry;
  std::vector<CUmemPoolHandle_st*> defaults;  // per device
  std::vector<CUmemPoolHandle_st*> current;   // per device: what cuDeviceGetMemPool answers
  std::map<uint64_t, CUmemPoolHandle_st*> byAddress;
  std::vector<CUmemPoolHandle_st*> creationOrder;  // for digests
};

Pools& pools() {
  static Pools* p = new Pools();
  return *p;
}

CUmemPoolHandle_st* newPool(const fabric::AllocationProps& props, bool isDefault) {
  auto* pool = new CUmemPoolHandle_st();
  pool->props = props;
  pool->isDefault = isDefault;
  pool->access.assign(static_cast<size_t>(state().deviceCount), fabric::Access::kNone);
  if (props.location.kind == fabric::LocationKind::kDevice) {
    pool->access[static_cast<size_t>(props.location.id)] = fabric::Access::kReadWrite;
  }
  pools().registry.insert(pool);
  pools().creationOrder.push_back(pool);
  return pool;
}

// Lazily, one default pool per device (device memory, no shareable handle types).
void ensureDefaults() {
  Pools& p = pools();
  if (!p.defaults.empty()) return;
  for (int d = 0; d < state().deviceCount; ++d) {
    fabric::AllocationProps props;
    props.location = {fabric::LocationKind::kDevice, d};
    p.defaults.push_back(newPool(props, true));
  }
  p.current = p.defaults;
}

bool livePool(CUmemoryPool pool) {
  return pool != nullptr && pools().registry.count(pool) != 0 && !pool->destroyed;
}

// A destroyed pool with no memory out goes (caller holding the pools' lock): its handle is refused
// from then on, as it was since the destroy.
void forgetPoolIfDone(CUmemPoolHandle_st* pool) {
  if (!pool->destroyed || !pool->allocations.empty()) return;
  Pools& p = pools();
  p.registry.erase(pool);
  p.creationOrder.erase(std::find(p.creationOrder.begin(), p.creationOrder.end(), pool));
  delete pool;
}

std::vector<int> accessors(const CUmemPoolHandle_st& pool) {
  std::vector<int> out;
  for (size_t d = 0; d < pool.access.size(); ++d) {
    if (pool.access[d] != fabric::Access::kNone) out.push_back(static_cast<int>(d));
  }
  return out;
}

}  // namespace

namespace {

// Stream-ordered allocation on a capturing stream would make a memory node, which mcsim does not
// model: refused (once said on stderr), and the capture is invalidated.
CUresult refuseCapturedPoolCall(CUstream stream, const char* call) {
  if (!capturesActive()) return CUDA_SUCCESS;
  StreamRef st;
  MCSIM_TRY(resolveStream(stream, false, &st));
  const CUresult r = refuseWhileCapturing(st.get(), CUDA_ERROR_NOT_SUPPORTED);
  static std::atomic<bool> said{false};
  if (r != CUDA_SUCCESS && !said.exchange(true)) {
    std::fprintf(stderr, "mcsim: %s on a capturing stream (a graph memory node) is not modelled; it returns "
                 "CUDA_ERROR_NOT_SUPPORTED and invalidates the capture\n", call);
  }
  return r;
}

}  // namespace

CUresult poolAlloc(CUdeviceptr* dptr, size_t bytes, CUmemoryPool pool, CUstream stream) {
  if (dptr == nullptr) return CUDA_ERROR_INVALID_VALUE;
  MCSIM_TRY(checkStream(stream));
  MCSIM_TRY(refuseCapturedPoolCall(stream, "cuMemAllocAsync"));
  CUctx_st* ctx = nullptr;
  MCSIM_TRY(currentContext(&ctx));
  if (bytes == 0) {
    // The real driver succeeds on a 0-byte request (conformance run of 2026-11-20); mcsim
    // hands back NULL, as cuMemAllocHost(0) does.
    *dptr = 0;
    return CUDA_SUCCESS;
  }
  std::lock_guard<mcsim::OrderedMutex> lock(pools().mu);
  ensureDefaults();
  if (pool == nullptr) pool = pools().current[static_cast<size_t>(ctx->device)];
  if (!livePool(pool)) return CUDA_ERROR_INVALID_VALUE;
  uint64_t va = 0;
  MCSIM_TRY(toResult(state().node->allocPooled(pool->props, bytes, accessors(*pool), &va)));
  pool->allocations.insert(va);
  pool->usedBytes += bytes;
  pool->usedHigh = std::max(pool->usedHigh, pool->usedBytes);
  pool->reservedHigh = std::max(pool->reservedHigh, pool->usedBytes);
  pools().byAddress[va] = pool;
  *dptr = va;
  return CUDA_SUCCESS;
}

CUresult poolFree(CUdeviceptr dptr, CUstream stream) {
  MCSIM_TRY(checkStream(stream));
  MCSIM_TRY(refuseCapturedPoolCall(stream, "cuMemFreeAsync"));
  CUctx_st* ctx = nullptr;
  MCSIM_TRY(currentContext(&ctx));
  if (dptr == 0) return CUDA_SUCCESS;  // as cuMemFree(0)
  std::lock_guard<mcsim::OrderedMutex> lock(pools().mu);
  auto it = pools().byAddress.find(dptr);
  if (it == pools().byAddress.end()) return CUDA_ERROR_INVALID_VALUE;
  fabric::PointerInfo info;
  state().node->pointerInfo(dptr, -1, &info);
  MCSIM_TRY(toResult(state().node->freePooled(dptr)));
  CUmemPoolHandle_st* pool = it->second;
  pool->allocations.erase(dptr);
  pool->usedBytes -= info.requestedSize;
  pools().byAddress.erase(it);
  forgetPoolIfDone(pool);
  return CUDA_SUCCESS;
}

CUmemoryPool poolOf(uint64_t va) {
  std::lock_guard<mcsim::OrderedMutex> lock(pools().mu);
  auto it = pools().byAddress.upper_bound(va);
  if (it == pools().byAddress.begin()) return nullptr;
  --it;
  fabric::PointerInfo info;
  state().node->pointerInfo(it->first, -1, &info);
  return va < it->first + info.mappingSize ? it->second : nullptr;
}

void addPoolsToDigest(model::Digest& d) {
  std::lock_guard<mcsim::OrderedMutex> lock(pools().mu);
  // The default pools are there from cuInit on; they are made on first use only to save the work.
  // So the digest describes them whether or not a call has made them yet, and in device order
  // before the created pools: a call that made them and then failed (cuMemAllocAsync of SIZE_MAX
  // in a fresh process) changed nothing.
  ensureDefaults();
  auto add = [&d](const CUmemPoolHandle_st* p) {
    d.add(p->destroyed ? 1 : 0).add(p->usedBytes).add(p->releaseThreshold).add(p->allocations.size());
    for (uint64_t va : p->allocations) d.add(va);
    for (auto a : p->access) d.add(static_cast<uint64_t>(a));
  };
  d.add(pools().creationOrder.size());
  for (const CUmemPoolHandle_st* p : pools().defaults) add(p);
  for (const CUmemPoolHandle_st* p : pools().creationOrder) {
    if (!p->isDefault) add(p);
  }
  for (const CUmemPoolHandle_st* p : pools().current) d.add(p->props.location.id);
}

void countPools(HandleCounts& c) {
  std::lock_guard<mcsim::OrderedMutex> lock(pools().mu);
  for (const CUmemPoolHandle_st* p : pools().registry) c.memoryPools += p->isDefault ? 0 : 1;
}

}  // namespace mcsim::driver

using namespace mcsim;
using namespace mcsim::driver;

namespace {

// The properties of a new pool, with cuMemCreate's rules for locations and handle types.
CUresult readPoolProps(const CUmemPoolProps* props, fabric::AllocationProps* out) {
  if (props == nullptr || props->allocType != CU_MEM_ALLOCATION_TYPE_PINNED) return CUDA_ERROR_INVALID_VALUE;
  switch (props->location.type) {
    case CU_MEM_LOCATION_TYPE_DEVICE:
      if (!validDevice(props->location.id)) return CUDA_ERROR_INVALID_VALUE;
      out->location = {fabric::LocationKind::kDevice, props->location.id};
      break;
    case CU_MEM_LOCATION_TYPE_HOST_NUMA:
      if (props->location.id < 0 || props->location.id >= hostNumaNodes()) {
        return CUDA_ERROR_INVALID_VALUE;
      }
      out->location = {fabric::LocationKind::kHostNuma, props->location.id};
      break;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
  const unsigned types = static_cast<unsigned>(props->handleTypes);
  if ((types & ~(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR | CU_MEM_HANDLE_TYPE_FABRIC)) != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if ((types & CU_MEM_HANDLE_TYPE_FABRIC) != 0 && !state().node->imexChannelPresent()) return CUDA_ERROR_NOT_PERMITTED;
  for (unsigned char r : props->reserved) {
    if (r != 0) return CUDA_ERROR_INVALID_VALUE;
  }
  out->handleTypes = types;
  out->usage = props->usage;
  return CUDA_SUCCESS;
}

}  // namespace

extern "C" {

CUresult CUDAAPI cuDeviceGetDefaultMemPool(CUmemoryPool* pool_out, CUdevice dev) {
  MCSIM_REQUIRE_INIT_DEV(dev);
  if (pool_out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!validDevice(dev)) return CUDA_ERROR_INVALID_DEVICE;
  std::lock_guard<mcsim::OrderedMutex> lock(pools().mu);
  ensureDefaults();
  *pool_out = pools().defaults[static_cast<size_t>(dev)];
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetMemPool(CUmemoryPool* pool, CUdevice dev) {
  MCSIM_REQUIRE_INIT_DEV(dev);
  if (pool == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!validDevice(dev)) return CUDA_ERROR_INVALID_DEVICE;
  std::lock_guard<mcsim::OrderedMutex> lock(pools().mu);
  ensureDefaults();
  *pool = pools().current[static_cast<size_t>(dev)];
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceSetMemPool(CUdevice dev, CUmemoryPool pool) {
  MCSIM_REQUIRE_INIT_DEV(dev);
  if (!validDevice(dev)) return CUDA_ERROR_INVALID_DEVICE;
  std::lock_guard<mcsim::OrderedMutex> lock(pools().mu);
  ensureDefaults();
  // A device's current pool must hold that device's memory.
  if (!livePool(pool) || pool->props.location.kind != fabric::LocationKind::kDevice || pool->props.location.id != dev) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  pools().current[static_cast<size_t>(dev)] = pool;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemPoolCreate(CUmemoryPool* pool, const CUmemPoolProps* poolProps) {
  MCSIM_REQUIRE_INIT();
  if (pool == nullptr) return CUDA_ERROR_INVALID_VALUE;
  fabric::AllocationProps props;
  MCSIM_TRY(readPoolProps(poolProps, &props));
  std::lock_guard<mcsim::OrderedMutex> lock(pools().mu);
  ensureDefaults();
  *pool = newPool(props, false);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemPoolDestroy(CUmemoryPool pool) {
  MCSIM_REQUIRE_INIT();
  std::lock_guard<mcsim::OrderedMutex> lock(pools().mu);
  ensureDefaults();
  if (!livePool(pool) || pool->isDefault) return CUDA_ERROR_INVALID_VALUE;
  // Allocations still out stay valid until freed (the reference: the pool's resources go once
  // nothing is outstanding). A device whose current pool this was falls back to its default.
  pool->destroyed = true;
  for (size_t d = 0; d < pools().current.size(); ++d) {
    if (pools().current[d] == pool) pools().current[d] = pools().defaults[d];
  }
  forgetPoolIfDone(pool);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep) {
  MCSIM_REQUIRE_INIT();
  (void)minBytesToKeep;  // freed memory goes back at once, so there is nothing to trim
  std::lock_guard<mcsim::OrderedMutex> lock(pools().mu);
  return livePool(pool) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult CUDAAPI cuMemPoolSetAccess(CUmemoryPool pool, const CUmemAccessDesc* map, size_t count) {
  MCSIM_REQUIRE_INIT();
  if (map == nullptr || count == 0) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<mcsim::OrderedMutex> lock(pools().mu);
  if (!livePool(pool)) return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < count; ++i) {
    if (map[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE || !validDevice(map[i].location.id)) {
      return CUDA_ERROR_INVALID_DEVICE;
    }
    const auto f = map[i].flags;
    if (f != CU_MEM_ACCESS_FLAGS_PROT_NONE && f != CU_MEM_ACCESS_FLAGS_PROT_READ && f != CU_MEM_ACCESS_FLAGS_PROT_READWRITE) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    // The owning device always keeps read-write access to its own pool's memory.
    if (pool->props.location.kind == fabric::LocationKind::kDevice && map[i].location.id == pool->props.location.id &&
        f != CU_MEM_ACCESS_FLAGS_PROT_READWRITE) {
      return CUDA_ERROR_INVALID_VALUE;
    }
  }
  for (size_t i = 0; i < count; ++i) {
    const auto access = static_cast<fabric::Access>(map[i].flags);
    pool->access[static_cast<size_t>(map[i].location.id)] = access;
    for (uint64_t va : pool->allocations) state().node->setPooledAccess(va, map[i].location.id, access);
  }
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemPoolGetAccess(CUmemAccess_flags* flags, CUmemoryPool memPool, CUmemLocation* location) {
  MCSIM_REQUIRE_INIT();
  if (flags == nullptr || location == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (location->type != CU_MEM_LOCATION_TYPE_DEVICE || !validDevice(location->id)) return CUDA_ERROR_INVALID_DEVICE;
  std::lock_guard<mcsim::OrderedMutex> lock(pools().mu);
  if (!livePool(memPool)) return CUDA_ERROR_INVALID_VALUE;
  *flags = static_cast<CUmemAccess_flags>(memPool->access[static_cast<size_t>(location->id)]);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void* value) {
  MCSIM_REQUIRE_INIT();
  if (value == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<mcsim::OrderedMutex> lock(pools().mu);
  if (!livePool(pool)) return CUDA_ERROR_INVALID_VALUE;
  switch (attr) {
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
      std::memcpy(&pool->reuseFlags[attr - CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES], value, sizeof(int));
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
      std::memcpy(&pool->releaseThreshold, value, sizeof(cuuint64_t));
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH: {
      // Only a reset to zero is allowed: the high-water mark restarts from the current use.
      cuuint64_t v = 0;
      std::memcpy(&v, value, sizeof v);
      if (v != 0) return CUDA_ERROR_INVALID_VALUE;
      (attr == CU_MEMPOOL_ATTR_USED_MEM_HIGH ? pool->usedHigh : pool->reservedHigh) = pool->usedBytes;
      return CUDA_SUCCESS;
    }
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
}

CUresult CUDAAPI cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void* value) {
  MCSIM_REQUIRE_INIT();
  if (value == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<mcsim::OrderedMutex> lock(pools().mu);
  if (!livePool(pool)) return CUDA_ERROR_INVALID_VALUE;
  cuuint64_t v = 0;
  switch (attr) {
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
      std::memcpy(value, &pool->reuseFlags[attr - CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES], sizeof(int));
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD: v = pool->releaseThreshold; break;
    // Freed memory goes back at once, so what is reserved is what is in use.
    case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT:
    case CU_MEMPOOL_ATTR_USED_MEM_CURRENT: v = pool->usedBytes; break;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH: v = pool->reservedHigh; break;
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH: v = pool->usedHigh; break;
    default: return CUDA_ERROR_INVALID_VALUE;
  }
  std::memcpy(value, &v, sizeof v);
  return CUDA_SUCCESS;
}

}  // extern "C"
