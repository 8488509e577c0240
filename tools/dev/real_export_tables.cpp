// Asks a real libcuda.so.1 what docs/runtime.md says about its private tables, so that the facts
// mcsim's driver follows are checked against the real driver rather than taken on trust:
//   real_export_tables            (run on a machine with a real GPU and driver)
// It prints the driver version; for each table UUID the runtime asks for, cuGetExportTable's
// answer, the table's size slot and which slots are filled; the context-local storage answers
// for a missing key; whether the runtime-interface table retains the primary context; and the
// integrity check's value next to the HMAC-MD2 mcsim computes from the same inputs, with the
// thread read as pthread_self() and as gettid(). It calls no cuMulticast* function.
#include <cuda.h>
#include <dlfcn.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <ctime>
#include <vector>

#include "driver/runtime_integrity.h"

namespace {

struct Known {
  const char* name;
  uint8_t uuid[16];
};

const Known kKnown[] = {
    {"runtime interface", {0x6b, 0xd5, 0xfb, 0x6c, 0x5b, 0xf4, 0xe7, 0x4a, 0x89, 0x87, 0xd9, 0x39, 0x12, 0xfd, 0x9d, 0xf9}},
    {"tools callback hooks", {0xa0, 0x94, 0x79, 0x8c, 0x2e, 0x74, 0x2e, 0x74, 0x93, 0xf2, 0x08, 0x00, 0x20, 0x0c, 0x0a, 0x66}},
    {"tools TLS", {0x42, 0xd8, 0x5a, 0x81, 0x23, 0xf6, 0xcb, 0x47, 0x82, 0x98, 0xf6, 0xe7, 0x8a, 0x3a, 0xec, 0xdc}},
    {"context-local storage", {0xc6, 0x93, 0x33, 0x6e, 0x11, 0x21, 0xdf, 0x11, 0xa8, 0xc3, 0x68, 0xf3, 0x55, 0xd8, 0x95, 0x93}},
    {"context checks", {0x26, 0x3e, 0x88, 0x60, 0x7c, 0xd2, 0x61, 0x43, 0x92, 0xf6, 0xbb, 0xd5, 0x00, 0x6d, 0xfa, 0x7e}},
    {"integrity check", {0xd4, 0x08, 0x20, 0x55, 0xbd, 0xe6, 0x70, 0x4b, 0x8d, 0x34, 0xba, 0x12, 0x3c, 0x66, 0xe1, 0xf2}},
    {"ctx create bypass", {0x0c, 0xa5, 0x0b, 0x8c, 0x10, 0x04, 0x92, 0x9a, 0x89, 0xa7, 0xd0, 0xdf, 0x10, 0xe7, 0x72, 0x86}},
    {"heap access", {0x19, 0x5b, 0xcb, 0xf4, 0xd6, 0x7d, 0x02, 0x4a, 0xac, 0xc5, 0x1d, 0x29, 0xce, 0xa6, 0x31, 0xae}},
    {"device extended", {0xb1, 0x05, 0x41, 0xe1, 0xf7, 0xc7, 0xc7, 0x4a, 0x9f, 0x64, 0xf2, 0x23, 0xbe, 0x99, 0xf1, 0xe2}},
    {"asked first", {0xf8, 0xcf, 0xf9, 0x51, 0x21, 0x46, 0x8b, 0x4e, 0xb9, 0xe2, 0xfb, 0x46, 0x9e, 0x7c, 0x0d, 0xd9}},
    {"(made up)", {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}},
};

template <typename F>
F sym(void* lib, const char* name) {
  return reinterpret_cast<F>(dlsym(lib, name));
}

}  // namespace

