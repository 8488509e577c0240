// The driver's and the node's tables go back to where they were after cycles of making and
// destroying handles of every kind (issue 19, item 9; docs/reliability.md, "What is freed when"):
// a destroyed handle's entry is erased, not kept marked dead, and a stale handle is still refused.
// The counts come from mcsim_get_driver_stats (the driver's tables), mcsim_get_node_stats and
// mcsim_get_node_module_stats (the node's: its allocations, handles ..., and the PTX modules it
// keeps parsed); each test also prints the heap bytes a cycle left (mallinfo2), for the record only.
// reliability.shared.Registries runs the module and context tests against a shared node, whose
// parsed modules are in another process.
#include <cuda.h>
#include <gtest/gtest.h>
#include <malloc.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "mcsim/api.h"
#include "mcsim/kernels.h"
#include "tests/common/cu_expect.h"
#include "tests/common/vmm_props.h"

namespace {

constexpr int kCycles = 200;
constexpr size_t k2M = 2u << 20;

// A kernel of its own (no behavioural model: the PTX executor runs it) and a .global variable, so
// that a launch prepares the module (registered with the node, the variable placed in device memory).
const char* const kPtx = R"(
.version 8.0
.target sm_90
.address_size 64

.global .align 4 .u32 bias = 5;

.visible .entry addbias(.param .u64 p)
{
  .reg .b32 %r<3>;
  .reg .b64 %rd<3>;
  ld.param.u64 %rd1, [p];
  mov.u64 %rd2, bias;
  ld.global.u32 %r1, [%rd2];
  ld.global.u32 %r2, [%rd1];
  add.u32 %r2, %r2, %r1;
  st.global.u32 [%rd1], %r2;
  ret;
}
)";

std::string describe(const mcsim::api::DriverStats& s) {
  return "contexts " + std::to_string(s.contexts) + ", modules " + std::to_string(s.modules) + ", functions " +
         std::to_string(s.functions) + ", libraries " + std::to_string(s.libraries) + ", kernels " +
         std::to_string(s.kernels) + ", pools " + std::to_string(s.memoryPools) + ", graphs " +
         std::to_string(s.graphs) + ", graph nodes " + std::to_string(s.graphNodes) + ", graph execs " +
         std::to_string(s.graphExecs) + ", streams " + std::to_string(s.streams) + ", events " +
         std::to_string(s.events) + ", work of destroyed streams " + std::to_string(s.destroyedStreamWork);
}

std::string describe(const mcsim::api::NodeStats& s) {
  return "allocations " + std::to_string(s.allocations) + ", handles " + std::to_string(s.handles) +
         ", reservations " + std::to_string(s.reservations) + ", mappings " + std::to_string(s.mappings) +
         ", exported descriptors " + std::to_string(s.exportedFds) + ", pinned host allocations " +
         std::to_string(s.hostAllocations) + ", multicast objects " + std::to_string(s.multicastObjects) +
         ", free multicast slots " + std::to_string(s.freeMulticastSlots);
}

