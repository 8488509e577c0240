// The CUDA runtime's host API as multi-GPU programs use it, checked by behaviour. Built by nvcc
// (statically linked runtime by default, and again with -cudart shared); runs unchanged on
// mcsim's libcuda.so.1 and on a real GPU (docs/runtime.md). No device code: every check is about
// the driver's answers. Never calls a cuMulticast* function (it only resolves them).
#include <cuda.h>
#include <cuda_profiler_api.h>
#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "tests/runtime/rt_check.h"

namespace {

int deviceCount() {
  int n = 0;
  RT_OK(cudaGetDeviceCount(&n));
  return n;
}

void devices() {
  const int n = deviceCount();
  RT_EXPECT(n >= 1, "%d devices", n);
  std::vector<cudaUUID_t> uuids;
  for (int d = 0; d < n; ++d) {
    cudaDeviceProp p;
    RT_OK(cudaGetDeviceProperties(&p, d));
    int v = 0;
    RT_OK(cudaDeviceGetAttribute(&v, cudaDevAttrMultiProcessorCount, d));
    RT_EXPECT(p.multiProcessorCount == v && v > 0, "SMs %d vs attribute %d", p.multiProcessorCount, v);
    RT_OK(cudaDeviceGetAttribute(&v, cudaDevAttrComputeCapabilityMajor, d));
    RT_EXPECT(p.major == v && p.major >= 7, "major %d vs %d", p.major, v);
    RT_OK(cudaDeviceGetAttribute(&v, cudaDevAttrPciBusId, d));
    RT_EXPECT(p.pciBusID == v, "bus %d vs %d", p.pciBusID, v);
    RT_OK(cudaDeviceGetAttribute(&v, cudaDevAttrMaxThreadsPerBlock, d));
    RT_EXPECT(p.maxThreadsPerBlock == v && v == 1024, "threads per block %d vs %d", p.maxThreadsPerBlock, v);
    RT_OK(cudaDeviceGetAttribute(&v, cudaDevAttrWarpSize, d));
    RT_EXPECT(p.warpSize == 32 && v == 32, "warp %d", p.warpSize);
    RT_EXPECT(p.totalGlobalMem > (size_t{1} << 30), "memory %zu", p.totalGlobalMem);
    RT_EXPECT(p.name[0] != '\0', "empty name");
    RT_EXPECT(p.unifiedAddressing == 1, "unified addressing %d", p.unifiedAddressing);
    RT_EXPECT(p.sharedMemPerBlock == 48 * 1024, "shared per block %zu", p.sharedMemPerBlock);
    for (const cudaUUID_t& u : uuids) RT_EXPECT(std::memcmp(&u, &p.uuid, sizeof u) != 0, "device %d repeats a UUID", d);
    uuids.push_back(p.uuid);
    // The runtime and the driver agree.
    CUdevice cu = 0;
    RT_EXPECT(cuDeviceGet(&cu, d) == CUDA_SUCCESS, "cuDeviceGet");
    size_t total = 0;
    RT_EXPECT(cuDeviceTotalMem(&total, cu) == CUDA_SUCCESS && total == p.totalGlobalMem, "total %zu vs %zu", total,
              p.totalGlobalMem);
  }
  cudaDeviceProp bad;
  RT_EXPECT(cudaGetDeviceProperties(&bad, n) == cudaErrorInvalidDevice, "device %d accepted", n);
  cudaGetLastError();
}

// Every field of cudaDeviceProp (CUDA 13.0's driver_types.h) against the attribute that names
// the same fact, and the fields no attribute names against the driver's own calls.
void allDeviceProperties() {
  const int n = deviceCount();
  for (int d = 0; d < n; ++d) {
    cudaDeviceProp p;
    RT_OK(cudaGetDeviceProperties(&p, d));
    int checked = 0;
    auto same = [&](long long field, cudaDeviceAttr attr, const char* name) {
      int v = 0;
      RT_OK(cudaDeviceGetAttribute(&v, attr, d));
      RT_EXPECT(field == v, "device %d: %s is %lld, its attribute %d", d, name, field, v);
      ++checked;
    };
#define RT_PROP(field, attr) same(static_cast<long long>(p.field), cudaDevAttr##attr, #field)
    RT_PROP(sharedMemPerBlock, MaxSharedMemoryPerBlock);
    RT_PROP(regsPerBlock, MaxRegistersPerBlock);
    RT_PROP(warpSize, WarpSize);
    RT_PROP(memPitch, MaxPitch);
    RT_PROP(maxThreadsPerBlock, MaxThreadsPerBlock);
    RT_PROP(maxThreadsDim[0], MaxBlockDimX);
    RT_PROP(maxThreadsDim[1], MaxBlockDimY);
    RT_PROP(maxThreadsDim[2], MaxBlockDimZ);
    RT_PROP(maxGridSize[0], MaxGridDimX);
    RT_PROP(maxGridSize[1], MaxGridDimY);
    RT_PROP(maxGridSize[2], MaxGridDimZ);
    RT_PROP(totalConstMem, TotalConstantMemory);
    RT_PROP(major, ComputeCapabilityMajor);
    RT_PROP(minor, ComputeCapabilityMinor);
    RT_PROP(textureAlignment, TextureAlignment);
    RT_PROP(texturePitchAlignment, TexturePitchAlignment);
    RT_PROP(multiProcessorCount, MultiProcessorCount);
    RT_PROP(integrated, Integrated);
    RT_PROP(canMapHostMemory, CanMapHostMemory);
    RT_PROP(maxTexture1D, MaxTexture1DWidth);
    RT_PROP(maxTexture1DMipmap, MaxTexture1DMipmappedWidth);
    RT_PROP(maxTexture2D[0], MaxTexture2DWidth);
    RT_PROP(maxTexture2D[1], MaxTexture2DHeight);
    RT_PROP(maxTexture2DMipmap[0], MaxTexture2DMipmappedWidth);
    RT_PROP(maxTexture2DMipmap[1], MaxTexture2DMipmappedHeight);
    RT_PROP(maxTexture2DLinear[0], MaxTexture2DLinearWidth);
    RT_PROP(maxTexture2DLinear[1], MaxTexture2DLinearHeight);
    RT_PROP(maxTexture2DLinear[2], MaxTexture2DLinearPitch);
    RT_PROP(maxTexture2DGather[0], MaxTexture2DGatherWidth);
    RT_PROP(maxTexture2DGather[1], MaxTexture2DGatherHeight);
    RT_PROP(maxTexture3D[0], MaxTexture3DWidth);
    RT_PROP(maxTexture3D[1], MaxTexture3DHeight);
    RT_PROP(maxTexture3D[2], MaxTexture3DDepth);
    RT_PROP(maxTexture3DAlt[0], MaxTexture3DWidthAlt);
    RT_PROP(maxTexture3DAlt[1], MaxTexture3DHeightAlt);
    RT_PROP(maxTexture3DAlt[2], MaxTexture3DDepthAlt);
    RT_PROP(maxTextureCubemap, MaxTextureCubemapWidth);
    RT_PROP(maxTexture1DLayered[0], MaxTexture1DLayeredWidth);
    RT_PROP(maxTexture1DLayered[1], MaxTexture1DLayeredLayers);
    RT_PROP(maxTexture2DLayered[0], MaxTexture2DLayeredWidth);
    RT_PROP(maxTexture2DLayered[1], MaxTexture2DLayeredHeight);
    RT_PROP(maxTexture2DLayered[2], MaxTexture2DLayeredLayers);
    RT_PROP(maxTextureCubemapLayered[0], MaxTextureCubemapLayeredWidth);
    RT_PROP(maxTextureCubemapLayered[1], MaxTextureCubemapLayeredLayers);
    RT_PROP(maxSurface1D, MaxSurface1DWidth);
    RT_PROP(maxSurface2D[0], MaxSurface2DWidth);
    RT_PROP(maxSurface2D[1], MaxSurface2DHeight);
    RT_PROP(maxSurface3D[0], MaxSurface3DWidth);
    RT_PROP(maxSurface3D[1], MaxSurface3DHeight);
    RT_PROP(maxSurface3D[2], MaxSurface3DDepth);
    RT_PROP(maxSurface1DLayered[0], MaxSurface1DLayeredWidth);
    RT_PROP(maxSurface1DLayered[1], MaxSurface1DLayeredLayers);
    RT_PROP(maxSurface2DLayered[0], MaxSurface2DLayeredWidth);
    RT_PROP(maxSurface2DLayered[1], MaxSurface2DLayeredHeight);
    RT_PROP(maxSurface2DLayered[2], MaxSurface2DLayeredLayers);
    RT_PROP(maxSurfaceCubemap, MaxSurfaceCubemapWidth);
    RT_PROP(maxSurfaceCubemapLayered[0], MaxSurfaceCubemapLayeredWidth);
    RT_PROP(maxSurfaceCubemapLayered[1], MaxSurfaceCubemapLayeredLayers);
    RT_PROP(surfaceAlignment, SurfaceAlignment);
    RT_PROP(concurrentKernels, ConcurrentKernels);
    RT_PROP(ECCEnabled, EccEnabled);
    RT_PROP(pciBusID, PciBusId);
    RT_PROP(pciDeviceID, PciDeviceId);
    RT_PROP(pciDomainID, PciDomainId);
    RT_PROP(tccDriver, TccDriver);
    RT_PROP(asyncEngineCount, AsyncEngineCount);
    RT_PROP(unifiedAddressing, UnifiedAddressing);
    RT_PROP(memoryBusWidth, GlobalMemoryBusWidth);
    RT_PROP(l2CacheSize, L2CacheSize);
    RT_PROP(persistingL2CacheMaxSize, MaxPersistingL2CacheSize);
    RT_PROP(maxThreadsPerMultiProcessor, MaxThreadsPerMultiProcessor);
    RT_PROP(streamPrioritiesSupported, StreamPrioritiesSupported);
    RT_PROP(globalL1CacheSupported, GlobalL1CacheSupported);
    RT_PROP(localL1CacheSupported, LocalL1CacheSupported);
    RT_PROP(sharedMemPerMultiprocessor, MaxSharedMemoryPerMultiprocessor);
    RT_PROP(regsPerMultiprocessor, MaxRegistersPerMultiprocessor);
    RT_PROP(managedMemory, ManagedMemory);
    RT_PROP(isMultiGpuBoard, IsMultiGpuBoard);
    RT_PROP(multiGpuBoardGroupID, MultiGpuBoardGroupID);
    RT_PROP(hostNativeAtomicSupported, HostNativeAtomicSupported);
    RT_PROP(pageableMemoryAccess, PageableMemoryAccess);
    RT_PROP(concurrentManagedAccess, ConcurrentManagedAccess);
    RT_PROP(computePreemptionSupported, ComputePreemptionSupported);
    RT_PROP(canUseHostPointerForRegisteredMem, CanUseHostPointerForRegisteredMem);
    RT_PROP(cooperativeLaunch, CooperativeLaunch);
    RT_PROP(sharedMemPerBlockOptin, MaxSharedMemoryPerBlockOptin);
    RT_PROP(pageableMemoryAccessUsesHostPageTables, PageableMemoryAccessUsesHostPageTables);
    RT_PROP(directManagedMemAccessFromHost, DirectManagedMemAccessFromHost);
    RT_PROP(maxBlocksPerMultiProcessor, MaxBlocksPerMultiprocessor);
    RT_PROP(accessPolicyMaxWindowSize, MaxAccessPolicyWindowSize);
    RT_PROP(reservedSharedMemPerBlock, ReservedSharedMemoryPerBlock);
    RT_PROP(hostRegisterSupported, HostRegisterSupported);
    RT_PROP(sparseCudaArraySupported, SparseCudaArraySupported);
    RT_PROP(hostRegisterReadOnlySupported, HostRegisterReadOnlySupported);
    RT_PROP(timelineSemaphoreInteropSupported, TimelineSemaphoreInteropSupported);
    RT_PROP(memoryPoolsSupported, MemoryPoolsSupported);
    RT_PROP(gpuDirectRDMASupported, GPUDirectRDMASupported);
    RT_PROP(gpuDirectRDMAFlushWritesOptions, GPUDirectRDMAFlushWritesOptions);
    RT_PROP(gpuDirectRDMAWritesOrdering, GPUDirectRDMAWritesOrdering);
    RT_PROP(memoryPoolSupportedHandleTypes, MemoryPoolSupportedHandleTypes);
    RT_PROP(deferredMappingCudaArraySupported, DeferredMappingCudaArraySupported);
    RT_PROP(ipcEventSupported, IpcEventSupport);
    RT_PROP(clusterLaunch, ClusterLaunch);
    RT_PROP(deviceNumaConfig, NumaConfig);
    RT_PROP(deviceNumaId, NumaId);
    RT_PROP(mpsEnabled, MpsEnabled);
    RT_PROP(hostNumaId, HostNumaId);
    RT_PROP(gpuPciDeviceID, GpuPciDeviceId);
    RT_PROP(gpuPciSubsystemID, GpuPciSubsystemId);
    RT_PROP(hostNumaMultinodeIpcSupported, HostNumaMultinodeIpcSupported);
#undef RT_PROP
    // The runtime has no attribute for unified function pointers; the driver has.
    CUdevice cu = 0;
    RT_EXPECT(cuDeviceGet(&cu, d) == CUDA_SUCCESS, "cuDeviceGet");
    int v = -1;
    RT_EXPECT(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_UNIFIED_FUNCTION_POINTERS, cu) == CUDA_SUCCESS &&
                  v == p.unifiedFunctionPointers,
              "unifiedFunctionPointers %d, the driver's %d", p.unifiedFunctionPointers, v);
    // The fields no attribute names: the driver's name, UUID and memory size; no LUID on Linux.
    char name[256] = {};
    RT_EXPECT(cuDeviceGetName(name, sizeof name, cu) == CUDA_SUCCESS && std::strcmp(name, p.name) == 0,
              "name '%s', the driver's '%s'", p.name, name);
    CUuuid uuid;
    RT_EXPECT(cuDeviceGetUuid_v2(&uuid, cu) == CUDA_SUCCESS && std::memcmp(&uuid, &p.uuid, sizeof uuid) == 0, "uuid");
    size_t total = 0;
    RT_EXPECT(cuDeviceTotalMem(&total, cu) == CUDA_SUCCESS && total == p.totalGlobalMem, "total %zu vs %zu", total,
              p.totalGlobalMem);
    static const char kZero[8] = {};
    RT_EXPECT(std::memcmp(p.luid, kZero, sizeof p.luid) == 0 && p.luidDeviceNodeMask == 0, "a LUID on Linux");
    RT_EXPECT(checked == 110, "%d fields compared", checked);
  }
}

