// multimem from CUDA C++, as a user writes it: inline PTX assembly in a kernel built by nvcc,
// launched with the CUDA runtime over a multicast object made with the driver API. A two-shot
// all-reduce of f32 on every GPU (each rank multimem.ld_reduce's its share with .v4 and
// multimem.st's the sums back), between two barriers of multimem.red.release on a multicast
// signal word and an ld.acquire spin on the rank's own copy of it. On mcsim the kernel's PTX runs
// in the executor (docs/ptx.md, "multimem"); on a real GPU the same binary needs NVSwitch
// multicast. Expected values are computed on the host, members combined in ascending ordinal.
//   rt_multimem [CASE...]
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <vector>

#include "tests/common/vmm_props.h"
#include "tests/runtime/rt_check.h"

#define CU_OK(call)                                                                         \
  do {                                                                                      \
    const CUresult r_ = (call);                                                             \
    if (r_ != CUDA_SUCCESS) {                                                               \
      const char* n_ = "?";                                                                 \
      cuGetErrorName(r_, &n_);                                                              \
      throw ::rtcheck::Failure{std::string(#call) + " -> " + n_};                           \
    }                                                                                       \
  } while (0)

__device__ void rt_mm_barrier(unsigned* mcSignal, const unsigned* signal, unsigned target) {
  __syncthreads();
  if (threadIdx.x == 0) {
    asm volatile("multimem.red.release.sys.global.add.u32 [%0], %1;" ::"l"(mcSignal), "r"(1u) : "memory");
    unsigned seen = 0;
    do {
      asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(seen) : "l"(signal) : "memory");
    } while (seen < target);
  }
  __syncthreads();
}

// One block a GPU; n is a multiple of 4 * world.
__global__ void rt_twoshot(float* mc, unsigned* mcSignal, const unsigned* signal, unsigned n, unsigned rank,
                           unsigned world) {
  rt_mm_barrier(mcSignal, signal, world);
  const unsigned share = n / world, begin = rank * share;
  for (unsigned i = begin + 4 * threadIdx.x; i < begin + share; i += 4 * blockDim.x) {
    float a, b, c, d;
    asm volatile("multimem.ld_reduce.relaxed.sys.global.add.v4.f32 {%0, %1, %2, %3}, [%4];"
                 : "=f"(a), "=f"(b), "=f"(c), "=f"(d)
                 : "l"(mc + i)
                 : "memory");
    asm volatile("multimem.st.relaxed.sys.global.v4.f32 [%0], {%1, %2, %3, %4};" ::"l"(mc + i), "f"(a), "f"(b),
                 "f"(c), "f"(d)
                 : "memory");
  }
  rt_mm_barrier(mcSignal, signal, 2 * world);
}

namespace {

// A multicast object over `bytes` on every GPU: each GPU's own memory at local[g], the object at mc[g].
struct Team {
  CUmemGenericAllocationHandle object = 0;
  std::vector<CUdeviceptr> local, mc;
};

Team makeTeam(int gpus, size_t bytes) {
  Team t;
  const CUmulticastObjectProp p = cutest::mcProp(static_cast<unsigned>(gpus), bytes);
  CU_OK(cuMulticastCreate(&t.object, &p));
  for (int g = 0; g < gpus; ++g) CU_OK(cuMulticastAddDevice(t.object, g));
  t.local.resize(gpus);
  t.mc.resize(gpus);
  for (int g = 0; g < gpus; ++g) {
    RT_OK(cudaSetDevice(g));
    const CUmemAllocationProp prop = cutest::devicePinned(g);
    CUmemGenericAllocationHandle mem;
    CU_OK(cuMemCreate(&mem, bytes, &prop, 0));
    CU_OK(cuMulticastBindMem(t.object, 0, mem, 0, bytes, 0));
    const CUmemAccessDesc rw = cutest::readWrite(g);
    CU_OK(cuMemAddressReserve(&t.local[g], bytes, 0, 0, 0));
    CU_OK(cuMemMap(t.local[g], bytes, 0, mem, 0));
    CU_OK(cuMemSetAccess(t.local[g], bytes, &rw, 1));
    CU_OK(cuMemRelease(mem));
    CU_OK(cuMemAddressReserve(&t.mc[g], bytes, 0, 0, 0));
    CU_OK(cuMemMap(t.mc[g], bytes, 0, t.object, 0));
    CU_OK(cuMemSetAccess(t.mc[g], bytes, &rw, 1));
  }
  return t;
}

void freeTeam(Team& t, size_t bytes) {
  for (size_t g = 0; g < t.local.size(); ++g) {
    CU_OK(cuMemUnmap(t.local[g], bytes));
    CU_OK(cuMemAddressFree(t.local[g], bytes));
    CU_OK(cuMemUnmap(t.mc[g], bytes));
    CU_OK(cuMemAddressFree(t.mc[g], bytes));
  }
  CU_OK(cuMemRelease(t.object));
}

void twoshot() {
  int gpus = 0;
  RT_OK(cudaGetDeviceCount(&gpus));
  RT_OK(cudaSetDevice(0));
  RT_OK(cudaFree(nullptr));  // the primary context, for the driver calls
  size_t gran = 0;
  const CUmulticastObjectProp probe = cutest::mcProp(static_cast<unsigned>(gpus), 1);
  CU_OK(cuMulticastGetGranularity(&gran, &probe, CU_MULTICAST_GRANULARITY_RECOMMENDED));
  const unsigned n = 8192 * static_cast<unsigned>(gpus);  // floats, a multiple of 4 x gpus
  const size_t bytes = (n * sizeof(float) + gran - 1) / gran * gran;
  Team data = makeTeam(gpus, bytes), signal = makeTeam(gpus, gran);
  std::vector<float> want(n);
  for (int g = 0; g < gpus; ++g) {
    std::vector<float> v(n);
    for (unsigned i = 0; i < n; ++i) v[i] = static_cast<float>((i * 7 + static_cast<unsigned>(g) * 11) % 101) / 9.0f;
    for (unsigned i = 0; i < n; ++i) want[i] = g == 0 ? v[i] : want[i] + v[i];
    RT_OK(cudaSetDevice(g));
    RT_OK(cudaMemcpy(reinterpret_cast<void*>(data.local[g]), v.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    RT_OK(cudaMemset(reinterpret_cast<void*>(signal.local[g]), 0, sizeof(unsigned)));
  }
  std::vector<cudaStream_t> streams(gpus);
  for (int g = 0; g < gpus; ++g) {
    RT_OK(cudaSetDevice(g));
    RT_OK(cudaStreamCreateWithFlags(&streams[g], cudaStreamNonBlocking));
    rt_twoshot<<<1, 256, 0, streams[g]>>>(reinterpret_cast<float*>(data.mc[g]), reinterpret_cast<unsigned*>(signal.mc[g]),
                                          reinterpret_cast<const unsigned*>(signal.local[g]), n, static_cast<unsigned>(g),
                                          static_cast<unsigned>(gpus));
    RT_OK(cudaGetLastError());
  }
  for (int g = 0; g < gpus; ++g) {
    RT_OK(cudaSetDevice(g));
    RT_OK(cudaStreamSynchronize(streams[g]));
    RT_OK(cudaStreamDestroy(streams[g]));
  }
  for (int g = 0; g < gpus; ++g) {
    std::vector<float> got(n);
    RT_OK(cudaSetDevice(g));
    RT_OK(cudaMemcpy(got.data(), reinterpret_cast<void*>(data.local[g]), n * sizeof(float), cudaMemcpyDeviceToHost));
    for (unsigned i = 0; i < n; ++i) {
      RT_EXPECT(got[i] == want[i], "GPU %d element %u: %.9g, not %.9g", g, i, static_cast<double>(got[i]),
                static_cast<double>(want[i]));
    }
  }
  RT_OK(cudaSetDevice(0));
  freeTeam(data, bytes);
  freeTeam(signal, gran);
  std::printf("  %d GPUs, %u floats\n", gpus, n);
}

const rtcheck::Case kCases[] = {{"twoshot", twoshot}};

}  // namespace

int main(int argc, char** argv) { return rtcheck::runCases(kCases, sizeof kCases / sizeof kCases[0], argc, argv); }
