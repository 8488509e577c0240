// The PTX executor's speed on arithmetic-heavy code (docs/ptx.md, "Performance"): warp
// instructions per second of the host core that runs it (its thread's CPU time, so that other
// load on a shared machine does not count; wall time is printed beside it). Not Google
// Benchmark: it runs each kernel once per repetition and prints one line per kernel.
//
//   ptx_bench [repetitions]
#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "ptx/executor.h"
#include "ptx/parser.h"

namespace {

// Each thread runs a loop of dependent integer and float arithmetic (the shape of index
// computations and of an element-wise reduction), then stores its result.
const char* kKernels = R"(
.version 8.0
.target sm_90
.address_size 64
.visible .entry f32_fma(.param .u64 pout, .param .u32 iters)
{
  .reg .b32 %r<8>;
  .reg .f32 %f<8>;
  .reg .b64 %rd<4>;
  .reg .pred %p<2>;
  ld.param.u64 %rd1, [pout];
  ld.param.u32 %r1, [iters];
  mov.u32 %r0, %tid.x;
  cvt.rn.f32.u32 %f1, %r0;
  mov.f32 %f2, 0f3F800000;
  mov.f32 %f3, 0f00000000;
  mov.u32 %r2, 0;
LOOP:
  fma.rn.f32 %f3, %f1, %f2, %f3;
  mul.f32 %f2, %f2, 0f3F7FFFFE;
  add.f32 %f1, %f1, 0f3F000000;
  fma.rn.f32 %f4, %f3, 0f3A800000, %f2;
  sub.f32 %f3, %f3, %f4;
  add.s32 %r2, %r2, 1;
  setp.lt.u32 %p1, %r2, %r1;
  @%p1 bra LOOP;
  mul.wide.u32 %rd2, %r0, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.f32 [%rd3], %f3;
  ret;
}
.visible .entry int_mix(.param .u64 pout, .param .u32 iters)
{
  .reg .b32 %r<12>;
  .reg .b64 %rd<4>;
  .reg .pred %p<2>;
  ld.param.u64 %rd1, [pout];
  ld.param.u32 %r1, [iters];
  mov.u32 %r0, %tid.x;
  mov.u32 %r3, %r0;
  mov.u32 %r2, 0;
LOOP:
  mad.lo.s32 %r3, %r3, 1664525, 1013904223;
  shr.u32 %r4, %r3, 7;
  xor.b32 %r3, %r3, %r4;
  and.b32 %r5, %r3, 255;
  add.s32 %r6, %r6, %r5;
  add.s32 %r2, %r2, 1;
  setp.lt.u32 %p1, %r2, %r1;
  @%p1 bra LOOP;
  mul.wide.u32 %rd2, %r0, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r6;
  ret;
}
)";

double threadCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace mcsim::ptx;
  const int reps = argc > 1 ? std::atoi(argv[1]) : 3;
  Module m;
  std::string err;
  if (!parseModule(kKernels, "ptx_bench", &m, &err)) {
    std::fprintf(stderr, "%s\n", err.c_str());
    return 1;
  }
  FlatMemory mem;
  Executor ex(m, mem);
  const uint32_t threads = 256, blocks = 64, iters = 1000;
  const uint64_t out = mem.allocate(uint64_t{threads} * blocks * 4);
  for (const char* kernel : {"f32_fma", "int_mix"}) {
    double best = 0, bestWall = 0;
    uint64_t instrs = 0;
    for (int r = 0; r < reps; ++r) {
      LaunchConfig cfg;
      cfg.grid.x = blocks;
      cfg.block.x = threads;
      const void* args[] = {&out, &iters};
      cfg.params = packParams(*m.find(kernel), args);
      const auto t0 = std::chrono::steady_clock::now();
      const double c0 = threadCpuSeconds();
      const LaunchResult res = ex.launch(kernel, cfg);
      const double cpu = threadCpuSeconds() - c0;
      const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (res.fault != Fault::kNone) {
        std::fprintf(stderr, "%s\n", res.message.c_str());
        return 1;
      }
      instrs = res.warpInstructions;
      best = std::max(best, static_cast<double>(res.warpInstructions) / cpu);
      bestWall = std::max(bestWall, static_cast<double>(res.warpInstructions) / wall);
    }
    std::printf("%-8s %llu warp instructions, best of %d: %.1f M warp-instr/s per core (%.0f M thread-instr/s); "
                "%.1f M/s of wall time\n",
                kernel, static_cast<unsigned long long>(instrs), reps, best / 1e6, best * 32 / 1e6, bestWall / 1e6);
  }
  return 0;
}