void setDeviceAcrossThreads() {
  const int n = deviceCount();
  RT_OK(cudaSetDevice(0));
  std::vector<std::thread> threads;
  std::vector<int> seen(static_cast<size_t>(n) * 2, -1);
  std::atomic<int> errors{0};
  for (int t = 0; t < 2 * n; ++t) {
    threads.emplace_back([t, n, &seen, &errors] {
      const int dev = t % n;
      void* p = nullptr;
      int current = -1;
      cudaPointerAttributes a{};
      if (cudaSetDevice(dev) != cudaSuccess || cudaMalloc(&p, 4096) != cudaSuccess ||
          cudaGetDevice(&current) != cudaSuccess || cudaPointerGetAttributes(&a, p) != cudaSuccess ||
          cudaFree(p) != cudaSuccess) {
        ++errors;
        return;
      }
      seen[static_cast<size_t>(t)] = (current == dev && a.device == dev && a.type == cudaMemoryTypeDevice) ? dev : -2;
    });
  }
  for (auto& th : threads) th.join();
  RT_EXPECT(errors == 0, "%d threads failed", errors.load());
  for (int t = 0; t < 2 * n; ++t) RT_EXPECT(seen[static_cast<size_t>(t)] == t % n, "thread %d saw %d", t, seen[static_cast<size_t>(t)]);
  int current = -1;
  RT_OK(cudaGetDevice(&current));
  RT_EXPECT(current == 0, "this thread's device moved to %d", current);
}

