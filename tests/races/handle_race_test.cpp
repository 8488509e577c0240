// Destroy racing use, for every kind of handle the driver keeps: one thread creates a handle,
// publishes it, waits until the users have begun calls on it, and destroys it; two more threads
// call the driver with whatever handle is published (the live one, or one just destroyed). The
// application races, but mcsim promises to check handles: every call answers success or the
// error a stale handle of its kind gets, never a crash, a hang or another error. Run under
// ThreadSanitizer too (scripts/test.sh with MCSIM_TSAN=1), which reports the data races such a run
// passes through even where nothing crashes.
//
// Bounded: each test runs a fixed number of rounds. The destroyer waits for the users' calls by
// counting them (a condition, not a sleep), so every round has calls in flight on the handle it
// destroys, however the threads are scheduled.
#include <cuda.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "mcsim/kernels.h"
#include "tests/common/cu_expect.h"
#include "tests/common/vmm_props.h"

namespace {

constexpr int kRounds = 100;
constexpr int kUsers = 2;
constexpr int kCallsPerRound = 4;  // calls the users begin on each handle before it is destroyed

// The results a call may give. Kept as names, so that a failure says which.
class Allowed {
 public:
  Allowed(std::initializer_list<CUresult> results) : results_(results) {}
  bool has(CUresult r) const { return std::find(results_.begin(), results_.end(), r) != results_.end(); }

 private:
  std::vector<CUresult> results_;
};

// What the user threads saw that they should not have: the first few, for the failure message.
class Unexpected {
 public:
  void note(const char* call, CUresult r) {
    std::lock_guard<std::mutex> lock(mu_);
    ++count_;
    if (seen_.size() < 8) seen_.push_back(std::string(call) + " -> " + cutest::resultName(r));
  }
  void expectNone() {
    std::lock_guard<std::mutex> lock(mu_);
    std::string all;
    for (const auto& s : seen_) all += s + "; ";
    EXPECT_EQ(0, count_) << all;
  }

 private:
  std::mutex mu_;
  int count_ = 0;
  std::vector<std::string> seen_;
};

// One test's race: `create` makes a handle (on the destroying thread, with `ctx` current),
// `destroy` ends it, `use` is called by the user threads (with `ctx` current) on the published
// handle and reports each of its calls' results to `check`.
template <typename Handle>
struct Race {
  CUcontext ctx = nullptr;
  std::function<Handle()> create;
  std::function<void(Handle)> destroy;
  std::function<void(Handle, const std::function<void(const char*, CUresult, const Allowed&)>&)> use;

  void run() {
    std::atomic<Handle> published{Handle{}};
    std::atomic<uint64_t> begun{0};
    std::atomic<bool> stop{false};
    Unexpected unexpected;
    const auto check = [&](const char* call, CUresult r, const Allowed& allowed) {
      if (!allowed.has(r)) unexpected.note(call, r);
    };
    std::vector<std::thread> users;
    for (int u = 0; u < kUsers; ++u) {
      users.emplace_back([&] {
        ASSERT_EQ(CUDA_SUCCESS, cuCtxSetCurrent(ctx));
        while (!stop.load()) {
          const Handle h = published.load();
          if (h == Handle{}) {
            std::this_thread::yield();  // nothing published yet: let the destroyer run
            continue;
          }
          begun.fetch_add(1);
          use(h, check);
        }
      });
    }
    ASSERT_EQ(CUDA_SUCCESS, cuCtxSetCurrent(ctx));
    for (int round = 0; round < kRounds; ++round) {
      const Handle h = create();
      ASSERT_NE(Handle{}, h);
      const uint64_t before = begun.load();
      published.store(h);
      // The users' calls on this handle have begun (or are about to read it): destroy it under them.
      while (begun.load() < before + kCallsPerRound) std::this_thread::yield();
      destroy(h);
    }
    stop.store(true);
    for (auto& t : users) t.join();
    unexpected.expectNone();
    // The node is still whole: a fresh stream's work runs and completes.
    CUstream s = nullptr;
    ASSERT_OK(cuStreamCreate(&s, 0));
    ASSERT_OK(cuStreamSynchronize(s));
    ASSERT_OK(cuStreamDestroy(s));
    ASSERT_OK(cuCtxSynchronize());
  }
};

class HandleRace : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK(cuInit(0));
    ASSERT_OK(cuDevicePrimaryCtxRetain(&ctx, 0));
    ASSERT_OK(cuCtxSetCurrent(ctx));
    ASSERT_OK(cuMemAlloc(&buffer, kBufferBytes));
    ASSERT_OK(cuMemAlloc(&other, kBufferBytes));
  }
  void TearDown() override {
    EXPECT_OK(cuCtxSynchronize());
    EXPECT_OK(cuMemFree(buffer));
    EXPECT_OK(cuMemFree(other));
    cuCtxSetCurrent(nullptr);
    cuDevicePrimaryCtxRelease(0);
  }
  // mcsim_copy(dst, src, bytes) of the buffers, on `stream`, through `f` (a CUfunction or a CUkernel).
  CUresult launchCopy(CUfunction f, CUstream stream) {
    uint64_t bytes = kBufferBytes;
    void* params[] = {&other, &buffer, &bytes};
    return cuLaunchKernel(f, 1, 1, 1, 128, 1, 1, 0, stream, params, nullptr);
  }

  static constexpr size_t kBufferBytes = 4096;
  CUcontext ctx = nullptr;
  CUdeviceptr buffer = 0, other = 0;
};

