// Pointer queries: cuPointerGetAttribute(s) and cuMemGetAddressRange.
#include <cstring>

#include "driver/context.h"
#include "driver/driver.h"
#include "driver/memory.h"

using namespace mcsim;
using namespace mcsim::driver;

namespace {

// What one address is, gathered once for all the attributes asked about it.
struct PointerFacts {
  bool device = false;      // inside a device mapping
  bool host = false;        // inside pinned host memory
  fabric::PointerInfo info;
  HostAllocation hostAlloc;
  CUctx_st* ctx = nullptr;  // current context, if any
};

CUresult gather(CUdeviceptr ptr, PointerFacts* f) {
  CUctx_st* ctx = nullptr;
  if (currentContext(&ctx) == CUDA_SUCCESS) f->ctx = ctx;
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

CUresult attribute(const PointerFacts& f, CUdeviceptr ptr, CUpointer_attribute attr, void* data) {
  if (!f.device && !f.host) {
    // An address mcsim knows nothing about: only these two have an answer for it.
    if (attr == CU_POINTER_ATTRIBUTE_MAPPED) {
      put<bool>(data, false);
      return CUDA_SUCCESS;
    }
    if (attr == CU_POINTER_ATTRIBUTE_IS_MANAGED) {
      put<bool>(data, false);
      return CUDA_SUCCESS;
    }
    return CUDA_ERROR_INVALID_VALUE;
  }
  const auto& i = f.info;
  switch (attr) {
    case CU_POINTER_ATTRIBUTE_CONTEXT:
      // VMM memory belongs to no context.
      if (f.device && !i.linear) put<CUcontext>(data, nullptr);
      else put<CUcontext>(data, f.host ? f.hostAlloc.ctx : nullptr);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
      put<unsigned>(data, f.device ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
      put<CUdeviceptr>(data, ptr);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
      if (f.device) return CUDA_ERROR_INVALID_VALUE;
      put<void*>(data, reinterpret_cast<void*>(ptr));
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
      put<bool>(data, true);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
    case CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID:
      put<unsigned long long>(data, f.device ? i.allocationId : f.hostAlloc.base);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
      put<bool>(data, false);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
      if (f.device) put<int>(data, i.location.kind == fabric::LocationKind::kDevice ? i.location.id : -1);
      else put<int>(data, f.hostAlloc.ctx != nullptr ? f.hostAlloc.ctx->device : 0);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
      put<bool>(data, f.device && i.linear);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
      put<CUdeviceptr>(data, f.device ? i.rangeBase : f.hostAlloc.base);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
      put<size_t>(data, f.device ? i.rangeSize : f.hostAlloc.size);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MAPPED:
      put<bool>(data, true);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES:
      put<unsigned long long>(data, f.device ? i.handleTypes : 0);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE:
      put<bool>(data, f.device);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_ACCESS_FLAGS:
      put<unsigned>(data, f.device ? static_cast<unsigned>(i.access)
                                   : static_cast<unsigned>(CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE));
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
      put<CUmemoryPool>(data, nullptr);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MAPPING_SIZE:
      put<size_t>(data, f.device ? (i.linear ? ((i.rangeSize + (2u << 20) - 1) & ~size_t{(2u << 20) - 1}) : i.rangeSize)
                                 : f.hostAlloc.size);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR:
      put<CUdeviceptr>(data, f.device ? i.rangeBase : f.hostAlloc.base);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_IS_HW_DECOMPRESS_CAPABLE:
      put<bool>(data, false);
      return CUDA_SUCCESS;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
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
  // Unlike the single query, an attribute that has no answer here is not an error: its slot is
  // left as the caller set it (the reference documents this for unknown pointers).
  for (unsigned k = 0; k < numAttributes; ++k) {
    if (data[k] == nullptr) continue;
    const CUresult r = ::attribute(f, ptr, attributes[k], data[k]);
    if (r != CUDA_SUCCESS && (attributes[k] <= 0 || attributes[k] > CU_POINTER_ATTRIBUTE_IS_HW_DECOMPRESS_CAPABLE)) {
      return CUDA_ERROR_INVALID_VALUE;
    }
  }
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemGetAddressRange_v2(CUdeviceptr* pbase, size_t* psize, CUdeviceptr dptr) {
  MCSIM_REQUIRE_INIT();
  PointerFacts f;
  MCSIM_TRY(gather(dptr, &f));
  if (!f.device) return CUDA_ERROR_NOT_FOUND;
  if (pbase != nullptr) *pbase = f.info.rangeBase;
  if (psize != nullptr) *psize = f.info.rangeSize;
  return CUDA_SUCCESS;
}

}  // extern "C"
