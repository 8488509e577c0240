/* The device-explicit multicast binds of the CUDA driver reference (cuMulticastBindMem_v2,
 * cuMulticastBindAddr_v2), declared with the reference's signatures for toolkits whose cuda.h
 * does not declare them yet (CUDA 13.0 does not). mcsim exports both; cuGetProcAddress resolves
 * them when the emulated driver version is 13010 (CUDA 13.1) or newer. */
#ifndef MCSIM_CUDA_MULTICAST_V2_H
#define MCSIM_CUDA_MULTICAST_V2_H

#include <cuda.h>

#ifdef __cplusplus
extern "C" {
#endif

#if CUDA_VERSION < 13010
CUresult CUDAAPI cuMulticastBindMem_v2(CUmemGenericAllocationHandle mcHandle, CUdevice dev, size_t mcOffset,
                                       CUmemGenericAllocationHandle memHandle, size_t memOffset, size_t size,
                                       unsigned long long flags);
CUresult CUDAAPI cuMulticastBindAddr_v2(CUmemGenericAllocationHandle mcHandle, CUdevice dev, size_t mcOffset,
                                        CUdeviceptr memptr, size_t size, unsigned long long flags);
#endif

/* Function-pointer types in cudaTypedefs.h's style, for cuGetProcAddress users. */
typedef CUresult(CUDAAPI* PFN_cuMulticastBindMem_v13010)(CUmemGenericAllocationHandle mcHandle, CUdevice dev,
                                                          size_t mcOffset, CUmemGenericAllocationHandle memHandle,
                                                          size_t memOffset, size_t size, unsigned long long flags);
typedef CUresult(CUDAAPI* PFN_cuMulticastBindAddr_v13010)(CUmemGenericAllocationHandle mcHandle, CUdevice dev,
                                                           size_t mcOffset, CUdeviceptr memptr, size_t size,
                                                           unsigned long long flags);

#ifdef __cplusplus
}
#endif

#endif
