// The CUDA runtime's host API as multi-GPU programs use it, checked by behaviour. Built by nvcc
// (statically linked runtime by default, and again with -cudart shared); runs unchanged on
// mcsim's libcuda.so.1 and on a real GPU (docs/runtime.md). No device code: every check is about
// the driver's answers. Never calls a cuMulticast* function (it only resolves them).
#include <cuda.h>
#include <cuda_profiler_api.h>
#include <dlfcn.h>

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "tests/runtime/rt_check.h"

namespace {

int deviceCount() {
  int n = 0;
  RT_OK(cudaGetDeviceCount(&n));
  return n;
}

void devices() {
  const int n = deviceCount();
  RT_EXPECT(n >= 1, "%d devices", n);
  std::vector<cudaUUID_t> uuids;
  for (int d = 0; d < n; ++d) {
    cudaDeviceProp p;
    RT_OK(cudaGetDeviceProperties(&p, d));
    int v = 0;
    RT_OK(cudaDeviceGetAttribute(&v, cudaDevAttrMultiProcessorCount, d));
    RT_EXPECT(p.multiProcessorCount == v && v > 0, "SMs %d vs attribute %d", p.multiProcessorCount, v);
    RT_OK(cudaDeviceGetAttribute(&v, cudaDevAttrComputeCapabilityMajor, d));
    RT_EXPECT(p.major == v && p.major >= 7, "major %d vs %d", p.major, v);
    RT_OK(cudaDeviceGetAttribute(&v, cudaDevAttrPciBusId, d));
    RT_EXPECT(p.pciBusID == v, "bus %d vs %d", p.pciBusID, v);
    RT_OK(cudaDeviceGetAttribute(&v, cudaDevAttrMaxThreadsPerBlock, d));
    RT_EXPECT(p.maxThreadsPerBlock == v && v == 1024, "threads per block %d vs %d", p.maxThreadsPerBlock, v);
    RT_OK(cudaDeviceGetAttribute(&v, cudaDevAttrWarpSize, d));
    RT_EXPECT(p.warpSize == 32 && v == 32, "warp %d", p.warpSize);
    RT_EXPECT(p.totalGlobalMem > (size_t{1} << 30), "memory %zu", p.totalGlobalMem);
    RT_EXPECT(p.name[0] != '\0', "empty name");
    RT_EXPECT(p.unifiedAddressing == 1, "unified addressing %d", p.unifiedAddressing);
    RT_EXPECT(p.sharedMemPerBlock == 48 * 1024, "shared per block %zu", p.sharedMemPerBlock);
    for (const cudaUUID_t& u : uuids) RT_EXPECT(std::memcmp(&u, &p.uuid, sizeof u) != 0, "device %d repeats a UUID", d);
    uuids.push_back(p.uuid);
    // The runtime and the driver agree.
    CUdevice cu = 0;
    RT_EXPECT(cuDeviceGet(&cu, d) == CUDA_SUCCESS, "cuDeviceGet");
    size_t total = 0;
    RT_EXPECT(cuDeviceTotalMem(&total, cu) == CUDA_SUCCESS && total == p.totalGlobalMem, "total %zu vs %zu", total,
              p.totalGlobalMem);
  }
  cudaDeviceProp bad;
  RT_EXPECT(cudaGetDeviceProperties(&bad, n) == cudaErrorInvalidDevice, "device %d accepted", n);
  cudaGetLastError();
}

void setDeviceAcrossThreads() {
  const int n = deviceCount();
  RT_OK(cudaSetDevice(0));
  std::vector<std::thread> threads;
  std::vector<int> seen(static_cast<size_t>(n) * 2, -1);
  std::atomic<int> errors{0};
  for (int t = 0; t < 2 * n; ++t) {
    threads.emplace_back([t, n, &seen, &errors] {
      const int dev = t % n;
      void* p = nullptr;
      int current = -1;
      cudaPointerAttributes a{};
      if (cudaSetDevice(dev) != cudaSuccess || cudaMalloc(&p, 4096) != cudaSuccess ||
          cudaGetDevice(&current) != cudaSuccess || cudaPointerGetAttributes(&a, p) != cudaSuccess ||
          cudaFree(p) != cudaSuccess) {
        ++errors;
        return;
      }
      seen[static_cast<size_t>(t)] = (current == dev && a.device == dev && a.type == cudaMemoryTypeDevice) ? dev : -2;
    });
  }
  for (auto& th : threads) th.join();
  RT_EXPECT(errors == 0, "%d threads failed", errors.load());
  for (int t = 0; t < 2 * n; ++t) RT_EXPECT(seen[static_cast<size_t>(t)] == t % n, "thread %d saw %d", t, seen[static_cast<size_t>(t)]);
  int current = -1;
  RT_OK(cudaGetDevice(&current));
  RT_EXPECT(current == 0, "this thread's device moved to %d", current);
}

void mallocCopySet() {
  const size_t bytes = 1 << 20;
  std::vector<uint32_t> host(bytes / 4), back(bytes / 4, 0);
  for (size_t i = 0; i < host.size(); ++i) host[i] = static_cast<uint32_t>(i * 2654435761u);
  void *a = nullptr, *b = nullptr;
  RT_OK(cudaMalloc(&a, bytes));
  RT_OK(cudaMalloc(&b, bytes));
  RT_EXPECT(a != b && a != nullptr, "allocations");
  RT_OK(cudaMemcpy(a, host.data(), bytes, cudaMemcpyHostToDevice));
  RT_OK(cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice));
  RT_OK(cudaMemcpy(back.data(), b, bytes, cudaMemcpyDefault));
  RT_EXPECT(back == host, "round trip differs");
  RT_OK(cudaMemset(b, 0xab, bytes / 2));
  RT_OK(cudaMemcpy(back.data(), b, bytes, cudaMemcpyDeviceToHost));
  RT_EXPECT(back[0] == 0xababababu && back[bytes / 8 - 1] == 0xababababu && back[bytes / 8] == host[bytes / 8],
            "memset wrote %#x .. %#x, then %#x", back[0], back[bytes / 8 - 1], back[bytes / 8]);
  size_t freeBytes = 0, total = 0;
  RT_OK(cudaMemGetInfo(&freeBytes, &total));
  RT_EXPECT(freeBytes < total && total > bytes, "free %zu total %zu", freeBytes, total);
  RT_OK(cudaFree(a));
  RT_OK(cudaFree(b));
  RT_EXPECT(cudaFree(a) == cudaErrorInvalidValue, "double free accepted");
  cudaGetLastError();
}

