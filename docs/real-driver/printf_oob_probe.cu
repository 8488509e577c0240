#include <cstdio>
#include <cuda_runtime.h>
#include <cuda.h>
__global__ void store_at(int* base, long long off) { base[off] = 1; }
__global__ void no_printf(int* x) { x[threadIdx.x] = 1; }
__global__ void with_printf(int v) { printf("rec %d %d %d\n", v, threadIdx.x, 7); }
int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "";
  if (mode[0] == 'o') {  // oob OFFSET_INTS
    long long off = atoll(argv[2]);
    int* d; cudaMalloc(&d, 1024);
    store_at<<<1,1>>>(d, off);
    cudaError_t e = cudaDeviceSynchronize();
    printf("oob %lld ints (%lld bytes past start): %s\n", off, off * 4, cudaGetErrorName(e));
    return 0;
  }
  if (mode[0] == 'n') {  // set limit after a non-printf launch
    int* d; cudaMalloc(&d, 1024);
    no_printf<<<1,32>>>(d); cudaDeviceSynchronize();
    cudaError_t e = cudaDeviceSetLimit(cudaLimitPrintfFifoSize, 2 << 20);
    printf("set fifo after a non-printf launch: %s\n", cudaGetErrorName(e));
    size_t v = 0; cudaDeviceGetLimit(&v, cudaLimitPrintfFifoSize); printf("fifo now %zu\n", v);
    return 0;
  }
  if (mode[0] == 'p') {  // set small limit, printf kernel, set again
    size_t v0 = 0; cudaDeviceGetLimit(&v0, cudaLimitPrintfFifoSize); printf("default fifo %zu\n", v0);
    cudaError_t e0 = cudaDeviceSetLimit(cudaLimitPrintfFifoSize, atoll(argv[2]));
    size_t v = 0; cudaDeviceGetLimit(&v, cudaLimitPrintfFifoSize);
    printf("set %s: %s, reads back %zu\n", argv[2], cudaGetErrorName(e0), v);
    fflush(stdout);
    with_printf<<<1, 8>>>(5); cudaError_t s = cudaDeviceSynchronize();
    fflush(stdout);
    printf("sync: %s\n", cudaGetErrorName(s));
    cudaError_t e = cudaDeviceSetLimit(cudaLimitPrintfFifoSize, 1 << 20);
    printf("set after printf launch: %s\n", cudaGetErrorName(e));
    cuInit(0); CUcontext c; cuCtxGetCurrent(&c);
    CUresult r = cuCtxSetLimit(CU_LIMIT_PRINTF_FIFO_SIZE, 1 << 20);
    printf("cuCtxSetLimit after: %d\n", (int)r);
    return 0;
  }
  return 1;
}
