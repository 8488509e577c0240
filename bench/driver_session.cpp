#include "driver_session.h"

#include <cstring>

namespace mcsim::bench {

bool openDriverSession(std::string* why) {
  // Once per process: the benchmarks share one driver, as an application would.
  static const std::string failure = [] {
    CUdevice dev = 0;
    CUcontext ctx = nullptr;
    const char* name = nullptr;
    CUresult r = cuInit(0);
    if (r == CUDA_SUCCESS) r = cuDeviceGet(&dev, 0);
    if (r == CUDA_SUCCESS) r = cuDevicePrimaryCtxRetain(&ctx, dev);
    if (r == CUDA_SUCCESS) r = cuCtxSetCurrent(ctx);
    if (r == CUDA_SUCCESS) return std::string();
    cuGetErrorName(r, &name);
    return std::string("driver set-up failed: ") + (name != nullptr ? name : "unknown error");
  }();
  if (why != nullptr) *why = failure;
  return failure.empty();
}

bool requireDriver(benchmark::State& state) {
  std::string why;
  if (openDriverSession(&why)) return true;
  state.SkipWithError(why.c_str());
  return false;
}

bool ok(benchmark::State& state, CUresult result, const char* call) {
  if (result == CUDA_SUCCESS) return true;
  const char* name = nullptr;
  cuGetErrorName(result, &name);
  state.SkipWithError((std::string(call) + " returned " + (name != nullptr ? name : "?")).c_str());
  return false;
}

CUmemAllocationProp deviceZeroProps() {
  CUmemAllocationProp prop;
  std::memset(&prop, 0, sizeof prop);
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  return prop;
}

CUmemAccessDesc deviceZeroReadWrite() {
  CUmemAccessDesc access;
  std::memset(&access, 0, sizeof access);
  access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access.location.id = 0;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  return access;
}

CUresult VmmMapping::create(size_t bytes) {
  const CUmemAllocationProp prop = deviceZeroProps();
  const CUmemAccessDesc access = deviceZeroReadWrite();
  size_ = bytes;
  CUresult r = cuMemCreate(&handle_, size_, &prop, 0);
  if (r == CUDA_SUCCESS) r = cuMemAddressReserve(&va_, size_, 0, 0, 0);
  if (r == CUDA_SUCCESS) r = cuMemMap(va_, size_, 0, handle_, 0);
  if (r == CUDA_SUCCESS) mapped_ = true;
  if (r == CUDA_SUCCESS) r = cuMemSetAccess(va_, size_, &access, 1);
  return r;
}

VmmMapping::~VmmMapping() {
  // Best effort: a benchmark that failed half-way leaves some of these unset.
  if (mapped_) cuMemUnmap(va_, size_);
  if (va_ != 0) cuMemAddressFree(va_, size_);
  if (handle_ != 0) cuMemRelease(handle_);
}

}  // namespace mcsim::bench