void asyncStreamPinned() {
  cudaStream_t s;
  RT_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  const size_t bytes = 256 * 1024;
  uint8_t *h = nullptr, *h2 = nullptr;
  RT_OK(cudaMallocHost(reinterpret_cast<void**>(&h), bytes));
  RT_OK(cudaHostAlloc(reinterpret_cast<void**>(&h2), bytes, cudaHostAllocDefault));
  for (size_t i = 0; i < bytes; ++i) h[i] = static_cast<uint8_t>(i * 7);
  void* d = nullptr;
  RT_OK(cudaMallocAsync(&d, bytes, s));
  RT_OK(cudaMemcpyAsync(d, h, bytes, cudaMemcpyHostToDevice, s));
  RT_OK(cudaMemsetAsync(d, 0x5a, 16, s));
  RT_OK(cudaMemcpyAsync(h2, d, bytes, cudaMemcpyDeviceToHost, s));
  RT_OK(cudaFreeAsync(d, s));
  RT_OK(cudaStreamSynchronize(s));
  RT_OK(cudaStreamQuery(s));
  RT_EXPECT(h2[0] == 0x5a && h2[15] == 0x5a && h2[16] == h[16] && h2[bytes - 1] == h[bytes - 1], "copied %#x %#x",
            h2[0], h2[16]);
  cudaPointerAttributes a{};
  RT_OK(cudaPointerGetAttributes(&a, h));
  RT_EXPECT(a.type == cudaMemoryTypeHost, "pinned memory reads as type %d", a.type);
  RT_OK(cudaFreeHost(h));
  RT_OK(cudaFreeHost(h2));
  RT_OK(cudaStreamDestroy(s));
}