void mallocCopySet() {
  const size_t bytes = 1 << 20;
  std::vector<uint32_t> host(bytes / 4), back(bytes / 4, 0);
  for (size_t i = 0; i < host.size(); ++i) host[i] = static_cast<uint32_t>(i * 2654435761u);
  void *a = nullptr, *b = nullptr;
  RT_OK(cudaMalloc(&a, bytes));
  RT_OK(cudaMalloc(&b, bytes));
  RT_EXPECT(a != b && a != nullptr, "allocations");
  RT_OK(cudaMemcpy(a, host.data(), bytes, cudaMemcpyHostToDevice));
  RT_OK(cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice));
  RT_OK(cudaMemcpy(back.data(), b, bytes, cudaMemcpyDefault));
  RT_EXPECT(back == host, "round trip differs");
  RT_OK(cudaMemset(b, 0xab, bytes / 2));
  RT_OK(cudaMemcpy(back.data(), b, bytes, cudaMemcpyDeviceToHost));
  RT_EXPECT(back[0] == 0xababababu && back[bytes / 8 - 1] == 0xababababu && back[bytes / 8] == host[bytes / 8],
            "memset wrote %#x .. %#x, then %#x", back[0], back[bytes / 8 - 1], back[bytes / 8]);
  size_t freeBytes = 0, total = 0;
  RT_OK(cudaMemGetInfo(&freeBytes, &total));
  RT_EXPECT(freeBytes < total && total > bytes, "free %zu total %zu", freeBytes, total);
  RT_OK(cudaFree(a));
  RT_OK(cudaFree(b));
  RT_EXPECT(cudaFree(a) == cudaErrorInvalidValue, "double free accepted");
  cudaGetLastError();
}

void asyncStreamPinned() {
  cudaStream_t s;
  RT_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  const size_t bytes = 256 * 1024;
  uint8_t *h = nullptr, *h2 = nullptr;
  RT_OK(cudaMallocHost(reinterpret_cast<void**>(&h), bytes));
  RT_OK(cudaHostAlloc(reinterpret_cast<void**>(&h2), bytes, cudaHostAllocDefault));
  for (size_t i = 0; i < bytes; ++i) h[i] = static_cast<uint8_t>(i * 7);
  void* d = nullptr;
  RT_OK(cudaMallocAsync(&d, bytes, s));
  RT_OK(cudaMemcpyAsync(d, h, bytes, cudaMemcpyHostToDevice, s));
  RT_OK(cudaMemsetAsync(d, 0x5a, 16, s));
  RT_OK(cudaMemcpyAsync(h2, d, bytes, cudaMemcpyDeviceToHost, s));
  RT_OK(cudaFreeAsync(d, s));
  RT_OK(cudaStreamSynchronize(s));
  RT_OK(cudaStreamQuery(s));
  RT_EXPECT(h2[0] == 0x5a && h2[15] == 0x5a && h2[16] == h[16] && h2[bytes - 1] == h[bytes - 1], "copied %#x %#x",
            h2[0], h2[16]);
  cudaPointerAttributes a{};
  RT_OK(cudaPointerGetAttributes(&a, h));
  RT_EXPECT(a.type == cudaMemoryTypeHost, "pinned memory reads as type %d", a.type);
  RT_OK(cudaFreeHost(h));
  RT_OK(cudaFreeHost(h2));
  RT_OK(cudaStreamDestroy(s));
}

