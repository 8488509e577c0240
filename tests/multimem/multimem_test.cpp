// The multimem data path: mcsim's kernel library launched through the driver API on a simulated
// 8-GPU node, with results checked against values computed here, the sticky errors of bad
// accesses, user-registered models, and the module/library entry points. Runs against mcsim
// only (it calls cuMulticast* functions). Each TEST runs in a process of its own.
#include <cuda.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "mcsim/api.h"
#include "mcsim/kernel_model.h"
#include "mcsim/kernels.h"
#include "model/reduction.h"
#include "tests/common/cu_expect.h"
#include "tests/common/vmm_props.h"

namespace {

constexpr size_t kMiB = size_t{1} << 20;
constexpr size_t kBuf = 2 * kMiB;  // one granule per member

// A PTX image with entries that are not in the library: one a test registers a model for, one
// that never gets a model.
const char* const kExtraPtx =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry user_double(.param .u64 a, .param .u64 b, .param .u64 c) { ret; }\n"
    ".visible .entry no_model_kernel() { ret; }\n";

// N GPUs with a multicast team over one granule each, plus a signal word team for barriers.
class Team : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK(cuInit(0));
    ASSERT_OK(cuDeviceGetCount(&n));
    ctx.resize(n);
    for (int d = 0; d < n; ++d) ASSERT_OK(cuDevicePrimaryCtxRetain(&ctx[d], d));
    ASSERT_OK(cuCtxSetCurrent(ctx[0]));
    makeTeam(kBuf, &mcData, &local, &mcView);
    makeTeam(kBuf, &mcSignal, &signalLocal, &signalMc);
    streams.resize(n);
    modules.resize(n);
    for (int d = 0; d < n; ++d) {
      ASSERT_OK(cuCtxSetCurrent(ctx[d]));
      ASSERT_OK(cuStreamCreate(&streams[d], CU_STREAM_NON_BLOCKING));
      ASSERT_OK(cuModuleLoadData(&modules[d], mcsim_kernel_image));
      ASSERT_OK(cuMemsetD32(signalLocal[d], 0, kBuf / 4));
    }
    ASSERT_OK(cuCtxSetCurrent(ctx[0]));
  }

  // A multicast object over `bytes` per member; each member's memory mapped at locals[d] (for
  // device d only) and the object mapped at mcs[d] (for device d).
  void makeTeam(size_t bytes, CUmemGenericAllocationHandle* mc, std::vector<CUdeviceptr>* locals,
                std::vector<CUdeviceptr>* mcs) {
    const CUmulticastObjectProp p = cutest::mcProp(static_cast<unsigned>(n), bytes);
    ASSERT_OK(cuMulticastCreate(mc, &p));
    for (int d = 0; d < n; ++d) ASSERT_OK(cuMulticastAddDevice(*mc, d));
    locals->resize(n);
    mcs->resize(n);
    for (int d = 0; d < n; ++d) {
      ASSERT_OK(cuCtxSetCurrent(ctx[d]));
      const CUmemAllocationProp prop = cutest::devicePinned(d);
      CUmemGenericAllocationHandle mem;
      ASSERT_OK(cuMemCreate(&mem, bytes, &prop, 0));
      ASSERT_OK(cuMulticastBindMem(*mc, 0, mem, 0, bytes, 0));
      const CUmemAccessDesc rw = cutest::readWrite(d);
      ASSERT_OK(cuMemAddressReserve(&(*locals)[d], bytes, 0, 0, 0));
      ASSERT_OK(cuMemMap((*locals)[d], bytes, 0, mem, 0));
      ASSERT_OK(cuMemSetAccess((*locals)[d], bytes, &rw, 1));
      ASSERT_OK(cuMemRelease(mem));
      ASSERT_OK(cuMemAddressReserve(&(*mcs)[d], bytes, 0, 0, 0));
      ASSERT_OK(cuMemMap((*mcs)[d], bytes, 0, *mc, 0));
      ASSERT_OK(cuMemSetAccess((*mcs)[d], bytes, &rw, 1));
    }
  }

  CUfunction fn(int d, const char* name) {
    CUfunction f = nullptr;
    EXPECT_OK(cuModuleGetFunction(&f, modules[d], name));
    return f;
  }

  void put(int d, const void* data, size_t bytes, size_t offset = 0) {
    ASSERT_OK(cuCtxSetCurrent(ctx[d]));
    ASSERT_OK(cuMemcpyHtoD(local[d] + offset, data, bytes));
  }
  template <typename T>
  std::vector<T> get(int d, size_t count, size_t offset = 0) {
    std::vector<T> out(count);
    EXPECT_OK(cuCtxSetCurrent(ctx[d]));
    EXPECT_OK(cuMemcpyDtoH(out.data(), local[d] + offset, count * sizeof(T)));
    return out;
  }
  void syncAll() {
    for (int d = 0; d < n; ++d) {
      ASSERT_OK(cuCtxSetCurrent(ctx[d]));
      ASSERT_OK(cuStreamSynchronize(streams[d]));
    }
  }

  int n = 0;
  std::vector<CUcontext> ctx;
  CUmemGenericAllocationHandle mcData = 0, mcSignal = 0;
  std::vector<CUdeviceptr> local, mcView, signalLocal, signalMc;
  std::vector<CUstream> streams;
  std::vector<CUmodule> modules;
};

TEST_F(Team, StoreReachesEveryMember) {
  std::vector<uint32_t> src(1024);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint32_t>(i * 7 + 1);
  put(0, src.data(), src.size() * 4, kMiB);  // the source: GPU 0's second MiB
  CUdeviceptr dst = mcView[0], from = local[0] + kMiB;
  uint64_t count = src.size();
  uint32_t dtype = MCSIM_DTYPE_U32, vec = 1;
  void* args[] = {&dst, &from, &count, &dtype, &vec};
  ASSERT_OK(cuCtxSetCurrent(ctx[0]));
  ASSERT_OK(cuLaunchKernel(fn(0, MCSIM_KERNEL_MM_ST), 4, 1, 1, 256, 1, 1, 0, streams[0], args, nullptr));
  syncAll();
  for (int d = 0; d < n; ++d) EXPECT_EQ(src, get<uint32_t>(d, src.size())) << "member " << d;
}

