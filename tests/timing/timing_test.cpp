// What simulated time promises. Every assertion is on simulated time (cuEventElapsedTime,
// mcsim::api::simulatedTimePs), which depends on nothing but the program and the preset.
#include <cuda.h>
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <set>

#include <nlohmann/json.hpp>

#include "mcsim/api.h"
#include "mcsim/kernels.h"
#include "tests/common/cu_expect.h"

namespace {

constexpr size_t kMiB = size_t{1} << 20;

// Four GPUs of the default 8x H100 node, with peer access among them, a buffer pair each.
class TimingTest : public ::testing::Test {
 protected:
  static constexpr int kGpus = 4;
  static constexpr size_t kBytes = 256 * kMiB;
  void SetUp() override {
    ASSERT_OK(cuInit(0));
    for (int d = 0; d < kGpus; ++d) {
      ASSERT_OK(cuDevicePrimaryCtxRetain(&ctx[d], d));
      ASSERT_OK(cuCtxSetCurrent(ctx[d]));
      ASSERT_OK(cuMemAlloc(&src[d], kBytes));
      ASSERT_OK(cuMemAlloc(&dst[d], kBytes));
      ASSERT_OK(cuStreamCreate(&s[d][0], CU_STREAM_NON_BLOCKING));
      ASSERT_OK(cuStreamCreate(&s[d][1], CU_STREAM_NON_BLOCKING));
    }
    for (int d = 0; d < kGpus; ++d) {
      ASSERT_OK(cuCtxSetCurrent(ctx[d]));
      for (int p = 0; p < kGpus; ++p) {
        if (p != d) {
          ASSERT_OK(cuCtxEnablePeerAccess(ctx[p], 0));
        }
      }
    }
    ASSERT_OK(cuCtxSetCurrent(ctx[0]));
  }
  // Simulated microseconds from now until every stream of the listed GPUs is idle, after `enqueue`.
  template <typename F>
  double elapsedUs(F enqueue) {
    const uint64_t t0 = mcsim::api::simulatedTimePs();
    enqueue();
    for (int d = 0; d < kGpus; ++d) {
      EXPECT_OK(cuCtxSetCurrent(ctx[d]));
      EXPECT_OK(cuCtxSynchronize());
    }
    EXPECT_OK(cuCtxSetCurrent(ctx[0]));
    return static_cast<double>(mcsim::api::simulatedTimePs() - t0) / 1e6;
  }
  CUresult peer(int from, int to, CUstream st, size_t bytes = kBytes) {
    return cuMemcpyPeerAsync(dst[to], ctx[to], src[from], ctx[from], bytes, st);
  }
  CUcontext ctx[kGpus] = {};
  CUdeviceptr src[kGpus] = {}, dst[kGpus] = {};
  CUstream s[kGpus][2] = {};
};

TEST_F(TimingTest, CopiesTakeSimulatedTimeThatGrowsWithSize) {
  const double small = elapsedUs([&] { EXPECT_OK(cuMemcpyDtoDAsync(dst[0], src[0], 64 * kMiB, s[0][0])); });
  const double big = elapsedUs([&] { EXPECT_OK(cuMemcpyDtoDAsync(dst[0], src[0], 256 * kMiB, s[0][0])); });
  EXPECT_GT(small, 0);
  // Four times the bytes, and a fixed cost each; the smaller copy gains a little from the L2.
  EXPECT_GT(big, 3 * small);
  EXPECT_LT(big, 4.5 * small);
}

TEST_F(TimingTest, OneStreamRunsInTurnAndTwoGpusRunAtOnce) {
  // Warm up both GPUs' L2s, so that every measured copy starts from the same cache state.
  elapsedUs([&] {
    EXPECT_OK(cuMemcpyDtoDAsync(dst[0], src[0], kBytes, s[0][0]));
    EXPECT_OK(cuMemcpyDtoDAsync(dst[1], src[1], kBytes, s[1][0]));
  });
  const double one = elapsedUs([&] { EXPECT_OK(cuMemcpyDtoDAsync(dst[0], src[0], kBytes, s[0][0])); });
  const double sameStream = elapsedUs([&] {
    EXPECT_OK(cuMemcpyDtoDAsync(dst[0], src[0], kBytes, s[0][0]));
    EXPECT_OK(cuMemcpyDtoDAsync(src[0], dst[0], kBytes, s[0][0]));
  });
  const double twoGpus = elapsedUs([&] {
    EXPECT_OK(cuMemcpyDtoDAsync(dst[0], src[0], kBytes, s[0][0]));
    EXPECT_OK(cuMemcpyDtoDAsync(dst[1], src[1], kBytes, s[1][0]));
  });
  EXPECT_NEAR(sameStream, 2 * one, 0.03 * one);
  EXPECT_NEAR(twoGpus, one, 0.03 * one);
}

TEST_F(TimingTest, PeerCopiesShareTheLinksTheyCross) {
  const double one = elapsedUs([&] { EXPECT_OK(peer(0, 1, s[0][0])); });
  // Two copies out of GPU 0 at once share its NVLink ports: each gets half.
  const double sharedSource = elapsedUs([&] {
    EXPECT_OK(peer(0, 1, s[0][0], kBytes / 2));
    EXPECT_OK(peer(0, 2, s[0][1], kBytes / 2));
  });
  // Copies between disjoint pairs, and the two directions of one pair, do not.
  const double disjoint = elapsedUs([&] {
    EXPECT_OK(peer(0, 1, s[0][0]));
    EXPECT_OK(peer(2, 3, s[2][0]));
  });
  const double bothWays = elapsedUs([&] {
    EXPECT_OK(peer(0, 1, s[0][0]));
    EXPECT_OK(peer(1, 0, s[1][0]));
  });
  EXPECT_NEAR(sharedSource, one, 0.05 * one);  // half the bytes each, at half the rate each
  EXPECT_NEAR(disjoint, one, 0.02 * one);
  EXPECT_NEAR(bothWays, one, 0.05 * one);
  // 256 MiB at the preset's 18 x 25 GB/s x 0.88 (396 GB/s), plus fixed costs of a few us.
  EXPECT_GT(one, 268.4e6 / 396e3);
  EXPECT_LT(one, 268.4e6 / 396e3 + 20);
}

// A kernel's loads and stores of a peer's memory move at the preset's nvlink.sm_efficiency of the
// line rate (0.823 on hgx-h200, fitted to real H200s: smaller requests than a copy engine's), a
// copy engine's at nvlink.efficiency (0.88): the kernel library's copy (a full GPU's 132 x 1024
// threads) of 256 MiB to GPU 1 takes 0.88 / 0.823 as long as the copy engine's, pulling from GPU 1
// the same. On hgx-h200, set before cuInit: ctest runs each test in a process of its own.
TEST(SmPeerTraffic, MovesAtTheSmShareOfTheLinks) {
  setenv("MCSIM_TOPOLOGY", "hgx-h200", 1);
  ASSERT_OK(cuInit(0));
  char name[128] = {};
  ASSERT_OK(cuDeviceGetName(name, sizeof name, 0));
  if (std::string(name).find("H200") == std::string::npos) GTEST_SKIP() << "the driver was set up before this test (run it alone)";
  constexpr size_t kBytes = 256 * kMiB;
  CUcontext ctx[2] = {};
  CUdeviceptr src[2] = {}, dst[2] = {};
  for (int d = 0; d < 2; ++d) {
    ASSERT_OK(cuDevicePrimaryCtxRetain(&ctx[d], d));
    ASSERT_OK(cuCtxSetCurrent(ctx[d]));
    ASSERT_OK(cuMemAlloc(&src[d], kBytes));
    ASSERT_OK(cuMemAlloc(&dst[d], kBytes));
  }
  ASSERT_OK(cuCtxEnablePeerAccess(ctx[0], 0));  // GPU 1's context reaches GPU 0
  ASSERT_OK(cuCtxSetCurrent(ctx[0]));
  ASSERT_OK(cuCtxEnablePeerAccess(ctx[1], 0));
  CUstream stream = nullptr;
  ASSERT_OK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  CUmodule mod = nullptr;
  CUfunction copy = nullptr;
  ASSERT_OK(cuModuleLoadData(&mod, mcsim_kernel_image));
  ASSERT_OK(cuModuleGetFunction(&copy, mod, MCSIM_KERNEL_COPY));
  const auto elapsedUs = [&](auto enqueue) {
    const uint64_t t0 = mcsim::api::simulatedTimePs();
    enqueue();
    EXPECT_OK(cuStreamSynchronize(stream));
    return static_cast<double>(mcsim::api::simulatedTimePs() - t0) / 1e6;
  };
  const auto launchCopy = [&](CUdeviceptr to, CUdeviceptr from) {
    uint64_t n = kBytes;
    void* args[] = {&to, &from, &n};
    EXPECT_OK(cuLaunchKernel(copy, 132, 1, 1, 1024, 1, 1, 0, stream, args, nullptr));
  };
  const double engine = elapsedUs([&] { EXPECT_OK(cuMemcpyDtoDAsync(dst[1], src[0], kBytes, stream)); });
  const double push = elapsedUs([&] { launchCopy(dst[1], src[0]); });
  const double pull = elapsedUs([&] { launchCopy(dst[0], src[1]); });
  EXPECT_GT(push, 268.4e6 / (450e3 * 0.823));
  EXPECT_NEAR(push / engine, 0.88 / 0.823, 0.02);
  EXPECT_NEAR(pull / engine, 0.88 / 0.823, 0.03);
  // Within GPU 0 the same kernel is bound by HBM, not by NVLink: far faster.
  EXPECT_LT(elapsedUs([&] { launchCopy(dst[0], src[0]); }), push / 3);
  ASSERT_OK(cuModuleUnload(mod));
  ASSERT_OK(cuStreamDestroy(stream));
  for (int d = 0; d < 2; ++d) {
    ASSERT_OK(cuCtxSetCurrent(ctx[d]));
    ASSERT_OK(cuMemFree(src[d]));
    ASSERT_OK(cuMemFree(dst[d]));
  }
  ASSERT_OK(cuCtxSetCurrent(nullptr));
  for (int d = 0; d < 2; ++d) ASSERT_OK(cuDevicePrimaryCtxRelease(d));
}

// Without peer access between the contexts the driver stages a peer copy through host memory
// (docs/model.md, "Peer copies without peer access"): 38 GB/s (the preset's rate, fitted to real
// H200s) instead of the NVLink's 396, and the PCIe links carry it.
TEST_F(TimingTest, APeerCopyWithoutPeerAccessIsStagedThroughTheHost) {
  const double direct = elapsedUs([&] { EXPECT_OK(peer(0, 1, s[0][0])); });
  ASSERT_OK(cuCtxSetCurrent(ctx[0]));
  ASSERT_OK(cuCtxDisablePeerAccess(ctx[1]));
  const double staged = elapsedUs([&] { EXPECT_OK(peer(0, 1, s[0][0])); });
  EXPECT_GT(staged, 268.4e6 / 38e3);
  EXPECT_LT(staged, 268.4e6 / 38e3 + 40);
  EXPECT_GT(staged, 9 * direct);
  // It shares GPU 0's PCIe with a host copy: the two together take longer than the staged copy alone.
  void* host = nullptr;
  ASSERT_OK(cuMemAllocHost(&host, kBytes));
  const double withHostCopy = elapsedUs([&] {
    EXPECT_OK(peer(0, 1, s[0][0]));
    EXPECT_OK(cuMemcpyDtoHAsync(host, src[0], kBytes, s[0][1]));
  });
  EXPECT_GT(withHostCopy, staged + 100);
  ASSERT_OK(cuMemFreeHost(host));
  // GPU 1's context still has access to GPU 0: the copy back, on GPU 1's stream, is direct.
  const double back = elapsedUs([&] { EXPECT_OK(cuMemcpyPeerAsync(dst[0], ctx[0], src[1], ctx[1], kBytes, s[1][0])); });
  EXPECT_LT(back, 1.1 * direct);
  ASSERT_OK(cuCtxSetCurrent(ctx[0]));
  ASSERT_OK(cuCtxEnablePeerAccess(ctx[1], 0));
  EXPECT_NEAR(elapsedUs([&] { EXPECT_OK(peer(0, 1, s[0][0])); }), direct, 0.02 * direct);
}

TEST_F(TimingTest, QueuedWorkRunsWhenTheHostWaits) {
  const uint64_t t0 = mcsim::api::simulatedTimePs();
  for (int i = 0; i < 10; ++i) ASSERT_OK(cuMemcpyDtoDAsync(dst[0], src[0], kBytes, s[0][0]));
  // Queued, not yet run: the thread's time moved on by its calls' cost only (docs/model.md, "What
  // the host costs"), far less than one 256 MiB copy (about 180 us).
  EXPECT_LT(mcsim::api::simulatedTimePs() - t0, 20'000'000u);
  ASSERT_OK(cuStreamSynchronize(s[0][0]));
  EXPECT_GT(mcsim::api::simulatedTimePs() - t0, 1'000'000'000u);  // ten copies ran
}

TEST_F(TimingTest, PollingAStreamLetsTimeRunUntilItIsIdle) {
  ASSERT_OK(cuMemcpyDtoDAsync(dst[0], src[0], kBytes, s[0][0]));
  EXPECT_CU(CUDA_ERROR_NOT_READY, cuStreamQuery(s[0][0]));
  int polls = 1;
  while (cuStreamQuery(s[0][0]) == CUDA_ERROR_NOT_READY) ++polls;
  EXPECT_OK(cuStreamQuery(s[0][0]));
  // Each unanswered poll lets 1 us pass (MCSIM_HOST_POLL_NS): a 256 MiB copy takes ~180 us.
  EXPECT_GT(polls, 100);
  EXPECT_LT(polls, 400);
}

TEST_F(TimingTest, ElapsedTimeIsNotReadyUntilBothEventsAre) {
  CUevent a = nullptr, b = nullptr;
  ASSERT_OK(cuEventCreate(&a, 0));
  ASSERT_OK(cuEventCreate(&b, 0));
  ASSERT_OK(cuEventRecord(a, s[0][0]));
  ASSERT_OK(cuMemcpyDtoDAsync(dst[0], src[0], kBytes, s[0][0]));
  ASSERT_OK(cuEventRecord(b, s[0][0]));
  float ms = 0;
  EXPECT_CU(CUDA_ERROR_NOT_READY, cuEventElapsedTime(&ms, a, b));
  EXPECT_CU(CUDA_ERROR_NOT_READY, cuEventQuery(b));
  ASSERT_OK(cuEventSynchronize(b));
  ASSERT_OK(cuEventElapsedTime(&ms, a, b));
  EXPECT_GT(ms, 0.1f);
}

TEST_F(TimingTest, AStreamWaitingForAnotherGpusEventStartsAfterIt) {
  CUevent e = nullptr, t0 = nullptr, t1 = nullptr;
  ASSERT_OK(cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
  ASSERT_OK(cuCtxSetCurrent(ctx[1]));
  ASSERT_OK(cuEventCreate(&t1, 0));
  ASSERT_OK(cuCtxSetCurrent(ctx[0]));
  ASSERT_OK(cuEventCreate(&t0, 0));
  ASSERT_OK(cuEventRecord(t0, s[0][0]));
  ASSERT_OK(cuMemcpyDtoDAsync(dst[0], src[0], kBytes, s[0][0]));
  ASSERT_OK(cuEventRecord(e, s[0][0]));
  ASSERT_OK(cuCtxSetCurrent(ctx[1]));
  ASSERT_OK(cuStreamWaitEvent(s[1][0], e, 0));
  ASSERT_OK(cuEventRecord(t1, s[1][0]));
  ASSERT_OK(cuEventSynchronize(t1));
  float waitedMs = 0;
  ASSERT_OK(cuCtxSetCurrent(ctx[0]));
  ASSERT_OK(cuEventElapsedTime(&waitedMs, t0, t1));
  EXPECT_GT(waitedMs, 0.15f);  // GPU 1's stream reached t1 only after GPU 0's copy
}

TEST_F(TimingTest, PageableSourceIsStagedWhenTheAsyncCopyIsMade) {
  std::vector<uint32_t> host(kMiB / 4, 0xabcdabcdu);
  ASSERT_OK(cuMemcpyHtoDAsync(dst[0], host.data(), kMiB, s[0][0]));
  std::fill(host.begin(), host.end(), 0u);  // the copy must not see this
  ASSERT_OK(cuStreamSynchronize(s[0][0]));
  std::vector<uint32_t> back(kMiB / 4, 0);
  ASSERT_OK(cuMemcpyDtoH(back.data(), dst[0], kMiB));
  EXPECT_EQ(back.front(), 0xabcdabcdu);
  EXPECT_EQ(back.back(), 0xabcdabcdu);
}

TEST_F(TimingTest, AsyncCopyToPageableMemoryIsCompleteOnReturn) {
  ASSERT_OK(cuMemsetD32(src[0], 0x5a5a5a5au, kMiB / 4));
  std::vector<uint32_t> host(kMiB / 4, 0);
  ASSERT_OK(cuMemcpyDtoHAsync(host.data(), src[0], kMiB, s[0][0]));
  EXPECT_EQ(host.front(), 0x5a5a5a5au);  // no synchronize: the reference says it returns when done
  EXPECT_EQ(host.back(), 0x5a5a5a5au);
}

TEST_F(TimingTest, MemoryFreedWhileACopyIsInFlightIsHarmless) {
  CUdeviceptr tmp = 0;
  ASSERT_OK(cuMemAlloc(&tmp, kBytes));
  ASSERT_OK(cuMemsetD8Async(tmp, 7, kBytes, s[0][0]));
  ASSERT_OK(cuMemcpyDtoDAsync(dst[0], tmp, kBytes, s[0][0]));
  ASSERT_OK(cuMemFree(tmp));  // the copy keeps the backing memory until it is done
  ASSERT_OK(cuStreamSynchronize(s[0][0]));
  unsigned char b = 0;
  ASSERT_OK(cuMemcpyDtoH(&b, dst[0] + kBytes - 1, 1));
  EXPECT_EQ(b, 7);
}

TEST_F(TimingTest, DestroyingAContextWaitsForItsWork) {
  CUcontext c = nullptr;
  ASSERT_OK(cuCtxCreate(&c, nullptr, 0, 2));
  CUdeviceptr p = 0;
  ASSERT_OK(cuMemAlloc(&p, kBytes));
  CUstream st = nullptr;
  ASSERT_OK(cuStreamCreate(&st, 0));
  ASSERT_OK(cuMemsetD8Async(p, 1, kBytes, st));
  const uint64_t before = mcsim::api::simulatedTimePs();
  ASSERT_OK(cuCtxDestroy(c));
  EXPECT_GT(mcsim::api::simulatedTimePs(), before);
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuStreamQuery(st));  // gone with its context
}

TEST_F(TimingTest, UnknownStreamsAndEventsAreRefusedNotDereferenced) {
  auto bogusStream = reinterpret_cast<CUstream>(uintptr_t{0x1234560});
  auto bogusEvent = reinterpret_cast<CUevent>(uintptr_t{0x1234570});
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuMemcpyDtoDAsync(dst[0], src[0], 4, bogusStream));
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuStreamSynchronize(bogusStream));
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuEventRecord(bogusEvent, nullptr));
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuEventQuery(bogusEvent));
  CUstream st = nullptr;
  ASSERT_OK(cuStreamCreate(&st, 0));
  ASSERT_OK(cuStreamDestroy(st));
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuStreamQuery(st));
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuStreamDestroy(st));
}