void eventsAndHostFunctions() {
  cudaStream_t s;
  RT_OK(cudaStreamCreate(&s));
  cudaEvent_t start, stop;
  RT_OK(cudaEventCreate(&start));
  RT_OK(cudaEventCreate(&stop));
  void* d = nullptr;
  const size_t bytes = 8 << 20;
  RT_OK(cudaMalloc(&d, bytes));
  static std::vector<int> order;
  order.clear();
  RT_OK(cudaEventRecord(start, s));
  RT_OK(cudaMemsetAsync(d, 1, bytes, s));
  RT_OK(cudaLaunchHostFunc(s, [](void* arg) { order.push_back(*static_cast<int*>(arg)); }, new int(1)));
  RT_OK(cudaStreamAddCallback(
      s, [](cudaStream_t, cudaError_t status, void* arg) { order.push_back(status == cudaSuccess ? *static_cast<int*>(arg) : -1); },
      new int(2), 0));
  RT_OK(cudaEventRecord(stop, s));
  RT_OK(cudaEventSynchronize(stop));
  RT_OK(cudaEventQuery(stop));
  RT_OK(cudaStreamSynchronize(s));
  RT_EXPECT(order.size() == 2 && order[0] == 1 && order[1] == 2, "host functions ran %zu times", order.size());
  float ms = -1;
  RT_OK(cudaEventElapsedTime(&ms, start, stop));
  RT_EXPECT(ms > 0 && ms < 1000, "elapsed %f ms for an 8 MiB memset", ms);
  // Another stream waits for an event.
  cudaStream_t t;
  RT_OK(cudaStreamCreateWithFlags(&t, cudaStreamNonBlocking));
  RT_OK(cudaStreamWaitEvent(t, stop, 0));
  RT_OK(cudaStreamSynchronize(t));
  RT_OK(cudaFree(d));
  RT_OK(cudaEventDestroy(start));
  RT_OK(cudaEventDestroy(stop));
  RT_OK(cudaStreamDestroy(s));
  RT_OK(cudaStreamDestroy(t));
}

void peerAccess() {
  const int n = deviceCount();
  if (n < 2) return;  // one GPU: nothing to check
  int can = 0;
  RT_OK(cudaDeviceCanAccessPeer(&can, 0, 1));
  RT_EXPECT(can == 1, "devices 0 and 1 are not peers");
  RT_OK(cudaSetDevice(0));
  RT_OK(cudaDeviceEnablePeerAccess(1, 0));
  RT_EXPECT(cudaDeviceEnablePeerAccess(1, 0) == cudaErrorPeerAccessAlreadyEnabled, "enabled twice");
  cudaGetLastError();
  void *a = nullptr, *b = nullptr;
  const size_t bytes = 1 << 16;
  RT_OK(cudaMalloc(&a, bytes));
  RT_OK(cudaSetDevice(1));
  RT_OK(cudaMalloc(&b, bytes));
  RT_OK(cudaMemset(b, 0, bytes));
  RT_OK(cudaSetDevice(0));
  std::vector<uint8_t> h(bytes), back(bytes);
  for (size_t i = 0; i < bytes; ++i) h[i] = static_cast<uint8_t>(i ^ 0x3c);
  RT_OK(cudaMemcpy(a, h.data(), bytes, cudaMemcpyHostToDevice));
  RT_OK(cudaMemcpyPeer(b, 1, a, 0, bytes / 2));
  RT_OK(cudaMemcpy(static_cast<uint8_t*>(b) + bytes / 2, static_cast<uint8_t*>(a) + bytes / 2, bytes / 2, cudaMemcpyDefault));
  RT_OK(cudaMemcpy(back.data(), b, bytes, cudaMemcpyDefault));
  RT_EXPECT(back == h, "peer copy differs");
  cudaPointerAttributes attr{};
  RT_OK(cudaPointerGetAttributes(&attr, b));
  RT_EXPECT(attr.device == 1, "device 1's memory reads as device %d", attr.device);
  RT_OK(cudaDeviceDisablePeerAccess(1));
  RT_OK(cudaFree(a));
  RT_OK(cudaFree(b));
}

