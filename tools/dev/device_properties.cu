// Prints every field of cudaDeviceProp for device 0, one "field = value" line each, so that the
// answers of mcsim (preset single-h100) and of a real H100 can be compared line by line
// (docs/runtime.md). The field list follows CUDA 13.0's driver_types.h.
#include <cuda_runtime.h>

#include <cstdio>

int main() {
  cudaDeviceProp p;
  const cudaError_t e = cudaGetDeviceProperties(&p, 0);
  if (e != cudaSuccess) {
    std::printf("cudaGetDeviceProperties: %s\n", cudaGetErrorName(e));
    return 1;
  }
  std::printf("name = %s\n", p.name);
  std::printf("uuid = set\n");
  for (int i = 0; i < 8; ++i) std::printf("luid[%d] = %d\n", i, static_cast<unsigned char>(p.luid[i]));
  std::printf("luidDeviceNodeMask = %lld\n", static_cast<long long>(p.luidDeviceNodeMask));
  std::printf("totalGlobalMem = %lld\n", static_cast<long long>(p.totalGlobalMem));
  std::printf("sharedMemPerBlock = %lld\n", static_cast<long long>(p.sharedMemPerBlock));
  std::printf("regsPerBlock = %lld\n", static_cast<long long>(p.regsPerBlock));
  std::printf("warpSize = %lld\n", static_cast<long long>(p.warpSize));
  std::printf("memPitch = %lld\n", static_cast<long long>(p.memPitch));
  std::printf("maxThreadsPerBlock = %lld\n", static_cast<long long>(p.maxThreadsPerBlock));
  for (int i = 0; i < 3; ++i) std::printf("maxThreadsDim[%d] = %lld\n", i, static_cast<long long>(p.maxThreadsDim[i]));
  for (int i = 0; i < 3; ++i) std::printf("maxGridSize[%d] = %lld\n", i, static_cast<long long>(p.maxGridSize[i]));
  std::printf("totalConstMem = %lld\n", static_cast<long long>(p.totalConstMem));
  std::printf("major = %lld\n", static_cast<long long>(p.major));
  std::printf("minor = %lld\n", static_cast<long long>(p.minor));
  std::printf("textureAlignment = %lld\n", static_cast<long long>(p.textureAlignment));
  std::printf("texturePitchAlignment = %lld\n", static_cast<long long>(p.texturePitchAlignment));
  std::printf("multiProcessorCount = %lld\n", static_cast<long long>(p.multiProcessorCount));
  std::printf("integrated = %lld\n", static_cast<long long>(p.integrated));
  std::printf("canMapHostMemory = %lld\n", static_cast<long long>(p.canMapHostMemory));
  std::printf("maxTexture1D = %lld\n", static_cast<long long>(p.maxTexture1D));
  std::printf("maxTexture1DMipmap = %lld\n", static_cast<long long>(p.maxTexture1DMipmap));
  for (int i = 0; i < 2; ++i) std::printf("maxTexture2D[%d] = %lld\n", i, static_cast<long long>(p.maxTexture2D[i]));
  for (int i = 0; i < 2; ++i) std::printf("maxTexture2DMipmap[%d] = %lld\n", i, static_cast<long long>(p.maxTexture2DMipmap[i]));
  for (int i = 0; i < 3; ++i) std::printf("maxTexture2DLinear[%d] = %lld\n", i, static_cast<long long>(p.maxTexture2DLinear[i]));
  for (int i = 0; i < 2; ++i) std::printf("maxTexture2DGather[%d] = %lld\n", i, static_cast<long long>(p.maxTexture2DGather[i]));
  for (int i = 0; i < 3; ++i) std::printf("maxTexture3D[%d] = %lld\n", i, static_cast<long long>(p.maxTexture3D[i]));
  for (int i = 0; i < 3; ++i) std::printf("maxTexture3DAlt[%d] = %lld\n", i, static_cast<long long>(p.maxTexture3DAlt[i]));
  std::printf("maxTextureCubemap = %lld\n", static_cast<long long>(p.maxTextureCubemap));
  for (int i = 0; i < 2; ++i) std::printf("maxTexture1DLayered[%d] = %lld\n", i, static_cast<long long>(p.maxTexture1DLayered[i]));
  for (int i = 0; i < 3; ++i) std::printf("maxTexture2DLayered[%d] = %lld\n", i, static_cast<long long>(p.maxTexture2DLayered[i]));
  for (int i = 0; i < 2; ++i) std::printf("maxTextureCubemapLayered[%d] = %lld\n", i, static_cast<long long>(p.maxTextureCubemapLayered[i]));
  std::printf("maxSurface1D = %lld\n", static_cast<long long>(p.maxSurface1D));
  for (int i = 0; i < 2; ++i) std::printf("maxSurface2D[%d] = %lld\n", i, static_cast<long long>(p.maxSurface2D[i]));
  for (int i = 0; i < 3; ++i) std::printf("maxSurface3D[%d] = %lld\n", i, static_cast<long long>(p.maxSurface3D[i]));
  for (int i = 0; i < 2; ++i) std::printf("maxSurface1DLayered[%d] = %lld\n", i, static_cast<long long>(p.maxSurface1DLayered[i]));
  for (int i = 0; i < 3; ++i) std::printf("maxSurface2DLayered[%d] = %lld\n", i, static_cast<long long>(p.maxSurface2DLayered[i]));
  std::printf("maxSurfaceCubemap = %lld\n", static_cast<long long>(p.maxSurfaceCubemap));
  for (int i = 0; i < 2; ++i) std::printf("maxSurfaceCubemapLayered[%d] = %lld\n", i, static_cast<long long>(p.maxSurfaceCubemapLayered[i]));
  std::printf("surfaceAlignment = %lld\n", static_cast<long long>(p.surfaceAlignment));
  std::printf("concurrentKernels = %lld\n", static_cast<long long>(p.concurrentKernels));
  std::printf("ECCEnabled = %lld\n", static_cast<long long>(p.ECCEnabled));
  std::printf("pciBusID = %lld\n", static_cast<long long>(p.pciBusID));
  std::printf("pciDeviceID = %lld\n", static_cast<long long>(p.pciDeviceID));
  std::printf("pciDomainID = %lld\n", static_cast<long long>(p.pciDomainID));
  std::printf("tccDriver = %lld\n", static_cast<long long>(p.tccDriver));
  std::printf("asyncEngineCount = %lld\n", static_cast<long long>(p.asyncEngineCount));
  std::printf("unifiedAddressing = %lld\n", static_cast<long long>(p.unifiedAddressing));
  std::printf("memoryBusWidth = %lld\n", static_cast<long long>(p.memoryBusWidth));
  std::printf("l2CacheSize = %lld\n", static_cast<long long>(p.l2CacheSize));
  std::printf("persistingL2CacheMaxSize = %lld\n", static_cast<long long>(p.persistingL2CacheMaxSize));
  std::printf("maxThreadsPerMultiProcessor = %lld\n", static_cast<long long>(p.maxThreadsPerMultiProcessor));
  std::printf("streamPrioritiesSupported = %lld\n", static_cast<long long>(p.streamPrioritiesSupported));
  std::printf("globalL1CacheSupported = %lld\n", static_cast<long long>(p.globalL1CacheSupported));
  std::printf("localL1CacheSupported = %lld\n", static_cast<long long>(p.localL1CacheSupported));
  std::printf("sharedMemPerMultiprocessor = %lld\n", static_cast<long long>(p.sharedMemPerMultiprocessor));
  std::printf("regsPerMultiprocessor = %lld\n", static_cast<long long>(p.regsPerMultiprocessor));
  std::printf("managedMemory = %lld\n", static_cast<long long>(p.managedMemory));
  std::printf("isMultiGpuBoard = %lld\n", static_cast<long long>(p.isMultiGpuBoard));
  std::printf("multiGpuBoardGroupID = %lld\n", static_cast<long long>(p.multiGpuBoardGroupID));
  std::printf("hostNativeAtomicSupported = %lld\n", static_cast<long long>(p.hostNativeAtomicSupported));
  std::printf("pageableMemoryAccess = %lld\n", static_cast<long long>(p.pageableMemoryAccess));
  std::printf("concurrentManagedAccess = %lld\n", static_cast<long long>(p.concurrentManagedAccess));
  std::printf("computePreemptionSupported = %lld\n", static_cast<long long>(p.computePreemptionSupported));
  std::printf("canUseHostPointerForRegisteredMem = %lld\n", static_cast<long long>(p.canUseHostPointerForRegisteredMem));
  std::printf("cooperativeLaunch = %lld\n", static_cast<long long>(p.cooperativeLaunch));
  std::printf("sharedMemPerBlockOptin = %lld\n", static_cast<long long>(p.sharedMemPerBlockOptin));
  std::printf("pageableMemoryAccessUsesHostPageTables = %lld\n", static_cast<long long>(p.pageableMemoryAccessUsesHostPageTables));
  std::printf("directManagedMemAccessFromHost = %lld\n", static_cast<long long>(p.directManagedMemAccessFromHost));
  std::printf("maxBlocksPerMultiProcessor = %lld\n", static_cast<long long>(p.maxBlocksPerMultiProcessor));
  std::printf("accessPolicyMaxWindowSize = %lld\n", static_cast<long long>(p.accessPolicyMaxWindowSize));
  std::printf("reservedSharedMemPerBlock = %lld\n", static_cast<long long>(p.reservedSharedMemPerBlock));
  std::printf("hostRegisterSupported = %lld\n", static_cast<long long>(p.hostRegisterSupported));
  std::printf("sparseCudaArraySupported = %lld\n", static_cast<long long>(p.sparseCudaArraySupported));
  std::printf("hostRegisterReadOnlySupported = %lld\n", static_cast<long long>(p.hostRegisterReadOnlySupported));
  std::printf("timelineSemaphoreInteropSupported = %lld\n", static_cast<long long>(p.timelineSemaphoreInteropSupported));
  std::printf("memoryPoolsSupported = %lld\n", static_cast<long long>(p.memoryPoolsSupported));
  std::printf("gpuDirectRDMASupported = %lld\n", static_cast<long long>(p.gpuDirectRDMASupported));
  std::printf("gpuDirectRDMAFlushWritesOptions = %lld\n", static_cast<long long>(p.gpuDirectRDMAFlushWritesOptions));
  std::printf("gpuDirectRDMAWritesOrdering = %lld\n", static_cast<long long>(p.gpuDirectRDMAWritesOrdering));
  std::printf("memoryPoolSupportedHandleTypes = %lld\n", static_cast<long long>(p.memoryPoolSupportedHandleTypes));
  std::printf("deferredMappingCudaArraySupported = %lld\n", static_cast<long long>(p.deferredMappingCudaArraySupported));
  std::printf("ipcEventSupported = %lld\n", static_cast<long long>(p.ipcEventSupported));
  std::printf("clusterLaunch = %lld\n", static_cast<long long>(p.clusterLaunch));
  std::printf("unifiedFunctionPointers = %lld\n", static_cast<long long>(p.unifiedFunctionPointers));
  std::printf("deviceNumaConfig = %lld\n", static_cast<long long>(p.deviceNumaConfig));
  std::printf("deviceNumaId = %lld\n", static_cast<long long>(p.deviceNumaId));
  std::printf("mpsEnabled = %lld\n", static_cast<long long>(p.mpsEnabled));
  std::printf("hostNumaId = %lld\n", static_cast<long long>(p.hostNumaId));
  std::printf("gpuPciDeviceID = %lld\n", static_cast<long long>(p.gpuPciDeviceID));
  std::printf("gpuPciSubsystemID = %lld\n", static_cast<long long>(p.gpuPciSubsystemID));
  std::printf("hostNumaMultinodeIpcSupported = %lld\n", static_cast<long long>(p.hostNumaMultinodeIpcSupported));
  for (int i = 0; i < 56; ++i) std::printf("reserved[%d] = %lld\n", i, static_cast<long long>(p.reserved[i]));
  return 0;
}
