// Streams and events: handles, flags, order within a stream, order across streams through
// events, the legacy default stream's implicit order, and event timing. Shared with the real
// driver (docs/real-driver/): nothing here depends on how fast the device is.
#include "tests/conformance/conformance.h"

#include <vector>

namespace conformance {
namespace {

class StreamTest : public DriverTest {
 protected:
  static constexpr size_t kBytes = size_t{8} << 20;
  void SetUp() override {
    DriverTest::SetUp();
    ASSERT_OK(cuMemAlloc(&a, kBytes));
    ASSERT_OK(cuMemAlloc(&b, kBytes));
    ASSERT_OK(cuMemAllocHost(&host, kBytes));
  }
  void TearDown() override {
    cuMemFreeHost(host);
    cuMemFree(a);
    cuMemFree(b);
    DriverTest::TearDown();
  }
  // Whether every 32-bit word of the pinned buffer is `v`.
  bool hostIs(uint32_t v) const {
    const auto* w = static_cast<const uint32_t*>(host);
    for (size_t i = 0; i < kBytes / 4; ++i) {
      if (w[i] != v) return false;
    }
    return true;
  }
  CUdeviceptr a = 0, b = 0;
  void* host = nullptr;
};

TEST_F(StreamTest, CreateRefusesUnknownFlagsAndNullOutput) {
  CUstream s = nullptr;
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuStreamCreate(nullptr, 0));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuStreamCreate(&s, 0x8));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuStreamCreateWithPriority(&s, 0x8, 0));
}

TEST_F(StreamTest, FlagsContextAndDeviceReadBack) {
  CUstream s = nullptr;
  ASSERT_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  unsigned flags = 99;
  EXPECT_OK(cuStreamGetFlags(s, &flags));
  EXPECT_EQ(flags, unsigned{CU_STREAM_NON_BLOCKING});
  CUcontext c = nullptr;
  EXPECT_OK(cuStreamGetCtx(s, &c));
  EXPECT_EQ(c, ctx);
  CUdevice dev = -1;
  EXPECT_OK(cuStreamGetDevice(s, &dev));
  EXPECT_EQ(dev, 0);
  unsigned long long id1 = 0, id2 = 0;
  CUstream t = nullptr;
  ASSERT_OK(cuStreamCreate(&t, 0));
  EXPECT_OK(cuStreamGetId(s, &id1));
  EXPECT_OK(cuStreamGetId(t, &id2));
  EXPECT_NE(id1, id2);
  EXPECT_OK(cuStreamDestroy(t));
  EXPECT_OK(cuStreamDestroy(s));
}

TEST_F(StreamTest, PriorityRangeAndClamping) {
  int least = 99, greatest = 99;
  ASSERT_OK(cuCtxGetStreamPriorityRange(&least, &greatest));
  EXPECT_EQ(least, 0);       // as a real H100 and H200 report
  EXPECT_EQ(greatest, -5);
  CUstream hi = nullptr, lo = nullptr;
  ASSERT_OK(cuStreamCreateWithPriority(&hi, 0, -100));  // out of range: clamped
  ASSERT_OK(cuStreamCreateWithPriority(&lo, 0, 100));
  int p = 0;
  EXPECT_OK(cuStreamGetPriority(hi, &p));
  EXPECT_EQ(p, greatest);
  EXPECT_OK(cuStreamGetPriority(lo, &p));
  EXPECT_EQ(p, least);
  EXPECT_OK(cuStreamDestroy(hi));
  EXPECT_OK(cuStreamDestroy(lo));
}

TEST_F(StreamTest, OperationsOnOneStreamRunInOrder) {
  CUstream s = nullptr;
  ASSERT_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  ASSERT_OK(cuMemsetD32Async(a, 0x11111111u, kBytes / 4, s));
  ASSERT_OK(cuMemcpyDtoDAsync(b, a, kBytes, s));
  ASSERT_OK(cuMemsetD32Async(a, 0x22222222u, kBytes / 4, s));
  ASSERT_OK(cuMemcpyDtoHAsync(host, b, kBytes, s));
  ASSERT_OK(cuStreamSynchronize(s));
  EXPECT_OK(cuStreamQuery(s));
  EXPECT_TRUE(hostIs(0x11111111u));
  EXPECT_OK(cuStreamDestroy(s));
}

