// Kernels that wait for each other, as users write them with the CUDA runtime: a grid-wide barrier
// built from atomics and a spin (cooperative launch), a spin lock on atomicCAS, a kernel on one
// GPU waiting for a flag another GPU's kernel (launched later, on another stream) writes through
// peer memory, and a producer/consumer chain across every GPU. On mcsim the PTX runs in the
// executor, all running kernels progress together and spinning warps are parked (docs/ptx.md,
// "On the node"); the same binary runs on real GPUs. Expected values are computed on the host.
//   rt_ptx_spin [CASE...]   (cases below; all but never_finishes by default)
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <unistd.h>
#include <vector>

#include "tests/runtime/rt_check.h"

// Every block's thread 0 counts in; the last one in starts the next generation, the others spin
// until it has. Blocks must all be resident (a cooperative launch guarantees it).
__device__ void rt_grid_barrier(unsigned* count, volatile unsigned* generation, unsigned blocks) {
  __syncthreads();
  if (threadIdx.x == 0) {
    const unsigned g = *generation;
    __threadfence();
    if (atomicAdd(count, 1u) == blocks - 1) {
      *count = 0;
      __threadfence();
      atomicAdd(const_cast<unsigned*>(generation), 1u);
    } else {
      while (*generation == g) {
      }
    }
    __threadfence();
  }
  __syncthreads();
}

// Phase 0: block b writes part[b] = b + 1. Phase 1 (after the barrier): each block sums them all.
__global__ void rt_grid_sum(int* part, int* sums, unsigned* count, unsigned* generation) {
  const unsigned blocks = gridDim.x;
  if (threadIdx.x == 0) part[blockIdx.x] = static_cast<int>(blockIdx.x) + 1;
  rt_grid_barrier(count, generation, blocks);
  if (threadIdx.x == 0) {
    int s = 0;
    for (unsigned b = 0; b < blocks; ++b) s += reinterpret_cast<volatile int*>(part)[b];
    sums[blockIdx.x] = s;
  }
}

__global__ void rt_locked_count(int* lock, int* counter, int iterations) {
  if (threadIdx.x != 0) return;
  for (int i = 0; i < iterations; ++i) {
    while (atomicCAS(lock, 0, 1) != 0) {
    }
    __threadfence();
    volatile int* c = counter;
    *c = *c + 1;
    __threadfence();
    atomicExch(lock, 0);
  }
}

__global__ void rt_wait_flag(const volatile int* flag, int expect, int* out) {
  if (threadIdx.x == 0) {
    while (*flag != expect) {
    }
    out[blockIdx.x] = *flag;
  }
}

__global__ void rt_set_flag(volatile int* flag, int value) {
  if (threadIdx.x == 0 && blockIdx.x == 0) {
    __threadfence_system();
    *flag = value;
  }
}

// A link of the chain: waits until `ready` is set (unless first), adds `add` to each of the n
// words of `in` (this GPU's) and writes them to `next` (the next GPU's), then sets `nextReady`.
__global__ void rt_chain_link(const int* in, int n, int add, volatile int* ready, bool first, int* next,
                              volatile int* nextReady) {
  if (!first && threadIdx.x == 0) {
    while (*ready == 0) {
    }
  }
  __syncthreads();
  __threadfence_system();
  for (int i = threadIdx.x; i < n; i += blockDim.x) next[i] = reinterpret_cast<const volatile int*>(in)[i] + add;
  __threadfence_system();
  __syncthreads();
  if (threadIdx.x == 0) *nextReady = 1;
}