TEST_F(Team, RedAddsAtEveryMemberAndLdReduceSumsInAscendingDeviceOrder) {
  // Every member holds 10 + d; GPU 1 adds 5 everywhere with multimem.red.
  for (int d = 0; d < n; ++d) {
    std::vector<uint32_t> v(256, 10u + static_cast<uint32_t>(d));
    put(d, v.data(), v.size() * 4);
  }
  std::vector<uint32_t> five(256, 5);
  put(1, five.data(), five.size() * 4, kMiB);
  CUdeviceptr mc = mcView[1], from = local[1] + kMiB;
  uint64_t count = 256;
  uint32_t dtype = MCSIM_DTYPE_U32, vec = 1, op = MCSIM_REDOP_ADD;
  void* redArgs[] = {&mc, &from, &count, &dtype, &vec};
  ASSERT_OK(cuCtxSetCurrent(ctx[1]));
  ASSERT_OK(cuLaunchKernel(fn(1, MCSIM_KERNEL_MM_RED), 1, 1, 1, 256, 1, 1, 0, streams[1], redArgs, nullptr));
  syncAll();
  for (int d = 0; d < n; ++d) EXPECT_EQ(15u + static_cast<uint32_t>(d), get<uint32_t>(d, 1)[0]);
  // ld_reduce from GPU 2 into its second MiB: the sum over members.
  CUdeviceptr out = local[2] + kMiB, mc2 = mcView[2];
  void* ldArgs[] = {&out, &mc2, &count, &dtype, &op, &vec};
  ASSERT_OK(cuCtxSetCurrent(ctx[2]));
  ASSERT_OK(cuLaunchKernel(fn(2, MCSIM_KERNEL_MM_LD_REDUCE), 1, 1, 1, 256, 1, 1, 0, streams[2], ldArgs, nullptr));
  syncAll();
  uint32_t want = 0;
  for (int d = 0; d < n; ++d) want += 15u + static_cast<uint32_t>(d);
  EXPECT_EQ(want, get<uint32_t>(2, 1, kMiB)[0]);
  // Float order is visible: 1e8, then 1 seven times, rounds differently from 1 x 7 then 1e8.
  for (int d = 0; d < n; ++d) {
    const float v = d == 0 ? 1e8f : 1.0f;
    put(d, &v, 4);
  }
  dtype = MCSIM_DTYPE_F32;
  count = 1;
  ASSERT_OK(cuCtxSetCurrent(ctx[2]));
  ASSERT_OK(cuLaunchKernel(fn(2, MCSIM_KERNEL_MM_LD_REDUCE), 1, 1, 1, 32, 1, 1, 0, streams[2], ldArgs, nullptr));
  syncAll();
  float ascending = 1e8f;
  for (int d = 1; d < n; ++d) ascending += 1.0f;
  EXPECT_EQ(ascending, get<float>(2, 1, kMiB)[0]);  // 1e8: each +1 rounds away
}


TEST_F(Team, OneShotAndTwoShotAllReduceSumEveryMembersBuffer) {
  const uint64_t count = 1000;  // not a multiple of 8 x 4: the last share is short
  auto fill = [&] {
    for (int d = 0; d < n; ++d) {
      std::vector<float> v(count);
      for (uint64_t i = 0; i < count; ++i) v[i] = static_cast<float>((i % 13) * (d + 1));
      put(d, v.data(), count * 4);
    }
  };
  std::vector<float> want(count);
  for (uint64_t i = 0; i < count; ++i) {
    float s = 0;
    for (int d = 0; d < n; ++d) s += static_cast<float>((i % 13) * (d + 1));
    want[i] = s;
  }
  uint32_t dtype = MCSIM_DTYPE_F32, world = static_cast<uint32_t>(n), epoch = 1;
  uint64_t c = count;
  fill();
  for (int d = 0; d < n; ++d) {
    CUdeviceptr mc = mcView[d], out = local[d] + kMiB, sigMc = signalMc[d], sig = signalLocal[d];
    void* args[] = {&mc, &out, &c, &dtype, &sigMc, &sig, &world, &epoch};
    ASSERT_OK(cuCtxSetCurrent(ctx[d]));
    ASSERT_OK(cuLaunchKernel(fn(d, MCSIM_KERNEL_ALLREDUCE_ONESHOT), 2, 1, 1, 512, 1, 1, 0, streams[d], args, nullptr));
  }
  syncAll();
  for (int d = 0; d < n; ++d) EXPECT_EQ(want, get<float>(d, count, kMiB)) << "one-shot, member " << d;
  epoch = 3;  // the one-shot used epochs 1 and 2
  for (int d = 0; d < n; ++d) {
    CUdeviceptr mc = mcView[d], sigMc = signalMc[d], sig = signalLocal[d];
    uint32_t rank = static_cast<uint32_t>(d);
    void* args[] = {&mc, &c, &dtype, &sigMc, &sig, &rank, &world, &epoch};
    ASSERT_OK(cuCtxSetCurrent(ctx[d]));
    ASSERT_OK(cuLaunchKernel(fn(d, MCSIM_KERNEL_ALLREDUCE_TWOSHOT), 2, 1, 1, 512, 1, 1, 0, streams[d], args, nullptr));
  }
  syncAll();
  for (int d = 0; d < n; ++d) EXPECT_EQ(want, get<float>(d, count)) << "two-shot, member " << d;
}