TEST_F(StreamTest, AnEventOrdersWorkAcrossStreams) {
  CUstream s1 = nullptr, s2 = nullptr;
  CUevent e = nullptr;
  ASSERT_OK(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
  ASSERT_OK(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
  ASSERT_OK(cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
  ASSERT_OK(cuMemsetD32Async(a, 0x33333333u, kBytes / 4, s1));
  ASSERT_OK(cuEventRecord(e, s1));
  ASSERT_OK(cuStreamWaitEvent(s2, e, 0));
  ASSERT_OK(cuMemcpyDtoHAsync(host, a, kBytes, s2));
  ASSERT_OK(cuStreamSynchronize(s2));
  EXPECT_TRUE(hostIs(0x33333333u));
  EXPECT_OK(cuEventQuery(e));
  EXPECT_OK(cuEventDestroy(e));
  EXPECT_OK(cuStreamDestroy(s1));
  EXPECT_OK(cuStreamDestroy(s2));
}

TEST_F(StreamTest, TheLegacyStreamWaitsForBlockingStreams) {
  CUstream s = nullptr;
  ASSERT_OK(cuStreamCreate(&s, CU_STREAM_DEFAULT));
  ASSERT_OK(cuMemsetD32Async(a, 0x44444444u, kBytes / 4, s));
  // A synchronous copy goes on the legacy stream, which waits for the blocking stream's work.
  ASSERT_OK(cuMemcpyDtoH(host, a, kBytes));
  EXPECT_TRUE(hostIs(0x44444444u));
  EXPECT_OK(cuStreamDestroy(s));
}

TEST_F(StreamTest, WaitingForAnEventNeverRecordedIsANoOp) {
  CUstream s = nullptr;
  CUevent e = nullptr;
  ASSERT_OK(cuStreamCreate(&s, 0));
  ASSERT_OK(cuEventCreate(&e, 0));
  EXPECT_OK(cuStreamWaitEvent(s, e, 0));
  EXPECT_OK(cuStreamSynchronize(s));
  EXPECT_OK(cuEventQuery(e));        // never recorded: complete
  EXPECT_OK(cuEventSynchronize(e));
  EXPECT_OK(cuEventDestroy(e));
  EXPECT_OK(cuStreamDestroy(s));
}

TEST_F(StreamTest, EventFlagsAreChecked) {
  CUevent e = nullptr;
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuEventCreate(nullptr, 0));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuEventCreate(&e, 0x80));
  // Interprocess events must not time.
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuEventCreate(&e, CU_EVENT_INTERPROCESS));
  ASSERT_OK(cuEventCreate(&e, CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING));
  EXPECT_OK(cuEventDestroy(e));
  CUstream s = nullptr;
  ASSERT_OK(cuStreamCreate(&s, 0));
  ASSERT_OK(cuEventCreate(&e, 0));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuStreamWaitEvent(s, e, 0x10));
  EXPECT_OK(cuEventDestroy(e));
  EXPECT_OK(cuStreamDestroy(s));
}

TEST_F(StreamTest, ElapsedTimeNeedsTwoRecordedTimingEvents) {
  CUevent start = nullptr, end = nullptr, untimed = nullptr;
  ASSERT_OK(cuEventCreate(&start, 0));
  ASSERT_OK(cuEventCreate(&end, 0));
  ASSERT_OK(cuEventCreate(&untimed, CU_EVENT_DISABLE_TIMING));
  float ms = -1;
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuEventElapsedTime(&ms, start, end));  // neither recorded
  ASSERT_OK(cuEventRecord(start, nullptr));
  ASSERT_OK(cuMemcpyDtoDAsync(b, a, kBytes, nullptr));
  ASSERT_OK(cuEventRecord(end, nullptr));
  ASSERT_OK(cuEventRecord(untimed, nullptr));
  ASSERT_OK(cuEventSynchronize(end));
  ASSERT_OK(cuEventSynchronize(untimed));
  EXPECT_OK(cuEventElapsedTime(&ms, start, end));
  EXPECT_GT(ms, 0.0f);
  float back = 0;
  EXPECT_OK(cuEventElapsedTime(&back, end, start));
  EXPECT_FLOAT_EQ(back, -ms);
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuEventElapsedTime(&ms, start, untimed));
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuEventElapsedTime(nullptr, start, end));  // as a real H100 answers
  EXPECT_OK(cuEventDestroy(start));
  EXPECT_OK(cuEventDestroy(end));
  EXPECT_OK(cuEventDestroy(untimed));
}

TEST_F(StreamTest, AnEventRecordsOnlyOnItsOwnContextsStreams) {
  CUevent e = nullptr;
  ASSERT_OK(cuEventCreate(&e, 0));
  CUcontext other = nullptr;
  ASSERT_OK(cuCtxCreate(&other, nullptr, 0, 0));
  CUstream s = nullptr;
  ASSERT_OK(cuStreamCreate(&s, 0));  // in `other`, now current
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuEventRecord(e, s));
  EXPECT_OK(cuStreamDestroy(s));
  EXPECT_OK(cuCtxDestroy(other));
  ASSERT_OK(cuCtxSetCurrent(ctx));
  EXPECT_OK(cuEventDestroy(e));
}

TEST_F(StreamTest, PerThreadStreamIsUsable) {
  ASSERT_OK(cuMemsetD32Async(a, 0x55555555u, kBytes / 4, CU_STREAM_PER_THREAD));
  ASSERT_OK(cuMemcpyDtoHAsync(host, a, kBytes, CU_STREAM_PER_THREAD));
  ASSERT_OK(cuStreamSynchronize(CU_STREAM_PER_THREAD));
  EXPECT_TRUE(hostIs(0x55555555u));
  ASSERT_OK(cuCtxSynchronize());
}

}  // namespace
}  // namespace conformance
