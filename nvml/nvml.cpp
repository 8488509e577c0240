// mcsim's libnvidia-ml.so.1 (docs/nvml.md): NVML answered from the simulated node the process is
// attached to, through the driver's bridge (driver/nvml_bridge.h). The library holds no state of
// the node: it keeps only NVML's init count and one handle object per device.
#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include <unistd.h>

#include <cuda.h>

#include "driver/nvml_bridge.h"
#include "nvml/nvml_api.h"

struct nvmlDevice_st {
  int index;
};

namespace {

// The real driver these answers are modelled on (docs/real-driver.md: an H100 and an H200 on
// driver 580.159.04).
constexpr const char* kDriverVersion = "580.159.04";

constexpr int kCudaSuccess = CUDA_SUCCESS;
constexpr int kCudaInvalidValue = CUDA_ERROR_INVALID_VALUE;
constexpr int kCudaNotInitialized = CUDA_ERROR_NOT_INITIALIZED;
constexpr int kCudaInvalidDevice = CUDA_ERROR_INVALID_DEVICE;
constexpr int kCudaDeviceUnavailable = CUDA_ERROR_DEVICE_UNAVAILABLE;

std::mutex gMu;
int gInitCount = 0;
// One handle per device, made at the first init and kept for the process's life, so that a handle
// stays the same pointer across shutdown and init as the real library's do.
std::vector<nvmlDevice_st>* gDevices = nullptr;

nvmlReturn_t fromBridge(int r) {
  switch (r) {
    case kCudaSuccess: return NVML_SUCCESS;
    case kCudaInvalidValue: return NVML_ERROR_INVALID_ARGUMENT;
    case kCudaInvalidDevice: return NVML_ERROR_INVALID_ARGUMENT;
    case kCudaNotInitialized: return NVML_ERROR_UNINITIALIZED;
    case kCudaDeviceUnavailable: return NVML_ERROR_GPU_IS_LOST;
    default: return NVML_ERROR_UNKNOWN;
  }
}

bool isInitialized() {
  std::lock_guard<std::mutex> l(gMu);
  return gInitCount > 0;
}

#define NVML_REQUIRE_INIT()                                  \
  do {                                                       \
    if (!isInitialized()) return NVML_ERROR_UNINITIALIZED;   \
  } while (0)

// The device of a handle this library gave out, or -1.
int deviceOf(nvmlDevice_t d) {
  std::lock_guard<std::mutex> l(gMu);
  if (d == nullptr || gDevices == nullptr || gDevices->empty()) return -1;
  const auto first = reinterpret_cast<uintptr_t>(gDevices->data());
  const auto p = reinterpret_cast<uintptr_t>(d);
  if (p < first || p >= first + gDevices->size() * sizeof(nvmlDevice_st)) return -1;
  if ((p - first) % sizeof(nvmlDevice_st) != 0) return -1;
  return d->index;
}

#define NVML_DEVICE(handle, var)                             \
  NVML_REQUIRE_INIT();                                       \
  const int var = deviceOf(handle);                          \
  if (var < 0) return NVML_ERROR_INVALID_ARGUMENT

nvmlReturn_t nodeInfo(mcsim_nvml_node_info* n) { return fromBridge(mcsim_nvml_node(n)); }
nvmlReturn_t deviceInfo(int dev, mcsim_nvml_device_info* d) { return fromBridge(mcsim_nvml_device(dev, d)); }

// Copies `s` with its terminator into `out`, or says how short `length` is.
nvmlReturn_t copyString(const std::string& s, char* out, unsigned int length) {
  if (out == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (length < s.size() + 1) return NVML_ERROR_INSUFFICIENT_SIZE;
  std::memcpy(out, s.c_str(), s.size() + 1);
  return NVML_SUCCESS;
}

std::string uuidString(const unsigned char* u) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0],
                u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
  return buf;
}

// NVSwitch chips are PCI devices of the node too; mcsim places them in PCI domain 1, bus
// 0x10 + chip, where no GPU of a preset can be (GPUs are in domain 0).
constexpr unsigned kSwitchDomain = 1;
unsigned switchBus(int chip) { return 0x10u + static_cast<unsigned>(chip); }
// NVIDIA's PCI vendor id; the device id of the GPU is not modelled (0).
constexpr unsigned kNvidiaVendor = 0x10de;

