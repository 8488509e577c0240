// Multicast object management (CUDA driver reference, section 6.16). Arguments are checked here
// in the order the reference lists them; the node's fabric manager owns the objects, the teams,
// the bindings and the blocking. docs/spec-coverage.md traces each rule to its tests.
#include "driver/driver.h"
#include "mcsim/cuda_multicast_v2.h"

using namespace mcsim;
using namespace mcsim::driver;

namespace {

uint64_t minimumGranularity() { return state().node->preset().multicast.granularityMinimum; }

bool multicastSupported() { return state().node->preset().multicastSupported(); }

bool aligned(uint64_t v) { return v % minimumGranularity() == 0; }

constexpr unsigned long long kShareableTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR | CU_MEM_HANDLE_TYPE_FABRIC;

// The checks every bind shares: flags must be zero; offsets and size multiples of the minimum
// multicast granularity; a bind of nothing binds nothing, and is refused.
CUresult checkBind(uint64_t mcOffset, uint64_t memOffsetOrPtr, uint64_t size, unsigned long long flags) {
  if (flags != 0) return MCSIM_REFUSE(CUDA_ERROR_INVALID_VALUE, "flags must be 0");
  if (size == 0) return MCSIM_REFUSE(CUDA_ERROR_INVALID_VALUE, "size is 0");
  if (!aligned(mcOffset) || !aligned(memOffsetOrPtr) || !aligned(size)) {
    return MCSIM_REFUSE(CUDA_ERROR_INVALID_VALUE, "offsets, address and size must be multiples of the minimum multicast "
                        "granularity (", std::to_string(minimumGranularity()), " bytes)");
  }
  return CUDA_SUCCESS;
}

}  // namespace

