// Programs' own kernels, launched through the driver API: from PTX text and from a fat binary
// nvcc built (compressed, as nvcc 13.0 writes it by default), with kernelParams and `extra`,
// __device__ variables through cuModuleGetGlobal, and the sticky error of an illegal access.
// Expected values are computed here, on the host. On mcsim the kernels run in the PTX executor
// (docs/ptx.md); built against the real driver (MCSIM_CONFORMANCE_REAL) they run on the GPU.
#include <chrono>
#include <fstream>
#include <iterator>
#include <thread>
#include <vector>

#include "tests/common/unparked_spin_ptx.h"
#include "tests/conformance/conformance.h"

namespace {

// Hand-written PTX: c = a + b over n floats; p[i] += bias (a .global variable) over n words; a
// store to the address it is given.
const char* const kPtx = R"(
.version 8.0
.target sm_90
.address_size 64

.global .align 4 .u32 bias = 5;

.visible .entry vadd(.param .u64 a, .param .u64 b, .param .u64 c, .param .u32 n)
{
  .reg .pred %p<2>;
  .reg .b32 %r<6>;
  .reg .b64 %rd<8>;
  .reg .f32 %f<4>;
  mov.u32 %r1, %ctaid.x;
  mov.u32 %r2, %ntid.x;
  mov.u32 %r3, %tid.x;
  mad.lo.s32 %r4, %r1, %r2, %r3;
  ld.param.u32 %r5, [n];
  setp.ge.s32 %p1, %r4, %r5;
  @%p1 bra DONE;
  ld.param.u64 %rd1, [a];
  ld.param.u64 %rd2, [b];
  ld.param.u64 %rd3, [c];
  mul.wide.s32 %rd4, %r4, 4;
  add.s64 %rd5, %rd1, %rd4;
  add.s64 %rd6, %rd2, %rd4;
  add.s64 %rd7, %rd3, %rd4;
  ld.global.f32 %f1, [%rd5];
  ld.global.f32 %f2, [%rd6];
  add.f32 %f3, %f1, %f2;
  st.global.f32 [%rd7], %f3;
DONE:
  ret;
}

.visible .entry addbias(.param .u64 p, .param .u32 n)
{
  .reg .pred %p<2>;
  .reg .b32 %r<9>;
  .reg .b64 %rd<4>;
  mov.u32 %r1, %ctaid.x;
  mov.u32 %r2, %ntid.x;
  mov.u32 %r3, %tid.x;
  mad.lo.s32 %r4, %r1, %r2, %r3;
  ld.param.u32 %r5, [n];
  setp.ge.s32 %p1, %r4, %r5;
  @%p1 bra DONE;
  ld.param.u64 %rd1, [p];
  mul.wide.s32 %rd2, %r4, 4;
  add.s64 %rd3, %rd1, %rd2;
  ld.global.u32 %r6, [bias];
  ld.global.u32 %r7, [%rd3];
  add.s32 %r8, %r7, %r6;
  st.global.u32 [%rd3], %r8;
DONE:
  ret;
}

.visible .entry poke(.param .u64 p)
{
  .reg .b32 %r<2>;
  .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [p];
  mov.u32 %r1, 1;
  st.global.u32 [%rd1], %r1;
  ret;
}
)";

class PtxLaunch : public conformance::DriverTest {
 protected:
  void SetUp() override {
    DriverTest::SetUp();
    if (HasFatalFailure()) return;
    for (int i = 0; i < kN; ++i) {
      a[i] = static_cast<float>(i) * 0.5f;
      b[i] = 3.0f - static_cast<float>(i);
    }
    ASSERT_OK(cuMemAlloc(&da, kN * 4));
    ASSERT_OK(cuMemAlloc(&db, kN * 4));
    ASSERT_OK(cuMemAlloc(&dc, kN * 4));
    ASSERT_OK(cuMemcpyHtoD(da, a.data(), kN * 4));
    ASSERT_OK(cuMemcpyHtoD(db, b.data(), kN * 4));
  }
  // Runs vadd of `mod` over the buffers and checks c on the host.
  void vectorAdd(CUmodule mod, const char* name) {
    CUfunction f = nullptr;
    ASSERT_OK(cuModuleGetFunction(&f, mod, name));
    int n = kN;
    void* args[] = {&da, &db, &dc, &n};
    ASSERT_OK(cuLaunchKernel(f, (kN + 127) / 128, 1, 1, 128, 1, 1, 0, nullptr, args, nullptr));
    ASSERT_OK(cuCtxSynchronize());
    std::vector<float> c(kN);
    ASSERT_OK(cuMemcpyDtoH(c.data(), dc, kN * 4));
    for (int i = 0; i < kN; ++i) ASSERT_EQ(a[i] + b[i], c[i]) << "element " << i;
  }
  static constexpr int kN = 1000;  // not a multiple of the block: the bounds check matters
  std::vector<float> a = std::vector<float>(kN), b = std::vector<float>(kN);
  CUdeviceptr da = 0, db = 0, dc = 0;
};