// The copies and memsets rt_api's other cases leave out: host to host, the asynchronous 2D forms
// between every pair of sides, cudaMemset2DAsync, cudaMemset3D / cudaMemset3DAsync, and
// cudaMemcpyPeerAsync (with two devices).
void copiesEveryShape() {
  cudaStream_t s;
  RT_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  std::vector<uint8_t> a(4096), b(4096, 0);
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<uint8_t>(i * 7 + 1);
  RT_OK(cudaMemcpy(b.data(), a.data(), a.size(), cudaMemcpyHostToHost));
  RT_EXPECT(b == a, "host to host");
  // 2D, asynchronous: host -> device, device -> device (another pitch), device -> host.
  const size_t width = 60, height = 9;
  void *d1 = nullptr, *d2 = nullptr;
  size_t p1 = 0, p2 = 0;
  RT_OK(cudaMallocPitch(&d1, &p1, width, height));
  RT_OK(cudaMallocPitch(&d2, &p2, width + 100, height));
  uint8_t* pinned = nullptr;
  RT_OK(cudaMallocHost(reinterpret_cast<void**>(&pinned), width * height));
  RT_OK(cudaMemset2DAsync(d2, p2, 0x11, width + 100, height, s));
  RT_OK(cudaMemcpy2DAsync(d1, p1, a.data(), width, width, height, cudaMemcpyHostToDevice, s));
  RT_OK(cudaMemcpy2DAsync(d2, p2, d1, p1, width, height, cudaMemcpyDeviceToDevice, s));
  RT_OK(cudaMemcpy2DAsync(pinned, width, d2, p2, width, height, cudaMemcpyDeviceToHost, s));
  RT_OK(cudaStreamSynchronize(s));
  RT_EXPECT(std::memcmp(pinned, a.data(), width * height) == 0, "2D async round trip differs");
  uint8_t pad = 0;
  RT_OK(cudaMemcpy(&pad, static_cast<uint8_t*>(d2) + p2 * 4 + width + 50, 1, cudaMemcpyDeviceToHost));
  RT_EXPECT(pad == 0x11, "the 2D copy wrote past its width: %#x", pad);
  // 3D memsets: a box inside pitched memory, synchronously and on a stream.
  const size_t w3 = 40, h3 = 5, depth = 3;
  cudaPitchedPtr v;
  RT_OK(cudaMalloc3D(&v, make_cudaExtent(w3, h3, depth)));
  RT_OK(cudaMemset(v.ptr, 0, v.pitch * h3 * depth));
  RT_OK(cudaMemset3D(v, 0x22, make_cudaExtent(w3, h3, depth)));
  RT_OK(cudaMemset3DAsync(v, 0x33, make_cudaExtent(w3 / 2, h3, depth), s));
  RT_OK(cudaStreamSynchronize(s));
  std::vector<uint8_t> slab(v.pitch * h3 * depth);
  RT_OK(cudaMemcpy(slab.data(), v.ptr, slab.size(), cudaMemcpyDeviceToHost));
  for (size_t z = 0; z < depth; ++z) {
    for (size_t y = 0; y < h3; ++y) {
      const uint8_t* row = slab.data() + (z * h3 + y) * v.pitch;
      RT_EXPECT(row[0] == 0x33 && row[w3 / 2 - 1] == 0x33 && row[w3 / 2] == 0x22 && row[w3 - 1] == 0x22 &&
                    (v.pitch == w3 || row[w3] == 0),
                "slice %zu row %zu: %#x %#x %#x", z, y, row[0], row[w3 / 2], row[w3 - 1]);
    }
  }
  // Between devices on a stream.
  if (deviceCount() >= 2) {
    void* other = nullptr;
    RT_OK(cudaSetDevice(1));
    RT_OK(cudaMalloc(&other, a.size()));
    RT_OK(cudaSetDevice(0));
    void* mine = nullptr;
    RT_OK(cudaMalloc(&mine, a.size()));
    RT_OK(cudaMemcpyAsync(mine, a.data(), a.size(), cudaMemcpyHostToDevice, s));
    RT_OK(cudaMemcpyPeerAsync(other, 1, mine, 0, a.size(), s));
    std::fill(b.begin(), b.end(), 0);
    RT_OK(cudaMemcpyAsync(b.data(), other, b.size(), cudaMemcpyDefault, s));
    RT_OK(cudaStreamSynchronize(s));
    RT_EXPECT(b == a, "peer copy on a stream differs");
    RT_OK(cudaFree(mine));
    RT_OK(cudaFree(other));
  }
  RT_OK(cudaFree(v.ptr));
  RT_OK(cudaFreeHost(pinned));
  RT_OK(cudaFree(d1));
  RT_OK(cudaFree(d2));
  RT_OK(cudaStreamDestroy(s));
}

