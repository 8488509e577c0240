/* mcsim_sample_kernel_launches: the single-GPU launch sample of traces/ (docs/traces.md). One GPU,
 * plain device memory, cuda.h and mcsim's kernel library (include/mcsim/kernels.h) only, so that
 * the same binary runs on mcsim and on a real driver (recorded there through
 * build/lib/record-real/libcuda.so.1). It calls no cuMulticast* function.
 *
 *   loads: the kernel library image with cuModuleLoadData (functions by name) and with
 *   cuLibraryLoadData (a kernel by name, and its function);
 *   launches of mcsim_copy and mcsim_reduce in every form the trace records: cuLaunchKernel with
 *   kernelParams, with a CUkernel in place of the function, with an `extra` parameter buffer, on a
 *   created stream and on the legacy one; cuLaunchKernelEx with a launch attribute;
 *   queries: the functions' names and an attribute; teardown in reverse.
 * Prints "kernel-launches: ok" when every word read back is what the kernels should have written,
 * and exits 1 otherwise. */
#include <cuda.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "mcsim/kernels.h"

#define WORDS 4096u /* each buffer: 16 KiB of u32 */

static int failures = 0;

static CUresult check(CUresult r, const char* what) {
  if (r != CUDA_SUCCESS) {
    const char* name = NULL;
    cuGetErrorName(r, &name);
    fprintf(stderr, "kernel-launches: %s failed: %s\n", what, name ? name : "?");
    ++failures;
  }
  return r;
}

static void expect(const uint32_t* got, const uint32_t* want, const char* what) {
  for (unsigned i = 0; i < WORDS; ++i) {
    if (got[i] != want[i]) {
      fprintf(stderr, "kernel-launches: %s: word %u is 0x%08x, expected 0x%08x\n", what, i, got[i], want[i]);
      ++failures;
      return;
    }
  }
}

