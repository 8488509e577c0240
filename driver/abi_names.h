// cuda.h maps some base names to their newest symbols with macros (`#define cuCtxDestroy
// cuCtxDestroy_v2`). The translation units that define or list the older variants under their
// exact names include this after cuda.h to lift those mappings.
#pragma once

#include <cuda.h>
#include <cudaTypedefs.h>

// cudaTypedefs.h declares the types of some older variants only for NVIDIA's own build: the
// pre-3.2 cuMemAlloc, and the CUDA 5.5 linker calls (whose types are the 6.5 ones').
typedef CUresult(CUDAAPI* PFN_cuMemAlloc_v2000)(unsigned int* dptr, unsigned int bytesize);
typedef PFN_cuLinkCreate_v6050 PFN_cuLinkCreate_v5050;
typedef PFN_cuLinkAddData_v6050 PFN_cuLinkAddData_v5050;
typedef PFN_cuLinkAddFile_v6050 PFN_cuLinkAddFile_v5050;

#undef cuCtxCreate
#undef cuCtxDestroy
#undef cuCtxPopCurrent
#undef cuCtxPushCurrent
#undef cuDevicePrimaryCtxRelease
#undef cuDevicePrimaryCtxReset
#undef cuDevicePrimaryCtxSetFlags
#undef cuDeviceGetUuid
#undef cuGetProcAddress
#undef cuLinkAddData
#undef cuLinkAddFile
#undef cuLinkCreate
#undef cuMemAlloc
#undef cuStreamDestroy
#undef cuEventDestroy
#undef cuEventElapsedTime
#undef cuIpcOpenMemHandle
#undef cuStreamWaitValue32
#undef cuStreamWaitValue64
#undef cuStreamWriteValue32
#undef cuStreamWriteValue64
#undef cuStreamBatchMemOp
#undef cuStreamBeginCapture
#undef cuStreamGetCaptureInfo
#undef cuStreamUpdateCaptureDependencies
#undef cuGraphInstantiate
#undef cuGraphExecUpdate
#undef cuGraphAddKernelNode
#undef cuGraphKernelNodeGetParams
#undef cuGraphKernelNodeSetParams
#undef cuGraphExecKernelNodeSetParams
#undef cuGraphGetEdges
#undef cuGraphNodeGetDependencies
#undef cuGraphNodeGetDependentNodes
#undef cuGraphAddDependencies
#undef cuGraphRemoveDependencies

// In the driver's sources the lifted names are renamed again (driver/driver.h).
#ifdef MCSIM_DRIVER_IMPL
#include "mcsim_internal_names.h"
#endif

// The profiler calls' types are in a header of their own.
#include <cudaProfilerTypedefs.h>

// cudaTypedefs.h declares these older graph and capture variants' types only for NVIDIA's own build.
typedef CUresult(CUDAAPI* PFN_cuStreamBeginCapture_v10000)(CUstream hStream);
typedef CUresult(CUDAAPI* PFN_cuStreamBeginCapture_v10000_ptsz)(CUstream hStream);
typedef CUresult(CUDAAPI* PFN_cuGraphInstantiate_v10000)(CUgraphExec* phGraphExec, CUgraph hGraph,
                                                         CUgraphNode* phErrorNode, char* logBuffer, size_t bufferSize);
typedef CUresult(CUDAAPI* PFN_cuGraphInstantiate_v11000)(CUgraphExec* phGraphExec, CUgraph hGraph,
                                                         CUgraphNode* phErrorNode, char* logBuffer, size_t bufferSize);

// cudaTypedefs.h declares the CUDA 4.1 cuIpcOpenMemHandle's type only for NVIDIA's own build.
typedef CUresult(CUDAAPI* PFN_cuIpcOpenMemHandle_v4010)(CUdeviceptr_v2* pdptr, CUipcMemHandle_v1 handle,
                                                        unsigned int Flags);
