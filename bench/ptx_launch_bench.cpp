// A program's own kernel on the simulated node, end to end (docs/ptx.md, "Performance"): a vector
// add of 16M floats from PTX text, launched with cuLaunchKernel and run by the PTX executor. Prints
// the host's wall time for the launch and its synchronisation (best of the repetitions), and the
// kernel's simulated time between two events. Not Google Benchmark: one line per repetition.
//
//   ptx_launch_bench [elements] [repetitions]
#include <cuda.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

const char* const kPtx = R"(
.version 8.0
.target sm_90
.address_size 64
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
)";

#define CHECK(call)                                                   \
  do {                                                                \
    const CUresult r_ = (call);                                       \
    if (r_ != CUDA_SUCCESS) {                                         \
      std::fprintf(stderr, "%s failed: %d\n", #call, static_cast<int>(r_)); \
      std::exit(1);                                                   \
    }                                                                 \
  } while (0)

}  // namespace

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 16 << 20;
  const int reps = argc > 2 ? std::atoi(argv[2]) : 3;
  CHECK(cuInit(0));
  CUdevice dev = 0;
  CHECK(cuDeviceGet(&dev, 0));
  CUcontext ctx = nullptr;
  CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CHECK(cuCtxSetCurrent(ctx));
  CUmodule mod = nullptr;
  CHECK(cuModuleLoadData(&mod, kPtx));
  CUfunction f = nullptr;
  CHECK(cuModuleGetFunction(&f, mod, "vadd"));
  const size_t bytes = static_cast<size_t>(n) * 4;
  CUdeviceptr a = 0, b = 0, c = 0;
  CHECK(cuMemAlloc(&a, bytes));
  CHECK(cuMemAlloc(&b, bytes));
  CHECK(cuMemAlloc(&c, bytes));
  std::vector<float> host(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) host[static_cast<size_t>(i)] = static_cast<float>(i & 1023);
  CHECK(cuMemcpyHtoD(a, host.data(), bytes));
  CHECK(cuMemcpyHtoD(b, host.data(), bytes));
  CUevent e0 = nullptr, e1 = nullptr;
  CHECK(cuEventCreate(&e0, CU_EVENT_DEFAULT));
  CHECK(cuEventCreate(&e1, CU_EVENT_DEFAULT));
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    int count = n;
    void* args[] = {&a, &b, &c, &count};
    const auto t0 = std::chrono::steady_clock::now();
    CHECK(cuEventRecord(e0, nullptr));
    CHECK(cuLaunchKernel(f, static_cast<unsigned>((n + 255) / 256), 1, 1, 256, 1, 1, 0, nullptr, args, nullptr));
    CHECK(cuEventRecord(e1, nullptr));
    CHECK(cuEventSynchronize(e1));
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    float ms = 0;
    CHECK(cuEventElapsedTime(&ms, e0, e1));
    best = wall < best ? wall : best;
    std::printf("vadd %d elements: wall %.3f s, simulated %.3f ms\n", n, wall, static_cast<double>(ms));
  }
  CHECK(cuMemcpyDtoH(host.data(), c, bytes));
  for (int i = 0; i < n; ++i) {
    if (host[static_cast<size_t>(i)] != 2.0f * static_cast<float>(i & 1023)) {
      std::fprintf(stderr, "wrong result at %d\n", i);
      return 1;
    }
  }
  std::printf("best wall %.3f s\n", best);
  return 0;
}
