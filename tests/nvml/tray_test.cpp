// One compute tray of a gb200-nvl72 rack, played by one process on the embedded node (MCSIM_TRAY;
// docs/multiprocess.md, "Trays"): the driver and NVML show the tray's 4 GPUs as devices 0-3, as the
// tray's host does, with the rack's fabric registration. Every TEST runs in a process of its own,
// so each chooses its preset and tray before the first cuInit or nvmlInit.
#include <gtest/gtest.h>

#include <cuda.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "nvml/nvml_api.h"
#include "tests/common/forked_answer.h"
#include "tests/common/vmm_props.h"

namespace {

void playTray(const char* tray, const char* preset = "gb200-nvl72") {
  setenv("MCSIM_TOPOLOGY", preset, 1);
  setenv("MCSIM_TRAY", tray, 1);
}

int attribute(CUdevice_attribute a, CUdevice d) {
  int v = -1;
  EXPECT_EQ(cuDeviceGetAttribute(&v, a, d), CUDA_SUCCESS);
  return v;
}

std::string uuidBytes(CUdevice d) {
  CUuuid u;
  EXPECT_EQ(cuDeviceGetUuid_v2(&u, d), CUDA_SUCCESS);
  return std::string(u.bytes, sizeof u.bytes);
}

// What a process of another tray answers (forked before this process's cuInit, so that it builds
// a node of its own): `query` runs there and its bytes come back.
template <typename Query>
std::string inAnotherTray(const char* tray, Query query) {
  return cutest::forkedAnswer([&] {
    setenv("MCSIM_TRAY", tray, 1);
    return query();
  });
}

// cuInit, and device `dev`'s primary context made current.
CUcontext enter(int dev) {
  CUcontext ctx = nullptr;
  EXPECT_EQ(cuInit(0), CUDA_SUCCESS);
  EXPECT_EQ(cuDevicePrimaryCtxRetain(&ctx, dev), CUDA_SUCCESS);
  EXPECT_EQ(cuCtxSetCurrent(ctx), CUDA_SUCCESS);
  return ctx;
}

TEST(Tray, SeesItsFourGpusAsDevicesZeroToThree) {
  playTray("5");
  const std::string tray0 = inAnotherTray("0", [] { return cuInit(0) == CUDA_SUCCESS ? uuidBytes(0) : std::string(); });
  ASSERT_EQ(cuInit(0), CUDA_SUCCESS);
  int count = 0;
  ASSERT_EQ(cuDeviceGetCount(&count), CUDA_SUCCESS);
  EXPECT_EQ(count, 4);
  CUdevice d = -1;
  EXPECT_EQ(cuDeviceGet(&d, 3), CUDA_SUCCESS);
  EXPECT_EQ(d, 3);
  EXPECT_EQ(cuDeviceGet(&d, 4), CUDA_ERROR_INVALID_DEVICE);
  for (int i = 0; i < 4; ++i) {
    // The rack's GPUs 20-23, on the tray's two Grace CPUs (host NUMA nodes 0 and 1 of its host).
    EXPECT_EQ(attribute(CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, i), 0x10 + 20 + i);
    EXPECT_EQ(attribute(CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID, i), i / 2);
    EXPECT_EQ(attribute(CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD_GROUP_ID, i), i);
    EXPECT_EQ(attribute(CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED, i), 1);
    for (int j = 0; j < 4; ++j) {
      int can = -1;
      EXPECT_EQ(cuDeviceCanAccessPeer(&can, i, j), CUDA_SUCCESS);
      EXPECT_EQ(can, i != j ? 1 : 0) << i << " -> " << j;
    }
  }
  // UUIDs name GPUs of the rack: tray 0's device 0 is another GPU than this tray's.
  ASSERT_EQ(tray0.size(), 16u);
  EXPECT_NE(tray0, uuidBytes(0));
  EXPECT_NE(uuidBytes(0), uuidBytes(1));
}

TEST(Tray, MemoryAndCopiesUseTheTraysOrdinals) {
  playTray("17");
  const CUcontext ctx = enter(3);
  constexpr size_t kSize = 2 << 20;
  // cuMemCreate on device 3: its properties and its pointer say device 3.
  CUmemGenericAllocationHandle h = 0;
  const CUmemAllocationProp prop = cutest::devicePinned(3, CU_MEM_HANDLE_TYPE_FABRIC);
  ASSERT_EQ(cuMemCreate(&h, kSize, &prop, 0), CUDA_SUCCESS);
  CUmemAllocationProp back{};
  ASSERT_EQ(cuMemGetAllocationPropertiesFromHandle(&back, h), CUDA_SUCCESS);
  EXPECT_EQ(back.location.id, 3);
  CUdeviceptr va = 0;
  ASSERT_EQ(cuMemAddressReserve(&va, kSize, 0, 0, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuMemMap(va, kSize, 0, h, 0), CUDA_SUCCESS);
  const CUmemAccessDesc rw[2] = {cutest::readWrite(3), cutest::readWrite(0)};
  ASSERT_EQ(cuMemSetAccess(va, kSize, rw, 2), CUDA_SUCCESS);
  unsigned long long flags = 0;
  CUmemLocation where{CU_MEM_LOCATION_TYPE_DEVICE, 0};
  EXPECT_EQ(cuMemGetAccess(&flags, &where, va), CUDA_SUCCESS);
  EXPECT_EQ(flags, static_cast<unsigned long long>(CU_MEM_ACCESS_FLAGS_PROT_READWRITE));
  where.id = 1;
  EXPECT_EQ(cuMemGetAccess(&flags, &where, va), CUDA_SUCCESS);
  EXPECT_EQ(flags, static_cast<unsigned long long>(CU_MEM_ACCESS_FLAGS_PROT_NONE));
  int ordinal = -1;
  EXPECT_EQ(cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, va), CUDA_SUCCESS);
  EXPECT_EQ(ordinal, 3);
  // cuMemAlloc on device 1, a peer copy from device 3's memory to it, and back to the host.
  std::vector<uint32_t> words(kSize / 4);
  for (size_t i = 0; i < words.size(); ++i) words[i] = static_cast<uint32_t>(i * 2654435761u);
  ASSERT_EQ(cuMemcpyHtoD(va, words.data(), kSize), CUDA_SUCCESS);
  CUcontext ctx1 = nullptr;
  ASSERT_EQ(cuDevicePrimaryCtxRetain(&ctx1, 1), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxSetCurrent(ctx1), CUDA_SUCCESS);
  CUdeviceptr linear = 0;
  ASSERT_EQ(cuMemAlloc(&linear, kSize), CUDA_SUCCESS);
  EXPECT_EQ(cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, linear), CUDA_SUCCESS);
  EXPECT_EQ(ordinal, 1);
  size_t free = 0, total = 0;
  ASSERT_EQ(cuMemGetInfo(&free, &total), CUDA_SUCCESS);
  EXPECT_EQ(total - free, kSize);  // device 1 holds the cuMemAlloc, not device 3's allocation
  ASSERT_EQ(cuMemcpyPeer(linear, ctx1, va, ctx, kSize), CUDA_SUCCESS);
  std::vector<uint32_t> got(words.size());
  ASSERT_EQ(cuMemcpyDtoH(got.data(), linear, kSize), CUDA_SUCCESS);
  EXPECT_EQ(got, words);
  // Host NUMA memory of the tray's host: its nodes 0 and 1, no more.
  CUmemAllocationProp numa = cutest::devicePinned(0, CU_MEM_HANDLE_TYPE_NONE);
  numa.location = {CU_MEM_LOCATION_TYPE_HOST_NUMA, 1};
  CUmemGenericAllocationHandle hn = 0;
  EXPECT_EQ(cuMemCreate(&hn, kSize, &numa, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuMemGetAllocationPropertiesFromHandle(&back, hn), CUDA_SUCCESS);
  EXPECT_EQ(back.location.id, 1);
  EXPECT_EQ(cuMemRelease(hn), CUDA_SUCCESS);
  numa.location.id = 2;
  EXPECT_EQ(cuMemCreate(&hn, kSize, &numa, 0), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemFree(linear), CUDA_SUCCESS);
  EXPECT_EQ(cuMemUnmap(va, kSize), CUDA_SUCCESS);
  EXPECT_EQ(cuMemAddressFree(va, kSize), CUDA_SUCCESS);
  EXPECT_EQ(cuMemRelease(h), CUDA_SUCCESS);
}

TEST(Tray, MulticastTeamOfTheTraysGpus) {
  playTray("2");
  enter(0);
  CUmulticastObjectProp mp{};
  mp.numDevices = 4;
  mp.size = 2 << 20;
  mp.handleTypes = CU_MEM_HANDLE_TYPE_FABRIC;
  CUmemGenericAllocationHandle mc = 0;
  ASSERT_EQ(cuMulticastCreate(&mc, &mp), CUDA_SUCCESS);
  for (int d = 0; d < 4; ++d) EXPECT_EQ(cuMulticastAddDevice(mc, d), CUDA_SUCCESS) << d;
  EXPECT_EQ(cuMulticastAddDevice(mc, 4), CUDA_ERROR_INVALID_DEVICE);
  for (int d = 0; d < 4; ++d) {
    CUmemGenericAllocationHandle mem = 0;
    const CUmemAllocationProp prop = cutest::devicePinned(d, CU_MEM_HANDLE_TYPE_FABRIC);
    ASSERT_EQ(cuMemCreate(&mem, 2 << 20, &prop, 0), CUDA_SUCCESS);
    EXPECT_EQ(cuMulticastBindMem(mc, 0, mem, 0, 2 << 20, 0), CUDA_SUCCESS) << d;
    EXPECT_EQ(cuMulticastUnbind(mc, d, 0, 2 << 20), CUDA_SUCCESS) << d;
    EXPECT_EQ(cuMemRelease(mem), CUDA_SUCCESS);
  }
  EXPECT_EQ(cuMemRelease(mc), CUDA_SUCCESS);
}

TEST(Tray, ATrayTheRackLacksIsRefusedAtInit) {
  playTray("18");
  testing::internal::CaptureStderr();
  EXPECT_EQ(cuInit(0), CUDA_ERROR_NO_DEVICE);
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("MCSIM_TRAY=18 is no tray of 'gb200-nvl72', which has trays 0 to 17"), std::string::npos) << err;
  int count = -1;
  EXPECT_EQ(cuDeviceGetCount(&count), CUDA_ERROR_NOT_INITIALIZED);
}

