// Topology presets: one JSON file per machine (a node preset), each naming a GPU description
// (a second JSON file, shared by presets of the same GPU). Both kinds are data: built-in ones are
// compiled into the library, and a user can point MCSIM_TOPOLOGY at a file of their own.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "fabric/json_source.h"
#include "model/gpu.h"
#include "model/link_health.h"

namespace mcsim::fabric {

struct GpuSpec {
  std::string model;        // the description's key, e.g. "h100-sxm5-80gb"
  std::string name;         // what cuDeviceGetName reports
  uint64_t memoryBytes = 0; // what cuDeviceTotalMem reports
  uint64_t vmmGranularityMinimum = 0;
  uint64_t vmmGranularityRecommended = 0;
  // Device attributes by their cuda.h name without the prefix ("MULTIPROCESSOR_COUNT"), sorted
  // by name. The driver checks the names; an unknown one is an error at its line.
  std::vector<std::pair<std::string, int64_t>> attributes;
  std::shared_ptr<const JsonSource> source;  // for naming lines in errors
  std::string attributesPointer;             // JSON pointer of "attributes" in `source`
  // The timing model's parameters ("timing" in the GPU file; the L2 size and the number of copy
  // engines come from the L2_CACHE_SIZE and ASYNC_ENGINE_COUNT attributes).
  model::GpuTimingSpec timing;
};

struct NvlinkSpec {
  int linksPerGpu = 0;
  double gbytesPerSecPerLinkPerDirection = 0;
  double efficiency = 1;     // the share of the signalling rate that data achieves
  // The same for the loads and stores SMs make of a peer's memory (a kernel's, not a copy
  // engine's): smaller requests, more of the link's packets spent on headers. Multimem traffic
  // keeps `efficiency` (the switch reduction's rate was fitted with it). Defaults to `efficiency`.
  double smEfficiency = 1;
  uint64_t latencyNs = 0;    // one hop, GPU port to switch port
  // What a GPU pays to act on another's signal: a stream waiting for an event recorded on
  // another GPU, a copy engine pulling from a peer's memory.
  uint64_t crossGpuSyncNs = 0;
};

struct NvswitchSpec {
  int count = 0;                         // 0: no switch fabric (a lone GPU, or PCIe only)
  std::vector<int> linksPerGpuPerSwitch; // size == count; sums to NvlinkSpec::linksPerGpu
  int ports = 0;
  int multicastSlots = 0;                // multicast groups each switch can hold
  double crossbarGbytesPerSec = 0;       // per direction, all ports together
  uint64_t latencyNs = 0;                // input port to output port
  // The multicast reduction engine (multimem.ld_reduce): it takes in the operands arriving on all
  // of the switch's GPU links at this fraction of their line rate (the links' rate times
  // nvlink.efficiency), and adds this latency to a load-with-reduction (gathering the members'
  // operands and combining them).
  double reduceLineRateFraction = 1;
  uint64_t reduceLatencyNs = 0;
};

struct MulticastSpec {
  uint64_t granularityMinimum = 0;
  uint64_t granularityRecommended = 0;
  int maxTeamSize = 0;                   // devices one multicast object may span (the clique)
};

struct Preset {
  std::string name;
  std::string description;
  std::string file;  // where it was read from ("<builtin>/nodes/NAME.json" for built-in ones)
  GpuSpec gpu;
  int gpuCount = 0;
  int hostNumaNodes = 1;
  std::vector<int> gpuNumaNode;  // host NUMA node closest to each GPU
  std::vector<int> pciBusId;     // per GPU; empty: 0x10 + ordinal
  uint64_t hostMemoryBytesPerNumaNode = 0;
  NvlinkSpec nvlink;
  NvswitchSpec nvswitch;
  MulticastSpec multicast;
  bool imexChannel = false;  // whether an IMEX channel is present (FABRIC handles allowed)
  // The fabric manager's state when the node starts ("fabric_manager": {"initial_state": ...}):
  // one of fabricManagerStateNames(). Without the key: "ready" with a switch fabric, "not-started"
  // without one (there is no manager to run). MCSIM_FABRIC_MANAGER and fault plans override it.
  std::string fabricManagerInitialState;
  // Compute trays ("trays": {"count", "gpus_per_tray"}): a rack whose GPUs sit in hosts of their
  // own, `gpusPerTray` consecutive GPUs each (tray t has GPUs t * gpusPerTray ...). 0: the whole
  // node is one host. A process may play one tray (MCSIM_TRAY; docs/multiprocess.md, "Trays").
  int trayCount = 0;
  int gpusPerTray = 0;

  bool multicastSupported() const { return nvswitch.count > 0 && multicast.maxTeamSize > 1; }
};

// Where tray `tray` of `preset` lies in the rack. A preset without trays is one host.
struct TraySpan {
  int tray = -1;           // -1: the whole node (no tray setting)
  int firstGpu = 0;        // the rack's number of the tray's ordinal 0
  int gpus = 0;            // GPUs on the tray
  int firstNumaNode = 0;   // the rack's number of the tray's host NUMA node 0
  int numaNodes = 0;       // host NUMA nodes the tray's GPUs sit on

  // CUDA_VISIBLE_DEVICES: the host's GPUs (numbered 0 .. gpus-1, as the host's NVML numbers them)
  // that the process's CUDA ordinals name, in ordinal order; empty: all of them, in order.
  std::vector<int> visible;

  bool holds(int rackGpu) const { return rackGpu >= firstGpu && rackGpu < firstGpu + gpus; }
  // The process's ordinal of a rack GPU. A GPU of another tray gets its number on its own tray; a
  // GPU of the host that CUDA_VISIBLE_DEVICES hides keeps its number on the host.
  int ordinalOf(int rackGpu) const;
  // The rack GPU of a process's ordinal (negative ordinals, CU_DEVICE_CPU and the like, stay).
  int rackGpuOf(int ordinal) const {
    if (ordinal < 0) return ordinal;
    const size_t o = static_cast<size_t>(ordinal);
    return hostGpuOf(visible.empty() || o >= visible.size() ? ordinal : visible[o]);
  }
  // The rack GPU of the host's GPU `hostGpu` (what NVML numbers, which CUDA_VISIBLE_DEVICES leaves alone).
  int hostGpuOf(int hostGpu) const { return hostGpu < 0 ? hostGpu : firstGpu + hostGpu; }
};

// The span of tray `tray`; the problem in `error` (and false) for a preset without trays or a tray
// it does not have.
bool traySpan(const Preset& preset, int tray, TraySpan* out, std::string* error);

// The fabric manager states a preset (or MCSIM_FABRIC_MANAGER) may start in, in lifecycle order.
const std::vector<std::string>& fabricManagerStateNames();

// Loads a preset by built-in name ("hgx-h100") or by path (anything with a '/' or ending in
// ".json"). Throws InputError naming the file, the line and the problem.
Preset loadPreset(const std::string& nameOrPath);
// The preset's NVLinks and NVSwitches, all up (model/link_health.h): each GPU's links to each
// switch; NVLink without switches (GPUs wired directly) as one switch of all the links.
model::LinkHealth healthyLinks(const Preset& preset);
// The name used when MCSIM_TOPOLOGY is unset.
const char* defaultPresetName();
std::vector<std::string> builtinPresetNames();

}  // namespace mcsim::fabric