namespace {

void gridBarrier() {
  int perSm = 0, sms = 0;
  RT_OK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perSm, rt_grid_sum, 128, 0));
  RT_OK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  RT_EXPECT(perSm > 0, "an SM holds %d blocks", perSm);
  // Two blocks an SM, or what fits: all resident, as a cooperative launch requires.
  const unsigned blocks = static_cast<unsigned>(sms * (perSm < 2 ? perSm : 2));
  int *part = nullptr, *sums = nullptr;
  unsigned* sync = nullptr;
  RT_OK(cudaMalloc(&part, blocks * sizeof(int)));
  RT_OK(cudaMalloc(&sums, blocks * sizeof(int)));
  RT_OK(cudaMalloc(&sync, 2 * sizeof(unsigned)));
  RT_OK(cudaMemset(sync, 0, 2 * sizeof(unsigned)));
  unsigned* count = sync;
  unsigned* generation = sync + 1;
  void* args[] = {&part, &sums, &count, &generation};
  RT_OK(cudaLaunchCooperativeKernel(reinterpret_cast<void*>(rt_grid_sum), dim3(blocks), dim3(128), args, 0, nullptr));
  RT_OK(cudaDeviceSynchronize());
  std::vector<int> s(blocks);
  RT_OK(cudaMemcpy(s.data(), sums, blocks * sizeof(int), cudaMemcpyDeviceToHost));
  const int expect = static_cast<int>(blocks * (blocks + 1) / 2);
  for (unsigned b = 0; b < blocks; ++b) RT_EXPECT(s[b] == expect, "block %u summed %d, not %d", b, s[b], expect);
  // One block more than fit at once: refused, and nothing runs.
  const unsigned tooMany = static_cast<unsigned>(sms * perSm) + 1;
  const cudaError_t e =
      cudaLaunchCooperativeKernel(reinterpret_cast<void*>(rt_grid_sum), dim3(tooMany), dim3(128), args, 0, nullptr);
  RT_EXPECT(e == cudaErrorCooperativeLaunchTooLarge, "%u blocks: %s", tooMany, cudaGetErrorName(e));
  // The same through cudaLaunchKernelEx's cooperative attribute.
  cudaLaunchConfig_t cfg = {};
  cudaLaunchAttribute attr = {};
  attr.id = cudaLaunchAttributeCooperative;
  attr.val.cooperative = 1;
  cfg.gridDim = dim3(tooMany);
  cfg.blockDim = dim3(128);
  cfg.attrs = &attr;
  cfg.numAttrs = 1;
  const cudaError_t ex = cudaLaunchKernelExC(&cfg, reinterpret_cast<void*>(rt_grid_sum), args);
  RT_EXPECT(ex == cudaErrorCooperativeLaunchTooLarge, "cudaLaunchKernelEx, %u blocks: %s", tooMany, cudaGetErrorName(ex));
  // The runtime keeps a refused launch's error until it is read; it is not sticky.
  const cudaError_t last = cudaGetLastError();
  RT_EXPECT(last == cudaErrorCooperativeLaunchTooLarge, "cudaGetLastError: %s", cudaGetErrorName(last));
  RT_OK(cudaDeviceSynchronize());
  RT_OK(cudaFree(part));
  RT_OK(cudaFree(sums));
  RT_OK(cudaFree(sync));
}

void casLock() {
  const int blocks = 64, iterations = 50;
  int* d = nullptr;
  RT_OK(cudaMalloc(&d, 2 * sizeof(int)));
  RT_OK(cudaMemset(d, 0, 2 * sizeof(int)));
  rt_locked_count<<<blocks, 32>>>(d, d + 1, iterations);
  RT_OK(cudaGetLastError());
  int h[2] = {};
  RT_OK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
  RT_EXPECT(h[0] == 0 && h[1] == blocks * iterations, "lock %d, counter %d (expected %d)", h[0], h[1], blocks * iterations);
  RT_OK(cudaFree(d));
}

int deviceCount() {
  int n = 0;
  RT_OK(cudaGetDeviceCount(&n));
  return n;
}

// Lets device `a` reach device `b`'s memory.
void peer(int a, int b) {
  int can = 0;
  RT_OK(cudaDeviceCanAccessPeer(&can, a, b));
  RT_EXPECT(can == 1, "device %d cannot reach device %d", a, b);
  RT_OK(cudaSetDevice(a));
  const cudaError_t e = cudaDeviceEnablePeerAccess(b, 0);
  RT_EXPECT(e == cudaSuccess || e == cudaErrorPeerAccessAlreadyEnabled, "peer %d->%d: %s", a, b, cudaGetErrorName(e));
  (void)cudaGetLastError();
}

void crossGpu() {
  if (deviceCount() < 2) {
    std::printf("  skipped: one device\n");
    return;
  }
  peer(0, 1);
  int* flag = nullptr;  // in GPU 1's memory
  RT_OK(cudaSetDevice(1));
  RT_OK(cudaMalloc(&flag, sizeof(int)));
  RT_OK(cudaMemset(flag, 0, sizeof(int)));
  RT_OK(cudaDeviceSynchronize());
  cudaStream_t s1;
  RT_OK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  RT_OK(cudaSetDevice(0));
  int* out = nullptr;
  RT_OK(cudaMalloc(&out, 4 * sizeof(int)));
  RT_OK(cudaMemset(out, 0, 4 * sizeof(int)));
  cudaStream_t s0;
  RT_OK(cudaStreamCreateWithFlags(&s0, cudaStreamNonBlocking));
  cudaEvent_t e0, e1;
  RT_OK(cudaEventCreate(&e0));
  RT_OK(cudaEventCreate(&e1));
  // GPU 0's kernel first: its blocks spin on GPU 1's word until GPU 1's kernel sets it.
  RT_OK(cudaEventRecord(e0, s0));
  rt_wait_flag<<<4, 64, 0, s0>>>(flag, 7, out);
  RT_OK(cudaGetLastError());
  RT_OK(cudaEventRecord(e1, s0));
  // RT_HOST_PAUSE_US: the host takes its time before the second launch (wall time must change
  // nothing: the simulation thread, free meanwhile, must not start GPU 0's kernel on its own).
  if (const char* pause = std::getenv("RT_HOST_PAUSE_US")) usleep(static_cast<useconds_t>(std::atoi(pause)));
  RT_OK(cudaSetDevice(1));
  rt_set_flag<<<1, 32, 0, s1>>>(flag, 7);
  RT_OK(cudaGetLastError());
  RT_OK(cudaStreamSynchronize(s1));
  RT_OK(cudaSetDevice(0));
  RT_OK(cudaStreamSynchronize(s0));
  int h[4] = {};
  RT_OK(cudaMemcpy(h, out, sizeof h, cudaMemcpyDeviceToHost));
  for (int b = 0; b < 4; ++b) RT_EXPECT(h[b] == 7, "block %d saw %d", b, h[b]);
  float ms = 0;
  RT_OK(cudaEventElapsedTime(&ms, e0, e1));
  if (rtcheck::onMcsim()) std::printf("  waiting kernel: %.6f ms\n", ms);  // the same on every run
  RT_OK(cudaEventDestroy(e0));
  RT_OK(cudaEventDestroy(e1));
  RT_OK(cudaStreamDestroy(s0));
  RT_OK(cudaFree(out));
  RT_OK(cudaSetDevice(1));
  RT_OK(cudaStreamDestroy(s1));
  RT_OK(cudaFree(flag));
  RT_OK(cudaSetDevice(0));
}

