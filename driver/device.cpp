// Devices: enumeration, names, UUIDs, memory size, attributes, peer queries.
#include <cstdio>
#include <cstring>

#include "driver/driver.h"

using namespace mcsim::driver;

namespace mcsim::driver {

// A stable UUID per (preset, device): the same machine description always gives the same ids.
// Also hashed by the runtime's integrity check (export_tables.cpp). A tray's device is named by
// its GPU's place in the rack, so the GPUs of different trays have different UUIDs.
CUuuid deviceUuid(int dev) { return rackGpuUuid(state().tray.rackGpuOf(dev)); }

CUuuid rackGpuUuid(int dev) {
  const auto& preset = state().node->preset();
  uint64_t h1 = 0xcbf29ce484222325ull, h2 = 0x84222325cbf29ce4ull;
  for (char c : preset.name) {
    h1 = (h1 ^ static_cast<uint8_t>(c)) * 0x100000001b3ull;
    h2 = (h2 ^ static_cast<uint8_t>(c)) * 0x100000001b3ull + 7;
  }
  h1 ^= static_cast<uint64_t>(dev) * 0x9e3779b97f4a7c15ull;
  h2 ^= static_cast<uint64_t>(dev + 1) * 0xbf58476d1ce4e5b9ull;
  CUuuid u;
  std::memcpy(u.bytes, &h1, 8);
  std::memcpy(u.bytes + 8, &h2, 8);
  u.bytes[6] = static_cast<char>((u.bytes[6] & 0x0f) | 0x40);  // RFC 4122 version 4 layout
  u.bytes[8] = static_cast<char>((u.bytes[8] & 0x3f) | 0x80);
  return u;
}

}  // namespace mcsim::driver

