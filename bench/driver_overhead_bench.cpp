// The cost of driver calls as an application pays it: queries, physical allocation, the
// reserve/map/access/unmap/free cycle, and functional copies, whose bandwidth is measured next
// to a plain host memcpy in the same run so that the ratio does not depend on the machine.
//
// Every benchmark uses real (wall) time: mcsim performs copies on its engine thread while the
// calling thread waits, so the caller's CPU time would flatter the driver.
#include <benchmark/benchmark.h>
#include <cuda.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "driver_session.h"

namespace mcsim::bench {
namespace {

constexpr size_t kPageBytes = 2u << 20;   // the VMM granularity of every built-in GPU
constexpr size_t kCopyBytes = 64u << 20;

// ---- Queries -------------------------------------------------------------------------------

void BM_DeviceGetAttribute(benchmark::State& state) {
  if (!requireDriver(state)) return;
  int value = 0;
  for (auto _ : state) {
    const CUresult r = cuDeviceGetAttribute(&value, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0);
    if (!ok(state, r, "cuDeviceGetAttribute")) break;
    benchmark::DoNotOptimize(value);
  }
}

void BM_MemGetAllocationGranularity(benchmark::State& state) {
  if (!requireDriver(state)) return;
  const CUmemAllocationProp prop = deviceZeroProps();
  size_t granularity = 0;
  for (auto _ : state) {
    const CUresult r = cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
    if (!ok(state, r, "cuMemGetAllocationGranularity")) break;
    benchmark::DoNotOptimize(granularity);
  }
}

void BM_PointerGetAttribute(benchmark::State& state) {
  if (!requireDriver(state)) return;
  VmmMapping mapping;
  if (!ok(state, mapping.create(kPageBytes), "VMM set-up")) return;
  // An address inside the mapping, not its base, so the lookup has to find the range.
  const CUdeviceptr inside = mapping.address() + kPageBytes / 2;
  int ordinal = -1;
  for (auto _ : state) {
    const CUresult r = cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, inside);
    if (!ok(state, r, "cuPointerGetAttribute")) break;
    benchmark::DoNotOptimize(ordinal);
  }
}

// ---- Physical memory and mappings ----------------------------------------------------------

void BM_MemCreateRelease(benchmark::State& state) {
  if (!requireDriver(state)) return;
  const CUmemAllocationProp prop = deviceZeroProps();
  for (auto _ : state) {
    CUmemGenericAllocationHandle handle = 0;
    if (!ok(state, cuMemCreate(&handle, kPageBytes, &prop, 0), "cuMemCreate")) break;
    if (!ok(state, cuMemRelease(handle), "cuMemRelease")) break;
  }
}

void BM_ReserveMapAccessUnmapFree(benchmark::State& state) {
  if (!requireDriver(state)) return;
  const CUmemAllocationProp prop = deviceZeroProps();
  const CUmemAccessDesc access = deviceZeroReadWrite();
  CUmemGenericAllocationHandle handle = 0;
  if (!ok(state, cuMemCreate(&handle, kPageBytes, &prop, 0), "cuMemCreate")) return;
  for (auto _ : state) {
    CUdeviceptr va = 0;
    if (!ok(state, cuMemAddressReserve(&va, kPageBytes, 0, 0, 0), "cuMemAddressReserve")) break;
    if (!ok(state, cuMemMap(va, kPageBytes, 0, handle, 0), "cuMemMap")) break;
    if (!ok(state, cuMemSetAccess(va, kPageBytes, &access, 1), "cuMemSetAccess")) break;
    if (!ok(state, cuMemUnmap(va, kPageBytes), "cuMemUnmap")) break;
    if (!ok(state, cuMemAddressFree(va, kPageBytes), "cuMemAddressFree")) break;
  }
  cuMemRelease(handle);
}

// ---- Copies --------------------------------------------------------------------------------

// Linear device memory written once before timing, so the simulator's lazily allocated backing
// store (like a host's first-touch page faults) is not part of the measurement.
class TouchedDeviceBuffer {
 public:
  explicit TouchedDeviceBuffer(size_t bytes) : bytes_(bytes) {
    result_ = cuMemAlloc(&va_, bytes_);
    if (result_ == CUDA_SUCCESS) result_ = cuMemsetD8(va_, 0x5a, bytes_);
  }
  TouchedDeviceBuffer(const TouchedDeviceBuffer&) = delete;
  TouchedDeviceBuffer& operator=(const TouchedDeviceBuffer&) = delete;
  ~TouchedDeviceBuffer() {
    if (va_ != 0) cuMemFree(va_);
  }
  CUresult result() const { return result_; }
  CUdeviceptr address() const { return va_; }

 private:
  size_t bytes_;
  CUdeviceptr va_ = 0;
  CUresult result_ = CUDA_SUCCESS;
};

// Host memory written once (the vector's fill) for the same reason.
std::vector<uint8_t> touchedHostBuffer() { return std::vector<uint8_t>(kCopyBytes, 0xa5); }

void BM_HostMemcpy(benchmark::State& state) {
  const std::vector<uint8_t> src = touchedHostBuffer();
  std::vector<uint8_t> dst = touchedHostBuffer();
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), kCopyBytes);
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(kCopyBytes));
}

void BM_MemcpyDtoD(benchmark::State& state) {
  if (!requireDriver(state)) return;
  TouchedDeviceBuffer src(kCopyBytes), dst(kCopyBytes);
  if (!ok(state, src.result(), "source set-up") || !ok(state, dst.result(), "destination set-up")) return;
  for (auto _ : state) {
    if (!ok(state, cuMemcpyDtoD(dst.address(), src.address(), kCopyBytes), "cuMemcpyDtoD")) break;
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(kCopyBytes));
}

void BM_MemcpyHtoD(benchmark::State& state) {
  if (!requireDriver(state)) return;
  const std::vector<uint8_t> src = touchedHostBuffer();
  TouchedDeviceBuffer dst(kCopyBytes);
  if (!ok(state, dst.result(), "destination set-up")) return;
  for (auto _ : state) {
    if (!ok(state, cuMemcpyHtoD(dst.address(), src.data(), kCopyBytes), "cuMemcpyHtoD")) break;
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(kCopyBytes));
}

void BM_MemcpyDtoH(benchmark::State& state) {
  if (!requireDriver(state)) return;
  TouchedDeviceBuffer src(kCopyBytes);
  std::vector<uint8_t> dst = touchedHostBuffer();
  if (!ok(state, src.result(), "source set-up")) return;
  for (auto _ : state) {
    if (!ok(state, cuMemcpyDtoH(dst.data(), src.address(), kCopyBytes), "cuMemcpyDtoH")) break;
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(kCopyBytes));
}

BENCHMARK(BM_DeviceGetAttribute)->UseRealTime();
BENCHMARK(BM_MemGetAllocationGranularity)->UseRealTime();
BENCHMARK(BM_PointerGetAttribute)->UseRealTime();
BENCHMARK(BM_MemCreateRelease)->UseRealTime();
BENCHMARK(BM_ReserveMapAccessUnmapFree)->UseRealTime();
BENCHMARK(BM_HostMemcpy)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_MemcpyDtoD)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_MemcpyHtoD)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_MemcpyDtoH)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace mcsim::bench
