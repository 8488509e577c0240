// The driver call log (MCSIM_DEBUG; docs/user-guide.md, "Why a call failed"): `WARN` prints a
// line for each failing call with its arguments, its result and the rule it broke; `INFO` a line
// for every call, with what a successful call made; MCSIM_DEBUG_SUBSYS chooses calls by subsystem.
// The log is set up as libcuda.so.1 loads, so each case sets the variables and runs in a child
// that starts afresh (a death test in the threadsafe style re-executes the test binary, which
// inherits them).
#include <cuda.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>

#include "tests/common/vmm_props.h"

namespace {

constexpr size_t k2M = 2u << 20;

void setLog(const char* level, const char* subsys) {
  setenv("MCSIM_DEBUG", level, 1);
  if (subsys != nullptr) {
    setenv("MCSIM_DEBUG_SUBSYS", subsys, 1);
  } else {
    unsetenv("MCSIM_DEBUG_SUBSYS");
  }
  setenv("MCSIM_LEAK_CHECK", "off", 1);
}

// Binds memory made without a shareable handle type to a multicast object made with one: the
// bind is refused (INVALID_VALUE), the one failing call of the program.
void bindNonShareableMemory() {
  if (cuInit(0) != CUDA_SUCCESS) std::abort();
  CUmulticastObjectProp mp = cutest::mcProp(1, k2M, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  CUmemGenericAllocationHandle mc = 0;
  if (cuMulticastCreate(&mc, &mp) != CUDA_SUCCESS || cuMulticastAddDevice(mc, 0) != CUDA_SUCCESS) std::abort();
  CUmemAllocationProp prop = cutest::devicePinned(0);
  CUmemGenericAllocationHandle mem = 0;
  if (cuMemCreate(&mem, k2M, &prop, 0) != CUDA_SUCCESS) std::abort();
  if (cuMulticastBindMem(mc, 0, mem, 0, k2M, 0) != CUDA_ERROR_INVALID_VALUE) std::abort();
}

// Asks for a multicast object of 4 KiB, not a multiple of the granularity: refused by the driver's
// own argument check (INVALID_VALUE), the one failing call of the program.
void createUnalignedMulticastObject() {
  if (cuInit(0) != CUDA_SUCCESS) std::abort();
  CUmulticastObjectProp mp = cutest::mcProp(2, 4096);
  CUmemGenericAllocationHandle mc = 0;
  if (cuMulticastCreate(&mc, &mp) != CUDA_ERROR_INVALID_VALUE) std::abort();
}

class CallLog : public ::testing::Test {
 protected:
  void SetUp() override { GTEST_FLAG_SET(death_test_style, "threadsafe"); }
  void TearDown() override {
    unsetenv("MCSIM_DEBUG");
    unsetenv("MCSIM_DEBUG_SUBSYS");
    unsetenv("MCSIM_LEAK_CHECK");
    unsetenv("MCSIM_FAULTS");
  }
};

// WARN: the failing call alone, its arguments by name, its result and why.
TEST_F(CallLog, WarnNamesTheFailingCallAndTheRuleItBroke) {
  setLog("WARN", nullptr);
  EXPECT_EXIT(
      {
        bindNonShareableMemory();
        std::exit(0);
      },
      ::testing::ExitedWithCode(0),
      "^mcsim\\[[0-9]+\\] WARN cuMulticastBindMem\\(mcHandle=[0-9]+, mcOffset=0, memHandle=[0-9]+, memOffset=0, "
      "size=2097152, flags=0\\) = CUDA_ERROR_INVALID_VALUE: the multicast object has shareable handle types, and "
      "the memory was created with none \\(CUmemAllocationProp::requestedHandleTypes = 0\\)\n$");
}

// A check made before the node is reached says why too: here the driver's own argument check.
TEST_F(CallLog, WarnGivesTheArgumentRule) {
  setLog("WARN", nullptr);
  EXPECT_EXIT(
      {
        createUnalignedMulticastObject();
        std::exit(0);
      },
      ::testing::ExitedWithCode(0),
      "^mcsim\\[[0-9]+\\] WARN cuMulticastCreate\\(.*\\) = CUDA_ERROR_INVALID_VALUE: prop->size must be a nonzero "
      "multiple of the minimum multicast granularity \\(2097152 bytes\\)\n$");
}

// INFO: every call, in order, and what a successful one made.
TEST_F(CallLog, InfoLogsEveryCallWithWhatItMade) {
  setLog("INFO", nullptr);
  EXPECT_EXIT(
      {
        bindNonShareableMemory();
        std::exit(0);
      },
      ::testing::ExitedWithCode(0),
      "^mcsim\\[[0-9]+\\] INFO cuInit\\(Flags=0\\) = CUDA_SUCCESS\n"
      "mcsim\\[[0-9]+\\] INFO cuMulticastCreate\\(.*\\) = CUDA_SUCCESS -> mcHandle=[0-9]+\n"
      "mcsim\\[[0-9]+\\] INFO cuMulticastAddDevice\\(mcHandle=[0-9]+, dev=0\\) = CUDA_SUCCESS\n"
      "mcsim\\[[0-9]+\\] INFO cuMemCreate\\(.*\\) = CUDA_SUCCESS -> handle=[0-9]+\n"
      "mcsim\\[[0-9]+\\] WARN cuMulticastBindMem\\(.*\\) = CUDA_ERROR_INVALID_VALUE: the multicast object has "
      "shareable handle types.*\n$");
}

// MCSIM_DEBUG_SUBSYS chooses by subsystem: VMM alone keeps cuMemCreate; ^MULTICAST drops the
// failing bind, leaving nothing under WARN.
TEST_F(CallLog, SubsystemsChooseTheCalls) {
  setLog("INFO", "VMM");
  EXPECT_EXIT(
      {
        bindNonShareableMemory();
        std::exit(0);
      },
      ::testing::ExitedWithCode(0), "^mcsim\\[[0-9]+\\] INFO cuMemCreate\\(.*\\) = CUDA_SUCCESS -> handle=[0-9]+\n$");
}

TEST_F(CallLog, ACaretLogsAllButTheNamedSubsystems) {
  setLog("WARN", "^MULTICAST");
  EXPECT_EXIT(
      {
        bindNonShareableMemory();
        std::fputs("done\n", stderr);
        std::exit(0);
      },
      ::testing::ExitedWithCode(0), "^done\n$");
}

// A name the log does not know is said, with the names it knows; the others still count.
TEST_F(CallLog, AnUnknownSubsystemIsNamed) {
  setLog("WARN", "MULTICAST,NETWORK");
  EXPECT_EXIT(
      {
        bindNonShareableMemory();
        std::exit(0);
      },
      ::testing::ExitedWithCode(0),
      "^mcsim: MCSIM_DEBUG_SUBSYS: unknown subsystem 'NETWORK' \\(known: ALL, INIT, CTX, MEM, VMM, MULTICAST, "
      "STREAM, LAUNCH, GRAPH, IPC, OTHER\\)\n"
      "mcsim\\[[0-9]+\\] WARN cuMulticastBindMem\\(.*\\)");
}

// The driver is called after the calling thread's thread-local objects are destroyed: exit()
// destroys the main thread's before it runs the atexit handlers (the CUDA runtime's among them),
// and NCCL's proxy threads call it as they end. A failing call from an exit handler still gets its
// line and its reason (the reason used to live in a thread-local std::string, destroyed by then:
// the process died of a double free at exit).
void failAtExit() {
  CUdevice dev = 0;
  if (cuCtxGetDevice(&dev) != CUDA_ERROR_INVALID_CONTEXT) std::abort();
}

TEST_F(CallLog, AFailingCallFromAnExitHandlerIsLogged) {
  setLog("WARN", nullptr);
  EXPECT_EXIT(
      {
        if (cuInit(0) != CUDA_SUCCESS) std::abort();
        failAtExit();  // the reason's storage is made on this thread
        std::atexit(failAtExit);
        std::exit(0);
      },
      ::testing::ExitedWithCode(0),
      "^mcsim\\[[0-9]+\\] WARN cuCtxGetDevice\\(device=0x[0-9a-f]+\\) = CUDA_ERROR_INVALID_CONTEXT: no context is "
      "current on this thread.*\n"
      "mcsim\\[[0-9]+\\] WARN cuCtxGetDevice\\(device=0x[0-9a-f]+\\) = CUDA_ERROR_INVALID_CONTEXT: no context is "
      "current on this thread.*\n$");
}

// A check made only to look leaves no reason behind: with a fault plan in force every call asks
// for the current context to filter by device, and a thread without one must still hear the
// call's own rule, not "no context is current".
TEST_F(CallLog, ALookingCheckLeavesNoReasonBehind) {
  setLog("WARN", nullptr);
  setenv("MCSIM_FAULTS", "cuMemAlloc device=7 : nth=1 -> return CUDA_ERROR_OUT_OF_MEMORY", 1);
  EXPECT_EXIT(
      {
        createUnalignedMulticastObject();
        std::exit(0);
      },
      ::testing::ExitedWithCode(0),
      "^mcsim\\[[0-9]+\\] WARN cuMulticastCreate\\(.*\\) = CUDA_ERROR_INVALID_VALUE: prop->size must be a nonzero "
      "multiple");
}

// Streams and events say why a handle is refused.
TEST_F(CallLog, AnEventNeverRecordedHasNoTime) {
  setLog("WARN", nullptr);
  EXPECT_EXIT(
      {
        CUcontext ctx = nullptr;
        if (cuInit(0) != CUDA_SUCCESS || cuDevicePrimaryCtxRetain(&ctx, 0) != CUDA_SUCCESS ||
            cuCtxSetCurrent(ctx) != CUDA_SUCCESS) {
          std::abort();
        }
        CUevent a = nullptr;
        CUevent b = nullptr;
        if (cuEventCreate(&a, 0) != CUDA_SUCCESS || cuEventCreate(&b, 0) != CUDA_SUCCESS) std::abort();
        float ms = 0;
        if (cuEventElapsedTime(&ms, a, b) != CUDA_ERROR_INVALID_HANDLE) std::abort();
        std::exit(0);
      },
      ::testing::ExitedWithCode(0),
      "^mcsim\\[[0-9]+\\] WARN cuEventElapsedTime(_v2)?\\(.*\\) = CUDA_ERROR_INVALID_HANDLE: an event that was never "
      "recorded has no time\n$");
}

// Unset, the log says nothing, failing calls included.
TEST_F(CallLog, UnsetSaysNothing) {
  unsetenv("MCSIM_DEBUG");
  setenv("MCSIM_LEAK_CHECK", "off", 1);
  EXPECT_EXIT(
      {
        bindNonShareableMemory();
        std::fputs("done\n", stderr);
        std::exit(0);
      },
      ::testing::ExitedWithCode(0), "^done\n$");
}

}  // namespace