TEST_F(HandleRace, StreamDestroyedWhileUsed) {
  const Allowed ok{CUDA_SUCCESS, CUDA_ERROR_INVALID_HANDLE};
  const Allowed query{CUDA_SUCCESS, CUDA_ERROR_NOT_READY, CUDA_ERROR_INVALID_HANDLE};
  CUevent ev = nullptr;
  ASSERT_OK(cuEventCreate(&ev, 0));
  Race<CUstream> race;
  race.ctx = ctx;
  race.create = [] {
    CUstream s = nullptr;
    EXPECT_OK(cuStreamCreate(&s, 0));
    return s;
  };
  race.destroy = [](CUstream s) { EXPECT_OK(cuStreamDestroy(s)); };
  race.use = [&](CUstream s, const auto& check) {
    check("cuMemsetD32Async", cuMemsetD32Async(buffer, 7, kBufferBytes / 4, s), ok);
    check("cuMemcpyDtoDAsync", cuMemcpyDtoDAsync(other, buffer, kBufferBytes, s), ok);
    check("cuEventRecord", cuEventRecord(ev, s), ok);
    check("cuStreamWaitEvent", cuStreamWaitEvent(s, ev, 0), ok);
    check("cuStreamQuery", cuStreamQuery(s), query);
    check("cuStreamSynchronize", cuStreamSynchronize(s), ok);
    int priority = 0;
    check("cuStreamGetPriority", cuStreamGetPriority(s, &priority), ok);
  };
  race.run();
  EXPECT_OK(cuEventDestroy(ev));
}

TEST_F(HandleRace, EventDestroyedWhileUsed) {
  const Allowed ok{CUDA_SUCCESS, CUDA_ERROR_INVALID_HANDLE};
  const Allowed query{CUDA_SUCCESS, CUDA_ERROR_NOT_READY, CUDA_ERROR_INVALID_HANDLE};
  CUstream stream = nullptr;
  ASSERT_OK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  Race<CUevent> race;
  race.ctx = ctx;
  race.create = [] {
    CUevent e = nullptr;
    EXPECT_OK(cuEventCreate(&e, 0));
    return e;
  };
  race.destroy = [](CUevent e) { EXPECT_OK(cuEventDestroy(e)); };
  race.use = [&](CUevent e, const auto& check) {
    check("cuMemsetD32Async", cuMemsetD32Async(buffer, 9, kBufferBytes / 4, stream), ok);
    check("cuEventRecord", cuEventRecord(e, stream), ok);
    check("cuStreamWaitEvent", cuStreamWaitEvent(nullptr, e, 0), ok);
    check("cuEventQuery", cuEventQuery(e), query);
    check("cuEventSynchronize", cuEventSynchronize(e), ok);
    float ms = 0;
    check("cuEventElapsedTime", cuEventElapsedTime(&ms, e, e), query);
  };
  race.run();
  EXPECT_OK(cuStreamDestroy(stream));
}

