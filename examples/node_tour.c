/*
 * node_tour: a first look at a multi-GPU node through the CUDA driver API.
 *
 * It lists the devices, gives every device a 64 MiB buffer made with the virtual memory
 * management calls, fills it, passes data around the ring of devices with peer copies, reads
 * everything back and checks every word, shows that two virtual addresses mapping one physical
 * allocation see the same bytes, and tears it all down.
 *
 * It uses only cuda.h, so the same binary runs on real GPUs and under mcsim
 * (`mcsim run -- node_tour`). It never touches multicast objects: on a shared machine a multicast
 * misstep can take every GPU of the host out of service, and a tour has no business risking it.
 *
 * Output is meant to be reproducible: no wall time and no host pointers. Device addresses are
 * printed because they are deterministic under mcsim (on a real GPU they may differ per run).
 */
#include <cuda.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Every driver call goes through CHECK: a failure names the call, the error and the line, then
 * ends the program, since nothing later in the tour makes sense after a failed setup step. */
#define CHECK(call)                                                                      \
  do {                                                                                   \
    const CUresult result_ = (call);                                                     \
    if (result_ != CUDA_SUCCESS) fail_call(#call, result_, __LINE__);                    \
  } while (0)

static void fail_call(const char* what, CUresult result, int line) {
  const char* name = NULL;
  if (cuGetErrorName(result, &name) != CUDA_SUCCESS || name == NULL) name = "unrecognised error";
  fprintf(stderr, "node_tour: line %d: %s returned %s (%d)\n", line, what, name, (int)result);
  printf("FAILED: %s returned %s\n", what, name);
  exit(1);
}

enum {
  kMaxDevices = 128,
  kBufferBytes = 64u << 20,           /* each device's buffer, before rounding to granularity */
  kStripeBytes = 1u << 20,            /* the pattern changes every stripe, so misplaced data shows */
  kAliasProbeWords = 1024,            /* words written through the second mapping */
};

/* Words differ by device and by stripe: a copy that lands at the wrong offset, or comes from the
 * wrong device, cannot go unnoticed. */
static uint32_t pattern_word(int device, size_t stripe) {
  return 0xD0000000u | ((uint32_t)device << 16) | (uint32_t)stripe;
}
static const uint32_t kPoison = 0xDEADBEEFu;  /* the inbox before the peer copy arrives */
static const uint32_t kAliasMarker = 0xA11A5000u;

/* One device's part of the tour. The buffer has two halves: "own" holds the device's pattern,
 * "inbox" receives the previous device's own half by peer copy. */
typedef struct {
  CUdevice device;
  CUcontext context;
  CUmemGenericAllocationHandle handle;
  size_t size;        /* the whole allocation, a multiple of the granularity */
  CUdeviceptr va;     /* first mapping */
  CUdeviceptr alias;  /* second mapping of the same allocation */
} DeviceBuffer;

static size_t round_up(size_t v, size_t to) { return (v + to - 1) / to * to; }

static void print_driver_and_devices(int count) {
  int version = 0;
  CHECK(cuDriverGetVersion(&version));
  printf("driver version %d.%d (%d), %d device%s\n\n", version / 1000, (version % 1000) / 10, version,
         count, count == 1 ? "" : "s");
  printf("dev  %-28s %5s %11s %4s %9s\n", "name", "SMs", "memory", "cc", "multicast");
  for (int i = 0; i < count; ++i) {
    CUdevice d;
    char name[256];
    size_t total = 0;
    int sms = 0, major = 0, minor = 0, multicast = 0;
    CHECK(cuDeviceGet(&d, i));
    CHECK(cuDeviceGetName(name, (int)sizeof name, d));
    CHECK(cuDeviceTotalMem(&total, d));
    CHECK(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, d));
    CHECK(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, d));
    CHECK(cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, d));
    CHECK(cuDeviceGetAttribute(&multicast, CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED, d));
    printf("%3d  %-28s %5d %7zu MiB %2d.%d %9s\n", i, name, sms, total >> 20, major, minor,
           multicast ? "yes" : "no");
  }
  printf("\n");
}

/* Physical memory on the device, mapped at `va`, readable and writable by the device itself and
 * by every peer that can reach it (peer copies of VMM memory need the peers' rights too). */