TEST_F(Team, MultimemOnAPlainAddressPoisonsTheContextUntilReset) {
  CUdeviceptr notMc = local[0], from = local[0] + kMiB;
  uint64_t count = 16;
  uint32_t dtype = MCSIM_DTYPE_U32, vec = 1;
  void* args[] = {&notMc, &from, &count, &dtype, &vec};
  ASSERT_OK(cuCtxSetCurrent(ctx[0]));
  // The launch succeeds, as on a GPU; the fault shows at the next call.
  EXPECT_OK(cuLaunchKernel(fn(0, MCSIM_KERNEL_MM_ST), 1, 1, 1, 32, 1, 1, 0, streams[0], args, nullptr));
  EXPECT_CU(CUDA_ERROR_ILLEGAL_ADDRESS, cuCtxSynchronize());
  EXPECT_CU(CUDA_ERROR_ILLEGAL_ADDRESS, cuStreamSynchronize(streams[0]));
  CUdeviceptr p = 0;
  EXPECT_CU(CUDA_ERROR_ILLEGAL_ADDRESS, cuMemAlloc(&p, 4096));
  // Other contexts are unaffected.
  ASSERT_OK(cuCtxSetCurrent(ctx[1]));
  EXPECT_OK(cuCtxSynchronize());
  // A reset clears it.
  ASSERT_OK(cuDevicePrimaryCtxReset(0));
  CUcontext fresh = nullptr;
  ASSERT_OK(cuDevicePrimaryCtxRetain(&fresh, 0));
  ASSERT_OK(cuCtxSetCurrent(fresh));
  EXPECT_OK(cuCtxSynchronize());
}

TEST_F(Team, MultimemWhereAMemberHasNothingBoundIsAnIllegalAddress) {
  // A second object whose members bind only the first half of it.
  const CUmulticastObjectProp p = cutest::mcProp(static_cast<unsigned>(n), 2 * kBuf);
  CUmemGenericAllocationHandle mc;
  ASSERT_OK(cuMulticastCreate(&mc, &p));
  for (int d = 0; d < n; ++d) ASSERT_OK(cuMulticastAddDevice(mc, d));
  for (int d = 0; d < n; ++d) {
    ASSERT_OK(cuCtxSetCurrent(ctx[d]));
    const CUmemAllocationProp prop = cutest::devicePinned(d);
    CUmemGenericAllocationHandle mem;
    ASSERT_OK(cuMemCreate(&mem, kBuf, &prop, 0));
    ASSERT_OK(cuMulticastBindMem(mc, 0, mem, 0, kBuf, 0));
    ASSERT_OK(cuMemRelease(mem));
  }
  ASSERT_OK(cuCtxSetCurrent(ctx[3]));
  CUdeviceptr va;
  ASSERT_OK(cuMemAddressReserve(&va, 2 * kBuf, 0, 0, 0));
  ASSERT_OK(cuMemMap(va, 2 * kBuf, 0, mc, 0));
  const CUmemAccessDesc rw = cutest::readWrite(3);
  ASSERT_OK(cuMemSetAccess(va, 2 * kBuf, &rw, 1));
  CUdeviceptr out = local[3];
  uint64_t count = 1024;
  uint32_t dtype = MCSIM_DTYPE_F32, op = MCSIM_REDOP_ADD, vec = 4;
  // The bound half works ...
  void* good[] = {&out, &va, &count, &dtype, &op, &vec};
  EXPECT_OK(cuLaunchKernel(fn(3, MCSIM_KERNEL_MM_LD_REDUCE), 1, 1, 1, 256, 1, 1, 0, streams[3], good, nullptr));
  EXPECT_OK(cuStreamSynchronize(streams[3]));
  // ... a range reaching into the unbound half faults.
  CUdeviceptr edge = va + kBuf - 1024;
  void* bad[] = {&out, &edge, &count, &dtype, &op, &vec};
  EXPECT_OK(cuLaunchKernel(fn(3, MCSIM_KERNEL_MM_LD_REDUCE), 1, 1, 1, 256, 1, 1, 0, streams[3], bad, nullptr));
  EXPECT_CU(CUDA_ERROR_ILLEGAL_ADDRESS, cuStreamSynchronize(streams[3]));
}

TEST_F(Team, MisalignedMultimemIsAMisalignedAddress) {
  CUdeviceptr mc = mcView[0] + 2, from = local[0];
  uint64_t count = 4;
  uint32_t dtype = MCSIM_DTYPE_U32, vec = 1;
  void* args[] = {&mc, &from, &count, &dtype, &vec};
  ASSERT_OK(cuCtxSetCurrent(ctx[0]));
  EXPECT_OK(cuLaunchKernel(fn(0, MCSIM_KERNEL_MM_ST), 1, 1, 1, 32, 1, 1, 0, streams[0], args, nullptr));
  EXPECT_CU(CUDA_ERROR_MISALIGNED_ADDRESS, cuCtxSynchronize());
}

