// Driver state, cuInit, cuDriverGetVersion, and the Status -> CUresult mapping.
#include "driver/leaks.h"
#include "driver/driver.h"
#include "model/timeline.h"

#include <pthread.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "driver/context.h"
#include "driver/device_table.h"
#include "fabric/preset.h"
#include "fabric/tray_node.h"

namespace mcsim::driver {

DriverState& state() {
  // Leaked on purpose: application threads and atexit handlers may call the driver while
  // static destructors run.
  static DriverState* s = new DriverState();
  return *s;
}

CUresult toResult(Status s) {
  switch (s) {
    case Status::kOk: return CUDA_SUCCESS;
    case Status::kInvalidValue: return CUDA_ERROR_INVALID_VALUE;
    case Status::kInvalidDevice: return CUDA_ERROR_INVALID_DEVICE;
    case Status::kInvalidHandle: return CUDA_ERROR_INVALID_HANDLE;
    case Status::kOutOfMemory: return CUDA_ERROR_OUT_OF_MEMORY;
    case Status::kNotSupported: return CUDA_ERROR_NOT_SUPPORTED;
    case Status::kNotPermitted: return CUDA_ERROR_NOT_PERMITTED;
    case Status::kNotFound: return CUDA_ERROR_NOT_FOUND;
    case Status::kAlreadyMapped: return CUDA_ERROR_INVALID_VALUE;
    case Status::kNotMapped: return CUDA_ERROR_INVALID_VALUE;
    case Status::kIllegalAddress: return CUDA_ERROR_INVALID_VALUE;
    case Status::kIllegalState: return CUDA_ERROR_ILLEGAL_STATE;
    case Status::kSystemNotReady: return CUDA_ERROR_SYSTEM_NOT_READY;
    // The real driver answers an import from a descriptor that is not one of its own (a closed
    // fd, /dev/null, a pipe, a regular file) with CUDA_ERROR_UNKNOWN.
    case Status::kNotShareable: return CUDA_ERROR_UNKNOWN;
    // A call given up after a deadlock or hang report fails with the configured result.
    case Status::kHang: return hangResult();
    // What an NVLink failure under a copy shows a program.
    case Status::kLinkDown: return CUDA_ERROR_NVLINK_UNCORRECTABLE;
    case Status::kMisaligned: return CUDA_ERROR_MISALIGNED_ADDRESS;
    // The shared node (`mcsim node`) went away under the process: its devices are no more.
    case Status::kNodeLost: return CUDA_ERROR_DEVICE_UNAVAILABLE;
    // An IPC handle opened in the process that exported it: the real driver's "invalid device
    // context" (cudaErrorDeviceUninitialized; UCX pull request 11603, DALI issue 4817).
    case Status::kOwnProcess: return CUDA_ERROR_INVALID_CONTEXT;
  }
  return CUDA_ERROR_UNKNOWN;
}

const settings::Settings& driverSettings() {
  // Leaked on purpose, as state() is: calls made while static destructors run read it.
  static const settings::Settings* s = new settings::Settings(settings::fromEnvironment());
  return *s;
}

CUresult hangResult() {
  // A name the settings accepted is one of cuda.h's (driver/results.def).
  static const CUresult result = [] {
    CUresult r = CUDA_ERROR_ILLEGAL_STATE;
    resultByName(driverSettings().hangResult, &r);
    return r;
  }();
  return result;
}

int emulatedDriverVersion() { return driverSettings().driverVersion; }

namespace {

// MCSIM_RANK, or -1 when it is not given.
int processRank() {
  const settings::Settings& s = driverSettings();
  return s.isSet("MCSIM_RANK") ? static_cast<int>(s.rank) : -1;
}

// The plan of MCSIM_FAULTS_FILE, then the rules of MCSIM_FAULTS (one line, ';' between rules).
// Every cuda.h name the plan uses (CUresults, argument constants) must exist.
std::vector<fabric::FaultRule> loadFaultPlan(const settings::Settings& settings, const fabric::Preset& preset) {
  std::vector<fabric::FaultRule> rules;
  if (const std::string& file = settings.faultsFile; !file.empty()) {
    rules = fabric::parseFaultPlan(fabric::readFaultPlanFile(file), file);
  }
  if (!settings.faults.empty()) {
    for (auto& r : fabric::parseFaultPlan(settings.faults, "MCSIM_FAULTS")) rules.push_back(std::move(r));
  }
  resolveFaultPlanNames(&rules);
  fabric::checkFaultPlanFor(rules, preset);
  return rules;
}

// MCSIM_NODE=name: attach to the shared node `mcsim node start` runs, in a process of its own.
// Its preset and its fault plan are the node's (given to `mcsim node start`); this process's
// MCSIM_TOPOLOGY, MCSIM_FAULTS and MCSIM_FAULTS_FILE are not used.
CUresult attachToSharedNode(const std::string& name) {
  DriverState& s = state();
  for (const char* v : {"MCSIM_TOPOLOGY", "MCSIM_FAULTS", "MCSIM_FAULTS_FILE"}) {
    if (driverSettings().isSet(v)) {
      std::fprintf(stderr, "mcsim: %s is not used with MCSIM_NODE: the node '%s' has its own (mcsim node start)\n", v,
                   name.c_str());
    }
  }
  std::string error;
  const int tray = driverSettings().isSet("MCSIM_TRAY") ? static_cast<int>(driverSettings().tray) : -1;
  s.node = fabric::attachSharedNode(name, processRank(), tray, fabric::NodeSettings::from(driverSettings()), &error);
  if (!s.node) {
    std::fprintf(stderr, "mcsim: %s\n", error.c_str());
    return CUDA_ERROR_NO_DEVICE;
  }
  return CUDA_SUCCESS;
}

// The UUID of the node's GPU `rackGpu` as nvidia-smi prints it ("GPU-8932f937-d72c-...").
std::string uuidText(int rackGpu) {
  const CUuuid u = rackGpuUuid(rackGpu);
  std::string out = "GPU-";
  char hex[3];
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out += '-';
    std::snprintf(hex, sizeof hex, "%02x", static_cast<unsigned char>(u.bytes[i]));
    out += hex;
  }
  return out;
}

// An index entry of CUDA_VISIBLE_DEVICES read as a real driver (580.159.04) reads it
// (docs/real-driver/h200x4-visible-2026-11-29.txt): blanks before it and a '+' are skipped, its
// leading digits are the index and whatever follows them is ignored (" 1", "1 ", "+1", "01",
// "1;0" and "1 0" all name GPU 1). -1 when it starts with no digit or the number is negative.
int leadingIndex(const std::string& entry) {
  size_t i = 0;
  while (i < entry.size() && std::isspace(static_cast<unsigned char>(entry[i]))) ++i;
  if (i < entry.size() && entry[i] == '+') ++i;
  long index = -1;
  for (; i < entry.size() && std::isdigit(static_cast<unsigned char>(entry[i])); ++i) {
    if (index < 0) index = 0;
    if (index < (1L << 30)) index = index * 10 + (entry[i] - '0');
  }
  return index > (1L << 30) ? (1 << 30) : static_cast<int>(index);
}

// CUDA_VISIBLE_DEVICES (docs/user-guide.md, "CUDA_VISIBLE_DEVICES"): the host's GPUs that the
// process's CUDA ordinals name, in the order given. An entry is a host GPU's index (leadingIndex) or its UUID
// ("GPU-...", or enough of its start to name one GPU, with nothing before it); the list ends at the first entry that names no GPU of the
// host (an index out of range, -1, a UUID prefix of none or of several, a MIG id: mcsim has no MIG)
// or names one already listed. What the entries after it would have named stays hidden.
std::vector<int> parseVisibleDevices(const std::string& value, const fabric::TraySpan& host) {
  std::vector<int> visible;
  size_t at = 0;
  while (at <= value.size()) {
    const size_t comma = std::min(value.find(',', at), value.size());
    const std::string entry = value.substr(at, comma - at);
    at = comma + 1;
    int gpu = -1;
    if (entry.rfind("GPU-", 0) != 0) {
      gpu = leadingIndex(entry);
      if (gpu >= host.gpus) gpu = -1;
    } else {
      for (int g = 0; g < host.gpus; ++g) {
        if (uuidText(host.hostGpuOf(g)).rfind(entry, 0) != 0) continue;
        if (gpu >= 0) {  // the prefix names several GPUs: none
          gpu = -1;
          break;
        }
        gpu = g;
      }
    }
    if (gpu < 0 || std::find(visible.begin(), visible.end(), gpu) != visible.end()) break;
    visible.push_back(gpu);
  }
  return visible;
}

// The devices this process sees: the GPUs of its host (every GPU of the node, or with MCSIM_TRAY
// the GPUs of that tray of the rack, numbered from 0 as on the tray's own host), narrowed and
// reordered by CUDA_VISIBLE_DEVICES. CUDA_ERROR_NO_DEVICE, saying why, for a tray the preset does
// not have (or a preset without trays): the process sees no device of the rack's. A
// CUDA_VISIBLE_DEVICES that leaves no device is cuInit's to refuse (NVML still sees the host).
CUresult seeDevices() {
  DriverState& s = state();
  const fabric::Preset& preset = s.node->preset();
  std::vector<std::vector<int>> all = resolveDeviceAttributes(preset);
  fabric::TraySpan span;
  span.gpus = preset.gpuCount;
  span.numaNodes = preset.hostNumaNodes;
  const bool onTray = driverSettings().isSet("MCSIM_TRAY");
  if (onTray) {
    std::string error;
    if (!fabric::traySpan(preset, static_cast<int>(driverSettings().tray), &span, &error)) {
      std::fprintf(stderr, "mcsim: %s\n", error.c_str());
      s.node.reset();
      return CUDA_ERROR_NO_DEVICE;
    }
  }
  s.hostAttributes.clear();
  for (int d = 0; d < span.gpus; ++d) {
    std::vector<int> a = all[static_cast<size_t>(span.firstGpu + d)];
    if (onTray) {
      a[CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID] -= span.firstNumaNode;
      a[CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD_GROUP_ID] = d;
    }
    s.hostAttributes.push_back(std::move(a));
  }
  s.hostNode = s.node.get();
  const std::optional<std::string>& visibleSetting = driverSettings().cudaVisibleDevices;
  if (visibleSetting) {
    span.visible = parseVisibleDevices(*visibleSetting, span);
    s.attributes.clear();
    for (int g : span.visible) s.attributes.push_back(s.hostAttributes[static_cast<size_t>(g)]);
  } else {
    s.attributes = s.hostAttributes;
  }
  s.deviceCount = static_cast<int>(s.attributes.size());
  s.tray = span;
  if (onTray || visibleSetting) s.node = fabric::makeTrayNode(std::move(s.node), span);
  return CUDA_SUCCESS;
}

// At exit, the plan's rules that never fired: a plan aimed at the wrong call (a misspelt filter,
// a device the program never uses) would otherwise pass unnoticed, the program's run looking as
// if it had survived the fault.
void reportUnfiredFaultRules() {
  for (const std::string& line : fabric::unfiredRuleLines(state().node->faultRules(), state().node->faultCounts())) {
    std::fprintf(stderr, "mcsim: %s\n", line.c_str());
  }
}

CUresult bringUpNode() {
  DriverState& s = state();
  const settings::Settings& settings = driverSettings();
  // This process's driver calls (and an embedded node's devices) go on the timeline.
  model::Timeline::start(settings.timeline, settings.timelineSummary);
  if (!settings.node.empty()) {
    if (const CUresult r = attachToSharedNode(settings.node)) return r;
    return seeDevices();
  }
  const std::string which = !settings.topology.empty() ? settings.topology : fabric::defaultPresetName();
  try {
    fabric::Preset preset = fabric::loadPreset(which);
    (void)resolveDeviceAttributes(preset);  // an unknown attribute name fails here, before the node is built
    if (settings.isSet("MCSIM_TRAY")) {
      std::string error;
      fabric::TraySpan span;
      if (!fabric::traySpan(preset, static_cast<int>(settings.tray), &span, &error)) {
        std::fprintf(stderr, "mcsim: %s\n", error.c_str());
        return CUDA_ERROR_NO_DEVICE;
      }
    }
    s.node = fabric::makeEmbeddedNode(std::move(preset), fabric::NodeSettings::from(settings));
    if (!s.node) {
      std::fprintf(stderr, "mcsim: cannot reserve the simulated device address space\n");
      return CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (const CUresult r = seeDevices()) return r;
  } catch (const fabric::InputError& e) {
    std::fprintf(stderr, "mcsim: cannot load topology preset%s: %s\n",
                 settings.topology.empty() ? "" : " (MCSIM_TOPOLOGY)", e.what());
    return CUDA_ERROR_NO_DEVICE;
  }
  try {
    std::vector<fabric::FaultRule> plan = loadFaultPlan(settings, s.node->preset());
    const bool anyRule = !plan.empty();
    s.node->installFaultPlan(std::move(plan), settings.seed);
    if (anyRule) std::atexit(reportUnfiredFaultRules);
  } catch (const fabric::InputError& e) {
    std::fprintf(stderr, "mcsim: cannot load fault plan: %s\n", e.what());
    s.node.reset();
    return CUDA_ERROR_NO_DEVICE;
  }
  return CUDA_SUCCESS;
}

}  // namespace

bool timelineActive() {
  static const bool on = model::Timeline::active() != nullptr;
  return on;
}

// The entry points are defined as mcsim_impl_<symbol> (traces/gen_wrappers.py); plans and the
// timeline name the exported symbol.
const char* exportedName(const char* symbol) {
  constexpr char kImpl[] = "mcsim_impl_";
  return std::strncmp(symbol, kImpl, sizeof kImpl - 1) == 0 ? symbol + sizeof kImpl - 1 : symbol;
}

void noteCall(const char* symbol) {
  symbol = exportedName(symbol);
  static const model::TimelineTrack track = model::Timeline::active()->track("Host", "driver calls");
  // With the host's clock, a call is made at its thread's clock (docs/model.md, "What the host
  // costs"); without, at the node's simulated time.
  track.instant(hostclock::enabled() ? hostclock::callPs() : node().nowPs(), symbol);
}

uint64_t timelineFlow() {
  return timelineActive() ? model::Timeline::active()->flowFromLastCall() : 0;
}

bool consultFaults(const char* symbol, int device, const fabric::FaultArgument* args, size_t argCount,
                   CUresult* result, bool fabricMoment) {
  symbol = exportedName(symbol);
  // The entry point's wiring must match fabric/fault_arguments.def, or plans that parse would
  // filter on arguments it never passes: a bug in mcsim, which the test suites and campaigns
  // (every call they make under a plan comes through here) catch at once.
  std::string problem;
  if (!fabric::reportsTableArguments(fabric::FaultInjector::baseName(symbol), args, argCount, &problem)) {
    std::fprintf(stderr, "mcsim: internal error: %s\n", problem.c_str());
    std::abort();
  }
  if (device == kCurrentDevice) {
    CUctx_st* ctx = nullptr;
    const QuietChecks quiet;
    device = currentContext(&ctx) == CUDA_SUCCESS ? ctx->device : -1;
  }
  const fabric::Node::FaultOutcome o = node().onEntry(symbol, device, processRank(), args, argCount, fabricMoment);
  if (!o.fail) return false;
  if (o.status != Status::kOk) {
    *result = toResult(o.status);
    return true;
  }
  *result = CUDA_ERROR_UNKNOWN;
  resultByName(o.result, result);
  return true;
}

}  // namespace mcsim::driver

