#include "plan_generator.h"

#include <algorithm>
#include <map>

#include "fabric/fault_arguments.h"
#include "model/random.h"

namespace mcsim::tools {

namespace {

// The codes the CUDA Driver API reference lists for each call (the multicast calls from
// shared/spec/multicast-object-management.md; CUDA_ERROR_NOT_INITIALIZED and _DEINITIALIZED, which
// every call lists, are left out: a program meets them only before cuInit or at exit). A few
// codes the field reports add are marked.
const std::map<std::string, std::vector<const char*>>& codeTable() {
  static const std::map<std::string, std::vector<const char*>> table = {
      {"cuMulticastCreate", {"CUDA_ERROR_INVALID_VALUE", "CUDA_ERROR_OUT_OF_MEMORY", "CUDA_ERROR_INVALID_DEVICE",
                             "CUDA_ERROR_NOT_PERMITTED", "CUDA_ERROR_NOT_SUPPORTED"}},
      // ILLEGAL_STATE: pytorch ci-infra 541, nccl 1788 (fabric manager not running).
      {"cuMulticastAddDevice", {"CUDA_ERROR_INVALID_VALUE", "CUDA_ERROR_OUT_OF_MEMORY", "CUDA_ERROR_INVALID_DEVICE",
                                "CUDA_ERROR_NOT_PERMITTED", "CUDA_ERROR_NOT_SUPPORTED", "CUDA_ERROR_ILLEGAL_STATE"}},
      {"cuMulticastBindMem", {"CUDA_ERROR_INVALID_VALUE", "CUDA_ERROR_INVALID_DEVICE", "CUDA_ERROR_NOT_PERMITTED",
                              "CUDA_ERROR_NOT_SUPPORTED", "CUDA_ERROR_OUT_OF_MEMORY", "CUDA_ERROR_SYSTEM_NOT_READY",
                              "CUDA_ERROR_ILLEGAL_STATE"}},
      {"cuMulticastBindAddr", {"CUDA_ERROR_INVALID_VALUE", "CUDA_ERROR_INVALID_DEVICE", "CUDA_ERROR_NOT_PERMITTED",
                               "CUDA_ERROR_NOT_SUPPORTED", "CUDA_ERROR_OUT_OF_MEMORY", "CUDA_ERROR_SYSTEM_NOT_READY",
                               "CUDA_ERROR_ILLEGAL_STATE"}},
      {"cuMulticastUnbind", {"CUDA_ERROR_INVALID_VALUE", "CUDA_ERROR_INVALID_DEVICE", "CUDA_ERROR_NOT_PERMITTED",
                             "CUDA_ERROR_NOT_SUPPORTED"}},
      {"cuMulticastGetGranularity", {"CUDA_ERROR_INVALID_VALUE", "CUDA_ERROR_NOT_PERMITTED", "CUDA_ERROR_NOT_SUPPORTED"}},
      // OUT_OF_MEMORY: what a full device answers.
      {"cuMemCreate", {"CUDA_ERROR_INVALID_VALUE", "CUDA_ERROR_NOT_PERMITTED", "CUDA_ERROR_NOT_SUPPORTED",
                       "CUDA_ERROR_OUT_OF_MEMORY"}},
      {"cuMemRelease", {"CUDA_ERROR_INVALID_VALUE", "CUDA_ERROR_NOT_PERMITTED", "CUDA_ERROR_NOT_SUPPORTED"}},
      {"cuMemAddressReserve", {"CUDA_ERROR_INVALID_VALUE", "CUDA_ERROR_OUT_OF_MEMORY", "CUDA_ERROR_NOT_PERMITTED",
                               "CUDA_ERROR_NOT_SUPPORTED"}},
      {"cuMemAddressFree", {"CUDA_ERROR_INVALID_VALUE", "CUDA_ERROR_NOT_PERMITTED", "CUDA_ERROR_NOT_SUPPORTED"}},
      // ILLEGAL_STATE, SYSTEM_NOT_READY: maps of a multicast handle (nccl-tests 216, 264).
      {"cuMemMap", {"CUDA_ERROR_INVALID_VALUE", "CUDA_ERROR_INVALID_DEVICE", "CUDA_ERROR_OUT_OF_MEMORY",
                    "CUDA_ERROR_NOT_PERMITTED", "CUDA_ERROR_NOT_SUPPORTED", "CUDA_ERROR_ILLEGAL_STATE",
                    "CUDA_ERROR_SYSTEM_NOT_READY"}},
      {"cuMemUnmap", {"CUDA_ERROR_INVALID_VALUE", "CUDA_ERROR_NOT_PERMITTED", "CUDA_ERROR_NOT_SUPPORTED"}},
      {"cuMemSetAccess", {"CUDA_ERROR_INVALID_VALUE", "CUDA_ERROR_INVALID_DEVICE", "CUDA_ERROR_NOT_SUPPORTED"}},
      {"cuMemGetAllocationGranularity", {"CUDA_ERROR_INVALID_VALUE", "CUDA_ERROR_NOT_PERMITTED", "CUDA_ERROR_NOT_SUPPORTED"}},
      {"cuMemExportToShareableHandle", {"CUDA_ERROR_INVALID_VALUE", "CUDA_ERROR_NOT_PERMITTED", "CUDA_ERROR_NOT_SUPPORTED"}},
      // UNKNOWN: what the real driver answers for a descriptor that is not its own.
      {"cuMemImportFromShareableHandle", {"CUDA_ERROR_INVALID_VALUE", "CUDA_ERROR_NOT_PERMITTED",
                                          "CUDA_ERROR_NOT_SUPPORTED", "CUDA_ERROR_UNKNOWN"}},
      {"cuDevicePrimaryCtxRetain", {"CUDA_ERROR_INVALID_CONTEXT", "CUDA_ERROR_INVALID_DEVICE", "CUDA_ERROR_INVALID_VALUE",
                                    "CUDA_ERROR_OUT_OF_MEMORY", "CUDA_ERROR_UNKNOWN"}},
      {"cuDevicePrimaryCtxRelease", {"CUDA_ERROR_INVALID_DEVICE", "CUDA_ERROR_INVALID_CONTEXT"}},
      {"cuCtxSetCurrent", {"CUDA_ERROR_INVALID_CONTEXT"}},
      {"cuDeviceGetAttribute", {"CUDA_ERROR_INVALID_VALUE", "CUDA_ERROR_INVALID_DEVICE"}},
      {"cuPointerGetAttribute", {"CUDA_ERROR_INVALID_CONTEXT", "CUDA_ERROR_INVALID_VALUE", "CUDA_ERROR_INVALID_DEVICE"}},
      {"cuMemAlloc", {"CUDA_ERROR_INVALID_CONTEXT", "CUDA_ERROR_INVALID_VALUE", "CUDA_ERROR_OUT_OF_MEMORY"}},
      {"cuMemFree", {"CUDA_ERROR_INVALID_CONTEXT", "CUDA_ERROR_INVALID_VALUE"}},
      {"cuMemAllocHost", {"CUDA_ERROR_INVALID_CONTEXT", "CUDA_ERROR_INVALID_VALUE", "CUDA_ERROR_OUT_OF_MEMORY"}},
      {"cuMemFreeHost", {"CUDA_ERROR_INVALID_CONTEXT", "CUDA_ERROR_INVALID_VALUE"}},
      {"cuMemAllocAsync", {"CUDA_ERROR_INVALID_CONTEXT", "CUDA_ERROR_INVALID_VALUE", "CUDA_ERROR_NOT_SUPPORTED",
                           "CUDA_ERROR_OUT_OF_MEMORY"}},
      {"cuMemFreeAsync", {"CUDA_ERROR_INVALID_CONTEXT", "CUDA_ERROR_INVALID_VALUE", "CUDA_ERROR_NOT_SUPPORTED"}},
      {"cuStreamSynchronize", {"CUDA_ERROR_INVALID_CONTEXT", "CUDA_ERROR_INVALID_HANDLE"}},
      {"cuMemcpyHtoD", {"CUDA_ERROR_INVALID_CONTEXT", "CUDA_ERROR_INVALID_VALUE"}},
      {"cuMemcpyDtoH", {"CUDA_ERROR_INVALID_CONTEXT", "CUDA_ERROR_INVALID_VALUE"}},
      // NVLINK_UNCORRECTABLE: what a link failure under a copy between GPUs shows a program.
      {"cuMemcpyDtoD", {"CUDA_ERROR_INVALID_CONTEXT", "CUDA_ERROR_INVALID_VALUE", "CUDA_ERROR_NVLINK_UNCORRECTABLE"}},
      {"cuMemcpyPeer", {"CUDA_ERROR_INVALID_CONTEXT", "CUDA_ERROR_INVALID_VALUE", "CUDA_ERROR_NVLINK_UNCORRECTABLE"}},
      {"cuMemsetD32", {"CUDA_ERROR_INVALID_CONTEXT", "CUDA_ERROR_INVALID_VALUE"}},
  };
  return table;
}

// Draws on one stream; every choice of a plan comes from it, in plan order.
class Draws {
 public:
  Draws(uint64_t seed, const std::string& workload) : s_(model::deriveStream(seed, "campaign-plan-" + workload)) {}
  double uniform() { return s_.uniform(); }
  bool chance(double p) { return s_.uniform() < p; }
  uint64_t below(uint64_t n) { return n == 0 ? 0 : s_.next() % n; }
  template <typename T>
  const T& pick(const std::vector<T>& v) { return v[below(v.size())]; }

