#include "driver/device_table.h"

#include <map>

namespace mcsim::driver {

namespace {

struct Named {
  const char* name;
  int value;
};

const Named kAttributes[] = {
#define MCSIM_DEVICE_ATTRIBUTE(name) {#name, CU_DEVICE_ATTRIBUTE_##name},
#include "driver/device_attributes.def"
#undef MCSIM_DEVICE_ATTRIBUTE
};

}  // namespace

const char* deviceAttributeName(int attribute) {
  for (const Named& a : kAttributes) {
    if (a.value == attribute) return a.name;
  }
  return nullptr;
}

std::vector<std::vector<int>> resolveDeviceAttributes(const fabric::Preset& preset) {
  std::map<std::string, int> byName;
  for (const Named& a : kAttributes) byName.emplace(a.name, a.value);

  std::vector<int> base(CU_DEVICE_ATTRIBUTE_MAX, 0);
  const fabric::GpuSpec& gpu = preset.gpu;
  for (const auto& [name, value] : gpu.attributes) {
    auto it = byName.find(name);
    const std::string where = gpu.attributesPointer + "/" + name;
    if (it == byName.end()) {
      gpu.source->fail(where, "unknown device attribute '" + name +
                                  "' (names are cuda.h's CU_DEVICE_ATTRIBUTE_* without the prefix)");
    }
    if (value < INT32_MIN || value > INT32_MAX) {
      gpu.source->fail(where, "attribute '" + name + "' does not fit in an int");
    }
    base[static_cast<size_t>(it->second)] = static_cast<int>(value);
  }

  std::vector<std::vector<int>> out;
  for (int d = 0; d < preset.gpuCount; ++d) {
    std::vector<int> v = base;
    // What the machine, not the GPU model, decides.
    v[CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED] =
        preset.multicastSupported() && base[CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED] != 0 ? 1 : 0;
    v[CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID] = preset.gpuNumaNode[static_cast<size_t>(d)];
    v[CU_DEVICE_ATTRIBUTE_NUMA_ID] = -1;  // the GPU's own memory is not a host NUMA node
    v[CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD_GROUP_ID] = d;
    v[CU_DEVICE_ATTRIBUTE_PCI_BUS_ID] = preset.pciBusId.empty() ? 0x10 + d : preset.pciBusId[static_cast<size_t>(d)];
    out.push_back(std::move(v));
  }
  return out;
}

}  // namespace mcsim::driver