TEST_F(TimingTest, AFailingStreamCallChangesNothing) {
  const uint64_t before = mcsim::api::stateDigest();
  CUstream st = nullptr;
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuStreamCreate(&st, 0x40));
  CUevent e = nullptr;
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuEventCreate(&e, CU_EVENT_INTERPROCESS));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemcpyDtoDAsync(0, src[0], 4, s[0][0]));
  EXPECT_EQ(mcsim::api::stateDigest(), before);
}

// A producer kernel on GPU 0 stores 4 MiB into GPU 1's memory, then (after a barrier and a
// system-scope fence) sets a flag there; a consumer kernel on GPU 1 spins on the flag. The flag is
// seen only once the stores before it have landed (docs/ptx.md, "On the node"): the consumer ends
// after the producer's traffic is done and no sooner than the bytes take over NVLink. (Before
// 2026-11-29 a slice's writes were seen at its start, and the consumer ended within a few
// microseconds of the producer's start, with the data still on its way.)
const char* const kFlagPtx = R"(
.version 8.0
.target sm_90
.address_size 64
.visible .entry producer(.param .u64 data, .param .u64 flag, .param .u32 iters) {
  .reg .u64 %rd<4>;
  .reg .u32 %r<5>;
  .reg .pred %p<3>;
  ld.param.u64 %rd1, [data];
  ld.param.u64 %rd2, [flag];
  ld.param.u32 %r1, [iters];
  mov.u32 %r2, %tid.x;
  mul.wide.u32 %rd3, %r2, 16;
  add.u64 %rd1, %rd1, %rd3;
  mov.u32 %r3, 0;
STORE:
  st.global.v4.u32 [%rd1], {%r2, %r2, %r2, %r2};
  add.u64 %rd1, %rd1, 16384;
  add.u32 %r3, %r3, 1;
  setp.lt.u32 %p1, %r3, %r1;
  @%p1 bra STORE;
  bar.sync 0;
  setp.ne.u32 %p2, %r2, 0;
  @%p2 bra DONE;
  membar.sys;
  mov.u32 %r4, 1;
  st.release.sys.global.u32 [%rd2], %r4;
DONE:
  ret;
}
.visible .entry consumer(.param .u64 flag) {
  .reg .u64 %rd<2>;
  .reg .u32 %r<2>;
  .reg .pred %p<2>;
  ld.param.u64 %rd1, [flag];
SPIN:
  ld.acquire.sys.global.u32 %r1, [%rd1];
  setp.eq.u32 %p1, %r1, 0;
  @%p1 bra SPIN;
  ret;
}
)";