extern "C" {

CUresult CUDAAPI cuMulticastGetGranularity(size_t* granularity, const CUmulticastObjectProp* prop,
                                           CUmulticastGranularity_flags option) {
  MCSIM_REQUIRE_INIT_ARGS({"size", prop, &CUmulticastObjectProp::size},
                          {"numDevices", prop, &CUmulticastObjectProp::numDevices},
                          {"handleTypes", prop, &CUmulticastObjectProp::handleTypes}, {"option", option});
  if (granularity == nullptr || prop == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (option != CU_MULTICAST_GRANULARITY_MINIMUM && option != CU_MULTICAST_GRANULARITY_RECOMMENDED) {
    return MCSIM_REFUSE(CUDA_ERROR_INVALID_VALUE, "option is neither MINIMUM nor RECOMMENDED");
  }
  if (!multicastSupported()) return MCSIM_REFUSE(CUDA_ERROR_NOT_SUPPORTED, "the node's preset has no multicast (NVSwitch)");
  // prop->size may be 0: clients ask before they know their size (ThunderKittens does).
  const auto& m = state().node->preset().multicast;
  *granularity = option == CU_MULTICAST_GRANULARITY_RECOMMENDED ? m.granularityRecommended : m.granularityMinimum;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMulticastCreate(CUmemGenericAllocationHandle* mcHandle, const CUmulticastObjectProp* prop) {
  MCSIM_REQUIRE_INIT_ARGS({"size", prop, &CUmulticastObjectProp::size},
                          {"numDevices", prop, &CUmulticastObjectProp::numDevices},
                          {"handleTypes", prop, &CUmulticastObjectProp::handleTypes},
                          {"flags", prop, &CUmulticastObjectProp::flags});
  if (mcHandle == nullptr || prop == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!multicastSupported()) return MCSIM_REFUSE(CUDA_ERROR_NOT_SUPPORTED, "the node's preset has no multicast (NVSwitch)");
  if (prop->flags != 0) return MCSIM_REFUSE(CUDA_ERROR_INVALID_VALUE, "prop->flags must be 0");
  if ((prop->handleTypes & ~kShareableTypes) != 0) {
    return MCSIM_REFUSE(CUDA_ERROR_INVALID_VALUE, "prop->handleTypes may hold only POSIX_FILE_DESCRIPTOR and FABRIC");
  }
  if (prop->numDevices == 0 || prop->numDevices > static_cast<unsigned>(state().node->preset().multicast.maxTeamSize)) {
    return MCSIM_REFUSE(CUDA_ERROR_INVALID_VALUE, "prop->numDevices must be 1 to ",
                        std::to_string(state().node->preset().multicast.maxTeamSize), " (the preset's largest team)");
  }
  if (prop->size == 0 || !aligned(prop->size)) {
    return MCSIM_REFUSE(CUDA_ERROR_INVALID_VALUE, "prop->size must be a nonzero multiple of the minimum multicast "
                        "granularity (", std::to_string(minimumGranularity()), " bytes)");
  }
  // Larger than a device's memory: no team could ever bind it (2^64 - 2 MiB was accepted). The
  // answer cuMemCreate gets on a real H100 for a size beyond the device's memory (conformance
  // vmm_test); cuMulticast* is never run on a real GPU to check it.
  if (prop->size > state().node->preset().gpu.memoryBytes) {
    return MCSIM_REFUSE(CUDA_ERROR_OUT_OF_MEMORY, "prop->size is larger than a device's memory");
  }
  // FABRIC handles need an IMEX channel, as for memory (NOT_PERMITTED without one).
  if ((prop->handleTypes & CU_MEM_HANDLE_TYPE_FABRIC) != 0 && !state().node->imexChannelPresent()) {
    return MCSIM_REFUSE(CUDA_ERROR_NOT_PERMITTED, "FABRIC handles need an IMEX channel, and the node has none (the preset's "
                        "imex_channel is false, or an imex fault rule took it away)");
  }
  fabric::MulticastProps p;
  p.numDevices = prop->numDevices;
  p.size = prop->size;
  p.handleTypes = static_cast<uint32_t>(prop->handleTypes);
  uint64_t h = 0;
  MCSIM_TRY(toResult(state().node->multicastCreate(p, &h)));
  *mcHandle = h;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMulticastAddDevice(CUmemGenericAllocationHandle mcHandle, CUdevice dev) {
  MCSIM_REQUIRE_INIT_DEV(dev);
  if (!validDevice(dev)) return CUDA_ERROR_INVALID_DEVICE;
  return toResult(state().node->multicastAddDevice(mcHandle, dev));
}

CUresult CUDAAPI cuMulticastBindMem(CUmemGenericAllocationHandle mcHandle, size_t mcOffset,
                                    CUmemGenericAllocationHandle memHandle, size_t memOffset, size_t size,
                                    unsigned long long flags) {
  MCSIM_REQUIRE_INIT_ARGS({"mcOffset", mcOffset}, {"memOffset", memOffset}, {"size", size}, {"flags", flags});
  MCSIM_TRY(checkBind(mcOffset, memOffset, size, flags));
  return toResult(state().node->multicastBindMem(mcHandle, -1, mcOffset, memHandle, memOffset, size));
}

CUresult CUDAAPI cuMulticastBindMem_v2(CUmemGenericAllocationHandle mcHandle, CUdevice dev, size_t mcOffset,
                                       CUmemGenericAllocationHandle memHandle, size_t memOffset, size_t size,
                                       unsigned long long flags) {
  MCSIM_REQUIRE_INIT_DEV_ARGS(dev, {"mcOffset", mcOffset}, {"memOffset", memOffset}, {"size", size}, {"flags", flags});
  if (!validDevice(dev)) return CUDA_ERROR_INVALID_DEVICE;
  MCSIM_TRY(checkBind(mcOffset, memOffset, size, flags));
  return toResult(state().node->multicastBindMem(mcHandle, dev, mcOffset, memHandle, memOffset, size));
}

CUresult CUDAAPI cuMulticastBindAddr(CUmemGenericAllocationHandle mcHandle, size_t mcOffset, CUdeviceptr memptr,
                                     size_t size, unsigned long long flags) {
  MCSIM_REQUIRE_INIT_ARGS({"mcOffset", mcOffset}, {"ptr", memptr}, {"size", size}, {"flags", flags});
  MCSIM_TRY(checkBind(mcOffset, memptr, size, flags));
  return toResult(state().node->multicastBindAddr(mcHandle, -1, mcOffset, memptr, size));
}

CUresult CUDAAPI cuMulticastBindAddr_v2(CUmemGenericAllocationHandle mcHandle, CUdevice dev, size_t mcOffset,
                                        CUdeviceptr memptr, size_t size, unsigned long long flags) {
  MCSIM_REQUIRE_INIT_DEV_ARGS(dev, {"mcOffset", mcOffset}, {"ptr", memptr}, {"size", size}, {"flags", flags});
  if (!validDevice(dev)) return CUDA_ERROR_INVALID_DEVICE;
  MCSIM_TRY(checkBind(mcOffset, memptr, size, flags));
  return toResult(state().node->multicastBindAddr(mcHandle, dev, mcOffset, memptr, size));
}

CUresult CUDAAPI cuMulticastUnbind(CUmemGenericAllocationHandle mcHandle, CUdevice dev, size_t mcOffset, size_t size) {
  MCSIM_REQUIRE_INIT_DEV_ARGS(dev, {"mcOffset", mcOffset}, {"size", size});
  if (!validDevice(dev)) return CUDA_ERROR_INVALID_DEVICE;
  if (size == 0 || !aligned(mcOffset) || !aligned(size)) {
    return MCSIM_REFUSE(CUDA_ERROR_INVALID_VALUE, "size must be nonzero and offset and size multiples of the minimum "
                        "multicast granularity (", std::to_string(minimumGranularity()), " bytes)");
  }
  return toResult(state().node->multicastUnbind(mcHandle, dev, mcOffset, size));
}

}  // extern "C"
