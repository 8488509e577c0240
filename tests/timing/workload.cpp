// A multi-stream, multi-device workload for the determinism and timeline tests: four GPUs, two
// streams each, local and peer copies and memsets tied together with events. Prints every
// event's time relative to the first, and a checksum of the data, one line each.
#include <cuda.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "tests/common/check_or_exit.h"

int main() {
  constexpr int kGpus = 4;
  constexpr size_t kBytes = size_t{32} << 20;
  CHECK(cuInit(0));
  std::vector<CUcontext> ctx(kGpus);
  std::vector<CUdeviceptr> buf(kGpus), peerIn(kGpus);
  std::vector<CUstream> s0(kGpus), s1(kGpus);
  std::vector<CUevent> start(kGpus), mid(kGpus), end(kGpus);
  for (int d = 0; d < kGpus; ++d) {
    CHECK(cuDevicePrimaryCtxRetain(&ctx[d], d));
    CHECK(cuCtxSetCurrent(ctx[d]));
    CHECK(cuMemAlloc(&buf[d], kBytes));
    CHECK(cuMemAlloc(&peerIn[d], kBytes));
    CHECK(cuStreamCreate(&s0[d], CU_STREAM_NON_BLOCKING));
    CHECK(cuStreamCreate(&s1[d], CU_STREAM_NON_BLOCKING));
    CHECK(cuEventCreate(&start[d], 0));
    CHECK(cuEventCreate(&mid[d], 0));
    CHECK(cuEventCreate(&end[d], 0));
  }
  for (int d = 0; d < kGpus; ++d) {
    CHECK(cuCtxSetCurrent(ctx[d]));
    for (int p = 0; p < kGpus; ++p) {
      if (p != d) CHECK(cuCtxEnablePeerAccess(ctx[p], 0));
    }
  }
  for (int round = 0; round < 3; ++round) {
    for (int d = 0; d < kGpus; ++d) {
      CHECK(cuCtxSetCurrent(ctx[d]));
      CHECK(cuEventRecord(start[d], s0[d]));
      CHECK(cuMemsetD32Async(buf[d], static_cast<unsigned>(d * 16 + round), kBytes / 4, s0[d]));
      CHECK(cuEventRecord(mid[d], s0[d]));
      CHECK(cuStreamWaitEvent(s1[d], mid[d], 0));
      // Each GPU pushes its buffer to the next one, on its second stream.
      const int next = (d + 1) % kGpus;
      CHECK(cuMemcpyPeerAsync(peerIn[next], ctx[next], buf[d], ctx[d], kBytes, s1[d]));
      CHECK(cuMemcpyDtoDAsync(buf[d] + kBytes / 2, buf[d], kBytes / 2, s0[d]));
      CHECK(cuEventRecord(end[d], s1[d]));
    }
    for (int d = 0; d < kGpus; ++d) {
      CHECK(cuCtxSetCurrent(ctx[d]));
      CHECK(cuEventSynchronize(end[d]));
      float a = 0, b = 0;
      CHECK(cuEventElapsedTime(&a, start[0], mid[d]));
      CHECK(cuEventElapsedTime(&b, start[0], end[d]));
      std::printf("round %d gpu %d mid %.6f end %.6f\n", round, d, a, b);
    }
  }
  unsigned long long sum = 0;
  for (int d = 0; d < kGpus; ++d) {
    CHECK(cuCtxSetCurrent(ctx[d]));
    CHECK(cuCtxSynchronize());
    std::vector<unsigned> host(kBytes / 4);
    CHECK(cuMemcpyDtoH(host.data(), peerIn[d], kBytes));
    for (unsigned v : host) sum = sum * 31 + v;
  }
  std::printf("checksum %llu\n", sum);
  return 0;
}
