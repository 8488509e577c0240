// A queue of any length, and a polling loop of any length, are legal: neither may cost the process
// a resource per item. Each SystemC thread process has a coroutine stack of its own (an mmap with
// a guard page: two of the process's vm.max_map_count mappings, 65530 by default); when every
// queued operation was a process of its own, 40,000 queued cuMemsetD32Async aborted the simulator
// (SystemC E518 "stack setup failed"), and every cuEventRecord + cuEventQuery pair on an idle
// stream left a process behind (issue 19, item 3). The tests count the process's mappings in
// /proc/self/maps, which is what runs out, not time.
#include <cuda.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "tests/common/cu_expect.h"

namespace {

// The process's memory mappings now.
long mappings() {
  std::ifstream maps("/proc/self/maps");
  long n = 0;
  for (std::string line; std::getline(maps, line);) ++n;
  return n;
}

// Far fewer mappings than operations: each test makes thousands of operations, and a mapping per
// operation (or one per three, as before) overshoots this many times over.
constexpr long kMappingsAllowed = 400;

class QueueLength : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK(cuInit(0));
    ASSERT_OK(cuDevicePrimaryCtxRetain(&ctx_, 0));
    ASSERT_OK(cuCtxSetCurrent(ctx_));
    ASSERT_OK(cuMemAlloc(&buf_, 4096));
    // Whatever the first call of each kind sets up (the engine's thread and context, the first
    // process of its pool) is counted before, not as growth.
    CUstream s = nullptr;
    ASSERT_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    ASSERT_OK(cuMemsetD32Async(buf_, 1, 4, s));
    ASSERT_OK(cuStreamSynchronize(s));
    ASSERT_OK(cuStreamDestroy(s));
  }
  void TearDown() override {
    if (buf_ != 0) cuMemFree(buf_);
    if (ctx_ != nullptr) cuDevicePrimaryCtxRelease(0);
  }
  CUcontext ctx_ = nullptr;
  CUdeviceptr buf_ = 0;
};

// 30,000 memsets queued on one stream before one synchronisation: all run, in order, and the
// process's mappings stay where they were.
TEST_F(QueueLength, ALongQueueOnOneStreamCostsNoMappingPerOperation) {
  CUstream s = nullptr;
  ASSERT_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  const long before = mappings();
  constexpr uint32_t kOps = 30000;
  for (uint32_t i = 0; i < kOps; ++i) ASSERT_OK(cuMemsetD32Async(buf_ + 4 * (i % 16), i, 1, s));
  const long queued = mappings();
  ASSERT_OK(cuStreamSynchronize(s));
  EXPECT_LT(queued - before, kMappingsAllowed) << "mappings grew while " << kOps << " operations were queued";
  EXPECT_LT(mappings() - before, kMappingsAllowed);
  // Stream order: each word holds the last value written to it.
  uint32_t words[16] = {};
  ASSERT_OK(cuMemcpyDtoH(words, buf_, sizeof words));
  for (uint32_t w = 0; w < 16; ++w) EXPECT_EQ(kOps - 16 + w, words[w]) << "word " << w;
  ASSERT_OK(cuStreamDestroy(s));
}

// A completion-polling loop: record an event on an idle stream, query it, and (every other round)
// synchronise it. 20,000 rounds leave the mappings where they were.
TEST_F(QueueLength, RecordAndQueryOnAnIdleStreamLeaveNothingBehind) {
  CUstream s = nullptr;
  CUevent e = nullptr;
  ASSERT_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  ASSERT_OK(cuEventCreate(&e, 0));
  const long before = mappings();
  for (int i = 0; i < 20000; ++i) {
    ASSERT_OK(cuEventRecord(e, s));
    const CUresult q = cuEventQuery(e);
    ASSERT_TRUE(q == CUDA_SUCCESS || q == CUDA_ERROR_NOT_READY) << cutest::resultName(q);
    if (i % 2 == 0) {
      ASSERT_OK(cuEventSynchronize(e));
    }
  }
  ASSERT_OK(cuEventSynchronize(e));
  EXPECT_LT(mappings() - before, kMappingsAllowed);
  ASSERT_OK(cuEventDestroy(e));
  ASSERT_OK(cuStreamDestroy(s));
}

// Work on many streams at once runs side by side; past the engine's limit of processes running at
// once (model::Engine::kMaxWorkers, 1024) the rest waits its turn: 3,000 streams' memsets all run,
// with mappings bounded by the limit, not by the number of streams.
TEST_F(QueueLength, WorkOnThousandsOfStreamsIsBoundedByThePool) {
  constexpr int kStreams = 3000;
  CUdeviceptr words = 0;
  ASSERT_OK(cuMemAlloc(&words, 4 * kStreams));
  std::vector<CUstream> streams(kStreams);
  for (auto& s : streams) ASSERT_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  const long before = mappings();
  for (int i = 0; i < kStreams; ++i) {
    ASSERT_OK(cuMemsetD32Async(words + 4 * static_cast<CUdeviceptr>(i), static_cast<unsigned>(i) + 7, 1, streams[i]));
  }
  ASSERT_OK(cuCtxSynchronize());
  // Two mappings per process of the pool, and some for the heap.
  EXPECT_LT(mappings() - before, 2 * 1024 + kMappingsAllowed);
  std::vector<uint32_t> got(kStreams);
  ASSERT_OK(cuMemcpyDtoH(got.data(), words, 4 * kStreams));
  for (int i = 0; i < kStreams; ++i) ASSERT_EQ(static_cast<uint32_t>(i) + 7, got[static_cast<size_t>(i)]) << i;
  for (auto& s : streams) ASSERT_OK(cuStreamDestroy(s));
  ASSERT_OK(cuMemFree(words));
}

}  // namespace