TEST_F(TimingTest, AFlagWrittenAfterPeerStoresIsSeenWhenTheyHaveLanded) {
  constexpr uint32_t kThreads = 1024, kIters = 256;  // 16 B a thread an iteration: 4 MiB
  constexpr size_t kData = size_t{kThreads} * 16 * kIters;
  CUmodule m0 = nullptr, m1 = nullptr;
  CUfunction producer = nullptr, consumer = nullptr;
  ASSERT_OK(cuCtxSetCurrent(ctx[1]));
  ASSERT_OK(cuModuleLoadData(&m1, kFlagPtx));
  ASSERT_OK(cuModuleGetFunction(&consumer, m1, "consumer"));
  ASSERT_OK(cuMemsetD32(src[1], 0, 1));
  CUevent consumed = nullptr;
  ASSERT_OK(cuEventCreate(&consumed, 0));
  ASSERT_OK(cuCtxSetCurrent(ctx[0]));
  ASSERT_OK(cuModuleLoadData(&m0, kFlagPtx));
  ASSERT_OK(cuModuleGetFunction(&producer, m0, "producer"));
  CUevent start = nullptr, produced = nullptr;
  ASSERT_OK(cuEventCreate(&start, 0));
  ASSERT_OK(cuEventCreate(&produced, 0));

  CUdeviceptr flag = src[1], data = dst[1];
  uint32_t iters = kIters;
  void* consumerArgs[] = {&flag};
  void* producerArgs[] = {&data, &flag, &iters};
  ASSERT_OK(cuCtxSetCurrent(ctx[1]));
  ASSERT_OK(cuLaunchKernel(consumer, 1, 1, 1, 32, 1, 1, 0, s[1][0], consumerArgs, nullptr));
  ASSERT_OK(cuEventRecord(consumed, s[1][0]));
  ASSERT_OK(cuCtxSetCurrent(ctx[0]));
  ASSERT_OK(cuEventRecord(start, s[0][0]));
  ASSERT_OK(cuLaunchKernel(producer, 1, 1, 1, kThreads, 1, 1, 0, s[0][0], producerArgs, nullptr));
  ASSERT_OK(cuEventRecord(produced, s[0][0]));
  ASSERT_OK(cuEventSynchronize(produced));
  ASSERT_OK(cuCtxSetCurrent(ctx[1]));
  ASSERT_OK(cuEventSynchronize(consumed));

  float producedMs = 0, consumedMs = 0;
  ASSERT_OK(cuEventElapsedTime(&producedMs, start, produced));
  ASSERT_OK(cuEventElapsedTime(&consumedMs, start, consumed));
  // The flag lands last of the producer's stores, when its kernel's traffic is done.
  EXPECT_GE(consumedMs, producedMs);
  // 4 MiB at the preset's NVLink rate (396 GB/s) at least, however fast one SM issues them.
  EXPECT_GT(consumedMs * 1e-3, static_cast<double>(kData) / 396e9);
  uint32_t last = 0;
  ASSERT_OK(cuMemcpyDtoH(&last, data + kData - 4, 4));
  EXPECT_EQ(last, kThreads - 1);
}

