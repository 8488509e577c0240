// `mcsim smi` and `mcsim smi topo -m`: what nvidia-smi and `nvidia-smi topo -m` print, for the
// simulated node, read through mcsim's own libnvidia-ml.so.1 (docs/nvml.md) as nvidia-smi reads
// the real one. The library attaches this process to its node: the shared node MCSIM_NODE names,
// or an embedded node of the preset (--topology, MCSIM_TOPOLOGY, or the default).
#include <dlfcn.h>
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "driver_library.h"
#include "nvml/nvml_api.h"

namespace mcsim::tools {

namespace {

constexpr const char* kNvmlLibraryName = "libnvidia-ml.so.1";

// The NVML functions the command calls, resolved from the library.
struct Nvml {
#define MCSIM_NVML_FN(name) decltype(&::name) name = nullptr;
  MCSIM_NVML_FN(nvmlInit_v2)
  MCSIM_NVML_FN(nvmlShutdown)
  MCSIM_NVML_FN(nvmlErrorString)
  MCSIM_NVML_FN(nvmlSystemGetDriverVersion)
  MCSIM_NVML_FN(nvmlSystemGetCudaDriverVersion_v2)
  MCSIM_NVML_FN(nvmlDeviceGetCount_v2)
  MCSIM_NVML_FN(nvmlDeviceGetHandleByIndex_v2)
  MCSIM_NVML_FN(nvmlDeviceGetName)
  MCSIM_NVML_FN(nvmlDeviceGetPciInfo_v3)
  MCSIM_NVML_FN(nvmlDeviceGetMemoryInfo)
  MCSIM_NVML_FN(nvmlDeviceGetNvLinkState)
  MCSIM_NVML_FN(nvmlDeviceGetNvLinkRemotePciInfo_v2)
  MCSIM_NVML_FN(nvmlDeviceGetGpuFabricInfoV)
  MCSIM_NVML_FN(nvmlDeviceGetTopologyCommonAncestor)
  MCSIM_NVML_FN(nvmlDeviceGetCpuAffinity)
  MCSIM_NVML_FN(nvmlDeviceGetMemoryAffinity)
  MCSIM_NVML_FN(nvmlDeviceGetNumaNodeId)
#undef MCSIM_NVML_FN
};

// Loads the library beside mcsim's driver and resolves every function, or says why not.
bool loadNvml(Nvml* n, std::string* problem) {
  const DriverLibraryDir lib = findDriverLibraryDir();
  if (lib.dir.empty()) {
    *problem = lib.problem;
    return false;
  }
  const std::string path = lib.dir + "/" + kNvmlLibraryName;
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    *problem = fmt::format("cannot load {}: {}", path, dlerror());
    return false;
  }
  bool ok = true;
  auto resolve = [&](auto& fn, const char* name) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(h, name));
    if (fn == nullptr) {
      *problem = fmt::format("{} has no {}", path, name);
      ok = false;
    }
  };
#define MCSIM_NVML_RESOLVE(name) resolve(n->name, #name);
  MCSIM_NVML_RESOLVE(nvmlInit_v2)
  MCSIM_NVML_RESOLVE(nvmlShutdown)
  MCSIM_NVML_RESOLVE(nvmlErrorString)
  MCSIM_NVML_RESOLVE(nvmlSystemGetDriverVersion)
  MCSIM_NVML_RESOLVE(nvmlSystemGetCudaDriverVersion_v2)
  MCSIM_NVML_RESOLVE(nvmlDeviceGetCount_v2)
  MCSIM_NVML_RESOLVE(nvmlDeviceGetHandleByIndex_v2)
  MCSIM_NVML_RESOLVE(nvmlDeviceGetName)
  MCSIM_NVML_RESOLVE(nvmlDeviceGetPciInfo_v3)
  MCSIM_NVML_RESOLVE(nvmlDeviceGetMemoryInfo)
  MCSIM_NVML_RESOLVE(nvmlDeviceGetNvLinkState)
  MCSIM_NVML_RESOLVE(nvmlDeviceGetNvLinkRemotePciInfo_v2)
  MCSIM_NVML_RESOLVE(nvmlDeviceGetGpuFabricInfoV)
  MCSIM_NVML_RESOLVE(nvmlDeviceGetTopologyCommonAncestor)
  MCSIM_NVML_RESOLVE(nvmlDeviceGetCpuAffinity)
  MCSIM_NVML_RESOLVE(nvmlDeviceGetMemoryAffinity)
  MCSIM_NVML_RESOLVE(nvmlDeviceGetNumaNodeId)
#undef MCSIM_NVML_RESOLVE
  return ok;
}

struct Gpu {
  nvmlDevice_t handle = nullptr;
  std::string name;
  std::string busId;
  nvmlMemory_t memory{};
  int links = 0;    // the NVLinks the GPU has
  int linksUp = 0;
  std::map<std::string, int> linksToSwitch;  // remote bus id -> links, for links that are up
  std::string fabric;
};

