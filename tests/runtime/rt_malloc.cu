// Device-side malloc and free through the runtime API, as a user writes them (docs/ptx.md, "malloc
// and free"): the heap outlives a launch, is sized by cudaLimitMallocHeapSize before the first
// kernel that uses it, returns NULL when exhausted and reuses what was freed.
//
//   rt_malloc [CASE...]
// Each case ends with cudaDeviceReset, so that the next starts with a fresh heap and limits.
#include <algorithm>
#include <cstdio>
#include <cstdint>
#include <vector>

#include "tests/runtime/rt_check.h"

// Thread t allocates (t % 7 + 1) * 12 bytes, fills them with its id and keeps the pointer.
__global__ void rt_alloc(int** ptrs) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  const int n = (t % 7 + 1) * 3;
  int* p = static_cast<int*>(malloc(n * sizeof(int)));
  if (p != nullptr)
    for (int i = 0; i < n; ++i) p[i] = t * 1000 + i;
  ptrs[t] = p;
}
// A later launch reads what the first wrote (the memory outlives the launch) and frees it.
__global__ void rt_check_and_free(int** ptrs, int* bad) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  const int n = (t % 7 + 1) * 3;
  int* p = ptrs[t];
  for (int i = 0; p != nullptr && i < n; ++i)
    if (p[i] != t * 1000 + i) atomicAdd(bad, 1);
  free(p);
}
// One thread takes `chunk`-byte blocks until malloc answers NULL (at most 64), and says how many.
__global__ void rt_until_null(size_t chunk, void** got, int* count) {
  int c = 0;
  while (c < 64) {
    void* p = malloc(chunk);
    if (p == nullptr) break;
    got[c++] = p;
  }
  *count = c;
}
__global__ void rt_free_all(void** got, const int* count) {
  for (int i = 0; i < *count; ++i) free(got[i]);
  free(nullptr);  // ignored (the programming guide)
}
__global__ void rt_aligned(void** out) {
  out[0] = __nv_aligned_device_malloc(100, 4096);
  out[1] = __nv_aligned_device_malloc(100, 3);  // not a power of two: NULL
  out[2] = malloc(1);
  free(out[0]);
  free(out[2]);
}
__global__ void rt_free_twice(void** out) {
  void* p = malloc(64);
  out[0] = p;
  free(p);
  free(p);
}

// For the probe case: malloc(0), and how many `chunk`-byte blocks a heap holds.
__global__ void rt_probe_kernel(void** out, size_t chunk, int* count) {
  out[0] = malloc(0);
  int c = 0;
  while (c < 64 && malloc(chunk) != nullptr) ++c;
  *count = c;
}

namespace {

// Many threads of many blocks allocate; every pointer is 16-byte aligned and no two blocks
// overlap; a second launch sees the bytes and frees them; the freed room is used again.
void manyThreads() {
  const int blocks = 8, threads = 96, n = blocks * threads;
  int** ptrs = nullptr;
  int* bad = nullptr;
  RT_OK(cudaMalloc(&ptrs, n * sizeof(int*)));
  RT_OK(cudaMalloc(&bad, sizeof(int)));
  RT_OK(cudaMemset(bad, 0, sizeof(int)));
  rt_alloc<<<blocks, threads>>>(ptrs);
  RT_OK(cudaDeviceSynchronize());
  std::vector<int*> host(n);
  RT_OK(cudaMemcpy(host.data(), ptrs, n * sizeof(int*), cudaMemcpyDeviceToHost));
  std::vector<std::pair<uintptr_t, uintptr_t>> ranges;
  for (int t = 0; t < n; ++t) {
    const uintptr_t p = reinterpret_cast<uintptr_t>(host[t]);
    RT_EXPECT(p != 0 && p % 16 == 0, "thread %d got %p", t, static_cast<void*>(host[t]));
    ranges.emplace_back(p, p + (t % 7 + 1) * 3 * sizeof(int));
  }
  // Which thread got which place (offsets from the lowest), for same_twice.sh: the same every run.
  const uintptr_t lowest = std::min_element(ranges.begin(), ranges.end())->first;
  uint64_t digest = 1469598103934665603ull;
  for (int t = 0; t < n; ++t) digest = (digest ^ (reinterpret_cast<uintptr_t>(host[t]) - lowest)) * 1099511628211ull;
  std::printf("placement digest %016llx\n", static_cast<unsigned long long>(digest));
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i) RT_EXPECT(ranges[i - 1].second <= ranges[i].first, "allocations %zu and %zu overlap", i - 1, i);
  rt_check_and_free<<<blocks, threads>>>(ptrs, bad);
  RT_OK(cudaDeviceSynchronize());
  int wrong = -1;
  RT_OK(cudaMemcpy(&wrong, bad, sizeof(int), cudaMemcpyDeviceToHost));
  RT_EXPECT(wrong == 0, "%d words read back wrong", wrong);
  // Everything was freed: the same allocations fit again.
  rt_alloc<<<blocks, threads>>>(ptrs);
  RT_OK(cudaDeviceSynchronize());
  RT_OK(cudaMemcpy(host.data(), ptrs, n * sizeof(int*), cudaMemcpyDeviceToHost));
  for (int t = 0; t < n; ++t) RT_EXPECT(host[t] != nullptr, "thread %d got NULL after the heap was freed", t);
  RT_OK(cudaFree(ptrs));
  RT_OK(cudaFree(bad));
  RT_OK(cudaDeviceReset());
}

