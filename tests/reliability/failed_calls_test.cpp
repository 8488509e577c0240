// A call that fails changes nothing, and a context destroyed while another thread makes memory or
// streams in it leaves nothing behind (issue 19, items 10 and 8), and an interprocess event's record
// on the node goes with the event.
#include <cuda.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "mcsim/api.h"
#include "tests/common/cu_expect.h"

namespace {

// cuMemAllocAsync of SIZE_MAX in a fresh process is refused, and the state digest does not move
// (the refused call used to make the default pools first, which the digest counted).
TEST(FailedCalls, AllocAsyncOfSizeMaxInAFreshProcessChangesNothing) {
  ASSERT_OK(cuInit(0));
  CUcontext ctx = nullptr;
  ASSERT_OK(cuDevicePrimaryCtxRetain(&ctx, 0));
  ASSERT_OK(cuCtxSetCurrent(ctx));
  const uint64_t before = mcsim::api::stateDigest();
  CUdeviceptr p = 0;
  EXPECT_NE(CUDA_SUCCESS, cuMemAllocAsync(&p, SIZE_MAX, nullptr));
  EXPECT_EQ(before, mcsim::api::stateDigest());
  // The pools a successful call then uses are the ones the digest described.
  ASSERT_OK(cuMemAllocAsync(&p, 4096, nullptr));
  ASSERT_OK(cuMemFreeAsync(p, nullptr));
  ASSERT_OK(cuStreamSynchronize(nullptr));
  ASSERT_OK(cuDevicePrimaryCtxRelease(0));
}

// Rounds of: a context made, a thread allocating device memory, pinned host memory, streams and
// events in it without pause, and the context destroyed under it. Whatever the thread got before
// the destroy went with the context; whatever it asked for after was refused. The node's counts
// are where they were before the rounds, and no stream or event of those contexts is still known
// (one still known answers CUDA_ERROR_CONTEXT_IS_DESTROYED, not CUDA_ERROR_INVALID_HANDLE).
TEST(ContextDestroyRace, WhatIsMadeInADyingContextGoesWithIt) {
  ASSERT_OK(cuInit(0));
  CUdevice dev = 0;
  ASSERT_OK(cuDeviceGet(&dev, 0));
  const mcsim::api::NodeStats before = mcsim::api::nodeStats();
  std::vector<CUstream> streams;
  std::vector<CUevent> events;
  for (int round = 0; round < 200; ++round) {
    CUcontext c = nullptr;
    ASSERT_OK(cuCtxCreate(&c, nullptr, 0, dev));
    CUcontext popped = nullptr;
    ASSERT_OK(cuCtxPopCurrent(&popped));
    std::atomic<int> made{0};
    std::thread maker([&] {
      if (cuCtxSetCurrent(c) != CUDA_SUCCESS) return;
      for (int i = 0;; ++i) {
        CUresult r = CUDA_SUCCESS;
        switch (i % 4) {
          case 0: {
            CUdeviceptr p = 0;
            r = cuMemAlloc(&p, 4096);
            break;
          }
          case 1: {
            void* h = nullptr;
            r = cuMemAllocHost(&h, 4096);
            break;
          }
          case 2: {
            CUstream s = nullptr;
            r = cuStreamCreate(&s, CU_STREAM_NON_BLOCKING);
            if (r == CUDA_SUCCESS) streams.push_back(s);
            break;
          }
          default: {
            CUevent e = nullptr;
            r = cuEventCreate(&e, 0);
            if (r == CUDA_SUCCESS) events.push_back(e);
            break;
          }
        }
        if (r != CUDA_SUCCESS) break;  // the context is gone
        made.fetch_add(1);
      }
    });
    // Destroyed while the thread is at it: it has made something, and goes on.
    while (made.load() < 2) std::this_thread::yield();
    ASSERT_OK(cuCtxDestroy(c));
    maker.join();
  }
  const mcsim::api::NodeStats after = mcsim::api::nodeStats();
  EXPECT_EQ(before.allocations, after.allocations);
  EXPECT_EQ(before.mappings, after.mappings);
  EXPECT_EQ(before.reservations, after.reservations);
  EXPECT_EQ(before.hostAllocations, after.hostAllocations);
  size_t known = 0;
  for (CUstream s : streams) known += cuStreamQuery(s) != CUDA_ERROR_INVALID_HANDLE ? 1 : 0;
  for (CUevent e : events) known += cuEventQuery(e) != CUDA_ERROR_INVALID_HANDLE ? 1 : 0;
  EXPECT_EQ(0u, known) << "streams and events of destroyed contexts still known";
}

// An interprocess event's record on the node lives as long as the event: opening its handle in
// the process that made it answers CUDA_ERROR_INVALID_CONTEXT while the node knows it, and
// CUDA_ERROR_MAP_FAILED (a handle that names no event) once it is gone. Destroying the event
// ends it; so does destroying its context (which used to leave the node's record behind until the
// process exited); an event destroyed while another call uses it keeps it until that call returns
// (races.HandleRace.IpcEventDestroyedWhileUsed: such a call used to find the record gone and
// answer CUDA_ERROR_INVALID_VALUE).
TEST(SharedEvents, TheNodesRecordGoesWithTheEventOrItsContext) {
  ASSERT_OK(cuInit(0));
  CUcontext primary = nullptr;
  ASSERT_OK(cuDevicePrimaryCtxRetain(&primary, 0));
  ASSERT_OK(cuCtxSetCurrent(primary));
  const unsigned flags = CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING;
  CUevent e = nullptr, opened = nullptr;
  CUipcEventHandle h{};
  ASSERT_OK(cuEventCreate(&e, flags));
  ASSERT_OK(cuIpcGetEventHandle(&h, e));
  EXPECT_EQ(CUDA_ERROR_INVALID_CONTEXT, cuIpcOpenEventHandle(&opened, h));
  ASSERT_OK(cuEventDestroy(e));
  EXPECT_EQ(CUDA_ERROR_MAP_FAILED, cuIpcOpenEventHandle(&opened, h));

  CUcontext c = nullptr;
  ASSERT_OK(cuCtxCreate(&c, nullptr, 0, 0));
  ASSERT_OK(cuEventCreate(&e, flags));
  ASSERT_OK(cuIpcGetEventHandle(&h, e));
  ASSERT_OK(cuCtxDestroy(c));
  ASSERT_OK(cuCtxSetCurrent(primary));
  EXPECT_EQ(CUDA_ERROR_MAP_FAILED, cuIpcOpenEventHandle(&opened, h));
  ASSERT_OK(cuDevicePrimaryCtxRelease(0));
}

// A value no enumerator of this cuda.h names, where the C ABI takes an enum: refused by the entry
// point's range check, with nothing written (an application built against a newer cuda.h passes
// such values). The replay fuzzer's first finding was UndefinedBehaviorSanitizer's enum check on
// this call (a trace asking for attribute 759); the sanitizer builds leave that check out
// (-fno-sanitize=enum in CMakeLists.txt), because the driver relies on what GCC and clang define.
TEST(FailedCalls, EnumValuesNoEnumeratorNamesAreRefused) {
  ASSERT_OK(cuInit(0));
  for (int a : {759, 1 << 20, -7}) {
    int v = -12345;
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuDeviceGetAttribute(&v, static_cast<CUdevice_attribute>(a), 0)) << a;
    EXPECT_EQ(-12345, v);
  }
}

}  // namespace
