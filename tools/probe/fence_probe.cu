// What a system-scope fence costs a producer on one GPU that publishes data to another, as NCCL's
// steps do (the data, a barrier of the block, __threadfence_system(), a flag), alone and while
// other blocks of the same GPU stream to the peer. One block of 512 threads writes CHUNK bytes to
// GPU 1's memory per step (16-byte stores), then thread 0 times its __threadfence_system() with
// %globaltimer and writes a step flag. Prints per case the mean fence time and the mean step time.
// Plain device memory and peer access only: no cuMulticast* call. Built with nvcc for the real
// GPUs (nvcc -O2 -arch=sm_90 fence_probe.cu -o fence_probe) and against mcsim alike.
//
//   fence_probe   (needs 2 GPUs with peer access)
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>

#include "probe_runtime.h"

__device__ __forceinline__ uint64_t globaltimer() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Background traffic: every block copies its share of `bytes` from src to dst (a peer's), `loops` times.
__global__ void streamToPeer(uint4* dst, const uint4* src, uint64_t n, int loops) {
  for (int l = 0; l < loops; ++l)
    for (uint64_t i = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x; i < n; i += uint64_t{gridDim.x} * blockDim.x)
      dst[i] = src[i];
}

// The producer: `steps` steps of `chunk` bytes to `dst` (a peer's), each published by a fence and a
// flag. out[0] = total ns in fences, out[1] = total ns of the steps.
__global__ void producer(uint4* dst, volatile uint64_t* flag, uint64_t chunk, int steps, uint64_t* out) {
  const uint64_t n = chunk / sizeof(uint4);
  uint64_t fenceNs = 0;
  const uint64_t start = globaltimer();
  for (int s = 0; s < steps; ++s) {
    for (uint64_t i = threadIdx.x; i < n; i += blockDim.x) dst[(uint64_t(s) % 8) * n + i] = make_uint4(s, i, 1, 2);
    __syncthreads();
    if (threadIdx.x == 0) {
      const uint64_t t0 = globaltimer();
      __threadfence_system();
      fenceNs += globaltimer() - t0;
      *flag = s + 1;
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    out[0] = fenceNs;
    out[1] = globaltimer() - start;
  }
}

int main() {
  int count = 0;
  CHECK(cudaGetDeviceCount(&count));
  if (count < 2) {
    std::printf("meta.skipped = fewer than 2 GPUs\n");
    return 0;
  }
  const uint64_t big = uint64_t{256} << 20;
  uint4 *src = nullptr, *peerBig = nullptr, *peerSteps = nullptr;
  uint64_t* flag = nullptr;
  uint64_t* out = nullptr;
  CHECK(cudaSetDevice(1));
  CHECK(cudaMalloc(&peerBig, big));
  CHECK(cudaMalloc(&peerSteps, 8 << 20));
  CHECK(cudaMalloc(&flag, 64));
  CHECK(cudaSetDevice(0));
  CHECK(cudaDeviceEnablePeerAccess(1, 0));
  CHECK(cudaMalloc(&src, big));
  CHECK(cudaMemset(src, 1, big));
  CHECK(cudaMallocManaged(&out, 2 * sizeof(uint64_t)));
  cudaStream_t bg, fg;
  CHECK(cudaStreamCreateWithFlags(&bg, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&fg, cudaStreamNonBlocking));
  const int steps = 200;
  for (const uint64_t chunk : {uint64_t{0}, uint64_t{16} << 10, uint64_t{64} << 10, uint64_t{512} << 10}) {
    for (const int blocks : {0, 24, 128}) {
      float bgMs = 0;
      cudaEvent_t a, b;
      CHECK(cudaEventCreate(&a));
      CHECK(cudaEventCreate(&b));
      if (blocks > 0) {
        CHECK(cudaEventRecord(a, bg));
        streamToPeer<<<blocks, 1024, 0, bg>>>(peerBig, src, big / sizeof(uint4), 4);
        CHECK(cudaGetLastError());
        CHECK(cudaEventRecord(b, bg));
      }
      producer<<<1, 512, 0, fg>>>(peerSteps, flag, chunk, steps, out);
      CHECK(cudaGetLastError());
      CHECK(cudaStreamSynchronize(fg));
      const uint64_t fenceNs = out[0], stepNs = out[1];
      CHECK(cudaStreamSynchronize(bg));
      if (blocks > 0) CHECK(cudaEventElapsedTime(&bgMs, a, b));
      CHECK(cudaEventDestroy(a));
      CHECK(cudaEventDestroy(b));
      std::printf("fence.chunk%llu.bg%d = fence %.0f ns, step %.0f ns (background %.3f ms)\n",
                  static_cast<unsigned long long>(chunk), blocks, double(fenceNs) / steps, double(stepNs) / steps, bgMs);
    }
  }
  return 0;
}