TEST_F(PtxLaunch, VectorAddFromPtxText) {
  CUmodule mod = nullptr;
  ASSERT_OK(cuModuleLoadData(&mod, kPtx));
  vectorAdd(mod, "vadd");
  EXPECT_OK(cuModuleUnload(mod));
}

// A kernel that spins without being parked until a flag is set, and the kernel that sets it
// (tests/common/unparked_spin_ptx.h).
const std::string kUnparkedSpinPtx = cutest::unparkedSpinPtx("spin", "release");

// One thread waits in cuStreamSynchronize for a kernel that spins unparked; another thread then
// launches, on another stream, the kernel that releases it. On mcsim the simulation's runs end at
// fixed points of simulated time (docs/multiprocess.md, "Simulated times replay exactly"), so the
// second launch is taken in while the first kernel spins. Before 2026-11-29 the run that awaited
// the spinning kernel never ended: the release was never taken in, and the test timed out.
TEST_F(PtxLaunch, UnparkedSpinIsReleasedByAnotherThreadsLaunch) {
  CUmodule mod = nullptr;
  ASSERT_OK(cuModuleLoadData(&mod, kUnparkedSpinPtx.c_str()));
  CUfunction spin = nullptr, release = nullptr;
  ASSERT_OK(cuModuleGetFunction(&spin, mod, "spin"));
  ASSERT_OK(cuModuleGetFunction(&release, mod, "release"));
  CUdeviceptr buf = 0;
  ASSERT_OK(cuMemAlloc(&buf, 32));
  ASSERT_OK(cuMemsetD8(buf, 0, 32));
  ASSERT_OK(cuCtxSynchronize());
  CUstream waiting = nullptr, releasing = nullptr;
  ASSERT_OK(cuStreamCreate(&waiting, CU_STREAM_NON_BLOCKING));
  ASSERT_OK(cuStreamCreate(&releasing, CU_STREAM_NON_BLOCKING));
  CUdeviceptr out = buf + 16;
  uint64_t flag = 1;
  void* spinArgs[] = {&buf, &out, &flag};
  ASSERT_OK(cuLaunchKernel(spin, 1, 1, 1, 1, 1, 1, 0, waiting, spinArgs, nullptr));
  CUresult r = CUDA_ERROR_UNKNOWN;
  std::thread waiter([&] {
    cuCtxSetCurrent(ctx);
    r = cuStreamSynchronize(waiting);
  });
  // The waiter is in cuStreamSynchronize by now (a chance, not an assumption: if it is not, the
  // release is taken in with its wait, and the test passes as well).
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  void* releaseArgs[] = {&buf, &flag};
  ASSERT_OK(cuLaunchKernel(release, 1, 1, 1, 1, 1, 1, 0, releasing, releaseArgs, nullptr));
  waiter.join();
  ASSERT_OK(r);
  uint64_t got[2] = {0, 0};
  ASSERT_OK(cuMemcpyDtoH(got, out, sizeof got));
  EXPECT_EQ(cutest::kUnparkedSpinPayload, got[0]);
  EXPECT_GT(got[1], 1u) << "the kernel spun";
  EXPECT_OK(cuStreamDestroy(waiting));
  EXPECT_OK(cuStreamDestroy(releasing));
  EXPECT_OK(cuMemFree(buf));
  EXPECT_OK(cuModuleUnload(mod));
}

TEST_F(PtxLaunch, ParametersInAnExtraBuffer) {
  CUmodule mod = nullptr;
  ASSERT_OK(cuModuleLoadData(&mod, kPtx));
  CUfunction f = nullptr;
  ASSERT_OK(cuModuleGetFunction(&f, mod, "vadd"));
  struct {
    CUdeviceptr a, b, c;
    int n;
    int pad;
  } packed{da, db, dc, kN, 0};
  size_t size = 28;  // three pointers and an int, as the .param list lays them out
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &packed, CU_LAUNCH_PARAM_BUFFER_SIZE, &size, CU_LAUNCH_PARAM_END};
  ASSERT_OK(cuLaunchKernel(f, (kN + 255) / 256, 1, 1, 256, 1, 1, 0, nullptr, nullptr, extra));
  ASSERT_OK(cuCtxSynchronize());
  std::vector<float> c(kN);
  ASSERT_OK(cuMemcpyDtoH(c.data(), dc, kN * 4));
  for (int i = 0; i < kN; ++i) ASSERT_EQ(a[i] + b[i], c[i]) << "element " << i;
}