TEST_F(Team, BadLaunchShapesAreRefusedAndBadArgumentsTrap) {
  CUdeviceptr mc = mcView[0], from = local[0];
  uint64_t count = 6;
  uint32_t dtype = MCSIM_DTYPE_U32, vec = 1;
  void* args[] = {&mc, &from, &count, &dtype, &vec};
  ASSERT_OK(cuCtxSetCurrent(ctx[0]));
  const uint64_t before = mcsim::api::stateDigest();
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE,
            cuLaunchKernel(fn(0, MCSIM_KERNEL_MM_ST), 0, 1, 1, 32, 1, 1, 0, streams[0], args, nullptr));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE,
            cuLaunchKernel(fn(0, MCSIM_KERNEL_MM_ST), 1, 1, 1, 2048, 1, 1, 0, streams[0], args, nullptr));
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuLaunchKernel(nullptr, 1, 1, 1, 32, 1, 1, 0, streams[0], args, nullptr));
  // A function of another context's module.
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE,
            cuLaunchKernel(fn(1, MCSIM_KERNEL_MM_ST), 1, 1, 1, 32, 1, 1, 0, streams[0], args, nullptr));
  EXPECT_EQ(before, mcsim::api::stateDigest());
  EXPECT_OK(cuCtxSynchronize());  // refused launches leave nothing behind
  // Arguments the kernel traps on (no vector forms of integer types): the launch succeeds and
  // the context takes CUDA_ERROR_LAUNCH_FAILED, as on a GPU.
  dtype = MCSIM_DTYPE_U64;
  vec = 2;
  EXPECT_OK(cuLaunchKernel(fn(0, MCSIM_KERNEL_MM_ST), 1, 1, 1, 32, 1, 1, 0, streams[0], args, nullptr));
  EXPECT_CU(CUDA_ERROR_LAUNCH_FAILED, cuCtxSynchronize());
}

TEST_F(Team, UnknownKernelsAndUserModels) {
  ASSERT_OK(cuCtxSetCurrent(ctx[0]));
  CUmodule extra;
  ASSERT_OK(cuModuleLoadData(&extra, kExtraPtx));
  CUfunction f = nullptr;
  EXPECT_CU(CUDA_ERROR_NOT_FOUND, cuModuleGetFunction(&f, extra, "not_in_the_image"));
  ASSERT_OK(cuModuleGetFunction(&f, extra, "no_model_kernel"));
  // A kernel without a behavioural model runs its PTX through the executor (docs/ptx.md).
  EXPECT_OK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, streams[0], nullptr, nullptr));
  EXPECT_OK(cuStreamSynchronize(streams[0]));
  // The worked example of include/mcsim/kernel_model.h: dst = src + src over f32.
  mcsim::KernelModel twice;
  twice.paramBytes = {8, 8, 8};
  twice.expand = [](const mcsim::KernelLaunch& l, mcsim::KernelSteps& s) {
    s.reduce(l.param<uint64_t>(0), l.param<uint64_t>(1), l.param<uint64_t>(1), l.param<uint64_t>(2),
             MCSIM_DTYPE_F32, MCSIM_REDOP_ADD);
    return std::string();
  };
  mcsim::registerKernelModel("user_double", twice);
  EXPECT_TRUE(mcsim::hasKernelModel("user_double"));
  const float in[4] = {1.5f, -2, 3, 1e30f};
  put(0, in, sizeof in);
  ASSERT_OK(cuModuleGetFunction(&f, extra, "user_double"));
  // Parameters packed in `extra`, as nvcc lays them out.
  struct {
    uint64_t dst, src, n;
  } packed = {local[0] + kMiB, local[0], 4};
  size_t size = sizeof packed;
  void* extraArgs[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &packed, CU_LAUNCH_PARAM_BUFFER_SIZE, &size, CU_LAUNCH_PARAM_END};
  ASSERT_OK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, streams[0], nullptr, extraArgs));
  ASSERT_OK(cuStreamSynchronize(streams[0]));
  const std::vector<float> out = get<float>(0, 4, kMiB);
  EXPECT_EQ(3.0f, out[0]);
  EXPECT_EQ(-4.0f, out[1]);
  EXPECT_EQ(6.0f, out[2]);
  EXPECT_EQ(2e30f, out[3]);
  EXPECT_OK(cuModuleUnload(extra));
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuModuleUnload(extra));
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, streams[0], nullptr, extraArgs));
}

TEST_F(Team, LibrariesKernelsAndLaunchKernelEx) {
  CUlibrary lib;
  ASSERT_OK(cuLibraryLoadData(&lib, mcsim_kernel_image, nullptr, nullptr, 0, nullptr, nullptr, 0));
  unsigned count = 0;
  ASSERT_OK(cuLibraryGetKernelCount(&count, lib));
  EXPECT_EQ(9u, count);  // the nine kernels of kernels.h
  CUkernel k;
  EXPECT_CU(CUDA_ERROR_NOT_FOUND, cuLibraryGetKernel(&k, lib, "nope"));
  ASSERT_OK(cuLibraryGetKernel(&k, lib, MCSIM_KERNEL_COPY));
  const char* name = nullptr;
  ASSERT_OK(cuKernelGetName(&name, k));
  EXPECT_STREQ(MCSIM_KERNEL_COPY, name);
  // GPU 4 copies from GPU 5's memory (a peer read over NVLink) with cuLaunchKernelEx and the
  // CUkernel in place of a CUfunction.
  const uint64_t pattern[2] = {0x0123456789abcdefull, 42};
  put(5, pattern, sizeof pattern);
  ASSERT_OK(cuCtxSetCurrent(ctx[5]));
  const CUmemAccessDesc rw4 = cutest::readWrite(4);
  ASSERT_OK(cuMemSetAccess(local[5], kBuf, &rw4, 1));
  ASSERT_OK(cuCtxSetCurrent(ctx[4]));
  CUdeviceptr dst = local[4], src = local[5];
  uint64_t bytes = sizeof pattern;
  void* args[] = {&dst, &src, &bytes};
  CUlaunchConfig cfg;
  std::memset(&cfg, 0, sizeof cfg);
  cfg.gridDimX = cfg.gridDimY = cfg.gridDimZ = 1;
  cfg.blockDimX = 128;
  cfg.blockDimY = cfg.blockDimZ = 1;
  cfg.hStream = streams[4];
  ASSERT_OK(cuLaunchKernelEx(&cfg, reinterpret_cast<CUfunction>(k), args, nullptr));
  ASSERT_OK(cuStreamSynchronize(streams[4]));
  EXPECT_EQ(pattern[0], get<uint64_t>(4, 2)[0]);
  EXPECT_EQ(pattern[1], get<uint64_t>(4, 2)[1]);
  CUfunction f = nullptr;
  ASSERT_OK(cuKernelGetFunction(&f, k));
  ASSERT_OK(cuFuncGetName(&name, f));
  EXPECT_STREQ(MCSIM_KERNEL_COPY, name);
  ASSERT_OK(cuLibraryUnload(lib));
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuKernelGetFunction(&f, k));
}

