// What a program leaves behind is reported at exit (MCSIM_LEAK_CHECK; docs/user-guide.md): a
// summary line by default, a line per object with `full`, a failing exit status with `error`,
// nothing with `off` or when nothing was left. Each case runs in a child process (a death test),
// since the report is made as the process ends; the child sets the variable before its cuInit.
#include <cuda.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>

#include "tests/common/cu_expect.h"
#include "tests/common/vmm_props.h"

namespace {

constexpr size_t k2M = 2u << 20;

// A context current on device 0 of a node built with MCSIM_LEAK_CHECK=`mode` (nullptr: unset).
void initWithLeakCheck(const char* mode) {
  if (mode != nullptr) {
    setenv("MCSIM_LEAK_CHECK", mode, 1);
  } else {
    unsetenv("MCSIM_LEAK_CHECK");
  }
  if (cuInit(0) != CUDA_SUCCESS) std::abort();
  CUcontext ctx = nullptr;
  if (cuDevicePrimaryCtxRetain(&ctx, 0) != CUDA_SUCCESS || cuCtxSetCurrent(ctx) != CUDA_SUCCESS) std::abort();
}

// Leaves one of most kinds behind: two cuMemAlloc allocations (1 MiB and 2 MiB), a pinned host
// buffer, a physical allocation handle mapped in a reservation, a multicast object, a created
// context, a stream and an event.
void leaveThingsBehind() {
  CUdeviceptr a = 0, b = 0;
  if (cuMemAlloc(&a, 1u << 20) != CUDA_SUCCESS || cuMemAlloc(&b, k2M) != CUDA_SUCCESS) std::abort();
  void* host = nullptr;
  if (cuMemAllocHost(&host, 4096) != CUDA_SUCCESS) std::abort();
  CUmemAllocationProp prop = cutest::devicePinned(1);
  CUmemGenericAllocationHandle h = 0;
  CUdeviceptr va = 0;
  if (cuMemCreate(&h, k2M, &prop, 0) != CUDA_SUCCESS || cuMemAddressReserve(&va, 2 * k2M, 0, 0, 0) != CUDA_SUCCESS ||
      cuMemMap(va, k2M, 0, h, 0) != CUDA_SUCCESS) {
    std::abort();
  }
  CUmulticastObjectProp mp = cutest::mcProp(2, k2M);
  CUmemGenericAllocationHandle mc = 0;
  if (cuMulticastCreate(&mc, &mp) != CUDA_SUCCESS) std::abort();
  CUstream s = nullptr;
  CUevent e = nullptr;
  if (cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS || cuEventCreate(&e, 0) != CUDA_SUCCESS) std::abort();
  CUcontext made = nullptr, popped = nullptr;
  if (cuCtxCreate(&made, nullptr, 0, 2) != CUDA_SUCCESS || cuCtxPopCurrent(&popped) != CUDA_SUCCESS) std::abort();
}

class LeakReport : public ::testing::Test {
 protected:
  void SetUp() override { GTEST_FLAG_SET(death_test_style, "threadsafe"); }
};

// The default: one line that counts each kind, memory with its bytes, and says how to list them.
TEST_F(LeakReport, ByDefaultOneLineCountsWhatWasLeft) {
  EXPECT_EXIT(
      {
        initWithLeakCheck(nullptr);
        leaveThingsBehind();
        std::exit(0);
      },
      ::testing::ExitedWithCode(0),
      "^mcsim: at exit the program still held 2 cuMemAlloc allocations \\(3 MiB\\), 1 pinned host allocation "
      "\\(4 KiB\\), 1 physical allocation handle \\(2 MiB\\), 1 multicast object handle \\(2 MiB\\), 1 mapping, "
      "1 address reservation, 1 context, 1 stream, 1 event \\(MCSIM_LEAK_CHECK=full lists them\\)\n$");
}

// `full` lists each object: its size, device and where it is.
TEST_F(LeakReport, FullListsEachObject) {
  EXPECT_EXIT(
      {
        initWithLeakCheck("full");
        leaveThingsBehind();
        std::exit(0);
      },
      ::testing::ExitedWithCode(0),
      "still held 2 cuMemAlloc allocations \\(3 MiB\\), .*, 1 event:\n"
      "mcsim:   cuMemAlloc allocation: 1 MiB on device 0 at 0x[0-9a-f]+\n"
      "mcsim:   cuMemAlloc allocation: 2 MiB on device 0 at 0x[0-9a-f]+\n"
      "mcsim:   pinned host allocation: 4 KiB at 0x[0-9a-f]+\n"
      "mcsim:   physical allocation handle: handle [0-9]+ of 2 MiB on device 1\n"
      "mcsim:   multicast object handle: handle [0-9]+ of 2 MiB\n"
      "mcsim:   mapping: 2 MiB at 0x[0-9a-f]+ on device 1\n"
      "mcsim:   address reservation: 4 MiB at 0x[0-9a-f]+\n"
      "mcsim:   context: id [0-9]+ on device 2\n"
      "mcsim:   stream: id [0-9]+ in context 1\n"
      "mcsim:   event: id [0-9]+ in context 1\n$");
}

// `error` fails the process, as compute-sanitizer's --error-exitcode does, after the list.
TEST_F(LeakReport, ErrorMakesTheExitStatusFail) {
  EXPECT_EXIT(
      {
        initWithLeakCheck("error");
        CUdeviceptr p = 0;
        if (cuMemAlloc(&p, 4096) != CUDA_SUCCESS) std::abort();
        std::exit(0);
      },
      ::testing::ExitedWithCode(1),
      "still held 1 cuMemAlloc allocation \\(4 KiB\\):\nmcsim:   cuMemAlloc allocation: 4 KiB on device 0");
}

// `off` says nothing, whatever was left.
TEST_F(LeakReport, OffSaysNothing) {
  EXPECT_EXIT(
      {
        initWithLeakCheck("off");
        leaveThingsBehind();
        std::fputs("done\n", stderr);
        std::exit(0);
      },
      ::testing::ExitedWithCode(0), "^done\n$");
}

// A program that gives everything back hears nothing, even with `error`: freed memory, unmapped
// and released VMM memory, a destroyed multicast object, stream, event and context are not
// counted, nor is the primary context the program retained (the runtime never releases it).
TEST_F(LeakReport, NothingLeftNothingSaid) {
  EXPECT_EXIT(
      {
        initWithLeakCheck("error");
        CUdeviceptr p = 0;
        void* host = nullptr;
        if (cuMemAlloc(&p, 4096) != CUDA_SUCCESS || cuMemFree(p) != CUDA_SUCCESS) std::abort();
        if (cuMemAllocHost(&host, 4096) != CUDA_SUCCESS || cuMemFreeHost(host) != CUDA_SUCCESS) std::abort();
        CUmemAllocationProp prop = cutest::devicePinned(0);
        CUmemGenericAllocationHandle h = 0;
        CUdeviceptr va = 0;
        if (cuMemCreate(&h, k2M, &prop, 0) != CUDA_SUCCESS || cuMemAddressReserve(&va, k2M, 0, 0, 0) != CUDA_SUCCESS ||
            cuMemMap(va, k2M, 0, h, 0) != CUDA_SUCCESS || cuMemUnmap(va, k2M) != CUDA_SUCCESS ||
            cuMemAddressFree(va, k2M) != CUDA_SUCCESS || cuMemRelease(h) != CUDA_SUCCESS) {
          std::abort();
        }
        CUmulticastObjectProp mp = cutest::mcProp(2, k2M);
        CUmemGenericAllocationHandle mc = 0;
        if (cuMulticastCreate(&mc, &mp) != CUDA_SUCCESS || cuMemRelease(mc) != CUDA_SUCCESS) std::abort();
        CUstream s = nullptr;
        CUevent e = nullptr;
        if (cuStreamCreate(&s, 0) != CUDA_SUCCESS || cuStreamDestroy(s) != CUDA_SUCCESS) std::abort();
        if (cuEventCreate(&e, 0) != CUDA_SUCCESS || cuEventDestroy(e) != CUDA_SUCCESS) std::abort();
        CUcontext made = nullptr;
        if (cuCtxCreate(&made, nullptr, 0, 0) != CUDA_SUCCESS || cuCtxDestroy(made) != CUDA_SUCCESS) std::abort();
        std::fputs("done\n", stderr);
        std::exit(0);
      },
      ::testing::ExitedWithCode(0), "^done\n$");
}

// What a context still held when it went is left behind too (compute-sanitizer counts memory
// still allocated when its context is destroyed): cuMemAlloc memory, pinned memory and streams of
// a destroyed context, and of a primary context reset; the CUDA runtime releases the primary
// contexts as the process exits, so this is how a runtime program's leaks show.
TEST_F(LeakReport, WhatAContextHeldWhenItWentIsLeft) {
  EXPECT_EXIT(
      {
        initWithLeakCheck("full");
        CUcontext made = nullptr;
        if (cuCtxCreate(&made, nullptr, 0, 1) != CUDA_SUCCESS) std::abort();
        CUdeviceptr p = 0;
        CUstream s = nullptr;
        void* host = nullptr;
        if (cuMemAlloc(&p, 4096) != CUDA_SUCCESS || cuStreamCreate(&s, 0) != CUDA_SUCCESS ||
            cuMemAllocHost(&host, 8192) != CUDA_SUCCESS) {
          std::abort();
        }
        if (cuCtxDestroy(made) != CUDA_SUCCESS) std::abort();
        if (cuMemAlloc(&p, 1u << 20) != CUDA_SUCCESS || cuDevicePrimaryCtxReset(0) != CUDA_SUCCESS) std::abort();
        std::exit(0);
      },
      ::testing::ExitedWithCode(0),
      "still held 2 cuMemAlloc allocations \\(1.0 MiB\\), 1 pinned host allocation \\(8 KiB\\), 1 stream:\n"
      "mcsim:   cuMemAlloc allocation: 4 KiB on device 1 at 0x[0-9a-f]+, still there when context [0-9]+ was destroyed\n"
      "mcsim:   cuMemAlloc allocation: 1 MiB on device 0 at 0x[0-9a-f]+, still there when context 1 was reset\n"
      "mcsim:   pinned host allocation: 8 KiB at 0x[0-9a-f]+, still there when context [0-9]+ was destroyed\n"
      "mcsim:   stream: id [0-9]+, still there when context [0-9]+ was destroyed\n$");
}

}  // namespace