// What a fence costs the warp that makes it (docs/ptx.md, "Fences"): `fenced` stores a word to
// `target`, then thread 0 times a fence at .sys (sys != 0) or .gpu scope with %globaltimer, which
// reads simulated time on the node, and writes the time to `out`. `stream` has every thread store
// 16 bytes an iteration to `dst`.
const char* const kFencePtx = R"(
.version 8.0
.target sm_90
.address_size 64
.visible .entry fenced(.param .u64 target, .param .u64 out, .param .u32 sys) {
  .reg .u64 %rd<6>;
  .reg .u32 %r<3>;
  .reg .pred %p<2>;
  ld.param.u64 %rd1, [target];
  ld.param.u64 %rd2, [out];
  ld.param.u32 %r1, [sys];
  st.global.u32 [%rd1], 1;
  setp.eq.u32 %p1, %r1, 0;
  mov.u64 %rd3, %globaltimer;
  @%p1 bra GPU;
  fence.sc.sys;
  bra.uni TIMED;
GPU:
  fence.sc.gpu;
TIMED:
  mov.u64 %rd4, %globaltimer;
  sub.u64 %rd5, %rd4, %rd3;
  st.global.u64 [%rd2], %rd5;
  ret;
}
.visible .entry stream(.param .u64 dst, .param .u32 iters) {
  .reg .u64 %rd<4>;
  .reg .u32 %r<6>;
  .reg .pred %p<2>;
  ld.param.u64 %rd1, [dst];
  ld.param.u32 %r1, [iters];
  mov.u32 %r2, %tid.x;
  mov.u32 %r3, %ctaid.x;
  mov.u32 %r4, %ntid.x;
  mad.lo.u32 %r2, %r3, %r4, %r2;
  mul.wide.u32 %rd2, %r2, 16;
  add.u64 %rd1, %rd1, %rd2;
  mov.u32 %r5, 0;
LOOP:
  st.global.v4.u32 [%rd1], {%r2, %r2, %r2, %r2};
  add.u64 %rd1, %rd1, 2162688;
  add.u32 %r5, %r5, 1;
  setp.lt.u32 %p1, %r5, %r1;
  @%p1 bra LOOP;
  ret;
}
)";

