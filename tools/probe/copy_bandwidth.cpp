// Measures copy bandwidth on a real GPU machine, timed with events as an application would:
// device-to-device on each GPU, and peer copies between GPU 0 and 1 in each direction and both
// at once, from 4 MiB to 1 GiB; host copies (pinned and pageable, each way) on GPU 0. For
// calibrating mcsim's copy model.
//
// It never calls any cuMulticast* function. Build: g++ -std=c++17 -O2 -I/usr/local/cuda/include
// copy_bandwidth.cpp -lcuda -o copy_bandwidth. Output: one line per measurement,
// `bw.<kind>.<bytes> = <ms> ms <GB/s>` (GB = 1e9 bytes, bytes moved one way).
#include <cuda.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "probe_timing.h"

namespace {

constexpr int kWarmups = 2;
constexpr int kRepeats = 10;

template <typename Op>
int medianMs(CUstream stream, Op op, float* out) {
  return probe::medianMs(stream, op, out, kWarmups, kRepeats);
}

}  // namespace

int main() {
  CHECK(cuInit(0));
  int n = 0;
  CHECK(cuDeviceGetCount(&n));
  char name[128];
  CHECK(cuDeviceGetName(name, sizeof name, 0));
  std::printf("meta.devices = %d\nmeta.name = %s\n", n, name);
  const size_t kMax = size_t{1} << 30;
  std::vector<CUcontext> ctx(static_cast<size_t>(n));
  std::vector<CUdeviceptr> a(static_cast<size_t>(n)), b(static_cast<size_t>(n));
  for (int d = 0; d < n && d < 2; ++d) {
    CHECK(cuDevicePrimaryCtxRetain(&ctx[d], d));
    CHECK(cuCtxSetCurrent(ctx[d]));
    CHECK(cuMemAlloc(&a[d], kMax));
    CHECK(cuMemAlloc(&b[d], kMax));
    CHECK(cuMemsetD8(a[d], 1, kMax));
  }
  if (n >= 2) {
    int can = 0;
    CHECK(cuDeviceCanAccessPeer(&can, 0, 1));
    std::printf("meta.can_access_peer_0_1 = %d\n", can);
    CHECK(cuCtxSetCurrent(ctx[0]));
    if (can) CHECK(cuCtxEnablePeerAccess(ctx[1], 0));
    CHECK(cuCtxSetCurrent(ctx[1]));
    if (can) CHECK(cuCtxEnablePeerAccess(ctx[0], 0));
  }
  CUstream s0, s1;
  CHECK(cuCtxSetCurrent(ctx[0]));
  CHECK(cuStreamCreate(&s0, CU_STREAM_NON_BLOCKING));
  if (n >= 2) {
    CHECK(cuCtxSetCurrent(ctx[1]));
    CHECK(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
    CHECK(cuCtxSetCurrent(ctx[0]));
  }
  for (size_t bytes = size_t{4} << 20; bytes <= kMax; bytes *= 4) {
    float t = 0;
    CHECK(cuCtxSetCurrent(ctx[0]));
    if (medianMs(s0, [&] { return cuMemcpyDtoDAsync(b[0], a[0], bytes, s0); }, &t)) return 1;
    std::printf("bw.dtod.%zu = %.4f ms %.1f GB/s\n", bytes, t, bytes / (t * 1e6));
    if (n < 2) continue;
    if (medianMs(s0, [&] { return cuMemcpyPeerAsync(b[1], ctx[1], a[0], ctx[0], bytes, s0); }, &t)) return 1;
    std::printf("bw.peer_0to1.%zu = %.4f ms %.1f GB/s\n", bytes, t, bytes / (t * 1e6));
    if (medianMs(s0, [&] { return cuMemcpyPeerAsync(b[0], ctx[0], a[1], ctx[1], bytes, s0); }, &t)) return 1;
    std::printf("bw.peer_1to0_on_0.%zu = %.4f ms %.1f GB/s\n", bytes, t, bytes / (t * 1e6));
    // Both directions at once: one copy on each GPU's stream; timed on stream 0 after a join.
    // The join event belongs to GPU 1's context, where it is recorded.
    CUevent done1;
    CHECK(cuCtxSetCurrent(ctx[1]));
    CHECK(cuEventCreate(&done1, CU_EVENT_DISABLE_TIMING));
    CHECK(cuCtxSetCurrent(ctx[0]));
    auto both = [&] {
      CUresult r = cuMemcpyPeerAsync(b[1], ctx[1], a[0], ctx[0], bytes, s0);
      if (r == CUDA_SUCCESS) r = cuMemcpyPeerAsync(b[0], ctx[0], a[1], ctx[1], bytes, s1);
      if (r == CUDA_SUCCESS) r = cuEventRecord(done1, s1);
      if (r == CUDA_SUCCESS) r = cuStreamWaitEvent(s0, done1, 0);
      return r;
    };
    if (medianMs(s0, both, &t)) return 1;
    std::printf("bw.peer_bidir.%zu = %.4f ms %.1f GB/s (each way)\n", bytes, t, bytes / (t * 1e6));
    cuEventDestroy(done1);
  }
  // Host copies on GPU 0: pinned and pageable memory, each direction, asynchronous on s0 (a
  // pageable copy is staged by the driver).
  {
    CHECK(cuCtxSetCurrent(ctx[0]));
    const size_t kHost = size_t{256} << 20;
    void* pinned = nullptr;
    CHECK(cuMemAllocHost(&pinned, kHost));
    std::vector<unsigned char> pageable(kHost, 1);
    for (size_t bytes = size_t{4} << 20; bytes <= kHost; bytes *= 4) {
      float t = 0;
      if (medianMs(s0, [&] { return cuMemcpyHtoDAsync(b[0], pinned, bytes, s0); }, &t)) return 1;
      std::printf("bw.htod_pinned.%zu = %.4f ms %.1f GB/s\n", bytes, t, bytes / (t * 1e6));
      if (medianMs(s0, [&] { return cuMemcpyDtoHAsync(pinned, a[0], bytes, s0); }, &t)) return 1;
      std::printf("bw.dtoh_pinned.%zu = %.4f ms %.1f GB/s\n", bytes, t, bytes / (t * 1e6));
      if (medianMs(s0, [&] { return cuMemcpyHtoDAsync(b[0], pageable.data(), bytes, s0); }, &t)) return 1;
      std::printf("bw.htod_pageable.%zu = %.4f ms %.1f GB/s\n", bytes, t, bytes / (t * 1e6));
      if (medianMs(s0, [&] { return cuMemcpyDtoHAsync(pageable.data(), a[0], bytes, s0); }, &t)) return 1;
      std::printf("bw.dtoh_pageable.%zu = %.4f ms %.1f GB/s\n", bytes, t, bytes / (t * 1e6));
    }
    CHECK(cuMemFreeHost(pinned));
  }
  std::printf("meta.done = 1\n");
  return 0;
}
