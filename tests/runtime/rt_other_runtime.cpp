// A CUDA runtime of another version than the toolkit's (a libcudart.so.N given on the command
// line, loaded with dlopen), on mcsim's libcuda.so.1: the host API a program built with that
// toolkit calls, each case checked by behaviour (docs/runtime.md, "Runtimes of other versions").
// Built by the host compiler: only the functions whose signature is the same in CUDA 11.x, 12.x
// and 13.x are called, through pointers typed here, so that no header of another toolkit is
// needed. No kernels (a kernel comes with the fat binary of the toolkit that compiled it).
//   rt_other_runtime LIBCUDART [CASE...]
#include <dlfcn.h>

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

void* gLib = nullptr;
int gFailed = 0;

template <typename F>
F fn(const char* name) {
  void* p = dlsym(gLib, name);
  if (p == nullptr) {
    std::printf("FAIL: %s is not in the runtime\n", name);
    std::exit(1);
  }
  return reinterpret_cast<F>(p);
}

// cudaError_t and the enumerations are ints; their values are the same in every version used.
constexpr int kSuccess = 0, kInvalidValue = 1;
constexpr int kHostToDevice = 1, kDeviceToHost = 2, kDeviceToDevice = 3, kDefault = 4;
constexpr int kAttrMaxThreadsPerBlock = 1, kAttrWarpSize = 10, kAttrMultiProcessorCount = 16;
constexpr int kStreamNonBlocking = 1;
constexpr int kCaptureModeGlobal = 0;

const char* errorName(int e) { return fn<const char* (*)(int)>("cudaGetErrorName")(e); }

struct Check {
  explicit Check(const char* name) : what(name) {}
  Check(const Check&) = delete;
  Check& operator=(const Check&) = delete;
  const char* what;
  bool ok = true;
  std::string why;
  void call(int e, const char* expr) {
    if (ok && e != kSuccess) {
      ok = false;
      why = std::string(expr) + " -> " + errorName(e);
    }
  }
  void expect(bool cond, const std::string& text) {
    if (ok && !cond) {
      ok = false;
      why = text;
    }
  }
  ~Check() {
    if (ok) {
      std::printf("ok %s\n", what);
    } else {
      std::printf("FAIL %s: %s\n", what, why.c_str());
      ++gFailed;
    }
  }
};
#define CALL(c, expr) (c).call((expr), #expr)

int deviceCount() {
  int n = 0;
  fn<int (*)(int*)>("cudaGetDeviceCount")(&n);
  return n;
}

void versions() {
  Check c{"versions"};
  int runtime = 0, driver = 0;
  CALL(c, fn<int (*)(int*)>("cudaRuntimeGetVersion")(&runtime));
  CALL(c, fn<int (*)(int*)>("cudaDriverGetVersion")(&driver));
  c.expect(runtime > 0 && driver >= runtime, "runtime " + std::to_string(runtime) + ", driver " + std::to_string(driver));
  std::printf("  runtime %d, driver %d, %d devices\n", runtime, driver, deviceCount());
}