int main() {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW);
  if (lib == nullptr) {
    std::printf("dlopen: %s\n", dlerror());
    return 1;
  }
  auto cuInit_ = sym<CUresult (*)(unsigned)>(lib, "cuInit");
  auto cuDriverGetVersion_ = sym<CUresult (*)(int*)>(lib, "cuDriverGetVersion");
  auto cuGetExportTable_ = sym<CUresult (*)(const void**, const CUuuid*)>(lib, "cuGetExportTable");
  auto cuDeviceGetCount_ = sym<CUresult (*)(int*)>(lib, "cuDeviceGetCount");
  auto cuDeviceGetUuid_ = sym<CUresult (*)(CUuuid*, CUdevice)>(lib, "cuDeviceGetUuid_v2");
  auto cuDeviceGetAttribute_ = sym<CUresult (*)(int*, CUdevice_attribute, CUdevice)>(lib, "cuDeviceGetAttribute");
  auto cuDevicePrimaryCtxGetState_ = sym<CUresult (*)(CUdevice, unsigned*, int*)>(lib, "cuDevicePrimaryCtxGetState");
  auto cuDevicePrimaryCtxRetain_ = sym<CUresult (*)(CUcontext*, CUdevice)>(lib, "cuDevicePrimaryCtxRetain");
  auto cuDevicePrimaryCtxReset_ = sym<CUresult (*)(CUdevice)>(lib, "cuDevicePrimaryCtxReset_v2");
  auto cuCtxSetCurrent_ = sym<CUresult (*)(CUcontext)>(lib, "cuCtxSetCurrent");
  int version = 0;
  const CUresult vr = cuDriverGetVersion_(&version);
  std::printf("cuDriverGetVersion %d %d\n", vr, version);
  // Before cuInit.
  const void* table = nullptr;
  std::printf("before-init cuGetExportTable(runtime interface) -> %d\n", cuGetExportTable_(&table, reinterpret_cast<const CUuuid*>(kKnown[0].uuid)));
  std::printf("cuInit %d\n", cuInit_(0));
  std::printf("cuGetExportTable(NULL table) -> %d\n", cuGetExportTable_(nullptr, reinterpret_cast<const CUuuid*>(kKnown[0].uuid)));
  std::printf("cuGetExportTable(NULL id) -> %d\n", cuGetExportTable_(&table, nullptr));
  const void* tables[sizeof kKnown / sizeof kKnown[0]] = {};
  for (size_t t = 0; t < sizeof kKnown / sizeof kKnown[0]; ++t) {
    const CUresult r = cuGetExportTable_(&tables[t], reinterpret_cast<const CUuuid*>(kKnown[t].uuid));
    std::printf("table %-22s -> %d", kKnown[t].name, r);
    if (r == CUDA_SUCCESS && tables[t] != nullptr) {
      const auto* slots = static_cast<const uintptr_t*>(tables[t]);
      std::printf(" slot0=%#lx slots:", static_cast<unsigned long>(slots[0]));
      const size_t n = (slots[0] > 0 && slots[0] <= 64 * 8 && slots[0] % 8 == 0) ? slots[0] / 8 : 6;
      for (size_t i = 1; i < n; ++i) std::printf(" %zu=%s", i, slots[i] != 0 ? "fn" : "null");
    }
    std::printf("\n");
  }
  // Context-local storage on a fresh primary context.
  CUcontext ctx = nullptr;
  using Put = CUresult (*)(CUcontext, void*, void*, void (*)(CUcontext, void*, void*));
  using Del = CUresult (*)(CUcontext, void*);
  using Get = CUresult (*)(void**, CUcontext, void*);
  const auto* cls = static_cast<void* const*>(tables[3]);
  void* value = nullptr;
  static int key1, key2;
  std::printf("cls get (no current ctx) -> %d\n", reinterpret_cast<Get>(cls[2])(&value, nullptr, &key1));
  std::printf("retain %d\n", cuDevicePrimaryCtxRetain_(&ctx, 0));
  std::printf("set current %d\n", cuCtxSetCurrent_(ctx));
  std::printf("cls get missing -> %d\n", reinterpret_cast<Get>(cls[2])(&value, nullptr, &key1));
  std::printf("cls delete missing -> %d\n", reinterpret_cast<Del>(cls[1])(nullptr, &key1));
  static int calls = 0;
  auto dtor = +[](CUcontext, void* k, void* v) { std::printf("  dtor key=%s value=%p\n", k == &key1 ? "key1" : "key2", v); ++calls; };
  std::printf("cls put -> %d\n", reinterpret_cast<Put>(cls[0])(nullptr, &key1, reinterpret_cast<void*>(0x1234), dtor));
  std::printf("cls put explicit ctx -> %d\n", reinterpret_cast<Put>(cls[0])(ctx, &key2, reinterpret_cast<void*>(0x5678), dtor));
  CUresult r = reinterpret_cast<Get>(cls[2])(&value, ctx, &key1);
  std::printf("cls get -> %d value=%p\n", r, value);
  std::printf("cls put again -> %d\n", reinterpret_cast<Put>(cls[0])(nullptr, &key1, reinterpret_cast<void*>(0x9999), dtor));
  r = reinterpret_cast<Get>(cls[2])(&value, ctx, &key1);
  std::printf("cls get -> %d value=%p\n", r, value);
  r = reinterpret_cast<Del>(cls[1])(ctx, &key2);
  std::printf("cls delete key2 -> %d (dtor calls %d)\n", r, calls);
  std::printf("cls put key2 -> %d\n", reinterpret_cast<Put>(cls[0])(nullptr, &key2, reinterpret_cast<void*>(0x5678), dtor));
  r = cuDevicePrimaryCtxReset_(0);
  std::printf("reset -> %d (dtor calls %d)\n", r, calls);
  std::printf("cls get after reset -> %d\n", reinterpret_cast<Get>(cls[2])(&value, ctx, &key1));
  // The runtime interface's primary context: retained or not?
  unsigned flags = 0;
  int active = -1;
  cuDevicePrimaryCtxGetState_(0, &flags, &active);
  std::printf("device 0 active before rt primary: %d\n", active);
  CUcontext rtCtx = nullptr;
  const auto* rti = static_cast<void* const*>(tables[0]);
  r = reinterpret_cast<CUresult (*)(CUcontext*, CUdevice)>(rti[2])(&rtCtx, 0);
  std::printf("rt primary -> %d same=%d\n", r, rtCtx == ctx);
  cuDevicePrimaryCtxGetState_(0, &flags, &active);
  std::printf("device 0 active after rt primary: %d\n", active);
  // Context checks.
  unsigned wrapped = 7;
  CUcontext inner = nullptr;
  const auto* chk = static_cast<void* const*>(tables[4]);
  r = reinterpret_cast<CUresult (*)(CUcontext, unsigned*, CUcontext*)>(chk[2])(ctx, &wrapped, &inner);
  std::printf("unwrap -> %d wrapped=%u\n", r, wrapped);
  std::printf("context checks slot 3 () -> %d\n", reinterpret_cast<int (*)()>(chk[3])());
  // Integrity: the real value against mcsim's hash of the same inputs.
  int count = 0;
  cuDeviceGetCount_(&count);
  std::vector<mcsim::driver::IntegrityDevice> devices;
  for (int d = 0; d < count; ++d) {
    mcsim::driver::IntegrityDevice dev{};
    cuDeviceGetUuid_(&dev.uuid, d);
    int v = 0;
    cuDeviceGetAttribute_(&v, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, d);
    dev.pciDomain = static_cast<uint32_t>(v);
    cuDeviceGetAttribute_(&v, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, d);
    dev.pciBus = static_cast<uint32_t>(v);
    cuDeviceGetAttribute_(&v, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, d);
    dev.pciDevice = static_cast<uint32_t>(v);
    devices.push_back(dev);
  }
  const auto* integ = static_cast<void* const*>(tables[5]);
  using Check = CUresult (*)(unsigned, unsigned long long, uint8_t*);
  const unsigned args[] = {13000, 13001, 13002, 12082};
  for (unsigned arg : args) {
    uint8_t real[16] = {};
    const unsigned long long ts = static_cast<unsigned long long>(time(nullptr));
    const CUresult r = reinterpret_cast<Check>(integ[1])(arg, ts, real);
    mcsim::driver::IntegrityInput in{};
    in.driverVersion = static_cast<uint32_t>(version);
    in.runtimeArgument = arg;
    in.processId = static_cast<uint32_t>(getpid());
    in.runtimeInterfaceTable = reinterpret_cast<uint64_t>(tables[0]);
    in.integrityTable = reinterpret_cast<uint64_t>(tables[5]);
    in.checkFunction = reinterpret_cast<uint64_t>(integ[1]);
    in.timestamp = ts;
    uint8_t self[16], tid[16];
    in.threadId = static_cast<uint32_t>(pthread_self());
    mcsim::driver::integrityHash(in, devices, self);
    in.threadId = static_cast<uint32_t>(syscall(SYS_gettid));
    mcsim::driver::integrityHash(in, devices, tid);
    std::printf("integrity arg=%u -> %d real=", arg, r);
    for (uint8_t b : real) std::printf("%02x", b);
    std::printf(" pthread_self:%s gettid:%s\n", std::memcmp(real, self, 16) == 0 ? "MATCH" : "differ",
                std::memcmp(real, tid, 16) == 0 ? "MATCH" : "differ");
  }
  return 0;
}
