// What a program shows on mcsim's timeline (docs/timeline.md): its NVTX ranges (nested pushes, a
// domain of its own with a registered string, a mark, a start / end range), its kernels and copies
// as slices with their arguments, and arrows from the calls that queued them. check_timeline.py
// runs it under `mcsim run --timeline` and reads the file; the program itself checks only what
// the runtime answers, so it runs unchanged on a real GPU (where NVTX without a tool is a no-op).
//   rt_timeline [ranges | unfinished]
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include <cstdio>
#include <vector>

#include "tests/runtime/rt_check.h"

__global__ void rt_scale(float* x, float a, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= a;
}

__global__ void rt_wait_for_flag(volatile int* flag) {
  while (*flag == 0) {
  }
}

namespace {

void ranges() {
  constexpr int kN = 512;
  nvtxRangePushA("setup");
  float* d = nullptr;
  RT_OK(cudaMalloc(&d, kN * sizeof(float)));
  std::vector<float> h(kN, 2.0f);
  RT_OK(cudaMemcpy(d, h.data(), kN * sizeof(float), cudaMemcpyHostToDevice));
  nvtxRangePop();

  nvtxRangePushA("compute");
  nvtxMarkA("before the launch");
  rt_scale<<<4, 128>>>(d, 3.0f, kN);
  RT_OK(cudaGetLastError());
  nvtxRangePushA("inner");
  RT_OK(cudaMemsetAsync(d + kN / 2, 0, kN / 2 * sizeof(float)));
  nvtxRangePop();
  RT_OK(cudaDeviceSynchronize());
  nvtxRangePop();

  // A library's own domain, its message a registered string.
  nvtxDomainHandle_t domain = nvtxDomainCreateA("rtlib");
  nvtxEventAttributes_t a = {};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  a.message.registered = nvtxDomainRegisterStringA(domain, "registered work");
  nvtxDomainRangePushEx(domain, &a);
  RT_OK(cudaMemcpy(h.data(), d, kN * sizeof(float), cudaMemcpyDeviceToHost));
  nvtxDomainRangePop(domain);
  nvtxDomainDestroy(domain);

  const nvtxRangeId_t id = nvtxRangeStartA("start to end");
  RT_OK(cudaFree(d));
  nvtxRangeEnd(id);
  for (int i = 0; i < kN; ++i) {
    const float want = i < kN / 2 ? 6.0f : 0.0f;
    RT_EXPECT(h[i] == want, "element %d is %g, want %g", i, h[i], want);
  }
}

// A kernel that waits for a flag nobody sets, left running as the program ends, inside a range
// never popped: both are on the timeline as unfinished.
void unfinished() {
  int* flag = nullptr;
  RT_OK(cudaMalloc(&flag, sizeof(int)));
  RT_OK(cudaMemset(flag, 0, sizeof(int)));
  nvtxRangePushA("never popped");
  rt_wait_for_flag<<<1, 32>>>(flag);
  RT_OK(cudaGetLastError());
  // The program looks once, sees the kernel still running, and ends.
  const cudaError_t e = cudaStreamQuery(0);
  RT_EXPECT(e == cudaErrorNotReady, "cudaStreamQuery -> %s, want cudaErrorNotReady", cudaGetErrorName(e));
}

}  // namespace

int main(int argc, char** argv) {
  const rtcheck::Case cases[] = {{"ranges", ranges}, {"unfinished", unfinished, true}};
  return rtcheck::runCases(cases, sizeof cases / sizeof cases[0], argc, argv);
}
