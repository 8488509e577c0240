// Single-GPU kernels as users write them (vector add, saxpy, a float4 copy, an integer reduction,
// a strided read), timed with events on device 0, the same binary on a real GPU and on mcsim, so
// that docs/ptx.md can compare durations as ratios and check that both compute the same bytes.
//
// Build: nvcc -std=c++17 -O2 -gencode arch=compute_90,code=[sm_90,compute_90]
//          tools/probe/kernel_durations.cu -o kernel_durations
// Run:   ./kernel_durations            (real GPU)
//        MCSIM_TOPOLOGY=hgx-h200 build/bin/mcsim run -- ./kernel_durations   (mcsim)
// Output, one line a kernel and size:
//   kdur.<kernel>.<elements> grid=<blocks>x<threads> = <median ms> ms <GB/s> GB/s digest=<hex>
// GB/s counts the bytes the kernel must read and write (10^9 bytes a second); the digest is FNV-1a
// over the output buffer's bytes, so a real GPU and mcsim must print the same one. Plain device
// memory only: no multicast call.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "probe_runtime.h"

namespace {

__global__ void vadd(const float* a, const float* b, float* c, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

__global__ void saxpy(float alpha, const float* x, float* y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = alpha * x[i] + y[i];
}

// Grid-stride float4 copy, the shape of a tuned memcpy kernel.
__global__ void copy4(const float4* in, float4* out, size_t n4) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n4;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    out[i] = in[i];
  }
}

// Sum of unsigned words: shared-memory tree per block, one atomicAdd a block (integer, so the
// result is exact whatever the order).
__global__ void reduceU32(const unsigned* in, unsigned long long* out, size_t n) {
  __shared__ unsigned long long part[256];
  unsigned long long s = 0;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    s += in[i];
  }
  part[threadIdx.x] = s;
  __syncthreads();
  for (unsigned step = blockDim.x / 2; step > 0; step /= 2) {
    if (threadIdx.x < step) part[threadIdx.x] += part[threadIdx.x + step];
    __syncthreads();
  }
  if (threadIdx.x == 0) atomicAdd(out, part[0]);
}

// Each thread reads one word 32 words from its neighbour's: every lane of a warp touches a
// different 128-byte line (what coalescing rules punish on a GPU).
__global__ void strided(const unsigned* in, unsigned* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[(static_cast<size_t>(i) * 32) % static_cast<size_t>(n)] + 1;
}

uint64_t digestOf(const void* device, size_t bytes) {
  std::vector<unsigned char> h(bytes);
  CHECK(cudaMemcpy(h.data(), device, bytes, cudaMemcpyDeviceToHost));
  uint64_t d = 1469598103934665603ull;
  for (unsigned char c : h) d = (d ^ c) * 1099511628211ull;
  return d;
}

// The median of five timed launches after one warm-up (ms); `launch` queues one on stream 0.
template <typename Launch>
float medianMs(Launch launch) {
  cudaEvent_t e0, e1;
  CHECK(cudaEventCreate(&e0));
  CHECK(cudaEventCreate(&e1));
  launch();
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  std::vector<float> ms;
  for (int r = 0; r < 5; ++r) {
    CHECK(cudaEventRecord(e0));
    launch();
    CHECK(cudaEventRecord(e1));
    CHECK(cudaEventSynchronize(e1));
    float t = 0;
    CHECK(cudaEventElapsedTime(&t, e0, e1));
    ms.push_back(t);
  }
  CHECK(cudaEventDestroy(e0));
  CHECK(cudaEventDestroy(e1));
  std::sort(ms.begin(), ms.end());
  return ms[2];
}

void report(const char* kernel, size_t elements, unsigned blocks, unsigned threads, float ms, double bytes,
            uint64_t digest) {
  std::printf("kdur.%s.%zu grid=%ux%u = %.4f ms %.1f GB/s digest=%016llx\n", kernel, elements, blocks, threads,
              static_cast<double>(ms), bytes / (static_cast<double>(ms) * 1e6),
              static_cast<unsigned long long>(digest));
}