void hostRegister() {
  const size_t bytes = 64 * 1024;
  void* raw = std::aligned_alloc(4096, bytes);
  auto* h = static_cast<uint8_t*>(raw);
  for (size_t i = 0; i < bytes; ++i) h[i] = static_cast<uint8_t>(i * 13);
  RT_OK(cudaHostRegister(raw, bytes, cudaHostRegisterDefault));
  unsigned flags = 99;
  RT_OK(cudaHostGetFlags(&flags, raw));
  void* dp = nullptr;
  RT_OK(cudaHostGetDevicePointer(&dp, raw, 0));
  RT_EXPECT(dp != nullptr, "no device pointer");
  void* d = nullptr;
  RT_OK(cudaMalloc(&d, bytes));
  cudaStream_t s;
  RT_OK(cudaStreamCreate(&s));
  RT_OK(cudaMemcpyAsync(d, raw, bytes, cudaMemcpyHostToDevice, s));
  RT_OK(cudaMemsetAsync(raw == nullptr ? nullptr : d, 0, 8, s));
  RT_OK(cudaMemcpyAsync(raw, d, bytes, cudaMemcpyDeviceToHost, s));
  RT_OK(cudaStreamSynchronize(s));
  RT_EXPECT(h[0] == 0 && h[7] == 0 && h[8] == static_cast<uint8_t>(8 * 13), "registered copy: %u %u", h[0], h[8]);
  cudaPointerAttributes a{};
  RT_OK(cudaPointerGetAttributes(&a, raw));
  RT_EXPECT(a.type == cudaMemoryTypeHost, "registered memory reads as type %d", a.type);
  RT_OK(cudaHostUnregister(raw));
  RT_EXPECT(cudaHostUnregister(raw) == cudaErrorHostMemoryNotRegistered, "unregistered twice");
  cudaGetLastError();
  RT_OK(cudaStreamDestroy(s));
  RT_OK(cudaFree(d));
  std::free(raw);
}

void copies2d() {
  const size_t width = 100, height = 37;
  void* d = nullptr;
  size_t pitch = 0;
  RT_OK(cudaMallocPitch(&d, &pitch, width, height));
  RT_EXPECT(pitch >= width && pitch % 128 == 0, "pitch %zu", pitch);
  std::vector<uint8_t> h(width * height), back(width * height, 0);
  for (size_t i = 0; i < h.size(); ++i) h[i] = static_cast<uint8_t>(i * 31 + 7);
  RT_OK(cudaMemset2D(d, pitch, 0xee, pitch, height));
  RT_OK(cudaMemcpy2D(d, pitch, h.data(), width, width, height, cudaMemcpyHostToDevice));
  RT_OK(cudaMemcpy2D(back.data(), width, d, pitch, width, height, cudaMemcpyDeviceToHost));
  RT_EXPECT(back == h, "2D round trip differs");
  // The padding past `width` kept the memset's value.
  uint8_t pad = 0;
  RT_OK(cudaMemcpy(&pad, static_cast<uint8_t*>(d) + pitch * 5 + width, 1, cudaMemcpyDeviceToHost));
  RT_EXPECT(pad == 0xee, "padding %#x", pad);
  RT_OK(cudaFree(d));
}

// cudaMalloc3D's pitched memory, cudaMemcpy3D into a box of it and back.
void copies3d() {
  const size_t width = 100, height = 7, depth = 5;
  cudaPitchedPtr d;
  RT_OK(cudaMalloc3D(&d, make_cudaExtent(width, height, depth)));
  RT_EXPECT(d.pitch >= width && d.xsize == width && d.ysize == height, "pitch %zu, %zu x %zu", d.pitch, d.xsize, d.ysize);
  RT_OK(cudaMemset(d.ptr, 0xee, d.pitch * height * depth));
  std::vector<uint8_t> h(width * height * depth), back(h.size(), 0);
  for (size_t i = 0; i < h.size(); ++i) h[i] = static_cast<uint8_t>(i * 13 + 5);
  cudaMemcpy3DParms up = {};
  up.srcPtr = make_cudaPitchedPtr(h.data(), width, width, height);
  up.dstPtr = d;
  up.extent = make_cudaExtent(width, height, depth);
  up.kind = cudaMemcpyHostToDevice;
  RT_OK(cudaMemcpy3D(&up));
  cudaMemcpy3DParms down = {};
  down.srcPtr = d;
  down.dstPtr = make_cudaPitchedPtr(back.data(), width, width, height);
  down.extent = up.extent;
  down.kind = cudaMemcpyDeviceToHost;
  RT_OK(cudaMemcpy3DAsync(&down, nullptr));
  RT_OK(cudaStreamSynchronize(nullptr));
  RT_EXPECT(back == h, "3D round trip differs");
  // The row padding kept the memset's value.
  uint8_t pad = 0;
  RT_OK(cudaMemcpy(&pad, static_cast<uint8_t*>(d.ptr) + d.pitch * (height * 2 + 3) + width, 1, cudaMemcpyDeviceToHost));
  RT_EXPECT(pad == 0xee, "padding %#x", pad);
  RT_OK(cudaFree(d.ptr));
}