class Registries : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK(cuInit(0));
    ASSERT_OK(cuDevicePrimaryCtxRetain(&ctx_, 0));
    ASSERT_OK(cuCtxSetCurrent(ctx_));
  }
  void TearDown() override { cuDevicePrimaryCtxRelease(0); }

  // Runs `cycle` `warmUp` times (what is made once per process, such as a first use's tables, is
  // made then), takes the counts, runs it kCycles more times, and checks that the counts are back.
  void cycles(const char* what, const std::function<void()>& cycle, int warmUp = 1) {
    for (int i = 0; i < warmUp && !HasFatalFailure(); ++i) cycle();
    if (HasFatalFailure()) return;
    const mcsim::api::DriverStats driverBefore = mcsim::api::driverStats();
    const mcsim::api::NodeStats nodeBefore = mcsim::api::nodeStats();
    const uint64_t ptxBefore = mcsim::api::nodePtxModules();
    const size_t heapBefore = mallinfo2().uordblks;
    for (int i = 0; i < kCycles && !HasFatalFailure(); ++i) cycle();
    const size_t heapAfter = mallinfo2().uordblks;
    const mcsim::api::DriverStats driverAfter = mcsim::api::driverStats();
    const mcsim::api::NodeStats nodeAfter = mcsim::api::nodeStats();
    const uint64_t ptxAfter = mcsim::api::nodePtxModules();
    std::printf("%s: %lld heap bytes a cycle over %d cycles\n", what,
                (static_cast<long long>(heapAfter) - static_cast<long long>(heapBefore)) / kCycles, kCycles);
    EXPECT_TRUE(driverBefore == driverAfter) << what << ": the driver's tables held\n  before: " << describe(driverBefore)
                                             << "\n  after:  " << describe(driverAfter);
    const bool nodeSame = nodeBefore.allocations == nodeAfter.allocations && nodeBefore.handles == nodeAfter.handles &&
                          nodeBefore.reservations == nodeAfter.reservations &&
                          nodeBefore.mappings == nodeAfter.mappings && nodeBefore.exportedFds == nodeAfter.exportedFds &&
                          nodeBefore.hostAllocations == nodeAfter.hostAllocations &&
                          nodeBefore.multicastObjects == nodeAfter.multicastObjects &&
                          nodeBefore.freeMulticastSlots == nodeAfter.freeMulticastSlots;
    EXPECT_TRUE(nodeSame) << what << ": the node held\n  before: " << describe(nodeBefore)
                          << "\n  after:  " << describe(nodeAfter);
    EXPECT_EQ(ptxBefore, ptxAfter) << what << ": PTX modules the node keeps parsed";
  }

  CUcontext ctx_ = nullptr;
};

TEST_F(Registries, ModulesFromPtxWithTheirFunctionsAndVariables) {
  CUdeviceptr word = 0;
  ASSERT_OK(cuMemAlloc(&word, 4));
  ASSERT_OK(cuMemsetD32(word, 0, 1));
  CUmodule stale = nullptr;
  CUfunction staleFunction = nullptr;
  cycles("module from PTX", [&] {
    CUmodule m = nullptr;
    ASSERT_OK(cuModuleLoadData(&m, kPtx));
    CUfunction f = nullptr;
    ASSERT_OK(cuModuleGetFunction(&f, m, "addbias"));
    const uint64_t parsed = mcsim::api::nodePtxModules();
    void* params[] = {&word};
    ASSERT_OK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, nullptr, params, nullptr));
    ASSERT_OK(cuCtxSynchronize());
    // The launch gave the node the module's PTX, which it holds until the unload.
    EXPECT_EQ(parsed + 1, mcsim::api::nodePtxModules());
    CUdeviceptr global = 0;
    size_t bytes = 0;
    ASSERT_OK(cuModuleGetGlobal(&global, &bytes, m, "bias"));
    ASSERT_OK(cuModuleUnload(m));
    EXPECT_EQ(parsed, mcsim::api::nodePtxModules());
    stale = m;
    staleFunction = f;
  });
  uint32_t sum = 0;
  ASSERT_OK(cuMemcpyDtoH(&sum, word, 4));
  EXPECT_EQ(5u * (kCycles + 1), sum);
  // The last cycle's handles are stale: refused, not dereferenced.
  EXPECT_EQ(CUDA_ERROR_INVALID_HANDLE, cuModuleUnload(stale));
  CUfunction f = nullptr;
  EXPECT_EQ(CUDA_ERROR_INVALID_HANDLE, cuModuleGetFunction(&f, stale, "addbias"));
  int regs = 0;
  EXPECT_EQ(CUDA_ERROR_INVALID_HANDLE, cuFuncGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, staleFunction));
  void* params[] = {&word};
  EXPECT_EQ(CUDA_ERROR_INVALID_HANDLE, cuLaunchKernel(staleFunction, 1, 1, 1, 1, 1, 1, 0, nullptr, params, nullptr));
  ASSERT_OK(cuMemFree(word));
}