// The limit: 8 MiB by default, at least 4 MiB (1 MiB reads back as 4 MiB, as on a real H200), set
// before the first kernel that uses the heap, refused after it; the 4 MiB heap holds thirteen 300
// KiB blocks (a real H200's answer too); what is freed is reused; the host's copies cannot name
// heap memory.
void limitAndExhaustion() {
  size_t size = 0;
  RT_OK(cudaDeviceGetLimit(&size, cudaLimitMallocHeapSize));
  RT_EXPECT(size == 8u << 20, "the default heap is %zu bytes", size);
  RT_OK(cudaDeviceSetLimit(cudaLimitMallocHeapSize, 1u << 20));
  RT_OK(cudaDeviceGetLimit(&size, cudaLimitMallocHeapSize));
  RT_EXPECT(size == 4u << 20, "a 1 MiB heap reads back as %zu bytes, not the 4 MiB floor", size);
  void** got = nullptr;
  int* count = nullptr;
  RT_OK(cudaMalloc(&got, 64 * sizeof(void*)));
  RT_OK(cudaMalloc(&count, sizeof(int)));
  rt_until_null<<<1, 1>>>(300 << 10, got, count);
  RT_OK(cudaDeviceSynchronize());
  int c = 0;
  RT_OK(cudaMemcpy(&c, count, sizeof(int), cudaMemcpyDeviceToHost));
  RT_EXPECT(c == 13, "a 4 MiB heap gave %d blocks of 300 KiB", c);
  void* block = nullptr;
  RT_OK(cudaMemcpy(&block, got, sizeof block, cudaMemcpyDeviceToHost));
  char byte = 0;
  const cudaError_t copy = cudaMemcpy(&byte, block, 1, cudaMemcpyDeviceToHost);
  RT_EXPECT(copy == cudaErrorInvalidValue, "a copy from heap memory: %s", cudaGetErrorName(copy));
  (void)cudaGetLastError();
  const cudaError_t again = cudaDeviceSetLimit(cudaLimitMallocHeapSize, 2u << 20);
  RT_EXPECT(again == cudaErrorInvalidValue, "setting the heap size after a malloc launch: %s", cudaGetErrorName(again));
  (void)cudaGetLastError();  // the runtime keeps the refusal as its last error
  RT_OK(cudaDeviceGetLimit(&size, cudaLimitMallocHeapSize));
  RT_EXPECT(size == 4u << 20, "after the refusal the heap reads %zu bytes", size);
  rt_free_all<<<1, 1>>>(got, count);
  rt_until_null<<<1, 1>>>(300 << 10, got, count);
  RT_OK(cudaDeviceSynchronize());
  RT_OK(cudaMemcpy(&c, count, sizeof(int), cudaMemcpyDeviceToHost));
  RT_EXPECT(c == 13, "after freeing them the heap gave %d blocks", c);
  RT_OK(cudaFree(got));
  RT_OK(cudaFree(count));
  RT_OK(cudaDeviceReset());
}