// Idle, a .sys fence after a local store takes the preset's 1.1 us and a .gpu one 0.3 us. Beside
// another kernel of the GPU that keeps its NVLink links busy, the .sys fence waits for that
// kernel's writes queued before it, as on a real H200 (6-13 us there), while the .gpu one, with
// nothing of its own on the links, does not (tools/probe/fence_probe.cu; docs/real-driver.md,
// section 17). Before 2026-11-30 fences cost nothing.
TEST_F(TimingTest, AFenceWaitsForTheWritesBeforeItAtItsScope) {
  CUmodule m = nullptr;
  CUfunction fenced = nullptr, stream = nullptr;
  ASSERT_OK(cuModuleLoadData(&m, kFencePtx));
  ASSERT_OK(cuModuleGetFunction(&fenced, m, "fenced"));
  ASSERT_OK(cuModuleGetFunction(&stream, m, "stream"));
  const auto fenceNs = [&](uint32_t sys, bool loaded) {
    CUdeviceptr target = src[0], out = src[0] + 64, peerDst = dst[1];
    uint32_t iters = 64;  // 132 x 1024 threads x 16 B x 64: 132 MiB to GPU 1, about 350 us
    void* fencedArgs[] = {&target, &out, &sys};
    void* streamArgs[] = {&peerDst, &iters};
    if (loaded) {
      EXPECT_OK(cuLaunchKernel(stream, 132, 1, 1, 1024, 1, 1, 0, s[0][1], streamArgs, nullptr));
    }
    EXPECT_OK(cuLaunchKernel(fenced, 1, 1, 1, 32, 1, 1, 0, s[0][0], fencedArgs, nullptr));
    EXPECT_OK(cuCtxSynchronize());
    uint64_t ns = 0;
    EXPECT_OK(cuMemcpyDtoH(&ns, out, 8));
    return ns;
  };
  const uint64_t sysIdle = fenceNs(1, false), gpuIdle = fenceNs(0, false);
  EXPECT_GE(sysIdle, 1100u);
  EXPECT_LT(sysIdle, 1300u);
  EXPECT_GE(gpuIdle, 300u);
  EXPECT_LT(gpuIdle, 500u);
  const uint64_t sysLoaded = fenceNs(1, true), gpuLoaded = fenceNs(0, true);
  EXPECT_GT(sysLoaded, 2 * sysIdle);
  EXPECT_LT(gpuLoaded, 500u);
}