TEST_F(HandleRace, ContextDestroyedWhileUsed) {
  // A destroyed context stays known: calls made in it say it was destroyed.
  const Allowed ok{CUDA_SUCCESS, CUDA_ERROR_CONTEXT_IS_DESTROYED, CUDA_ERROR_INVALID_CONTEXT};
  // Freeing what the context's release already freed is a stale address.
  const Allowed free{CUDA_SUCCESS, CUDA_ERROR_CONTEXT_IS_DESTROYED, CUDA_ERROR_INVALID_VALUE};
  const Allowed stream{CUDA_SUCCESS, CUDA_ERROR_CONTEXT_IS_DESTROYED, CUDA_ERROR_INVALID_HANDLE};
  Race<CUcontext> race;
  race.ctx = ctx;
  race.create = [&] {
    CUcontext c = nullptr;
    EXPECT_OK(cuCtxCreate(&c, nullptr, 0, 0));
    CUcontext popped = nullptr;
    EXPECT_OK(cuCtxPopCurrent(&popped));  // cuCtxCreate made it current; the destroyer works in ctx
    return c;
  };
  race.destroy = [](CUcontext c) { EXPECT_OK(cuCtxDestroy(c)); };
  race.use = [&](CUcontext c, const auto& check) {
    check("cuCtxPushCurrent", cuCtxPushCurrent(c), ok);
    CUdeviceptr p = 0;
    const CUresult alloc = cuMemAlloc(&p, 4096);
    check("cuMemAlloc", alloc, ok);
    if (alloc == CUDA_SUCCESS) {
      check("cuMemsetD8", cuMemsetD8(p, 1, 4096), Allowed{CUDA_SUCCESS, CUDA_ERROR_CONTEXT_IS_DESTROYED,
                                                         CUDA_ERROR_INVALID_VALUE});
      check("cuMemFree", cuMemFree(p), free);
    }
    CUstream s = nullptr;
    const CUresult created = cuStreamCreate(&s, 0);
    check("cuStreamCreate", created, ok);
    if (created == CUDA_SUCCESS) {
      check("cuMemsetD32Async", cuMemsetD32Async(buffer, 3, kBufferBytes / 4, s), stream);
      check("cuStreamDestroy", cuStreamDestroy(s), stream);
    }
    check("cuCtxSynchronize", cuCtxSynchronize(), ok);
    CUcontext popped = nullptr;
    check("cuCtxPopCurrent", cuCtxPopCurrent(&popped), Allowed{CUDA_SUCCESS});
  };
  race.run();
}

TEST_F(HandleRace, ModuleAndFunctionUnloadedWhileUsed) {
  const Allowed ok{CUDA_SUCCESS, CUDA_ERROR_INVALID_HANDLE};
  CUstream stream = nullptr;
  ASSERT_OK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  // The handle published is the function; its module is found again through it.
  Race<CUfunction> race;
  race.ctx = ctx;
  race.create = [] {
    CUmodule m = nullptr;
    EXPECT_OK(cuModuleLoadData(&m, mcsim_kernel_image));
    CUfunction f = nullptr;
    EXPECT_OK(cuModuleGetFunction(&f, m, MCSIM_KERNEL_COPY));
    return f;
  };
  race.destroy = [](CUfunction f) {
    CUmodule m = nullptr;
    EXPECT_OK(cuFuncGetModule(&m, f));
    EXPECT_OK(cuModuleUnload(m));
  };
  race.use = [&](CUfunction f, const auto& check) {
    check("cuLaunchKernel", launchCopy(f, stream), ok);
    // Bounded queues: a queue tens of thousands of operations long is a problem of its own.
    check("cuStreamSynchronize", cuStreamSynchronize(stream), Allowed{CUDA_SUCCESS});
    int v = 0;
    check("cuFuncGetAttribute", cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, f), ok);
    check("cuFuncSetAttribute", cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 0), ok);
    const char* name = nullptr;
    check("cuFuncGetName", cuFuncGetName(&name, f), ok);
    CUmodule m = nullptr;
    if (cuFuncGetModule(&m, f) == CUDA_SUCCESS) {
      CUfunction again = nullptr;
      check("cuModuleGetFunction", cuModuleGetFunction(&again, m, MCSIM_KERNEL_COPY), ok);
      unsigned count = 0;
      check("cuModuleGetFunctionCount", cuModuleGetFunctionCount(&count, m), ok);
    }
  };
  race.run();
  EXPECT_OK(cuStreamDestroy(stream));
}

