/*
 * allreduce_tour: what mcsim is for, in one program. A multicast object over every GPU of the
 * node, each GPU's memory bound to it, the object mapped on every GPU, and a multimem all-reduce
 * (mcsim's kernel library: ld_reduce in the switch, multimem.st of the sums) run on all GPUs at
 * once, checked element by element, timed with events, and torn down.
 *
 * It uses only cuda.h and the kernel library's ABI (include/mcsim/kernels.h), so the same binary
 * runs under mcsim (`mcsim run -- allreduce_tour`) and on a real NVSwitch system. It calls
 * cuMulticast* functions: run it on real GPUs only where multicast is yours to use (a multicast
 * misstep can take a shared host's GPUs out of service). A node without multicast support
 * (MULTICAST_SUPPORTED = 0, e.g. one GPU) is reported and skipped.
 *
 * Output is reproducible under mcsim: simulated times, no host pointers.
 */
#include <cuda.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "mcsim/kernels.h"

#define CHECK(call)                                                                      \
  do {                                                                                   \
    const CUresult result_ = (call);                                                     \
    if (result_ != CUDA_SUCCESS) fail_call(#call, result_, __LINE__);                    \
  } while (0)

static void fail_call(const char* what, CUresult result, int line) {
  const char* name = NULL;
  if (cuGetErrorName(result, &name) != CUDA_SUCCESS || name == NULL) name = "unrecognised error";
  fprintf(stderr, "allreduce_tour: line %d: %s returned %s (%d)\n", line, what, name, (int)result);
  printf("FAILED: %s returned %s\n", what, name);
  exit(1);
}

enum {
  kMaxDevices = 128,
  kElements = 8u << 20,  /* f32 elements per GPU: 32 MiB */
  kBlocks = 32,          /* per GPU; every block of a barrier kernel must be resident */
  kThreads = 512,
};

/* Element i of GPU d before the all-reduce. Small integers in f32: every partial sum is exact,
 * so the expected result does not depend on the order in which the switch adds. */
static float input_value(int device, size_t i) { return (float)((i % 1000) + 1000 * (size_t)device); }

typedef struct {
  CUcontext context;
  CUstream stream;
  CUmodule module;
  CUfunction allreduce;
  CUmemGenericAllocationHandle memory;  /* this GPU's share of the team */
  CUdeviceptr local;                    /* that memory, mapped for this GPU */
  CUdeviceptr multicast;                /* the multicast object, mapped for this GPU */
  CUevent start, stop;
} Member;

static size_t round_up(size_t v, size_t to) { return (v + to - 1) / to * to; }

int main(void) {
  static Member m[kMaxDevices];
  int n = 0;
  CHECK(cuInit(0));
  CHECK(cuDeviceGetCount(&n));
  if (n > kMaxDevices) n = kMaxDevices;
  printf("== %d GPUs\n", n);
  for (int d = 0; d < n; ++d) {
    int supported = 0;
    CHECK(cuDeviceGetAttribute(&supported, CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED, d));
    if (!supported || n < 2) {
      printf("GPU %d has no multicast support (or the node has one GPU): nothing to show here\n", d);
      return 0;
    }
  }

  /* One multicast object: the data, then one granule of barrier signal words. The minimum
   * granularity keeps the tour small; NCCL rounds to the recommended one for speed. */
  const size_t dataBytes = (size_t)kElements * sizeof(float);
  CUmulticastObjectProp prop = {0};
  prop.numDevices = (unsigned)n;
  prop.handleTypes = 0; /* one process: nothing to export */
  size_t granularity = 0;
  prop.size = dataBytes;
  CHECK(cuMulticastGetGranularity(&granularity, &prop, CU_MULTICAST_GRANULARITY_MINIMUM));
  const size_t signalOffset = round_up(dataBytes, granularity);
  const size_t teamBytes = signalOffset + granularity;
  prop.size = teamBytes;
  CUmemGenericAllocationHandle team;
  CHECK(cuMulticastCreate(&team, &prop));
  for (int d = 0; d < n; ++d) CHECK(cuMulticastAddDevice(team, d));
  printf("== multicast object: %zu MiB per GPU (granularity %zu MiB), %d devices added\n",
         teamBytes >> 20, granularity >> 20, n);

  for (int d = 0; d < n; ++d) {
    Member* g = &m[d];
    CHECK(cuDevicePrimaryCtxRetain(&g->context, d));
    CHECK(cuCtxSetCurrent(g->context));
    CUmemAllocationProp mem = {0};
    mem.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    mem.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    mem.location.id = d;
    CHECK(cuMemCreate(&g->memory, teamBytes, &mem, 0));
    CHECK(cuMulticastBindMem(team, 0, g->memory, 0, teamBytes, 0));
    CUmemAccessDesc rw = {{CU_MEM_LOCATION_TYPE_DEVICE, d}, CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    CHECK(cuMemAddressReserve(&g->local, teamBytes, 0, 0, 0));
    CHECK(cuMemMap(g->local, teamBytes, 0, g->memory, 0));
    CHECK(cuMemSetAccess(g->local, teamBytes, &rw, 1));
    CHECK(cuMemAddressReserve(&g->multicast, teamBytes, 0, 0, 0));
    CHECK(cuMemMap(g->multicast, teamBytes, 0, team, 0));
    CHECK(cuMemSetAccess(g->multicast, teamBytes, &rw, 1));
    CHECK(cuStreamCreate(&g->stream, CU_STREAM_NON_BLOCKING));
    CHECK(cuModuleLoadData(&g->module, mcsim_kernel_image));
    CHECK(cuModuleGetFunction(&g->allreduce, g->module, MCSIM_KERNEL_ALLREDUCE_TWOSHOT));
    CHECK(cuEventCreate(&g->start, CU_EVENT_DEFAULT));
    CHECK(cuEventCreate(&g->stop, CU_EVENT_DEFAULT));
  }
  printf("== every GPU: memory bound to the object, the object mapped, the kernel library loaded\n");

  float* host = malloc(dataBytes);
  if (host == NULL) {
    printf("FAILED: no host memory\n");
    return 1;
  }
  for (int d = 0; d < n; ++d) {
    for (size_t i = 0; i < kElements; ++i) host[i] = input_value(d, i);
    CHECK(cuCtxSetCurrent(m[d].context));
    CHECK(cuMemcpyHtoD(m[d].local, host, dataBytes));
    CHECK(cuMemsetD32(m[d].local + signalOffset, 0, granularity / 4));
  }

  /* Two-shot all-reduce, in place: each GPU reduces its share in the switch (ld_reduce) and
   * stores the sums to every member (multimem.st), between two barriers on the signal words. */
  for (int d = 0; d < n; ++d) {
    Member* g = &m[d];
    CUdeviceptr buf = g->multicast, mcSignal = g->multicast + signalOffset, signal = g->local + signalOffset;
    uint64_t count = kElements;
    uint32_t dtype = MCSIM_DTYPE_F32, rank = (uint32_t)d, world = (uint32_t)n, epoch = 1;
    void* args[] = {&buf, &count, &dtype, &mcSignal, &signal, &rank, &world, &epoch};
    CHECK(cuCtxSetCurrent(g->context));
    CHECK(cuEventRecord(g->start, g->stream));
    CHECK(cuLaunchKernel(g->allreduce, kBlocks, 1, 1, kThreads, 1, 1, 0, g->stream, args, NULL));
    CHECK(cuEventRecord(g->stop, g->stream));
  }
  float slowest = 0;
  for (int d = 0; d < n; ++d) {
    float ms = 0;
    CHECK(cuCtxSetCurrent(m[d].context));
    CHECK(cuStreamSynchronize(m[d].stream));
    CHECK(cuEventElapsedTime(&ms, m[d].start, m[d].stop));
    if (ms > slowest) slowest = ms;
  }
  /* nccl-tests' bus bandwidth for an all-reduce: bytes * 2 (n - 1) / n per unit time. */
  const double seconds = slowest / 1e3;
  printf("== all-reduce (two-shot, f32, %zu MiB per GPU): %.1f us, bus bandwidth %.0f GB/s\n",
         dataBytes >> 20, slowest * 1e3, (double)dataBytes * 2.0 * (n - 1) / n / seconds / 1e9);

  size_t wrong = 0;
  for (int d = 0; d < n; ++d) {
    CHECK(cuCtxSetCurrent(m[d].context));
    CHECK(cuMemcpyDtoH(host, m[d].local, dataBytes));
    for (size_t i = 0; i < kElements; ++i) {
      /* the sum over s of input_value(s, i) */
      const float expected = (float)((size_t)n * (i % 1000) + 1000 * (size_t)n * (size_t)(n - 1) / 2);
      if (host[i] != expected) ++wrong;
    }
  }
  printf("== checked %zu sums on each of %d GPUs: %zu wrong\n", (size_t)kElements, n, wrong);
  free(host);

  for (int d = 0; d < n; ++d) {
    Member* g = &m[d];
    CHECK(cuCtxSetCurrent(g->context));
    CHECK(cuEventDestroy(g->start));
    CHECK(cuEventDestroy(g->stop));
    CHECK(cuModuleUnload(g->module));
    CHECK(cuStreamDestroy(g->stream));
    CHECK(cuMemUnmap(g->multicast, teamBytes));
    CHECK(cuMemAddressFree(g->multicast, teamBytes));
    CHECK(cuMulticastUnbind(team, d, 0, teamBytes));
    CHECK(cuMemUnmap(g->local, teamBytes));
    CHECK(cuMemAddressFree(g->local, teamBytes));
    CHECK(cuMemRelease(g->memory));
  }
  CHECK(cuMemRelease(team));
  for (int d = 0; d < n; ++d) CHECK(cuDevicePrimaryCtxRelease(d));
  printf("== torn down: unbound, unmapped, released\n\n");
  if (wrong != 0) {
    printf("FAILED: %zu wrong sums\n", wrong);
    return 1;
  }
  printf("all checks passed\n");
  return 0;
}
