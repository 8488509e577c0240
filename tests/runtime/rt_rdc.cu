// A program built with separate compilation (nvcc -rdc=true, two compilation units): its kernel
// calls a device function, reads a variable and calls through a table of function pointers, all
// defined in the other unit (rt_rdc_ops.cu); a template's kernel calls the function too; the host
// reads and writes the other unit's variable. nvcc device-links the objects into an image of SASS
// only, or, built with PTX only (code=compute_90), of no code at all; either way the wrapper lists
// the relocatable objects with their PTX, which mcsim links whole when the runtime loads the
// image (docs/ptx.md, "Linking relocatable PTX" and "Linking with cuLink*"), or kernel by kernel at
// their first launches with MCSIM_RDC_WHOLE_LINK_BYTES=0 (as NCCL's large image is). Either way the
// image has one copy of each variable: a kernel reads what another wrote (rdc_put, rdc_get) and
// what the host wrote by symbol.
// Prints "rt_rdc: correct" or what went wrong.
#include <cuda_runtime.h>

#include <cstdio>
#include <vector>

typedef int (*IntOp)(int);
extern __device__ int rdc_offset;
extern __device__ IntOp rdc_table[2];
extern __device__ int rdc_scale(int x);
extern __device__ int rdc_mailbox;

__global__ void rdc_put(int v) { rdc_mailbox = v; }
__global__ void rdc_get(int* out) { *out = rdc_mailbox; }

__global__ void rdc_kernel(int* out) {
  const int t = threadIdx.x;
  out[t] = rdc_scale(rdc_table[t % 2](t)) + rdc_offset;
}

// A template's kernel: a weak symbol in the device-linked cubin, a .weak .entry in the PTX.
template <typename T>
__global__ void rdc_template_kernel(T* out) {
  out[threadIdx.x] = static_cast<T>(rdc_scale(static_cast<int>(threadIdx.x)));
}

int main() {
  const int n = 64;
  int* d = nullptr;
  if (cudaMalloc(&d, n * sizeof(int)) != cudaSuccess) {
    std::printf("rt_rdc: cudaMalloc failed\n");
    return 1;
  }
  // The other unit's variable from the host before any kernel ran (none linked yet: the image's
  // variables are placed without one).
  int early = 0;
  if (cudaMemcpyFromSymbol(&early, rdc_mailbox, sizeof early) != cudaSuccess || early != 7) {
    std::printf("rt_rdc: rdc_mailbox reads %d through cudaMemcpyFromSymbol before any launch, expected 7\n", early);
    return 1;
  }
  rdc_kernel<<<1, n>>>(d);
  const cudaError_t e = cudaDeviceSynchronize();
  if (e != cudaSuccess) {
    std::printf("rt_rdc: the kernel failed: %s\n", cudaGetErrorString(e));
    return 1;
  }
  std::vector<int> h(n);
  cudaMemcpy(h.data(), d, n * sizeof(int), cudaMemcpyDeviceToHost);
  int bad = 0;
  for (int t = 0; t < n; ++t) {
    const int want = 10 * (t % 2 == 0 ? t + 5 : 3 * t) + 5;
    if (h[t] != want && bad++ < 5) std::printf("rt_rdc: out[%d] = %d, expected %d\n", t, h[t], want);
  }
  // The other unit's variable from the host: one copy, which the kernel and both functions read.
  int offset = 0;
  if (cudaMemcpyFromSymbol(&offset, rdc_offset, sizeof offset) != cudaSuccess || offset != 5) {
    std::printf("rt_rdc: rdc_offset reads %d through cudaMemcpyFromSymbol, expected 5\n", offset);
    ++bad;
  }
  const int changed = 100;
  if (cudaMemcpyToSymbol(rdc_offset, &changed, sizeof changed) != cudaSuccess) {
    std::printf("rt_rdc: cudaMemcpyToSymbol(rdc_offset) failed\n");
    ++bad;
  }
  rdc_kernel<<<1, n>>>(d);
  if (cudaDeviceSynchronize() != cudaSuccess) ++bad;
  cudaMemcpy(h.data(), d, n * sizeof(int), cudaMemcpyDeviceToHost);
  for (int t = 0; t < n; ++t) {
    const int want = 10 * (t % 2 == 0 ? t + changed : 3 * t) + changed;
    if (h[t] != want && bad++ < 5) std::printf("rt_rdc: after the change, out[%d] = %d, expected %d\n", t, h[t], want);
  }
  rdc_template_kernel<int><<<1, n>>>(d);
  if (cudaGetLastError() != cudaSuccess || cudaDeviceSynchronize() != cudaSuccess) {
    std::printf("rt_rdc: the template's kernel failed\n");
    ++bad;
  }
  cudaMemcpy(h.data(), d, n * sizeof(int), cudaMemcpyDeviceToHost);
  for (int t = 0; t < n; ++t) {
    if (h[t] != 10 * t && bad++ < 5) std::printf("rt_rdc: the template's out[%d] = %d, expected %d\n", t, h[t], 10 * t);
  }
  // One kernel writes the other unit's variable, another kernel and the host read it; the host
  // writes it and the reading kernel sees that.
  int got = 0;
  rdc_get<<<1, 1>>>(d);
  cudaMemcpy(&got, d, sizeof got, cudaMemcpyDeviceToHost);
  if (got != 7) {
    std::printf("rt_rdc: rdc_get reads %d before any write, expected the initialiser's 7\n", got);
    ++bad;
  }
  rdc_put<<<1, 1>>>(41);
  rdc_get<<<1, 1>>>(d);
  if (cudaDeviceSynchronize() != cudaSuccess) ++bad;
  cudaMemcpy(&got, d, sizeof got, cudaMemcpyDeviceToHost);
  if (got != 41) {
    std::printf("rt_rdc: rdc_get reads %d after rdc_put(41): the kernels do not share the variable\n", got);
    ++bad;
  }
  got = 0;
  if (cudaMemcpyFromSymbol(&got, rdc_mailbox, sizeof got) != cudaSuccess || got != 41) {
    std::printf("rt_rdc: rdc_mailbox reads %d through cudaMemcpyFromSymbol after rdc_put(41)\n", got);
    ++bad;
  }
  const int mail = 1234;
  if (cudaMemcpyToSymbol(rdc_mailbox, &mail, sizeof mail) != cudaSuccess) {
    std::printf("rt_rdc: cudaMemcpyToSymbol(rdc_mailbox) failed\n");
    ++bad;
  }
  rdc_get<<<1, 1>>>(d);
  if (cudaDeviceSynchronize() != cudaSuccess) ++bad;
  cudaMemcpy(&got, d, sizeof got, cudaMemcpyDeviceToHost);
  if (got != mail) {
    std::printf("rt_rdc: rdc_get reads %d after cudaMemcpyToSymbol(%d)\n", got, mail);
    ++bad;
  }
  cudaFree(d);
  if (bad == 0) std::printf("rt_rdc: correct\n");
  return bad == 0 ? 0 : 1;
}