TEST_F(HandleRace, LibraryAndKernelUnloadedWhileUsed) {
  const Allowed ok{CUDA_SUCCESS, CUDA_ERROR_INVALID_HANDLE};
  CUstream stream = nullptr;
  ASSERT_OK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  Race<CUlibrary> race;
  race.ctx = ctx;
  race.create = [] {
    CUlibrary l = nullptr;
    EXPECT_OK(cuLibraryLoadData(&l, mcsim_kernel_image, nullptr, nullptr, 0, nullptr, nullptr, 0));
    return l;
  };
  race.destroy = [](CUlibrary l) { EXPECT_OK(cuLibraryUnload(l)); };
  race.use = [&](CUlibrary l, const auto& check) {
    CUkernel k = nullptr;
    const CUresult got = cuLibraryGetKernel(&k, l, MCSIM_KERNEL_COPY);
    check("cuLibraryGetKernel", got, ok);
    if (got == CUDA_SUCCESS) {
      // cuLaunchKernel takes a CUkernel in place of a CUfunction.
      check("cuLaunchKernel", launchCopy(reinterpret_cast<CUfunction>(k), stream), ok);
      check("cuStreamSynchronize", cuStreamSynchronize(stream), Allowed{CUDA_SUCCESS});
      CUfunction f = nullptr;
      check("cuKernelGetFunction", cuKernelGetFunction(&f, k), ok);
      const char* name = nullptr;
      check("cuKernelGetName", cuKernelGetName(&name, k), ok);
    }
    CUmodule m = nullptr;
    check("cuLibraryGetModule", cuLibraryGetModule(&m, l), ok);
    unsigned count = 0;
    check("cuLibraryGetKernelCount", cuLibraryGetKernelCount(&count, l), ok);
  };
  race.run();
  EXPECT_OK(cuStreamDestroy(stream));
}

TEST_F(HandleRace, PoolDestroyedWhileUsed) {
  // A destroyed pool is CUDA_ERROR_INVALID_VALUE (the pool calls' answer to a bad pool).
  const Allowed ok{CUDA_SUCCESS, CUDA_ERROR_INVALID_VALUE};
  CUstream stream = nullptr;
  ASSERT_OK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  CUmemPoolProps props{};
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = 0;
  Race<CUmemoryPool> race;
  race.ctx = ctx;
  race.create = [&] {
    CUmemoryPool p = nullptr;
    EXPECT_OK(cuMemPoolCreate(&p, &props));
    return p;
  };
  race.destroy = [](CUmemoryPool p) { EXPECT_OK(cuMemPoolDestroy(p)); };
  race.use = [&](CUmemoryPool p, const auto& check) {
    CUdeviceptr d = 0;
    const CUresult alloc = cuMemAllocFromPoolAsync(&d, 4096, p, stream);
    check("cuMemAllocFromPoolAsync", alloc, ok);
    // An allocation outlives its pool's destruction until it is freed.
    if (alloc == CUDA_SUCCESS) check("cuMemFreeAsync", cuMemFreeAsync(d, stream), Allowed{CUDA_SUCCESS});
    cuuint64_t threshold = 0;
    check("cuMemPoolSetAttribute", cuMemPoolSetAttribute(p, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold), ok);
    check("cuMemPoolGetAttribute", cuMemPoolGetAttribute(p, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &threshold), ok);
    check("cuMemPoolTrimTo", cuMemPoolTrimTo(p, 0), ok);
  };
  race.run();
  EXPECT_OK(cuStreamDestroy(stream));
}