extern "C" {

CUresult CUDAAPI cuDeviceGetCount(int* count) {
  MCSIM_REQUIRE_INIT();
  if (count == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *count = state().deviceCount;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGet(CUdevice* device, int ordinal) {
  MCSIM_REQUIRE_INIT_DEV_ARGS(ordinal, {"ordinal", ordinal});
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!validDevice(ordinal)) return CUDA_ERROR_INVALID_DEVICE;
  *device = ordinal;  // clients assume CUdevice values equal ordinals
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetName(char* name, int len, CUdevice dev) {
  MCSIM_REQUIRE_INIT_DEV(dev);
  if (name == nullptr || len == 0) return CUDA_ERROR_INVALID_VALUE;
  if (!validDevice(dev)) return CUDA_ERROR_INVALID_DEVICE;
  if (len < 0) return CUDA_SUCCESS;  // the real driver writes nothing and succeeds
  const std::string& n = state().node->preset().gpu.name;
  const size_t copy = std::min(n.size(), static_cast<size_t>(len - 1));
  std::memcpy(name, n.data(), copy);
  name[copy] = '\0';
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetUuid_v2(CUuuid* uuid, CUdevice dev) {
  MCSIM_REQUIRE_INIT_DEV(dev);
  if (uuid == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!validDevice(dev)) return CUDA_ERROR_INVALID_DEVICE;
  *uuid = deviceUuid(dev);
  return CUDA_SUCCESS;
}

// The pre-11.4 entry point; identical on devices without MIG.
#include "driver/abi_names.h"
CUresult CUDAAPI cuDeviceGetUuid(CUuuid* uuid, CUdevice dev) { return cuDeviceGetUuid_v2(uuid, dev); }

CUresult CUDAAPI cuDeviceTotalMem_v2(size_t* bytes, CUdevice dev) {
  MCSIM_REQUIRE_INIT_DEV(dev);
  if (bytes == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!validDevice(dev)) return CUDA_ERROR_INVALID_DEVICE;
  *bytes = state().node->preset().gpu.memoryBytes;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetAttribute(int* pi, CUdevice_attribute attrib, CUdevice dev) {
  MCSIM_REQUIRE_INIT_DEV_ARGS(dev, {"attribute", attrib});
  if (pi == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!validDevice(dev)) return CUDA_ERROR_INVALID_DEVICE;
  if (attrib <= 0 || attrib >= CU_DEVICE_ATTRIBUTE_MAX) return CUDA_ERROR_INVALID_VALUE;
  *pi = state().attributes[static_cast<size_t>(dev)][static_cast<size_t>(attrib)];
  return CUDA_SUCCESS;
}

// "domain:bus:device.function" in hex, as the real driver writes it ("0000:00:06.0").
CUresult CUDAAPI cuDeviceGetPCIBusId(char* pciBusId, int len, CUdevice dev) {
  MCSIM_REQUIRE_INIT_DEV(dev);
  if (pciBusId == nullptr || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  if (!validDevice(dev)) return CUDA_ERROR_INVALID_DEVICE;
  const auto& a = state().attributes[static_cast<size_t>(dev)];
  std::snprintf(pciBusId, static_cast<size_t>(len), "%04x:%02x:%02x.0", a[CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID],
                a[CU_DEVICE_ATTRIBUTE_PCI_BUS_ID], a[CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID]);
  return CUDA_SUCCESS;
}

// Takes "domain:bus:device.function" or "bus:device.function" (hex, either case), as the
// reference documents.
CUresult CUDAAPI cuDeviceGetByPCIBusId(CUdevice* dev, const char* pciBusId) {
  MCSIM_REQUIRE_INIT();
  if (dev == nullptr || pciBusId == nullptr) return CUDA_ERROR_INVALID_VALUE;
  unsigned domain = 0, bus = 0, device = 0, function = 0;
  int used = 0;
  if (std::sscanf(pciBusId, "%x:%x:%x.%x%n", &domain, &bus, &device, &function, &used) != 4 ||
      pciBusId[used] != '\0') {
    domain = 0;
    used = 0;
    if (std::sscanf(pciBusId, "%x:%x.%x%n", &bus, &device, &function, &used) != 3 || pciBusId[used] != '\0') {
      return CUDA_ERROR_INVALID_VALUE;
    }
  }
  for (int d = 0; d < state().deviceCount; ++d) {
    const auto& a = state().attributes[static_cast<size_t>(d)];
    if (static_cast<unsigned>(a[CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID]) == domain &&
        static_cast<unsigned>(a[CU_DEVICE_ATTRIBUTE_PCI_BUS_ID]) == bus &&
        static_cast<unsigned>(a[CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID]) == device && function == 0) {
      *dev = d;
      return CUDA_SUCCESS;
    }
  }
  return CUDA_ERROR_INVALID_DEVICE;
}

CUresult CUDAAPI cuDeviceCanAccessPeer(int* canAccessPeer, CUdevice dev, CUdevice peerDev) {
  MCSIM_REQUIRE_INIT_DEV_ARGS(dev, {"peer", peerDev});
  if (canAccessPeer == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!validDevice(dev) || !validDevice(peerDev)) return CUDA_ERROR_INVALID_DEVICE;
  // Every pair of GPUs on an NVLink fabric can reach each other while their links are up; a
  // device is not its own peer.
  const int can = (dev != peerDev && state().node->preset().nvlink.linksPerGpu > 0 &&
                   state().node->nvlinkUp(dev) && state().node->nvlinkUp(peerDev)) ? 1 : 0;
  // nvlinkUp answers false for a shared node that went away while it was asked.
  if (state().node->lost()) return CUDA_ERROR_DEVICE_UNAVAILABLE;
  *canAccessPeer = can;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetP2PAttribute(int* value, CUdevice_P2PAttribute attrib, CUdevice srcDevice,
                                         CUdevice dstDevice) {
  MCSIM_REQUIRE_INIT_ARGS({"attribute", attrib}, {"srcDevice", srcDevice}, {"dstDevice", dstDevice});
  if (value == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!validDevice(srcDevice) || !validDevice(dstDevice) || srcDevice == dstDevice) {
    return CUDA_ERROR_INVALID_DEVICE;
  }
  const bool linked = state().node->preset().nvlink.linksPerGpu > 0 && state().node->nvlinkUp(srcDevice) &&
                      state().node->nvlinkUp(dstDevice);
  if (state().node->lost()) return CUDA_ERROR_DEVICE_UNAVAILABLE;  // (as in cuDeviceCanAccessPeer)
  switch (attrib) {
    case CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK: *value = 0; break;
    case CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED:
    case CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED:
    case CU_DEVICE_P2P_ATTRIBUTE_CUDA_ARRAY_ACCESS_SUPPORTED: *value = linked ? 1 : 0; break;
    case CU_DEVICE_P2P_ATTRIBUTE_ONLY_PARTIAL_NATIVE_ATOMIC_SUPPORTED: *value = 0; break;
    default: return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

}  // extern "C"
