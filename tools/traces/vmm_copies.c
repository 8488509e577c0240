/* mcsim_sample_vmm_copies: the non-multicast sample of traces/ (docs/traces.md). One GPU, cuda.h
 * only, so that the same binary runs on mcsim and on a real driver (recorded there through
 * build/lib/record-real/libcuda.so.1). It calls no cuMulticast* function.
 *
 *   VMM setup: granularity, cuMemCreate (POSIX descriptor shareable), reserve, map, grant;
 *   copies: host to device, memset, device to device, device to host, an asynchronous pair on
 *   the legacy stream, a cuMemAlloc buffer and a pinned host buffer as partners;
 *   queries: address range, pointer attributes, retained handle, exported and imported handle;
 *   a call made through cuGetProcAddress; teardown in reverse.
 * Prints "vmm-copies: ok" when every byte read back is what was written, and exits 1 otherwise. */
#include <cuda.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define KIB 1024u
#define COPY (48u * KIB) /* each copy; under the recorder's 64 KiB data limit */

static int failures = 0;

static CUresult check(CUresult r, const char* what) {
  if (r != CUDA_SUCCESS) {
    const char* name = NULL;
    cuGetErrorName(r, &name);
    fprintf(stderr, "vmm-copies: %s failed: %s\n", what, name ? name : "?");
    ++failures;
  }
  return r;
}

static void fill(uint8_t* p, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; ++i) p[i] = (uint8_t)(i * 131u + seed * 7u + (i >> 8));
}

