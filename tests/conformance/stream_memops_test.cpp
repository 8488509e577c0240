// Stream memory operations (cuStreamWaitValue32/64, cuStreamWriteValue32/64, cuStreamBatchMemOp):
// writes and waits in stream order, a wait released by another stream's write, the comparisons,
// and what the driver answers to bad arguments and to what the device does not support. A wait
// whose value never comes hangs a real GPU; mcsim's answer to it is in mcsim_only_test.cpp.
#include <cstring>
#include <string>

#include "tests/conformance/conformance.h"

namespace {

class StreamMemOps : public conformance::DriverTest {
 protected:
  void SetUp() override {
    DriverTest::SetUp();
    ASSERT_OK(cuMemAlloc(&words, 64));
    ASSERT_OK(cuMemsetD8(words, 0, 64));
    ASSERT_OK(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING));
    ASSERT_OK(cuStreamCreate(&b, CU_STREAM_NON_BLOCKING));
  }
  void TearDown() override {
    cuStreamDestroy(a);
    cuStreamDestroy(b);
    cuMemFree(words);
    DriverTest::TearDown();
  }
  int attribute(CUdevice_attribute attr) {
    int v = -1;
    EXPECT_OK(cuDeviceGetAttribute(&v, attr, 0));
    return v;
  }
  uint32_t word32(size_t offset) {
    uint32_t v = 0;
    EXPECT_OK(cuMemcpyDtoH(&v, words + offset, 4));
    return v;
  }
  uint64_t word64(size_t offset) {
    uint64_t v = 0;
    EXPECT_OK(cuMemcpyDtoH(&v, words + offset, 8));
    return v;
  }
  CUdeviceptr words = 0;
  CUstream a = nullptr, b = nullptr;
};

TEST_F(StreamMemOps, AWaitHoldsItsStreamUntilAnotherStreamWrites) {
  ASSERT_OK(cuStreamWaitValue32(a, words, 1, CU_STREAM_WAIT_VALUE_GEQ));
  ASSERT_OK(cuStreamWriteValue32(a, words + 4, 7, CU_STREAM_WRITE_VALUE_DEFAULT));
  EXPECT_CU(CUDA_ERROR_NOT_READY, cuStreamQuery(a));
  EXPECT_EQ(0u, word32(4));
  ASSERT_OK(cuStreamWriteValue32(b, words, 1, CU_STREAM_WRITE_VALUE_DEFAULT));
  ASSERT_OK(cuStreamSynchronize(a));
  EXPECT_EQ(7u, word32(4));
  EXPECT_OK(cuStreamQuery(b));
}

TEST_F(StreamMemOps, ACopyFromTheHostReleasesAWait) {
  ASSERT_OK(cuStreamWaitValue64(a, words + 8, 0x100000000ull, CU_STREAM_WAIT_VALUE_EQ));
  // cuda.h: NO_MEMORY_BARRIER "is not supported in the v2 API" (the real H100 refuses it).
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE,
            cuStreamWriteValue64(a, words + 16, 1, CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER));
  ASSERT_OK(cuStreamWriteValue64(a, words + 16, 0xabcdef0123456789ull, CU_STREAM_WRITE_VALUE_DEFAULT));
  const uint64_t v = 0x100000000ull;
  ASSERT_OK(cuMemcpyHtoD(words + 8, &v, 8));
  ASSERT_OK(cuStreamSynchronize(a));
  EXPECT_EQ(0xabcdef0123456789ull, word64(16));
}

TEST_F(StreamMemOps, TheComparisons) {
  ASSERT_OK(cuStreamWriteValue32(a, words, 5, 0));
  ASSERT_OK(cuStreamWaitValue32(a, words, 5, CU_STREAM_WAIT_VALUE_EQ));
  ASSERT_OK(cuStreamWaitValue32(a, words, 4, CU_STREAM_WAIT_VALUE_AND));            // 5 & 4
  ASSERT_OK(cuStreamWaitValue32(a, words, 0xfffffff0u, CU_STREAM_WAIT_VALUE_GEQ));  // cyclic: 5 - (-16) >= 0
  if (attribute(CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR) != 0) {
    ASSERT_OK(cuStreamWaitValue32(a, words, 0xfffffff0u, CU_STREAM_WAIT_VALUE_NOR));  // ~(5 | ~15) = 10
  }
  ASSERT_OK(cuStreamWriteValue32(a, words + 4, 1, 0));
  ASSERT_OK(cuStreamSynchronize(a));
  EXPECT_EQ(1u, word32(4));
}