TEST_F(Team, BadImagesAreRefused) {
  CUmodule m;
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuModuleLoadData(&m, nullptr));
  const char junk[] = "this is not a module image";
  EXPECT_CU(CUDA_ERROR_INVALID_IMAGE, cuModuleLoadData(&m, junk));
  EXPECT_CU(CUDA_ERROR_FILE_NOT_FOUND, cuModuleLoad(&m, "/nonexistent/module.cubin"));
}

}  // namespace

namespace {

// A barrier one GPU never joins: with every thread of the program waiting for it, nothing can
// ever complete it. The wait is given up with a report naming the waiting kernels, the waiting
// call fails with CUDA_ERROR_LAUNCH_TIMEOUT and its context keeps that error; the node goes on,
// and the stuck kernels finish if the missing GPU joins after all.
TEST_F(Team, ABarrierAGpuNeverJoinsIsReportedNotHung) {
  ASSERT_GE(n, 2);
  uint32_t world = static_cast<uint32_t>(n), epoch = 1;
  auto launchBarrier = [&](int d) {
    ASSERT_OK(cuCtxSetCurrent(ctx[d]));
    CUdeviceptr mc = signalMc[d], sig = signalLocal[d];
    void* args[] = {&mc, &sig, &world, &epoch};
    ASSERT_OK(cuLaunchKernel(fn(d, MCSIM_KERNEL_BARRIER), 1, 1, 1, 32, 1, 1, 0, streams[d], args, nullptr));
  };
  for (int d = 0; d < n - 1; ++d) launchBarrier(d);
  ASSERT_OK(cuCtxSetCurrent(ctx[0]));
  testing::internal::CaptureStderr();
  EXPECT_CU(CUDA_ERROR_LAUNCH_TIMEOUT, cuStreamSynchronize(streams[0]));
  const std::string report = testing::internal::GetCapturedStderr();
  EXPECT_NE(report.find("deadlock"), std::string::npos) << report;
  EXPECT_NE(report.find("GPU 0: kernel 'mcsim_barrier' waits until its signal word"), std::string::npos) << report;
  EXPECT_NE(report.find("reaches " + std::to_string(n) + "; it holds " + std::to_string(n - 1)), std::string::npos)
      << report;
  EXPECT_NE(report.find("CUDA_ERROR_LAUNCH_TIMEOUT"), std::string::npos) << report;
  // The context keeps the error, as after a watchdog timeout.
  CUdeviceptr p = 0;
  EXPECT_CU(CUDA_ERROR_LAUNCH_TIMEOUT, cuMemAlloc(&p, 4096));
  // The last GPU joins: the barrier completes on every GPU, and the others' streams finish.
  launchBarrier(n - 1);
  for (int d = 1; d < n; ++d) {
    ASSERT_OK(cuCtxSetCurrent(ctx[d]));
    EXPECT_OK(cuStreamSynchronize(streams[d]));
  }
  // A reset gives device 0 a working primary context again.
  ASSERT_OK(cuDevicePrimaryCtxReset(0));
  CUcontext fresh = nullptr;
  ASSERT_OK(cuDevicePrimaryCtxRetain(&fresh, 0));
  ASSERT_OK(cuCtxSetCurrent(fresh));
  EXPECT_OK(cuMemAlloc(&p, 4096));
  EXPECT_OK(cuMemFree(p));
  ASSERT_OK(cuDevicePrimaryCtxRelease(0));
}

// The library's all-reduce kernels on f32, f16x2 and bf16x2 data: every member ends with the
// members' values combined in ascending device ordinal with model/reduction.h's arithmetic (the
// behavioural models' definition), bit for bit. Run twice by ctest: with the models, and with
// MCSIM_LIBRARY_KERNELS=ptx (the kernels' PTX through the executor), so both give these bits.
TEST_F(Team, LibraryAllReducesGiveTheModelsBits) {
  const uint64_t count = 3000;  // 32-bit elements; not a multiple of the shares' alignment
  uint32_t epoch = 1;
  for (const uint32_t dtype : {uint32_t{MCSIM_DTYPE_F32}, uint32_t{MCSIM_DTYPE_F16X2}, uint32_t{MCSIM_DTYPE_BF16X2}}) {
    for (const char* kernel : {MCSIM_KERNEL_ALLREDUCE_ONESHOT, MCSIM_KERNEL_ALLREDUCE_TWOSHOT, MCSIM_KERNEL_ALLREDUCE_NVLS}) {
      const bool oneshot = std::string(kernel) == MCSIM_KERNEL_ALLREDUCE_ONESHOT;
      std::vector<std::vector<uint32_t>> in(static_cast<size_t>(n), std::vector<uint32_t>(count));
      for (int d = 0; d < n; ++d) {
        for (uint64_t i = 0; i < count; ++i) {
          // Finite values of mixed magnitude and sign: sums that round.
          const uint32_t k = static_cast<uint32_t>((i * 2654435761u) ^ (static_cast<uint32_t>(d) * 40503u));
          uint32_t w = 0;
          if (dtype == MCSIM_DTYPE_F32) {
            const float f = static_cast<float>(static_cast<int32_t>(k % 20001) - 10000) * (1.0f + static_cast<float>(d) / 3.0f);
            std::memcpy(&w, &f, 4);
          } else {
            // Two halves with exponents kept away from infinity.
            const uint32_t mask = dtype == MCSIM_DTYPE_F16X2 ? 0xbbffu : 0xc3ffu;
            w = (k & mask) | (((k >> 16) & mask) << 16);
          }
          in[static_cast<size_t>(d)][i] = w;
        }
        put(d, in[static_cast<size_t>(d)].data(), count * 4);
      }
      std::vector<uint32_t> want = in[0];
      for (int d = 1; d < n; ++d) {
        ASSERT_TRUE(mcsim::model::reduceInto(dtype, MCSIM_REDOP_ADD, reinterpret_cast<uint8_t*>(want.data()),
                                             reinterpret_cast<const uint8_t*>(in[static_cast<size_t>(d)].data()), count));
      }
      // The library's barriers count blocks from a signal word at zero.
      for (int d = 0; d < n; ++d) {
        ASSERT_OK(cuCtxSetCurrent(ctx[d]));
        ASSERT_OK(cuMemsetD32(signalLocal[d], 0, 1));
      }
      uint32_t dt = dtype, world = static_cast<uint32_t>(n);
      uint64_t c = count;
      for (int d = 0; d < n; ++d) {
        CUdeviceptr mc = mcView[d], out = local[d] + kMiB, sigMc = signalMc[d], sig = signalLocal[d];
        uint32_t rank = static_cast<uint32_t>(d);
        void* oneArgs[] = {&mc, &out, &c, &dt, &sigMc, &sig, &world, &epoch};
        void* twoArgs[] = {&mc, &c, &dt, &sigMc, &sig, &rank, &world, &epoch};
        ASSERT_OK(cuCtxSetCurrent(ctx[d]));
        ASSERT_OK(cuLaunchKernel(fn(d, kernel), 2, 1, 1, 256, 1, 1, 0, streams[d], oneshot ? oneArgs : twoArgs, nullptr));
      }
      syncAll();
      for (int d = 0; d < n; ++d) {
        EXPECT_EQ(want, get<uint32_t>(d, count, oneshot ? kMiB : 0)) << kernel << " dtype " << dtype << " member " << d;
      }
    }
  }
}

// ---- A program's own multimem kernels, from PTX (docs/ptx.md, "multimem")

// Written by hand as a user would: a barrier on a multicast signal word (multimem.red.release +
// ld.acquire spin, as NCCL and PyTorch symmetric memory do) and a two-shot all-reduce of f32
// (each rank ld_reduces its share with .v4 and multimem.st's the sums back), one block a GPU.
// barrier_sum: each rank stores rank + 1 into slot `rank` of every member, passes the barrier, and
// sums the slots from its own memory: every rank must see every store made before the barrier.
const char* const kUserMultimemPtx = R"(
.version 8.1
.target sm_90
.address_size 64

.visible .entry user_twoshot(.param .u64 pmc, .param .u64 psigmc, .param .u64 psig, .param .u32 pn,
                             .param .u32 prank, .param .u32 pworld, .param .u32 pepoch)
{
  .reg .pred %p<4>;
  .reg .b32 %r<16>;
  .reg .b64 %rd<16>;
  .reg .f32 %f<8>;
  ld.param.u64 %rd1, [pmc];
  ld.param.u64 %rd2, [psigmc];
  ld.param.u64 %rd3, [psig];
  ld.param.u32 %r1, [pn];
  ld.param.u32 %r2, [prank];
  ld.param.u32 %r3, [pworld];
  ld.param.u32 %r4, [pepoch];
  mov.u32 %r5, %tid.x;
  mov.u32 %r6, %ntid.x;
  setp.ne.u32 %p1, %r5, 0;
  mul.lo.u32 %r7, %r3, %r4;
  @%p1 bra ARRIVED1;
  multimem.red.release.sys.global.add.u32 [%rd2], 1;
SPIN1:
  ld.acquire.sys.global.u32 %r8, [%rd3];
  setp.lt.u32 %p2, %r8, %r7;
  @%p2 bra SPIN1;
ARRIVED1:
  bar.sync 0;
  div.u32 %r9, %r1, %r3;
  mul.lo.u32 %r10, %r9, %r2;
  add.u32 %r11, %r10, %r9;
  shl.b32 %r12, %r5, 2;
  add.u32 %r12, %r12, %r10;
LOOP:
  setp.ge.u32 %p3, %r12, %r11;
  @%p3 bra DONE;
  mul.wide.u32 %rd4, %r12, 4;
  add.s64 %rd5, %rd1, %rd4;
  multimem.ld_reduce.relaxed.sys.global.add.v4.f32 {%f1, %f2, %f3, %f4}, [%rd5];
  multimem.st.relaxed.sys.global.v4.f32 [%rd5], {%f1, %f2, %f3, %f4};
  shl.b32 %r13, %r6, 2;
  add.u32 %r12, %r12, %r13;
  bra.uni LOOP;
DONE:
  bar.sync 0;
  add.u32 %r7, %r7, %r3;
  @%p1 bra ARRIVED2;
  multimem.red.release.sys.global.add.u32 [%rd2], 1;
SPIN2:
  ld.acquire.sys.global.u32 %r8, [%rd3];
  setp.lt.u32 %p2, %r8, %r7;
  @%p2 bra SPIN2;
ARRIVED2:
  ret;
}

.visible .entry barrier_sum(.param .u64 pmc, .param .u64 plocal, .param .u64 psigmc, .param .u64 psig,
                            .param .u32 prank, .param .u32 pworld, .param .u64 pout)
{
  .reg .pred %p<4>;
  .reg .b32 %r<16>;
  .reg .b64 %rd<16>;
  ld.param.u64 %rd1, [pmc];
  ld.param.u64 %rd2, [plocal];
  ld.param.u64 %rd3, [psigmc];
  ld.param.u64 %rd4, [psig];
  ld.param.u32 %r1, [prank];
  ld.param.u32 %r2, [pworld];
  ld.param.u64 %rd5, [pout];
  mul.wide.u32 %rd6, %r1, 4;
  add.s64 %rd7, %rd1, %rd6;
  add.u32 %r3, %r1, 1;
  multimem.st.relaxed.sys.global.u32 [%rd7], %r3;
  multimem.red.release.sys.global.add.u32 [%rd3], 1;
SPIN:
  ld.acquire.sys.global.u32 %r4, [%rd4];
  setp.lt.u32 %p1, %r4, %r2;
  @%p1 bra SPIN;
  mov.u32 %r5, 0;
  mov.u32 %r6, 0;
SUM:
  mul.wide.u32 %rd8, %r6, 4;
  add.s64 %rd9, %rd2, %rd8;
  ld.global.u32 %r7, [%rd9];
  add.u32 %r5, %r5, %r7;
  add.u32 %r6, %r6, 1;
  setp.lt.u32 %p2, %r6, %r2;
  @%p2 bra SUM;
  st.global.u32 [%rd5], %r5;
  ret;
}

.visible .entry mm_read(.param .u64 pmc, .param .u64 pout)
{
  .reg .b32 %r<4>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [pmc];
  ld.param.u64 %rd2, [pout];
  multimem.ld_reduce.add.u32 %r1, [%rd1];
  st.global.u32 [%rd2], %r1;
  ret;
}
)";