TEST_F(HandleRace, MemoryFreedWhileUsed) {
  // A freed address is CUDA_ERROR_INVALID_VALUE; one allocated again meanwhile is memory again.
  const Allowed ok{CUDA_SUCCESS, CUDA_ERROR_INVALID_VALUE};
  CUstream stream = nullptr;
  ASSERT_OK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  Race<CUdeviceptr> race;
  race.ctx = ctx;
  race.create = [] {
    CUdeviceptr p = 0;
    EXPECT_OK(cuMemAlloc(&p, kBufferBytes));
    return p;
  };
  race.destroy = [](CUdeviceptr p) { EXPECT_OK(cuMemFree(p)); };
  race.use = [&](CUdeviceptr p, const auto& check) {
    uint32_t host[16] = {};
    check("cuMemsetD32Async", cuMemsetD32Async(p, 5, kBufferBytes / 4, stream), ok);
    check("cuMemcpyDtoDAsync", cuMemcpyDtoDAsync(buffer, p, kBufferBytes, stream), ok);
    check("cuMemcpyDtoH", cuMemcpyDtoH(host, p, sizeof host), ok);
    CUdeviceptr base = 0;
    size_t size = 0;
    check("cuMemGetAddressRange", cuMemGetAddressRange(&base, &size, p), Allowed{CUDA_SUCCESS, CUDA_ERROR_NOT_FOUND,
                                                                                 CUDA_ERROR_INVALID_VALUE});
  };
  race.run();
  EXPECT_OK(cuStreamDestroy(stream));
}