// Stream-ordered memory pools: the device's default pool and its release threshold, a pool of
// the program's own made the device's current pool, cudaMallocFromPoolAsync, the pool's usage
// attributes while the memory is held and after it is freed, trimming, access from a peer device.
void memoryPools() {
  RT_OK(cudaSetDevice(0));
  int supported = 0;
  RT_OK(cudaDeviceGetAttribute(&supported, cudaDevAttrMemoryPoolsSupported, 0));
  RT_EXPECT(supported == 1, "memory pools not supported");
  cudaMemPool_t def = nullptr, current = nullptr;
  RT_OK(cudaDeviceGetDefaultMemPool(&def, 0));
  RT_OK(cudaDeviceGetMemPool(&current, 0));
  RT_EXPECT(def != nullptr && current == def, "the current pool is not the default one");
  uint64_t threshold = 1;
  RT_OK(cudaMemPoolGetAttribute(def, cudaMemPoolAttrReleaseThreshold, &threshold));
  RT_EXPECT(threshold == 0, "default release threshold %llu", static_cast<unsigned long long>(threshold));
  cudaMemPoolProps props = {};
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = 0;
  cudaMemPool_t pool = nullptr;
  RT_OK(cudaMemPoolCreate(&pool, &props));
  uint64_t big = 64 << 20;
  RT_OK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &big));
  RT_OK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));
  RT_EXPECT(threshold == big, "release threshold %llu", static_cast<unsigned long long>(threshold));
  cudaStream_t s;
  RT_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  const size_t bytes = 1 << 20;
  void* p = nullptr;
  RT_OK(cudaMallocFromPoolAsync(&p, bytes, pool, s));
  std::vector<uint8_t> h(bytes), back(bytes, 0);
  for (size_t i = 0; i < bytes; ++i) h[i] = static_cast<uint8_t>(i * 5 + 3);
  RT_OK(cudaMemcpyAsync(p, h.data(), bytes, cudaMemcpyHostToDevice, s));
  RT_OK(cudaMemcpyAsync(back.data(), p, bytes, cudaMemcpyDeviceToHost, s));
  RT_OK(cudaStreamSynchronize(s));
  RT_EXPECT(back == h, "pool memory round trip differs");
  uint64_t used = 0, reserved = 0;
  RT_OK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used));
  RT_OK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &reserved));
  RT_EXPECT(used >= bytes && reserved >= used, "used %llu reserved %llu", static_cast<unsigned long long>(used),
            static_cast<unsigned long long>(reserved));
  cudaPointerAttributes a{};
  RT_OK(cudaPointerGetAttributes(&a, p));
  RT_EXPECT(a.type == cudaMemoryTypeDevice && a.device == 0, "pool memory reads as type %d on %d", a.type, a.device);
  // Another device reads the pool's memory once given access.
  if (deviceCount() >= 2) {
    cudaMemAccessDesc desc = {};
    desc.location.type = cudaMemLocationTypeDevice;
    desc.location.id = 1;
    desc.flags = cudaMemAccessFlagsProtReadWrite;
    RT_OK(cudaMemPoolSetAccess(pool, &desc, 1));
    cudaMemLocation loc = desc.location;
    cudaMemAccessFlags flags = cudaMemAccessFlagsProtNone;
    RT_OK(cudaMemPoolGetAccess(&flags, pool, &loc));
    RT_EXPECT(flags == cudaMemAccessFlagsProtReadWrite, "device 1's access %d", static_cast<int>(flags));
    void* q = nullptr;
    RT_OK(cudaSetDevice(1));
    RT_OK(cudaMalloc(&q, bytes));
    RT_OK(cudaMemcpy(q, p, bytes, cudaMemcpyDefault));
    std::fill(back.begin(), back.end(), 0);
    RT_OK(cudaMemcpy(back.data(), q, bytes, cudaMemcpyDeviceToHost));
    RT_EXPECT(back == h, "device 1's copy of pool memory differs");
    RT_OK(cudaFree(q));
    RT_OK(cudaSetDevice(0));
  }
  RT_OK(cudaFreeAsync(p, s));
  RT_OK(cudaStreamSynchronize(s));
  RT_OK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used));
  RT_EXPECT(used == 0, "used %llu after the free", static_cast<unsigned long long>(used));
  RT_OK(cudaMemPoolTrimTo(pool, 0));
  RT_OK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &reserved));
  RT_EXPECT(reserved == 0, "reserved %llu after trimming", static_cast<unsigned long long>(reserved));
  // The program's pool as the device's current one: cudaMallocAsync draws from it.
  RT_OK(cudaDeviceSetMemPool(0, pool));
  RT_OK(cudaDeviceGetMemPool(&current, 0));
  RT_EXPECT(current == pool, "the current pool did not change");
  RT_OK(cudaMallocAsync(&p, 4096, s));
  RT_OK(cudaStreamSynchronize(s));
  RT_OK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used));
  RT_EXPECT(used >= 4096, "cudaMallocAsync did not draw from the current pool: used %llu",
            static_cast<unsigned long long>(used));
  RT_OK(cudaFreeAsync(p, s));
  RT_OK(cudaStreamSynchronize(s));
  RT_OK(cudaDeviceSetMemPool(0, def));
  RT_OK(cudaMemPoolDestroy(pool));
  RT_OK(cudaStreamDestroy(s));
}

void eventsAndHostFunctions() {
  cudaStream_t s;
  RT_OK(cudaStreamCreate(&s));
  cudaEvent_t start, stop;
  RT_OK(cudaEventCreate(&start));
  RT_OK(cudaEventCreate(&stop));
  void* d = nullptr;
  const size_t bytes = 8 << 20;
  RT_OK(cudaMalloc(&d, bytes));
  static std::vector<int> order;
  order.clear();
  RT_OK(cudaEventRecord(start, s));
  RT_OK(cudaMemsetAsync(d, 1, bytes, s));
  RT_OK(cudaLaunchHostFunc(s, [](void* arg) { order.push_back(*static_cast<int*>(arg)); }, new int(1)));
  RT_OK(cudaStreamAddCallback(
      s, [](cudaStream_t, cudaError_t status, void* arg) { order.push_back(status == cudaSuccess ? *static_cast<int*>(arg) : -1); },
      new int(2), 0));
  RT_OK(cudaEventRecord(stop, s));
  RT_OK(cudaEventSynchronize(stop));
  RT_OK(cudaEventQuery(stop));
  RT_OK(cudaStreamSynchronize(s));
  RT_EXPECT(order.size() == 2 && order[0] == 1 && order[1] == 2, "host functions ran %zu times", order.size());
  float ms = -1;
  RT_OK(cudaEventElapsedTime(&ms, start, stop));
  RT_EXPECT(ms > 0 && ms < 1000, "elapsed %f ms for an 8 MiB memset", ms);
  // Another stream waits for an event.
  cudaStream_t t;
  RT_OK(cudaStreamCreateWithFlags(&t, cudaStreamNonBlocking));
  RT_OK(cudaStreamWaitEvent(t, stop, 0));
  RT_OK(cudaStreamSynchronize(t));
  RT_OK(cudaFree(d));
  RT_OK(cudaEventDestroy(start));
  RT_OK(cudaEventDestroy(stop));
  RT_OK(cudaStreamDestroy(s));
  RT_OK(cudaStreamDestroy(t));
}

void peerAccess() {
  const int n = deviceCount();
  if (n < 2) return;  // one GPU: nothing to check
  int can = 0;
  RT_OK(cudaDeviceCanAccessPeer(&can, 0, 1));
  RT_EXPECT(can == 1, "devices 0 and 1 are not peers");
  RT_OK(cudaSetDevice(0));
  RT_OK(cudaDeviceEnablePeerAccess(1, 0));
  RT_EXPECT(cudaDeviceEnablePeerAccess(1, 0) == cudaErrorPeerAccessAlreadyEnabled, "enabled twice");
  cudaGetLastError();
  void *a = nullptr, *b = nullptr;
  const size_t bytes = 1 << 16;
  RT_OK(cudaMalloc(&a, bytes));
  RT_OK(cudaSetDevice(1));
  RT_OK(cudaMalloc(&b, bytes));
  RT_OK(cudaMemset(b, 0, bytes));
  RT_OK(cudaSetDevice(0));
  std::vector<uint8_t> h(bytes), back(bytes);
  for (size_t i = 0; i < bytes; ++i) h[i] = static_cast<uint8_t>(i ^ 0x3c);
  RT_OK(cudaMemcpy(a, h.data(), bytes, cudaMemcpyHostToDevice));
  RT_OK(cudaMemcpyPeer(b, 1, a, 0, bytes / 2));
  RT_OK(cudaMemcpy(static_cast<uint8_t*>(b) + bytes / 2, static_cast<uint8_t*>(a) + bytes / 2, bytes / 2, cudaMemcpyDefault));
  RT_OK(cudaMemcpy(back.data(), b, bytes, cudaMemcpyDefault));
  RT_EXPECT(back == h, "peer copy differs");
  cudaPointerAttributes attr{};
  RT_OK(cudaPointerGetAttributes(&attr, b));
  RT_EXPECT(attr.device == 1, "device 1's memory reads as device %d", attr.device);
  RT_OK(cudaDeviceDisablePeerAccess(1));
  RT_OK(cudaFree(a));
  RT_OK(cudaFree(b));
}