// The properties whose place in cudaDeviceProp has not moved since CUDA 10 (name, memory, block
// limits), against the attributes.
void properties() {
  Check c{"properties"};
  // CUDA 12 renamed the symbol (cudaGetDeviceProperties_v2); 11 has the plain one.
  void* p = dlsym(gLib, "cudaGetDeviceProperties_v2");
  if (p == nullptr) p = dlsym(gLib, "cudaGetDeviceProperties");
  auto props = reinterpret_cast<int (*)(void*, int)>(p);
  auto attr = fn<int (*)(int*, int, int)>("cudaDeviceGetAttribute");
  for (int d = 0; d < deviceCount() && c.ok; ++d) {
    alignas(8) unsigned char buf[4096] = {};  // larger than any version's cudaDeviceProp
    CALL(c, props(buf, d));
    const char* name = reinterpret_cast<const char*>(buf);
    size_t total = 0;
    int warp = 0, threads = 0;
    std::memcpy(&total, buf + 288, sizeof total);                        // totalGlobalMem
    std::memcpy(&warp, buf + 288 + 8 + 8 + 4, sizeof warp);             // warpSize
    std::memcpy(&threads, buf + 288 + 8 + 8 + 4 + 4 + 8, sizeof threads);  // maxThreadsPerBlock
    int v = 0;
    CALL(c, attr(&v, kAttrWarpSize, d));
    c.expect(warp == 32 && v == 32, "warp size " + std::to_string(warp));
    CALL(c, attr(&v, kAttrMaxThreadsPerBlock, d));
    c.expect(threads == v && v == 1024, "threads per block " + std::to_string(threads) + " vs " + std::to_string(v));
    CALL(c, attr(&v, kAttrMultiProcessorCount, d));
    c.expect(v > 0, "no SMs");
    c.expect(name[0] != '\0' && total > (size_t{1} << 30), std::string("name '") + name + "', memory " + std::to_string(total));
  }
}

void memoryAndCopies() {
  Check c{"memory_copies"};
  auto setDevice = fn<int (*)(int)>("cudaSetDevice");
  auto mallocFn = fn<int (*)(void**, size_t)>("cudaMalloc");
  auto freeFn = fn<int (*)(void*)>("cudaFree");
  auto memcpyFn = fn<int (*)(void*, const void*, size_t, int)>("cudaMemcpy");
  auto memsetFn = fn<int (*)(void*, int, size_t)>("cudaMemset");
  const size_t bytes = 1 << 20;
  std::vector<uint8_t> h(bytes), back(bytes);
  for (size_t i = 0; i < bytes; ++i) h[i] = static_cast<uint8_t>(i * 11 + 5);
  for (int d = 0; d < deviceCount() && c.ok; ++d) {
    CALL(c, setDevice(d));
    void *a = nullptr, *b = nullptr;
    CALL(c, mallocFn(&a, bytes));
    CALL(c, mallocFn(&b, bytes));
    CALL(c, memcpyFn(a, h.data(), bytes, kHostToDevice));
    CALL(c, memcpyFn(b, a, bytes, kDeviceToDevice));
    CALL(c, memsetFn(b, 0x7e, 64));
    CALL(c, memcpyFn(back.data(), b, bytes, kDeviceToHost));
    c.expect(back[0] == 0x7e && back[63] == 0x7e && back[64] == h[64] && back[bytes - 1] == h[bytes - 1],
             "device " + std::to_string(d) + ": the copies differ");
    CALL(c, freeFn(a));
    CALL(c, freeFn(b));
    c.expect(freeFn(a) == kInvalidValue, "a double free accepted");
    fn<int (*)()>("cudaGetLastError")();
  }
  CALL(c, setDevice(0));
}

