// Kernels that spin for ever without being parked (issue 19: no input may hang mcsim). A waiting
// loop that writes memory as it waits (an iteration counter) is not parked (docs/ptx.md, "Spin
// parking"), so simulated time goes on while it spins and the simulation never stalls; the node
// sees that every kernel running has only spun on unchanged memory, with nothing else running,
// and gives the wait up after MCSIM_HANG_GRACE_S with the report a parked spin gets
// (docs/reliability.md, "Kernels that spin for ever"). A kernel that works for longer than the
// grace period while re-reading a word is not taken for one. Each test is a process of its own,
// with the grace period set before cuInit.
#include <cuda.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "tests/common/cu_expect.h"
#include "tests/common/unparked_spin_ptx.h"

namespace {

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

class SpinHang : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("MCSIM_HANG_GRACE_S", grace(), 1);
    ASSERT_OK(cuInit(0));
    CUdevice dev = 0;
    ASSERT_OK(cuDeviceGet(&dev, 0));
    ASSERT_OK(cuCtxCreate(&ctx, nullptr, 0, dev));
  }
  void TearDown() override { cuCtxDestroy(ctx); }
  virtual const char* grace() const { return "1"; }
  // Launches `entry` of `ptx` (parameters: buf, out, flag; 64 zeroed bytes at buf, out at buf +
  // 32, flag 1, which nothing writes) with `threads` threads; expects the stream's synchronisation
  // to fail as a suspected hang, and returns what mcsim wrote to stderr meanwhile.
  std::string reportOfAHang(const std::string& ptx, const char* entry, unsigned threads) {
    CUmodule mod = nullptr;
    EXPECT_OK(cuModuleLoadData(&mod, ptx.c_str()));
    CUfunction spin = nullptr;
    EXPECT_OK(cuModuleGetFunction(&spin, mod, entry));
    CUdeviceptr buf = 0;
    EXPECT_OK(cuMemAlloc(&buf, 64));
    EXPECT_OK(cuMemsetD8(buf, 0, 64));
    CUstream stream = nullptr;
    EXPECT_OK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    CUdeviceptr out = buf + 32;
    uint64_t flag = 1;
    void* args[] = {&buf, &out, &flag};
    EXPECT_OK(cuLaunchKernel(spin, 1, 1, 1, threads, 1, 1, 0, stream, args, nullptr));
    testing::internal::CaptureStderr();
    EXPECT_CU(CUDA_ERROR_LAUNCH_TIMEOUT, cuStreamSynchronize(stream));
    return testing::internal::GetCapturedStderr();
  }
  CUcontext ctx = nullptr;
};

// The spinning kernel of tests/common/unparked_spin_ptx.h, whose flag nothing sets: before
// 2026-11-29 cuStreamSynchronize waited for ever (ctest's time limit failed the test). Now it
// fails with CUDA_ERROR_LAUNCH_TIMEOUT after the grace period, the report names the kernel, the
// GPU, the block and thread, the word it reads, the value it compares it with and the PTX line,
// and the context keeps the error, as for a parked spin that nothing releases.
TEST_F(SpinHang, UnparkedSpinThatNothingReleasesIsReportedAsAHang) {
  const std::string report = reportOfAHang(cutest::unparkedSpinPtx("spin", "release"), "spin", 1);
  std::fputs(report.c_str(), stdout);  // for the record (docs/reliability.md shows it)
  EXPECT_TRUE(contains(report, "mcsim: suspected hang: every kernel running spun for 1 s on memory that did not change"))
      << report;
  EXPECT_TRUE(contains(report, "GPU 0: kernel 'spin' block (0,0,0) thread (0,0,0) waits on the global word at 0x")) << report;
  EXPECT_TRUE(contains(report, ": it holds 0x0, the warp compares it with 0x1 ('ld.volatile.global.u64' at ")) << report;
  EXPECT_TRUE(contains(report, "; it spins unparked, writing memory as it waits")) << report;
  EXPECT_TRUE(contains(report, "CUDA_ERROR_LAUNCH_TIMEOUT")) << report;
  EXPECT_CU(CUDA_ERROR_LAUNCH_TIMEOUT, cuCtxSynchronize());
}

