// The per-thread context stack outlives the thread's own teardown: libraries call the driver from
// their thread_local destructors, from threads that are ending (NCCL's proxy threads), and from
// atexit handlers after the main thread's thread_locals are gone (NCCL's env plugin logs through
// cudaGetDevice from one, which crashed the driver: docs/nvml.md). Every TEST runs in a process of
// its own.
#include <gtest/gtest.h>

#include <cuda.h>

#include <cstdlib>
#include <thread>

namespace {

CUcontext primaryOf(CUdevice dev) {
  CUcontext ctx = nullptr;
  EXPECT_EQ(cuDevicePrimaryCtxRetain(&ctx, dev), CUDA_SUCCESS);
  return ctx;
}

// What a call from a thread_local destructor saw.
struct Seen {
  CUresult push = CUDA_ERROR_UNKNOWN, device = CUDA_ERROR_UNKNOWN, pop = CUDA_ERROR_UNKNOWN;
  CUdevice dev = -1;
  CUcontext popped = nullptr;
};
Seen gSeen;
CUcontext gCtx = nullptr;

struct CallsTheDriverWhenDestroyed {
  ~CallsTheDriverWhenDestroyed() {
    gSeen.push = cuCtxPushCurrent(gCtx);
    gSeen.device = cuCtxGetDevice_v2(&gSeen.dev, nullptr);
    gSeen.pop = cuCtxPopCurrent(&gSeen.popped);
  }
};

TEST(ContextTeardown, ThreadLocalDestructorsOfAnEndingThreadStillHaveAStack) {
  ASSERT_EQ(cuInit(0), CUDA_SUCCESS);
  gCtx = primaryOf(2);
  std::thread t([] {
    // Made before the thread's first driver call, so destroyed after anything the driver made
    // for the thread with thread_local storage.
    thread_local CallsTheDriverWhenDestroyed last;
    (void)last;
    CUcontext ctx = nullptr;
    EXPECT_EQ(cuCtxSetCurrent(primaryOf(1)), CUDA_SUCCESS);
    EXPECT_EQ(cuCtxGetCurrent(&ctx), CUDA_SUCCESS);
    EXPECT_NE(ctx, nullptr);
  });
  t.join();
  EXPECT_EQ(gSeen.push, CUDA_SUCCESS);
  EXPECT_EQ(gSeen.device, CUDA_SUCCESS);
  EXPECT_EQ(gSeen.dev, 2);
  EXPECT_EQ(gSeen.pop, CUDA_SUCCESS);
  EXPECT_EQ(gSeen.popped, gCtx);
}

void checkCurrentDeviceAtExit() {
  CUdevice dev = -1;
  // The main thread's stack still holds the context made current before exit().
  if (cuCtxGetDevice_v2(&dev, nullptr) != CUDA_SUCCESS || dev != 3) _exit(3);
  CUcontext popped = nullptr;
  if (cuCtxPopCurrent(&popped) != CUDA_SUCCESS || cuCtxPushCurrent(popped) != CUDA_SUCCESS) _exit(4);
  _exit(0);
}

void exitWithAContextCurrent() {
  if (cuInit(0) != CUDA_SUCCESS) _exit(1);
  CUcontext ctx = nullptr;
  if (cuDevicePrimaryCtxRetain(&ctx, 3) != CUDA_SUCCESS || cuCtxSetCurrent(ctx) != CUDA_SUCCESS) _exit(2);
  std::atexit(checkCurrentDeviceAtExit);
  std::exit(5);  // checkCurrentDeviceAtExit ends the process first, with its own status
}

TEST(ContextTeardown, AtexitHandlersSeeTheMainThreadsStack) {
  EXPECT_EXIT(exitWithAContextCurrent(), testing::ExitedWithCode(0), "");
}

}  // namespace