// __nv_aligned_device_malloc: the alignment asked for, NULL for one that is not a power of two.
void aligned() {
  void** out = nullptr;
  RT_OK(cudaMalloc(&out, 3 * sizeof(void*)));
  rt_aligned<<<1, 1>>>(out);
  RT_OK(cudaDeviceSynchronize());
  void* host[3] = {};
  RT_OK(cudaMemcpy(host, out, sizeof host, cudaMemcpyDeviceToHost));
  RT_EXPECT(host[0] != nullptr && reinterpret_cast<uintptr_t>(host[0]) % 4096 == 0, "aligned to 4096: %p", host[0]);
  RT_EXPECT(host[1] == nullptr, "alignment 3 gave %p", host[1]);
  RT_EXPECT(host[2] != nullptr && reinterpret_cast<uintptr_t>(host[2]) % 16 == 0, "malloc(1) gave %p", host[2]);
  RT_OK(cudaFree(out));
  RT_OK(cudaDeviceReset());
}

// Freeing a block twice: undefined in the programming guide; mcsim stops the kernel with an
// illegal address (so on mcsim only).
void freeTwice() {
  void** out = nullptr;
  RT_OK(cudaMalloc(&out, sizeof(void*)));
  rt_free_twice<<<1, 1>>>(out);
  const cudaError_t e = cudaDeviceSynchronize();
  RT_EXPECT(e == cudaErrorIllegalAddress, "a double free gave %s", cudaGetErrorName(e));
  RT_OK(cudaDeviceReset());
}

// For a real GPU (the lead runs it there; docs/ptx.md, "malloc and free", says which answers are
// mcsim's assumptions): prints what the driver and device answer where the programming guide is
// silent, asserting nothing. `rt_malloc probe`.
void probe() {
  size_t size = 0;
  RT_OK(cudaDeviceGetLimit(&size, cudaLimitMallocHeapSize));
  std::printf("probe: default heap limit %zu\n", size);
  const cudaError_t small = cudaDeviceSetLimit(cudaLimitMallocHeapSize, 1000);
  RT_OK(cudaDeviceGetLimit(&size, cudaLimitMallocHeapSize));
  std::printf("probe: set 1000 -> %s, reads %zu\n", cudaGetErrorName(small), size);
  RT_OK(cudaDeviceSetLimit(cudaLimitMallocHeapSize, 1u << 20));
  void** out = nullptr;
  int* count = nullptr;
  RT_OK(cudaMalloc(&out, sizeof(void*)));
  RT_OK(cudaMalloc(&count, sizeof(int)));
  rt_probe_kernel<<<1, 1>>>(out, 300 << 10, count);
  RT_OK(cudaDeviceSynchronize());
  void* zero = nullptr;
  int c = 0;
  RT_OK(cudaMemcpy(&zero, out, sizeof zero, cudaMemcpyDeviceToHost));
  RT_OK(cudaMemcpy(&c, count, sizeof c, cudaMemcpyDeviceToHost));
  std::printf("probe: malloc(0) %s; a 1 MiB heap holds %d blocks of 300 KiB\n", zero == nullptr ? "NULL" : "not NULL", c);
  if (zero != nullptr) {
    char byte = 0;
    const cudaError_t copy = cudaMemcpy(&byte, zero, 1, cudaMemcpyDeviceToHost);
    std::printf("probe: cudaMemcpy from heap memory -> %s\n", cudaGetErrorName(copy));
    (void)cudaGetLastError();
  }
  RT_OK(cudaDeviceReset());
}

const rtcheck::Case kCases[] = {
    {"many_threads", manyThreads},
    {"limit_and_exhaustion", limitAndExhaustion},
    {"aligned", aligned},
    {"free_twice", freeTwice, /*onlyWhenNamed=*/true},
    {"probe", probe, /*onlyWhenNamed=*/true},
};

}  // namespace

int main(int argc, char** argv) { return rtcheck::runCases(kCases, sizeof kCases / sizeof kCases[0], argc, argv); }