TEST_F(Registries, ModulesFromTheKernelLibraryImage) {
  cycles("module from the kernel library's image", [&] {
    CUmodule m = nullptr;
    ASSERT_OK(cuModuleLoadData(&m, mcsim_kernel_image));
    unsigned count = 0;
    ASSERT_OK(cuModuleGetFunctionCount(&count, m));
    CUfunction all[64] = {};
    ASSERT_LE(count, 64u);
    ASSERT_OK(cuModuleEnumerateFunctions(all, count, m));
    CUfunction f = nullptr;
    ASSERT_OK(cuModuleGetFunction(&f, m, MCSIM_KERNEL_COPY));
    ASSERT_OK(cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, 50));
    ASSERT_OK(cuModuleUnload(m));
  });
}

TEST_F(Registries, LibrariesWithTheirKernelsAndModules) {
  CUlibrary stale = nullptr;
  CUkernel staleKernel = nullptr;
  cycles("library", [&] {
    CUlibrary l = nullptr;
    ASSERT_OK(cuLibraryLoadData(&l, mcsim_kernel_image, nullptr, nullptr, 0, nullptr, nullptr, 0));
    CUkernel k = nullptr;
    ASSERT_OK(cuLibraryGetKernel(&k, l, MCSIM_KERNEL_COPY));
    CUfunction f = nullptr;
    ASSERT_OK(cuKernelGetFunction(&f, k));
    CUmodule m = nullptr;
    ASSERT_OK(cuLibraryGetModule(&m, l));
    int value = 0;
    ASSERT_OK(cuKernelGetAttribute(&value, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, k, 1));
    ASSERT_OK(cuLibraryUnload(l));
    stale = l;
    staleKernel = k;
  });
  EXPECT_EQ(CUDA_ERROR_INVALID_HANDLE, cuLibraryUnload(stale));
  CUkernel k = nullptr;
  EXPECT_EQ(CUDA_ERROR_INVALID_HANDLE, cuLibraryGetKernel(&k, stale, MCSIM_KERNEL_COPY));
  CUfunction f = nullptr;
  EXPECT_EQ(CUDA_ERROR_INVALID_HANDLE, cuKernelGetFunction(&f, staleKernel));
}

TEST_F(Registries, MemoryPoolsAlsoWithMemoryOutWhenDestroyed) {
  CUmemPoolProps props = {};
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = 0;
  CUmemoryPool stale = nullptr;
  cycles("memory pool", [&] {
    CUmemoryPool p = nullptr;
    ASSERT_OK(cuMemPoolCreate(&p, &props));
    ASSERT_OK(cuMemPoolDestroy(p));
    // Destroyed with an allocation out: the allocation stays valid until freed, and the pool goes then.
    ASSERT_OK(cuMemPoolCreate(&p, &props));
    CUdeviceptr d = 0;
    ASSERT_OK(cuMemAllocFromPoolAsync(&d, 4096, p, nullptr));
    ASSERT_OK(cuMemPoolDestroy(p));
    ASSERT_OK(cuMemsetD8(d, 1, 4096));
    ASSERT_OK(cuMemFreeAsync(d, nullptr));
    ASSERT_OK(cuStreamSynchronize(nullptr));
    stale = p;
  });
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemPoolDestroy(stale));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuMemPoolTrimTo(stale, 0));
}

// Destroyed contexts wait (16 of them: driver/context.cpp) before their objects are made new
// contexts: the counts stop growing once that many were destroyed.
constexpr int kContextWarmUp = 20;