 private:
  model::RandomStream s_;
};

// Calls whose `return CUDA_SUCCESS` (success claimed, nothing done) a careful program survives
// without leaking or losing data: the lie shows only in later calls' failures (or a hang).
bool mayClaimSuccess(const std::string& entry) {
  static const std::vector<std::string> calls = {"cuMulticastAddDevice", "cuMulticastBindMem", "cuMulticastBindAddr",
                                                 "cuMemSetAccess", "cuMemMap", "cuDevicePrimaryCtxRetain"};
  return std::find(calls.begin(), calls.end(), entry) != calls.end();
}

const std::vector<std::string> kProbabilities = {"0.1", "0.2", "0.3", "0.5"};

// A random, non-empty, increasing list of devices below `n`.
std::string deviceList(Draws& d, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) {
    if (d.chance(0.4)) out += (out.empty() ? "" : ",") + std::to_string(i);
  }
  return out.empty() ? std::to_string(d.below(uint64_t(n))) : out;
}

// An argument filter on one of the arguments `entry` reports (fabric/fault_arguments.def), or ""
// when it reports none. Values are ones the workloads pass (sizes of a granule or two, zero flags,
// the handle types they ask for), so that the filter selects some calls and not others.
std::string argumentFilter(Draws& d, const std::string& entry) {
  const auto* specs = fabric::faultArgumentsOf(entry);
  if (specs == nullptr) return "";
  std::vector<std::string> names;
  for (const auto& a : *specs) {
    if (!a.text) names.push_back(a.name);
  }
  if (names.empty()) return "";
  const std::string& name = d.pick(names);
  // Filters that read like ones a person would write for this argument.
  static const std::map<std::string, std::vector<std::string>> kByName = {
      {"handleTypes", {"&CU_MEM_HANDLE_TYPE_FABRIC", "&CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR", "=0"}},
      {"handleType", {"=CU_MEM_HANDLE_TYPE_FABRIC", "=CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR"}},
      {"flags", {"=0", "!=0"}},
      {"ptr", {"!=0", "<1TiB"}},
      {"addr", {"=0", "!=0"}},
      {"count", {"=1", ">=2"}},
      {"numDevices", {"=1", "=8", ">=4", "<8"}},
      {"option", {"=0", "=1"}},
      {"attribute", {"=CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED", "!=CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED"}},
  };
  // Sizes and offsets (size, mcOffset, memOffset, offset, alignment) and anything else.
  static const std::vector<std::string> kSizes = {"=0", ">=2MiB", "<4MiB", ">=512MiB", "!=0", "=2MiB,4MiB"};
  const auto it = kByName.find(name);
  return name + d.pick(it != kByName.end() ? it->second : kSizes);
}

void entryRules(Draws& d, const std::string& entry, const std::vector<std::string>& entries,
                const PlanSettings& s, int* blockCount, std::vector<std::string>* rules,
                std::vector<std::string>* releases) {
  std::string point = entry;
  if (d.chance(0.25)) point += " device=" + deviceList(d, s.devices);
  if (d.chance(0.2)) {
    const std::string filter = argumentFilter(d, entry);
    if (!filter.empty()) point += " " + filter;
  }

  std::string trigger;
  bool once = false;  // fires at most once by itself
  const double t = d.uniform();
  if (t < 0.55) {
    trigger = "prob=" + d.pick(kProbabilities);
  } else if (t < 0.8) {
    trigger = "nth=" + std::to_string(1 + d.below(4));
    once = true;
  } else if (t < 0.92) {
    trigger = "after=" + std::to_string(d.below(4)) + " prob=" + d.pick(kProbabilities);
  } else {
    trigger = "always";
  }

  std::string action;
  const double a = d.uniform();
  uint64_t max = 0;
  if (a < 0.80 || (a < 0.84 && !mayClaimSuccess(entry))) {
    // Now and then the failure comes after a stall (the fabric manager's 7 s in the field).
    action = d.chance(0.1) ? std::string("delay 2ms return ") + d.pick(faultCodesFor(entry))
                           : std::string("return ") + d.pick(faultCodesFor(entry));
  } else if (a < 0.84) {
    // A call that claims success and does nothing: a device that never really joins its team,
    // memory that is not really bound, mapped or granted. Later calls must cope.
    action = "return CUDA_SUCCESS";
  } else if (a < 0.92) {
    action = d.chance(0.5) ? "delay 10us" : "delay 2ms";
  } else {
    // A held call: released by a later call, or left for mcsim's deadlock / hang report (the call
    // then fails with MCSIM_HANG_RESULT). Once per plan point, so that a run stays short.
    action = "block";
    max = 1;
    const double how = d.uniform();
    if (how < 0.25) {
      // Held until simulated time moves on: nothing else in the workload moves it, so the wait ends
      // when mcsim finds nothing else can happen first.
      action += " for=1ms";
    } else if (how < 0.625) {
      const std::string label = "b" + std::to_string((*blockCount)++);
      action += " name=" + label;
      const std::string& other = d.pick(entries);
      releases->push_back(other + " : nth=" + std::to_string(1 + d.below(4)) + " -> release " + label);
    }
  }
  if (max == 0 && isTeardownPoint(entry)) max = 1 + d.below(2);
  if (max == 0 && d.chance(0.3)) max = 1 + d.below(3);
  if (max != 0 && !once) trigger += " max=" + std::to_string(max);
  rules->push_back(point + " : " + trigger + " -> " + action);
}

void fabricRules(Draws& d, const std::string& point, const PlanSettings& s, std::vector<std::string>* rules) {
  const uint64_t h = std::max<uint64_t>(s.horizon, 2);
  auto when = [&] { return "nth=" + std::to_string(1 + d.below(h)); };
  if (point == "fabric-manager") {
    static const std::vector<std::string> kStates = {"initialising", "degraded", "not-started", "restarted"};
    const uint64_t n = 1 + d.below(h);
    rules->push_back("fabric-manager : nth=" + std::to_string(n) + " -> state " + d.pick(kStates));
    if (d.chance(0.5)) {
      rules->push_back("fabric-manager : nth=" + std::to_string(n + 1 + d.below(h / 2)) + " -> state ready");
    }
  } else if (point == "multicast-slot") {
    const double t = d.uniform();
    rules->push_back(std::string("multicast-slot : ") + (t < 0.5 ? "prob=0.5" : t < 0.8 ? "nth=1" : "always") +
                     " -> exhaust");
  } else if (point == "imex") {
    rules->push_back("imex : " + (d.chance(0.2) ? std::string("at=0 max=1") : when()) + " -> " +
                     (d.chance(0.8) ? "present" : "absent"));
  } else if (point == "link") {
    const std::string gpu = d.chance(0.7) ? " gpu=" + std::to_string(d.below(uint64_t(s.devices))) : "";
    const uint64_t n = 1 + d.below(h);
    rules->push_back("link" + gpu + " : nth=" + std::to_string(n) + " -> down");
    if (d.chance(0.5)) rules->push_back("link" + gpu + " : nth=" + std::to_string(n + 1 + d.below(h / 2)) + " -> up");
  } else if (point == "switch") {
    const uint64_t n = 1 + d.below(h);
    rules->push_back("switch : nth=" + std::to_string(n) + " -> down");
    if (d.chance(0.5)) rules->push_back("switch : nth=" + std::to_string(n + 1 + d.below(h / 2)) + " -> up");
  }
}

}  // namespace