class UserPtx : public Team {
 protected:
  void SetUp() override {
    Team::SetUp();
    if (HasFatalFailure()) return;
    user.resize(n);
    for (int d = 0; d < n; ++d) {
      ASSERT_OK(cuCtxSetCurrent(ctx[d]));
      ASSERT_OK(cuModuleLoadData(&user[d], kUserMultimemPtx));
    }
  }
  CUfunction userFn(int d, const char* name) {
    CUfunction f = nullptr;
    EXPECT_OK(cuModuleGetFunction(&f, user[d], name));
    return f;
  }
  // The user's two-shot all-reduce of `count` f32 in place on every member (count a multiple of
  // 4 x n), one block of 256 threads a GPU; `epoch` counts barriers done on the signal word / n.
  void twoshot(uint32_t count, uint32_t epoch) {
    uint32_t world = static_cast<uint32_t>(n), c = count;
    for (int d = 0; d < n; ++d) {
      CUdeviceptr mc = mcView[d], sigMc = signalMc[d], sig = signalLocal[d];
      uint32_t rank = static_cast<uint32_t>(d);
      void* args[] = {&mc, &sigMc, &sig, &c, &rank, &world, &epoch};
      ASSERT_OK(cuCtxSetCurrent(ctx[d]));
      ASSERT_OK(cuLaunchKernel(userFn(d, "user_twoshot"), 1, 1, 1, 256, 1, 1, 0, streams[d], args, nullptr));
    }
    syncAll();
  }
  std::vector<CUmodule> user;
};

