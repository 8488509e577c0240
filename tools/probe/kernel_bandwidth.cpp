// Measures mcsim's library kernels on one real GPU's own memory, timed with events as an
// application would: mcsim_copy and mcsim_reduce over 1 GiB with several launch shapes. For
// checking the model's loads-in-flight mechanism (docs/multimem.md) against a real GPU: a kernel
// keeps (threads x bytes in flight per thread) outstanding, and its bandwidth follows until HBM
// saturates.
//
// Plain device memory only; it never calls any cuMulticast* function. Build against the real
// driver: g++ -std=c++17 -O2 -I/usr/local/cuda/include -Iinclude tools/probe/kernel_bandwidth.cpp
// <build>/kernels/libmcsim_kernels.a -lcuda -o kernel_bandwidth; against mcsim the same source is
// bench/kernel_bandwidth (run it with MCSIM_TIMING_ONLY=1 MCSIM_TOPOLOGY=single-h100).
// Output: `kbw.<kernel>.<blocks>x<threads> = <ms> ms <GB/s>`, GB/s counting bytes read and written.
#include <cuda.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "mcsim/kernels.h"
#include "probe_timing.h"

namespace {

constexpr int kWarmups = 1;
constexpr int kRepeats = 5;

struct Shape {
  unsigned blocks, threads;
};

int timeLaunch(CUstream stream, CUfunction f, Shape s, void** args, float* medianMs) {
  return probe::medianMs(
      stream, [&] { return cuLaunchKernel(f, s.blocks, 1, 1, s.threads, 1, 1, 0, stream, args, nullptr); }, medianMs,
      kWarmups, kRepeats);
}

}  // namespace

int main() {
  CHECK(cuInit(0));
  CUcontext ctx;
  CHECK(cuDevicePrimaryCtxRetain(&ctx, 0));
  CHECK(cuCtxSetCurrent(ctx));
  CUmodule mod;
  CHECK(cuModuleLoadData(&mod, mcsim_kernel_image));
  CUfunction copy, reduce;
  CHECK(cuModuleGetFunction(&copy, mod, MCSIM_KERNEL_COPY));
  CHECK(cuModuleGetFunction(&reduce, mod, MCSIM_KERNEL_REDUCE));
  CUstream stream;
  CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  const uint64_t bytes = uint64_t{1} << 30;
  CUdeviceptr x, y, z;
  CHECK(cuMemAlloc(&x, bytes));
  CHECK(cuMemAlloc(&y, bytes));
  CHECK(cuMemAlloc(&z, bytes));
  CHECK(cuMemsetD32(x, 0x3f800000, bytes / 4));
  CHECK(cuMemsetD32(y, 0x40000000, bytes / 4));
  CHECK(cuCtxSynchronize());
  // From NCCL's ring shape (24 x 512) up to a full GPU; and a lone block.
  const Shape shapes[] = {{1, 256}, {4, 512}, {24, 512}, {66, 512}, {132, 1024}, {264, 1024}};
  for (Shape s : shapes) {
    float ms = 0;
    uint64_t n = bytes;
    void* copyArgs[] = {&z, &x, &n};
    if (timeLaunch(stream, copy, s, copyArgs, &ms) != 0) return 1;
    std::printf("kbw.copy.%ux%u = %.4f ms %.1f GB/s\n", s.blocks, s.threads, ms, 2.0 * bytes / (ms * 1e6));
    uint64_t count = bytes / 4;
    uint32_t dtype = MCSIM_DTYPE_F32, op = MCSIM_REDOP_ADD;
    void* reduceArgs[] = {&z, &x, &y, &count, &dtype, &op};
    if (timeLaunch(stream, reduce, s, reduceArgs, &ms) != 0) return 1;
    std::printf("kbw.reduce.%ux%u = %.4f ms %.1f GB/s\n", s.blocks, s.threads, ms, 3.0 * bytes / (ms * 1e6));
  }
  CHECK(cuMemFree(x));
  CHECK(cuMemFree(y));
  CHECK(cuMemFree(z));
  CHECK(cuStreamDestroy(stream));
  CHECK(cuModuleUnload(mod));
  CHECK(cuDevicePrimaryCtxRelease(0));
  return 0;
}