void fillPci(unsigned domain, unsigned bus, unsigned device, nvmlPciInfo_t* p) {
  std::memset(p, 0, sizeof(*p));
  p->domain = domain;
  p->bus = bus;
  p->device = device;
  p->pciDeviceId = kNvidiaVendor;
  std::snprintf(p->busIdLegacy, sizeof(p->busIdLegacy), "%04x:%02x:%02x.0", domain, bus, device);
  std::snprintf(p->busId, sizeof(p->busId), "%08x:%02x:%02x.0", domain, bus, device);
}

void toV1(const nvmlPciInfo_t& p, nvmlPciInfoV1_t* out) {
  std::memset(out, 0, sizeof(*out));
  std::memcpy(out->busId, p.busIdLegacy, sizeof(out->busId));
  out->domain = p.domain;
  out->bus = p.bus;
  out->device = p.device;
  out->pciDeviceId = p.pciDeviceId;
  out->pciSubSystemId = p.pciSubSystemId;
}

nvmlReturn_t devicePci(int dev, nvmlPciInfo_t* p) {
  mcsim_nvml_device_info d;
  if (const nvmlReturn_t r = deviceInfo(dev, &d)) return r;
  fillPci(d.pci_domain, d.pci_bus, d.pci_device, p);
  return NVML_SUCCESS;
}

// Parses "domain:bus:device.function" (domain of up to 8 hex digits) or "bus:device.function".
bool parseBusId(const char* s, unsigned* domain, unsigned* bus, unsigned* device) {
  unsigned fn = 0;
  int used = 0;
  if (std::sscanf(s, "%x:%x:%x.%x%n", domain, bus, device, &fn, &used) == 4 && s[used] == '\0') return fn == 0;
  *domain = 0;
  used = 0;
  if (std::sscanf(s, "%x:%x.%x%n", bus, device, &fn, &used) == 3 && s[used] == '\0') return fn == 0;
  return false;
}