// Runs the workload program with `env` prepended; returns its output.
std::string runWorkload(const std::string& env) {
  const std::string cmd = env + " " + MCSIM_TIMING_WORKLOAD + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  if (p == nullptr) return out;
  std::array<char, 4096> buf{};
  size_t n = 0;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  EXPECT_EQ(pclose(p), 0) << out;
  return out;
}

TEST(TimingDeterminism, TheSameProgramGivesTheSameTimesAndData) {
  const std::string a = runWorkload("");
  const std::string b = runWorkload("");
  ASSERT_NE(a.find("checksum"), std::string::npos) << a;
  EXPECT_EQ(a, b);
}

TEST(TimingOnly, TimesAreThoseOfAFunctionalRunAndNoDataMoves) {
  const std::string functional = runWorkload("");
  const std::string timingOnly = runWorkload("MCSIM_TIMING_ONLY=1");
  auto times = [](const std::string& s) { return s.substr(0, s.find("checksum")); };
  EXPECT_EQ(times(functional), times(timingOnly));
  EXPECT_NE(functional.substr(functional.find("checksum")), timingOnly.substr(timingOnly.find("checksum")));
}

TEST(Timeline, IsTraceEventJsonWithTheHardwareAndStreams) {
  const std::string path = ::testing::TempDir() + "/mcsim-timeline.json";
  std::remove(path.c_str());
  runWorkload("MCSIM_TIMELINE=" + path);
  std::ifstream in(path);
  ASSERT_TRUE(in.good()) << path;
  const nlohmann::json doc = nlohmann::json::parse(in);
  std::set<std::string> threads;
  size_t spans = 0;
  for (const auto& e : doc.at("traceEvents")) {
    if (e.at("ph") == "M" && e.at("name") == "thread_name") threads.insert(e.at("args").at("name").get<std::string>());
    if (e.at("ph") == "X") {
      ++spans;
      EXPECT_GE(e.at("dur").get<double>(), 0.0);
    }
  }
  EXPECT_GT(spans, 10u);
  EXPECT_EQ(threads.count("HBM stack 0"), 1u);
  EXPECT_EQ(threads.count("NVLink switch 0 out"), 1u);
  EXPECT_EQ(threads.count("driver calls"), 1u);
  bool stream = false;
  for (const auto& t : threads) stream = stream || t.rfind("stream ", 0) == 0;
  EXPECT_TRUE(stream);
  // The same run writes the same file.
  std::stringstream first;
  first << std::ifstream(path).rdbuf();
  runWorkload("MCSIM_TIMELINE=" + path);
  std::stringstream second;
  second << std::ifstream(path).rdbuf();
  EXPECT_EQ(first.str(), second.str());
}

