// Pointer queries: cuPointerGetAttribute(s) and cuMemGetAddressRange. The answers follow what
// the real driver gave for cuMemAlloc, VMM and pinned host memory (docs/real-driver/).
#include <cstddef>
#include <cstring>

#include "driver/context.h"
#include "driver/driver.h"
#include "driver/memory.h"
#include "driver/pool.h"

using namespace mcsim;
using namespace mcsim::driver;

namespace {

constexpr uint64_t kLinearGranule = 2ull << 20;  // cuMemAlloc and pinned memory are mapped in 2 MiB pages
constexpr size_t kP2PTokenBytes =
    offsetof(CUDA_POINTER_ATTRIBUTE_P2P_TOKENS, vaSpaceToken) + sizeof(unsigned int);

// What one address is, gathered once for all the attributes asked about it.
struct PointerFacts {
  bool device = false;      // inside a device mapping
  bool host = false;        // inside pinned host memory
  fabric::PointerInfo info;
  HostAllocation hostAlloc;
  CUctx_st* ctx = nullptr;  // current context, if usable
};

CUresult gather(CUdeviceptr ptr, PointerFacts* f) {
  CUctx_st* ctx = nullptr;
  {
    const QuietChecks quiet;  // a pointer is described with or without a current context
    if (currentContext(&ctx) == CUDA_SUCCESS) f->ctx = ctx;
  }
  const int dev = f->ctx != nullptr ? f->ctx->device : -1;
  if (isDeviceAddress(ptr)) {
    MCSIM_TRY(toResult(state().node->pointerInfo(ptr, dev, &f->info)));
    f->device = f->info.mapped;
  } else {
    f->host = findHostAllocation(ptr, &f->hostAlloc);
  }
  return CUDA_SUCCESS;
}

template <typename T>
void put(void* data, T v) {
  std::memcpy(data, &v, sizeof v);
}

// The answer for device memory: a VMM mapping, cuMemAlloc memory or pool memory.
CUresult deviceAttribute(const PointerFacts& f, CUdeviceptr ptr, CUpointer_attribute attr, void* data) {
  const fabric::PointerInfo& i = f.info;
  // cuMemAlloc and pool memory answer with the allocation as asked for, VMM memory with its
  // reservation.
  const bool driverMade = i.linear || i.pooled;
  switch (attr) {
    case CU_POINTER_ATTRIBUTE_CONTEXT: {
      CUcontext owner = nullptr;  // VMM memory belongs to no context
      if (i.linear) owner = linearOwner(i.mappingBase);
      put<CUcontext>(data, owner);
      return CUDA_SUCCESS;
    }
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE: put<unsigned>(data, CU_MEMORYTYPE_DEVICE); return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
      // The current device cannot use a VMM address it was given no access to.
      if (!i.linear && f.ctx != nullptr && i.access == fabric::Access::kNone) return CUDA_ERROR_INVALID_VALUE;
      put<CUdeviceptr>(data, ptr);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_HOST_POINTER: return CUDA_ERROR_INVALID_VALUE;
    case CU_POINTER_ATTRIBUTE_P2P_TOKENS: {
      CUDA_POINTER_ATTRIBUTE_P2P_TOKENS t{};
      t.p2pToken = 0;
      t.vaSpaceToken = 0xfe00;  // the value the real driver reports
      // The real driver writes the two fields, 12 bytes, and leaves the struct's padding alone.
      std::memcpy(data, &t, kP2PTokenBytes);
      return CUDA_SUCCESS;
    }
    case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS: put<unsigned>(data, 1); return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
    case CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID: put<unsigned long long>(data, i.allocationId); return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED: put<unsigned>(data, 0); return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: {
      // Memory opened from an IPC handle counts as the opening context's device's (driver/ipc.cpp).
      const int opener = i.linear ? ipcOpenerDevice(i.mappingBase) : -1;
      put<int>(data, opener >= 0 ? opener : i.location.kind == fabric::LocationKind::kDevice ? i.location.id : -1);
      return CUDA_SUCCESS;
    }
    case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE: put<unsigned>(data, i.linear ? 1 : 0); return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
      put<CUdeviceptr>(data, driverMade ? i.mappingBase : i.reservationBase);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
      put<size_t>(data, driverMade ? i.requestedSize : i.reservationSize);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MAPPED: put<unsigned>(data, 1); return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES: put<unsigned long long>(data, i.handleTypes); return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE:
      put<unsigned>(data, i.gpuDirectRdmaCapable ? 1 : 0);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_ACCESS_FLAGS:
      put<unsigned>(data, i.linear ? unsigned{CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE} : static_cast<unsigned>(i.access));
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE: put<CUmemoryPool>(data, i.pooled ? poolOf(ptr) : nullptr); return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MAPPING_SIZE: put<size_t>(data, i.mappingSize); return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR: put<CUdeviceptr>(data, i.mappingBase); return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_IS_HW_DECOMPRESS_CAPABLE: put<unsigned>(data, 0); return CUDA_SUCCESS;
    default: return CUDA_ERROR_INVALID_VALUE;
  }
}

// The answer for pinned host memory (cuMemAllocHost, cuMemHostAlloc).
CUresult hostAttribute(const PointerFacts& f, CUdeviceptr ptr, CUpointer_attribute attr, void* data) {
  const HostAllocation& h = f.hostAlloc;
  const uint64_t mapped = (h.size + kLinearGranule - 1) & ~(kLinearGranule - 1);
  switch (attr) {
    case CU_POINTER_ATTRIBUTE_CONTEXT: put<CUcontext>(data, h.ctx); return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE: put<unsigned>(data, CU_MEMORYTYPE_HOST); return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
    case CU_POINTER_ATTRIBUTE_HOST_POINTER: put<CUdeviceptr>(data, ptr); return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
    case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
    case CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE:
    case CU_POINTER_ATTRIBUTE_IS_HW_DECOMPRESS_CAPABLE: put<unsigned>(data, 0); return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
    case CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID: put<unsigned long long>(data, h.id); return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: put<int>(data, h.ctx != nullptr ? h.ctx->device : 0); return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
    case CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR: put<CUdeviceptr>(data, h.base); return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE: put<size_t>(data, h.size); return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MAPPING_SIZE: put<size_t>(data, mapped); return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MAPPED: put<unsigned>(data, 1); return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES: put<unsigned long long>(data, 0); return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_ACCESS_FLAGS:
      put<unsigned>(data, CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE: put<CUmemoryPool>(data, nullptr); return CUDA_SUCCESS;
    default: return CUDA_ERROR_INVALID_VALUE;  // P2P tokens among them
  }
}

// cuPointerGetAttributes' answer for memory the driver does not know (a malloc pointer, an
// unmapped address): the real driver fills what it can say instead of failing.
void unknownAttribute(CUpointer_attribute attr, void* data) {
  switch (attr) {
    case CU_POINTER_ATTRIBUTE_CONTEXT:
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE: put<void*>(data, nullptr); break;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: put<int>(data, -2); break;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
    case CU_POINTER_ATTRIBUTE_MAPPING_SIZE:
    case CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR:
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
    case CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID:
    case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES: put<unsigned long long>(data, 0); break;
    case CU_POINTER_ATTRIBUTE_P2P_TOKENS: {
      CUDA_POINTER_ATTRIBUTE_P2P_TOKENS t{};
      std::memcpy(data, &t, kP2PTokenBytes);
      break;
    }
    default: put<unsigned>(data, 0); break;
  }
}

CUresult attribute(const PointerFacts& f, CUdeviceptr ptr, CUpointer_attribute attr, void* data) {
  if (f.device) return deviceAttribute(f, ptr, attr, data);
  if (f.host) return hostAttribute(f, ptr, attr, data);
  return CUDA_ERROR_INVALID_VALUE;
}

}  // namespace

extern "C" {

CUresult CUDAAPI cuPointerGetAttribute(void* data, CUpointer_attribute attribute, CUdeviceptr ptr) {
  MCSIM_REQUIRE_INIT();
  if (data == nullptr) return CUDA_ERROR_INVALID_VALUE;
  PointerFacts f;
  MCSIM_TRY(gather(ptr, &f));
  return ::attribute(f, ptr, attribute, data);
}

CUresult CUDAAPI cuPointerGetAttributes(unsigned int numAttributes, CUpointer_attribute* attributes,
                                        void** data, CUdeviceptr ptr) {
  MCSIM_REQUIRE_INIT();
  if (numAttributes == 0 || attributes == nullptr || data == nullptr) return CUDA_ERROR_INVALID_VALUE;
  PointerFacts f;
  MCSIM_TRY(gather(ptr, &f));
  // Attributes are answered in order; an unknown attribute stops the call with the earlier
  // slots filled and the later ones untouched, as the real driver does.
  for (unsigned k = 0; k < numAttributes; ++k) {
    // Read as an integer: the caller's array may hold values outside the enum.
    int raw = 0;
    std::memcpy(&raw, &attributes[k], sizeof raw);
    if (raw < CU_POINTER_ATTRIBUTE_CONTEXT || raw > CU_POINTER_ATTRIBUTE_IS_HW_DECOMPRESS_CAPABLE) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    const auto attr = static_cast<CUpointer_attribute>(raw);
    if (data[k] == nullptr) continue;
    if (!f.device && !f.host) {
      unknownAttribute(attr, data[k]);
    } else if (::attribute(f, ptr, attr, data[k]) != CUDA_SUCCESS) {
      unknownAttribute(attr, data[k]);  // no answer for this kind of memory
    }
  }
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemGetAddressRange_v2(CUdeviceptr* pbase, size_t* psize, CUdeviceptr dptr) {
  MCSIM_REQUIRE_INIT();
  // Unlike the pointer attributes, this query needs a current context (mem.noctx.getaddressrange).
  CUctx_st* ctx = nullptr;
  MCSIM_TRY(currentContext(&ctx));
  PointerFacts f;
  MCSIM_TRY(gather(dptr, &f));
  // The real driver zeroes both outputs when it finds nothing (vmm.addrrange.*).
  auto notFound = [&] {
    if (pbase != nullptr) *pbase = 0;
    if (psize != nullptr) *psize = 0;
    return CUDA_ERROR_NOT_FOUND;
  };
  uint64_t base = 0, size = 0;
  if (f.device) {
    // VMM memory answers with its mapping; cuMemAlloc and pool memory with the allocation as
    // asked for.
    base = f.info.mappingBase;
    const bool driverMade = f.info.linear || f.info.pooled;
    size = driverMade ? f.info.requestedSize : f.info.mappingSize;
    if (driverMade && dptr >= base + size) return notFound();
    // A mapping that runs past the end of its reservation is not found
    // (vmm.map.past_end_of_reservation.addrrange).
    const fabric::PointerInfo& i = f.info;
    if (!driverMade && (i.reservationSize == 0 || i.mappingBase < i.reservationBase ||
                      i.mappingBase + i.mappingSize > i.reservationBase + i.reservationSize)) {
      return notFound();
    }
  } else if (f.host) {
    base = f.hostAlloc.base;
    size = f.hostAlloc.size;
  } else {
    return notFound();
  }
  if (pbase != nullptr) *pbase = base;
  if (psize != nullptr) *psize = size;
  return CUDA_SUCCESS;
}

}  // extern "C"
