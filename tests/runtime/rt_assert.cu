// A device assert through the runtime API: the failing threads' lines on stderr, as the CUDA
// runtime prints them, the synchronisation failing with cudaErrorAssert, and the error sticky
// for the context (docs/ptx.md, "printf and assert").
//
//   rt_assert [CASE...]
#include <cassert>
#include <cstdio>

#include "tests/runtime/rt_check.h"

namespace {

// In an anonymous namespace: a kernel of internal linkage, a local symbol in the cubin.
__global__ void check_positive(const int* v) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  assert(v[i] >= 0);
}

void assertFails() {
  int host[64];
  for (int i = 0; i < 64; ++i) host[i] = i;
  host[35] = -1;  // block 1, thread 3
  int* dev = nullptr;
  RT_OK(cudaMalloc(&dev, sizeof host));
  RT_OK(cudaMemcpy(dev, host, sizeof host, cudaMemcpyHostToDevice));
  check_positive<<<2, 32>>>(dev);
  RT_OK(cudaGetLastError());  // the launch itself succeeds
  const cudaError_t e = cudaDeviceSynchronize();
  RT_EXPECT(e == cudaErrorAssert, "cudaDeviceSynchronize -> %s", cudaGetErrorName(e));
  // Sticky: the context is unusable from now on.
  void* more = nullptr;
  const cudaError_t again = cudaMalloc(&more, 16);
  RT_EXPECT(again == cudaErrorAssert, "cudaMalloc after the assert -> %s", cudaGetErrorName(again));
}

const rtcheck::Case kCases[] = {
    {"assert_fails", assertFails},
};

}  // namespace

int main(int argc, char** argv) { return rtcheck::runCases(kCases, sizeof kCases / sizeof kCases[0], argc, argv); }