TEST_F(UserPtx, TwoShotAllReduceFromPtxOnEveryGpu) {
  const uint32_t count = 4096;
  std::vector<float> want(count, 0.0f);
  for (int d = 0; d < n; ++d) {
    std::vector<float> v(count);
    for (uint32_t i = 0; i < count; ++i) v[i] = 1.0f / static_cast<float>(1 + (i * 7 + static_cast<uint32_t>(d) * 13) % 61);
    put(d, v.data(), count * 4);
    for (uint32_t i = 0; i < count; ++i) want[i] = d == 0 ? v[i] : want[i] + v[i];  // ascending ordinal
  }
  twoshot(count, 1);
  for (int d = 0; d < n; ++d) {
    const std::vector<float> got = get<float>(d, count);
    EXPECT_EQ(0, std::memcmp(want.data(), got.data(), count * 4)) << "member " << d;
  }
  // The library's behavioural two-shot on the same data gives the same bits.
  for (int d = 0; d < n; ++d) {
    std::vector<float> v(count);
    for (uint32_t i = 0; i < count; ++i) v[i] = static_cast<float>(i % 17) * 0.1f + static_cast<float>(d) * 1e-3f;
    put(d, v.data(), count * 4);
  }
  twoshot(count, 3);
  const std::vector<float> fromPtx = get<float>(0, count);
  for (int d = 0; d < n; ++d) {
    std::vector<float> v(count);
    for (uint32_t i = 0; i < count; ++i) v[i] = static_cast<float>(i % 17) * 0.1f + static_cast<float>(d) * 1e-3f;
    put(d, v.data(), count * 4);
  }
  // Its barriers count blocks, from a signal word at zero.
  for (int d = 0; d < n; ++d) {
    ASSERT_OK(cuCtxSetCurrent(ctx[d]));
    ASSERT_OK(cuMemsetD32(signalLocal[d], 0, 1));
  }
  uint32_t dtype = MCSIM_DTYPE_F32, world = static_cast<uint32_t>(n), epoch = 1;
  uint64_t c = count;
  for (int d = 0; d < n; ++d) {
    CUdeviceptr mc = mcView[d], sigMc = signalMc[d], sig = signalLocal[d];
    uint32_t rank = static_cast<uint32_t>(d);
    void* args[] = {&mc, &c, &dtype, &sigMc, &sig, &rank, &world, &epoch};
    ASSERT_OK(cuCtxSetCurrent(ctx[d]));
    ASSERT_OK(cuLaunchKernel(fn(d, MCSIM_KERNEL_ALLREDUCE_TWOSHOT), 2, 1, 1, 512, 1, 1, 0, streams[d], args, nullptr));
  }
  syncAll();
  EXPECT_EQ(0, std::memcmp(fromPtx.data(), get<float>(0, count).data(), count * 4));
}

