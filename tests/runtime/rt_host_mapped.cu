// Kernels that read and write mapped pinned host memory (cudaHostAlloc with cudaHostAllocMapped,
// cudaMallocHost), as NCCL's kernels read its abort flag: the device reaches the memory at the
// address the host has (unified addressing), and what either side writes the other reads. On a
// shared node the kernel runs in the node's process, which reaches the memory in the segment
// both map (docs/multiprocess.md, "Pinned host memory"). Before 2026-11-29 every such access was
// an illegal address on both nodes.
//
//   rt_host_mapped [CASE...]
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "tests/runtime/rt_check.h"

// Reads the flag the host set, writes its successor back, and reports what it read.
__global__ void rt_bump(volatile unsigned* flag, unsigned* seen) {
  const unsigned v = *flag;
  *seen = v;
  *flag = v + 1;
}

// Every thread adds its id into a host array (atomics on host memory, as NCCL's counters).
__global__ void rt_add_ids(unsigned* host, int n) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t < n) atomicAdd(&host[t % 8], static_cast<unsigned>(t));
}

static void mappedFlag() {
  unsigned* h = nullptr;
  RT_OK(cudaHostAlloc(&h, 4096, cudaHostAllocMapped));
  unsigned* d = nullptr;
  RT_OK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&d), h, 0));
  RT_EXPECT(d == h, "device pointer %p, host pointer %p", static_cast<void*>(d), static_cast<void*>(h));
  unsigned* seen = nullptr;
  RT_OK(cudaMalloc(&seen, sizeof(unsigned)));
  for (unsigned round = 0; round < 3; ++round) {
    h[0] = 100 * round + 6;  // the host's write, read by the kernel
    rt_bump<<<1, 1>>>(h, seen);
    RT_OK(cudaDeviceSynchronize());
    unsigned got = 0;
    RT_OK(cudaMemcpy(&got, seen, sizeof got, cudaMemcpyDeviceToHost));
    RT_EXPECT(got == 100 * round + 6, "round %u: the kernel read %u", round, got);
    RT_EXPECT(h[0] == 100 * round + 7, "round %u: the host reads %u", round, h[0]);
  }
  RT_OK(cudaFree(seen));
  RT_OK(cudaFreeHost(h));
}

static void atomicsOnHostMemory() {
  unsigned* h = nullptr;
  RT_OK(cudaMallocHost(&h, 8 * sizeof(unsigned)));
  for (int i = 0; i < 8; ++i) h[i] = 0;
  const int n = 1000;
  rt_add_ids<<<4, 256>>>(h, n);
  RT_OK(cudaDeviceSynchronize());
  for (int i = 0; i < 8; ++i) {
    unsigned want = 0;
    for (int t = i; t < n; t += 8) want += static_cast<unsigned>(t);
    RT_EXPECT(h[i] == want, "[%d] = %u, expected %u", i, h[i], want);
  }
  RT_OK(cudaFreeHost(h));
}

// Freed pinned memory is no longer the device's: a kernel that reaches it faults, as for any
// address nothing maps.
static void freedIsUnmapped() {
  if (!rtcheck::onMcsim()) return;  // a real GPU may fault or not
  unsigned* h = nullptr;
  RT_OK(cudaHostAlloc(&h, 4096, cudaHostAllocMapped));
  unsigned* seen = nullptr;
  RT_OK(cudaMalloc(&seen, sizeof(unsigned)));
  RT_OK(cudaFreeHost(h));
  rt_bump<<<1, 1>>>(h, seen);
  const cudaError_t e = cudaDeviceSynchronize();
  RT_EXPECT(e == cudaErrorIllegalAddress, "%s", cudaGetErrorName(e));
  RT_OK(cudaDeviceReset());
}