void hostRegister() {
  const size_t bytes = 64 * 1024;
  void* raw = std::aligned_alloc(4096, bytes);
  auto* h = static_cast<uint8_t*>(raw);
  for (size_t i = 0; i < bytes; ++i) h[i] = static_cast<uint8_t>(i * 13);
  RT_OK(cudaHostRegister(raw, bytes, cudaHostRegisterDefault));
  unsigned flags = 99;
  RT_OK(cudaHostGetFlags(&flags, raw));
  void* dp = nullptr;
  RT_OK(cudaHostGetDevicePointer(&dp, raw, 0));
  RT_EXPECT(dp != nullptr, "no device pointer");
  void* d = nullptr;
  RT_OK(cudaMalloc(&d, bytes));
  cudaStream_t s;
  RT_OK(cudaStreamCreate(&s));
  RT_OK(cudaMemcpyAsync(d, raw, bytes, cudaMemcpyHostToDevice, s));
  RT_OK(cudaMemsetAsync(raw == nullptr ? nullptr : d, 0, 8, s));
  RT_OK(cudaMemcpyAsync(raw, d, bytes, cudaMemcpyDeviceToHost, s));
  RT_OK(cudaStreamSynchronize(s));
  RT_EXPECT(h[0] == 0 && h[7] == 0 && h[8] == static_cast<uint8_t>(8 * 13), "registered copy: %u %u", h[0], h[8]);
  cudaPointerAttributes a{};
  RT_OK(cudaPointerGetAttributes(&a, raw));
  RT_EXPECT(a.type == cudaMemoryTypeHost, "registered memory reads as type %d", a.type);
  RT_OK(cudaHostUnregister(raw));
  RT_EXPECT(cudaHostUnregister(raw) == cudaErrorHostMemoryNotRegistered, "unregistered twice");
  cudaGetLastError();
  RT_OK(cudaStreamDestroy(s));
  RT_OK(cudaFree(d));
  std::free(raw);
}

void copies2d() {
  const size_t width = 100, height = 37;
  void* d = nullptr;
  size_t pitch = 0;
  RT_OK(cudaMallocPitch(&d, &pitch, width, height));
  RT_EXPECT(pitch >= width && pitch % 128 == 0, "pitch %zu", pitch);
  std::vector<uint8_t> h(width * height), back(width * height, 0);
  for (size_t i = 0; i < h.size(); ++i) h[i] = static_cast<uint8_t>(i * 31 + 7);
  RT_OK(cudaMemset2D(d, pitch, 0xee, pitch, height));
  RT_OK(cudaMemcpy2D(d, pitch, h.data(), width, width, height, cudaMemcpyHostToDevice));
  RT_OK(cudaMemcpy2D(back.data(), width, d, pitch, width, height, cudaMemcpyDeviceToHost));
  RT_EXPECT(back == h, "2D round trip differs");
  // The padding past `width` kept the memset's value.
  uint8_t pad = 0;
  RT_OK(cudaMemcpy(&pad, static_cast<uint8_t*>(d) + pitch * 5 + width, 1, cudaMemcpyDeviceToHost));
  RT_EXPECT(pad == 0xee, "padding %#x", pad);
  RT_OK(cudaFree(d));
}

// cudaMalloc3D's pitched memory, cudaMemcpy3D into a box of it and back.
void copies3d() {
  const size_t width = 100, height = 7, depth = 5;
  cudaPitchedPtr d;
  RT_OK(cudaMalloc3D(&d, make_cudaExtent(width, height, depth)));
  RT_EXPECT(d.pitch >= width && d.xsize == width && d.ysize == height, "pitch %zu, %zu x %zu", d.pitch, d.xsize, d.ysize);
  RT_OK(cudaMemset(d.ptr, 0xee, d.pitch * height * depth));
  std::vector<uint8_t> h(width * height * depth), back(h.size(), 0);
  for (size_t i = 0; i < h.size(); ++i) h[i] = static_cast<uint8_t>(i * 13 + 5);
  cudaMemcpy3DParms up = {};
  up.srcPtr = make_cudaPitchedPtr(h.data(), width, width, height);
  up.dstPtr = d;
  up.extent = make_cudaExtent(width, height, depth);
  up.kind = cudaMemcpyHostToDevice;
  RT_OK(cudaMemcpy3D(&up));
  cudaMemcpy3DParms down = {};
  down.srcPtr = d;
  down.dstPtr = make_cudaPitchedPtr(back.data(), width, width, height);
  down.extent = up.extent;
  down.kind = cudaMemcpyDeviceToHost;
  RT_OK(cudaMemcpy3DAsync(&down, nullptr));
  RT_OK(cudaStreamSynchronize(nullptr));
  RT_EXPECT(back == h, "3D round trip differs");
  // The row padding kept the memset's value.
  uint8_t pad = 0;
  RT_OK(cudaMemcpy(&pad, static_cast<uint8_t*>(d.ptr) + d.pitch * (height * 2 + 3) + width, 1, cudaMemcpyDeviceToHost));
  RT_EXPECT(pad == 0xee, "padding %#x", pad);
  RT_OK(cudaFree(d.ptr));
}

// Without a profiler attached, starting and stopping one succeeds and does nothing.
void profiler() {
  RT_OK(cudaProfilerStart());
  RT_OK(cudaProfilerStop());
}

void pciBusIds() {
  const int n = deviceCount();
  for (int d = 0; d < n; ++d) {
    char id[32] = {};
    RT_OK(cudaDeviceGetPCIBusId(id, sizeof id, d));
    int back = -1;
    RT_OK(cudaDeviceGetByPCIBusId(&back, id));
    RT_EXPECT(back == d, "%s names device %d, not %d", id, back, d);
  }
}

void limits() {
  size_t stack = 0;
  RT_OK(cudaDeviceGetLimit(&stack, cudaLimitStackSize));
  RT_EXPECT(stack > 0, "stack size 0");
  RT_OK(cudaDeviceSetLimit(cudaLimitStackSize, 4096));
  RT_OK(cudaDeviceGetLimit(&stack, cudaLimitStackSize));
  RT_EXPECT(stack == 4096, "stack size %zu after setting 4096", stack);
  size_t heap = 0;
  RT_OK(cudaDeviceGetLimit(&heap, cudaLimitMallocHeapSize));
  RT_EXPECT(heap > 0, "heap 0");
}

