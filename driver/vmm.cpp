// Virtual memory management: physical allocations, reservations, mappings, access, sharing.
#include <cstring>

#include "driver/context.h"
#include "driver/driver.h"

using namespace mcsim;
using namespace mcsim::driver;

namespace {

constexpr unsigned kWindowsHandleTypes = CU_MEM_HANDLE_TYPE_WIN32 | CU_MEM_HANDLE_TYPE_WIN32_KMT;

// Reads a CUmemAllocationProp for cuMemCreate, with the real driver's answers: an unknown device
// is CUDA_ERROR_INVALID_DEVICE; HOST_NUMA_CURRENT, an unknown NUMA node, an unknown location
// type or a Windows handle type is CUDA_ERROR_INVALID_VALUE; unknown handle-type bits above the
// defined ones are ignored.
CUresult readProps(const CUmemAllocationProp* prop, fabric::AllocationProps* out) {
  if (prop == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (prop->type != CU_MEM_ALLOCATION_TYPE_PINNED) {
    return MCSIM_REFUSE(CUDA_ERROR_INVALID_VALUE, "prop->type must be CU_MEM_ALLOCATION_TYPE_PINNED");
  }
  switch (prop->location.type) {
    case CU_MEM_LOCATION_TYPE_DEVICE:
      if (!validDevice(prop->location.id)) {
        return MCSIM_REFUSE(CUDA_ERROR_INVALID_DEVICE, "prop->location.id ", std::to_string(prop->location.id),
                            " is not a device");
      }
      out->location = {fabric::LocationKind::kDevice, prop->location.id};
      break;
    case CU_MEM_LOCATION_TYPE_HOST_NUMA:
      if (prop->location.id < 0 || prop->location.id >= hostNumaNodes()) return CUDA_ERROR_INVALID_VALUE;
      out->location = {fabric::LocationKind::kHostNuma, prop->location.id};
      break;
    case CU_MEM_LOCATION_TYPE_HOST:
      out->location = {fabric::LocationKind::kHost, 0};
      break;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
  const unsigned types = static_cast<unsigned>(prop->requestedHandleTypes);
  if ((types & kWindowsHandleTypes) != 0) return CUDA_ERROR_INVALID_VALUE;
  if (prop->allocFlags.compressionType != CU_MEM_ALLOCATION_COMP_NONE &&
      prop->allocFlags.compressionType != CU_MEM_ALLOCATION_COMP_GENERIC) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  out->handleTypes = types & (CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR | CU_MEM_HANDLE_TYPE_FABRIC);
  // The real driver grants no compression to VMM allocations made this way: it reports
  // compressionType 0 back.
  out->compressionType = CU_MEM_ALLOCATION_COMP_NONE;
  out->gpuDirectRdmaCapable = prop->allocFlags.gpuDirectRDMACapable != 0;
  out->usage = prop->allocFlags.usage;
  return CUDA_SUCCESS;
}

// Device and host memory share the GPU's page granularity, whatever the properties say: the
// real driver answers 2 MiB even for an unknown device or location type.
uint64_t granularity(bool recommended) {
  const auto& gpu = state().node->preset().gpu;
  return recommended ? gpu.vmmGranularityRecommended : gpu.vmmGranularityMinimum;
}

uint64_t minimumGranularity() { return granularity(false); }

bool aligned(uint64_t v, uint64_t a) { return v % a == 0; }

}  // namespace

extern "C" {

CUresult CUDAAPI cuMemGetAllocationGranularity(size_t* granularity, const CUmemAllocationProp* prop,
                                               CUmemAllocationGranularity_flags option) {
  MCSIM_REQUIRE_INIT_ARGS({"option", option}, {"handleTypes", prop, &CUmemAllocationProp::requestedHandleTypes});
  if (granularity == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (prop == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (option != CU_MEM_ALLOC_GRANULARITY_MINIMUM && option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  *granularity = ::granularity(option == CU_MEM_ALLOC_GRANULARITY_RECOMMENDED);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemCreate(CUmemGenericAllocationHandle* handle, size_t size,
                             const CUmemAllocationProp* prop, unsigned long long flags) {
  // The device the allocation is made on is the device the call names (device= filters).
  const int onDevice = prop != nullptr && prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE ? prop->location.id
                                                                                               : kCurrentDevice;
  MCSIM_REQUIRE_INIT_DEV_ARGS(onDevice, {"size", size},
                              {"handleTypes", prop, &CUmemAllocationProp::requestedHandleTypes}, {"flags", flags});
  if (handle == nullptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  fabric::AllocationProps p;
  MCSIM_TRY(readProps(prop, &p));
  if (size == 0 || !aligned(size, minimumGranularity())) {
    return MCSIM_REFUSE(CUDA_ERROR_INVALID_VALUE, "size ", std::to_string(size), " is not a nonzero multiple of the "
                        "allocation granularity (", std::to_string(minimumGranularity()), " bytes; cuMemGetAllocationGranularity)");
  }
  if ((p.handleTypes & CU_MEM_HANDLE_TYPE_FABRIC) != 0) {
    const int dev = p.location.kind == fabric::LocationKind::kDevice ? p.location.id : 0;
    if (state().attributes[static_cast<size_t>(dev)][CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED] == 0) {
      return CUDA_ERROR_NOT_SUPPORTED;
    }
    // FABRIC handles go through an IMEX channel; without one the driver refuses (field reports:
    // nvbandwidth 39, mscclpp 467).
    if (!state().node->imexChannelPresent()) {
      return MCSIM_REFUSE(CUDA_ERROR_NOT_PERMITTED, "FABRIC handles need an IMEX channel, and the node has none (the preset's "
                          "imex_channel is false, or an imex fault rule took it away)");
    }
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
  MCSIM_REQUIRE_INIT_ARGS({"size", size}, {"alignment", alignment}, {"addr", addr}, {"flags", flags});
  if (ptr == nullptr || size == 0 || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  const uint64_t gran = minimumGranularity();
  if (!aligned(size, gran)) return CUDA_ERROR_INVALID_VALUE;
  if (alignment != 0 && (alignment & (alignment - 1)) != 0) return CUDA_ERROR_INVALID_VALUE;
  // A hint is only a hint, but a misaligned one is refused.
  if (!aligned(addr, gran)) return CUDA_ERROR_INVALID_VALUE;
  const uint64_t align = alignment < gran ? gran : alignment;
  uint64_t va = 0;
  MCSIM_TRY(toResult(state().node->reserve(size, align, addr, &va)));
  *ptr = va;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemAddressFree(CUdeviceptr ptr, size_t size) {
  MCSIM_REQUIRE_INIT_ARGS({"ptr", ptr}, {"size", size});
  if (ptr == 0 || size == 0) return CUDA_ERROR_INVALID_VALUE;
  return toResult(state().node->freeReservation(ptr, size));
}

CUresult CUDAAPI cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                          unsigned long long flags) {
  MCSIM_REQUIRE_INIT_ARGS({"ptr", ptr}, {"size", size}, {"offset", offset}, {"flags", flags});
  if (flags != 0) return MCSIM_REFUSE(CUDA_ERROR_INVALID_VALUE, "flags must be 0");
  if (size == 0) return MCSIM_REFUSE(CUDA_ERROR_INVALID_VALUE, "size is 0");
  if (ptr == 0 || handle == 0) return MCSIM_REFUSE(CUDA_ERROR_INVALID_VALUE, ptr == 0 ? "ptr is 0" : "handle is 0");
  if (!aligned(ptr, minimumGranularity())) {
    return MCSIM_REFUSE(CUDA_ERROR_INVALID_VALUE, "ptr is not a multiple of the allocation granularity (", std::to_string(minimumGranularity()), " bytes)");
  }
  return toResult(state().node->map(ptr, size, offset, handle));
}

CUresult CUDAAPI cuMemUnmap(CUdeviceptr ptr, size_t size) {
  MCSIM_REQUIRE_INIT_ARGS({"ptr", ptr}, {"size", size});
  const uint64_t gran = minimumGranularity();
  if (size == 0 || !aligned(ptr, gran) || !aligned(size, gran)) return CUDA_ERROR_INVALID_VALUE;
  return toResult(state().node->unmap(ptr, size));
}

CUresult CUDAAPI cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc* desc, size_t count) {
  MCSIM_REQUIRE_INIT_ARGS({"ptr", ptr}, {"size", size}, {"count", count});
  const uint64_t gran = minimumGranularity();
  if (desc == nullptr || count == 0 || size == 0 || !aligned(ptr, gran) || !aligned(size, gran)) {
    return MCSIM_REFUSE(CUDA_ERROR_INVALID_VALUE, "desc must be non-NULL, count and size nonzero, and ptr and size "
                        "multiples of the allocation granularity (", std::to_string(gran), " bytes)");
  }
  // Check every descriptor before applying any, so that a refused call changes nothing.
  for (size_t i = 0; i < count; ++i) {
    switch (desc[i].location.type) {
      case CU_MEM_LOCATION_TYPE_DEVICE: break;
      case CU_MEM_LOCATION_TYPE_HOST:
      case CU_MEM_LOCATION_TYPE_HOST_NUMA:
      case CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT:
        return MCSIM_REFUSE(CUDA_ERROR_NOT_SUPPORTED, "desc[", std::to_string(i), "]: the real driver refuses cuMemSetAccess for a host location (H100, docs/real-driver.md)");
      default: return CUDA_ERROR_INVALID_VALUE;
    }
    if (!validDevice(desc[i].location.id)) return CUDA_ERROR_INVALID_VALUE;
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
  fabric::Access a = fabric::Access::kNone;
  if (location->type == CU_MEM_LOCATION_TYPE_HOST) {
    // The real driver reports read-write for the host on any mapped range.
    MCSIM_TRY(toResult(state().node->getAccess(ptr, 0, &a)));
    *flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    return CUDA_SUCCESS;
  }
  if (location->type != CU_MEM_LOCATION_TYPE_DEVICE) return CUDA_ERROR_INVALID_VALUE;
  if (!validDevice(location->id)) return CUDA_ERROR_INVALID_DEVICE;
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
  switch (p.location.kind) {
    case fabric::LocationKind::kDevice: prop->location.type = CU_MEM_LOCATION_TYPE_DEVICE; break;
    case fabric::LocationKind::kHost: prop->location.type = CU_MEM_LOCATION_TYPE_HOST; break;
    default: prop->location.type = CU_MEM_LOCATION_TYPE_HOST_NUMA; break;
  }
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
  MCSIM_REQUIRE_INIT_ARGS({"handleType", handleType}, {"flags", flags});
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
    default: return MCSIM_REFUSE(CUDA_ERROR_INVALID_VALUE, "handleType must be POSIX_FILE_DESCRIPTOR or FABRIC");
  }
}

CUresult CUDAAPI cuMemImportFromShareableHandle(CUmemGenericAllocationHandle* handle, void* osHandle,
                                                CUmemAllocationHandleType shHandleType) {
  MCSIM_REQUIRE_INIT_ARGS({"handleType", shHandleType});
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
