// mcsim's libnvidia-ml.so.1 against the embedded node: it answers from the driver's node (one
// node per process), agrees with the driver's device queries, gives NVML's errors, and shows the
// fabric manager's state and the links' health as a fault plan changes them. Every TEST runs in a
// process of its own, so each chooses its preset before the first cuInit or nvmlInit.
#include <gtest/gtest.h>

#include <cuda.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include <sys/wait.h>
#include <unistd.h>

#include "mcsim/mcsim.h"
#include "nvml/nvml_api.h"

namespace {

void usePreset(const char* name) { setenv("MCSIM_TOPOLOGY", name, 1); }

nvmlDevice_t handle(unsigned i) {
  nvmlDevice_t d = nullptr;
  EXPECT_EQ(nvmlDeviceGetHandleByIndex_v2(i, &d), NVML_SUCCESS);
  return d;
}

std::string uuidOf(CUdevice dev) {
  CUuuid u;
  EXPECT_EQ(cuDeviceGetUuid_v2(&u, dev), CUDA_SUCCESS);
  const auto* b = reinterpret_cast<const unsigned char*>(u.bytes);
  char s[64];
  std::snprintf(s, sizeof(s), "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
                b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
  return s;
}

TEST(Nvml, EveryCallBeforeInitIsUninitialized) {
  unsigned n = 0;
  nvmlDevice_t d = nullptr;
  char buf[96];
  EXPECT_EQ(nvmlDeviceGetCount_v2(&n), NVML_ERROR_UNINITIALIZED);
  EXPECT_EQ(nvmlDeviceGetHandleByIndex_v2(0, &d), NVML_ERROR_UNINITIALIZED);
  EXPECT_EQ(nvmlSystemGetDriverVersion(buf, sizeof(buf)), NVML_ERROR_UNINITIALIZED);
  EXPECT_EQ(nvmlShutdown(), NVML_ERROR_UNINITIALIZED);
  EXPECT_STREQ(nvmlErrorString(NVML_ERROR_UNINITIALIZED), "Uninitialized");
  EXPECT_STREQ(nvmlErrorString(NVML_SUCCESS), "Success");
}

TEST(Nvml, InitCountsAndShutdownBalances) {
  ASSERT_EQ(nvmlInit_v2(), NVML_SUCCESS);
  ASSERT_EQ(nvmlInitWithFlags(0), NVML_SUCCESS);
  unsigned n = 0;
  EXPECT_EQ(nvmlShutdown(), NVML_SUCCESS);
  EXPECT_EQ(nvmlDeviceGetCount_v2(&n), NVML_SUCCESS);  // one init is still in force
  EXPECT_EQ(n, 8u);
  EXPECT_EQ(nvmlShutdown(), NVML_SUCCESS);
  EXPECT_EQ(nvmlDeviceGetCount_v2(&n), NVML_ERROR_UNINITIALIZED);
  EXPECT_EQ(nvmlShutdown(), NVML_ERROR_UNINITIALIZED);
}

// nvmlInit attaches to the node the driver makes at cuInit, not a second one: memory the program
// allocates through the driver is memory NVML reports used, whichever was initialised first.
TEST(Nvml, AnswersFromTheDriversNode) {
  usePreset("hgx-h200");
  ASSERT_EQ(nvmlInit_v2(), NVML_SUCCESS);
  ASSERT_EQ(cuInit(0), CUDA_SUCCESS);
  EXPECT_STREQ(mcsim_preset_name(), "hgx-h200");
  nvmlMemory_t before{};
  ASSERT_EQ(nvmlDeviceGetMemoryInfo(handle(2), &before), NVML_SUCCESS);
  CUcontext ctx = nullptr;
  CUdevice dev = 2;
  ASSERT_EQ(cuDevicePrimaryCtxRetain(&ctx, dev), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxSetCurrent(ctx), CUDA_SUCCESS);
  CUdeviceptr p = 0;
  constexpr size_t kBytes = size_t{1} << 30;
  ASSERT_EQ(cuMemAlloc(&p, kBytes), CUDA_SUCCESS);
  nvmlMemory_t after{};
  ASSERT_EQ(nvmlDeviceGetMemoryInfo(handle(2), &after), NVML_SUCCESS);
  EXPECT_EQ(after.total, before.total);
  EXPECT_GE(after.used, before.used + kBytes);
  EXPECT_EQ(after.used + after.free, after.total);
  nvmlMemory_t other{};
  ASSERT_EQ(nvmlDeviceGetMemoryInfo(handle(3), &other), NVML_SUCCESS);
  EXPECT_EQ(other.used, before.used);
  nvmlMemory_v2_t v2{};
  v2.version = nvmlMemory_v2;
  ASSERT_EQ(nvmlDeviceGetMemoryInfo_v2(handle(2), &v2), NVML_SUCCESS);
  EXPECT_EQ(v2.used, after.used);
  v2.version = 1;
  EXPECT_EQ(nvmlDeviceGetMemoryInfo_v2(handle(2), &v2), NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
  EXPECT_EQ(cuMemFree(p), CUDA_SUCCESS);
}

TEST(Nvml, DevicesAgreeWithTheDriver) {
  ASSERT_EQ(cuInit(0), CUDA_SUCCESS);
  ASSERT_EQ(nvmlInit(), NVML_SUCCESS);
  int count = 0;
  ASSERT_EQ(cuDeviceGetCount(&count), CUDA_SUCCESS);
  unsigned n = 0;
  ASSERT_EQ(nvmlDeviceGetCount(&n), NVML_SUCCESS);
  ASSERT_EQ(static_cast<int>(n), count);
  for (int dev = 0; dev < count; ++dev) {
    nvmlDevice_t d = handle(static_cast<unsigned>(dev));
    unsigned index = 99, minor = 99;
    EXPECT_EQ(nvmlDeviceGetIndex(d, &index), NVML_SUCCESS);
    EXPECT_EQ(index, static_cast<unsigned>(dev));
    EXPECT_EQ(nvmlDeviceGetMinorNumber(d, &minor), NVML_SUCCESS);
    EXPECT_EQ(minor, static_cast<unsigned>(dev));
    char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE], cuName[256];
    ASSERT_EQ(nvmlDeviceGetName(d, name, sizeof(name)), NVML_SUCCESS);
    ASSERT_EQ(cuDeviceGetName(cuName, sizeof(cuName), dev), CUDA_SUCCESS);
    EXPECT_STREQ(name, cuName);
    char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
    ASSERT_EQ(nvmlDeviceGetUUID(d, uuid, sizeof(uuid)), NVML_SUCCESS);
    EXPECT_EQ(uuid, uuidOf(dev));
    nvmlDevice_t byUuid = nullptr;
    EXPECT_EQ(nvmlDeviceGetHandleByUUID(uuid, &byUuid), NVML_SUCCESS);
    EXPECT_EQ(byUuid, d);
    // The bus id the driver gives finds the same handle, in the real library's spellings too.
    char busId[32];
    ASSERT_EQ(cuDeviceGetPCIBusId(busId, sizeof(busId), dev), CUDA_SUCCESS);
    nvmlDevice_t byBus = nullptr;
    EXPECT_EQ(nvmlDeviceGetHandleByPciBusId(busId, &byBus), NVML_SUCCESS);
    EXPECT_EQ(byBus, d);
    nvmlPciInfo_t pci{};
    ASSERT_EQ(nvmlDeviceGetPciInfo_v3(d, &pci), NVML_SUCCESS);
    EXPECT_STRCASEEQ(pci.busIdLegacy, busId);
    EXPECT_EQ(std::string(pci.busId), "0000" + std::string(pci.busIdLegacy));
    std::string upper = pci.busId;
    for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    byBus = nullptr;
    EXPECT_EQ(nvmlDeviceGetHandleByPciBusId_v2(upper.c_str(), &byBus), NVML_SUCCESS);
    EXPECT_EQ(byBus, d);
    nvmlPciInfoV1_t v1{};
    ASSERT_EQ(nvmlDeviceGetPciInfo(d, &v1), NVML_SUCCESS);
    EXPECT_STREQ(v1.busId, pci.busIdLegacy);
    EXPECT_EQ(v1.bus, pci.bus);
    int major = 0, minorCc = 0, cuMajor = 0, cuMinor = 0;
    ASSERT_EQ(nvmlDeviceGetCudaComputeCapability(d, &major, &minorCc), NVML_SUCCESS);
    cuDeviceGetAttribute(&cuMajor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
    cuDeviceGetAttribute(&cuMinor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
    EXPECT_EQ(major, cuMajor);
    EXPECT_EQ(minorCc, cuMinor);
    unsigned procs = 5;
    EXPECT_EQ(nvmlDeviceGetComputeRunningProcesses_v3(d, &procs, nullptr), NVML_SUCCESS);
    EXPECT_EQ(procs, 0u);
  }
  int cudaVersion = 0, cuVersion = 0;
  ASSERT_EQ(nvmlSystemGetCudaDriverVersion_v2(&cudaVersion), NVML_SUCCESS);
  ASSERT_EQ(cuDriverGetVersion(&cuVersion), CUDA_SUCCESS);
  EXPECT_EQ(cudaVersion, cuVersion);
  char version[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE], nvmlVersion[NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE];
  ASSERT_EQ(nvmlSystemGetDriverVersion(version, sizeof(version)), NVML_SUCCESS);
  ASSERT_EQ(nvmlSystemGetNVMLVersion(nvmlVersion, sizeof(nvmlVersion)), NVML_SUCCESS);
  EXPECT_EQ(std::string(nvmlVersion), std::to_string(cuVersion / 1000) + "." + version);
}

TEST(Nvml, ErrorsAsTheRealLibraryGivesThem) {
  ASSERT_EQ(nvmlInit_v2(), NVML_SUCCESS);
  nvmlDevice_t d = handle(0);
  nvmlDevice_t out = nullptr;
  EXPECT_EQ(nvmlDeviceGetCount_v2(nullptr), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(nvmlDeviceGetHandleByIndex_v2(8, &out), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(nvmlDeviceGetHandleByIndex_v2(0, nullptr), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(nvmlDeviceGetHandleByUUID("GPU-00000000-0000-4000-8000-000000000000", &out), NVML_ERROR_NOT_FOUND);
  EXPECT_EQ(nvmlDeviceGetHandleByUUID(nullptr, &out), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(nvmlDeviceGetHandleByPciBusId_v2("0000:ee:00.0", &out), NVML_ERROR_NOT_FOUND);
  EXPECT_EQ(nvmlDeviceGetHandleByPciBusId_v2("not a bus id", &out), NVML_ERROR_INVALID_ARGUMENT);
  char small[4];
  EXPECT_EQ(nvmlDeviceGetName(d, small, sizeof(small)), NVML_ERROR_INSUFFICIENT_SIZE);
  EXPECT_EQ(nvmlDeviceGetUUID(d, small, sizeof(small)), NVML_ERROR_INSUFFICIENT_SIZE);
  EXPECT_EQ(nvmlSystemGetDriverVersion(small, sizeof(small)), NVML_ERROR_INSUFFICIENT_SIZE);
  EXPECT_EQ(nvmlDeviceGetName(d, nullptr, 96), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(nvmlDeviceGetMemoryInfo(d, nullptr), NVML_ERROR_INVALID_ARGUMENT);
  unsigned index = 0;
  nvmlDevice_t bogus = reinterpret_cast<nvmlDevice_t>(&index);
  EXPECT_EQ(nvmlDeviceGetIndex(bogus, &index), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(nvmlDeviceGetIndex(nullptr, &index), NVML_ERROR_INVALID_ARGUMENT);
  nvmlEnableState_t state;
  EXPECT_EQ(nvmlDeviceGetNvLinkState(d, NVML_NVLINK_MAX_LINKS, &state), NVML_ERROR_INVALID_ARGUMENT);
  nvmlGpuFabricInfoV_t fabric{};
  fabric.version = 1;
  EXPECT_EQ(nvmlDeviceGetGpuFabricInfoV(d, &fabric), NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
  unsigned long cpus[4];
  EXPECT_EQ(nvmlDeviceGetCpuAffinityWithinScope(d, 4, cpus, 7), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(nvmlDeviceGetCpuAffinity(d, 0, cpus), NVML_ERROR_INVALID_ARGUMENT);
}

// hgx-h100: 18 NVLink 4 links per GPU, spread 5/4/4/5 over four NVSwitch chips; GPUs 0-3 on host
// NUMA node 0 and 4-7 on node 1.
TEST(Nvml, NvlinkAndTopologyOfTheHgxBoard) {
  ASSERT_EQ(nvmlInit_v2(), NVML_SUCCESS);
  nvmlDevice_t d = handle(5);
  const int switchOfLink[18] = {0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 3};
  for (unsigned l = 0; l < 18; ++l) {
    nvmlEnableState_t state = NVML_FEATURE_DISABLED;
    ASSERT_EQ(nvmlDeviceGetNvLinkState(d, l, &state), NVML_SUCCESS);
    EXPECT_EQ(state, NVML_FEATURE_ENABLED);
    unsigned version = 0, cap = 9;
    ASSERT_EQ(nvmlDeviceGetNvLinkVersion(d, l, &version), NVML_SUCCESS);
    EXPECT_EQ(version, 4u);
    ASSERT_EQ(nvmlDeviceGetNvLinkCapability(d, l, NVML_NVLINK_CAP_P2P_SUPPORTED, &cap), NVML_SUCCESS);
    EXPECT_EQ(cap, 1u);
    ASSERT_EQ(nvmlDeviceGetNvLinkCapability(d, l, NVML_NVLINK_CAP_SYSMEM_ACCESS, &cap), NVML_SUCCESS);
    EXPECT_EQ(cap, 0u);
    nvmlIntNvLinkDeviceType_t type = NVML_NVLINK_DEVICE_TYPE_UNKNOWN;
    ASSERT_EQ(nvmlDeviceGetNvLinkRemoteDeviceType(d, l, &type), NVML_SUCCESS);
    EXPECT_EQ(type, NVML_NVLINK_DEVICE_TYPE_SWITCH);
    nvmlPciInfo_t remote{};
    ASSERT_EQ(nvmlDeviceGetNvLinkRemotePciInfo_v2(d, l, &remote), NVML_SUCCESS);
    EXPECT_EQ(remote.domain, 1u);
    EXPECT_EQ(remote.bus, 0x10u + static_cast<unsigned>(switchOfLink[l])) << "link " << l;
    nvmlPciInfoV1_t legacy{};
    ASSERT_EQ(nvmlDeviceGetNvLinkRemotePciInfo(d, l, &legacy), NVML_SUCCESS);
    EXPECT_STREQ(legacy.busId, remote.busIdLegacy);
    nvmlFieldValue_t fv{};
    fv.fieldId = NVML_FI_DEV_NVLINK_GET_STATE;
    fv.scopeId = l;
    ASSERT_EQ(nvmlDeviceGetFieldValues(d, 1, &fv), NVML_SUCCESS);
    EXPECT_EQ(fv.nvmlReturn, NVML_SUCCESS);
    EXPECT_EQ(fv.value.uiVal, static_cast<unsigned>(NVML_FEATURE_ENABLED));
  }
  nvmlFieldValue_t count{};
  count.fieldId = NVML_FI_DEV_NVLINK_LINK_COUNT;
  ASSERT_EQ(nvmlDeviceGetFieldValues(d, 1, &count), NVML_SUCCESS);
  EXPECT_EQ(count.value.uiVal, 18u);
  nvmlGpuP2PStatus_t p2p = NVML_P2P_STATUS_UNKNOWN;
  ASSERT_EQ(nvmlDeviceGetP2PStatus(handle(0), d, NVML_P2P_CAPS_INDEX_READ, &p2p), NVML_SUCCESS);
  EXPECT_EQ(p2p, NVML_P2P_STATUS_OK);
  ASSERT_EQ(nvmlDeviceGetP2PStatus(handle(0), d, NVML_P2P_CAPS_INDEX_NVLINK, &p2p), NVML_SUCCESS);
  EXPECT_EQ(p2p, NVML_P2P_STATUS_OK);
  nvmlGpuTopologyLevel_t level;
  ASSERT_EQ(nvmlDeviceGetTopologyCommonAncestor(handle(0), handle(1), &level), NVML_SUCCESS);
  EXPECT_EQ(level, NVML_TOPOLOGY_NODE);
  ASSERT_EQ(nvmlDeviceGetTopologyCommonAncestor(handle(0), d, &level), NVML_SUCCESS);
  EXPECT_EQ(level, NVML_TOPOLOGY_SYSTEM);
  ASSERT_EQ(nvmlDeviceGetTopologyCommonAncestor(d, d, &level), NVML_SUCCESS);
  EXPECT_EQ(level, NVML_TOPOLOGY_INTERNAL);
  // The two NUMA nodes' CPUs: each GPU's affinity is its node's, never empty, and the two nodes'
  // sets are disjoint wherever the machine has a CPU for each.
  unsigned long a0[16] = {}, a5[16] = {};
  ASSERT_EQ(nvmlDeviceGetCpuAffinity(handle(0), 16, a0), NVML_SUCCESS);
  ASSERT_EQ(nvmlDeviceGetCpuAffinityWithinScope(d, 16, a5, NVML_AFFINITY_SCOPE_NODE), NVML_SUCCESS);
  bool any0 = false, any5 = false, overlap = false;
  for (int w = 0; w < 16; ++w) {
    any0 = any0 || a0[w] != 0;
    any5 = any5 || a5[w] != 0;
    overlap = overlap || (a0[w] & a5[w]) != 0;
  }
  EXPECT_TRUE(any0);
  EXPECT_TRUE(any5);
  EXPECT_EQ(overlap, a0[0] == a5[0] && a0[0] != 0) << "disjoint unless the machine has one CPU";
  unsigned long nodes = 0;
  ASSERT_EQ(nvmlDeviceGetMemoryAffinity(d, 1, &nodes, NVML_AFFINITY_SCOPE_NODE), NVML_SUCCESS);
  EXPECT_EQ(nodes, 2ul);  // host NUMA node 1
  ASSERT_EQ(nvmlDeviceGetMemoryAffinity(handle(0), 1, &nodes, NVML_AFFINITY_SCOPE_NODE), NVML_SUCCESS);
  EXPECT_EQ(nodes, 1ul);
  unsigned numa = 0;
  EXPECT_EQ(nvmlDeviceGetNumaNodeId(d, &numa), NVML_ERROR_NOT_SUPPORTED);  // the GPU is no NUMA node
  nvmlGpuFabricInfoV_t fabric{};
  fabric.version = nvmlGpuFabricInfo_v2;
  ASSERT_EQ(nvmlDeviceGetGpuFabricInfoV(d, &fabric), NVML_SUCCESS);
  EXPECT_EQ(fabric.state, NVML_GPU_FABRIC_STATE_COMPLETED);
  EXPECT_EQ(fabric.status, NVML_SUCCESS);
  nvmlGpuFabricInfo_t other{};
  ASSERT_EQ(nvmlDeviceGetGpuFabricInfo(handle(0), &other), NVML_SUCCESS);
  EXPECT_EQ(std::memcmp(other.clusterUuid, fabric.clusterUuid, sizeof(other.clusterUuid)), 0);
  EXPECT_EQ(other.cliqueId, fabric.cliqueId);
}

// A lone GPU: no links, no fabric to register with.
TEST(Nvml, SingleGpuHasNoLinksAndNoFabric) {
  usePreset("single-h100");
  ASSERT_EQ(nvmlInit_v2(), NVML_SUCCESS);
  unsigned n = 0;
  ASSERT_EQ(nvmlDeviceGetCount_v2(&n), NVML_SUCCESS);
  ASSERT_EQ(n, 1u);
  nvmlEnableState_t state;
  EXPECT_EQ(nvmlDeviceGetNvLinkState(handle(0), 0, &state), NVML_ERROR_NOT_SUPPORTED);
  nvmlGpuFabricInfoV_t fabric{};
  fabric.version = nvmlGpuFabricInfo_v2;
  EXPECT_EQ(nvmlDeviceGetGpuFabricInfoV(handle(0), &fabric), NVML_ERROR_NOT_SUPPORTED);
  nvmlGpuP2PStatus_t p2p = NVML_P2P_STATUS_UNKNOWN;
  ASSERT_EQ(nvmlDeviceGetP2PStatus(handle(0), handle(0), NVML_P2P_CAPS_INDEX_READ, &p2p), NVML_SUCCESS);
  EXPECT_EQ(p2p, NVML_P2P_STATUS_OK);
}

nvmlGpuFabricInfoV_t fabricOf(unsigned dev) {
  nvmlGpuFabricInfoV_t f{};
  f.version = nvmlGpuFabricInfo_v2;
  EXPECT_EQ(nvmlDeviceGetGpuFabricInfoV(handle(dev), &f), NVML_SUCCESS);
  return f;
}

// The fabric manager's state, as a fault plan moves it, is what NVML's fabric registration
// reports (fabric-level rules fire at driver calls: cuDeviceGetCount here).
TEST(Nvml, FabricInfoFollowsTheFabricManagerUnderAFaultPlan) {
  setenv("MCSIM_FAULTS", "fabric-manager : always -> state initialising", 1);
  ASSERT_EQ(cuInit(0), CUDA_SUCCESS);
  ASSERT_EQ(nvmlInit_v2(), NVML_SUCCESS);
  int count = 0;
  ASSERT_EQ(cuDeviceGetCount(&count), CUDA_SUCCESS);
  nvmlGpuFabricInfoV_t f = fabricOf(1);
  EXPECT_EQ(f.state, NVML_GPU_FABRIC_STATE_IN_PROGRESS);
  ASSERT_EQ(mcsim_install_fault_plan("fabric-manager : always -> state not-started", 1), MCSIM_SUCCESS);
  ASSERT_EQ(cuDeviceGetCount(&count), CUDA_SUCCESS);
  EXPECT_EQ(fabricOf(1).state, NVML_GPU_FABRIC_STATE_NOT_STARTED);
  ASSERT_EQ(mcsim_install_fault_plan("fabric-manager : always -> state degraded", 1), MCSIM_SUCCESS);
  ASSERT_EQ(cuDeviceGetCount(&count), CUDA_SUCCESS);
  f = fabricOf(1);
  EXPECT_EQ(f.state, NVML_GPU_FABRIC_STATE_COMPLETED);
  EXPECT_NE(f.status, NVML_SUCCESS);
  EXPECT_EQ(f.healthMask, static_cast<unsigned>(NVML_GPU_FABRIC_HEALTH_MASK_DEGRADED_BW_TRUE));
  ASSERT_EQ(mcsim_install_fault_plan("fabric-manager : always -> state ready", 1), MCSIM_SUCCESS);
  ASSERT_EQ(cuDeviceGetCount(&count), CUDA_SUCCESS);
  f = fabricOf(1);
  EXPECT_EQ(f.state, NVML_GPU_FABRIC_STATE_COMPLETED);
  EXPECT_EQ(f.status, NVML_SUCCESS);
}

// A link fault plan takes a GPU's NVLinks down: NVML shows them inactive and P2P unsupported, as
// cuDeviceCanAccessPeer answers 0.
TEST(Nvml, LinksDownShowInLinkStateAndP2P) {
  setenv("MCSIM_FAULTS", "link gpu=3 : always -> down", 1);
  ASSERT_EQ(cuInit(0), CUDA_SUCCESS);
  ASSERT_EQ(nvmlInit_v2(), NVML_SUCCESS);
  int can = 1;
  ASSERT_EQ(cuDeviceCanAccessPeer(&can, 3, 0), CUDA_SUCCESS);
  EXPECT_EQ(can, 0);
  nvmlEnableState_t state = NVML_FEATURE_ENABLED;
  ASSERT_EQ(nvmlDeviceGetNvLinkState(handle(3), 0, &state), NVML_SUCCESS);
  EXPECT_EQ(state, NVML_FEATURE_DISABLED);
  ASSERT_EQ(nvmlDeviceGetNvLinkState(handle(2), 0, &state), NVML_SUCCESS);
  EXPECT_EQ(state, NVML_FEATURE_ENABLED);
  nvmlGpuP2PStatus_t p2p = NVML_P2P_STATUS_OK;
  ASSERT_EQ(nvmlDeviceGetP2PStatus(handle(3), handle(0), NVML_P2P_CAPS_INDEX_WRITE, &p2p), NVML_SUCCESS);
  EXPECT_EQ(p2p, NVML_P2P_STATUS_NOT_SUPPORTED);
}

// A preset that does not load: nvmlInit fails as it does where no driver is loaded.
TEST(Nvml, InitFailsWhereTheDriverCannotStart) {
  usePreset("no-such-preset");
  EXPECT_EQ(nvmlInit_v2(), NVML_ERROR_DRIVER_NOT_LOADED);
  unsigned n = 0;
  EXPECT_EQ(nvmlDeviceGetCount_v2(&n), NVML_ERROR_UNINITIALIZED);
}

// On a shared node (run by ctest through tests/runtime/on_shared_node.sh), NVML answers from the
// node every process shares: memory another process allocates is memory this one's NVML reports
// used. Skipped on the embedded node, where each process has a node of its own. It must run before
// any cuInit of its process (a child forked after cuInit is cut off from the node).
TEST(Nvml, SharedNodeShowsAnotherProcessesMemory) {
  if (std::getenv("MCSIM_NODE") == nullptr) GTEST_SKIP() << "needs a shared node (MCSIM_NODE)";
  int ready[2], done[2];
  ASSERT_EQ(pipe(ready), 0);
  ASSERT_EQ(pipe(done), 0);
  constexpr size_t kBytes = size_t{3} << 30;
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {  // before any cuInit in this process: the child attaches on its own
    CUcontext ctx = nullptr;
    CUdeviceptr p = 0;
    char c = 'x';
    const bool ok = cuInit(0) == CUDA_SUCCESS && cuDevicePrimaryCtxRetain(&ctx, 6) == CUDA_SUCCESS &&
                    cuCtxSetCurrent(ctx) == CUDA_SUCCESS && cuMemAlloc(&p, kBytes) == CUDA_SUCCESS;
    if (write(ready[1], ok ? "y" : "n", 1) != 1 || !ok) _exit(1);
    _exit(read(done[0], &c, 1) == 1 ? 0 : 2);  // holds the memory until the parent has looked
  }
  char c = 0;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  ASSERT_EQ(c, 'y') << "the child could not allocate on the shared node";
  ASSERT_EQ(nvmlInit_v2(), NVML_SUCCESS);
  nvmlMemory_t six{}, five{};
  ASSERT_EQ(nvmlDeviceGetMemoryInfo(handle(6), &six), NVML_SUCCESS);
  ASSERT_EQ(nvmlDeviceGetMemoryInfo(handle(5), &five), NVML_SUCCESS);
  EXPECT_GE(six.used, kBytes);
  EXPECT_LT(five.used, kBytes);
  ASSERT_EQ(write(done[1], "x", 1), 1);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

}  // namespace