static void map_with_access(const DeviceBuffer* b, CUdeviceptr va, int count) {
  CUmemAccessDesc access[kMaxDevices];
  size_t n = 0;
  CHECK(cuMemMap(va, b->size, 0, b->handle, 0));
  for (int j = 0; j < count; ++j) {
    int reachable = (j == b->device);
    if (!reachable) CHECK(cuDeviceCanAccessPeer(&reachable, j, b->device));
    if (!reachable) continue;
    memset(&access[n], 0, sizeof access[n]);
    access[n].location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    access[n].location.id = j;
    access[n].flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    ++n;
  }
  CHECK(cuMemSetAccess(va, b->size, access, n));
}

static void create_buffer(DeviceBuffer* b, int device, int count) {
  CUmemAllocationProp prop;
  size_t granularity = 0;
  int vmm = 0, ordinal = -1;
  memset(b, 0, sizeof *b);
  CHECK(cuDeviceGet(&b->device, device));
  CHECK(cuDeviceGetAttribute(&vmm, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, b->device));
  if (!vmm) {
    printf("FAILED: device %d does not support virtual memory management\n", device);
    exit(1);
  }
  CHECK(cuDevicePrimaryCtxRetain(&b->context, b->device));
  CHECK(cuCtxSetCurrent(b->context));

  memset(&prop, 0, sizeof prop);
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = b->device;
  CHECK(cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
  /* Two equal halves, each a whole number of stripes. */
  b->size = round_up(kBufferBytes, 2 * (granularity > kStripeBytes ? granularity : kStripeBytes));
  CHECK(cuMemCreate(&b->handle, b->size, &prop, 0));
  CHECK(cuMemAddressReserve(&b->va, b->size, 0, 0, 0));
  map_with_access(b, b->va, count);
  CHECK(cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, b->va));
  printf("dev %d: %zu MiB at 0x%llx (granularity %zu %s), backed by device %d\n", device,
         b->size >> 20, (unsigned long long)b->va,
         granularity % (1u << 20) == 0 ? granularity >> 20 : granularity >> 10,
         granularity % (1u << 20) == 0 ? "MiB" : "KiB", ordinal);
}

static void fill_own_half(const DeviceBuffer* b) {
  const size_t half = b->size / 2;
  CHECK(cuCtxSetCurrent(b->context));
  for (size_t s = 0; s < half / kStripeBytes; ++s) {
    CHECK(cuMemsetD32(b->va + s * kStripeBytes, pattern_word(b->device, s), kStripeBytes / 4));
  }
  CHECK(cuMemsetD32(b->va + half, kPoison, half / 4));
}

/* Device i's own half goes to device (i+1)'s inbox; a lone device sends to itself. */
static void pass_to_next(const DeviceBuffer* from, const DeviceBuffer* to) {
  const size_t half = from->size / 2;
  if (from == to) {
    CHECK(cuCtxSetCurrent(from->context));
    CHECK(cuMemcpyDtoD(to->va + half, from->va, half));
  } else {
    CHECK(cuMemcpyPeer(to->va + half, to->context, from->va, from->context, half));
  }
  printf("dev %d -> dev %d: %zu MiB by %s\n", (int)from->device, (int)to->device, half >> 20,
         from == to ? "cuMemcpyDtoD" : "cuMemcpyPeer");
}

/* Counts the words of `words` that differ from what device `b` should hold, and describes the
 * first one. Returns the number of wrong words. */
static size_t verify_words(const DeviceBuffer* b, int sender, const uint32_t* words) {
  const size_t half_words = b->size / 2 / 4, stripe_words = kStripeBytes / 4;
  size_t wrong = 0;
  for (size_t w = 0; w < 2 * half_words; ++w) {
    const int inbox = w >= half_words;
    const size_t stripe = (w % half_words) / stripe_words;
    const uint32_t want = pattern_word(inbox ? sender : (int)b->device, stripe);
    if (words[w] == want) continue;
    if (wrong++ == 0) {
      printf("  dev %d: word %zu (%s half, stripe %zu) is 0x%08x, expected 0x%08x\n",
             (int)b->device, w, inbox ? "inbox" : "own", stripe, words[w], want);
    }
  }
  return wrong;
}

