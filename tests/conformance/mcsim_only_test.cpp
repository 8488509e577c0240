// mcsim-only tests: the calls the real driver crashes on (garbage handles, streams and contexts,
// NULL outputs), which mcsim answers with an error, and mcsim's own promises: a failing call
// changes nothing, and the default node is an 8-GPU H100 NVSwitch machine. Built only against
// mcsim (not listed in the real build's sources).
#ifndef MCSIM_CONFORMANCE_REAL

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "mcsim/api.h"
#include "tests/conformance/conformance.h"

namespace {

const auto kGarbageHandle = CUmemGenericAllocationHandle{0x1234};
const auto kGarbageStream = reinterpret_cast<CUstream>(uintptr_t{0x1234});
const auto kGarbageContext = reinterpret_cast<CUcontext>(uintptr_t{0x1234});

class McsimOnly : public conformance::DriverTest {};

// The real driver segfaults on each of these (probe: null.release_garbage, null.map_garbage_handle,
// null.props_garbage_handle, null.map_released_handle, null.export_released_handle).
TEST_F(McsimOnly, GarbageAndReleasedHandlesAreInvalidValue) {
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemRelease(kGarbageHandle));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemRelease(~0ull));
  CUdeviceptr R = 0;
  ASSERT_OK(cuMemAddressReserve(&R, 2 * gran, 0, 0, 0));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemMap(R, gran, 0, kGarbageHandle, 0));
  CUmemAllocationProp p;
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemGetAllocationPropertiesFromHandle(&p, kGarbageHandle));
  CUmemAllocationProp posix = devicePinned(0, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  CUmemGenericAllocationHandle h = 0;
  ASSERT_OK(cuMemCreate(&h, gran, &posix, 0));
  ASSERT_OK(cuMemRelease(h));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemMap(R, gran, 0, h, 0));
  int fd = -7;
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemExportToShareableHandle(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
  EXPECT_EQ(-7, fd);
  // The real driver reads a freed object here (probe: null.props_released_handle); mcsim refuses.
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemGetAllocationPropertiesFromHandle(&p, h));
  EXPECT_CU(CUDA_SUCCESS, cuMemAddressFree(R, 2 * gran));
}

// The real driver segfaults on a garbage stream (probe: fault.htodasync_badstream).
TEST_F(McsimOnly, GarbageStreamsAreInvalidHandle) {
  CUdeviceptr d = 0;
  ASSERT_OK(cuMemAlloc(&d, 1 << 20));
  unsigned char hb[64] = {};
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuMemcpyHtoDAsync(d, hb, 64, kGarbageStream));
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuMemcpyDtoHAsync(hb, d, 64, kGarbageStream));
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuMemsetD8Async(d, 0, 64, kGarbageStream));
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuStreamSynchronize(kGarbageStream));
  EXPECT_CU(CUDA_SUCCESS, cuCtxSynchronize());
  EXPECT_CU(CUDA_SUCCESS, cuMemFree(d));
}

// A pointer that is no context is recognised as such, never dereferenced.
TEST_F(McsimOnly, GarbageContextsAreInvalidContext) {
  EXPECT_CU(CUDA_ERROR_INVALID_CONTEXT, cuCtxSetCurrent(kGarbageContext));
  EXPECT_CU(CUDA_ERROR_INVALID_CONTEXT, cuCtxPushCurrent(kGarbageContext));
  EXPECT_CU(CUDA_ERROR_INVALID_CONTEXT, cuCtxDestroy(kGarbageContext));
  unsigned v = 0;
  EXPECT_CU(CUDA_ERROR_INVALID_CONTEXT, cuCtxGetApiVersion(kGarbageContext, &v));
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuCtxEnablePeerAccess(kGarbageContext, 0));
  CUdeviceptr d = 0;
  ASSERT_OK(cuMemAlloc(&d, 1 << 20));
  EXPECT_CU(CUDA_ERROR_INVALID_CONTEXT, cuMemcpyPeer(d, kGarbageContext, d, ctx, 16));
  EXPECT_CU(CUDA_SUCCESS, cuMemFree(d));
  CUcontext c = nullptr;
  EXPECT_CU(CUDA_SUCCESS, cuCtxGetCurrent(&c));
  EXPECT_EQ(ctx, c);  // nothing above changed the stack
}