void driverEntryPoints() {
  const char* names[] = {"cuMulticastCreate", "cuMulticastAddDevice", "cuMulticastBindMem", "cuMulticastBindAddr",
                         "cuMulticastUnbind", "cuMulticastGetGranularity", "cuMemCreate", "cuMemMap"};
  void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  RT_EXPECT(driver != nullptr, "libcuda.so.1 not loaded");
  for (const char* name : names) {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
    RT_OK(cudaGetDriverEntryPointByVersion(name, &fn, 12010, cudaEnableDefault, &q));
    RT_EXPECT(fn != nullptr && q == cudaDriverEntryPointSuccess, "%s: %p status %d", name, fn, q);
    // The function the driver exports under that name (every one above has one ABI variant).
    RT_EXPECT(fn == dlsym(driver, name), "%s: not the exported function", name);
    // A multicast function before CUDA 12.1, which brought them: not found, as that version's
    // driver would answer.
    if (std::strncmp(name, "cuMulticast", 11) == 0) {
      void* old = reinterpret_cast<void*>(1);
      q = cudaDriverEntryPointSuccess;
      RT_OK(cudaGetDriverEntryPointByVersion(name, &old, 12000, cudaEnableDefault, &q));
      RT_EXPECT(old == nullptr && q == cudaDriverEntryPointVersionNotSufficent, "%s at 12.0: %p status %d", name, old, q);
    }
    // The deprecated form (the runtime's own version), as older NCCL and PyTorch call it.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    void* viaOld = nullptr;
    RT_OK(cudaGetDriverEntryPoint(name, &viaOld, cudaEnableDefault, &q));
#pragma GCC diagnostic pop
    RT_EXPECT(viaOld == fn && q == cudaDriverEntryPointSuccess, "cudaGetDriverEntryPoint(%s): %p status %d", name, viaOld, q);
  }
  // The per-thread default stream variant under cudaEnablePerThreadDefaultStream, the legacy one
  // under cudaEnableLegacyStream.
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
  RT_OK(cudaGetDriverEntryPointByVersion("cuMemcpyAsync", &fn, 12000, cudaEnablePerThreadDefaultStream, &q));
  RT_EXPECT(fn == dlsym(driver, "cuMemcpyAsync_ptsz"), "cuMemcpyAsync per-thread: %p", fn);
  RT_OK(cudaGetDriverEntryPointByVersion("cuMemcpyAsync", &fn, 12000, cudaEnableLegacyStream, &q));
  RT_EXPECT(fn == dlsym(driver, "cuMemcpyAsync"), "cuMemcpyAsync legacy: %p", fn);
  // A function with several ABI variants: the one of the version asked for.
  RT_OK(cudaGetDriverEntryPointByVersion("cuMemAlloc", &fn, 12000, cudaEnableDefault, &q));
  RT_EXPECT(fn == dlsym(driver, "cuMemAlloc_v2"), "cuMemAlloc at 12.0: %p", fn);
  RT_OK(cudaGetDriverEntryPointByVersion("cuCtxCreate", &fn, 12000, cudaEnableDefault, &q));
  RT_EXPECT(fn == dlsym(driver, "cuCtxCreate_v3"), "cuCtxCreate at 12.0: %p", fn);
  RT_OK(cudaGetDriverEntryPointByVersion("cuCtxCreate", &fn, 13000, cudaEnableDefault, &q));
  RT_EXPECT(fn == dlsym(driver, "cuCtxCreate_v4"), "cuCtxCreate at 13.0: %p", fn);
  fn = reinterpret_cast<void*>(1);
  q = cudaDriverEntryPointSuccess;
  RT_OK(cudaGetDriverEntryPointByVersion("cuNoSuchFunction", &fn, 12000, cudaEnableDefault, &q));
  RT_EXPECT(fn == nullptr && q == cudaDriverEntryPointSymbolNotFound, "made-up name: %p status %d", fn, q);
  // A driver function the runtime hands out is the one the driver exports; it works in the
  // context the runtime made current.
  RT_OK(cudaSetDevice(0));
  RT_OK(cudaFree(nullptr));
  void* alloc = nullptr;
  RT_OK(cudaGetDriverEntryPointByVersion("cuMemAlloc", &alloc, 12000, cudaEnableDefault, &q));
  CUdeviceptr p = 0;
  RT_EXPECT(reinterpret_cast<CUresult (*)(CUdeviceptr*, size_t)>(alloc)(&p, 4096) == CUDA_SUCCESS && p != 0, "cuMemAlloc");
  RT_OK(cudaFree(reinterpret_cast<void*>(p)));
}

// No stream is capturing (nothing here begins a capture; rt_graphs.cu captures), and the
// thread's capture mode is kept as exchanged.
void streamCaptureQueries() {
  cudaStream_t s;
  RT_OK(cudaStreamCreate(&s));
  cudaStreamCaptureStatus st = cudaStreamCaptureStatusActive;
  RT_OK(cudaStreamIsCapturing(s, &st));
  RT_EXPECT(st == cudaStreamCaptureStatusNone, "status %d", st);
  st = cudaStreamCaptureStatusActive;
  RT_OK(cudaStreamIsCapturing(nullptr, &st));
  RT_EXPECT(st == cudaStreamCaptureStatusNone, "legacy stream status %d", st);
  st = cudaStreamCaptureStatusActive;
  unsigned long long id = 0;
  RT_OK(cudaStreamGetCaptureInfo(s, &st, &id));
  RT_EXPECT(st == cudaStreamCaptureStatusNone, "capture info status %d", st);
  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  RT_OK(cudaThreadExchangeStreamCaptureMode(&mode));
  RT_EXPECT(mode == cudaStreamCaptureModeGlobal, "the default mode is %d", mode);
  RT_OK(cudaThreadExchangeStreamCaptureMode(&mode));
  RT_EXPECT(mode == cudaStreamCaptureModeRelaxed, "the mode set was %d", mode);
  RT_OK(cudaStreamDestroy(s));
}

void deviceReset() {
  RT_OK(cudaSetDevice(0));
  void* d = nullptr;
  RT_OK(cudaMalloc(&d, 4096));
  cudaStream_t s;
  RT_OK(cudaStreamCreate(&s));
  RT_OK(cudaDeviceReset());
  // The device works again after a reset, with a fresh primary context.
  void* e = nullptr;
  RT_OK(cudaMalloc(&e, 4096));
  RT_OK(cudaMemset(e, 0, 4096));
  RT_OK(cudaDeviceSynchronize());
  RT_OK(cudaFree(e));
  RT_OK(cudaDeviceReset());
}