// The host's clock (docs/model.md, "What the host costs"): host_cost_workload's figures, in
// picoseconds, under a given MCSIM_HOST_COST_PERCENT.
std::map<std::string, long long> hostCostFigures(const std::string& percent) {
  const std::string cmd = "MCSIM_HOST_COST_PERCENT=" + percent + " " + MCSIM_HOST_COST_WORKLOAD + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  if (p != nullptr) {
    std::array<char, 4096> buf{};
    size_t n = 0;
    while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
    EXPECT_EQ(pclose(p), 0) << out;
  }
  std::map<std::string, long long> figures;
  std::istringstream lines(out);
  std::string name, eq;
  long long value = 0;
  while (lines >> name >> eq >> value) figures[name] = value;
  EXPECT_EQ(figures.size(), 8u) << out;
  return figures;
}

TEST(HostCost, HostCallsBetweenTwoEventsShowAsTime) {
  auto on = hostCostFigures("100");
  // An event record costs the host a fixed time: after a blocking wait, two records on an idle
  // stream are that far apart, and a pair around ten more records on another stream eleven times
  // that (each record's work waits for the host's clock when the call was made).
  const long long record = on["after_sync"];
  EXPECT_GT(record, 0);
  EXPECT_EQ(on["pair"], record);
  EXPECT_EQ(on["records"], 11 * record);
  // Ten launches on an idle GPU take at least ten launches' host cost, which is at least a
  // record's; and more than one launch.
  EXPECT_GE(on["launches"], 10 * record);
  EXPECT_GT(on["launches"], on["launch"]);
}

