// Real call sequences, written for this suite after the descriptions in
// shared/reference/clients.md (no code from those projects): NCCL, PyTorch symmetric memory,
// TensorRT-LLM, mscclpp and ThunderKittens. Ranks are threads of this process, one per device.
#include <cudaTypedefs.h>

#include <atomic>
#include <future>
#include <thread>

#include "tests/multicast/multicast_test.h"

namespace {

using namespace mctest;

class Clients : public McTest {};

void* fdArg(int fd) { return reinterpret_cast<void*>(static_cast<intptr_t>(fd)); }

// The multicast entry points as a client that resolves them by version finds them.
struct McApi {
  PFN_cuMulticastCreate_v12010 create = nullptr;
  PFN_cuMulticastAddDevice_v12010 addDevice = nullptr;
  PFN_cuMulticastBindMem_v12010 bindMem = nullptr;
  PFN_cuMulticastBindAddr_v12010 bindAddr = nullptr;
  PFN_cuMulticastUnbind_v12010 unbind = nullptr;
  PFN_cuMulticastGetGranularity_v12010 granularity = nullptr;

  static McApi resolve(int version) {
    McApi api;
    auto get = [&](const char* name, auto* fn) {
      void* p = nullptr;
      CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
      EXPECT_OK(cuGetProcAddress(name, &p, version, CU_GET_PROC_ADDRESS_DEFAULT, &st)) << name;
      EXPECT_EQ(CU_GET_PROC_ADDRESS_SUCCESS, st) << name;
      *fn = reinterpret_cast<std::remove_pointer_t<decltype(fn)>>(p);
    };
    get("cuMulticastCreate", &api.create);
    get("cuMulticastAddDevice", &api.addDevice);
    get("cuMulticastBindMem", &api.bindMem);
    get("cuMulticastBindAddr", &api.bindAddr);
    get("cuMulticastUnbind", &api.unbind);
    get("cuMulticastGetGranularity", &api.granularity);
    return api;
  }
};

// A rank's context: its device's primary context, current on its thread.
struct RankContext {
  explicit RankContext(int d) : dev(d) {
    EXPECT_OK(cuDevicePrimaryCtxRetain(&ctx, dev));
    EXPECT_OK(cuCtxSetCurrent(ctx));
  }
  ~RankContext() {
    cuCtxSetCurrent(nullptr);
    cuDevicePrimaryCtxRelease(dev);
  }
  int dev;
  CUcontext ctx = nullptr;
};

// NCCL (NVLS): local rank 0 creates the object and passes a POSIX descriptor to the others; every
// rank adds its own device, makes, maps and grants its memory, meets the others at a barrier, binds,
// then maps the multicast range.
TEST_F(Clients, NcclStyle) {
  INIT();
  constexpr int kRanks = 8;
  const McApi api = McApi::resolve(12010);
  ASSERT_FALSE(HasFailure());
  Barrier barrier(kRanks);
  std::promise<std::pair<CUmemGenericAllocationHandle, int>> created;
  std::shared_future<std::pair<CUmemGenericAllocationHandle, int>> shared = created.get_future().share();
  std::vector<CUresult> failures(kRanks, CUDA_SUCCESS);
  auto rank = [&](int r) {
    RankContext rc(r);
    auto check = [&](CUresult res) {
      if (res != CUDA_SUCCESS && failures[r] == CUDA_SUCCESS) failures[r] = res;
    };
    int supported = 0;
    check(cuDeviceGetAttribute(&supported, CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED, r));
    CUmulticastObjectProp mp = mcProp(kRanks, 0, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    size_t gran = 0;
    check(api.granularity(&gran, &mp, CU_MULTICAST_GRANULARITY_RECOMMENDED));
    const size_t size = gran;  // one recommended granule per rank
    mp.size = size;
    CUmemGenericAllocationHandle mc = 0;
    if (r == 0) {
      int fd = -1;
      check(api.create(&mc, &mp));
      check(cuMemExportToShareableHandle(&fd, mc, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
      created.set_value({mc, fd});
    } else {
      const int fd = shared.get().second;
      check(cuMemImportFromShareableHandle(&mc, fdArg(fd), CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
    }
    check(api.addDevice(mc, r));
    CUmemAllocationProp prop = devicePinned(r, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    size_t memGran = 0;
    check(cuMemGetAllocationGranularity(&memGran, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
    CUdeviceptr ucVa = 0;
    CUmemGenericAllocationHandle mem = 0;
    check(cuMemAddressReserve(&ucVa, size, memGran, 0, 0));
    check(cuMemCreate(&mem, size, &prop, 0));
    check(cuMemMap(ucVa, size, 0, mem, 0));
    CUmemAccessDesc a = readWrite(r);
    check(cuMemSetAccess(ucVa, size, &a, 1));
    barrier.arriveAndWait();
    check(api.bindMem(mc, 0, mem, 0, size, 0));
    CUdeviceptr mcVa = 0;
    check(cuMemAddressReserve(&mcVa, size, gran, 0, 0));
    check(cuMemMap(mcVa, size, 0, mc, 0));
    check(cuMemSetAccess(mcVa, size, &a, 1));
    barrier.arriveAndWait();
    // Teardown, as NCCL does it: unbind, release the multicast handle, unmap everything.
    check(api.unbind(mc, r, 0, size));
    check(cuMemRelease(mc));
    check(cuMemUnmap(mcVa, size));
    check(cuMemAddressFree(mcVa, size));
    check(cuMemUnmap(ucVa, size));
    check(cuMemRelease(mem));
    check(cuMemAddressFree(ucVa, size));
  };
  std::vector<std::thread> threads;
  for (int r = 0; r < kRanks; ++r) threads.emplace_back(rank, r);
  for (auto& t : threads) t.join();
  for (int r = 0; r < kRanks; ++r) EXPECT_CU(CUDA_SUCCESS, failures[r]) << "rank " << r;
  ::close(shared.get().second);
  expectCountsEqual(baseline, Counts::now());
}

// PyTorch symmetric memory: rank 0 creates and exports; every rank, rank 0 included, imports, adds
// its device and binds; an all-gather of success; rank 0 drops its creation reference; every rank
// maps.
TEST_F(Clients, PyTorchStyle) {
  INIT();
  constexpr int kRanks = 8;
  const McApi api = McApi::resolve(12030);
  ASSERT_FALSE(HasFailure());
  Barrier barrier(kRanks);
  std::promise<int> exported;
  std::shared_future<int> fdFuture = exported.get_future().share();
  std::atomic<int> bound{0};
  std::vector<CUresult> failures(kRanks, CUDA_SUCCESS);
  CUmemGenericAllocationHandle creation = 0;
  auto rank = [&](int r) {
    RankContext rc(r);
    auto check = [&](CUresult res) {
      if (res != CUDA_SUCCESS && failures[r] == CUDA_SUCCESS) failures[r] = res;
    };
    const size_t size = 2 * kMin;
    if (r == 0) {
      CUmulticastObjectProp mp = mcProp(kRanks, size, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
      int fd = -1;
      check(api.create(&creation, &mp));
      check(cuMemExportToShareableHandle(&fd, creation, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
      exported.set_value(fd);
    }
    CUmemGenericAllocationHandle mc = 0;
    check(cuMemImportFromShareableHandle(&mc, fdArg(fdFuture.get()), CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
    check(api.addDevice(mc, r));
    CUmemGenericAllocationHandle mem = 0;
    CUmemAllocationProp prop = devicePinned(r, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    check(cuMemCreate(&mem, size, &prop, 0));
    // Binds block until the last rank has added its device.
    if (api.bindMem(mc, 0, mem, 0, size, 0) == CUDA_SUCCESS) ++bound;
    barrier.arriveAndWait();  // the all-gather of success
    if (r == 0) check(cuMemRelease(creation));
    barrier.arriveAndWait();
    CUdeviceptr va = 0;
    check(cuMemAddressReserve(&va, size, 0, 0, 0));
    check(cuMemMap(va, size, 0, mc, 0));
    CUmemAccessDesc a = readWrite(r);
    check(cuMemSetAccess(va, size, &a, 1));
    barrier.arriveAndWait();
    check(cuMemUnmap(va, size));
    check(cuMemAddressFree(va, size));
    check(api.unbind(mc, r, 0, size));
    check(cuMemRelease(mc));
    check(cuMemRelease(mem));
  };
  std::vector<std::thread> threads;
  for (int r = 0; r < kRanks; ++r) threads.emplace_back(rank, r);
  for (auto& t : threads) t.join();
  EXPECT_EQ(kRanks, bound.load());
  for (int r = 0; r < kRanks; ++r) EXPECT_CU(CUDA_SUCCESS, failures[r]) << "rank " << r;
  ::close(fdFuture.get());
  expectCountsEqual(baseline, Counts::now());
}

// TensorRT-LLM: each rank maps the multicast range and sets access BEFORE it binds (the map
// waits for the whole team).
TEST_F(Clients, TensorRtLlmStyle) {
  INIT();
  constexpr int kRanks = 4;
  Barrier barrier(kRanks);
  std::promise<int> exported;
  std::shared_future<int> fdFuture = exported.get_future().share();
  std::vector<CUresult> failures(kRanks, CUDA_SUCCESS);
  auto rank = [&](int r) {
    RankContext rc(r);
    auto check = [&](CUresult res) {
      if (res != CUDA_SUCCESS && failures[r] == CUDA_SUCCESS) failures[r] = res;
    };
    const size_t size = 4 * kMin;
    CUmemGenericAllocationHandle mc = 0;
    if (r == 0) {
      CUmulticastObjectProp mp = mcProp(kRanks, size, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
      int fd = -1;
      check(cuMulticastCreate(&mc, &mp));
      check(cuMemExportToShareableHandle(&fd, mc, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
      exported.set_value(fd);
    } else {
      check(cuMemImportFromShareableHandle(&mc, fdArg(fdFuture.get()), CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
    }
    // Ranks join at different times; the maps wait for the last. The stagger makes the early ranks'
    // maps likely to block (the path under test) and is no timing assumption: ranks that joined at
    // once would find the team complete, with the same results.
    std::this_thread::sleep_for(std::chrono::milliseconds(30 * r));
    check(cuMulticastAddDevice(mc, r));
    CUdeviceptr mcVa = 0;
    check(cuMemAddressReserve(&mcVa, size, 0, 0, 0));
    check(cuMemMap(mcVa, size, 0, mc, 0));
    CUmemAccessDesc a = readWrite(r);
    check(cuMemSetAccess(mcVa, size, &a, 1));
    CUmemGenericAllocationHandle mem = 0;
    CUmemAllocationProp prop = devicePinned(r, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    check(cuMemCreate(&mem, size, &prop, 0));
    CUdeviceptr ucVa = 0;
    check(cuMemAddressReserve(&ucVa, size, 0, 0, 0));
    check(cuMemMap(ucVa, size, 0, mem, 0));
    check(cuMemSetAccess(ucVa, size, &a, 1));
    check(cuMulticastBindMem(mc, 0, mem, 0, size, 0));
    barrier.arriveAndWait();
    check(cuMulticastUnbind(mc, r, 0, size));
    check(cuMemUnmap(mcVa, size));
    check(cuMemAddressFree(mcVa, size));
    check(cuMemUnmap(ucVa, size));
    check(cuMemAddressFree(ucVa, size));
    check(cuMemRelease(mem));
    check(cuMemRelease(mc));
  };
  std::vector<std::thread> threads;
  for (int r = 0; r < kRanks; ++r) threads.emplace_back(rank, r);
  for (auto& t : threads) t.join();
  for (int r = 0; r < kRanks; ++r) EXPECT_CU(CUDA_SUCCESS, failures[r]) << "rank " << r;
  ::close(fdFuture.get());
  expectCountsEqual(baseline, Counts::now());
}

// mscclpp: handle types POSIX_FD and FABRIC together; user buffers bound with cuMulticastBindAddr
// at a non-zero offset; the multicast map covers [0, mcOffset + size), since multicast maps start
// at offset 0. The FABRIC handle travels between ranks.
TEST_F(Clients, MscclppStyle) {
  INIT("gb200-nvl72");
  constexpr int kRanks = 4;
  const int devices[kRanks] = {0, 17, 40, 71};
  const unsigned types = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR | CU_MEM_HANDLE_TYPE_FABRIC;
  Barrier barrier(kRanks);
  std::promise<CUmemFabricHandle> exported;
  std::shared_future<CUmemFabricHandle> fabric = exported.get_future().share();
  std::vector<CUresult> failures(kRanks, CUDA_SUCCESS);
  auto rank = [&](int r) {
    const int dev = devices[r];
    RankContext rc(dev);
    auto check = [&](CUresult res) {
      if (res != CUDA_SUCCESS && failures[r] == CUDA_SUCCESS) failures[r] = res;
    };
    const size_t mcSize = 8 * kMin;
    CUmemGenericAllocationHandle mc = 0;
    if (r == 0) {
      CUmulticastObjectProp mp = mcProp(kRanks, mcSize, types);
      check(cuMulticastCreate(&mc, &mp));
      CUmemFabricHandle fh;
      check(cuMemExportToShareableHandle(&fh, mc, CU_MEM_HANDLE_TYPE_FABRIC, 0));
      exported.set_value(fh);
    } else {
      CUmemFabricHandle fh = fabric.get();
      check(cuMemImportFromShareableHandle(&mc, &fh, CU_MEM_HANDLE_TYPE_FABRIC));
    }
    check(cuMulticastAddDevice(mc, dev));
    // Two user buffers, bound at offsets 2 and 5 (in minimum granules).
    const size_t offsets[2] = {2 * kMin, 5 * kMin};
    const size_t sizes[2] = {2 * kMin, 3 * kMin};
    CUmemGenericAllocationHandle mem[2] = {0, 0};
    CUdeviceptr buf[2] = {0, 0};
    CUmemAccessDesc a = readWrite(dev);
    for (int i = 0; i < 2; ++i) {
      CUmemAllocationProp prop = devicePinned(dev, types);
      check(cuMemCreate(&mem[i], sizes[i], &prop, 0));
      check(cuMemAddressReserve(&buf[i], sizes[i], 0, 0, 0));
      check(cuMemMap(buf[i], sizes[i], 0, mem[i], 0));
      check(cuMemSetAccess(buf[i], sizes[i], &a, 1));
      // The buffer's shareable types, as mscclpp checks before it binds.
      unsigned long long allowed = 0;
      check(cuPointerGetAttribute(&allowed, CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES, buf[i]));
      if ((allowed & CU_MEM_HANDLE_TYPE_FABRIC) == 0) check(CUDA_ERROR_UNKNOWN);
      check(cuMulticastBindAddr(mc, offsets[i], buf[i], sizes[i], 0));
    }
    CUdeviceptr mcVa[2] = {0, 0};
    for (int i = 0; i < 2; ++i) {
      const size_t span = offsets[i] + sizes[i];
      check(cuMemAddressReserve(&mcVa[i], span, 0, 0, 0));
      check(cuMemMap(mcVa[i], span, 0, mc, 0));
      check(cuMemSetAccess(mcVa[i], span, &a, 1));
    }
    barrier.arriveAndWait();
    for (int i = 0; i < 2; ++i) {
      const size_t span = offsets[i] + sizes[i];
      check(cuMemUnmap(mcVa[i], span));
      check(cuMemAddressFree(mcVa[i], span));
      check(cuMulticastUnbind(mc, dev, offsets[i], sizes[i]));
      check(cuMemUnmap(buf[i], sizes[i]));
      check(cuMemAddressFree(buf[i], sizes[i]));
      check(cuMemRelease(mem[i]));
    }
    check(cuMemRelease(mc));
  };
  std::vector<std::thread> threads;
  for (int r = 0; r < kRanks; ++r) threads.emplace_back(rank, r);
  for (auto& t : threads) t.join();
  for (int r = 0; r < kRanks; ++r) EXPECT_CU(CUDA_SUCCESS, failures[r]) << "rank " << r;
  expectCountsEqual(baseline, Counts::now());
}

// ThunderKittens: one thread drives every device: granularity asked with prop.size == 0, create
// (its return value unchecked by the client; checked here), add each device, allocate, bind, map,
// then unbind and free everything.
TEST_F(Clients, ThunderKittensStyle) {
  INIT();
  constexpr int kDevices = 8;
  CUmulticastObjectProp mp = mcProp(kDevices, 0);
  size_t gran = 0;
  ASSERT_OK(cuMulticastGetGranularity(&gran, &mp, CU_MULTICAST_GRANULARITY_MINIMUM));
  const size_t size = 3 * gran;
  mp.size = size;
  CUmemGenericAllocationHandle mc = 0;
  ASSERT_OK(cuMulticastCreate(&mc, &mp));
  for (int d = 0; d < kDevices; ++d) ASSERT_OK(cuMulticastAddDevice(mc, d));
  std::vector<CUmemGenericAllocationHandle> mem(kDevices);
  std::vector<CUdeviceptr> ucVa(kDevices);
  for (int d = 0; d < kDevices; ++d) {
    mem[d] = makeMem(d, size);
    ucVa[d] = mapRange(mem[d], size, {d});
    // Alternate the two bind forms.
    if (d % 2 == 0) {
      ASSERT_OK(cuMulticastBindMem(mc, 0, mem[d], 0, size, 0)) << d;
    } else {
      ASSERT_OK(cuMulticastBindAddr(mc, 0, ucVa[d], size, 0)) << d;
    }
  }
  std::vector<int> all;
  for (int d = 0; d < kDevices; ++d) all.push_back(d);
  CUdeviceptr mcVa = mapRange(mc, size, all);
  EXPECT_EQ(baseline.mappings + kDevices + 1, Counts::now().mappings);
  for (int d = 0; d < kDevices; ++d) EXPECT_OK(cuMulticastUnbind(mc, d, 0, size));
  unmapRange(mcVa, size);
  EXPECT_OK(cuMemRelease(mc));
  for (int d = 0; d < kDevices; ++d) {
    unmapRange(ucVa[d], size);
    EXPECT_OK(cuMemRelease(mem[d]));
  }
  expectCountsEqual(baseline, Counts::now());
  // The object's slot came back with it: 128 objects bind again.
  CUmemGenericAllocationHandle big = makeMem(0, 128 * kMin);
  std::vector<CUmemGenericAllocationHandle> objs;
  for (int i = 0; i < 128; ++i) {
    objs.push_back(makeTeam({0}, kMin));
    ASSERT_OK(cuMulticastBindMem(objs.back(), 0, big, i * kMin, kMin, 0)) << i;
  }
  for (auto o : objs) EXPECT_OK(cuMemRelease(o));
  EXPECT_OK(cuMemRelease(big));
  expectCountsEqual(baseline, Counts::now());
}

// ThunderKittens ignores cuMulticastCreate's result: when it fails, the handle it goes on with
// (still 0, or whatever the variable held) must be refused by every later call, never crash.
TEST_F(Clients, UncheckedFailedCreateIsRefusedLater) {
  INIT();
  CUmulticastObjectProp bad = mcProp(8, 3 * kMiB);  // not a multiple of the granularity
  for (CUmemGenericAllocationHandle mc : {CUmemGenericAllocationHandle{0}, CUmemGenericAllocationHandle{0xdeadbeef}}) {
    const CUmemGenericAllocationHandle before = mc;
    EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastCreate(&mc, &bad));
    EXPECT_EQ(before, mc);
    CUmemGenericAllocationHandle mem = makeMem(0, kMin);
    CUdeviceptr va = 0;
    ASSERT_OK(cuMemAddressReserve(&va, kMin, 0, 0, 0));
    EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastAddDevice(mc, 0));
    EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastBindMem(mc, 0, mem, 0, kMin, 0));
    EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMemMap(va, kMin, 0, mc, 0));
    EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastUnbind(mc, 0, 0, kMin));
    EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMemRelease(mc));
    EXPECT_OK(cuMemAddressFree(va, kMin));
    EXPECT_OK(cuMemRelease(mem));
  }
  expectCountsEqual(baseline, Counts::now());
}

}  // namespace