nvmlReturn_t handleByIndex(unsigned index, nvmlDevice_t* device) {
  NVML_REQUIRE_INIT();
  if (device == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  std::lock_guard<std::mutex> l(gMu);
  if (gDevices == nullptr || index >= gDevices->size()) return NVML_ERROR_INVALID_ARGUMENT;
  *device = &(*gDevices)[index];
  return NVML_SUCCESS;
}

nvmlReturn_t handleByPciBusId(const char* busId, nvmlDevice_t* device) {
  NVML_REQUIRE_INIT();
  if (busId == nullptr || device == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  unsigned domain = 0, bus = 0, dev = 0;
  if (!parseBusId(busId, &domain, &bus, &dev)) return NVML_ERROR_INVALID_ARGUMENT;
  mcsim_nvml_node_info n;
  if (const nvmlReturn_t r = nodeInfo(&n)) return r;
  for (int i = 0; i < n.gpu_count; ++i) {
    mcsim_nvml_device_info d;
    if (const nvmlReturn_t r = deviceInfo(i, &d)) return r;
    if (d.pci_domain == domain && d.pci_bus == bus && d.pci_device == dev) return handleByIndex(static_cast<unsigned>(i), device);
  }
  return NVML_ERROR_NOT_FOUND;
}

nvmlReturn_t deviceCount(unsigned* count) {
  NVML_REQUIRE_INIT();
  if (count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  std::lock_guard<std::mutex> l(gMu);
  *count = gDevices == nullptr ? 0 : static_cast<unsigned>(gDevices->size());
  return NVML_SUCCESS;
}

// Checks a link number of a device: INVALID_ARGUMENT past NVML's largest link number,
// NOT_SUPPORTED for a link the GPU does not have (the real library answers so for links a GPU
// lacks). Sets `links` to the GPU's link count.
nvmlReturn_t checkLink(int dev, unsigned link, mcsim_nvml_node_info* n, mcsim_nvml_device_info* d) {
  if (link >= NVML_NVLINK_MAX_LINKS) return NVML_ERROR_INVALID_ARGUMENT;
  if (const nvmlReturn_t r = nodeInfo(n)) return r;
  if (const nvmlReturn_t r = deviceInfo(dev, d)) return r;
  if (static_cast<int>(link) >= n->links_per_gpu) return NVML_ERROR_NOT_SUPPORTED;
  return NVML_SUCCESS;
}

// NVLink's major version by architecture: 4 on Hopper (compute 9.x), 5 on Blackwell (10.x).
unsigned nvlinkVersion(const mcsim_nvml_device_info& d) {
  if (d.cc_major >= 10) return 5;
  if (d.cc_major == 9) return 4;
  if (d.cc_major == 8) return 3;
  return 2;
}

// The CPUs of host NUMA node `numa` of `numaNodes`: the machine's configured CPUs split into equal
// runs, one per node (the preset describes no cores; a machine with fewer CPUs than nodes gives
// every node all of them).
std::vector<int> cpusOfNumaNode(int numa, int numaNodes) {
  const long configured = sysconf(_SC_NPROCESSORS_CONF);
  const int cpus = configured > 0 ? static_cast<int>(configured) : 1;
  std::vector<int> out;
  if (numaNodes <= 0 || cpus < numaNodes || numa < 0) {
    for (int c = 0; c < cpus; ++c) out.push_back(c);
    return out;
  }
  const int per = cpus / numaNodes;
  for (int c = numa * per; c < (numa + 1) * per; ++c) out.push_back(c);
  return out;
}

nvmlReturn_t cpuAffinity(nvmlDevice_t device, unsigned cpuSetSize, unsigned long* cpuSet) {
  NVML_DEVICE(device, dev);
  if (cpuSet == nullptr || cpuSetSize == 0) return NVML_ERROR_INVALID_ARGUMENT;
  mcsim_nvml_node_info n;
  mcsim_nvml_device_info d;
  if (const nvmlReturn_t r = nodeInfo(&n)) return r;
  if (const nvmlReturn_t r = deviceInfo(dev, &d)) return r;
  std::memset(cpuSet, 0, cpuSetSize * sizeof(unsigned long));
  constexpr unsigned kBits = sizeof(unsigned long) * 8;
  for (int c : cpusOfNumaNode(d.host_numa_node, n.host_numa_nodes)) {
    const unsigned word = static_cast<unsigned>(c) / kBits;
    if (word < cpuSetSize) cpuSet[word] |= 1ul << (static_cast<unsigned>(c) % kBits);
  }
  return NVML_SUCCESS;
}

// The fabric manager's state as NVML's GPU fabric registration reports it.
struct FabricAnswer {
  nvmlReturn_t call = NVML_SUCCESS;  // what the call itself returns
  nvmlGpuFabricState_t state = NVML_GPU_FABRIC_STATE_NOT_SUPPORTED;
  nvmlReturn_t status = NVML_SUCCESS;
  unsigned cliqueId = 0;
  unsigned char clusterUuid[NVML_GPU_FABRIC_UUID_LEN] = {};
  unsigned healthMask = NVML_GPU_FABRIC_HEALTH_MASK_DEGRADED_BW_NOT_SUPPORTED;
};

FabricAnswer fabricAnswer(int dev) {
  FabricAnswer a;
  mcsim_nvml_node_info n;
  mcsim_nvml_device_info d;
  if ((a.call = nodeInfo(&n)) != NVML_SUCCESS) return a;
  if ((a.call = deviceInfo(dev, &d)) != NVML_SUCCESS) return a;
  if (n.switch_count == 0) {
    a.call = NVML_ERROR_NOT_SUPPORTED;  // no NVLink fabric to register with
    return a;
  }
  // One cluster per node, named from the preset so that every process of a shared node reads
  // the same; the whole NVLink domain is one clique.
  uint64_t h1 = 0x6d6373696d2d666dull, h2 = 0x636c75737465722dull;
  for (const char* c = n.preset; *c != '\0'; ++c) {
    h1 = (h1 ^ static_cast<unsigned char>(*c)) * 0x100000001b3ull;
    h2 = (h2 ^ static_cast<unsigned char>(*c)) * 0x100000001b3ull + 11;
  }
  std::memcpy(a.clusterUuid, &h1, 8);
  std::memcpy(a.clusterUuid + 8, &h2, 8);
  a.cliqueId = 1;
  switch (n.fabric_manager_state) {
    case 0: a.state = NVML_GPU_FABRIC_STATE_NOT_STARTED; break;
    case 1: a.state = NVML_GPU_FABRIC_STATE_IN_PROGRESS; break;
    case 2:
      a.state = NVML_GPU_FABRIC_STATE_COMPLETED;
      a.healthMask = NVML_GPU_FABRIC_HEALTH_MASK_DEGRADED_BW_FALSE;
      break;
    default:  // degraded: registration completed, and failed
      a.state = NVML_GPU_FABRIC_STATE_COMPLETED;
      a.status = NVML_ERROR_UNKNOWN;
      a.healthMask = NVML_GPU_FABRIC_HEALTH_MASK_DEGRADED_BW_TRUE;
      break;
  }
  if (a.state != NVML_GPU_FABRIC_STATE_COMPLETED) {
    std::memset(a.clusterUuid, 0, sizeof(a.clusterUuid));
    a.cliqueId = 0;
  }
  return a;
}

nvmlReturn_t init(unsigned flags) {
  (void)flags;  // with NO_GPUS the real library still counts the GPUs it finds; so does this one
  {
    std::lock_guard<std::mutex> l(gMu);
    if (gInitCount > 0) {
      ++gInitCount;
      return NVML_SUCCESS;
    }
  }
  const int r = mcsim_nvml_attach(MCSIM_NVML_BRIDGE_VERSION);
  if (r != kCudaSuccess) return r == kCudaDeviceUnavailable ? NVML_ERROR_GPU_IS_LOST : NVML_ERROR_DRIVER_NOT_LOADED;
  mcsim_nvml_node_info n;
  if (const nvmlReturn_t nr = fromBridge(mcsim_nvml_node(&n))) return nr;
  std::lock_guard<std::mutex> l(gMu);
  if (gDevices == nullptr) {
    gDevices = new std::vector<nvmlDevice_st>(static_cast<size_t>(n.gpu_count));
    for (int i = 0; i < n.gpu_count; ++i) (*gDevices)[static_cast<size_t>(i)].index = i;
  }
  ++gInitCount;
  return NVML_SUCCESS;
}

nvmlReturn_t processes(nvmlDevice_t device, unsigned* infoCount) {
  NVML_DEVICE(device, dev);
  (void)dev;
  if (infoCount == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *infoCount = 0;  // no process is listed: the node does not report who holds a GPU
  return NVML_SUCCESS;
}

}  // namespace

extern "C" {

const char* nvmlErrorString(nvmlReturn_t result) {
  switch (result) {
    case NVML_SUCCESS: return "Success";
    case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
    case NVML_ERROR_NO_PERMISSION: return "Insufficient Permissions";
    case NVML_ERROR_ALREADY_INITIALIZED: return "Already Initialized";
    case NVML_ERROR_NOT_FOUND: return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
    case NVML_ERROR_INSUFFICIENT_POWER: return "Insufficient External Power";
    case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
    case NVML_ERROR_TIMEOUT: return "Timeout";
    case NVML_ERROR_IRQ_ISSUE: return "Interrupt Request Issue";
    case NVML_ERROR_LIBRARY_NOT_FOUND: return "NVML Shared Library Not Found";
    case NVML_ERROR_FUNCTION_NOT_FOUND: return "Function Not Found";
    case NVML_ERROR_CORRUPTED_INFOROM: return "Corrupted infoROM";
    case NVML_ERROR_GPU_IS_LOST: return "GPU is lost";
    case NVML_ERROR_RESET_REQUIRED: return "GPU requires reset";
    case NVML_ERROR_OPERATING_SYSTEM: return "GPU access blocked by the operating system";
    case NVML_ERROR_LIB_RM_VERSION_MISMATCH: return "Driver/library version mismatch";
    case NVML_ERROR_IN_USE: return "In use by another client";
    case NVML_ERROR_MEMORY: return "Insufficient Memory";
    case NVML_ERROR_NO_DATA: return "No data";
    case NVML_ERROR_ARGUMENT_VERSION_MISMATCH: return "Argument version mismatch";
    case NVML_ERROR_NOT_READY: return "Not Ready";
    case NVML_ERROR_UNKNOWN: return "Unknown Error";
    default: return "Unknown Error";
  }
}

nvmlReturn_t nvmlInit(void) { return init(0); }
nvmlReturn_t nvmlInit_v2(void) { return init(0); }
nvmlReturn_t nvmlInitWithFlags(unsigned int flags) { return init(flags); }

nvmlReturn_t nvmlShutdown(void) {
  std::lock_guard<std::mutex> l(gMu);
  if (gInitCount == 0) return NVML_ERROR_UNINITIALIZED;
  --gInitCount;  // the node stays: it is the driver's, for the process's life
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned int length) {
  NVML_REQUIRE_INIT();
  return copyString(kDriverVersion, version, length);
}

nvmlReturn_t nvmlSystemGetNVMLVersion(char* version, unsigned int length) {
  NVML_REQUIRE_INIT();
  mcsim_nvml_node_info n;
  if (const nvmlReturn_t r = nodeInfo(&n)) return r;
  // "<CUDA major>.<driver version>", as the real library writes it.
  return copyString(std::to_string(n.cuda_driver_version / 1000) + "." + kDriverVersion, version, length);
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion(int* cudaDriverVersion) {
  NVML_REQUIRE_INIT();
  if (cudaDriverVersion == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  mcsim_nvml_node_info n;
  if (const nvmlReturn_t r = nodeInfo(&n)) return r;
  *cudaDriverVersion = n.cuda_driver_version;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int* cudaDriverVersion) {
  return nvmlSystemGetCudaDriverVersion(cudaDriverVersion);
}

nvmlReturn_t nvmlDeviceGetCount(unsigned int* count) { return deviceCount(count); }
nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* count) { return deviceCount(count); }
nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t* device) { return handleByIndex(index, device); }
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t* device) {
  return handleByIndex(index, device);
}
nvmlReturn_t nvmlDeviceGetHandleByPciBusId(const char* busId, nvmlDevice_t* device) {
  return handleByPciBusId(busId, device);
}
nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char* busId, nvmlDevice_t* device) {
  return handleByPciBusId(busId, device);
}

nvmlReturn_t nvmlDeviceGetHandleByUUID(const char* uuid, nvmlDevice_t* device) {
  NVML_REQUIRE_INIT();
  if (uuid == nullptr || device == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  mcsim_nvml_node_info n;
  if (const nvmlReturn_t r = nodeInfo(&n)) return r;
  std::string wanted(uuid);
  std::transform(wanted.begin(), wanted.end(), wanted.begin(), [](unsigned char c) { return std::tolower(c); });
  for (int i = 0; i < n.gpu_count; ++i) {
    mcsim_nvml_device_info d;
    if (const nvmlReturn_t r = deviceInfo(i, &d)) return r;
    std::string mine = uuidString(d.uuid);
    std::transform(mine.begin(), mine.end(), mine.begin(), [](unsigned char c) { return std::tolower(c); });
    if (mine == wanted) return handleByIndex(static_cast<unsigned>(i), device);
  }
  return NVML_ERROR_NOT_FOUND;
}

nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device, unsigned int* index) {
  NVML_DEVICE(device, dev);
  if (index == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *index = static_cast<unsigned>(dev);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t device, unsigned int* minorNumber) {
  NVML_DEVICE(device, dev);
  if (minorNumber == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *minorNumber = static_cast<unsigned>(dev);  // /dev/nvidiaN: ordinal order
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char* name, unsigned int length) {
  NVML_DEVICE(device, dev);
  if (name == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  mcsim_nvml_device_info d;
  if (const nvmlReturn_t r = deviceInfo(dev, &d)) return r;
  return copyString(d.name, name, length);
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid, unsigned int length) {
  NVML_DEVICE(device, dev);
  if (uuid == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  mcsim_nvml_device_info d;
  if (const nvmlReturn_t r = deviceInfo(dev, &d)) return r;
  return copyString(uuidString(d.uuid), uuid, length);
}

nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t* pci) {
  NVML_DEVICE(device, dev);
  if (pci == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  return devicePci(dev, pci);
}

nvmlReturn_t nvmlDeviceGetPciInfo(nvmlDevice_t device, nvmlPciInfoV1_t* pci) {
  NVML_DEVICE(device, dev);
  if (pci == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  nvmlPciInfo_t p;
  if (const nvmlReturn_t r = devicePci(dev, &p)) return r;
  toV1(p, pci);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t* memory) {
  NVML_DEVICE(device, dev);
  if (memory == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  mcsim_nvml_device_info d;
  if (const nvmlReturn_t r = deviceInfo(dev, &d)) return r;
  memory->total = d.memory_total;
  memory->free = d.memory_free;
  memory->used = d.memory_total - d.memory_free;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t* memory) {
  NVML_DEVICE(device, dev);
  if (memory == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (memory->version != nvmlMemory_v2) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  mcsim_nvml_device_info d;
  if (const nvmlReturn_t r = deviceInfo(dev, &d)) return r;
  memory->total = d.memory_total;
  memory->reserved = 0;  // the simulated driver reserves none of the GPU's memory
  memory->free = d.memory_free;
  memory->used = d.memory_total - d.memory_free;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t device, int* major, int* minor) {
  NVML_DEVICE(device, dev);
  if (major == nullptr || minor == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  mcsim_nvml_device_info d;
  if (const nvmlReturn_t r = deviceInfo(dev, &d)) return r;
  *major = d.cc_major;
  *minor = d.cc_minor;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t device, unsigned int link, nvmlEnableState_t* isActive) {
  NVML_DEVICE(device, dev);
  if (isActive == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  mcsim_nvml_node_info n;
  mcsim_nvml_device_info d;
  if (const nvmlReturn_t r = checkLink(dev, link, &n, &d)) return r;
  *isActive = d.nvlink_up ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetNvLinkVersion(nvmlDevice_t device, unsigned int link, unsigned int* version) {
  NVML_DEVICE(device, dev);
  if (version == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  mcsim_nvml_node_info n;
  mcsim_nvml_device_info d;
  if (const nvmlReturn_t r = checkLink(dev, link, &n, &d)) return r;
  *version = nvlinkVersion(d);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetNvLinkCapability(nvmlDevice_t device, unsigned int link, nvmlNvLinkCapability_t capability,
                                           unsigned int* capResult) {
  NVML_DEVICE(device, dev);
  if (capResult == nullptr || capability < 0 || capability >= NVML_NVLINK_CAP_COUNT) return NVML_ERROR_INVALID_ARGUMENT;
  mcsim_nvml_node_info n;
  mcsim_nvml_device_info d;
  if (const nvmlReturn_t r = checkLink(dev, link, &n, &d)) return r;
  switch (capability) {
    case NVML_NVLINK_CAP_P2P_SUPPORTED:
    case NVML_NVLINK_CAP_P2P_ATOMICS:
    case NVML_NVLINK_CAP_VALID: *capResult = 1; break;
    default: *capResult = 0; break;  // links reach switches and GPUs, not host memory or a bridge
  }
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t device, unsigned int link, nvmlPciInfo_t* pci) {
  NVML_DEVICE(device, dev);
  if (pci == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  mcsim_nvml_node_info n;
  mcsim_nvml_device_info d;
  if (const nvmlReturn_t r = checkLink(dev, link, &n, &d)) return r;
  int chip = 0;
  if (const nvmlReturn_t r = fromBridge(mcsim_nvml_link_switch(dev, static_cast<int>(link), &chip))) return r;
  fillPci(kSwitchDomain, switchBus(chip), 0, pci);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo(nvmlDevice_t device, unsigned int link, nvmlPciInfoV1_t* pci) {
  if (pci == nullptr) {
    NVML_REQUIRE_INIT();
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  nvmlPciInfo_t p;
  if (const nvmlReturn_t r = nvmlDeviceGetNvLinkRemotePciInfo_v2(device, link, &p)) return r;
  toV1(p, pci);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetNvLinkRemoteDeviceType(nvmlDevice_t device, unsigned int link,
                                                 nvmlIntNvLinkDeviceType_t* type) {
  NVML_DEVICE(device, dev);
  if (type == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  mcsim_nvml_node_info n;
  mcsim_nvml_device_info d;
  if (const nvmlReturn_t r = checkLink(dev, link, &n, &d)) return r;
  *type = NVML_NVLINK_DEVICE_TYPE_SWITCH;  // every NVLink of a preset goes to an NVSwitch chip
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetP2PStatus(nvmlDevice_t device1, nvmlDevice_t device2, nvmlGpuP2PCapsIndex_t index,
                                    nvmlGpuP2PStatus_t* status) {
  NVML_REQUIRE_INIT();
  const int a = deviceOf(device1), b = deviceOf(device2);
  if (a < 0 || b < 0 || status == nullptr || index < 0 || index >= NVML_P2P_CAPS_INDEX_UNKNOWN) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  mcsim_nvml_device_info da, db;
  if (const nvmlReturn_t r = deviceInfo(a, &da)) return r;
  if (const nvmlReturn_t r = deviceInfo(b, &db)) return r;
  // Peers reach each other over NVLink while both GPUs' links are up (cuDeviceCanAccessPeer's
  // rule); a GPU reaches itself.
  const bool linked = a == b || (da.nvlink_up && db.nvlink_up);
  *status = linked ? NVML_P2P_STATUS_OK : NVML_P2P_STATUS_NOT_SUPPORTED;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetTopologyCommonAncestor(nvmlDevice_t device1, nvmlDevice_t device2,
                                                 nvmlGpuTopologyLevel_t* pathInfo) {
  NVML_REQUIRE_INIT();
  const int a = deviceOf(device1), b = deviceOf(device2);
  if (a < 0 || b < 0 || pathInfo == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  mcsim_nvml_device_info da, db;
  if (const nvmlReturn_t r = deviceInfo(a, &da)) return r;
  if (const nvmlReturn_t r = deviceInfo(b, &db)) return r;
  // The preset places each GPU under a host NUMA node and describes no PCIe switches: two GPUs
  // meet at their NUMA node's host bridges, or across the interconnect between NUMA nodes.
  if (a == b) *pathInfo = NVML_TOPOLOGY_INTERNAL;
  else *pathInfo = da.host_numa_node == db.host_numa_node ? NVML_TOPOLOGY_NODE : NVML_TOPOLOGY_SYSTEM;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCpuAffinity(nvmlDevice_t device, unsigned int cpuSetSize, unsigned long* cpuSet) {
  return cpuAffinity(device, cpuSetSize, cpuSet);
}

nvmlReturn_t nvmlDeviceGetCpuAffinityWithinScope(nvmlDevice_t device, unsigned int cpuSetSize, unsigned long* cpuSet,
                                                 nvmlAffinityScope_t scope) {
  if (scope != NVML_AFFINITY_SCOPE_NODE && scope != NVML_AFFINITY_SCOPE_SOCKET) {
    NVML_REQUIRE_INIT();
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  return cpuAffinity(device, cpuSetSize, cpuSet);  // one socket per NUMA node
}

// The host NUMA node whose memory is closest to the GPU (the preset's host.gpu_numa_node).
nvmlReturn_t nvmlDeviceGetMemoryAffinity(nvmlDevice_t device, unsigned int nodeSetSize, unsigned long* nodeSet,
                                         nvmlAffinityScope_t scope) {
  NVML_DEVICE(device, dev);
  if (nodeSet == nullptr || nodeSetSize == 0 ||
      (scope != NVML_AFFINITY_SCOPE_NODE && scope != NVML_AFFINITY_SCOPE_SOCKET)) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  mcsim_nvml_device_info d;
  if (const nvmlReturn_t r = deviceInfo(dev, &d)) return r;
  std::memset(nodeSet, 0, nodeSetSize * sizeof(unsigned long));
  constexpr unsigned kBits = sizeof(unsigned long) * 8;
  const auto numa = static_cast<unsigned>(d.host_numa_node);
  if (numa / kBits >= nodeSetSize) return NVML_ERROR_INSUFFICIENT_SIZE;
  nodeSet[numa / kBits] = 1ul << (numa % kBits);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetNumaNodeId(nvmlDevice_t device, unsigned int* node) {
  NVML_DEVICE(device, dev);
  if (node == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  mcsim_nvml_device_info d;
  if (const nvmlReturn_t r = deviceInfo(dev, &d)) return r;
  if (d.numa_id < 0) return NVML_ERROR_NOT_SUPPORTED;  // the GPU's memory is no NUMA node
  *node = static_cast<unsigned>(d.numa_id);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetGpuFabricInfo(nvmlDevice_t device, nvmlGpuFabricInfo_t* info) {
  NVML_DEVICE(device, dev);
  if (info == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  const FabricAnswer a = fabricAnswer(dev);
  if (a.call != NVML_SUCCESS) return a.call;
  std::memcpy(info->clusterUuid, a.clusterUuid, sizeof(info->clusterUuid));
  info->status = a.status;
  info->cliqueId = a.cliqueId;
  info->state = a.state;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetGpuFabricInfoV(nvmlDevice_t device, nvmlGpuFabricInfoV_t* info) {
  NVML_DEVICE(device, dev);
  if (info == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (info->version != nvmlGpuFabricInfo_v2) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  const FabricAnswer a = fabricAnswer(dev);
  if (a.call != NVML_SUCCESS) return a.call;
  std::memcpy(info->clusterUuid, a.clusterUuid, sizeof(info->clusterUuid));
  info->status = a.status;
  info->cliqueId = a.cliqueId;
  info->state = a.state;
  info->healthMask = a.healthMask;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t device, int valuesCount, nvmlFieldValue_t* values) {
  NVML_DEVICE(device, dev);
  if (values == nullptr || valuesCount < 0) return NVML_ERROR_INVALID_ARGUMENT;
  mcsim_nvml_node_info n;
  mcsim_nvml_device_info d;
  if (const nvmlReturn_t r = nodeInfo(&n)) return r;
  if (const nvmlReturn_t r = deviceInfo(dev, &d)) return r;
  for (int i = 0; i < valuesCount; ++i) {
    nvmlFieldValue_t& v = values[i];
    v.timestamp = 0;  // simulated: no wall time in answers
    v.latencyUsec = 0;
    v.valueType = NVML_VALUE_TYPE_UNSIGNED_INT;
    v.nvmlReturn = NVML_SUCCESS;
    v.value.ullVal = 0;
    const bool linkOk = static_cast<int>(v.scopeId) < n.links_per_gpu;
    switch (v.fieldId) {
      case NVML_FI_DEV_NVLINK_LINK_COUNT: v.value.uiVal = static_cast<unsigned>(n.links_per_gpu); break;
      case NVML_FI_DEV_NVLINK_GET_STATE:
        if (!linkOk) v.nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
        else v.value.uiVal = d.nvlink_up ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
        break;
      case NVML_FI_DEV_NVLINK_GET_VERSION:
        if (!linkOk) v.nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
        else v.value.uiVal = nvlinkVersion(d);
        break;
      case NVML_FI_DEV_C2C_LINK_COUNT: v.value.uiVal = 0; break;  // no NVLink-C2C to a host CPU is modelled
      default: v.nvmlReturn = NVML_ERROR_NOT_SUPPORTED; break;
    }
  }
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t device, unsigned int* infoCount,
                                                  nvmlProcessInfo_v1_t* infos) {
  (void)infos;
  return processes(device, infoCount);
}
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t device, unsigned int* infoCount,
                                                     nvmlProcessInfo_t* infos) {
  (void)infos;
  return processes(device, infoCount);
}
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int* infoCount,
                                                     nvmlProcessInfo_t* infos) {
  (void)infos;
  return processes(device, infoCount);
}

}  // extern "C"