TEST_F(Registries, ContextsWithWhatWasMadeInThem) {
  CUcontext stale = nullptr;
  cycles("context", [&] {
    CUcontext c = nullptr;
    ASSERT_OK(cuCtxCreate(&c, nullptr, 0, 1));
    CUstream s = nullptr;
    ASSERT_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUevent e = nullptr;
    ASSERT_OK(cuEventCreate(&e, 0));
    CUmodule m = nullptr;
    ASSERT_OK(cuModuleLoadData(&m, mcsim_kernel_image));
    CUlibrary l = nullptr;
    ASSERT_OK(cuLibraryLoadData(&l, mcsim_kernel_image, nullptr, nullptr, 0, nullptr, nullptr, 0));
    CUmodule lm = nullptr;
    ASSERT_OK(cuLibraryGetModule(&lm, l));
    ASSERT_OK(cuLibraryUnload(l));
    ASSERT_OK(cuCtxDestroy(c));  // its stream, event and module go with it
    stale = c;
  }, kContextWarmUp);
  // cuCtxDestroy popped each from this thread's stack; the last one is refused now.
  CUcontext current = nullptr;
  ASSERT_OK(cuCtxGetCurrent(&current));
  EXPECT_EQ(ctx_, current);
  EXPECT_NE(CUDA_SUCCESS, cuCtxDestroy(stale));
}

// A PTX module whose kernel ran, left loaded in a context that is then destroyed: the module goes
// with the context, and the node's parsed copy with it (unloadPtx), on a shared node too.
TEST_F(Registries, PtxModulesLeftInADestroyedContext) {
  cycles("context with a PTX module left loaded", [&] {
    CUcontext c = nullptr;
    ASSERT_OK(cuCtxCreate(&c, nullptr, 0, 0));
    CUdeviceptr word = 0;
    ASSERT_OK(cuMemAlloc(&word, 4));
    ASSERT_OK(cuMemsetD32(word, 0, 1));
    CUmodule m = nullptr;
    ASSERT_OK(cuModuleLoadData(&m, kPtx));
    CUfunction f = nullptr;
    ASSERT_OK(cuModuleGetFunction(&f, m, "addbias"));
    void* params[] = {&word};
    ASSERT_OK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, nullptr, params, nullptr));
    ASSERT_OK(cuCtxSynchronize());
    uint32_t got = 0;
    ASSERT_OK(cuMemcpyDtoH(&got, word, 4));
    EXPECT_EQ(5u, got);
    ASSERT_OK(cuCtxDestroy(c));  // the module and the memory go with it
  }, kContextWarmUp);
  ASSERT_OK(cuCtxSetCurrent(ctx_));
}

// A thread whose current context another thread destroyed is told so, and knows its device, even
// once the context's object has been made a new context.
TEST_F(Registries, AThreadWhoseContextWasDestroyedIsToldSoAfterItsObjectIsReused) {
  CUcontext c = nullptr;
  ASSERT_OK(cuCtxCreate(&c, nullptr, 0, 3));
  CUcontext popped = nullptr;
  ASSERT_OK(cuCtxPopCurrent(&popped));
  std::mutex mu;
  std::condition_variable cv;
  int step = 0;
  CUresult afterReuse = CUDA_SUCCESS;
  CUdevice deviceAfterReuse = -1;
  std::thread user([&] {
    EXPECT_OK(cuCtxSetCurrent(c));
    std::unique_lock<std::mutex> lock(mu);
    step = 1;
    cv.notify_all();
    cv.wait(lock, [&] { return step == 2; });
    CUdeviceptr p = 0;
    afterReuse = cuMemAlloc(&p, 4096);
    EXPECT_OK(cuCtxGetDevice(&deviceAfterReuse));
  });
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return step == 1; });
  }
  ASSERT_OK(cuCtxDestroy(c));
  bool reused = false;
  for (int i = 0; i < kContextWarmUp; ++i) {
    CUcontext fresh = nullptr;
    ASSERT_OK(cuCtxCreate(&fresh, nullptr, 0, 1));
    reused = reused || fresh == c;
    ASSERT_OK(cuCtxDestroy(fresh));
  }
  EXPECT_TRUE(reused) << "the destroyed context's object was never made a new context";
  {
    std::lock_guard<std::mutex> lock(mu);
    step = 2;
    cv.notify_all();
  }
  user.join();
  EXPECT_EQ(CUDA_ERROR_CONTEXT_IS_DESTROYED, afterReuse);
  EXPECT_EQ(3, deviceAfterReuse);
}