// A second runtime in the process (a library that embeds its own, here the shared libcudart
// beside the program's static one) works on the same devices and contexts.
void secondRuntime() {
  void* lib = dlopen("libcudart.so.13", RTLD_NOW | RTLD_LOCAL);
  RT_EXPECT(lib != nullptr, "dlopen libcudart.so.13: %s", dlerror());
  auto count = reinterpret_cast<cudaError_t (*)(int*)>(dlsym(lib, "cudaGetDeviceCount"));
  auto alloc = reinterpret_cast<cudaError_t (*)(void**, size_t)>(dlsym(lib, "cudaMalloc"));
  auto release = reinterpret_cast<cudaError_t (*)(void*)>(dlsym(lib, "cudaFree"));
  RT_EXPECT(count != nullptr && alloc != nullptr && release != nullptr, "symbols");
  int n = -1;
  RT_OK(count(&n));
  RT_EXPECT(n == deviceCount(), "the second runtime sees %d devices, the first %d", n, deviceCount());
  void* p = nullptr;
  RT_OK(alloc(&p, 1 << 16));
  std::vector<uint8_t> h(1 << 16, 0x77), back(1 << 16, 0);
  RT_OK(cudaMemcpy(p, h.data(), h.size(), cudaMemcpyHostToDevice));  // the first runtime uses it
  RT_OK(cudaMemcpy(back.data(), p, back.size(), cudaMemcpyDeviceToHost));
  RT_EXPECT(back == h, "memory of one runtime differs through the other");
  RT_OK(release(p));
  dlclose(lib);
}

// A library that embeds a runtime of its own (librt_lib.so, built beside this program from
// rt_lib.cu with nvcc's default static runtime, as NCCL is), loaded beside the program's runtime:
// both see the same devices, the library's runtime follows the device the program's set (the
// current context is the driver's), the library's kernel runs on the program's memory and stream,
// and memory either runtime allocates serves the other.
void embeddedRuntime() {
  char self[4096];
  const ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  RT_EXPECT(len > 0, "readlink /proc/self/exe");
  std::string path(self, static_cast<size_t>(len));
  path = path.substr(0, path.rfind('/') + 1) + "librt_lib.so";
  void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  RT_EXPECT(lib != nullptr, "dlopen %s: %s", path.c_str(), dlerror());
  auto count = reinterpret_cast<int (*)()>(dlsym(lib, "rt_lib_device_count"));
  auto addOn = reinterpret_cast<int (*)(int*, int, int, cudaStream_t)>(dlsym(lib, "rt_lib_add_on"));
  auto libMalloc = reinterpret_cast<int (*)(void**, size_t)>(dlsym(lib, "rt_lib_malloc"));
  auto libFree = reinterpret_cast<int (*)(void*)>(dlsym(lib, "rt_lib_free"));
  auto libDevice = reinterpret_cast<int (*)()>(dlsym(lib, "rt_lib_get_device"));
  RT_EXPECT(count && addOn && libMalloc && libFree && libDevice, "symbols");
  const int n = deviceCount();
  RT_EXPECT(count() == n, "the library's runtime sees %d devices, the program's %d", count(), n);
  const int dev = n >= 2 ? 1 : 0;
  RT_OK(cudaSetDevice(dev));
  RT_OK(cudaFree(nullptr));  // the device's primary context is current
  RT_EXPECT(libDevice() == dev, "the library's runtime is on device %d, the program's on %d", libDevice(), dev);
  const int words = 5000;
  int* x = nullptr;
  RT_OK(cudaMalloc(&x, words * sizeof(int)));
  std::vector<int> h(words);
  for (int i = 0; i < words; ++i) h[i] = i;
  cudaStream_t s;
  RT_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  RT_OK(cudaMemcpyAsync(x, h.data(), words * sizeof(int), cudaMemcpyHostToDevice, s));
  RT_EXPECT(addOn(x, words, 1000, s) == 0, "the library's launch failed");
  std::vector<int> back(words, 0);
  RT_OK(cudaMemcpyAsync(back.data(), x, words * sizeof(int), cudaMemcpyDeviceToHost, s));
  RT_OK(cudaStreamSynchronize(s));
  for (int i = 0; i < words; ++i) RT_EXPECT(back[i] == i + 1000, "word %d is %d", i, back[i]);
  // The library's memory in the program's copies, freed by the library.
  void* theirs = nullptr;
  RT_EXPECT(libMalloc(&theirs, words * sizeof(int)) == 0 && theirs != nullptr, "the library's cudaMalloc");
  cudaPointerAttributes a{};
  RT_OK(cudaPointerGetAttributes(&a, theirs));
  RT_EXPECT(a.device == dev, "the library's memory is on device %d", a.device);
  RT_OK(cudaMemcpy(theirs, x, words * sizeof(int), cudaMemcpyDeviceToDevice));
  std::fill(back.begin(), back.end(), 0);
  RT_OK(cudaMemcpy(back.data(), theirs, words * sizeof(int), cudaMemcpyDeviceToHost));
  RT_EXPECT(back[words - 1] == words - 1 + 1000, "through the library's memory: %d", back[words - 1]);
  RT_EXPECT(libFree(theirs) == 0, "the library's cudaFree");
  RT_OK(cudaStreamDestroy(s));
  RT_OK(cudaFree(x));
  RT_OK(cudaSetDevice(0));
  dlclose(lib);
}

// Leaves device memory, pinned memory and a stream behind, for the leak report at exit (run only
// when named: runtime.leak_report.*). On a real GPU it just ends.
void leavesBehind() {
  RT_OK(cudaSetDevice(1));
  void* d = nullptr;
  void* h = nullptr;
  cudaStream_t s;
  RT_OK(cudaMalloc(&d, 1 << 20));
  RT_OK(cudaMallocHost(&h, 4096));
  RT_OK(cudaStreamCreate(&s));
}

const rtcheck::Case kCases[] = {
    {"devices", devices},
    {"all_device_properties", allDeviceProperties},
    {"set_device_threads", setDeviceAcrossThreads},
    {"malloc_copy_set", mallocCopySet},
    {"async_stream_pinned", asyncStreamPinned},
    {"memory_pools", memoryPools},
    {"events_host_functions", eventsAndHostFunctions},
    {"peer_access", peerAccess},
    {"host_register", hostRegister},
    {"copies_2d", copies2d},
    {"copies_3d", copies3d},
    {"copies_every_shape", copiesEveryShape},
    {"profiler", profiler},
    {"pci_bus_ids", pciBusIds},
    {"limits", limits},
    {"driver_entry_points", driverEntryPoints},
    {"second_runtime", secondRuntime},
    {"embedded_runtime", embeddedRuntime},
    {"stream_capture_queries", streamCaptureQueries},
    {"device_reset", deviceReset},
    {"leaves_behind", leavesBehind, true},
};

}  // namespace

int main(int argc, char** argv) { return rtcheck::runCases(kCases, sizeof kCases / sizeof kCases[0], argc, argv); }
