// What a system-scope fence costs a producer on one GPU that publishes data to another, as NCCL's
// steps do (the data, a barrier of the block, __threadfence_system(), a flag), alone and while
// other blocks of the same GPU stream to the peer. One block of 512 threads writes CHUNK bytes to
// GPU 1's memory per step (16-byte stores), then thread 0 times its __threadfence_system() with
// %globaltimer and writes a step flag. Prints per case the mean fence time and the mean step time.
// Plain device memory and peer access only: no cuMulticast* call. Built with nvcc for the real
// GPUs (nvcc -O2 -arch=sm_90 fence_probe.cu -o fence_probe) and against mcsim alike.
//
// `sweep` adds what a model of the fence needs: the four fences a program writes
// (fence.sc.sys = __threadfence_system(), fence.acq_rel.sys = NCCL's step fence, fence.sc.gpu =
// __threadfence(), fence.acq_rel.gpu), beside background traffic to the peer or within the GPU
// (HBM to HBM), from 1 to 128 background blocks, with no data of the fencing block's own and with
// 64 KiB a step: `sweep.<fence>.<peer|local>.chunk<bytes>.bg<blocks>` lines.
//
// `sweep peer 02` keeps to the background and fences named (0-3 as in kFenceNames), for a
// simulator, which computes every background byte.
//
//   fence_probe [sweep [peer|local|both] [FENCES]]   (needs 2 GPUs with peer access)
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstring>

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

// The fences `sweep` times, by number.
template <int Kind>
__device__ __forceinline__ void fence() {
  if (Kind == 0) asm volatile("fence.sc.sys;" ::: "memory");
  if (Kind == 1) asm volatile("fence.acq_rel.sys;" ::: "memory");
  if (Kind == 2) asm volatile("fence.sc.gpu;" ::: "memory");
  if (Kind == 3) asm volatile("fence.acq_rel.gpu;" ::: "memory");
}
const char* const kFenceNames[] = {"sc_sys", "acq_rel_sys", "sc_gpu", "acq_rel_gpu"};

// The producer: `steps` steps of `chunk` bytes to `dst` (a peer's), each published by a fence and a
// flag. out[0] = total ns in fences, out[1] = total ns of the steps. Kind < 0: __threadfence_system().
template <int Kind = -1>
__global__ void producer(uint4* dst, volatile uint64_t* flag, uint64_t chunk, int steps, uint64_t* out) {
  const uint64_t n = chunk / sizeof(uint4);
  uint64_t fenceNs = 0;
  const uint64_t start = globaltimer();
  for (int s = 0; s < steps; ++s) {
    for (uint64_t i = threadIdx.x; i < n; i += blockDim.x) dst[(uint64_t(s) % 8) * n + i] = make_uint4(s, i, 1, 2);
    __syncthreads();
    if (threadIdx.x == 0) {
      const uint64_t t0 = globaltimer();
      if (Kind < 0) __threadfence_system();
      else fence<Kind>();
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

int main(int argc, char** argv) {
  const bool sweep = argc > 1 && std::strcmp(argv[1], "sweep") == 0;
  const char* backgrounds = argc > 2 ? argv[2] : "both";
  const char* fences = argc > 3 ? argv[3] : "0123";
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
  // Device memory read back with a copy (mcsim does not model managed memory).
  CHECK(cudaMalloc(&out, 2 * sizeof(uint64_t)));
  uint64_t result[2] = {};
  cudaStream_t bg, fg;
  CHECK(cudaStreamCreateWithFlags(&bg, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&fg, cudaStreamNonBlocking));
  const int steps = 200;
  if (sweep) {
    // The background outlasts the producer: its time is printed to show it.
    uint4* localDst = nullptr;
    CHECK(cudaMalloc(&localDst, big));
    const uint64_t chunks[] = {0, uint64_t{64} << 10};
    const int depths[] = {0, 1, 2, 4, 8, 24, 128};
    for (int kind = 0; kind < 4; ++kind) {
      if (std::strchr(fences, '0' + kind) == nullptr) continue;
      for (const bool peer : {true, false}) {
        if (std::strcmp(backgrounds, "both") != 0 && std::strcmp(backgrounds, peer ? "peer" : "local") != 0) continue;
        for (const uint64_t chunk : chunks) {
          for (const int blocks : depths) {
            if (blocks == 0 && !peer) continue;  // the same as the peer line's
            cudaEvent_t a, b;
            CHECK(cudaEventCreate(&a));
            CHECK(cudaEventCreate(&b));
            if (blocks > 0) {
              CHECK(cudaEventRecord(a, bg));
              // Local copies run about 8 times faster: more rounds keep them going as long.
              streamToPeer<<<blocks, 1024, 0, bg>>>(peer ? peerBig : localDst, src, big / sizeof(uint4),
                                                    peer ? 8 : 64);
              CHECK(cudaGetLastError());
              CHECK(cudaEventRecord(b, bg));
            }
            switch (kind) {
              case 0: producer<0><<<1, 512, 0, fg>>>(peerSteps, flag, chunk, steps, out); break;
              case 1: producer<1><<<1, 512, 0, fg>>>(peerSteps, flag, chunk, steps, out); break;
              case 2: producer<2><<<1, 512, 0, fg>>>(peerSteps, flag, chunk, steps, out); break;
              default: producer<3><<<1, 512, 0, fg>>>(peerSteps, flag, chunk, steps, out); break;
            }
            CHECK(cudaGetLastError());
            CHECK(cudaStreamSynchronize(fg));
            CHECK(cudaMemcpy(result, out, sizeof(result), cudaMemcpyDeviceToHost));
            const uint64_t fenceNs = result[0], stepNs = result[1];
            CHECK(cudaStreamSynchronize(bg));
            float bgMs = 0;
            if (blocks > 0) CHECK(cudaEventElapsedTime(&bgMs, a, b));
            CHECK(cudaEventDestroy(a));
            CHECK(cudaEventDestroy(b));
            std::printf("sweep.%s.%s.chunk%llu.bg%d = fence %.0f ns, step %.0f ns (producer %.3f ms, background %.3f ms)\n",
                        kFenceNames[kind], peer ? "peer" : "local", static_cast<unsigned long long>(chunk), blocks,
                        double(fenceNs) / steps, double(stepNs) / steps, double(stepNs) / 1e6, bgMs);
          }
        }
      }
    }
    return 0;
  }
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
      producer<><<<1, 512, 0, fg>>>(peerSteps, flag, chunk, steps, out);
      CHECK(cudaGetLastError());
      CHECK(cudaStreamSynchronize(fg));
      CHECK(cudaMemcpy(result, out, sizeof(result), cudaMemcpyDeviceToHost));
      const uint64_t fenceNs = result[0], stepNs = result[1];
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