/* A second virtual range mapping the same allocation: what one mapping writes, the other reads. */
static int check_alias(DeviceBuffer* b, int count, uint32_t* first, uint32_t* second) {
  CHECK(cuCtxSetCurrent(b->context));
  CHECK(cuMemAddressReserve(&b->alias, b->size, 0, 0, 0));
  map_with_access(b, b->alias, count);
  CHECK(cuMemsetD32(b->alias, kAliasMarker | (uint32_t)b->device, kAliasProbeWords));
  CHECK(cuMemcpyDtoH(first, b->va, b->size));
  CHECK(cuMemcpyDtoH(second, b->alias, b->size));
  const int same = memcmp(first, second, b->size) == 0;
  const int marker_seen = first[0] == (kAliasMarker | (uint32_t)b->device) &&
                          first[kAliasProbeWords - 1] == first[0] &&
                          first[kAliasProbeWords] != first[0];
  printf("dev %d: alias at 0x%llx %s, write through alias %s through the first mapping\n",
         (int)b->device, (unsigned long long)b->alias, same ? "reads the same bytes" : "DIFFERS",
         marker_seen ? "is visible" : "is NOT visible");
  return same && marker_seen;
}

static void destroy_buffer(DeviceBuffer* b) {
  CHECK(cuCtxSetCurrent(b->context));
  if (b->alias != 0) {
    CHECK(cuMemUnmap(b->alias, b->size));
    CHECK(cuMemAddressFree(b->alias, b->size));
  }
  CHECK(cuMemUnmap(b->va, b->size));
  CHECK(cuMemAddressFree(b->va, b->size));
  CHECK(cuMemRelease(b->handle));
  CHECK(cuCtxSetCurrent(NULL));
  CHECK(cuDevicePrimaryCtxRelease(b->device));
}

int main(void) {
  static DeviceBuffer buffers[kMaxDevices];
  int count = 0, failures = 0;

  CHECK(cuInit(0));
  CHECK(cuDeviceGetCount(&count));
  if (count < 1 || count > kMaxDevices) {
    printf("FAILED: %d devices (the tour handles 1 to %d)\n", count, (int)kMaxDevices);
    return 1;
  }
  print_driver_and_devices(count);

  printf("== allocate (cuMemCreate, cuMemAddressReserve, cuMemMap, cuMemSetAccess)\n");
  for (int i = 0; i < count; ++i) create_buffer(&buffers[i], i, count);

  printf("\n== fill (cuMemsetD32, %u MiB stripes) and pass around the ring\n", kStripeBytes >> 20);
  for (int i = 0; i < count; ++i) fill_own_half(&buffers[i]);
  for (int i = 0; i < count; ++i) pass_to_next(&buffers[i], &buffers[(i + 1) % count]);

  printf("\n== read back (cuMemcpyDtoH) and check every word\n");
  size_t largest = 0;
  for (int i = 0; i < count; ++i) largest = buffers[i].size > largest ? buffers[i].size : largest;
  uint32_t* first = malloc(largest);
  uint32_t* second = malloc(largest);
  if (first == NULL || second == NULL) {
    printf("FAILED: no host memory for the read-back\n");
    return 1;
  }
  for (int i = 0; i < count; ++i) {
    const int sender = (i + count - 1) % count;
    CHECK(cuCtxSetCurrent(buffers[i].context));
    CHECK(cuMemcpyDtoH(first, buffers[i].va, buffers[i].size));
    const size_t wrong = verify_words(&buffers[i], sender, first);
    printf("dev %d: %zu words, own pattern and dev %d's pattern: %s\n", i, buffers[i].size / 4,
           sender, wrong == 0 ? "ok" : "WRONG");
    if (wrong != 0) {
      printf("  dev %d: %zu wrong words\n", i, wrong);
      ++failures;
    }
  }

  printf("\n== two mappings of one allocation\n");
  for (int i = 0; i < count; ++i) {
    if (!check_alias(&buffers[i], count, first, second)) ++failures;
  }
  free(first);
  free(second);

  printf("\n== tear down (cuMemUnmap, cuMemAddressFree, cuMemRelease, cuDevicePrimaryCtxRelease)\n");
  for (int i = 0; i < count; ++i) destroy_buffer(&buffers[i]);
  printf("released %d buffer%s and %d primary context%s\n\n", count, count == 1 ? "" : "s", count,
         count == 1 ? "" : "s");

  if (failures != 0) {
    printf("FAILED: %d check%s failed\n", failures, failures == 1 ? "" : "s");
    return 1;
  }
  printf("all checks passed\n");
  return 0;
}
