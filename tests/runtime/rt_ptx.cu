// A program's own kernels through the CUDA runtime, as a user writes them: nvcc builds them with
// PTX (compute_90) beside the SASS, and on mcsim the PTX runs in the executor (docs/ptx.md).
// Expected values are computed on the host. The same binary runs on a real GPU.
//   rt_ptx [CASE...]   (cases below; all by default)
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <vector>

#include "tests/runtime/rt_check.h"

__device__ int rt_scale_by = 1;

__global__ void rt_vadd(const float* a, const float* b, float* c, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

// Each block sums its part in shared memory (a tree), then adds it to *sum atomically.
__global__ void rt_reduce(const int* x, int n, unsigned long long* sum) {
  __shared__ int part[256];
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  part[threadIdx.x] = i < n ? x[i] : 0;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s /= 2) {
    if (threadIdx.x < s) part[threadIdx.x] += part[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) atomicAdd(sum, static_cast<unsigned long long>(static_cast<long long>(part[0])));
}

__global__ void rt_scale_words(int* x, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= rt_scale_by;
}

__global__ void rt_out_of_bounds(int* x, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  x[i + n + (64 << 20)] = i;  // far past the allocation's end
}

namespace {

void vectorAdd() {
  const int n = 100003;
  std::vector<float> a(n), b(n), c(n);
  for (int i = 0; i < n; ++i) {
    a[i] = static_cast<float>(i % 1000) * 0.25f;
    b[i] = static_cast<float>(i) - 7.0f;
  }
  float *da = nullptr, *db = nullptr, *dc = nullptr;
  RT_OK(cudaMalloc(&da, n * sizeof(float)));
  RT_OK(cudaMalloc(&db, n * sizeof(float)));
  RT_OK(cudaMalloc(&dc, n * sizeof(float)));
  RT_OK(cudaMemcpy(da, a.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  RT_OK(cudaMemcpy(db, b.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  rt_vadd<<<(n + 255) / 256, 256>>>(da, db, dc, n);
  RT_OK(cudaGetLastError());
  RT_OK(cudaMemcpy(c.data(), dc, n * sizeof(float), cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; ++i) RT_EXPECT(c[i] == a[i] + b[i], "c[%d] = %f, expected %f", i, c[i], a[i] + b[i]);
  RT_OK(cudaFree(da));
  RT_OK(cudaFree(db));
  RT_OK(cudaFree(dc));
}

void reduction() {
  const int n = 50000;
  std::vector<int> x(n);
  long long expected = 0;
  for (int i = 0; i < n; ++i) {
    x[i] = (i * 37) % 1001 - 500;
    expected += x[i];
  }
  int* dx = nullptr;
  unsigned long long* dsum = nullptr;
  RT_OK(cudaMalloc(&dx, n * sizeof(int)));
  RT_OK(cudaMalloc(&dsum, sizeof *dsum));
  RT_OK(cudaMemcpy(dx, x.data(), n * sizeof(int), cudaMemcpyHostToDevice));
  RT_OK(cudaMemset(dsum, 0, sizeof *dsum));
  rt_reduce<<<(n + 255) / 256, 256>>>(dx, n, dsum);
  RT_OK(cudaGetLastError());
  unsigned long long sum = 0;
  RT_OK(cudaMemcpy(&sum, dsum, sizeof sum, cudaMemcpyDeviceToHost));
  RT_EXPECT(static_cast<long long>(sum) == expected, "sum %lld, expected %lld", static_cast<long long>(sum), expected);
  RT_OK(cudaFree(dx));
  RT_OK(cudaFree(dsum));
}

void deviceVariable() {
  int initial = 0;
  RT_OK(cudaMemcpyFromSymbol(&initial, rt_scale_by, sizeof initial));
  RT_EXPECT(initial == 1, "rt_scale_by starts at %d, expected 1", initial);
  const int three = 3;
  RT_OK(cudaMemcpyToSymbol(rt_scale_by, &three, sizeof three));
  void* where = nullptr;
  RT_OK(cudaGetSymbolAddress(&where, rt_scale_by));
  int viaAddress = 0;
  RT_OK(cudaMemcpy(&viaAddress, where, sizeof viaAddress, cudaMemcpyDeviceToHost));
  RT_EXPECT(viaAddress == 3, "read %d through cudaGetSymbolAddress, expected 3", viaAddress);
  const int n = 1000;
  std::vector<int> x(n);
  for (int i = 0; i < n; ++i) x[i] = i - 400;
  int* dx = nullptr;
  RT_OK(cudaMalloc(&dx, n * sizeof(int)));
  RT_OK(cudaMemcpy(dx, x.data(), n * sizeof(int), cudaMemcpyHostToDevice));
  rt_scale_words<<<(n + 127) / 128, 128>>>(dx, n);
  RT_OK(cudaGetLastError());
  std::vector<int> back(n);
  RT_OK(cudaMemcpy(back.data(), dx, n * sizeof(int), cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; ++i) RT_EXPECT(back[i] == 3 * x[i], "x[%d] = %d, expected %d", i, back[i], 3 * x[i]);
  RT_OK(cudaFree(dx));
}

// The time of a vector add of n elements between two events (ms).
float vaddMs(int n) {
  float *da = nullptr, *db = nullptr, *dc = nullptr;
  RT_OK(cudaMalloc(&da, n * sizeof(float)));
  RT_OK(cudaMalloc(&db, n * sizeof(float)));
  RT_OK(cudaMalloc(&dc, n * sizeof(float)));
  RT_OK(cudaMemset(da, 0, n * sizeof(float)));
  RT_OK(cudaMemset(db, 0, n * sizeof(float)));
  cudaEvent_t e0, e1;
  RT_OK(cudaEventCreate(&e0));
  RT_OK(cudaEventCreate(&e1));
  RT_OK(cudaEventRecord(e0));
  rt_vadd<<<(n + 255) / 256, 256>>>(da, db, dc, n);
  RT_OK(cudaEventRecord(e1));
  RT_OK(cudaEventSynchronize(e1));
  float ms = 0;
  RT_OK(cudaEventElapsedTime(&ms, e0, e1));
  RT_OK(cudaEventDestroy(e0));
  RT_OK(cudaEventDestroy(e1));
  RT_OK(cudaFree(da));
  RT_OK(cudaFree(db));
  RT_OK(cudaFree(dc));
  return ms;
}

void timing() {
  // A warm-up launch first: the kernel's first launch also prepares its module (lazy loading:
  // the module's variables are placed and initialised), which the events would time too.
  vaddMs(1 << 10);
  const float small = vaddMs(1 << 16), large = vaddMs(1 << 20);
  // Printed, so that two runs can be compared (they must agree to the bit on mcsim).
  std::printf("  vadd 64K: %.6f ms, 1M: %.6f ms\n", small, large);
  RT_EXPECT(small > 0, "a kernel takes time: %f ms", small);
  // On mcsim only: on a real H100 both launches take about 0.011 ms (the launch, not the work).
  if (rtcheck::onMcsim()) {
    RT_EXPECT(large > small, "16 times the work takes longer: %f ms, not more than %f ms", large, small);
  }
}

// The vector add at sizes where its memory traffic, not the launch, takes the time: the figures
// docs/ptx.md compares with a real H100's. Named only (it moves 3 GiB on mcsim's CPU).
void timingSweep() {
  vaddMs(1 << 10);
  for (int log2n : {16, 20, 22, 24, 26}) {
    const int n = 1 << log2n;
    std::printf("  vadd %d elements (%.2f MiB a vector): %.6f ms\n", n, n / 262144.0, vaddMs(n));
  }
}

// Last: the context is poisoned afterwards.
void outOfBounds() {
  const int n = 256;
  int* dx = nullptr;
  RT_OK(cudaMalloc(&dx, n * sizeof(int)));
  rt_out_of_bounds<<<1, n>>>(dx, n);
  RT_OK(cudaGetLastError());  // the launch itself succeeds
  const cudaError_t sync = cudaDeviceSynchronize();
  // mcsim: an illegal address. A real H200 (driver 580.159.04) answers either, by what happens to
  // be mapped around: 256 MiB past a lone allocation cudaErrorIllegalAddress, past one made after
  // the other cases' cudaErrorInvalidAddressSpace (4 GiB past: that always; docs/real-driver.md).
  const bool expected = sync == cudaErrorIllegalAddress || (!rtcheck::onMcsim() && sync == cudaErrorInvalidAddressSpace);
  RT_EXPECT(expected, "synchronize: %s", cudaGetErrorName(sync));
  int* more = nullptr;
  const cudaError_t after = cudaMalloc(&more, 4);
  RT_EXPECT(after == sync, "the error is sticky: cudaMalloc answered %s", cudaGetErrorName(after));
}

const rtcheck::Case kCases[] = {
    {"vector_add", vectorAdd},         {"reduction", reduction}, {"device_variable", deviceVariable},
    {"timing", timing},                {"out_of_bounds", outOfBounds},
    {"timing_sweep", timingSweep, /*onlyWhenNamed=*/true},
};

}  // namespace

int main(int argc, char** argv) { return rtcheck::runCases(kCases, sizeof kCases / sizeof kCases[0], argc, argv); }
