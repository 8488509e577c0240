// CUDA_VISIBLE_DEVICES (docs/user-guide.md, "Settings"): the driver sees the GPUs the setting
// names, in its order, numbered from 0; NVML sees every GPU of the host, as real NVML does, and so
// tells which GPU each CUDA ordinal is. Every TEST runs in a process of its own (gtest_discover_tests),
// so each sets its environment before the first cuInit or nvmlInit.
#include <gtest/gtest.h>

#include <cuda.h>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "nvml/nvml_api.h"
#include "tests/common/forked_answer.h"
#include "tests/common/vmm_props.h"

namespace {

void see(const char* visible, const char* preset = "hgx-h100") {
  setenv("MCSIM_TOPOLOGY", preset, 1);
  setenv("CUDA_VISIBLE_DEVICES", visible, 1);
}

int count() {
  int n = -1;
  EXPECT_EQ(cuDeviceGetCount(&n), CUDA_SUCCESS);
  return n;
}

std::string uuidText(const CUuuid& u) {
  char s[64];
  const auto* b = reinterpret_cast<const unsigned char*>(u.bytes);
  std::snprintf(s, sizeof(s), "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
                b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
  return s;
}

std::string cudaUuid(CUdevice d) {
  CUuuid u;
  EXPECT_EQ(cuDeviceGetUuid_v2(&u, d), CUDA_SUCCESS);
  return uuidText(u);
}

std::string cudaBusId(CUdevice d) {
  char id[32] = {};
  EXPECT_EQ(cuDeviceGetPCIBusId(id, sizeof id, d), CUDA_SUCCESS);
  return id;
}

// NVML's device `index` of the host: its UUID and bus id (NVML prints the 8-digit domain).
std::string nvmlUuid(unsigned index) {
  nvmlDevice_t d = nullptr;
  EXPECT_EQ(nvmlDeviceGetHandleByIndex_v2(index, &d), NVML_SUCCESS);
  char u[96] = {};
  EXPECT_EQ(nvmlDeviceGetUUID(d, u, sizeof u), NVML_SUCCESS);
  return u;
}

std::string nvmlBusId(unsigned index) {
  nvmlDevice_t d = nullptr;
  EXPECT_EQ(nvmlDeviceGetHandleByIndex_v2(index, &d), NVML_SUCCESS);
  nvmlPciInfo_t pci{};
  EXPECT_EQ(nvmlDeviceGetPciInfo_v3(d, &pci), NVML_SUCCESS);
  char id[32];
  std::snprintf(id, sizeof id, "%04x:%02x:%02x.0", pci.domain, pci.bus, pci.device);
  return id;
}

unsigned long long nvmlUsed(unsigned index) {
  nvmlDevice_t d = nullptr;
  EXPECT_EQ(nvmlDeviceGetHandleByIndex_v2(index, &d), NVML_SUCCESS);
  nvmlMemory_t m{};
  EXPECT_EQ(nvmlDeviceGetMemoryInfo(d, &m), NVML_SUCCESS);
  return m.used;
}

// GPU `index`'s UUID on `preset`, from a process forked before this one's cuInit that sees every GPU.
std::string uuidOfGpu(int index, const char* preset = "hgx-h100") {
  return cutest::forkedAnswer([&] {
    setenv("MCSIM_TOPOLOGY", preset, 1);
    unsetenv("CUDA_VISIBLE_DEVICES");
    unsetenv("MCSIM_TRAY");
    return cuInit(0) == CUDA_SUCCESS ? cudaUuid(index) : std::string();
  });
}

TEST(VisibleDevices, TheNamedGpusInTheGivenOrder) {
  see("5,2,7");
  ASSERT_EQ(cuInit(0), CUDA_SUCCESS);
  ASSERT_EQ(nvmlInit_v2(), NVML_SUCCESS);
  EXPECT_EQ(count(), 3);
  CUdevice d = -1;
  EXPECT_EQ(cuDeviceGet(&d, 3), CUDA_ERROR_INVALID_DEVICE);
  // NVML ignores the setting: the host's 8 GPUs, so its index names the GPU behind each ordinal.
  unsigned n = 0;
  ASSERT_EQ(nvmlDeviceGetCount_v2(&n), NVML_SUCCESS);
  EXPECT_EQ(n, 8u);
  const unsigned gpuOf[3] = {5, 2, 7};
  for (int o = 0; o < 3; ++o) {
    EXPECT_EQ(cudaUuid(o), nvmlUuid(gpuOf[o])) << o;
    EXPECT_EQ(cudaBusId(o), nvmlBusId(gpuOf[o])) << o;
    CUdevice byBus = -1;
    EXPECT_EQ(cuDeviceGetByPCIBusId(&byBus, nvmlBusId(gpuOf[o]).c_str()), CUDA_SUCCESS);
    EXPECT_EQ(byBus, o);
  }
  char name[64] = {};
  EXPECT_EQ(cuDeviceGetName(name, sizeof name, 2), CUDA_SUCCESS);
  EXPECT_STREQ(name, "NVIDIA H100 80GB HBM3");
  // A hidden GPU's bus id names no device of this process.
  CUdevice hidden = -1;
  EXPECT_EQ(cuDeviceGetByPCIBusId(&hidden, nvmlBusId(0).c_str()), CUDA_ERROR_INVALID_DEVICE);
  // Peers among the visible devices only.
  int can = -1;
  EXPECT_EQ(cuDeviceCanAccessPeer(&can, 0, 2), CUDA_SUCCESS);
  EXPECT_EQ(can, 1);
  EXPECT_EQ(cuDeviceCanAccessPeer(&can, 0, 3), CUDA_ERROR_INVALID_DEVICE);
  EXPECT_EQ(nvmlShutdown(), NVML_SUCCESS);
}

// Memory of ordinal 0 is made on the GPU the setting names: NVML's memory of that GPU grows, and
// the pointer and the allocation's properties say ordinal 0.
TEST(VisibleDevices, AllocationsLandOnTheNamedGpu) {
  see("6");
  ASSERT_EQ(cuInit(0), CUDA_SUCCESS);
  ASSERT_EQ(nvmlInit_v2(), NVML_SUCCESS);
  CUcontext ctx = nullptr;
  ASSERT_EQ(cuDevicePrimaryCtxRetain(&ctx, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxSetCurrent(ctx), CUDA_SUCCESS);
  const unsigned long long before6 = nvmlUsed(6), before0 = nvmlUsed(0);
  constexpr size_t kSize = 256ull << 20;
  CUdeviceptr p = 0;
  ASSERT_EQ(cuMemAlloc(&p, kSize), CUDA_SUCCESS);
  EXPECT_GE(nvmlUsed(6), before6 + kSize);
  EXPECT_EQ(nvmlUsed(0), before0);
  int ordinal = -1;
  EXPECT_EQ(cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p), CUDA_SUCCESS);
  EXPECT_EQ(ordinal, 0);
  CUmemGenericAllocationHandle h = 0;
  const CUmemAllocationProp prop = cutest::devicePinned(0, CU_MEM_HANDLE_TYPE_NONE);
  ASSERT_EQ(cuMemCreate(&h, 2 << 20, &prop, 0), CUDA_SUCCESS);
  CUmemAllocationProp back{};
  ASSERT_EQ(cuMemGetAllocationPropertiesFromHandle(&back, h), CUDA_SUCCESS);
  EXPECT_EQ(back.location.id, 0);
  EXPECT_EQ(cuMemRelease(h), CUDA_SUCCESS);
  EXPECT_EQ(cuMemFree(p), CUDA_SUCCESS);
  EXPECT_EQ(nvmlUsed(6), before6);
  EXPECT_EQ(nvmlShutdown(), NVML_SUCCESS);
}

// The list ends at its first entry that names no GPU: out of range, negative, not a number, or a
// GPU already listed.
TEST(VisibleDevices, AnInvalidEntryEndsTheList) {
  see("3,1,-1,0");
  ASSERT_EQ(cuInit(0), CUDA_SUCCESS);
  ASSERT_EQ(nvmlInit_v2(), NVML_SUCCESS);
  EXPECT_EQ(count(), 2);
  EXPECT_EQ(cudaUuid(0), nvmlUuid(3));
  EXPECT_EQ(cudaUuid(1), nvmlUuid(1));
  EXPECT_EQ(nvmlShutdown(), NVML_SUCCESS);
}

TEST(VisibleDevices, AnOutOfRangeIndexEndsTheList) {
  see("4,8,2");
  ASSERT_EQ(cuInit(0), CUDA_SUCCESS);
  EXPECT_EQ(count(), 1);
}

TEST(VisibleDevices, ARepeatedGpuEndsTheList) {
  see("1,2,1,3");
  ASSERT_EQ(cuInit(0), CUDA_SUCCESS);
  EXPECT_EQ(count(), 2);
}

// An index is read as a real driver (580.159.04, four H200s) read it
// (docs/real-driver/h200x4-visible-2026-11-29.txt): blanks around it and a '+' do not matter, and
// whatever follows its digits is ignored; an empty entry ends the list.
TEST(VisibleDevices, BlanksAroundAnIndexAreIgnored) {
  see(" 3, 1 ,0 ");
  ASSERT_EQ(cuInit(0), CUDA_SUCCESS);
  ASSERT_EQ(nvmlInit_v2(), NVML_SUCCESS);
  ASSERT_EQ(count(), 3);
  EXPECT_EQ(cudaUuid(0), nvmlUuid(3));
  EXPECT_EQ(cudaUuid(1), nvmlUuid(1));
  EXPECT_EQ(cudaUuid(2), nvmlUuid(0));
  EXPECT_EQ(nvmlShutdown(), NVML_SUCCESS);
}

TEST(VisibleDevices, WhatFollowsAnIndexsDigitsIsIgnored) {
  see("1;0,+2,03,1 0");  // GPU 1 (";0" ignored), then 2, then 3, then 1 again: the list ends
  ASSERT_EQ(cuInit(0), CUDA_SUCCESS);
  ASSERT_EQ(nvmlInit_v2(), NVML_SUCCESS);
  ASSERT_EQ(count(), 3);
  EXPECT_EQ(cudaUuid(0), nvmlUuid(1));
  EXPECT_EQ(cudaUuid(1), nvmlUuid(2));
  EXPECT_EQ(cudaUuid(2), nvmlUuid(3));
  EXPECT_EQ(nvmlShutdown(), NVML_SUCCESS);
}

TEST(VisibleDevices, AnEmptyEntryEndsTheList) {
  see("1,,0");
  ASSERT_EQ(cuInit(0), CUDA_SUCCESS);
  EXPECT_EQ(count(), 1);
}

TEST(VisibleDevices, BlanksAloneLeaveNoDevice) {
  see(" ");
  EXPECT_EQ(cuInit(0), CUDA_ERROR_NO_DEVICE);
}

// A UUID must start its entry: a blank before "GPU-" names no GPU (as on the real driver).
TEST(VisibleDevices, ABlankBeforeAUuidNamesNoGpu) {
  const std::string value = " " + uuidOfGpu(2);
  see(value.c_str());
  EXPECT_EQ(cuInit(0), CUDA_ERROR_NO_DEVICE);
}

// A UUID as nvidia-smi prints it, or enough of its start to name one GPU.
TEST(VisibleDevices, UuidsAndTheirPrefixes) {
  const std::string four = uuidOfGpu(4), one = uuidOfGpu(1);
  ASSERT_EQ(four.size(), 40u);
  const std::string value = four + "," + one.substr(0, 12);
  see(value.c_str());
  ASSERT_EQ(cuInit(0), CUDA_SUCCESS);
  EXPECT_EQ(count(), 2);
  EXPECT_EQ(cudaUuid(0), four);
  EXPECT_EQ(cudaUuid(1), one);
}

TEST(VisibleDevices, APrefixOfSeveralGpusNamesNone) {
  see("2,GPU-");  // "GPU-" starts every UUID
  ASSERT_EQ(cuInit(0), CUDA_SUCCESS);
  EXPECT_EQ(count(), 1);
}

// Nothing visible: cuInit fails with CUDA_ERROR_NO_DEVICE, and so every call after it is refused as
// uninitialized; NVML still sees the host's GPUs.
TEST(VisibleDevices, AnEmptyValueLeavesNoDevice) {
  see("");
  EXPECT_EQ(cuInit(0), CUDA_ERROR_NO_DEVICE);
  EXPECT_EQ(cuInit(0), CUDA_ERROR_NO_DEVICE);
  int n = -1;
  EXPECT_EQ(cuDeviceGetCount(&n), CUDA_ERROR_NOT_INITIALIZED);
  ASSERT_EQ(nvmlInit_v2(), NVML_SUCCESS);
  unsigned gpus = 0;
  ASSERT_EQ(nvmlDeviceGetCount_v2(&gpus), NVML_SUCCESS);
  EXPECT_EQ(gpus, 8u);
  EXPECT_EQ(nvmlShutdown(), NVML_SUCCESS);
}

TEST(VisibleDevices, OnlyInvalidEntriesLeaveNoDevice) {
  see("-1,0");
  EXPECT_EQ(cuInit(0), CUDA_ERROR_NO_DEVICE);
}

// On a tray the setting picks among the tray's 4 GPUs, numbered as the tray's host numbers them.
TEST(VisibleDevices, OnATrayIndexesTheTraysGpus) {
  const std::string gpu11 = uuidOfGpu(11, "gb200-nvl72");  // the rack's GPU 2 * 4 + 3
  see("3,0", "gb200-nvl72");
  setenv("MCSIM_TRAY", "2", 1);
  ASSERT_EQ(cuInit(0), CUDA_SUCCESS);
  ASSERT_EQ(nvmlInit_v2(), NVML_SUCCESS);
  EXPECT_EQ(count(), 2);
  unsigned n = 0;
  ASSERT_EQ(nvmlDeviceGetCount_v2(&n), NVML_SUCCESS);
  EXPECT_EQ(n, 4u);
  EXPECT_EQ(cudaUuid(0), nvmlUuid(3));
  EXPECT_EQ(cudaUuid(1), nvmlUuid(0));
  EXPECT_EQ(cudaUuid(0), gpu11);
  int bus = -1;
  EXPECT_EQ(cuDeviceGetAttribute(&bus, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, 0), CUDA_SUCCESS);
  EXPECT_EQ(bus, 0x10 + 11);
  CUcontext ctx = nullptr;
  ASSERT_EQ(cuDevicePrimaryCtxRetain(&ctx, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxSetCurrent(ctx), CUDA_SUCCESS);
  const unsigned long long before = nvmlUsed(3);
  CUdeviceptr p = 0;
  ASSERT_EQ(cuMemAlloc(&p, 64 << 20), CUDA_SUCCESS);
  EXPECT_GE(nvmlUsed(3), before + (64 << 20));
  EXPECT_EQ(cuMemFree(p), CUDA_SUCCESS);
  EXPECT_EQ(nvmlShutdown(), NVML_SUCCESS);
}

}  // namespace