const char* fabricStateName(const nvmlGpuFabricInfoV_t& f) {
  switch (f.state) {
    case NVML_GPU_FABRIC_STATE_NOT_STARTED: return "Not Started";
    case NVML_GPU_FABRIC_STATE_IN_PROGRESS: return "In Progress";
    case NVML_GPU_FABRIC_STATE_COMPLETED: return f.status == NVML_SUCCESS ? "Completed" : "Failed";
    default: return "N/A";
  }
}

// "0-23,48-71" from a CPU mask, as nvidia-smi writes affinity.
std::string cpuRanges(const std::vector<unsigned long>& mask) {
  constexpr int kBits = sizeof(unsigned long) * 8;
  std::string out;
  const int total = static_cast<int>(mask.size()) * kBits;
  for (int c = 0; c < total;) {
    if ((mask[static_cast<size_t>(c / kBits)] >> (c % kBits) & 1ul) == 0) {
      ++c;
      continue;
    }
    int end = c;
    while (end + 1 < total && (mask[static_cast<size_t>((end + 1) / kBits)] >> ((end + 1) % kBits) & 1ul) != 0) ++end;
    out += (out.empty() ? "" : ",") + (end == c ? std::to_string(c) : fmt::format("{}-{}", c, end));
    c = end + 1;
  }
  return out.empty() ? "N/A" : out;
}