TEST_F(UserPtx, ABarrierOfMultimemRedAndAcquireSpinOrdersStoresAcrossGpus) {
  // Slots 0..n-1 of the data team start at zero; each GPU's sum of them after the barrier must
  // count every GPU's store.
  std::vector<uint32_t> zero(64, 0);
  for (int d = 0; d < n; ++d) put(d, zero.data(), zero.size() * 4);
  uint32_t world = static_cast<uint32_t>(n);
  std::vector<CUdeviceptr> outs(n);
  // Launched in descending order, so that the GPUs that arrive first wait for those launched later.
  for (int d = n - 1; d >= 0; --d) {
    CUdeviceptr mc = mcView[d], loc = local[d], sigMc = signalMc[d], sig = signalLocal[d];
    outs[d] = local[d] + kMiB;
    uint32_t rank = static_cast<uint32_t>(d);
    void* args[] = {&mc, &loc, &sigMc, &sig, &rank, &world, &outs[d]};
    ASSERT_OK(cuCtxSetCurrent(ctx[d]));
    ASSERT_OK(cuLaunchKernel(userFn(d, "barrier_sum"), 1, 1, 1, 1, 1, 1, 0, streams[d], args, nullptr));
  }
  syncAll();
  const uint32_t want = world * (world + 1) / 2;
  for (int d = 0; d < n; ++d) {
    EXPECT_EQ(want, get<uint32_t>(d, 1, kMiB)[0]) << "GPU " << d;
    EXPECT_EQ(1u, get<uint32_t>(d, 1)[0]);  // slot 0 holds rank 0's store everywhere
  }
  // Every GPU's signal word counts every arrival.
  for (int d = 0; d < n; ++d) {
    std::vector<uint32_t> sig(1);
    ASSERT_OK(cuCtxSetCurrent(ctx[d]));
    ASSERT_OK(cuMemcpyDtoH(sig.data(), signalLocal[d], 4));
    EXPECT_EQ(world, sig[0]);
  }
}

TEST_F(UserPtx, TwoRunsGiveTheSameBytes) {
  // The same all-reduce twice, each from the same inputs: identical sums. (That a run's simulated
  // times are the same on every run of a program is runtime.ptx_spin.deterministic and .host_pause.)
  const uint32_t count = 2048;
  std::vector<std::vector<uint8_t>> results;
  for (int run = 0; run < 2; ++run) {
    for (int d = 0; d < n; ++d) {
      std::vector<float> v(count);
      for (uint32_t i = 0; i < count; ++i) v[i] = static_cast<float>((i * 31 + static_cast<uint32_t>(d)) % 101) / 7.0f;
      put(d, v.data(), count * 4);
    }
    twoshot(count, 1 + 2 * static_cast<uint32_t>(run));
    std::vector<uint8_t> bytes;
    for (int d = 0; d < n; ++d) {
      const std::vector<float> got = get<float>(d, count);
      const auto* b = reinterpret_cast<const uint8_t*>(got.data());
      bytes.insert(bytes.end(), b, b + count * 4);
    }
    results.push_back(bytes);
  }
  EXPECT_EQ(results[0], results[1]);
}

TEST_F(UserPtx, MultimemOnAPlainAddressFromPtxIsAnIllegalAddress) {
  ASSERT_OK(cuCtxSetCurrent(ctx[0]));
  CUdeviceptr notMc = local[0], out = local[0] + kMiB;
  void* args[] = {&notMc, &out};
  testing::internal::CaptureStderr();
  EXPECT_OK(cuLaunchKernel(userFn(0, "mm_read"), 1, 1, 1, 32, 1, 1, 0, streams[0], args, nullptr));
  EXPECT_CU(CUDA_ERROR_ILLEGAL_ADDRESS, cuStreamSynchronize(streams[0]));
  const std::string report = testing::internal::GetCapturedStderr();
  EXPECT_NE(report.find("not a multicast address"), std::string::npos) << report;
  EXPECT_NE(report.find("multimem.ld_reduce.add.u32"), std::string::npos) << report;
}

TEST_F(UserPtx, MultimemWhereAMemberHasNothingBoundFromPtxIsAnIllegalAddress) {
  // An object of n devices, every device added, but only device 0 has bound memory: binding
  // must be complete before use, and a multimem access before then faults.
  const CUmulticastObjectProp p = cutest::mcProp(static_cast<unsigned>(n), kBuf);
  CUmemGenericAllocationHandle mc;
  ASSERT_OK(cuMulticastCreate(&mc, &p));
  for (int d = 0; d < n; ++d) ASSERT_OK(cuMulticastAddDevice(mc, d));
  ASSERT_OK(cuCtxSetCurrent(ctx[0]));
  const CUmemAllocationProp prop = cutest::devicePinned(0);
  CUmemGenericAllocationHandle mem;
  ASSERT_OK(cuMemCreate(&mem, kBuf, &prop, 0));
  ASSERT_OK(cuMulticastBindMem(mc, 0, mem, 0, kBuf, 0));
  ASSERT_OK(cuMemRelease(mem));
  CUdeviceptr va;
  ASSERT_OK(cuMemAddressReserve(&va, kBuf, 0, 0, 0));
  ASSERT_OK(cuMemMap(va, kBuf, 0, mc, 0));
  const CUmemAccessDesc rw = cutest::readWrite(0);
  ASSERT_OK(cuMemSetAccess(va, kBuf, &rw, 1));
  CUdeviceptr out = local[0];
  void* args[] = {&va, &out};
  testing::internal::CaptureStderr();
  EXPECT_OK(cuLaunchKernel(userFn(0, "mm_read"), 1, 1, 1, 32, 1, 1, 0, streams[0], args, nullptr));
  EXPECT_CU(CUDA_ERROR_ILLEGAL_ADDRESS, cuStreamSynchronize(streams[0]));
  const std::string report = testing::internal::GetCapturedStderr();
  EXPECT_NE(report.find("no memory bound"), std::string::npos) << report;
}

}  // namespace