// The same wait with a fence between the counter and the poll (a heartbeat made visible before
// each look: `__threadfence_system()` in the loop). A fence after a write holds its warp for the
// fence's time on the node (docs/ptx.md, "Fences"), so each turn of the loop ends at the fence and
// simulated time moves on by about a microsecond a turn: a spin all the same, reported as one.
// (When fences first cost time, 2026-11-30, such a loop ran for ever unreported.)
TEST_F(SpinHang, AFencedSpinThatNothingReleasesIsReportedAsAHang) {
  const std::string report =
      reportOfAHang(cutest::unparkedSpinPtx("fencedspin", "release", "  fence.sc.sys;\n"), "fencedspin", 1);
  EXPECT_TRUE(contains(report, "mcsim: suspected hang: every kernel running spun for 1 s on memory that did not change"))
      << report;
  EXPECT_TRUE(contains(report, "GPU 0: kernel 'fencedspin' block (0,0,0) thread (0,0,0) waits on the global word at 0x"))
      << report;
  EXPECT_TRUE(contains(report, "; it spins unparked, writing memory as it waits")) << report;
}

// A block that waits together: thread 0 polls the flag, then the block's barrier, round and
// round (a __syncthreads() in the waiting loop). Every turn of every warp ends at the barrier.
const char* const kBarrierSpinPtx = R"(
.version 8.0
.target sm_90
.address_size 64
.visible .entry barrierspin(.param .u64 pbuf, .param .u64 pout, .param .u64 pflag)
{
  .reg .b64 %rd<5>;
  .reg .b32 %r<2>;
  .reg .pred %p<3>;
  .shared .u64 seen;
  ld.param.u64 %rd1, [pbuf];
  ld.param.u64 %rd2, [pflag];
  mov.u32 %r1, %tid.x;
  setp.eq.u32 %p2, %r1, 0;
SPIN:
  @%p2 ld.volatile.global.u64 %rd3, [%rd1];
  @%p2 st.shared.u64 [seen], %rd3;
  bar.sync 0;
  ld.shared.u64 %rd4, [seen];
  bar.sync 0;
  setp.ne.u64 %p1, %rd4, %rd2;
  @%p1 bra SPIN;
  ret;
}
)";

TEST_F(SpinHang, ABlockThatWaitsTogetherAtABarrierIsReportedAsAHang) {
  const std::string report = reportOfAHang(kBarrierSpinPtx, "barrierspin", 64);
  EXPECT_TRUE(contains(report, "mcsim: suspected hang")) << report;
  EXPECT_TRUE(contains(report, "GPU 0: kernel 'barrierspin' block (0,0,0)")) << report;
}

// One thread fills 8 MiB, re-reading the same word (a scale factor a store might alias, as code
// without __restrict__ does) at every element: it re-reads one unchanged word and writes, like the
// spin above, but a new word each time, so it is work, not a spin, however long it takes beside a
// grace period of 0.1 s.
class SpinHangShortGrace : public SpinHang {
 protected:
  const char* grace() const override { return "0.1"; }
};

const char* const kFillPtx = R"(
.version 8.0
.target sm_90
.address_size 64
.visible .entry fill(.param .u64 pout, .param .u64 pscale, .param .u64 pn)
{
  .reg .b64 %rd<10>;
  .reg .pred %p<2>;
  ld.param.u64 %rd1, [pout];
  ld.param.u64 %rd2, [pscale];
  ld.param.u64 %rd3, [pn];
  mov.u64 %rd4, 0;
LOOP:
  ld.volatile.global.u64 %rd5, [%rd2];
  mul.lo.u64 %rd6, %rd5, %rd4;
  shl.b64 %rd7, %rd4, 3;
  add.s64 %rd8, %rd1, %rd7;
  st.global.u64 [%rd8], %rd6;
  add.s64 %rd4, %rd4, 1;
  setp.lt.u64 %p1, %rd4, %rd3;
  @%p1 bra LOOP;
  ret;
}
)";

TEST_F(SpinHangShortGrace, ALongKernelThatRereadsAWordIsNotAHang) {
  CUmodule mod = nullptr;
  ASSERT_OK(cuModuleLoadData(&mod, kFillPtx));
  CUfunction fill = nullptr;
  ASSERT_OK(cuModuleGetFunction(&fill, mod, "fill"));
  uint64_t n = uint64_t{1} << 20;
  CUdeviceptr out = 0, scale = 0;
  ASSERT_OK(cuMemAlloc(&out, n * 8));
  ASSERT_OK(cuMemAlloc(&scale, 8));
  ASSERT_OK(cuMemsetD32(scale, 3, 1));
  ASSERT_OK(cuMemsetD32(scale + 4, 0, 1));
  void* args[] = {&out, &scale, &n};
  ASSERT_OK(cuLaunchKernel(fill, 1, 1, 1, 1, 1, 1, 0, nullptr, args, nullptr));
  testing::internal::CaptureStderr();
  EXPECT_OK(cuCtxSynchronize());
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_FALSE(contains(err, "hang")) << err;
  for (uint64_t i : {uint64_t{0}, uint64_t{1}, n / 2, n - 1}) {
    uint64_t v = 0;
    ASSERT_OK(cuMemcpyDtoH(&v, out + i * 8, 8));
    EXPECT_EQ(3 * i, v) << "element " << i;
  }
  EXPECT_OK(cuMemFree(out));
  EXPECT_OK(cuMemFree(scale));
  EXPECT_OK(cuModuleUnload(mod));
}