int main(void) {
  static uint8_t src[COPY], back[COPY];
  CUdevice dev;
  CUcontext ctx;
  char name[96];
  int count = 0, attr = 0;
  if (check(cuInit(0), "cuInit") != CUDA_SUCCESS) return 1;
  check(cuDeviceGetCount(&count), "cuDeviceGetCount");
  check(cuDeviceGet(&dev, 0), "cuDeviceGet");
  check(cuDeviceGetName(name, sizeof name, dev), "cuDeviceGetName");
  check(cuDeviceGetAttribute(&attr, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, dev), "attribute");
  check(cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
  check(cuCtxSetCurrent(ctx), "cuCtxSetCurrent");

  /* VMM: one granule-sized allocation mapped into a reservation twice its size. */
  CUmemAllocationProp prop;
  memset(&prop, 0, sizeof prop);
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = dev;
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  size_t gran = 0;
  check(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM), "granularity");
  CUmemGenericAllocationHandle handle = 0;
  CUdeviceptr va = 0;
  check(cuMemCreate(&handle, gran, &prop, 0), "cuMemCreate");
  check(cuMemAddressReserve(&va, 2 * gran, 0, 0, 0), "cuMemAddressReserve");
  check(cuMemMap(va, gran, 0, handle, 0), "cuMemMap");
  CUmemAccessDesc access;
  memset(&access, 0, sizeof access);
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  check(cuMemSetAccess(va, gran, &access, 1), "cuMemSetAccess");
  unsigned long long flags = 0;
  check(cuMemGetAccess(&flags, &prop.location, va), "cuMemGetAccess");
  /* A failing call on purpose: mapping over the mapped range. Both drivers refuse it. */
  if (cuMemMap(va, gran, 0, handle, 0) == CUDA_SUCCESS) ++failures;

  /* A legacy allocation and a pinned host buffer. */
  CUdeviceptr plain = 0;
  void* pinned = NULL;
  check(cuMemAlloc(&plain, COPY), "cuMemAlloc");
  check(cuMemAllocHost(&pinned, COPY), "cuMemAllocHost");

  /* Copies. */
  fill(src, COPY, 1);
  check(cuMemcpyHtoD(va, src, COPY), "HtoD");
  check(cuMemsetD8(va + COPY, 0x5a, COPY), "memset");
  check(cuMemcpyDtoD(plain, va, COPY), "DtoD");
  check(cuMemcpyDtoH(back, plain, COPY), "DtoH");
  if (memcmp(src, back, COPY) != 0) ++failures;
  check(cuMemcpyDtoH(back, va + COPY, COPY), "DtoH memset");
  for (size_t i = 0; i < COPY; ++i) failures += back[i] != 0x5a;
  fill((uint8_t*)pinned, COPY, 2);
  check(cuMemcpyHtoDAsync(va + 2 * COPY, pinned, COPY, CU_STREAM_LEGACY), "HtoD async");
  check(cuMemcpyDtoHAsync(back, va + 2 * COPY, COPY, CU_STREAM_LEGACY), "DtoH async");
  check(cuStreamSynchronize(CU_STREAM_LEGACY), "cuStreamSynchronize");
  if (memcmp(pinned, back, COPY) != 0) ++failures;
  check(cuCtxSynchronize(), "cuCtxSynchronize");

  /* Queries. */
  CUdeviceptr base = 0;
  size_t size = 0;
  check(cuMemGetAddressRange(&base, &size, plain + 100), "cuMemGetAddressRange");
  int ordinal = -1;
  check(cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, va), "cuPointerGetAttribute");
  CUmemGenericAllocationHandle retained = 0;
  check(cuMemRetainAllocationHandle(&retained, (void*)(uintptr_t)(va + 4096)), "retain");
  check(cuMemRelease(retained), "release retained");
  CUmemAllocationProp got;
  check(cuMemGetAllocationPropertiesFromHandle(&got, handle), "properties");

  /* Export as a descriptor, import it, map the import behind the first mapping. */
  int fd = -1;
  CUmemGenericAllocationHandle imported = 0;
  if (check(cuMemExportToShareableHandle(&fd, handle, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0), "export") == CUDA_SUCCESS) {
    if (check(cuMemImportFromShareableHandle(&imported, (void*)(uintptr_t)fd, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR), "import") == CUDA_SUCCESS) {
      check(cuMemMap(va + gran, gran, 0, imported, 0), "map import");
      check(cuMemSetAccess(va + gran, gran, &access, 1), "grant import");
      check(cuMemcpyDtoH(back, va + gran, COPY), "DtoH import");
      if (memcmp(src, back, COPY) != 0) ++failures;
      check(cuMemUnmap(va + gran, gran), "unmap import");
      check(cuMemRelease(imported), "release import");
    }
    close(fd);
  }

  /* A call through a function pointer, as CUDA runtimes make them. */
  void* fn = NULL;
  CUdriverProcAddressQueryResult found;
  if (check(cuGetProcAddress("cuMemsetD32", &fn, 12000, CU_GET_PROC_ADDRESS_DEFAULT, &found), "cuGetProcAddress") == CUDA_SUCCESS && fn) {
    CUresult (*memsetD32)(CUdeviceptr, unsigned int, size_t) = (CUresult (*)(CUdeviceptr, unsigned int, size_t))fn;
    check(memsetD32(plain, 0xdeadbeefu, COPY / 4), "cuMemsetD32 via pointer");
    uint32_t word = 0;
    check(cuMemcpyDtoH(&word, plain + COPY - 4, 4), "DtoH word");
    failures += word != 0xdeadbeefu;
  }

  /* Teardown. */
  check(cuMemFreeHost(pinned), "cuMemFreeHost");
  check(cuMemFree(plain), "cuMemFree");
  check(cuMemUnmap(va, gran), "cuMemUnmap");
  check(cuMemAddressFree(va, 2 * gran), "cuMemAddressFree");
  check(cuMemRelease(handle), "cuMemRelease");
  check(cuDevicePrimaryCtxRelease(dev), "cuDevicePrimaryCtxRelease");
  printf("vmm-copies: %s (%d failures)\n", failures == 0 ? "ok" : "FAILED", failures);
  return failures == 0 ? 0 : 1;
}