TEST_F(HandleRace, AllocationHandleReleasedWhileUsed) {
  // A released handle is CUDA_ERROR_INVALID_VALUE (the VMM calls' answer to a bad handle).
  const Allowed ok{CUDA_SUCCESS, CUDA_ERROR_INVALID_VALUE};
  const CUmemAllocationProp prop = cutest::devicePinned(0, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  size_t gran = 0;
  ASSERT_OK(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  Race<CUmemGenericAllocationHandle> race;
  race.ctx = ctx;
  race.create = [&] {
    CUmemGenericAllocationHandle h = 0;
    EXPECT_OK(cuMemCreate(&h, gran, &prop, 0));
    return h;
  };
  race.destroy = [](CUmemGenericAllocationHandle h) { EXPECT_OK(cuMemRelease(h)); };
  race.use = [&](CUmemGenericAllocationHandle h, const auto& check) {
    CUmemAllocationProp got{};
    check("cuMemGetAllocationPropertiesFromHandle", cuMemGetAllocationPropertiesFromHandle(&got, h), ok);
    CUdeviceptr va = 0;
    if (cuMemAddressReserve(&va, gran, 0, 0, 0) != CUDA_SUCCESS) return;
    const CUresult mapped = cuMemMap(va, gran, 0, h, 0);
    check("cuMemMap", mapped, ok);
    if (mapped == CUDA_SUCCESS) {
      const CUmemAccessDesc rw = cutest::readWrite(0);
      check("cuMemSetAccess", cuMemSetAccess(va, gran, &rw, 1), Allowed{CUDA_SUCCESS});
      check("cuMemsetD32", cuMemsetD32(va, 1, 4), Allowed{CUDA_SUCCESS});
      check("cuMemUnmap", cuMemUnmap(va, gran), Allowed{CUDA_SUCCESS});
    }
    int fd = -1;
    if (cuMemExportToShareableHandle(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0) == CUDA_SUCCESS) close(fd);
    check("cuMemAddressFree", cuMemAddressFree(va, gran), Allowed{CUDA_SUCCESS});
  };
  race.run();
}


TEST_F(HandleRace, GraphDestroyedWhileUsed) {
  // A destroyed graph is CUDA_ERROR_INVALID_VALUE (the graph calls' answer to a bad graph).
  const Allowed ok{CUDA_SUCCESS, CUDA_ERROR_INVALID_VALUE};
  CUstream stream = nullptr;
  ASSERT_OK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  Race<CUgraph> race;
  race.ctx = ctx;
  race.create = [&] {
    CUgraph g = nullptr;
    EXPECT_OK(cuGraphCreate(&g, 0));
    CUDA_MEMSET_NODE_PARAMS memset{};
    memset.dst = buffer;
    memset.elementSize = 4;
    memset.width = kBufferBytes / 4;
    memset.height = 1;
    memset.value = 11;
    CUgraphNode n = nullptr;
    EXPECT_OK(cuGraphAddMemsetNode(&n, g, nullptr, 0, &memset, ctx));
    return g;
  };
  race.destroy = [](CUgraph g) { EXPECT_OK(cuGraphDestroy(g)); };
  race.use = [&](CUgraph g, const auto& check) {
    CUgraphNode empty = nullptr;
    check("cuGraphAddEmptyNode", cuGraphAddEmptyNode(&empty, g, nullptr, 0), ok);
    size_t count = 0;
    check("cuGraphGetNodes", cuGraphGetNodes(g, nullptr, &count), ok);
    CUgraph clone = nullptr;
    const CUresult cloned = cuGraphClone(&clone, g);
    check("cuGraphClone", cloned, ok);
    if (cloned == CUDA_SUCCESS) check("cuGraphDestroy(clone)", cuGraphDestroy(clone), Allowed{CUDA_SUCCESS});
    CUgraphExec exec = nullptr;
    const CUresult made = cuGraphInstantiateWithFlags(&exec, g, 0);
    check("cuGraphInstantiateWithFlags", made, ok);
    if (made == CUDA_SUCCESS) {
      // An exec is a copy: it outlives its graph.
      check("cuGraphLaunch", cuGraphLaunch(exec, stream), Allowed{CUDA_SUCCESS});
      check("cuStreamSynchronize", cuStreamSynchronize(stream), Allowed{CUDA_SUCCESS});
      check("cuGraphExecDestroy", cuGraphExecDestroy(exec), Allowed{CUDA_SUCCESS});
    }
  };
  race.run();
  EXPECT_OK(cuStreamDestroy(stream));
}

TEST_F(HandleRace, GraphExecDestroyedWhileUsed) {
  const Allowed ok{CUDA_SUCCESS, CUDA_ERROR_INVALID_VALUE};
  CUstream stream = nullptr;
  ASSERT_OK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  CUgraph g = nullptr;
  ASSERT_OK(cuGraphCreate(&g, 0));
  CUDA_MEMSET_NODE_PARAMS memset{};
  memset.dst = buffer;
  memset.elementSize = 4;
  memset.width = kBufferBytes / 4;
  memset.height = 1;
  memset.value = 13;
  CUgraphNode node = nullptr;
  ASSERT_OK(cuGraphAddMemsetNode(&node, g, nullptr, 0, &memset, ctx));
  Race<CUgraphExec> race;
  race.ctx = ctx;
  race.create = [&] {
    CUgraphExec e = nullptr;
    EXPECT_OK(cuGraphInstantiateWithFlags(&e, g, 0));
    return e;
  };
  race.destroy = [](CUgraphExec e) { EXPECT_OK(cuGraphExecDestroy(e)); };
  race.use = [&](CUgraphExec e, const auto& check) {
    check("cuGraphLaunch", cuGraphLaunch(e, stream), ok);
    cuuint64_t flags = 0;
    check("cuGraphExecGetFlags", cuGraphExecGetFlags(e, &flags), ok);
    CUDA_MEMSET_NODE_PARAMS changed = memset;
    changed.value = 17;
    check("cuGraphExecMemsetNodeSetParams", cuGraphExecMemsetNodeSetParams(e, node, &changed, ctx), ok);
    check("cuGraphUpload", cuGraphUpload(e, stream), ok);
    check("cuStreamSynchronize", cuStreamSynchronize(stream), Allowed{CUDA_SUCCESS});
  };
  race.run();
  EXPECT_OK(cuGraphDestroy(g));
  EXPECT_OK(cuStreamDestroy(stream));
}

TEST_F(HandleRace, MulticastObjectReleasedWhileUsed) {
  // A released multicast handle is CUDA_ERROR_INVALID_VALUE, as a released allocation handle is.
  const Allowed ok{CUDA_SUCCESS, CUDA_ERROR_INVALID_VALUE};
  size_t gran = 0;
  const CUmulticastObjectProp prop = cutest::mcProp(1, 0);
  ASSERT_OK(cuMulticastGetGranularity(&gran, &prop, CU_MULTICAST_GRANULARITY_MINIMUM));
  // Each user binds its own memory at its own offset of the object.
  const CUmemAllocationProp memProp = cutest::devicePinned(0);
  std::vector<CUmemGenericAllocationHandle> memory(kUsers);
  for (auto& m : memory) ASSERT_OK(cuMemCreate(&m, gran, &memProp, 0));
  std::atomic<int> nextUser{0};
  Race<CUmemGenericAllocationHandle> race;
  race.ctx = ctx;
  race.create = [&] {
    CUmemGenericAllocationHandle mc = 0;
    const CUmulticastObjectProp p = cutest::mcProp(1, gran * kUsers);
    EXPECT_OK(cuMulticastCreate(&mc, &p));
    EXPECT_OK(cuMulticastAddDevice(mc, 0));
    return mc;
  };
  race.destroy = [](CUmemGenericAllocationHandle mc) { EXPECT_OK(cuMemRelease(mc)); };
  race.use = [&](CUmemGenericAllocationHandle mc, const auto& check) {
    thread_local int user = nextUser.fetch_add(1);
    const size_t offset = gran * static_cast<size_t>(user);
    const CUresult bound = cuMulticastBindMem(mc, offset, memory[static_cast<size_t>(user)], 0, gran, 0);
    check("cuMulticastBindMem", bound, ok);
    if (bound == CUDA_SUCCESS) check("cuMulticastUnbind", cuMulticastUnbind(mc, 0, offset, gran), ok);
    CUmemAllocationProp got{};
    check("cuMemGetAllocationPropertiesFromHandle", cuMemGetAllocationPropertiesFromHandle(&got, mc), ok);
    // The creator added device 0 already; adding it again is refused whether or not the object lives.
    const CUresult added = cuMulticastAddDevice(mc, 0);
    if (added == CUDA_SUCCESS) check("cuMulticastAddDevice (again)", added, Allowed{});
  };
  race.run();
  for (auto m : memory) EXPECT_OK(cuMemRelease(m));
}

TEST_F(HandleRace, ReservationFreedWhileUsed) {
  // A freed reservation is CUDA_ERROR_INVALID_VALUE to the VMM calls.
  const Allowed ok{CUDA_SUCCESS, CUDA_ERROR_INVALID_VALUE};
  const CUmemAllocationProp prop = cutest::devicePinned(0);
  size_t gran = 0;
  ASSERT_OK(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  std::vector<CUmemGenericAllocationHandle> memory(kUsers);
  for (auto& m : memory) ASSERT_OK(cuMemCreate(&m, gran, &prop, 0));
  std::atomic<int> nextUser{0};
  std::atomic<CUdeviceptr> freeing{0};
  Race<CUdeviceptr> race;
  race.ctx = ctx;
  race.create = [&] {
    CUdeviceptr va = 0;
    EXPECT_OK(cuMemAddressReserve(&va, gran * kUsers, 0, 0, 0));
    freeing.store(0);  // (the new reservation may lie where the last one did)
    return va;
  };
  // A reservation with a user's mapping in it cannot be freed yet: the user unmaps it next. Users
  // that see the free coming map no more there (those already mapping race it).
  race.destroy = [&](CUdeviceptr va) {
    freeing.store(va);
    CUresult r;
    while ((r = cuMemAddressFree(va, gran * kUsers)) != CUDA_SUCCESS) {
      EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, r);
      std::this_thread::yield();
    }
  };
  race.use = [&](CUdeviceptr va, const auto& check) {
    thread_local int user = nextUser.fetch_add(1);
    const CUdeviceptr at = va + gran * static_cast<size_t>(user);
    const CUresult mapped = freeing.load() == va ? CUDA_ERROR_INVALID_VALUE : cuMemMap(at, gran, 0, memory[static_cast<size_t>(user)], 0);
    check("cuMemMap", mapped, ok);
    if (mapped == CUDA_SUCCESS) {
      const CUmemAccessDesc rw = cutest::readWrite(0);
      check("cuMemSetAccess", cuMemSetAccess(at, gran, &rw, 1), Allowed{CUDA_SUCCESS});
      check("cuMemsetD32", cuMemsetD32(at, 2, 4), Allowed{CUDA_SUCCESS});
      check("cuMemUnmap", cuMemUnmap(at, gran), Allowed{CUDA_SUCCESS});
    }
    CUdeviceptr base = 0;
    size_t size = 0;
    check("cuMemGetAddressRange", cuMemGetAddressRange(&base, &size, at),
          Allowed{CUDA_SUCCESS, CUDA_ERROR_NOT_FOUND, CUDA_ERROR_INVALID_VALUE});
  };
  race.run();
  for (auto m : memory) EXPECT_OK(cuMemRelease(m));
}

TEST_F(HandleRace, PinnedHostMemoryFreedWhileUsed) {
  // Host memory the driver no longer knows is CUDA_ERROR_INVALID_VALUE.
  const Allowed ok{CUDA_SUCCESS, CUDA_ERROR_INVALID_VALUE};
  Race<void*> race;
  race.ctx = ctx;
  race.create = [] {
    void* p = nullptr;
    EXPECT_OK(cuMemHostAlloc(&p, kBufferBytes, CU_MEMHOSTALLOC_DEVICEMAP));
    return p;
  };
  race.destroy = [](void* p) { EXPECT_OK(cuMemFreeHost(p)); };
  race.use = [&](void* p, const auto& check) {
    unsigned flags = 0;
    check("cuMemHostGetFlags", cuMemHostGetFlags(&flags, p), ok);
    CUdeviceptr d = 0;
    check("cuMemHostGetDevicePointer", cuMemHostGetDevicePointer(&d, p, 0), ok);
    CUmemorytype type{};
    check("cuPointerGetAttribute", cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                                         reinterpret_cast<CUdeviceptr>(p)),
          Allowed{CUDA_SUCCESS, CUDA_ERROR_INVALID_VALUE});
  };
  race.run();
}

TEST_F(HandleRace, IpcMemoryHandleOfFreedMemory) {
  // Exporting freed memory is CUDA_ERROR_INVALID_VALUE; opening a handle in the process that made
  // it is CUDA_ERROR_INVALID_CONTEXT (ipc.cpp), or CUDA_ERROR_INVALID_VALUE once the memory is gone.
  const Allowed ok{CUDA_SUCCESS, CUDA_ERROR_INVALID_VALUE};
  Race<CUdeviceptr> race;
  race.ctx = ctx;
  race.create = [] {
    CUdeviceptr p = 0;
    EXPECT_OK(cuMemAlloc(&p, kBufferBytes));
    return p;
  };
  race.destroy = [](CUdeviceptr p) { EXPECT_OK(cuMemFree(p)); };
  race.use = [&](CUdeviceptr p, const auto& check) {
    CUipcMemHandle handle{};
    const CUresult got = cuIpcGetMemHandle(&handle, p);
    check("cuIpcGetMemHandle", got, ok);
    if (got == CUDA_SUCCESS) {
      CUdeviceptr opened = 0;
      check("cuIpcOpenMemHandle", cuIpcOpenMemHandle(&opened, handle, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS),
            Allowed{CUDA_ERROR_INVALID_CONTEXT, CUDA_ERROR_INVALID_VALUE});
    }
  };
  race.run();
}

TEST_F(HandleRace, IpcEventDestroyedWhileUsed) {
  const Allowed ok{CUDA_SUCCESS, CUDA_ERROR_INVALID_HANDLE};
  CUstream stream = nullptr;
  ASSERT_OK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  Race<CUevent> race;
  race.ctx = ctx;
  race.create = [] {
    CUevent e = nullptr;
    EXPECT_OK(cuEventCreate(&e, CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING));
    return e;
  };
  race.destroy = [](CUevent e) { EXPECT_OK(cuEventDestroy(e)); };
  race.use = [&](CUevent e, const auto& check) {
    CUipcEventHandle handle{};
    const CUresult got = cuIpcGetEventHandle(&handle, e);
    check("cuIpcGetEventHandle", got, ok);
    if (got == CUDA_SUCCESS) {
      CUevent opened = nullptr;
      const CUresult r = cuIpcOpenEventHandle(&opened, handle);
      check("cuIpcOpenEventHandle", r, Allowed{CUDA_ERROR_INVALID_CONTEXT, CUDA_ERROR_MAP_FAILED});
    }
    check("cuEventRecord", cuEventRecord(e, stream), ok);
    check("cuStreamWaitEvent", cuStreamWaitEvent(stream, e, 0), ok);
    check("cuEventSynchronize", cuEventSynchronize(e), ok);
  };
  race.run();
  EXPECT_OK(cuStreamDestroy(stream));
}

}  // namespace