void streamsEvents() {
  Check c{"streams_events"};
  void *stream = nullptr, *start = nullptr, *stop = nullptr;
  CALL(c, fn<int (*)(void**, unsigned)>("cudaStreamCreateWithFlags")(&stream, kStreamNonBlocking));
  auto eventCreate = fn<int (*)(void**)>("cudaEventCreate");
  CALL(c, eventCreate(&start));
  CALL(c, eventCreate(&stop));
  const size_t bytes = 4 << 20;
  void *pinned = nullptr, *d = nullptr;
  CALL(c, fn<int (*)(void**, size_t)>("cudaMallocHost")(&pinned, bytes));
  // Stream-ordered allocation (CUDA 11.2 and later).
  CALL(c, fn<int (*)(void**, size_t, void*)>("cudaMallocAsync")(&d, bytes, stream));
  std::memset(pinned, 0x31, bytes);
  auto record = fn<int (*)(void*, void*)>("cudaEventRecord");
  auto copyAsync = fn<int (*)(void*, const void*, size_t, int, void*)>("cudaMemcpyAsync");
  CALL(c, record(start, stream));
  CALL(c, copyAsync(d, pinned, bytes, kHostToDevice, stream));
  CALL(c, fn<int (*)(void*, int, size_t, void*)>("cudaMemsetAsync")(d, 0x42, 16, stream));
  CALL(c, copyAsync(pinned, d, bytes, kDeviceToHost, stream));
  static int hostCalls = 0;
  hostCalls = 0;
  CALL(c, fn<int (*)(void*, void (*)(void*), void*)>("cudaLaunchHostFunc")(stream, [](void*) { ++hostCalls; }, nullptr));
  CALL(c, fn<int (*)(void*, void*)>("cudaFreeAsync")(d, stream));
  CALL(c, record(stop, stream));
  CALL(c, fn<int (*)(void*)>("cudaEventSynchronize")(stop));
  float ms = -1;
  CALL(c, fn<int (*)(float*, void*, void*)>("cudaEventElapsedTime")(&ms, start, stop));
  CALL(c, fn<int (*)(void*)>("cudaStreamSynchronize")(stream));
  const auto* p = static_cast<const uint8_t*>(pinned);
  c.expect(p[0] == 0x42 && p[15] == 0x42 && p[16] == 0x31 && p[bytes - 1] == 0x31, "the stream's copies differ");
  c.expect(hostCalls == 1, "the host function ran " + std::to_string(hostCalls) + " times");
  c.expect(ms > 0 && ms < 1000, "elapsed " + std::to_string(ms) + " ms");
  CALL(c, fn<int (*)(void*)>("cudaFreeHost")(pinned));
  CALL(c, fn<int (*)(void*)>("cudaEventDestroy")(start));
  CALL(c, fn<int (*)(void*)>("cudaEventDestroy")(stop));
  CALL(c, fn<int (*)(void*)>("cudaStreamDestroy")(stream));
}

void peerCopies() {
  Check c{"peer_copies"};
  if (deviceCount() < 2) return;
  int can = 0;
  CALL(c, fn<int (*)(int*, int, int)>("cudaDeviceCanAccessPeer")(&can, 0, 1));
  c.expect(can == 1, "devices 0 and 1 are not peers");
  auto setDevice = fn<int (*)(int)>("cudaSetDevice");
  auto mallocFn = fn<int (*)(void**, size_t)>("cudaMalloc");
  auto memcpyFn = fn<int (*)(void*, const void*, size_t, int)>("cudaMemcpy");
  const size_t bytes = 1 << 16;
  std::vector<uint8_t> h(bytes, 0x5c), back(bytes, 0);
  void *a = nullptr, *b = nullptr;
  CALL(c, setDevice(0));
  CALL(c, mallocFn(&a, bytes));
  CALL(c, memcpyFn(a, h.data(), bytes, kHostToDevice));
  CALL(c, setDevice(1));
  CALL(c, mallocFn(&b, bytes));
  CALL(c, fn<int (*)(void*, int, const void*, int, size_t)>("cudaMemcpyPeer")(b, 1, a, 0, bytes));
  CALL(c, memcpyFn(back.data(), b, bytes, kDefault));
  c.expect(back == h, "the peer copy differs");
  CALL(c, fn<int (*)(void*)>("cudaFree")(b));
  CALL(c, setDevice(0));
  CALL(c, fn<int (*)(void*)>("cudaFree")(a));
}