// A kernel without parameters given an extra buffer anyway (a replayed trace's launch did so): the
// buffer is not read, and the launch runs. (mcsim copied zero bytes to a null pointer, which the
// sanitizer builds refuse: found by the replay fuzzer.)
TEST_F(PtxLaunch, AKernelWithoutParametersTakesAnExtraBuffer) {
  static const char kNoParams[] = R"(
.version 7.8
.target sm_90
.address_size 64
.visible .entry none()
{
  ret;
}
)";
  CUmodule mod = nullptr;
  ASSERT_OK(cuModuleLoadData(&mod, kNoParams));
  CUfunction f = nullptr;
  ASSERT_OK(cuModuleGetFunction(&f, mod, "none"));
  uint64_t unused[2] = {0, 7};
  size_t size = sizeof unused;
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, unused, CU_LAUNCH_PARAM_BUFFER_SIZE, &size, CU_LAUNCH_PARAM_END};
  ASSERT_OK(cuLaunchKernel(f, 2, 1, 1, 32, 1, 1, 0, nullptr, nullptr, extra));
  EXPECT_OK(cuCtxSynchronize());
  EXPECT_OK(cuModuleUnload(mod));
}

TEST_F(PtxLaunch, DeviceVariableThroughModuleGetGlobal) {
  CUmodule mod = nullptr;
  ASSERT_OK(cuModuleLoadData(&mod, kPtx));
  CUdeviceptr g = 0;
  size_t bytes = 0;
  ASSERT_OK(cuModuleGetGlobal(&g, &bytes, mod, "bias"));
  EXPECT_EQ(4u, bytes);
  unsigned initial = 0;
  ASSERT_OK(cuMemcpyDtoH(&initial, g, 4));
  EXPECT_EQ(5u, initial);  // the PTX's initialiser
  // Its own outputs: the real driver writes them even when it answers NOT_FOUND.
  CUdeviceptr none = 0;
  size_t noneBytes = 0;
  EXPECT_CU(CUDA_ERROR_NOT_FOUND, cuModuleGetGlobal(&none, &noneBytes, mod, "no_such_variable"));
  const unsigned bias = 1000;
  ASSERT_OK(cuMemcpyHtoD(g, &bias, 4));
  std::vector<unsigned> words(kN);
  for (int i = 0; i < kN; ++i) words[i] = static_cast<unsigned>(i) * 7u;
  ASSERT_OK(cuMemcpyHtoD(dc, words.data(), kN * 4));
  CUfunction f = nullptr;
  ASSERT_OK(cuModuleGetFunction(&f, mod, "addbias"));
  int n = kN;
  void* args[] = {&dc, &n};
  ASSERT_OK(cuLaunchKernel(f, (kN + 127) / 128, 1, 1, 128, 1, 1, 0, nullptr, args, nullptr));
  ASSERT_OK(cuCtxSynchronize());
  std::vector<unsigned> back(kN);
  ASSERT_OK(cuMemcpyDtoH(back.data(), dc, kN * 4));
  for (int i = 0; i < kN; ++i) ASSERT_EQ(words[i] + bias, back[i]) << "element " << i;
}

TEST_F(PtxLaunch, IllegalAddressIsStickyAfterTheLaunch) {
  CUmodule mod = nullptr;
  ASSERT_OK(cuModuleLoadData(&mod, kPtx));
  CUfunction f = nullptr;
  ASSERT_OK(cuModuleGetFunction(&f, mod, "poke"));
  CUdeviceptr bad = 16;  // nothing is mapped there
  void* args[] = {&bad};
  // The launch succeeds; the kernel faults on the device.
  ASSERT_OK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, nullptr, args, nullptr));
  EXPECT_CU(CUDA_ERROR_ILLEGAL_ADDRESS, cuCtxSynchronize());
  CUdeviceptr p = 0;
  EXPECT_CU(CUDA_ERROR_ILLEGAL_ADDRESS, cuMemAlloc(&p, 4096));
}

#ifdef MCSIM_PTX_FATBIN
TEST_F(PtxLaunch, VectorAddFromAFatbinNvccBuilt) {
  if (std::string(MCSIM_PTX_FATBIN).empty()) GTEST_SKIP() << "built without nvcc";
  std::ifstream in(MCSIM_PTX_FATBIN, std::ios::binary);
  ASSERT_TRUE(in) << MCSIM_PTX_FATBIN;
  const std::vector<char> image((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CUmodule mod = nullptr;
  ASSERT_OK(cuModuleLoadData(&mod, image.data()));
  vectorAdd(mod, "fatbin_vadd");
}
#endif

}  // namespace