TEST_F(Registries, GraphsAndTheirExecs) {
  CUdeviceptr d = 0;
  ASSERT_OK(cuMemAlloc(&d, 4096));
  cycles("graph and exec", [&] {
    CUgraph g = nullptr;
    ASSERT_OK(cuGraphCreate(&g, 0));
    CUDA_MEMSET_NODE_PARAMS ms = {};
    ms.dst = d;
    ms.value = 3;
    ms.elementSize = 4;
    ms.width = 1024;
    ms.height = 1;
    CUgraphNode set = nullptr, empty = nullptr;
    ASSERT_OK(cuGraphAddMemsetNode(&set, g, nullptr, 0, &ms, ctx_));
    ASSERT_OK(cuGraphAddEmptyNode(&empty, g, &set, 1));
    CUgraph child = nullptr;
    ASSERT_OK(cuGraphClone(&child, g));
    CUgraphNode childNode = nullptr;
    ASSERT_OK(cuGraphAddChildGraphNode(&childNode, g, &empty, 1, child));
    ASSERT_OK(cuGraphDestroy(child));
    CUgraphExec exec = nullptr;
    ASSERT_OK(cuGraphInstantiate(&exec, g, 0));
    ASSERT_OK(cuGraphLaunch(exec, nullptr));
    ASSERT_OK(cuGraphExecDestroy(exec));  // while the launch may still run
    ASSERT_OK(cuGraphDestroy(g));
    ASSERT_OK(cuStreamSynchronize(nullptr));
  });
  ASSERT_OK(cuMemFree(d));
}

TEST_F(Registries, StreamsAndEvents) {
  cycles("stream and event", [&] {
    CUstream s = nullptr;
    ASSERT_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUevent e = nullptr;
    ASSERT_OK(cuEventCreate(&e, CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING));
    ASSERT_OK(cuEventRecord(e, s));
    CUipcEventHandle h;
    ASSERT_OK(cuIpcGetEventHandle(&h, e));
    ASSERT_OK(cuEventSynchronize(e));
    ASSERT_OK(cuStreamDestroy(s));
    ASSERT_OK(cuEventDestroy(e));
  });
}

// Work of a stream destroyed while it ran is kept for cuCtxSynchronize, and let go once it finished,
// whether or not the program ever synchronises its context (it kept every piece until then).
TEST_F(Registries, StreamsDestroyedWithWorkInFlight) {
  CUdeviceptr d = 0;
  ASSERT_OK(cuMemAlloc(&d, 1 << 20));
  const auto cycle = [&] {
    CUstream s = nullptr;
    ASSERT_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUevent done = nullptr;
    ASSERT_OK(cuEventCreate(&done, CU_EVENT_DISABLE_TIMING));
    ASSERT_OK(cuMemsetD32Async(d, 5, (1 << 20) / 4, s));
    ASSERT_OK(cuEventRecord(done, s));
    ASSERT_OK(cuStreamDestroy(s));
    // The work finishes; the context is never synchronised.
    ASSERT_OK(cuEventSynchronize(done));
    ASSERT_OK(cuEventDestroy(done));
  };
  // The work kept is let go in batches: the counts after the cycles are no more than a batch's.
  for (int i = 0; i < 4 * kCycles && !HasFatalFailure(); ++i) cycle();
  EXPECT_LE(mcsim::api::driverStats().destroyedStreamWork, 128u);
  ASSERT_OK(cuCtxSynchronize());
  EXPECT_EQ(0u, mcsim::api::driverStats().destroyedStreamWork);
  ASSERT_OK(cuMemFree(d));
}