// Stream capture of a memset and a copy, instantiated (cudaGraphInstantiateWithFlags, the form
// whose signature every version since 11.4 shares) and launched twice.
void graphs() {
  Check c{"graphs"};
  void *stream = nullptr, *graph = nullptr, *exec = nullptr, *d = nullptr;
  CALL(c, fn<int (*)(void**, unsigned)>("cudaStreamCreateWithFlags")(&stream, kStreamNonBlocking));
  CALL(c, fn<int (*)(void**, size_t)>("cudaMalloc")(&d, 4096));
  std::vector<uint8_t> out(4096, 0);
  CALL(c, fn<int (*)(void*, int)>("cudaStreamBeginCapture")(stream, kCaptureModeGlobal));
  CALL(c, fn<int (*)(void*, int, size_t, void*)>("cudaMemsetAsync")(d, 0x66, 4096, stream));
  CALL(c, fn<int (*)(void*, const void*, size_t, int, void*)>("cudaMemcpyAsync")(out.data(), d, 4096, kDeviceToHost, stream));
  CALL(c, fn<int (*)(void*, void**)>("cudaStreamEndCapture")(stream, &graph));
  size_t nodes = 0;
  CALL(c, fn<int (*)(void*, void**, size_t*)>("cudaGraphGetNodes")(graph, nullptr, &nodes));
  c.expect(nodes == 2, std::to_string(nodes) + " nodes captured");
  c.expect(out[0] == 0, "the capture ran its work");
  CALL(c, fn<int (*)(void**, void*, unsigned long long)>("cudaGraphInstantiateWithFlags")(&exec, graph, 0));
  for (int i = 0; i < 2; ++i) {
    std::fill(out.begin(), out.end(), 0);
    CALL(c, fn<int (*)(void*, void*)>("cudaGraphLaunch")(exec, stream));
    CALL(c, fn<int (*)(void*)>("cudaStreamSynchronize")(stream));
    c.expect(out[0] == 0x66 && out[4095] == 0x66, "launch " + std::to_string(i) + " did not copy");
  }
  CALL(c, fn<int (*)(void*)>("cudaGraphExecDestroy")(exec));
  CALL(c, fn<int (*)(void*)>("cudaGraphDestroy")(graph));
  CALL(c, fn<int (*)(void*)>("cudaFree")(d));
  CALL(c, fn<int (*)(void*)>("cudaStreamDestroy")(stream));
}

// cudaGetDriverEntryPoint (CUDA 11.3 and later; CUDA 12 added a last argument, which an older
// runtime ignores) hands out the driver's function.
void driverEntryPoint() {
  Check c{"driver_entry_point"};
  void* alloc = nullptr;
  CALL(c, fn<int (*)(const char*, void**, unsigned long long, void*)>("cudaGetDriverEntryPoint")("cuMemAlloc", &alloc, 0, nullptr));
  c.expect(alloc != nullptr, "cuMemAlloc not found");
  if (!c.ok) return;
  unsigned long long p = 0;
  c.expect(reinterpret_cast<int (*)(unsigned long long*, size_t)>(alloc)(&p, 4096) == 0 && p != 0, "cuMemAlloc failed");
  CALL(c, fn<int (*)(void*)>("cudaFree")(reinterpret_cast<void*>(p)));
}

void deviceReset() {
  Check c{"device_reset"};
  void* d = nullptr;
  CALL(c, fn<int (*)(void**, size_t)>("cudaMalloc")(&d, 4096));
  CALL(c, fn<int (*)()>("cudaDeviceReset")());
  CALL(c, fn<int (*)(void**, size_t)>("cudaMalloc")(&d, 4096));
  CALL(c, fn<int (*)(void*, int, size_t)>("cudaMemset")(d, 0, 4096));
  CALL(c, fn<int (*)()>("cudaDeviceSynchronize")());
  CALL(c, fn<int (*)(void*)>("cudaFree")(d));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::printf("usage: rt_other_runtime LIBCUDART [CASE...]\n");
    return 2;
  }
  gLib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (gLib == nullptr) {
    std::printf("FAIL: dlopen %s: %s\n", argv[1], dlerror());
    return 1;
  }
  const struct {
    const char* name;
    void (*run)();
  } cases[] = {{"versions", versions},     {"properties", properties}, {"memory_copies", memoryAndCopies},
               {"streams_events", streamsEvents}, {"peer_copies", peerCopies}, {"graphs", graphs},
               {"driver_entry_point", driverEntryPoint}, {"device_reset", deviceReset}};
  for (const auto& k : cases) {
    bool selected = argc == 2;
    for (int a = 2; a < argc; ++a) selected = selected || std::strcmp(argv[a], k.name) == 0;
    if (selected) k.run();
  }
  return gFailed == 0 ? 0 : 1;
}