using namespace mcsim::driver;

extern "C" {

// cuInit is a fault point too, once it has loaded the plan: a rule that fails it leaves the process
// uninitialized (every other call answers CUDA_ERROR_NOT_INITIALIZED, as after any failed cuInit),
// and a later cuInit that the plan lets through initializes it. A failing cuInit after a successful
// one changes nothing either: the process stays initialized. Errors of the node itself (a bad
// preset or plan) are final, as before.
CUresult CUDAAPI cuInit(unsigned int Flags) {
  DriverState& s = state();
  if (s.forkedChild.load(std::memory_order_acquire)) return CUDA_ERROR_NOT_INITIALIZED;
  if (Flags != 0) return CUDA_ERROR_INVALID_VALUE;
  std::call_once(s.initOnce, [&] {
    s.initResult = bringUpNode();
    if (s.initResult == CUDA_SUCCESS) {
      s.nodeUp.store(true, std::memory_order_release);
      armLeakReport();  // what the program leaves behind is reported at exit
      // A child forked from here on is cut off from the node: every call, cuInit too, answers
      // NOT_INITIALIZED, as the real driver's do. Only the forking thread lives on in the child,
      // so the handler touches nothing but two atomics.
      pthread_atfork(nullptr, nullptr, [] {
        state().initialized.store(false, std::memory_order_release);
        state().forkedChild.store(true, std::memory_order_release);
      });
    }
  });
  if (s.initResult != CUDA_SUCCESS) return s.initResult;
  // CUDA_VISIBLE_DEVICES named no GPU of the host (empty, "-1", ...): the real driver's cuInit
  // fails so (numba issue 5793), and every later call answers CUDA_ERROR_NOT_INITIALIZED.
  if (s.deviceCount == 0) return MCSIM_REFUSE(CUDA_ERROR_NO_DEVICE, "CUDA_VISIBLE_DEVICES names no GPU of this host");
  MCSIM_FAULT_POINT_ARGS({"flags", Flags});
  s.initialized.store(true, std::memory_order_release);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDriverGetVersion(int* driverVersion) {
  MCSIM_FAULT_POINT();
  if (driverVersion == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *driverVersion = emulatedDriverVersion();
  return CUDA_SUCCESS;
}

}  // extern "C"