// A thread's per-thread default stream goes when the thread ends (a program that starts threads
// one after another, each using cudaStreamPerThread, made one for good per thread); its work is
// still waited for by cuCtxSynchronize.
TEST_F(Registries, PerThreadDefaultStreamsOfEndedThreads) {
  CUdeviceptr d = 0;
  ASSERT_OK(cuMemAlloc(&d, 1 << 20));
  cycles("thread using its per-thread default stream", [&] {
    std::thread user([&] {
      EXPECT_OK(cuCtxSetCurrent(ctx_));
      EXPECT_OK(cuMemsetD32Async(d, 9, (1 << 20) / 4, CU_STREAM_PER_THREAD));
    });
    user.join();
    ASSERT_OK(cuCtxSynchronize());
  });
  uint32_t word = 0;
  ASSERT_OK(cuMemcpyDtoH(&word, d + (1 << 20) - 4, 4));
  EXPECT_EQ(9u, word);
  ASSERT_OK(cuMemFree(d));
}

TEST_F(Registries, VmmMulticastAndExportedHandles) {
  int devices = 0;
  ASSERT_OK(cuDeviceGetCount(&devices));
  ASSERT_GE(devices, 2);
  cycles("VMM, multicast and exported handles", [&] {
    // Memory made, exported as a descriptor, mapped, set, unmapped and released.
    CUmemAllocationProp prop = cutest::devicePinned(0, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    CUmemGenericAllocationHandle h = 0;
    ASSERT_OK(cuMemCreate(&h, k2M, &prop, 0));
    int fd = -1;
    ASSERT_OK(cuMemExportToShareableHandle(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
    CUmemGenericAllocationHandle imported = 0;
    ASSERT_OK(cuMemImportFromShareableHandle(&imported, reinterpret_cast<void*>(static_cast<intptr_t>(fd)),
                                             CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
    close(fd);
    CUdeviceptr va = 0;
    ASSERT_OK(cuMemAddressReserve(&va, k2M, 0, 0, 0));
    ASSERT_OK(cuMemMap(va, k2M, 0, imported, 0));
    CUmemAccessDesc access = cutest::readWrite(0);
    ASSERT_OK(cuMemSetAccess(va, k2M, &access, 1));
    ASSERT_OK(cuMemsetD8(va, 7, k2M));
    ASSERT_OK(cuMemUnmap(va, k2M));
    ASSERT_OK(cuMemAddressFree(va, k2M));
    ASSERT_OK(cuMemRelease(imported));
    // A multicast object of two devices, the memory bound under it and unbound.
    CUmulticastObjectProp mp = cutest::mcProp(2, k2M);
    CUmemGenericAllocationHandle mc = 0;
    ASSERT_OK(cuMulticastCreate(&mc, &mp));
    ASSERT_OK(cuMulticastAddDevice(mc, 0));
    ASSERT_OK(cuMulticastAddDevice(mc, 1));
    ASSERT_OK(cuMulticastBindMem(mc, 0, h, 0, k2M, 0));
    ASSERT_OK(cuMulticastUnbind(mc, 0, 0, k2M));
    ASSERT_OK(cuMemRelease(mc));
    ASSERT_OK(cuMemRelease(h));
    // IPC: a cuMemAlloc allocation's handle, then the allocation freed (the export goes with it).
    CUdeviceptr p = 0;
    ASSERT_OK(cuMemAlloc(&p, 4096));
    CUipcMemHandle ipc;
    ASSERT_OK(cuIpcGetMemHandle(&ipc, p));
    ASSERT_OK(cuMemFree(p));
    void* host = nullptr;
    ASSERT_OK(cuMemAllocHost(&host, 4096));
    ASSERT_OK(cuMemFreeHost(host));
  });
}

}  // namespace
