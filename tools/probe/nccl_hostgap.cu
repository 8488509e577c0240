// Whether NCCL's host-side enqueue shows in event timings (docs/real-driver.md, section 13): a
// 2-GPU all-reduce timed with events as usual, and again with a ~300 us busy kernel queued on every
// rank's stream before the start event, so that the host's enqueue work overlaps the GPU's busy
// time and the events bracket only GPU work. Prints both medians of 5 (after 2 warm-ups).
// Build: nvcc -std=c++17 -O2 -gencode arch=compute_90,code=[sm_90,compute_90] nccl_hostgap.cu -lnccl
// Plain device memory and NCCL with NVLS off (NCCL_NVLS_ENABLE=0): no multicast call.
#include <cuda_runtime.h>
#include <nccl.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>
__global__ void busy(long long cycles) { long long t0 = clock64(); while (clock64() - t0 < cycles) {} }
int main(int argc, char** argv) {
  const int n = 2;
  std::vector<int> devs = {0, 1};
  std::vector<ncclComm_t> comms(n);
  if (ncclCommInitAll(comms.data(), n, devs.data()) != ncclSuccess) { std::printf("init failed\n"); return 1; }
  for (size_t count : {size_t{4096}, size_t{65536}, size_t{1} << 20, size_t{1} << 22}) {
    std::vector<float*> buf(n); std::vector<cudaStream_t> st(n);
    for (int i = 0; i < n; ++i) { cudaSetDevice(i); cudaMalloc(&buf[i], count * 4); cudaMemset(buf[i], 0, count * 4); cudaStreamCreate(&st[i]); }
    for (int mode = 0; mode < 2; ++mode) {
      std::vector<float> t;
      for (int r = 0; r < 7; ++r) {
        cudaSetDevice(0); cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
        if (mode == 1) for (int i = 0; i < n; ++i) { cudaSetDevice(i); busy<<<1, 1, 0, st[i]>>>(600000); }
        cudaSetDevice(0); cudaEventRecord(a, st[0]);
        ncclGroupStart();
        for (int i = 0; i < n; ++i) ncclAllReduce(buf[i], buf[i], count, ncclFloat, ncclSum, comms[i], st[i]);
        ncclGroupEnd();
        cudaSetDevice(0); cudaEventRecord(b, st[0]);
        for (int i = 0; i < n; ++i) { cudaSetDevice(i); cudaStreamSynchronize(st[i]); }
        float ms = 0; cudaEventElapsedTime(&ms, a, b); if (r > 1) t.push_back(ms * 1000);
        cudaEventDestroy(a); cudaEventDestroy(b);
      }
      std::sort(t.begin(), t.end());
      std::printf("hostgap count %zu %s: median %.1f us (min %.1f)\n", count, mode ? "behind a busy kernel" : "plain", t[t.size() / 2], t[0]);
    }
    for (int i = 0; i < n; ++i) { cudaSetDevice(i); cudaFree(buf[i]); cudaStreamDestroy(st[i]); }
  }
  for (auto c : comms) ncclCommDestroy(c);
  return 0;
}