// Without a profiler attached, starting and stopping one succeeds and does nothing.
void profiler() {
  RT_OK(cudaProfilerStart());
  RT_OK(cudaProfilerStop());
}

void pciBusIds() {
  const int n = deviceCount();
  for (int d = 0; d < n; ++d) {
    char id[32] = {};
    RT_OK(cudaDeviceGetPCIBusId(id, sizeof id, d));
    int back = -1;
    RT_OK(cudaDeviceGetByPCIBusId(&back, id));
    RT_EXPECT(back == d, "%s names device %d, not %d", id, back, d);
  }
}

void limits() {
  size_t stack = 0;
  RT_OK(cudaDeviceGetLimit(&stack, cudaLimitStackSize));
  RT_EXPECT(stack > 0, "stack size 0");
  RT_OK(cudaDeviceSetLimit(cudaLimitStackSize, 4096));
  RT_OK(cudaDeviceGetLimit(&stack, cudaLimitStackSize));
  RT_EXPECT(stack == 4096, "stack size %zu after setting 4096", stack);
  size_t heap = 0;
  RT_OK(cudaDeviceGetLimit(&heap, cudaLimitMallocHeapSize));
  RT_EXPECT(heap > 0, "heap 0");
}

void driverEntryPoints() {
  const char* names[] = {"cuMulticastCreate", "cuMulticastAddDevice", "cuMulticastBindMem", "cuMulticastBindAddr",
                         "cuMulticastUnbind", "cuMulticastGetGranularity", "cuMemCreate", "cuMemMap"};
  for (const char* name : names) {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
    RT_OK(cudaGetDriverEntryPointByVersion(name, &fn, 12010, cudaEnableDefault, &q));
    RT_EXPECT(fn != nullptr && q == cudaDriverEntryPointSuccess, "%s: %p status %d", name, fn, q);
  }
  void* fn = reinterpret_cast<void*>(1);
  cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSuccess;
  RT_OK(cudaGetDriverEntryPointByVersion("cuNoSuchFunction", &fn, 12000, cudaEnableDefault, &q));
  RT_EXPECT(fn == nullptr && q == cudaDriverEntryPointSymbolNotFound, "made-up name: %p status %d", fn, q);
  // A driver function the runtime hands out is the one the driver exports.
  void* alloc = nullptr;
  RT_OK(cudaGetDriverEntryPointByVersion("cuMemAlloc", &alloc, 12000, cudaEnableDefault, &q));
  CUdeviceptr p = 0;
  RT_EXPECT(reinterpret_cast<CUresult (*)(CUdeviceptr*, size_t)>(alloc)(&p, 4096) == CUDA_SUCCESS && p != 0, "cuMemAlloc");
  RT_OK(cudaFree(reinterpret_cast<void*>(p)));
}

// No stream is capturing (mcsim models no graphs; on a real GPU nothing here begins a capture),
// and the thread's capture mode is kept as exchanged.
void streamCaptureQueries() {
  cudaStream_t s;
  RT_OK(cudaStreamCreate(&s));
  cudaStreamCaptureStatus st = cudaStreamCaptureStatusActive;
  RT_OK(cudaStreamIsCapturing(s, &st));
  RT_EXPECT(st == cudaStreamCaptureStatusNone, "status %d", st);
  st = cudaStreamCaptureStatusActive;
  RT_OK(cudaStreamIsCapturing(nullptr, &st));
  RT_EXPECT(st == cudaStreamCaptureStatusNone, "legacy stream status %d", st);
  st = cudaStreamCaptureStatusActive;
  unsigned long long id = 0;
  RT_OK(cudaStreamGetCaptureInfo(s, &st, &id));
  RT_EXPECT(st == cudaStreamCaptureStatusNone, "capture info status %d", st);
  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  RT_OK(cudaThreadExchangeStreamCaptureMode(&mode));
  RT_EXPECT(mode == cudaStreamCaptureModeGlobal, "the default mode is %d", mode);
  RT_OK(cudaThreadExchangeStreamCaptureMode(&mode));
  RT_EXPECT(mode == cudaStreamCaptureModeRelaxed, "the mode set was %d", mode);
  RT_OK(cudaStreamDestroy(s));
}