// What the real driver answers for a destroyed context's handle when it does not crash: it does
// crash at times (free(): invalid pointer, twice on a real H100: docs/real-driver/
// conformance-h100-2026-11-21-modules.txt), so the test lives here.
TEST_F(McsimOnly, DestroyedContextCanBeMadeCurrentButNotUsed) {
  CUcontext p = nullptr;
  ASSERT_OK(cuDevicePrimaryCtxRetain(&p, 0));
  ASSERT_OK(cuCtxSetCurrent(p));
  CUcontext c = nullptr;
  ASSERT_OK(cuCtxCreate(&c, nullptr, 0, 0));
  EXPECT_CU(CUDA_SUCCESS, cuCtxDestroy(c));
  unsigned v = 0xAAAA;
  EXPECT_CU(CUDA_ERROR_INVALID_CONTEXT, cuCtxGetApiVersion(c, &v));
  EXPECT_EQ(0xAAAAu, v);
  EXPECT_CU(CUDA_SUCCESS, cuCtxSetCurrent(c));
  CUcontext now = nullptr;
  EXPECT_OK(cuCtxGetCurrent(&now));
  EXPECT_EQ(c, now);
  CUdeviceptr d = 0;
  EXPECT_CU(CUDA_ERROR_CONTEXT_IS_DESTROYED, cuMemAlloc(&d, 16));
  EXPECT_CU(CUDA_ERROR_CONTEXT_IS_DESTROYED, cuCtxSynchronize());
  EXPECT_CU(CUDA_SUCCESS, cuCtxPushCurrent(c));
  cuCtxSetCurrent(nullptr);
  cuDevicePrimaryCtxRelease(0);
}

// The real driver segfaults on each of these (probe: null.devname_len0, null.errname_out,
// null.errstring_out, null.gpa_symbol, null.gpa_pfn, null.gpa_old_symbol, null.gpa_old_pfn).
TEST_F(McsimOnly, NullArgumentsTheRealDriverCrashesOn) {
  char name[8];
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuDeviceGetName(name, 0, 0));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuGetErrorName(CUDA_SUCCESS, nullptr));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuGetErrorString(CUDA_SUCCESS, nullptr));
  void* pfn = reinterpret_cast<void*>(uintptr_t{1});
  CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SUCCESS;
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuGetProcAddress_v2(nullptr, &pfn, 13000, 0, &st));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuGetProcAddress_v2("cuInit", nullptr, 13000, 0, &st));
  typedef CUresult (*GetProcAddressV1)(const char*, void**, int, cuuint64_t);
  auto old = reinterpret_cast<GetProcAddressV1>(conformance::libcudaSymbol("cuGetProcAddress"));
  ASSERT_NE(nullptr, reinterpret_cast<void*>(old));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, old(nullptr, &pfn, 13000, 0));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, old("cuInit", nullptr, 13000, 0));
  EXPECT_EQ(reinterpret_cast<void*>(uintptr_t{1}), pfn);
}

