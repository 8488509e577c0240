// IPC handles within one process: what the driver answers to the exporting process itself and to
// bad arguments. Opening across processes (the point of IPC) is checked by tests/runtime/rt_ipc.cu
// on a shared node and on a real GPU. The expectations and their sources: docs/runtime.md, "IPC".
#include <cstring>

#include "tests/conformance/conformance.h"

namespace {

using Ipc = conformance::DriverTest;
using IpcNoContext = conformance::InitTest;

TEST_F(Ipc, MemHandleOfCuMemAllocMemoryIsSixtyFourBytesNotAllZero) {
  CUdeviceptr d = 0;
  ASSERT_OK(cuMemAlloc(&d, 1 << 20));
  CUipcMemHandle h;
  std::memset(&h, 0, sizeof h);
  ASSERT_OK(cuIpcGetMemHandle(&h, d));
  bool nonzero = false;
  for (char c : h.reserved) nonzero = nonzero || c != 0;
  EXPECT_TRUE(nonzero);
  // The same allocation exports again.
  CUipcMemHandle again;
  EXPECT_OK(cuIpcGetMemHandle(&again, d));
  EXPECT_OK(cuMemFree(d));
}

TEST_F(Ipc, OpeningAHandleInTheProcessThatMadeItIsAnInvalidContext) {
  CUdeviceptr d = 0;
  ASSERT_OK(cuMemAlloc(&d, 1 << 20));
  CUipcMemHandle h;
  ASSERT_OK(cuIpcGetMemHandle(&h, d));
  CUdeviceptr opened = 0;
  EXPECT_CU(CUDA_ERROR_INVALID_CONTEXT, cuIpcOpenMemHandle(&opened, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
  // Flags must be CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS: 0 is refused before the handle is looked at.
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuIpcOpenMemHandle(&opened, h, 0));
  EXPECT_EQ(0u, opened);
  EXPECT_OK(cuMemFree(d));
}

TEST_F(Ipc, BadArgumentsAreRefused) {
  CUdeviceptr d = 0;
  ASSERT_OK(cuMemAlloc(&d, 1 << 20));
  CUipcMemHandle h;
  ASSERT_OK(cuIpcGetMemHandle(&h, d));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuIpcGetMemHandle(nullptr, d));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuIpcGetMemHandle(&h, 0));
  int onHost = 0;
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuIpcGetMemHandle(&h, reinterpret_cast<CUdeviceptr>(&onHost)));
  CUdeviceptr opened = 0;
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuIpcOpenMemHandle(nullptr, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuIpcOpenMemHandle(&opened, h, 2));
  // Bytes no allocation answers to.
  CUipcMemHandle zero;
  std::memset(&zero, 0, sizeof zero);
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuIpcOpenMemHandle(&opened, zero, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
  // An address no open returned.
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuIpcCloseMemHandle(d));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuIpcCloseMemHandle(0));
  EXPECT_OK(cuMemFree(d));
}

TEST_F(Ipc, PoolMemoryHasNoIpcHandle) {
  CUdeviceptr d = 0;
  ASSERT_OK(cuMemAllocAsync(&d, 1 << 20, nullptr));
  ASSERT_OK(cuStreamSynchronize(nullptr));
  CUipcMemHandle h;
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuIpcGetMemHandle(&h, d));
  EXPECT_OK(cuMemFreeAsync(d, nullptr));
  EXPECT_OK(cuStreamSynchronize(nullptr));
}

TEST_F(Ipc, EventHandlesOnlyForInterprocessEventsAndNotInTheirOwnProcess) {
  CUevent plain = nullptr, shared = nullptr;
  ASSERT_OK(cuEventCreate(&plain, CU_EVENT_DISABLE_TIMING));
  CUipcEventHandle h;
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuIpcGetEventHandle(&h, plain));
  ASSERT_OK(cuEventCreate(&shared, CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING));
  ASSERT_OK(cuIpcGetEventHandle(&h, shared));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuIpcGetEventHandle(nullptr, shared));
  CUevent opened = nullptr;
  EXPECT_CU(CUDA_ERROR_INVALID_CONTEXT, cuIpcOpenEventHandle(&opened, h));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuIpcOpenEventHandle(nullptr, h));
  CUipcEventHandle zero;
  std::memset(&zero, 0, sizeof zero);
  EXPECT_CU(CUDA_ERROR_MAP_FAILED, cuIpcOpenEventHandle(&opened, zero));  // as a real H100 answers
  // The interprocess event records and synchronizes as any other.
  ASSERT_OK(cuEventRecord(shared, nullptr));
  EXPECT_OK(cuEventSynchronize(shared));
  EXPECT_OK(cuEventQuery(shared));
  EXPECT_OK(cuEventDestroy(shared));
  EXPECT_OK(cuEventDestroy(plain));
}

TEST_F(IpcNoContext, EveryCallNeedsACurrentContext) {
  CUipcMemHandle h;
  std::memset(&h, 0, sizeof h);
  CUdeviceptr opened = 0;
  EXPECT_CU(CUDA_ERROR_INVALID_CONTEXT, cuIpcGetMemHandle(&h, 0x1000));
  EXPECT_CU(CUDA_ERROR_INVALID_CONTEXT, cuIpcOpenMemHandle(&opened, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
  EXPECT_CU(CUDA_ERROR_INVALID_CONTEXT, cuIpcCloseMemHandle(0x1000));
}

}  // namespace