// Inputs that differ element by element, the same on every machine.
__global__ void fill(float* a, float* b, unsigned* u, size_t n) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    a[i] = static_cast<float>(i % 1000) * 0.5f;
    b[i] = static_cast<float>((i * 7) % 1000) * 0.25f;
    u[i] = static_cast<unsigned>((i * 2654435761u) >> 8);
  }
}

void sweep(size_t n) {
  float *a = nullptr, *b = nullptr, *c = nullptr;
  unsigned *u = nullptr, *v = nullptr;
  unsigned long long* sum = nullptr;
  CHECK(cudaMalloc(&a, n * sizeof(float)));
  CHECK(cudaMalloc(&b, n * sizeof(float)));
  CHECK(cudaMalloc(&c, n * sizeof(float)));
  CHECK(cudaMalloc(&u, n * sizeof(unsigned)));
  CHECK(cudaMalloc(&v, n * sizeof(unsigned)));
  CHECK(cudaMalloc(&sum, sizeof(unsigned long long)));
  fill<<<1024, 256>>>(a, b, u, n);
  CHECK(cudaGetLastError());
  const int ni = static_cast<int>(n);
  const unsigned blocks = static_cast<unsigned>((n + 255) / 256);
  float ms = medianMs([&] { vadd<<<blocks, 256>>>(a, b, c, ni); });
  report("vadd", n, blocks, 256, ms, 12.0 * static_cast<double>(n), digestOf(c, n * sizeof(float)));
  // saxpy updates y in place: six launches in all, so the digest is of y after six.
  CHECK(cudaMemcpy(c, b, n * sizeof(float), cudaMemcpyDeviceToDevice));
  ms = medianMs([&] { saxpy<<<blocks, 256>>>(0.5f, a, c, ni); });
  report("saxpy", n, blocks, 256, ms, 12.0 * static_cast<double>(n), digestOf(c, n * sizeof(float)));
  const unsigned copyBlocks = 132 * 4;  // four blocks an SM of an H100 or H200
  ms = medianMs([&] {
    copy4<<<copyBlocks, 256>>>(reinterpret_cast<const float4*>(a), reinterpret_cast<float4*>(c), n / 4);
  });
  report("copy4", n, copyBlocks, 256, ms, 8.0 * static_cast<double>(n), digestOf(c, n * sizeof(float)));
  ms = medianMs([&] {
    cudaMemsetAsync(sum, 0, sizeof(unsigned long long));
    reduceU32<<<copyBlocks, 256>>>(u, sum, n);
  });
  report("reduce_u32", n, copyBlocks, 256, ms, 4.0 * static_cast<double>(n), digestOf(sum, sizeof(unsigned long long)));
  ms = medianMs([&] { strided<<<blocks, 256>>>(u, v, ni); });
  report("strided", n, blocks, 256, ms, 8.0 * static_cast<double>(n), digestOf(v, n * sizeof(unsigned)));
  CHECK(cudaFree(a));
  CHECK(cudaFree(b));
  CHECK(cudaFree(c));
  CHECK(cudaFree(u));
  CHECK(cudaFree(v));
  CHECK(cudaFree(sum));
}

}  // namespace

int main(int argc, char** argv) {
  CHECK(cudaSetDevice(0));
  cudaDeviceProp p{};
  CHECK(cudaGetDeviceProperties(&p, 0));
  std::printf("kdur.device = %s, %d SMs\n", p.name, p.multiProcessorCount);
  // Sizes in elements: 2^16 (launch-bound) to 2^24 (16M, memory-bound); argv[1] caps the largest.
  const int maxLog2 = argc > 1 ? std::atoi(argv[1]) : 24;
  for (int log2n = 16; log2n <= maxLog2; log2n += 4) sweep(static_cast<size_t>(1) << log2n);
  return 0;
}