void chain() {
  const int gpus = deviceCount();
  if (gpus < 2) {
    std::printf("  skipped: one device\n");
    return;
  }
  const int n = 4096;
  std::vector<int*> data(static_cast<size_t>(gpus)), ready(static_cast<size_t>(gpus));
  std::vector<cudaStream_t> streams(static_cast<size_t>(gpus));
  for (int g = 0; g < gpus; ++g) {
    if (g + 1 < gpus) peer(g, g + 1);
    RT_OK(cudaSetDevice(g));
    RT_OK(cudaMalloc(&data[g], n * sizeof(int)));
    RT_OK(cudaMalloc(&ready[g], sizeof(int)));
    RT_OK(cudaMemset(ready[g], 0, sizeof(int)));
    RT_OK(cudaStreamCreateWithFlags(&streams[g], cudaStreamNonBlocking));
  }
  std::vector<int> init(n);
  for (int i = 0; i < n; ++i) init[i] = i * 3;
  RT_OK(cudaSetDevice(0));
  RT_OK(cudaMemcpy(data[0], init.data(), n * sizeof(int), cudaMemcpyHostToDevice));
  for (int g = 0; g < gpus; ++g) {
    RT_OK(cudaSetDevice(g));
    RT_OK(cudaDeviceSynchronize());
  }
  // Consumers first, the producer last: each link waits for the one before it.
  for (int g = gpus - 2; g >= 0; --g) {
    RT_OK(cudaSetDevice(g));
    rt_chain_link<<<1, 256, 0, streams[g]>>>(data[g], n, g + 1, ready[g], g == 0, data[g + 1], ready[g + 1]);
    RT_OK(cudaGetLastError());
  }
  for (int g = 0; g < gpus; ++g) {
    RT_OK(cudaSetDevice(g));
    RT_OK(cudaStreamSynchronize(streams[g]));
  }
  std::vector<int> out(n);
  RT_OK(cudaSetDevice(gpus - 1));
  RT_OK(cudaMemcpy(out.data(), data[gpus - 1], n * sizeof(int), cudaMemcpyDeviceToHost));
  const int added = (gpus - 1) * gpus / 2;
  for (int i = 0; i < n; ++i) RT_EXPECT(out[i] == i * 3 + added, "word %d: %d, not %d", i, out[i], i * 3 + added);
  for (int g = 0; g < gpus; ++g) {
    RT_OK(cudaSetDevice(g));
    RT_OK(cudaStreamDestroy(streams[g]));
    RT_OK(cudaFree(data[g]));
    RT_OK(cudaFree(ready[g]));
  }
  RT_OK(cudaSetDevice(0));
  std::printf("  %d GPUs\n", gpus);
}

// On mcsim only (a real GPU would spin for ever): a kernel waits for a word nobody writes. The
// synchronisation fails with cudaErrorLaunchTimeout after the hang report; it poisons the context.
void neverFinishes() {
  int* d = nullptr;
  RT_OK(cudaMalloc(&d, 2 * sizeof(int)));  // loads the driver, which onMcsim looks for
  if (!rtcheck::onMcsim()) {
    std::printf("  skipped: the kernel would never end on a real GPU\n");
    return;
  }
  RT_OK(cudaMemset(d, 0, 2 * sizeof(int)));
  rt_wait_flag<<<2, 32>>>(d, 5, d + 1);
  RT_OK(cudaGetLastError());
  const cudaError_t e = cudaDeviceSynchronize();
  RT_EXPECT(e == cudaErrorLaunchTimeout, "synchronize: %s", cudaGetErrorName(e));
}

const rtcheck::Case kCases[] = {
    {"grid_barrier", gridBarrier}, {"cas_lock", casLock}, {"cross_gpu", crossGpu}, {"chain", chain},
};

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::string(argv[1]) == "never_finishes") {
    const rtcheck::Case one[] = {{"never_finishes", neverFinishes}};
    return rtcheck::runCases(one, 1, argc, argv);
  }
  return rtcheck::runCases(kCases, sizeof kCases / sizeof kCases[0], argc, argv);
}
