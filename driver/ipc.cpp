// IPC handles of events (cuIpcGetEventHandle, cuIpcOpenEventHandle): an event made with
// CU_EVENT_INTERPROCESS keeps its record point on the node (stream.h, sharedKey), so that a record
// in one process is what a wait in another waits for. Opening one in the process that made it is
// CUDA_ERROR_INVALID_CONTEXT too (HIP pull request 1984, run against CUDA 10: "invalid device
// context" (201); PyTorch pull request 15974); an event made without the flag has no handle
// (CUDA_ERROR_INVALID_HANDLE, as HIP's port of the check answers, HIP pull request 2882).
//
// IPC handles of cuMemAlloc memory (cuIpcGetMemHandle, cuIpcOpenMemHandle, cuIpcCloseMemHandle):
// a process exports an allocation as 64 bytes that another process attached to the same node
// opens, mapping the same memory at an address of its own. The node keeps the handle and the
// mappings (fabric/node_ops.def, ipcExportMemory ...), with the FABRIC handles' encoding, so the
// bytes name the allocation on this node only.
//
// What the real driver answers (docs/runtime.md, "IPC"): opening a handle in the process that
// exported it is CUDA_ERROR_INVALID_CONTEXT ("invalid device context"; UCX pull request 11603,
// DALI issue 4817); bytes that name no allocation (never exported, another node's, freed) are
// CUDA_ERROR_INVALID_VALUE (NCCL issue 842: "invalid argument" for a handle never made); memory
// not made by cuMemAlloc (a pool's, cudarc issue 521) is CUDA_ERROR_INVALID_VALUE at export;
// flags other than CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS are CUDA_ERROR_INVALID_VALUE. Every call
// needs a current context. In the opening process the memory's CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL
// is the opening context's device, whichever GPU holds it and whether or not CUDA_VISIBLE_DEVICES
// lets the process see that GPU (four H200s, 580.159.04: docs/real-driver/h200x4-visible-2026-11-29.txt).
#include <cstring>

#include "driver/context.h"
#include "driver/driver.h"
#include "driver/memory.h"
#include "driver/stream.h"

using namespace mcsim::driver;

namespace {

CUresult requireContext() {
  CUctx_st* ctx = nullptr;
  return currentContext(&ctx);
}

}  // namespace

#include "driver/abi_names.h"

extern "C" {

CUresult CUDAAPI cuIpcGetMemHandle(CUipcMemHandle* pHandle, CUdeviceptr dptr) {
  MCSIM_REQUIRE_INIT();
  if (pHandle == nullptr) return CUDA_ERROR_INVALID_VALUE;
  MCSIM_TRY(requireContext());
  uint8_t bytes[64] = {};
  MCSIM_TRY(toResult(node().ipcExportMemory(dptr, bytes)));
  static_assert(sizeof(pHandle->reserved) == sizeof bytes, "CUipcMemHandle is 64 bytes");
  std::memcpy(pHandle->reserved, bytes, sizeof bytes);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuIpcOpenMemHandle_v2(CUdeviceptr* pdptr, CUipcMemHandle handle, unsigned int Flags) {
  MCSIM_REQUIRE_INIT();
  // The CUDA reference: Flags "must be specified as CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS"; a real H100
  // refuses 0 with CUDA_ERROR_INVALID_VALUE before it looks at the handle (docs/real-driver.md).
  if (pdptr == nullptr || Flags != CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) return CUDA_ERROR_INVALID_VALUE;
  CUctx_st* ctx = nullptr;
  MCSIM_TRY(currentContext(&ctx));
  uint8_t bytes[64];
  std::memcpy(bytes, handle.reserved, sizeof bytes);
  uint64_t va = 0;
  MCSIM_TRY(toResult(node().ipcOpenMemory(bytes, &va)));
  noteIpcOpened(va, ctx->device);
  *pdptr = va;
  return CUDA_SUCCESS;
}

// The CUDA 4.1 variant: the same call.
CUresult CUDAAPI cuIpcOpenMemHandle(CUdeviceptr* pdptr, CUipcMemHandle handle, unsigned int Flags) {
  return cuIpcOpenMemHandle_v2(pdptr, handle, Flags);
}

CUresult CUDAAPI cuIpcGetEventHandle(CUipcEventHandle* pHandle, CUevent event) {
  MCSIM_REQUIRE_INIT();
  if (pHandle == nullptr) return CUDA_ERROR_INVALID_VALUE;
  EventRef ev;
  MCSIM_TRY(checkEvent(event, &ev));
  // Only an event made with CU_EVENT_INTERPROCESS has a handle.
  if (ev->sharedKey == 0) return CUDA_ERROR_INVALID_HANDLE;
  uint8_t bytes[64] = {};
  MCSIM_TRY(toResult(node().ipcEventExport(ev->sharedKey, bytes)));
  static_assert(sizeof(pHandle->reserved) == sizeof bytes, "CUipcEventHandle is 64 bytes");
  std::memcpy(pHandle->reserved, bytes, sizeof bytes);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuIpcOpenEventHandle(CUevent* phEvent, CUipcEventHandle handle) {
  MCSIM_REQUIRE_INIT();
  if (phEvent == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUctx_st* ctx = nullptr;
  MCSIM_TRY(currentContext(&ctx));
  uint8_t bytes[64];
  std::memcpy(bytes, handle.reserved, sizeof bytes);
  uint64_t key = 0;
  const auto opened = node().ipcEventOpen(bytes, &key);
  // A handle that names no event the node knows: the real driver cannot map the event's shared
  // memory and answers CUDA_ERROR_MAP_FAILED (an all-zero handle, H100, 580.159.04).
  if (opened == decltype(opened)::kInvalidValue) return CUDA_ERROR_MAP_FAILED;
  MCSIM_TRY(toResult(opened));
  return adoptSharedEvent(ctx, key, phEvent);
}

CUresult CUDAAPI cuIpcCloseMemHandle(CUdeviceptr dptr) {
  MCSIM_REQUIRE_INIT();
  MCSIM_TRY(requireContext());
  MCSIM_TRY(toResult(node().ipcCloseMemory(dptr)));
  forgetIpcOpened(dptr);
  return CUDA_SUCCESS;
}

}  // extern "C"