// A failing call, injected or not, changes nothing (DESIGN.md): the state digest of the node and
// of the driver's own tables is the same before and after every call in this table.
TEST_F(McsimOnly, FailingCallsLeaveTheNodeUnchanged) {
  // Some state for the calls to fail against.
  CUmemAllocationProp posix = devicePinned(0, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  CUmemGenericAllocationHandle hp = 0, h1 = 0, h2 = 0, released = 0;
  ASSERT_OK(cuMemCreate(&hp, gran, &posix, 0));
  ASSERT_OK(cuMemCreate(&h1, gran, &prop, 0));
  ASSERT_OK(cuMemCreate(&h2, 2 * gran, &prop, 0));
  ASSERT_OK(cuMemCreate(&released, gran, &prop, 0));
  ASSERT_OK(cuMemRelease(released));
  CUdeviceptr R = 0, S = 0;
  ASSERT_OK(cuMemAddressReserve(&R, 8 * gran, 0, 0, 0));
  ASSERT_OK(cuMemAddressReserve(&S, 2 * gran, 0, 0, 0));
  ASSERT_OK(cuMemAddressFree(S, 2 * gran));  // S: unreserved VA
  ASSERT_OK(cuMemMap(R, 2 * gran, 0, h2, 0));
  ASSERT_OK(cuMemMap(R + 2 * gran, gran, 0, hp, 0));
  CUmemAccessDesc rw = readWrite(0);
  ASSERT_OK(cuMemSetAccess(R + 2 * gran, gran, &rw, 1));  // R..R+2G stays without access
  CUdeviceptr d = 0;
  ASSERT_OK(cuMemAlloc(&d, 1 << 20));
  void* pinned = nullptr;
  ASSERT_OK(cuMemAllocHost(&pinned, 4096));
  int fd = -1;
  ASSERT_OK(cuMemExportToShareableHandle(&fd, hp, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
  const int devNull = open("/dev/null", O_RDWR);
  ASSERT_GE(devNull, 0);
  void* m = std::malloc(4096);
  static unsigned char hb[1 << 16];

  auto create = [&](CUmemAllocationProp p, size_t size, unsigned long long flags = 0) {
    CUmemGenericAllocationHandle h = 0;
    return cuMemCreate(&h, size, &p, flags);
  };
  auto access = [&](CUdeviceptr p, size_t size, CUmemLocationType type, int id, CUmemAccess_flags f) {
    CUmemAccessDesc desc;
    std::memset(&desc, 0, sizeof desc);
    desc.location.type = type;
    desc.location.id = id;
    desc.flags = f;
    return cuMemSetAccess(p, size, &desc, 1);
  };
  CUmemAllocationProp badDevice = devicePinned(deviceCount);
  CUmemAllocationProp fabric = devicePinned(0, CU_MEM_HANDLE_TYPE_FABRIC);
  struct Case {
    const char* what;
    CUresult want;
    std::function<CUresult()> call;
  };
  const std::vector<Case> cases = {
      // VMM
      {"create size 0", CUDA_ERROR_INVALID_VALUE, [&] { return create(prop, 0); }},
      {"create flags 1", CUDA_ERROR_INVALID_VALUE, [&] { return create(prop, gran, 1); }},
      {"create bad device", CUDA_ERROR_INVALID_DEVICE, [&] { return create(badDevice, gran); }},
      {"create FABRIC", CUDA_ERROR_NOT_PERMITTED, [&] { return create(fabric, gran); }},
      {"create 2^50", CUDA_ERROR_OUT_OF_MEMORY, [&] { return create(prop, size_t{1} << 50); }},
      {"release garbage", CUDA_ERROR_INVALID_VALUE, [&] { return cuMemRelease(kGarbageHandle); }},
      {"release released", CUDA_ERROR_INVALID_VALUE, [&] { return cuMemRelease(released); }},
      {"reserve unaligned", CUDA_ERROR_INVALID_VALUE,
       [&] { CUdeviceptr p = 0; return cuMemAddressReserve(&p, gran + 4096, 0, 0, 0); }},
      {"reserve 2^50", CUDA_ERROR_OUT_OF_MEMORY,
       [&] { CUdeviceptr p = 0; return cuMemAddressReserve(&p, size_t{1} << 50, 0, 0, 0); }},
      {"reserve unaligned hint", CUDA_ERROR_INVALID_VALUE,
       [&] { CUdeviceptr p = 0; return cuMemAddressReserve(&p, gran, 0, S + 4096, 0); }},
      {"free smaller", CUDA_ERROR_INVALID_VALUE, [&] { return cuMemAddressFree(R, 4 * gran); }},
      {"free mapped", CUDA_ERROR_INVALID_VALUE, [&] { return cuMemAddressFree(R, 8 * gran); }},
      {"map at offset", CUDA_ERROR_NOT_SUPPORTED, [&] { return cuMemMap(R + 4 * gran, gran, gran, h2, 0); }},
      {"map over a mapping", CUDA_ERROR_INVALID_VALUE, [&] { return cuMemMap(R, gran, 0, h1, 0); }},
      {"map unreserved", CUDA_ERROR_INVALID_VALUE, [&] { return cuMemMap(S, gran, 0, h1, 0); }},
      {"map garbage handle", CUDA_ERROR_INVALID_VALUE, [&] { return cuMemMap(R + 4 * gran, gran, 0, kGarbageHandle, 0); }},
      {"unmap half", CUDA_ERROR_INVALID_VALUE, [&] { return cuMemUnmap(R, gran); }},
      {"set access on half", CUDA_ERROR_INVALID_VALUE,
       [&] { return access(R, gran, CU_MEM_LOCATION_TYPE_DEVICE, 0, CU_MEM_ACCESS_FLAGS_PROT_READWRITE); }},
      {"set access for the host", CUDA_ERROR_NOT_SUPPORTED,
       [&] { return access(R, 2 * gran, CU_MEM_LOCATION_TYPE_HOST, 0, CU_MEM_ACCESS_FLAGS_PROT_READWRITE); }},
      {"set access bad device", CUDA_ERROR_INVALID_VALUE,
       [&] { return access(R, 2 * gran, CU_MEM_LOCATION_TYPE_DEVICE, deviceCount, CU_MEM_ACCESS_FLAGS_PROT_READWRITE); }},
      {"export non-exportable", CUDA_ERROR_INVALID_VALUE,
       [&] { int f = -1; return cuMemExportToShareableHandle(&f, h1, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0); }},
      {"import /dev/null", CUDA_ERROR_UNKNOWN,
       [&] {
         CUmemGenericAllocationHandle h = 0;
         return cuMemImportFromShareableHandle(&h, reinterpret_cast<void*>(static_cast<intptr_t>(devNull)),
                                               CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
       }},
      {"retain unmapped", CUDA_ERROR_INVALID_VALUE,
       [&] { CUmemGenericAllocationHandle h = 0; return cuMemRetainAllocationHandle(&h, reinterpret_cast<void*>(R + 4 * gran)); }},
      // memory
      {"cuMemAlloc 0", CUDA_ERROR_INVALID_VALUE, [&] { CUdeviceptr p = 0; return cuMemAlloc(&p, 0); }},
      {"cuMemFree interior", CUDA_ERROR_INVALID_VALUE, [&] { return cuMemFree(d + 16); }},
      {"cuMemFreeHost malloc", CUDA_ERROR_INVALID_VALUE, [&] { return cuMemFreeHost(m); }},
      {"cuMemHostAlloc flags 8", CUDA_ERROR_INVALID_VALUE, [&] { void* p = nullptr; return cuMemHostAlloc(&p, 4096, 8); }},
      {"memset past the end", CUDA_ERROR_INVALID_VALUE, [&] { return cuMemsetD8(d + (1 << 20) - 512, 1, 1024); }},
      {"memset without access", CUDA_ERROR_INVALID_VALUE, [&] { return cuMemsetD8(R, 1, 4096); }},
      {"HtoD without access", CUDA_ERROR_INVALID_VALUE, [&] { return cuMemcpyHtoD(R, hb, 4096); }},
      {"DtoD from malloc", CUDA_ERROR_INVALID_VALUE, [&] { return cuMemcpyDtoD(d, reinterpret_cast<CUdeviceptr>(m), 16); }},
      {"DtoD spanning into no access", CUDA_ERROR_INVALID_VALUE,
       [&] { return cuMemcpyDtoD(R + 2 * gran - 8, d, 16); }},
      // contexts
      {"create context bad flags", CUDA_ERROR_INVALID_VALUE,
       [&] { CUcontext c = nullptr; return cuCtxCreate(&c, nullptr, 0xFFFFFFFFu, 0); }},
      {"create context bad device", CUDA_ERROR_INVALID_DEVICE,
       [&] { CUcontext c = nullptr; return cuCtxCreate(&c, nullptr, 0, deviceCount); }},
      {"destroy garbage context", CUDA_ERROR_INVALID_CONTEXT, [&] { return cuCtxDestroy(kGarbageContext); }},
      {"push NULL", CUDA_ERROR_INVALID_VALUE, [&] { return cuCtxPushCurrent(nullptr); }},
      {"set flags 0xffff", CUDA_ERROR_INVALID_VALUE, [&] { return cuCtxSetFlags(0xFFFF); }},
      {"release unretained primary", CUDA_ERROR_INVALID_CONTEXT, [&] { return cuDevicePrimaryCtxRelease(1); }},
      {"primary set flags bad device", CUDA_ERROR_INVALID_DEVICE, [&] { return cuDevicePrimaryCtxSetFlags(deviceCount, 0); }},
  };
  ASSERT_GE(cases.size(), 25u);
  for (const Case& c : cases) {
    const uint64_t before = mcsim::api::stateDigest();
    EXPECT_CU(c.want, c.call()) << c.what;
    EXPECT_EQ(before, mcsim::api::stateDigest()) << c.what << " changed the state";
  }
  close(devNull);
  close(fd);
  std::free(m);
  EXPECT_CU(CUDA_SUCCESS, cuMemFreeHost(pinned));
  EXPECT_CU(CUDA_SUCCESS, cuMemFree(d));
  EXPECT_CU(CUDA_SUCCESS, cuMemUnmap(R, 3 * gran));
  EXPECT_CU(CUDA_SUCCESS, cuMemAddressFree(R, 8 * gran));
  for (auto h : {hp, h1, h2}) EXPECT_CU(CUDA_SUCCESS, cuMemRelease(h));
}

// Nothing leaks: after everything made is released, the node holds no allocation, handle,
// reservation or mapping (cuMemAlloc's included) and no pinned host memory.
TEST_F(McsimOnly, ReleasingEverythingLeavesAnEmptyNode) {
  const mcsim::api::NodeStats empty = mcsim::api::nodeStats();
  Range r;
  makeRange(&r, 2);
  CUdeviceptr d = 0;
  ASSERT_OK(cuMemAlloc(&d, 3 << 20));
  void* pinned = nullptr;
  ASSERT_OK(cuMemAllocHost(&pinned, 4096));
  const mcsim::api::NodeStats busy = mcsim::api::nodeStats();
  EXPECT_EQ(empty.allocations + 2, busy.allocations);
  EXPECT_EQ(empty.mappings + 2, busy.mappings);
  EXPECT_EQ(empty.hostAllocations + 1, busy.hostAllocations);
  dropRange(r);
  ASSERT_OK(cuMemFree(d));
  ASSERT_OK(cuMemFreeHost(pinned));
  const mcsim::api::NodeStats after = mcsim::api::nodeStats();
  EXPECT_EQ(empty.allocations, after.allocations);
  EXPECT_EQ(empty.handles, after.handles);
  EXPECT_EQ(empty.reservations, after.reservations);
  EXPECT_EQ(empty.mappings, after.mappings);
  EXPECT_EQ(empty.hostAllocations, after.hostAllocations);
}

// The default node: eight H100s on an NVSwitch fabric, every pair peers, multicast supported.
TEST_F(McsimOnly, TheDefaultNodeIsAnEightGpuH100NVSwitchMachine) {
  EXPECT_EQ("hgx-h100", mcsim::api::presetName());
  EXPECT_EQ(8, deviceCount);
  for (int dev = 0; dev < deviceCount; ++dev) {
    int v = -1;
    EXPECT_CU(CUDA_SUCCESS, cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED, dev));
    EXPECT_EQ(1, v) << dev;
    for (int peer = 0; peer < deviceCount; ++peer) {
      int can = -1;
      EXPECT_CU(CUDA_SUCCESS, cuDeviceCanAccessPeer(&can, dev, peer));
      EXPECT_EQ(dev != peer ? 1 : 0, can) << dev << "->" << peer;
    }
  }
}

// The same call sequence gives the same addresses and handle values in every run.
TEST_F(McsimOnly, AddressesAndHandlesAreDeterministic) {
  CUdeviceptr d = 0;
  ASSERT_OK(cuMemAlloc(&d, 1 << 20));
  CUdeviceptr R = 0;
  ASSERT_OK(cuMemAddressReserve(&R, 2 * gran, 0, 0, 0));
  // The 32 TiB window at 0x200000000000 (docs/architecture.md), lowest fit first.
  EXPECT_EQ(0x200000000000ull, d);
  EXPECT_EQ(0x200000000000ull + gran, R);
  EXPECT_CU(CUDA_SUCCESS, cuMemAddressFree(R, 2 * gran));
  EXPECT_CU(CUDA_SUCCESS, cuMemFree(d));
}

// Simulated memory costs host memory only where it is written: 8 GiB reserved, mapped and made
// accessible on each of 8 devices (as NCCL-style clients do) leaves the node's resident bytes at
// zero; writing 3 MiB on one device makes about that much resident, and releasing gives it back.
TEST_F(McsimOnly, EightGiBOnEachOfEightDevicesCostsNoHostMemoryUntilWritten) {
  REQUIRE_DEVICES(8);
  constexpr size_t kSize = size_t{8} << 30;
  struct Device {
    CUmemGenericAllocationHandle h = 0;
    CUdeviceptr va = 0;
  } dev[8];
  for (int d = 0; d < 8; ++d) {
    CUmemAllocationProp p = devicePinned(d);
    ASSERT_OK(cuMemCreate(&dev[d].h, kSize, &p, 0));
    ASSERT_OK(cuMemAddressReserve(&dev[d].va, kSize, 0, 0, 0));
    ASSERT_OK(cuMemMap(dev[d].va, kSize, 0, dev[d].h, 0));
    CUmemAccessDesc a = readWrite(d);
    ASSERT_OK(cuMemSetAccess(dev[d].va, kSize, &a, 1));
  }
  EXPECT_EQ(uint64_t{0}, mcsim::api::nodeStats().residentBytes);
  // Device 0's context writes its own memory.
  ASSERT_OK(cuMemsetD8(dev[0].va + (size_t{5} << 30), 0x7f, size_t{3} << 20));
  const uint64_t resident = mcsim::api::nodeStats().residentBytes;
  EXPECT_GE(resident, uint64_t{3} << 20);
  EXPECT_LT(resident, uint64_t{4} << 20);
  for (int d = 0; d < 8; ++d) {
    ASSERT_OK(cuMemUnmap(dev[d].va, kSize));
    ASSERT_OK(cuMemRelease(dev[d].h));
    ASSERT_OK(cuMemAddressFree(dev[d].va, kSize));
  }
  EXPECT_EQ(uint64_t{0}, mcsim::api::nodeStats().residentBytes);
  EXPECT_EQ(uint64_t{0}, mcsim::api::nodeStats().allocations);
}

// A preset file holding `text`, in a directory of its own; both removed at the end.
class TempPresetFile {
 public:
  explicit TempPresetFile(const char* text) {
    if (mkdtemp(dir_) == nullptr) std::abort();
    path_ = std::string(dir_) + "/preset.json";
    FILE* f = std::fopen(path_.c_str(), "w");
    if (f == nullptr) std::abort();
    std::fputs(text, f);
    std::fclose(f);
  }
  ~TempPresetFile() {
    std::remove(path_.c_str());
    rmdir(dir_);
  }
  const std::string& path() const { return path_; }

 private:
  char dir_[32] = "/tmp/mcsim-preset-XXXXXX";
  std::string path_;
};

// cuInit with MCSIM_TOPOLOGY naming `preset`: its result and what it wrote to stderr.
std::pair<CUresult, std::string> initWithPreset(const TempPresetFile& preset) {
  setenv("MCSIM_TOPOLOGY", preset.path().c_str(), 1);
  testing::internal::CaptureStderr();
  const CUresult r = cuInit(0);
  return {r, testing::internal::GetCapturedStderr()};
}

// A malformed preset makes cuInit fail, says which file, line and problem on stderr, and leaves
// the driver uninitialised.
TEST(McsimPreset, MalformedPresetFailsCuInitNamingFileAndLine) {
  const TempPresetFile preset("{\n  \"mcsim_preset\": 1,\n  \"name\": \"bad\",\n  \"gpu\": \"h100-sxm5-80gb\",\n"
                              "  \"gpu_count\": \"eight\"\n}\n");
  const auto [r, err] = initWithPreset(preset);
  EXPECT_CU(CUDA_ERROR_NO_DEVICE, r);
  EXPECT_NE(std::string::npos, err.find(preset.path() + ":5:")) << err;
  EXPECT_NE(std::string::npos, err.find("gpu_count")) << err;
  // The failure sticks, and nothing else initialises behind it.
  EXPECT_CU(CUDA_ERROR_NO_DEVICE, cuInit(0));
  int count = 0;
  EXPECT_CU(CUDA_ERROR_NOT_INITIALIZED, cuDeviceGetCount(&count));
}

// Issue 19, item 13: a number beyond a double aborted the process in cuInit (an exception of the
// JSON library escaped). It fails cuInit like any other malformed preset, naming its line.
TEST(McsimPreset, NumberBeyondADoubleFailsCuInitNamingItsLine) {
  const TempPresetFile preset("{\n  \"mcsim_preset\": 1,\n  \"name\": \"big\",\n  \"gpu_count\": 1e400\n}\n");
  const auto [r, err] = initWithPreset(preset);
  EXPECT_CU(CUDA_ERROR_NO_DEVICE, r);
  EXPECT_NE(std::string::npos, err.find(preset.path() + ":4: invalid JSON: number overflow")) << err;
}

// An unknown preset name fails the same way, listing the built-in names.
TEST(McsimPreset, UnknownPresetNameListsTheBuiltInOnes) {
  setenv("MCSIM_TOPOLOGY", "hgx-h1000", 1);
  testing::internal::CaptureStderr();
  EXPECT_CU(CUDA_ERROR_NO_DEVICE, cuInit(0));
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(std::string::npos, err.find("hgx-h1000")) << err;
  EXPECT_NE(std::string::npos, err.find("hgx-h100,")) << err;
}

// The settings are read at cuInit: an unknown MCSIM_ name is named with the closest declared one,
// a refused value is named and its default used, each on one line (settings/settings.def).
TEST(McsimSettings, CuInitWarnsOfUnknownNamesAndRefusedValuesAndUsesTheDefaults) {
  setenv("MCSIM_TOPLOGY", "single-h100", 1);
  setenv("MCSIM_DRIVER_VERSION", "abc", 1);
  setenv("MCSIM_SEED", "-1", 1);
  setenv("MCSIM_FABRIC_MANAGER", "up", 1);
  testing::internal::CaptureStderr();
  const CUresult r = cuInit(0);
  const std::string err = testing::internal::GetCapturedStderr();
  ASSERT_OK(r);
  EXPECT_NE(std::string::npos,
            err.find("mcsim: MCSIM_TOPLOGY is not an mcsim setting (did you mean MCSIM_TOPOLOGY?); ignored\n"))
      << err;
  EXPECT_NE(std::string::npos, err.find("mcsim: MCSIM_DRIVER_VERSION='abc' is not a version such as 12080")) << err;
  EXPECT_NE(std::string::npos, err.find("mcsim: MCSIM_SEED='-1' is not an integer >= 0; using the default (0)\n"))
      << err;
  EXPECT_NE(std::string::npos, err.find("mcsim: MCSIM_FABRIC_MANAGER='up' is not one of")) << err;
  // The defaults: the default preset (8 GPUs, not the misspelt single-h100), cuda.h's version.
  int count = 0;
  ASSERT_OK(cuDeviceGetCount(&count));
  EXPECT_EQ(8, count);
  int version = 0;
  ASSERT_OK(cuDriverGetVersion(&version));
  EXPECT_EQ(CUDA_VERSION, version);
  // Said once: a second cuInit does not repeat it.
  testing::internal::CaptureStderr();
  ASSERT_OK(cuInit(0));
  EXPECT_EQ("", testing::internal::GetCapturedStderr());
}

// The values reach the driver and the node: the preset, the emulated version, the timing-only
// node (which moves no data: what a copy wrote reads back as it was).
TEST(McsimSettings, ValuesReachTheDriverAndTheNode) {
  setenv("MCSIM_TOPOLOGY", "single-h100", 1);
  setenv("MCSIM_DRIVER_VERSION", "12080", 1);
  setenv("MCSIM_TIMING_ONLY", "1", 1);
  testing::internal::CaptureStderr();
  ASSERT_OK(cuInit(0));
  EXPECT_EQ("", testing::internal::GetCapturedStderr());
  int count = 0;
  ASSERT_OK(cuDeviceGetCount(&count));
  EXPECT_EQ(1, count);
  int version = 0;
  ASSERT_OK(cuDriverGetVersion(&version));
  EXPECT_EQ(12080, version);
  CUcontext ctx = nullptr;
  ASSERT_OK(cuDevicePrimaryCtxRetain(&ctx, 0));
  ASSERT_OK(cuCtxSetCurrent(ctx));
  CUdeviceptr d = 0;
  ASSERT_OK(cuMemAlloc(&d, 4096));
  std::vector<unsigned char> in(4096, 0xab), out(4096, 0);
  ASSERT_OK(cuMemcpyHtoD(d, in.data(), in.size()));
  ASSERT_OK(cuMemcpyDtoH(out.data(), d, out.size()));
  EXPECT_NE(in, out) << "MCSIM_TIMING_ONLY=1 moved the data";
  ASSERT_OK(cuMemFree(d));
  ASSERT_OK(cuDevicePrimaryCtxRelease(0));
}

// A failing call made before any context exists changes nothing, not even by making the
// primary-context table on first use (found by `mcsim campaign`, seed 3547).
TEST(McsimFirstUse, FailingPrimaryReleaseBeforeAnyRetainChangesNothing) {
  ASSERT_OK(cuInit(0));
  const uint64_t before = mcsim::api::stateDigest();
  EXPECT_CU(CUDA_ERROR_INVALID_CONTEXT, cuDevicePrimaryCtxRelease(0));
  EXPECT_EQ(before, mcsim::api::stateDigest());
  // Context ids handed out later do not depend on it either.
  CUcontext ctx = nullptr;
  unsigned long long id = 0;
  ASSERT_OK(cuCtxCreate(&ctx, nullptr, 0, 0));
  ASSERT_OK(cuCtxGetId(ctx, &id));
  int devices = 0;
  ASSERT_OK(cuDeviceGetCount(&devices));
  EXPECT_EQ(static_cast<unsigned long long>(devices) + 1, id);
  EXPECT_CU(CUDA_SUCCESS, cuCtxDestroy(ctx));
}

}  // namespace

#endif  // MCSIM_CONFORMANCE_REAL