TEST(Tray, ATrayOnAPresetWithoutTraysIsRefusedAtInit) {
  playTray("0", "hgx-h100");
  testing::internal::CaptureStderr();
  EXPECT_EQ(cuInit(0), CUDA_ERROR_NO_DEVICE);
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("MCSIM_TRAY=0, but the preset 'hgx-h100' has no trays"), std::string::npos) << err;
}

// NVML on the tray's host: 4 GPUs, the driver's UUIDs, the links up, and the fabric registration
// of the rack: every tray reports the same cluster UUID and clique, so NCCL puts the trays' GPUs
// in one multi-node NVLink clique.
TEST(Tray, NvmlShowsTheTrayAndTheRacksFabric) {
  playTray("9");
  auto fabricOf = [](unsigned i) {
    nvmlDevice_t d = nullptr;
    nvmlGpuFabricInfoV_t f{};
    f.version = nvmlGpuFabricInfo_v2;
    if (nvmlDeviceGetHandleByIndex_v2(i, &d) != NVML_SUCCESS || nvmlDeviceGetGpuFabricInfoV(d, &f) != NVML_SUCCESS) {
      return std::string();
    }
    return std::string(reinterpret_cast<const char*>(f.clusterUuid), sizeof f.clusterUuid) + std::to_string(f.cliqueId) +
           "/" + std::to_string(f.state);
  };
  const std::string tray3 = inAnotherTray("3", [&] { return nvmlInit_v2() == NVML_SUCCESS ? fabricOf(0) : std::string(); });
  ASSERT_EQ(nvmlInit_v2(), NVML_SUCCESS);
  unsigned n = 0;
  ASSERT_EQ(nvmlDeviceGetCount_v2(&n), NVML_SUCCESS);
  EXPECT_EQ(n, 4u);
  nvmlDevice_t d = nullptr;
  EXPECT_EQ(nvmlDeviceGetHandleByIndex_v2(4, &d), NVML_ERROR_INVALID_ARGUMENT);
  for (unsigned i = 0; i < 4; ++i) {
    ASSERT_EQ(nvmlDeviceGetHandleByIndex_v2(i, &d), NVML_SUCCESS);
    char uuid[96];
    ASSERT_EQ(nvmlDeviceGetUUID(d, uuid, sizeof uuid), NVML_SUCCESS);
    CUuuid u;
    ASSERT_EQ(cuDeviceGetUuid_v2(&u, static_cast<CUdevice>(i)), CUDA_SUCCESS);
    char want[8];
    std::snprintf(want, sizeof want, "GPU-%02x", static_cast<unsigned char>(u.bytes[0]));
    EXPECT_EQ(std::string(uuid, 6), std::string(want)) << i;
    nvmlPciInfo_t pci{};
    ASSERT_EQ(nvmlDeviceGetPciInfo_v3(d, &pci), NVML_SUCCESS);
    EXPECT_EQ(pci.bus, 0x10u + 36u + i);
    nvmlEnableState_t up = NVML_FEATURE_DISABLED;
    EXPECT_EQ(nvmlDeviceGetNvLinkState(d, 0, &up), NVML_SUCCESS);
    EXPECT_EQ(up, NVML_FEATURE_ENABLED);
    nvmlGpuFabricInfoV_t f{};
    f.version = nvmlGpuFabricInfo_v2;
    ASSERT_EQ(nvmlDeviceGetGpuFabricInfoV(d, &f), NVML_SUCCESS);
    EXPECT_EQ(f.state, NVML_GPU_FABRIC_STATE_COMPLETED);
    EXPECT_EQ(f.status, NVML_SUCCESS);
    EXPECT_NE(f.cliqueId, 0u);
  }
  ASSERT_FALSE(tray3.empty());
  EXPECT_EQ(fabricOf(0), tray3);
  EXPECT_EQ(nvmlShutdown(), NVML_SUCCESS);
}

}  // namespace