void deviceReset() {
  RT_OK(cudaSetDevice(0));
  void* d = nullptr;
  RT_OK(cudaMalloc(&d, 4096));
  cudaStream_t s;
  RT_OK(cudaStreamCreate(&s));
  RT_OK(cudaDeviceReset());
  // The device works again after a reset, with a fresh primary context.
  void* e = nullptr;
  RT_OK(cudaMalloc(&e, 4096));
  RT_OK(cudaMemset(e, 0, 4096));
  RT_OK(cudaDeviceSynchronize());
  RT_OK(cudaFree(e));
  RT_OK(cudaDeviceReset());
}

// A second runtime in the process (a library that embeds its own, here the shared libcudart
// beside the program's static one) works on the same devices and contexts.
void secondRuntime() {
  void* lib = dlopen("libcudart.so.13", RTLD_NOW | RTLD_LOCAL);
  RT_EXPECT(lib != nullptr, "dlopen libcudart.so.13: %s", dlerror());
  auto count = reinterpret_cast<cudaError_t (*)(int*)>(dlsym(lib, "cudaGetDeviceCount"));
  auto alloc = reinterpret_cast<cudaError_t (*)(void**, size_t)>(dlsym(lib, "cudaMalloc"));
  auto release = reinterpret_cast<cudaError_t (*)(void*)>(dlsym(lib, "cudaFree"));
  RT_EXPECT(count != nullptr && alloc != nullptr && release != nullptr, "symbols");
  int n = -1;
  RT_OK(count(&n));
  RT_EXPECT(n == deviceCount(), "the second runtime sees %d devices, the first %d", n, deviceCount());
  void* p = nullptr;
  RT_OK(alloc(&p, 1 << 16));
  std::vector<uint8_t> h(1 << 16, 0x77), back(1 << 16, 0);
  RT_OK(cudaMemcpy(p, h.data(), h.size(), cudaMemcpyHostToDevice));  // the first runtime uses it
  RT_OK(cudaMemcpy(back.data(), p, back.size(), cudaMemcpyDeviceToHost));
  RT_EXPECT(back == h, "memory of one runtime differs through the other");
  RT_OK(release(p));
  dlclose(lib);
}

// Leaves device memory, pinned memory and a stream behind, for the leak report at exit (run only
// when named: runtime.leak_report.*). On a real GPU it just ends.
void leavesBehind() {
  RT_OK(cudaSetDevice(1));
  void* d = nullptr;
  void* h = nullptr;
  cudaStream_t s;
  RT_OK(cudaMalloc(&d, 1 << 20));
  RT_OK(cudaMallocHost(&h, 4096));
  RT_OK(cudaStreamCreate(&s));
}

const rtcheck::Case kCases[] = {
    {"devices", devices},
    {"set_device_threads", setDeviceAcrossThreads},
    {"malloc_copy_set", mallocCopySet},
    {"async_stream_pinned", asyncStreamPinned},
    {"events_host_functions", eventsAndHostFunctions},
    {"peer_access", peerAccess},
    {"host_register", hostRegister},
    {"copies_2d", copies2d},
    {"copies_3d", copies3d},
    {"profiler", profiler},
    {"pci_bus_ids", pciBusIds},
    {"limits", limits},
    {"driver_entry_points", driverEntryPoints},
    {"second_runtime", secondRuntime},
    {"stream_capture_queries", streamCaptureQueries},
    {"device_reset", deviceReset},
    {"leaves_behind", leavesBehind, true},
};

}  // namespace

int main(int argc, char** argv) { return rtcheck::runCases(kCases, sizeof kCases / sizeof kCases[0], argc, argv); }