const std::vector<std::string>& fabricFaultPoints() {
  static const std::vector<std::string> points = {"fabric-manager", "multicast-slot", "imex", "link", "switch"};
  return points;
}

const std::vector<const char*>& faultCodesFor(const std::string& entry) {
  static const std::vector<const char*> fallback = {"CUDA_ERROR_INVALID_VALUE"};
  const auto& table = codeTable();
  const auto it = table.find(entry);
  return it == table.end() ? fallback : it->second;
}

bool isTeardownPoint(const std::string& entry) {
  static const std::vector<std::string> teardown = {
      "cuMemRelease", "cuMemUnmap", "cuMemAddressFree", "cuMulticastUnbind", "cuDevicePrimaryCtxRelease",
      "cuCtxSetCurrent", "cuMemFree", "cuMemFreeHost", "cuMemFreeAsync", "cuStreamSynchronize", "cuMemcpyDtoH"};
  return std::find(teardown.begin(), teardown.end(), entry) != teardown.end();
}

std::string generatePlan(uint64_t seed, const std::string& workload, const std::vector<std::string>& entryPoints,
                         const PlanSettings& settings) {
  Draws d(seed, workload);
  // Swarm testing: each run draws how many points it switches on (a quarter, half or all of
  // pointOn), so that some runs pile faults up and others, with few, get deep into the workload.
  static const std::vector<double> kDensity = {0.25, 0.5, 1.0};
  const double on = settings.pointOn * d.pick(kDensity);
  std::vector<std::string> rules, releases;
  int blocks = 0;
  for (const std::string& e : entryPoints) {
    if (d.chance(on)) entryRules(d, e, entryPoints, settings, &blocks, &rules, &releases);
  }
  for (const std::string& p : fabricFaultPoints()) {
    if (d.chance(on)) fabricRules(d, p, settings, &rules);
  }
  // Releases go last: the first rule whose triggers hold fires, so a release placed before a
  // failing rule at the same point would take its turn.
  for (auto& r : releases) rules.push_back(std::move(r));
  std::string plan;
  for (const std::string& r : rules) plan += (plan.empty() ? "" : " ; ") + r;
  return plan;
}

}  // namespace mcsim::tools
