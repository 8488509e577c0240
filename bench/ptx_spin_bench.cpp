// Kernels that wait for each other across GPUs (docs/ptx.md, "Kernels that wait for each
// other"): a ping-pong between two GPUs' kernels through peer memory, the pattern of every custom
// all-reduce's flags. GPU 0's kernel writes round k to GPU 1's flag and spins until its own flag
// reaches k; GPU 1's kernel spins until its flag reaches k and writes k back. Prints the host's
// wall time (best of the repetitions), round trips per second of it, and the simulated time of a
// round trip. Not Google Benchmark: one line per repetition.
//
//   ptx_spin_bench [rounds] [repetitions]
#include <cuda.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace {

const char* const kPtx = R"(
.version 8.0
.target sm_90
.address_size 64
.visible .entry pingpong(.param .u64 mine, .param .u64 theirs, .param .u32 rounds, .param .u32 first)
{
  .reg .pred %p<4>;
  .reg .b32 %r<6>;
  .reg .b64 %rd<3>;
  ld.param.u64 %rd1, [mine];
  ld.param.u64 %rd2, [theirs];
  ld.param.u32 %r1, [rounds];
  ld.param.u32 %r2, [first];
  setp.ne.u32 %p2, %r2, 0;
  mov.u32 %r3, 1;
LOOP:
  setp.gt.u32 %p1, %r3, %r1;
  @%p1 bra DONE;
  @%p2 bra SEND;
WAIT_FIRST:
  ld.volatile.global.u32 %r4, [%rd1];
  setp.lt.u32 %p3, %r4, %r3;
  @%p3 bra WAIT_FIRST;
SEND:
  st.volatile.global.u32 [%rd2], %r3;
  @!%p2 bra NEXT;
WAIT_REPLY:
  ld.volatile.global.u32 %r4, [%rd1];
  setp.lt.u32 %p3, %r4, %r3;
  @%p3 bra WAIT_REPLY;
NEXT:
  add.u32 %r3, %r3, 1;
  bra LOOP;
DONE:
  ret;
}
)";

#define CHECK(call)                                                         \
  do {                                                                      \
    const CUresult r_ = (call);                                             \
    if (r_ != CUDA_SUCCESS) {                                               \
      std::fprintf(stderr, "%s failed: %d\n", #call, static_cast<int>(r_)); \
      std::exit(1);                                                         \
    }                                                                       \
  } while (0)

}  // namespace

int main(int argc, char** argv) {
  const unsigned rounds = argc > 1 ? static_cast<unsigned>(std::atoi(argv[1])) : 1000;
  const int reps = argc > 2 ? std::atoi(argv[2]) : 3;
  CHECK(cuInit(0));
  CUcontext ctx[2] = {};
  CUmodule mod[2] = {};
  CUfunction f[2] = {};
  CUdeviceptr flag[2] = {};
  CUstream stream[2] = {};
  for (int g = 0; g < 2; ++g) {
    CUdevice dev = 0;
    CHECK(cuDeviceGet(&dev, g));
    CHECK(cuDevicePrimaryCtxRetain(&ctx[g], dev));
    CHECK(cuCtxSetCurrent(ctx[g]));
    CHECK(cuModuleLoadData(&mod[g], kPtx));
    CHECK(cuModuleGetFunction(&f[g], mod[g], "pingpong"));
    CHECK(cuMemAlloc(&flag[g], 4));
    CHECK(cuStreamCreate(&stream[g], CU_STREAM_NON_BLOCKING));
  }
  for (int g = 0; g < 2; ++g) {
    CHECK(cuCtxSetCurrent(ctx[g]));
    CHECK(cuCtxEnablePeerAccess(ctx[1 - g], 0));
  }
  CHECK(cuCtxSetCurrent(ctx[0]));
  CUevent e0 = nullptr, e1 = nullptr;
  CHECK(cuEventCreate(&e0, CU_EVENT_DEFAULT));
  CHECK(cuEventCreate(&e1, CU_EVENT_DEFAULT));
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    for (int g = 0; g < 2; ++g) {
      CHECK(cuCtxSetCurrent(ctx[g]));
      CHECK(cuMemsetD32(flag[g], 0, 1));
    }
    const auto t0 = std::chrono::steady_clock::now();
    // The answering kernel first, on GPU 1; then GPU 0's, which starts each round.
    for (int g = 1; g >= 0; --g) {
      CHECK(cuCtxSetCurrent(ctx[g]));
      unsigned n = rounds, first = g == 0 ? 1 : 0;
      void* args[] = {&flag[g], &flag[1 - g], &n, &first};
      if (g == 0) CHECK(cuEventRecord(e0, stream[0]));
      CHECK(cuLaunchKernel(f[g], 1, 1, 1, 32, 1, 1, 0, stream[g], args, nullptr));
      if (g == 0) CHECK(cuEventRecord(e1, stream[0]));
    }
    CHECK(cuCtxSetCurrent(ctx[0]));
    CHECK(cuEventSynchronize(e1));
    CHECK(cuCtxSetCurrent(ctx[1]));
    CHECK(cuStreamSynchronize(stream[1]));
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    float ms = 0;
    CHECK(cuEventElapsedTime(&ms, e0, e1));
    unsigned last[2] = {};
    for (int g = 0; g < 2; ++g) {
      CHECK(cuCtxSetCurrent(ctx[g]));
      CHECK(cuMemcpyDtoH(&last[g], flag[g], 4));
    }
    if (last[0] != rounds || last[1] != rounds) {
      std::fprintf(stderr, "flags %u and %u, not %u\n", last[0], last[1], rounds);
      return 1;
    }
    best = wall < best ? wall : best;
    std::printf("ping-pong %u rounds across 2 GPUs: wall %.3f s (%.0f round trips/s), simulated %.3f us a round trip\n",
                rounds, wall, rounds / wall, 1000.0 * static_cast<double>(ms) / rounds);
  }
  std::printf("best wall %.3f s\n", best);
  return 0;
}