TEST_F(StreamMemOps, ABatchRunsInOrder) {
  CUstreamBatchMemOpParams ops[3];
  std::memset(ops, 0, sizeof ops);
  ops[0].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_32;
  ops[0].writeValue.address = words;
  ops[0].writeValue.value = 3;
  ops[1].waitValue.operation = CU_STREAM_MEM_OP_WAIT_VALUE_32;
  ops[1].waitValue.address = words;
  ops[1].waitValue.value = 3;
  ops[1].waitValue.flags = CU_STREAM_WAIT_VALUE_EQ;
  ops[2].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_64;
  ops[2].writeValue.address = words + 8;
  ops[2].writeValue.value64 = 0x1122334455667788ull;
  ASSERT_OK(cuStreamBatchMemOp(a, 3, ops, 0));
  ASSERT_OK(cuStreamSynchronize(a));
  EXPECT_EQ(3u, word32(0));
  EXPECT_EQ(0x1122334455667788ull, word64(8));
}

TEST_F(StreamMemOps, BadArgumentsAreRefusedAndChangeNothing) {
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuStreamWaitValue32(a, words, 1, 0x10));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuStreamWaitValue32(a, words + 2, 1, 0));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuStreamWaitValue64(a, words + 4, 1, 0));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuStreamWriteValue32(a, words, 1, 2));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuStreamWriteValue64(a, words + 4, 1, 0));
#ifndef MCSIM_CONFORMANCE_REAL
  // From here on mcsim only: the real driver (H100, 580.159.04) crashed the process on one of the
  // calls below (a NULL address or batch, or an unknown operation); mcsim answers them.
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuStreamWaitValue32(a, 0, 1, 0));
  CUstreamBatchMemOpParams ops[2];
  std::memset(ops, 0, sizeof ops);
  ops[0].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_32;
  ops[0].writeValue.address = words;
  ops[0].writeValue.value = 9;
  ops[1].operation = static_cast<CUstreamBatchMemOpType>(99);
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuStreamBatchMemOp(a, 2, ops, 0));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuStreamBatchMemOp(a, 1, ops, 1));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuStreamBatchMemOp(a, 1, nullptr, 0));
#endif
  ASSERT_OK(cuStreamSynchronize(a));
  EXPECT_EQ(0u, word32(0));  // the batch's first write was not queued
}

TEST_F(StreamMemOps, WhatTheDeviceDoesNotSupport) {
  if (attribute(CU_DEVICE_ATTRIBUTE_CAN_FLUSH_REMOTE_WRITES) == 0) {
    EXPECT_CU(CUDA_ERROR_NOT_SUPPORTED, cuStreamWaitValue32(a, words, 0, CU_STREAM_WAIT_VALUE_FLUSH));
  }
  // The CUDA 8 symbols (the v1 API) need CAN_USE_STREAM_MEM_OPS_V1, which an H100 lacks.
  void* fn = nullptr;
  CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  ASSERT_OK(cuGetProcAddress("cuStreamWaitValue32", &fn, 8000, CU_GET_PROC_ADDRESS_DEFAULT, &found));
  ASSERT_NE(nullptr, fn);
  auto waitV1 = reinterpret_cast<CUresult(CUDAAPI*)(CUstream, CUdeviceptr, cuuint32_t, unsigned int)>(fn);
  if (attribute(CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_MEM_OPS_V1) == 0) {
    EXPECT_CU(CUDA_ERROR_NOT_SUPPORTED, waitV1(a, words, 0, CU_STREAM_WAIT_VALUE_GEQ));
  } else {
    EXPECT_OK(waitV1(a, words, 0, CU_STREAM_WAIT_VALUE_GEQ));
  }
  ASSERT_OK(cuStreamSynchronize(a));
}

}  // namespace

#ifndef MCSIM_CONFORMANCE_REAL
namespace {

// A wait whose value never comes hangs a real GPU's stream for good. On mcsim, with every thread
// of the program waiting for it, the wait is given up with a report naming it, as for a kernel
// that waits forever: the synchronize fails with CUDA_ERROR_LAUNCH_TIMEOUT and the context keeps
// that error.
TEST_F(StreamMemOps, AValueThatNeverComesIsReportedNotHung) {
  ASSERT_OK(cuStreamWaitValue32(a, words, 5, CU_STREAM_WAIT_VALUE_EQ));
  testing::internal::CaptureStderr();
  EXPECT_CU(CUDA_ERROR_LAUNCH_TIMEOUT, cuStreamSynchronize(a));
  const std::string report = testing::internal::GetCapturedStderr();
  EXPECT_NE(report.find("deadlock"), std::string::npos) << report;
  EXPECT_NE(report.find("GPU 0: cuStreamWaitValue32 waits until the word at 0x"), std::string::npos) << report;
  EXPECT_NE(report.find("is == 0x5; it holds 0x0"), std::string::npos) << report;
  CUdeviceptr p = 0;
  EXPECT_CU(CUDA_ERROR_LAUNCH_TIMEOUT, cuMemAlloc(&p, 4096));
}

}  // namespace
#endif
