// Host-side cost of CUDA runtime calls on mcsim (bench/runtime_calls.sh builds and runs it): the
// first cudaFree(0), which starts the runtime and the node; then per-call medians of
// cudaMalloc + cudaFree, cudaGetDeviceProperties and a 4-byte cudaMemcpyAsync. Wall time of the
// calling thread, in microseconds; the same program runs on a real GPU.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

double micros(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::micro>(b - a).count();
}

template <typename F>
double medianMicros(int reps, F&& f) {
  std::vector<double> t;
  t.reserve(static_cast<size_t>(reps));
  for (int i = 0; i < reps; ++i) {
    const auto a = Clock::now();
    f();
    t.push_back(micros(a, Clock::now()));
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

bool ok(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return true;
  std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
  return false;
}

}  // namespace

int main() {
  const auto start = Clock::now();
  if (!ok(cudaFree(nullptr), "cudaFree(0)")) return 1;
  const double first = micros(start, Clock::now());
  int devices = 0;
  if (!ok(cudaGetDeviceCount(&devices), "cudaGetDeviceCount")) return 1;
  std::printf("devices                        %d\n", devices);
  std::printf("first cudaFree(0)              %10.1f us\n", first);
  int failures = 0;
  const double mallocFree = medianMicros(2000, [&] {
    void* p = nullptr;
    failures += cudaMalloc(&p, 4096) != cudaSuccess;
    failures += cudaFree(p) != cudaSuccess;
  });
  std::printf("cudaMalloc + cudaFree (4 KiB)  %10.2f us\n", mallocFree);
  cudaDeviceProp prop;
  const double props = medianMicros(2000, [&] { failures += cudaGetDeviceProperties(&prop, 0) != cudaSuccess; });
  std::printf("cudaGetDeviceProperties        %10.2f us\n", props);
  cudaStream_t s;
  if (!ok(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate")) return 1;
  void* d = nullptr;
  int* h = nullptr;
  if (!ok(cudaMalloc(&d, 4), "cudaMalloc") || !ok(cudaMallocHost(reinterpret_cast<void**>(&h), 4), "cudaMallocHost")) return 1;
  const double copy = medianMicros(2000, [&] { failures += cudaMemcpyAsync(d, h, 4, cudaMemcpyHostToDevice, s) != cudaSuccess; });
  if (!ok(cudaStreamSynchronize(s), "cudaStreamSynchronize")) return 1;
  std::printf("cudaMemcpyAsync 4 B (pinned)   %10.2f us\n", copy);
  failures += cudaFree(d) != cudaSuccess;
  failures += cudaFreeHost(h) != cudaSuccess;
  failures += cudaStreamDestroy(s) != cudaSuccess;
  if (failures != 0) {
    std::fprintf(stderr, "%d calls failed\n", failures);
    return 1;
  }
  return 0;
}