TEST(HostCost, ScalesWithTheSettingAndLaunchesWaitForTheHost) {
  auto on = hostCostFigures("100");
  auto twice = hostCostFigures("200");
  auto tenfold = hostCostFigures("1000");
  EXPECT_EQ(twice["after_sync"], 2 * on["after_sync"]);
  EXPECT_EQ(twice["records"], 2 * on["records"]);
  // At ten times the cost the host is slower than the device: ten launches between two events
  // take ten launches' host time, more than twice what they take at the default.
  EXPECT_GT(tenfold["launches"], 2 * on["launches"]);
  EXPECT_GE(tenfold["launches"], 10 * 10 * on["after_sync"]);
  // A copy's own time does not change with the host's cost: its call's cost falls after it is
  // queued (the copy engine's fitted set-up already holds it).
  EXPECT_EQ(on["copy"], twice["copy"]);
}

TEST(HostCost, OffTheHostTakesNoSimulatedTime) {
  auto off = hostCostFigures("0");
  EXPECT_EQ(off["pair"], 0);
  EXPECT_EQ(off["records"], 0);
  EXPECT_EQ(off["after_sync"], 0);
  // Launches run back to back on the device: ten take ten times one (to the nanosecond the
  // figures are rounded to).
  EXPECT_NEAR(static_cast<double>(off["launches"]), 10.0 * static_cast<double>(off["launch"]), 10000);
  // With the clock on, the same copy takes the same device time, and the query that spins on it
  // polls fewer times (each poll costs the host a query as well as the polling interval).
  auto on = hostCostFigures("100");
  EXPECT_EQ(off["copy"], on["copy"]);
  EXPECT_GT(off["polls"], on["polls"]);
}

TEST(HostCost, TheSameProgramGetsTheSameClocks) {
  EXPECT_EQ(hostCostFigures("100"), hostCostFigures("100"));
}

}  // namespace