// Pinned memory larger than a shared node's segment (on_shared_node.sh starts one of 256 MiB) is
// the process's own: copies reach it (kernels do not, and the driver says so once).
static void largerThanTheSegment() {
  const size_t bytes = size_t{512} << 20;
  unsigned char* h = nullptr;
  RT_OK(cudaMallocHost(&h, bytes));
  unsigned char* d = nullptr;
  RT_OK(cudaMalloc(&d, 4096));
  for (int i = 0; i < 4096; ++i) h[bytes - 4096 + i] = static_cast<unsigned char>(i * 7);
  RT_OK(cudaMemcpy(d, h + bytes - 4096, 4096, cudaMemcpyHostToDevice));
  RT_OK(cudaMemcpy(h, d, 4096, cudaMemcpyDeviceToHost));
  for (int i = 0; i < 4096; ++i) RT_EXPECT(h[i] == static_cast<unsigned char>(i * 7), "[%d] = %u", i, h[i]);
  RT_OK(cudaFree(d));
  RT_OK(cudaFreeHost(h));
}

// Whether the program runs attached to a shared node (on_shared_node.sh sets MCSIM_NODE).
static bool onSharedNode() {
  const char* node = std::getenv("MCSIM_NODE");
  return rtcheck::onMcsim() && node != nullptr && *node != '\0';
}

// Host memory the program allocated itself and registered (cudaHostRegister): the kernel reads
// and writes it through its device pointer (the same address, unified addressing), atomics too,
// on the embedded node, whose kernels run in this process. A shared node's kernels run in the
// node's process, which cannot reach the program's pages: the access is an illegal address, and
// the report says why. Unregistered, the memory is no longer the device's: a kernel that reaches
// it faults.
static void registeredMemory() {
  std::vector<unsigned> pages(2048, 0);  // 8 KiB of the program's own (heap) memory
  unsigned* h = pages.data();
  RT_OK(cudaHostRegister(h, pages.size() * sizeof(unsigned), cudaHostRegisterDefault));
  unsigned* d = nullptr;
  RT_OK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&d), h, 0));
  RT_EXPECT(d == h, "device pointer %p, host pointer %p", static_cast<void*>(d), static_cast<void*>(h));
  unsigned* seen = nullptr;
  RT_OK(cudaMalloc(&seen, sizeof(unsigned)));
  h[5] = 41;
  rt_bump<<<1, 1>>>(d + 5, seen);
  const cudaError_t e = cudaDeviceSynchronize();
  if (onSharedNode()) {
    RT_EXPECT(e == cudaErrorIllegalAddress, "on a shared node: %s", cudaGetErrorName(e));
    RT_EXPECT(h[5] == 41, "the kernel wrote %u", h[5]);
    RT_OK(cudaDeviceReset());
    return;  // the registration went with the context
  }
  RT_OK(e);
  unsigned got = 0;
  RT_OK(cudaMemcpy(&got, seen, sizeof got, cudaMemcpyDeviceToHost));
  RT_EXPECT(got == 41, "the kernel read %u", got);
  RT_EXPECT(h[5] == 42, "the host reads %u", h[5]);
  rt_add_ids<<<4, 256>>>(h + 100, 1000);
  RT_OK(cudaDeviceSynchronize());
  for (int i = 0; i < 8; ++i) {
    unsigned want = 0;
    for (int t = i; t < 1000; t += 8) want += static_cast<unsigned>(t);
    RT_EXPECT(h[100 + i] == want, "[%d] = %u, expected %u", i, h[100 + i], want);
  }
  RT_OK(cudaHostUnregister(h));
  if (rtcheck::onMcsim()) {  // a real GPU may fault or not
    rt_bump<<<1, 1>>>(d + 5, seen);
    const cudaError_t after = cudaDeviceSynchronize();
    RT_EXPECT(after == cudaErrorIllegalAddress, "after cudaHostUnregister: %s", cudaGetErrorName(after));
    RT_EXPECT(h[5] == 42, "the kernel wrote %u after cudaHostUnregister", h[5]);
    RT_OK(cudaDeviceReset());
    return;
  }
  RT_OK(cudaFree(seen));
}

static const rtcheck::Case kCases[] = {
    {"larger_than_the_segment", largerThanTheSegment},
    {"mapped_flag", mappedFlag},
    {"atomics_on_host_memory", atomicsOnHostMemory},
    {"freed_is_unmapped", freedIsUnmapped},
    {"registered_memory", registeredMemory},
};

int main(int argc, char** argv) { return rtcheck::runCases(kCases, sizeof kCases / sizeof kCases[0], argc, argv); }