int smi(const std::string& topology, const std::string& tray, bool topoMatrix) {
  if (!topology.empty()) setenv("MCSIM_TOPOLOGY", topology.c_str(), 1);
  if (!tray.empty()) setenv("MCSIM_TRAY", tray.c_str(), 1);
  Nvml n;
  std::string problem;
  if (!loadNvml(&n, &problem)) {
    std::fprintf(stderr, "mcsim smi: %s\n", problem.c_str());
    return kExitFailure;
  }
  const nvmlReturn_t init = n.nvmlInit_v2();
  if (init != NVML_SUCCESS) {
    std::fprintf(stderr, "mcsim smi: nvmlInit failed: %s (the driver says why above)\n", n.nvmlErrorString(init));
    return kExitFailure;
  }
  unsigned count = 0;
  char driver[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE] = {};
  int cuda = 0;
  n.nvmlDeviceGetCount_v2(&count);
  n.nvmlSystemGetDriverVersion(driver, sizeof(driver));
  n.nvmlSystemGetCudaDriverVersion_v2(&cuda);
  std::vector<Gpu> gpus(count);
  for (unsigned i = 0; i < count; ++i) {
    Gpu& g = gpus[i];
    n.nvmlDeviceGetHandleByIndex_v2(i, &g.handle);
    char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE] = {};
    n.nvmlDeviceGetName(g.handle, name, sizeof(name));
    g.name = name;
    nvmlPciInfo_t pci{};
    n.nvmlDeviceGetPciInfo_v3(g.handle, &pci);
    g.busId = pci.busId;
    n.nvmlDeviceGetMemoryInfo(g.handle, &g.memory);
    for (unsigned l = 0; l < NVML_NVLINK_MAX_LINKS; ++l) {
      nvmlEnableState_t active = NVML_FEATURE_DISABLED;
      if (n.nvmlDeviceGetNvLinkState(g.handle, l, &active) != NVML_SUCCESS) continue;
      ++g.links;
      if (active != NVML_FEATURE_ENABLED) continue;
      ++g.linksUp;
      nvmlPciInfo_t remote{};
      if (n.nvmlDeviceGetNvLinkRemotePciInfo_v2(g.handle, l, &remote) == NVML_SUCCESS) ++g.linksToSwitch[remote.busId];
    }
    nvmlGpuFabricInfoV_t fabric{};
    fabric.version = nvmlGpuFabricInfo_v2;
    g.fabric = n.nvmlDeviceGetGpuFabricInfoV(g.handle, &fabric) == NVML_SUCCESS ? fabricStateName(fabric) : "N/A";
  }

  if (!topoMatrix) {
    const std::string rule = "+------+--------------------------+--------------------+-----------------------+--------+-------------+";
    fmt::print("{}\n", rule);
    fmt::print("| {:<{}} |\n", fmt::format("mcsim smi      Driver Version: {}      CUDA Version: {}.{}", driver,
                                            cuda / 1000, cuda % 1000 / 10),
               rule.size() - 4);
    fmt::print("{}\n", rule);
    fmt::print("| GPU  | Name                     | Bus-Id             | Memory-Usage          | NVLink | Fabric      |\n");
    fmt::print("|{}|\n", std::string(rule.size() - 2, '='));
    for (unsigned i = 0; i < count; ++i) {
      const Gpu& g = gpus[i];
      const std::string mem = fmt::format("{}MiB / {}MiB", g.memory.used >> 20, g.memory.total >> 20);
      fmt::print("| {:>4} | {:<24} | {:<18} | {:>21} | {:>6} | {:<11} |\n", i, g.name.substr(0, 24), g.busId, mem,
                 fmt::format("{}/{}", g.linksUp, g.links), g.fabric);
    }
    fmt::print("{}\n", rule);
    fmt::print("Processes: none listed (the simulated node does not report which process holds a GPU)\n");
    n.nvmlShutdown();
    return kExitOk;
  }

  // The matrix: NV# where two GPUs share NVSwitch chips (the links of the pair that meet at a
  // common chip, every chip counted once: NV18 on an HGX board), otherwise what the PCIe path
  // crosses (NODE within a NUMA node, SYS across).
  std::string header = "        ";
  for (unsigned j = 0; j < count; ++j) header += fmt::format("{:<8}", fmt::format("GPU{}", j));
  header += "CPU Affinity    NUMA Affinity   GPU NUMA ID";
  fmt::print("{}\n", header);
  for (unsigned i = 0; i < count; ++i) {
    std::string row = fmt::format("{:<8}", fmt::format("GPU{}", i));
    for (unsigned j = 0; j < count; ++j) {
      std::string cell;
      if (i == j) {
        cell = " X";
      } else {
        int links = 0;
        for (const auto& [sw, a] : gpus[i].linksToSwitch) {
          auto it = gpus[j].linksToSwitch.find(sw);
          if (it != gpus[j].linksToSwitch.end()) links += std::min(a, it->second);
        }
        if (links > 0) {
          cell = fmt::format("NV{}", links);
        } else {
          nvmlGpuTopologyLevel_t level = NVML_TOPOLOGY_SYSTEM;
          n.nvmlDeviceGetTopologyCommonAncestor(gpus[i].handle, gpus[j].handle, &level);
          switch (level) {
            case NVML_TOPOLOGY_SINGLE: cell = "PIX"; break;
            case NVML_TOPOLOGY_MULTIPLE: cell = "PXB"; break;
            case NVML_TOPOLOGY_HOSTBRIDGE: cell = "PHB"; break;
            case NVML_TOPOLOGY_NODE: cell = "NODE"; break;
            default: cell = "SYS"; break;
          }
        }
      }
      row += fmt::format("{:<8}", cell);
    }
    std::vector<unsigned long> cpus(64);
    n.nvmlDeviceGetCpuAffinity(gpus[i].handle, static_cast<unsigned>(cpus.size()), cpus.data());
    std::vector<unsigned long> nodes(4);
    std::string numa = "N/A";
    if (n.nvmlDeviceGetMemoryAffinity(gpus[i].handle, static_cast<unsigned>(nodes.size()), nodes.data(),
                                      NVML_AFFINITY_SCOPE_NODE) == NVML_SUCCESS) {
      numa = cpuRanges(nodes);
    }
    unsigned gpuNuma = 0;
    const std::string gpuNumaText =
        n.nvmlDeviceGetNumaNodeId(gpus[i].handle, &gpuNuma) == NVML_SUCCESS ? std::to_string(gpuNuma) : "N/A";
    row += fmt::format("{:<16}{:<16}{}", cpuRanges(cpus), numa, gpuNumaText);
    fmt::print("{}\n", row);
  }
  fmt::print("\nLegend:\n\n"
             "  X    = Self\n"
             "  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes\n"
             "  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges within a NUMA node\n"
             "  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)\n"
             "  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host Bridge)\n"
             "  PIX  = Connection traversing at most a single PCIe bridge\n"
             "  NV#  = Connection traversing a bonded set of # NVLinks\n");
  n.nvmlShutdown();
  return kExitOk;
}

}  // namespace

Command addSmiCommand(CLI::App& parent) {
  auto topology = std::make_shared<std::string>();
  auto tray = std::make_shared<std::string>();
  auto matrix = std::make_shared<bool>(false);
  CLI::App* cmd = parent.add_subcommand(
      "smi", "What nvidia-smi prints for the simulated node, through mcsim's libnvidia-ml.so.1 (docs/nvml.md)");
  cmd->add_option("--topology", *topology, "Built-in preset name or preset file (MCSIM_TOPOLOGY); MCSIM_NODE attaches to a shared node instead");
  cmd->add_option("--tray", *tray, "The compute tray whose host to show: its 4 GPUs, as nvidia-smi on that tray prints them (MCSIM_TRAY)")
      ->check(CLI::Range(0, 1023));
  CLI::App* topo = cmd->add_subcommand("topo", "The topology matrix, as `nvidia-smi topo -m` prints it");
  topo->add_flag("-m,--matrix", *matrix, "Print the GPU topology matrix (the only view offered)");
  // The flag's variable lives as long as the command (CLI11 writes it as it parses).
  return {cmd, [topology, tray, topo, matrix] { return smi(*topology, *tray, topo->parsed()); }};
}

}  // namespace mcsim::tools
