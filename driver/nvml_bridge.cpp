// The bridge that mcsim's libnvidia-ml.so.1 calls (driver/nvml_bridge.h): the driver's view of the
// node, read from the same state its cuDevice* calls answer from.
#include "driver/nvml_bridge.h"

#include <algorithm>
#include <cstring>

#include "driver/driver.h"
#include "fabric/fabric_manager.h"

using namespace mcsim::driver;

// The driver's cuInit under its implementation's name (driver.h renames it; cuda.h declared it
// before the rename).
extern "C" CUresult CUDAAPI cuInit(unsigned int flags);

namespace {

// NVML's devices are the host's GPUs: real NVML does not read CUDA_VISIBLE_DEVICES, so a process
// whose setting hides every GPU (cuInit fails with CUDA_ERROR_NO_DEVICE) still sees the host's,
// and the bridge numbers them as the host does, not by the process's CUDA ordinals.
int attachedOrError() {
  if (!state().nodeUp.load(std::memory_order_acquire) || state().forkedChild.load(std::memory_order_acquire)) {
    return CUDA_ERROR_NOT_INITIALIZED;
  }
  if (node().lost()) return CUDA_ERROR_DEVICE_UNAVAILABLE;
  return CUDA_SUCCESS;
}

int fabricManagerCode(mcsim::fabric::FabricManagerState s) {
  switch (s) {
    case mcsim::fabric::FabricManagerState::kNotStarted: return 0;
    case mcsim::fabric::FabricManagerState::kInitialising: return 1;
    case mcsim::fabric::FabricManagerState::kReady: return 2;
    case mcsim::fabric::FabricManagerState::kDegraded: return 3;
  }
  return 0;
}

}  // namespace

extern "C" {

int mcsim_nvml_attach(int bridge_version) {
  if (bridge_version != MCSIM_NVML_BRIDGE_VERSION) return CUDA_ERROR_NOT_SUPPORTED;
  const CUresult r = cuInit(0);  // mcsim_impl_cuInit: the process's one node
  if (r == CUDA_ERROR_NO_DEVICE && state().nodeUp.load(std::memory_order_acquire) && hostGpuCount() > 0) {
    return CUDA_SUCCESS;  // CUDA_VISIBLE_DEVICES hides every GPU from CUDA, not from NVML
  }
  return r;
}

int mcsim_nvml_node(mcsim_nvml_node_info* info) {
  if (info == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (const int r = attachedOrError()) return r;
  const auto& p = node().preset();
  std::memset(info, 0, sizeof(*info));
  std::strncpy(info->preset, p.name.c_str(), sizeof(info->preset) - 1);
  info->gpu_count = hostGpuCount();
  info->host_numa_nodes = hostNumaNodes();
  info->links_per_gpu = p.nvlink.linksPerGpu;
  info->switch_count = p.nvswitch.count;
  info->imex_channel = node().imexChannelPresent() ? 1 : 0;
  info->multicast_team_size = p.multicast.maxTeamSize;
  info->cuda_driver_version = emulatedDriverVersion();
  info->fabric_manager_state = fabricManagerCode(node().fabricManagerState());
  return node().lost() ? CUDA_ERROR_DEVICE_UNAVAILABLE : CUDA_SUCCESS;
}

int mcsim_nvml_device(int device, mcsim_nvml_device_info* info) {
  if (info == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (const int r = attachedOrError()) return r;
  if (device < 0 || device >= hostGpuCount()) return CUDA_ERROR_INVALID_DEVICE;
  const auto& p = node().preset();
  const auto& a = state().hostAttributes[static_cast<size_t>(device)];
  const int rackGpu = state().tray.hostGpuOf(device);
  mcsim::fabric::Node& host = *state().hostNode;
  std::memset(info, 0, sizeof(*info));
  std::strncpy(info->name, p.gpu.name.c_str(), sizeof(info->name) - 1);
  const CUuuid u = rackGpuUuid(rackGpu);
  std::memcpy(info->uuid, u.bytes, sizeof(info->uuid));
  info->pci_domain = static_cast<uint32_t>(a[CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID]);
  info->pci_bus = static_cast<uint32_t>(a[CU_DEVICE_ATTRIBUTE_PCI_BUS_ID]);
  info->pci_device = static_cast<uint32_t>(a[CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID]);
  info->cc_major = a[CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR];
  info->cc_minor = a[CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR];
  uint64_t free = 0, total = 0;
  if (const CUresult r = toResult(host.memoryInfo(rackGpu, &free, &total))) return r;
  info->memory_total = total;
  info->memory_free = free;
  info->host_numa_node = a[CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID];
  info->numa_id = a[CU_DEVICE_ATTRIBUTE_NUMA_ID];
  info->nvlink_up = (p.nvlink.linksPerGpu > 0 && host.nvlinkUp(rackGpu)) ? 1 : 0;
  return node().lost() ? CUDA_ERROR_DEVICE_UNAVAILABLE : CUDA_SUCCESS;
}

int mcsim_nvml_link_switch(int device, int link, int* switch_index) {
  if (switch_index == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (const int r = attachedOrError()) return r;
  if (device < 0 || device >= hostGpuCount()) return CUDA_ERROR_INVALID_DEVICE;
  const auto& sw = node().preset().nvswitch;
  int first = 0;
  for (int s = 0; s < sw.count; ++s) {
    const int n = sw.linksPerGpuPerSwitch[static_cast<size_t>(s)];
    if (link >= first && link < first + n) {
      *switch_index = s;
      return CUDA_SUCCESS;
    }
    first += n;
  }
  return CUDA_ERROR_INVALID_DEVICE;
}

}  // extern "C"
