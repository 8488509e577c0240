// A shared library with its own CUDA runtime and kernel, as NCCL and PyTorch's libraries ship:
// nvcc links the runtime statically into it (its default), so a program that loads it has two
// runtimes, each with its own state, over one driver. rt_api's `embedded_runtime` case loads it
// and hands it the program's memory and stream.
#include <cuda_runtime.h>

#include <cstdint>

__global__ void rt_lib_add(int* x, int n, int add) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += add;
}

extern "C" {

int rt_lib_device_count() {
  int n = -1;
  return cudaGetDeviceCount(&n) == cudaSuccess ? n : -1;
}

// Adds `add` to n ints at `x` (memory of the other runtime) on `stream` (a stream of the other
// runtime), with this library's own kernel.
int rt_lib_add_on(int* x, int n, int add, cudaStream_t stream) {
  rt_lib_add<<<(n + 255) / 256, 256, 0, stream>>>(x, n, add);
  return static_cast<int>(cudaGetLastError());
}

// Memory this runtime allocates, for the other to use; and frees.
int rt_lib_malloc(void** p, size_t bytes) { return static_cast<int>(cudaMalloc(p, bytes)); }
int rt_lib_free(void* p) { return static_cast<int>(cudaFree(p)); }

// The device this runtime's calling thread uses.
int rt_lib_get_device() {
  int d = -1;
  return cudaGetDevice(&d) == cudaSuccess ? d : -1;
}

}