int main(void) {
  static uint32_t a[WORDS], b[WORDS], want[WORDS], back[WORDS];
  CUdevice dev;
  CUcontext ctx;
  if (check(cuInit(0), "cuInit") != CUDA_SUCCESS) return 1;
  check(cuDeviceGet(&dev, 0), "cuDeviceGet");
  check(cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
  check(cuCtxSetCurrent(ctx), "cuCtxSetCurrent");

  for (unsigned i = 0; i < WORDS; ++i) {
    a[i] = 0x10000000u + i * 3u;
    b[i] = 0x00200000u + i * 7u;
  }
  const size_t bytes = sizeof a;
  CUdeviceptr da = 0, db = 0, dsum = 0, dcopy = 0;
  check(cuMemAlloc(&da, bytes), "cuMemAlloc a");
  check(cuMemAlloc(&db, bytes), "cuMemAlloc b");
  check(cuMemAlloc(&dsum, bytes), "cuMemAlloc sum");
  check(cuMemAlloc(&dcopy, 2 * bytes), "cuMemAlloc copy");
  check(cuMemcpyHtoD(da, a, bytes), "cuMemcpyHtoD a");
  check(cuMemcpyHtoD(db, b, bytes), "cuMemcpyHtoD b");
  CUstream stream = NULL;
  check(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");

  /* The library image, twice: as a module (functions) and as a library (a kernel). */
  CUmodule mod = NULL;
  CUfunction copyFn = NULL, reduceFn = NULL;
  check(cuModuleLoadData(&mod, mcsim_kernel_image), "cuModuleLoadData");
  check(cuModuleGetFunction(&copyFn, mod, MCSIM_KERNEL_COPY), "cuModuleGetFunction copy");
  check(cuModuleGetFunction(&reduceFn, mod, MCSIM_KERNEL_REDUCE), "cuModuleGetFunction reduce");
  CUlibrary lib = NULL;
  CUkernel reduceKernel = NULL;
  CUfunction reduceFromKernel = NULL;
  check(cuLibraryLoadData(&lib, mcsim_kernel_image, NULL, NULL, 0, NULL, NULL, 0), "cuLibraryLoadData");
  check(cuLibraryGetKernel(&reduceKernel, lib, MCSIM_KERNEL_REDUCE), "cuLibraryGetKernel");
  check(cuKernelGetFunction(&reduceFromKernel, reduceKernel), "cuKernelGetFunction");
  const char* name = NULL;
  check(cuFuncGetName(&name, copyFn), "cuFuncGetName");
  int maxThreads = 0;
  check(cuFuncGetAttribute(&maxThreads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, reduceFromKernel), "cuFuncGetAttribute");

  /* 1. kernelParams, created stream: sum = a (a copy). */
  {
    CUdeviceptr dst = dsum, src = da;
    uint64_t n = bytes;
    void* params[] = {&dst, &src, &n};
    check(cuLaunchKernel(copyFn, 4, 1, 1, 256, 1, 1, 0, stream, params, NULL), "cuLaunchKernel copy");
  }
  /* 2. the CUkernel in place of the function: sum = sum + b. */
  {
    CUdeviceptr dst = dsum, x = dsum, y = db;
    uint64_t n = WORDS;
    uint32_t dtype = MCSIM_DTYPE_U32, op = MCSIM_REDOP_ADD;
    void* params[] = {&dst, &x, &y, &n, &dtype, &op};
    check(cuLaunchKernel((CUfunction)reduceKernel, 8, 1, 1, 128, 1, 1, 0, stream, params, NULL), "cuLaunchKernel reduce");
  }
  check(cuStreamSynchronize(stream), "cuStreamSynchronize");
  /* 3. the extra form (a packed parameter buffer), legacy stream: copy[WORDS..] = sum. */
  {
    struct {
      CUdeviceptr dst, src;
      uint64_t n;
    } packed = {dcopy + bytes, dsum, bytes};
    size_t packedBytes = sizeof packed;
    void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &packed, CU_LAUNCH_PARAM_BUFFER_SIZE, &packedBytes, CU_LAUNCH_PARAM_END};
    check(cuLaunchKernel(copyFn, 2, 1, 1, 512, 1, 1, 0, NULL, NULL, extra), "cuLaunchKernel extra");
  }
  /* 4. cuLaunchKernelEx with a priority attribute: copy[0..] = a + sum (the kernel's function). */
  {
    CUdeviceptr dst = dcopy, x = da, y = dsum;
    uint64_t n = WORDS;
    uint32_t dtype = MCSIM_DTYPE_U32, op = MCSIM_REDOP_ADD;
    void* params[] = {&dst, &x, &y, &n, &dtype, &op};
    CUlaunchAttribute attr;
    memset(&attr, 0, sizeof attr);
    attr.id = CU_LAUNCH_ATTRIBUTE_PRIORITY;
    attr.value.priority = 0;
    CUlaunchConfig config;
    memset(&config, 0, sizeof config);
    config.gridDimX = 4;
    config.gridDimY = config.gridDimZ = 1;
    config.blockDimX = 256;
    config.blockDimY = config.blockDimZ = 1;
    config.hStream = stream;
    config.attrs = &attr;
    config.numAttrs = 1;
    check(cuCtxSynchronize(), "cuCtxSynchronize");
    check(cuLaunchKernelEx(&config, reduceFromKernel, params, NULL), "cuLaunchKernelEx");
  }
  check(cuStreamSynchronize(stream), "cuStreamSynchronize");

  for (unsigned i = 0; i < WORDS; ++i) want[i] = a[i] + b[i];
  check(cuMemcpyDtoH(back, dsum, bytes), "cuMemcpyDtoH sum");
  expect(back, want, "sum");
  check(cuMemcpyDtoH(back, dcopy + bytes, bytes), "cuMemcpyDtoH copy");
  expect(back, want, "copy of the sum");
  for (unsigned i = 0; i < WORDS; ++i) want[i] = a[i] + a[i] + b[i];
  check(cuMemcpyDtoH(back, dcopy, bytes), "cuMemcpyDtoH a + sum");
  expect(back, want, "a + sum");

  check(cuLibraryUnload(lib), "cuLibraryUnload");
  check(cuModuleUnload(mod), "cuModuleUnload");
  check(cuStreamDestroy(stream), "cuStreamDestroy");
  check(cuMemFree(dcopy), "cuMemFree");
  check(cuMemFree(dsum), "cuMemFree");
  check(cuMemFree(db), "cuMemFree");
  check(cuMemFree(da), "cuMemFree");
  check(cuDevicePrimaryCtxRelease(dev), "cuDevicePrimaryCtxRelease");
  if (failures == 0) printf("kernel-launches: ok\n");
  return failures == 0 ? 0 : 1;
}
