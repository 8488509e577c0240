// Virtual memory management: physical allocations, reservations, mappings, access, sharing.
#include <cstring>

#include "driver/context.h"
#include "driver/driver.h"

using namespace mcsim;
using namespace mcsim::driver;

namespace {

constexpr unsigned kSupportedHandleTypes =
    CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR | CU_MEM_HANDLE_TYPE_FABRIC;

// Reads a CUmemAllocationProp into the node's terms, checking what every VMM call checks.
CUresult readProps(const CUmemAllocationProp* prop, fabric::AllocationProps* out) {
  if (prop == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (prop->type != CU_MEM_ALLOCATION_TYPE_PINNED) return CUDA_ERROR_INVALID_VALUE;
  const auto& preset = state().node->preset();
  switch (prop->location.type) {
    case CU_MEM_LOCATION_TYPE_DEVICE:
      if (!validDevice(prop->location.id)) return CUDA_ERROR_INVALID_DEVICE;
      out->location = {fabric::LocationKind::kDevice, prop->location.id};
      break;
    case CU_MEM_LOCATION_TYPE_HOST_NUMA:
      if (prop->location.id < 0 || prop->location.id >= preset.hostNumaNodes) return CUDA_ERROR_INVALID_VALUE;
      out->location = {fabric::LocationKind::kHostNuma, prop->location.id};
      break;
    case CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT:
      // The calling thread runs on NUMA node 0 of the simulated host.
      out->location = {fabric::LocationKind::kHostNuma, 0};
      break;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
  const unsigned types = static_cast<unsigned>(prop->requestedHandleTypes);
  if ((types & ~(kSupportedHandleTypes | CU_MEM_HANDLE_TYPE_WIN32 | CU_MEM_HANDLE_TYPE_WIN32_KMT)) != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  // Windows handles do not exist on Linux.
  if ((types & ~kSupportedHandleTypes) != 0) return CUDA_ERROR_NOT_SUPPORTED;
  if (prop->allocFlags.compressionType != CU_MEM_ALLOCATION_COMP_NONE &&
      prop->allocFlags.compressionType != CU_MEM_ALLOCATION_COMP_GENERIC) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  out->handleTypes = types;
  out->compressionType = prop->allocFlags.compressionType;
  out->gpuDirectRdmaCapable = prop->allocFlags.gpuDirectRDMACapable != 0;
  out->usage = prop->allocFlags.usage;
  return CUDA_SUCCESS;
}

uint64_t granularityOf(const fabric::AllocationProps& p, bool recommended) {
  const auto& gpu = state().node->preset().gpu;
  (void)p;  // device and host-NUMA memory share the GPU's page granularity
  return recommended ? gpu.vmmGranularityRecommended : gpu.vmmGranularityMinimum;
}

uint64_t minimumGranularity() { return state().node->preset().gpu.vmmGranularityMinimum; }

bool aligned(uint64_t v, uint64_t a) { return v % a == 0; }

}  // namespace

extern "C" {

CUresult CUDAAPI cuMemGetAllocationGranularity(size_t* granularity, const CUmemAllocationProp* prop,
                                               CUmemAllocationGranularity_flags option) {
  MCSIM_REQUIRE_INIT();
  if (granularity == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (option != CU_MEM_ALLOC_GRANULARITY_MINIMUM && option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  fabric::AllocationProps p;
  MCSIM_TRY(readProps(prop, &p));
  *granularity = granularityOf(p, option == CU_MEM_ALLOC_GRANULARITY_RECOMMENDED);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemCreate(CUmemGenericAllocationHandle* handle, size_t size,
                             const CUmemAllocationProp* prop, unsigned long long flags) {
  MCSIM_REQUIRE_INIT();
  if (handle == nullptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  fabric::AllocationProps p;
  MCSIM_TRY(readProps(prop, &p));
  if (size == 0 || !aligned(size, granularityOf(p, false))) return CUDA_ERROR_INVALID_VALUE;
  if ((p.handleTypes & CU_MEM_HANDLE_TYPE_FABRIC) != 0) {
    const int dev = p.location.kind == fabric::LocationKind::kDevice ? p.location.id : 0;
    if (state().attributes[static_cast<size_t>(dev)][CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED] == 0) {
      return CUDA_ERROR_NOT_SUPPORTED;
    }
    // FABRIC handles go through an IMEX channel; without one the driver refuses (field reports:
    // nvbandwidth 39, mscclpp 467).
    if (!state().node->preset().imexChannel) return CUDA_ERROR_NOT_PERMITTED;
  }
  p.size = size;
  uint64_t h = 0;
  MCSIM_TRY(toResult(state().node->createAllocation(p, &h)));
  *handle = h;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemRelease(CUmemGenericAllocationHandle handle) {
  MCSIM_REQUIRE_INIT();
  return toResult(state().node->releaseHandle(handle));
}

CUresult CUDAAPI cuMemAddressReserve(CUdeviceptr* ptr, size_t size, size_t alignment, CUdeviceptr addr,
                                     unsigned long long flags) {
  MCSIM_REQUIRE_INIT();
  if (ptr == nullptr || size == 0 || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  const uint64_t gran = minimumGranularity();
  if (!aligned(size, gran)) return CUDA_ERROR_INVALID_VALUE;
  if (alignment != 0 && (alignment & (alignment - 1)) != 0) return CUDA_ERROR_INVALID_VALUE;
  const uint64_t align = alignment < gran ? gran : alignment;
  uint64_t va = 0;
  MCSIM_TRY(toResult(state().node->reserve(size, align, addr, &va)));
  *ptr = va;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemAddressFree(CUdeviceptr ptr, size_t size) {
  MCSIM_REQUIRE_INIT();
  if (ptr == 0 || size == 0) return CUDA_ERROR_INVALID_VALUE;
  return toResult(state().node->freeReservation(ptr, size));
}

CUresult CUDAAPI cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                          unsigned long long flags) {
  MCSIM_REQUIRE_INIT();
  if (flags != 0 || size == 0) return CUDA_ERROR_INVALID_VALUE;
  const uint64_t gran = minimumGranularity();
  if (!aligned(ptr, gran) || !aligned(size, gran) || !aligned(offset, gran)) return CUDA_ERROR_INVALID_VALUE;
  return toResult(state().node->map(ptr, size, offset, handle));
}

CUresult CUDAAPI cuMemUnmap(CUdeviceptr ptr, size_t size) {
  MCSIM_REQUIRE_INIT();
  const uint64_t gran = minimumGranularity();
  if (size == 0 || !aligned(ptr, gran) || !aligned(size, gran)) return CUDA_ERROR_INVALID_VALUE;
  return toResult(state().node->unmap(ptr, size));
}

CUresult CUDAAPI cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc* desc, size_t count) {
  MCSIM_REQUIRE_INIT();
  if (desc == nullptr || count == 0 || size == 0) return CUDA_ERROR_INVALID_VALUE;
  // Check every descriptor before applying any, so that a refused call changes nothing.
  for (size_t i = 0; i < count; ++i) {
    if (desc[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE) return CUDA_ERROR_INVALID_VALUE;
    if (!validDevice(desc[i].location.id)) return CUDA_ERROR_INVALID_DEVICE;
    const auto f = desc[i].flags;
    if (f != CU_MEM_ACCESS_FLAGS_PROT_NONE && f != CU_MEM_ACCESS_FLAGS_PROT_READ &&
        f != CU_MEM_ACCESS_FLAGS_PROT_READWRITE) {
      return CUDA_ERROR_INVALID_VALUE;
    }
  }
  for (size_t i = 0; i < count; ++i) {
    const Status s = state().node->setAccess(ptr, size, desc[i].location.id,
                                             static_cast<fabric::Access>(desc[i].flags));
    // Every descriptor covers the same range, so only the first can find it unmapped.
    if (s != Status::kOk) return toResult(s);
  }
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemGetAccess(unsigned long long* flags, const CUmemLocation* location, CUdeviceptr ptr) {
  MCSIM_REQUIRE_INIT();
  if (flags == nullptr || location == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (location->type != CU_MEM_LOCATION_TYPE_DEVICE) return CUDA_ERROR_INVALID_VALUE;
  if (!validDevice(location->id)) return CUDA_ERROR_INVALID_DEVICE;
  fabric::Access a = fabric::Access::kNone;
  MCSIM_TRY(toResult(state().node->getAccess(ptr, location->id, &a)));
  *flags = static_cast<unsigned long long>(a);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemGetAllocationPropertiesFromHandle(CUmemAllocationProp* prop,
                                                        CUmemGenericAllocationHandle handle) {
  MCSIM_REQUIRE_INIT();
  if (prop == nullptr) return CUDA_ERROR_INVALID_VALUE;
  fabric::AllocationProps p;
  MCSIM_TRY(toResult(state().node->handleProps(handle, &p)));
  std::memset(prop, 0, sizeof *prop);
  prop->type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop->location.type = p.location.kind == fabric::LocationKind::kDevice ? CU_MEM_LOCATION_TYPE_DEVICE
                                                                         : CU_MEM_LOCATION_TYPE_HOST_NUMA;
  prop->location.id = p.location.id;
  prop->requestedHandleTypes = static_cast<CUmemAllocationHandleType>(p.handleTypes);
  prop->allocFlags.compressionType = p.compressionType;
  prop->allocFlags.gpuDirectRDMACapable = p.gpuDirectRdmaCapable ? 1 : 0;
  prop->allocFlags.usage = p.usage;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemRetainAllocationHandle(CUmemGenericAllocationHandle* handle, void* addr) {
  MCSIM_REQUIRE_INIT();
  if (handle == nullptr) return CUDA_ERROR_INVALID_VALUE;
  uint64_t h = 0;
  MCSIM_TRY(toResult(state().node->retainHandleAt(reinterpret_cast<uint64_t>(addr), &h)));
  *handle = h;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemExportToShareableHandle(void* shareableHandle, CUmemGenericAllocationHandle handle,
                                              CUmemAllocationHandleType handleType, unsigned long long flags) {
  MCSIM_REQUIRE_INIT();
  if (shareableHandle == nullptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  switch (handleType) {
    case CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR: {
      int fd = -1;
      MCSIM_TRY(toResult(state().node->exportPosixFd(handle, &fd)));
      *static_cast<int*>(shareableHandle) = fd;
      return CUDA_SUCCESS;
    }
    case CU_MEM_HANDLE_TYPE_FABRIC: {
      uint8_t bytes[64];
      MCSIM_TRY(toResult(state().node->exportFabric(handle, bytes)));
      std::memcpy(static_cast<CUmemFabricHandle*>(shareableHandle)->data, bytes, 64);
      return CUDA_SUCCESS;
    }
    case CU_MEM_HANDLE_TYPE_WIN32:
    case CU_MEM_HANDLE_TYPE_WIN32_KMT: return CUDA_ERROR_NOT_SUPPORTED;
    default: return CUDA_ERROR_INVALID_VALUE;
  }
}

CUresult CUDAAPI cuMemImportFromShareableHandle(CUmemGenericAllocationHandle* handle, void* osHandle,
                                                CUmemAllocationHandleType shHandleType) {
  MCSIM_REQUIRE_INIT();
  if (handle == nullptr) return CUDA_ERROR_INVALID_VALUE;
  uint64_t h = 0;
  switch (shHandleType) {
    case CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR: {
      // The descriptor travels in the pointer's value, as the reference documents.
      const auto fd = static_cast<int>(reinterpret_cast<intptr_t>(osHandle));
      MCSIM_TRY(toResult(state().node->importPosixFd(fd, &h)));
      break;
    }
    case CU_MEM_HANDLE_TYPE_FABRIC: {
      if (osHandle == nullptr) return CUDA_ERROR_INVALID_VALUE;
      MCSIM_TRY(toResult(state().node->importFabric(static_cast<const CUmemFabricHandle*>(osHandle)->data, &h)));
      break;
    }
    case CU_MEM_HANDLE_TYPE_WIN32:
    case CU_MEM_HANDLE_TYPE_WIN32_KMT: return CUDA_ERROR_NOT_SUPPORTED;
    default: return CUDA_ERROR_INVALID_VALUE;
  }
  *handle = h;
  return CUDA_SUCCESS;
}

}  // extern "C"