// Two kernels that answer each other round after round through a flag each (ping writes pong's
// flag and waits on its own; pong answers): each waits, parked, between its turns, and is released
// and waits again within one slice, so that both wait before and after every slice. That is
// progress, not a spin: before it was counted so (2026-11-29), bench/ptx_spin_bench's ping-pong
// was reported as a hang once it had run for the grace period.
const char* const kPingPongPtx = R"(
.version 8.0
.target sm_90
.address_size 64
.visible .entry ping(.param .u64 pmine, .param .u64 pother, .param .u64 prounds)
{
  .reg .b64 %rd<8>;
  .reg .pred %p<3>;
  ld.param.u64 %rd1, [pmine];
  ld.param.u64 %rd2, [pother];
  ld.param.u64 %rd3, [prounds];
  mov.u64 %rd4, 1;
ROUND:
  st.volatile.global.u64 [%rd2], %rd4;
WAIT:
  ld.volatile.global.u64 %rd5, [%rd1];
  setp.ne.u64 %p1, %rd5, %rd4;
  @%p1 bra WAIT;
  add.s64 %rd4, %rd4, 1;
  setp.le.u64 %p2, %rd4, %rd3;
  @%p2 bra ROUND;
  ret;
}
.visible .entry pong(.param .u64 pmine, .param .u64 pother, .param .u64 prounds)
{
  .reg .b64 %rd<8>;
  .reg .pred %p<3>;
  ld.param.u64 %rd1, [pmine];
  ld.param.u64 %rd2, [pother];
  ld.param.u64 %rd3, [prounds];
  mov.u64 %rd4, 1;
ROUND:
  ld.volatile.global.u64 %rd5, [%rd1];
  setp.ne.u64 %p1, %rd5, %rd4;
  @%p1 bra ROUND;
  st.volatile.global.u64 [%rd2], %rd4;
  add.s64 %rd4, %rd4, 1;
  setp.le.u64 %p2, %rd4, %rd3;
  @%p2 bra ROUND;
  ret;
}
)";

TEST_F(SpinHangShortGrace, KernelsAnsweringEachOtherAreNotAHang) {
  CUmodule mod = nullptr;
  ASSERT_OK(cuModuleLoadData(&mod, kPingPongPtx));
  CUfunction ping = nullptr, pong = nullptr;
  ASSERT_OK(cuModuleGetFunction(&ping, mod, "ping"));
  ASSERT_OK(cuModuleGetFunction(&pong, mod, "pong"));
  CUdeviceptr flags = 0;
  ASSERT_OK(cuMemAlloc(&flags, 16));
  ASSERT_OK(cuMemsetD8(flags, 0, 16));
  CUstream a = nullptr, b = nullptr;
  ASSERT_OK(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING));
  ASSERT_OK(cuStreamCreate(&b, CU_STREAM_NON_BLOCKING));
  CUdeviceptr pingFlag = flags, pongFlag = flags + 8;
  uint64_t rounds = 200;
  void* pingArgs[] = {&pingFlag, &pongFlag, &rounds};
  void* pongArgs[] = {&pongFlag, &pingFlag, &rounds};
  ASSERT_OK(cuLaunchKernel(pong, 1, 1, 1, 1, 1, 1, 0, b, pongArgs, nullptr));
  ASSERT_OK(cuLaunchKernel(ping, 1, 1, 1, 1, 1, 1, 0, a, pingArgs, nullptr));
  testing::internal::CaptureStderr();
  EXPECT_OK(cuCtxSynchronize());
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_FALSE(contains(err, "hang")) << err;
  uint64_t got[2] = {0, 0};
  ASSERT_OK(cuMemcpyDtoH(got, flags, sizeof got));
  EXPECT_EQ(rounds, got[0]);
  EXPECT_EQ(rounds, got[1]);
  EXPECT_OK(cuStreamDestroy(a));
  EXPECT_OK(cuStreamDestroy(b));
  EXPECT_OK(cuMemFree(flags));
  EXPECT_OK(cuModuleUnload(mod));
}

}  // namespace
