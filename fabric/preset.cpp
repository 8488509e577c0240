#include "fabric/preset.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <set>
#include <utility>
#include <sstream>

#include "fabric/builtin_presets.h"
#include "files/bounded_file.h"
#include "settings/typo_distance.h"

namespace mcsim::fabric {

namespace {

using Json = nlohmann::json;

bool looksLikePath(const std::string& s) {
  return s.find('/') != std::string::npos ||
         (s.size() > 5 && s.compare(s.size() - 5, 5, ".json") == 0);
}

std::string readFile(const std::string& path, const std::string& whoAsked, int line) {
  files::FileRead read = files::readBoundedFile(path, files::kMaxTextInputBytes);
  if (!read.ok()) throw InputError(whoAsked.empty() ? path : whoAsked, line, "cannot read file '" + path + "': " + read.why);
  return std::move(read.bytes);
}

std::string directoryOf(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? std::string(".") : path.substr(0, slash);
}

// Reads the members of one JSON object, checking types, and rejects members it was not asked
// about, so that a misspelt key is an error at its line rather than a silent default.
class ObjectReader {
 public:
  ObjectReader(const JsonSource& src, std::string pointer)
      : src_(src), ptr_(std::move(pointer)), obj_(src.root().at(Json::json_pointer(ptr_))) {
    if (!obj_.is_object()) src_.fail(ptr_, "expected an object");
  }
  bool has(const std::string& key) const { return obj_.contains(key); }
  // The JSON pointer of member `key` ('~' and '/' escaped as RFC 6901 says).
  std::string at(const std::string& key) const {
    std::string p = ptr_ + "/";
    for (char c : key) {
      if (c == '~') p += "~0";
      else if (c == '/') p += "~1";
      else p += c;
    }
    return p;
  }

  const Json* get(const std::string& key, bool required) {
    used_.insert(key);
    auto it = obj_.find(key);
    if (it == obj_.end()) {
      if (required) src_.fail(ptr_, "missing required key '" + key + "'" + misspelt(key));
      return nullptr;
    }
    return &*it;
  }
  // " ('prots' here looks like a misspelling of it)" when a member no one asked for is a likely
  // typo of `key`, else "": the typo is what the user must fix, not the missing key.
  std::string misspelt(const std::string& key) const {
    for (const auto& [name, value] : obj_.items()) {
      if (used_.count(name) == 0 && name != key && settings::typoDistance(name, key) <= std::max<size_t>(1, key.size() / 4)) {
        return " ('" + name + "' here looks like a misspelling of it)";
      }
    }
    return "";
  }
  std::string str(const std::string& key, bool required, const std::string& dflt = "") {
    const Json* v = get(key, required);
    if (v == nullptr) return dflt;
    if (!v->is_string()) src_.fail(at(key), "'" + key + "' must be a string");
    return v->get<std::string>();
  }
  int64_t integer(const std::string& key, bool required, int64_t lo, int64_t hi, int64_t dflt = 0) {
    const Json* v = get(key, required);
    if (v == nullptr) return dflt;
    if (!v->is_number_integer()) src_.fail(at(key), "'" + key + "' must be an integer");
    const int64_t x = v->is_number_unsigned() && v->get<uint64_t>() > INT64_MAX
                          ? INT64_MAX
                          : v->get<int64_t>();
    if (x < lo || x > hi) {
      src_.fail(at(key), "'" + key + "' is " + std::to_string(x) + ", outside [" +
                             std::to_string(lo) + ", " + std::to_string(hi) + "]");
    }
    return x;
  }
  double number(const std::string& key, bool required, double lo, double hi, double dflt = 0) {
    const Json* v = get(key, required);
    if (v == nullptr) return dflt;
    if (!v->is_number()) src_.fail(at(key), "'" + key + "' must be a number");
    const double x = v->get<double>();
    if (!(x >= lo && x <= hi)) src_.fail(at(key), "'" + key + "' is out of range");
    return x;
  }
  bool boolean(const std::string& key, bool required, bool dflt = false) {
    const Json* v = get(key, required);
    if (v == nullptr) return dflt;
    if (!v->is_boolean()) src_.fail(at(key), "'" + key + "' must be true or false");
    return v->get<bool>();
  }
  std::vector<int> intList(const std::string& key, bool required, int lo, int hi) {
    const Json* v = get(key, required);
    std::vector<int> out;
    if (v == nullptr) return out;
    if (!v->is_array()) src_.fail(at(key), "'" + key + "' must be a list of integers");
    for (size_t i = 0; i < v->size(); ++i) {
      const Json& e = (*v)[i];
      const std::string p = at(key) + "/" + std::to_string(i);
      if (!e.is_number_integer()) src_.fail(p, "'" + key + "' must hold integers only");
      const int64_t x = e.get<int64_t>();
      if (x < lo || x > hi) src_.fail(p, "'" + key + "' element out of range");
      out.push_back(static_cast<int>(x));
    }
    return out;
  }
  // Rejects members that nobody read; "sources" and "notes" are free-form documentation.
  void finish() {
    for (auto it = obj_.begin(); it != obj_.end(); ++it) {
      if (it.key() == "sources" || it.key() == "notes") continue;
      if (used_.count(it.key()) != 0) continue;
      std::string meant;
      for (const std::string& known : used_) {
        if (settings::typoDistance(it.key(), known) <= std::max<size_t>(1, known.size() / 4)) meant = known;
      }
      src_.fail(at(it.key()), "unknown key '" + it.key() + "'" + (meant.empty() ? "" : " (did you mean '" + meant + "'?)"));
    }
  }

 private:
  const JsonSource& src_;
  std::string ptr_;
  const Json& obj_;
  std::set<std::string> used_;
};

constexpr int64_t kMaxGpus = 1024;
constexpr int64_t kTiB = int64_t{1} << 40;

bool isPow2(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

int64_t attributeOr(const GpuSpec& g, const std::string& name, int64_t dflt) {
  for (const auto& [n, v] : g.attributes) {
    if (n == name) return v;
  }
  return dflt;
}

// The values a GPU attribute may take: cuDeviceGetAttribute answers an int; a NUMA id may be -1
// (none), every other attribute is a count, a size or a flag; and the launch limits and counts the
// driver divides by or checks launches against are at least 1.
std::pair<int64_t, int64_t> attributeRange(const std::string& name) {
  static const std::set<std::string> kAtLeastOne = {
      "MAX_THREADS_PER_BLOCK", "MAX_BLOCK_DIM_X", "MAX_BLOCK_DIM_Y", "MAX_BLOCK_DIM_Z",
      "MAX_GRID_DIM_X", "MAX_GRID_DIM_Y", "MAX_GRID_DIM_Z", "WARP_SIZE", "MULTIPROCESSOR_COUNT",
      "MAX_THREADS_PER_MULTIPROCESSOR", "MAX_BLOCKS_PER_MULTIPROCESSOR", "MAX_REGISTERS_PER_BLOCK",
      "MAX_REGISTERS_PER_MULTIPROCESSOR", "ASYNC_ENGINE_COUNT"};
  constexpr int64_t kIntMax = 2147483647;
  const bool numaId = name.size() >= 7 && name.compare(name.size() - 7, 7, "NUMA_ID") == 0;
  if (numaId) return {-1, kIntMax};
  return {kAtLeastOne.count(name) != 0 ? 1 : 0, kIntMax};
}

constexpr double kGB = 1e9;

// The "timing" object of a GPU file: the memory system, the copy engines and PCIe.
model::GpuTimingSpec readGpuTiming(const JsonSource& src, const GpuSpec& g) {
  model::GpuTimingSpec t;
  ObjectReader r(src, "/timing");
  {
    r.get("hbm", true);
    ObjectReader h(src, "/timing/hbm");
    t.hbm.stacks = static_cast<int>(h.integer("stacks", true, 1, model::Hbm::kMaxStacks));
    t.hbm.channelsPerStack = static_cast<int>(h.integer("channels_per_stack", true, 1, 256));
    const double peak = h.number("gbytes_per_s", true, 1, 1e6);
    const double eff = h.number("efficiency", true, 0.01, 1);
    t.hbm.bytesPerSecond = peak * eff * kGB;
    t.hbm.latencyPs = static_cast<uint64_t>(h.integer("latency_ns", true, 0, 1000000)) * 1000;
    t.hbm.interleaveBytes = static_cast<uint64_t>(h.integer("interleave_bytes", true, 256, 1 << 30));
    if (!isPow2(t.hbm.interleaveBytes)) src.fail("/timing/hbm/interleave_bytes", "must be a power of two");
    h.finish();
  }
  {
    r.get("l2", true);
    ObjectReader l(src, "/timing/l2");
    t.l2.bytes = static_cast<uint64_t>(attributeOr(g, "L2_CACHE_SIZE", 0));
    t.l2.bytesPerSecond = l.number("gbytes_per_s", true, 1, 1e6) * kGB;
    t.l2.latencyPs = static_cast<uint64_t>(l.integer("latency_ns", true, 0, 1000000)) * 1000;
    t.l2.lineBytes = static_cast<uint64_t>(l.integer("model_line_bytes", true, 128, 1 << 30));
    if (!isPow2(t.l2.lineBytes)) src.fail("/timing/l2/model_line_bytes", "must be a power of two");
    l.finish();
  }
  {
    r.get("copy_engine", true);
    ObjectReader c(src, "/timing/copy_engine");
    t.copyEngine.count = static_cast<int>(std::max<int64_t>(1, attributeOr(g, "ASYNC_ENGINE_COUNT", 1)));
    t.copyEngine.setupPs = static_cast<uint64_t>(c.integer("setup_ns", true, 0, 1000000000)) * 1000;
    t.copyEngine.chunkBytes = static_cast<uint64_t>(c.integer("chunk_bytes", true, 512, 1ll << 32));
    t.copyEngine.windowChunks = static_cast<int>(c.integer("window_chunks", true, 1, 4096));
    c.finish();
  }
  {
    r.get("pcie", true);
    ObjectReader p(src, "/timing/pcie");
    const double peak = p.number("gbytes_per_s_per_direction", true, 0.1, 1e5);
    t.pcie.bytesPerSecond = peak * p.number("efficiency", true, 0.01, 1) * kGB;
    t.pcie.pageableBytesPerSecond = p.number("pageable_gbytes_per_s", true, 0.1, 1e5) * kGB;
    t.pcie.latencyPs = static_cast<uint64_t>(p.integer("latency_ns", true, 0, 1000000000)) * 1000;
    // Optional: without them a staged peer copy runs at the pinned rate with no extra setup.
    t.pcie.stagedPeerBytesPerSecond =
        p.number("staged_peer_gbytes_per_s", false, 0.1, 1e5, t.pcie.bytesPerSecond / kGB) * kGB;
    t.pcie.stagedPeerSetupPs = static_cast<uint64_t>(p.integer("staged_peer_setup_ns", false, 0, 1000000000)) * 1000;
    p.finish();
  }
  {
    r.get("sm", true);
    ObjectReader m(src, "/timing/sm");
    t.sm.launchPs = static_cast<uint64_t>(m.integer("launch_ns", true, 0, 1000000000)) * 1000;
    t.sm.chunkBytes = static_cast<uint64_t>(m.integer("chunk_bytes", true, 512, 1ll << 32));
    t.sm.bytesInFlightPerThread = static_cast<uint64_t>(m.integer("bytes_in_flight_per_thread", true, 1, 1 << 20));
    t.sm.maxResidentThreads = static_cast<uint64_t>(std::max<int64_t>(
        1, attributeOr(g, "MULTIPROCESSOR_COUNT", 1) * attributeOr(g, "MAX_THREADS_PER_MULTIPROCESSOR", 2048)));
    t.sm.bytesPerSecPerSm = m.number("gbytes_per_s_per_sm", false, 1, 1e5, 0) * 1e9;
    // Optional: without them fences cost nothing beyond their ordering.
    t.sm.fenceGpuPs = static_cast<uint64_t>(m.integer("fence_gpu_ns", false, 0, 1000000)) * 1000;
    t.sm.fenceSysPs = static_cast<uint64_t>(m.integer("fence_sys_ns", false, 0, 1000000)) * 1000;
    t.sm.smCount = static_cast<uint64_t>(std::max<int64_t>(1, attributeOr(g, "MULTIPROCESSOR_COUNT", 1)));
    // Four warp schedulers per SM, each issuing one warp instruction a cycle (the SM of Volta and
    // every architecture since: NVIDIA's Volta, Ampere and Hopper architecture whitepapers, "four
    // processing blocks, each with ... one warp scheduler"), at the SM clock (CLOCK_RATE, kHz).
    t.sm.warpInstructionsPerSecPerSm = 4.0 * static_cast<double>(std::max<int64_t>(1, attributeOr(g, "CLOCK_RATE", 1000000))) * 1e3;
    m.finish();
  }
  r.finish();
  return t;
}

GpuSpec readGpu(std::shared_ptr<const JsonSource> src, const std::string& model) {
  GpuSpec g;
  g.model = model;
  g.source = src;
  ObjectReader r(*src, "");
  const int64_t schema = r.integer("mcsim_gpu", true, 1, 1);
  (void)schema;
  g.name = r.str("name", true);
  if (g.name.empty() || g.name.size() > 255) src->fail("/name", "'name' must have 1 to 255 characters");
  g.memoryBytes = static_cast<uint64_t>(r.integer("memory_bytes", true, 1 << 20, 64 * kTiB));
  {
    r.get("vmm_granularity", true);
    ObjectReader gr(*src, "/vmm_granularity");
    g.vmmGranularityMinimum = static_cast<uint64_t>(gr.integer("minimum", true, 4096, 1 << 30));
    g.vmmGranularityRecommended = static_cast<uint64_t>(gr.integer("recommended", true, 4096, 1 << 30));
    if (!isPow2(g.vmmGranularityMinimum)) src->fail("/vmm_granularity/minimum", "must be a power of two");
    if (g.vmmGranularityRecommended % g.vmmGranularityMinimum != 0) {
      src->fail("/vmm_granularity/recommended", "must be a multiple of the minimum");
    }
    gr.finish();
  }
  const Json* attrs = r.get("attributes", true);
  if (!attrs->is_object()) src->fail("/attributes", "'attributes' must be an object");
  g.attributesPointer = "/attributes";
  for (auto it = attrs->begin(); it != attrs->end(); ++it) {
    if (!it.value().is_number_integer()) {
      src->fail("/attributes/" + it.key(), "attribute '" + it.key() + "' must be an integer");
    }
    const auto [lo, hi] = attributeRange(it.key());
    const bool huge = it.value().is_number_unsigned() && it.value().get<uint64_t>() > static_cast<uint64_t>(hi);
    const int64_t v = huge ? hi : it.value().get<int64_t>();
    if (huge || v < lo || v > hi) {
      src->fail("/attributes/" + it.key(), "attribute '" + it.key() + "' is " + it.value().dump() + ", outside [" +
                                               std::to_string(lo) + ", " + std::to_string(hi) + "]");
    }
    g.attributes.emplace_back(it.key(), v);
  }
  r.get("timing", true);
  g.timing = readGpuTiming(*src, g);
  r.finish();
  return g;
}

std::shared_ptr<const JsonSource> sourceFor(const std::string& nameOrPath, const char* kind,
                                            const std::string& relativeTo,
                                            const std::string& whoAsked, int line) {
  if (looksLikePath(nameOrPath)) {
    std::string path = nameOrPath;
    if (path[0] != '/' && !relativeTo.empty()) path = relativeTo + "/" + path;
    return std::make_shared<const JsonSource>(JsonSource::parse(readFile(path, whoAsked, line), path));
  }
  const char* text = builtinPresetText(kind, nameOrPath);
  if (text == nullptr) {
    std::string known;
    for (const auto& n : builtinNames(kind)) known += (known.empty() ? "" : ", ") + n;
    // Asked for by name (MCSIM_TOPOLOGY, --topology, a test): no file to name; the caller says
    // where the name came from.
    throw InputError(whoAsked, line,
                     std::string("unknown built-in ") + (std::string(kind) == "gpus" ? "GPU" : "preset") +
                         " '" + nameOrPath + "' (built-in: " + known + ")");
  }
  return std::make_shared<const JsonSource>(
      JsonSource::parse(text, std::string("<builtin>/") + kind + "/" + nameOrPath + ".json"));
}

}  // namespace

model::LinkHealth healthyLinks(const Preset& preset) {
  std::vector<int> perSwitch;
  for (int s = 0; s < preset.nvswitch.count; ++s) perSwitch.push_back(preset.nvswitch.linksPerGpuPerSwitch[static_cast<size_t>(s)]);
  if (perSwitch.empty() && preset.nvlink.linksPerGpu > 0) perSwitch.push_back(preset.nvlink.linksPerGpu);
  return model::LinkHealth(preset.gpuCount, std::move(perSwitch));
}

const char* defaultPresetName() { return "hgx-h100"; }

const std::vector<std::string>& fabricManagerStateNames() {
  static const std::vector<std::string> names = {"not-started", "initialising", "ready", "degraded"};
  return names;
}

std::vector<std::string> builtinPresetNames() { return builtinNames("nodes"); }

Preset loadPreset(const std::string& nameOrPath) {
  auto src = sourceFor(nameOrPath, "nodes", "", "", 0);
  const JsonSource& s = *src;
  Preset p;
  p.file = s.file();
  ObjectReader r(s, "");
  r.integer("mcsim_preset", true, 1, 1);
  p.name = r.str("name", true);
  p.description = r.str("description", false);
  {
    const std::string gpuRef = r.str("gpu", true);
    auto gsrc = sourceFor(gpuRef, "gpus", looksLikePath(s.file()) && s.file()[0] != '<' ? directoryOf(s.file()) : "",
                          s.file(), s.lineOf("/gpu"));
    p.gpu = readGpu(gsrc, gpuRef);
  }
  p.gpuCount = static_cast<int>(r.integer("gpu_count", true, 1, kMaxGpus));
  {
    r.get("host", true);
    ObjectReader h(s, "/host");
    p.hostNumaNodes = static_cast<int>(h.integer("numa_nodes", true, 1, 64));
    p.gpuNumaNode = h.intList("gpu_numa_node", true, 0, p.hostNumaNodes - 1);
    if (static_cast<int>(p.gpuNumaNode.size()) != p.gpuCount) {
      s.fail("/host/gpu_numa_node", "'gpu_numa_node' must list one NUMA node per GPU (" +
                                        std::to_string(p.gpuCount) + ")");
    }
    p.pciBusId = h.intList("pci_bus_id", false, 0, 255);
    if (!p.pciBusId.empty() && static_cast<int>(p.pciBusId.size()) != p.gpuCount) {
      s.fail("/host/pci_bus_id", "'pci_bus_id' must list one bus per GPU");
    }
    p.hostMemoryBytesPerNumaNode =
        static_cast<uint64_t>(h.integer("memory_bytes_per_numa_node", true, 1 << 20, 64 * kTiB));
    h.finish();
  }
  {
    r.get("nvlink", true);
    ObjectReader n(s, "/nvlink");
    p.nvlink.linksPerGpu = static_cast<int>(n.integer("links_per_gpu", true, 0, 64));
    p.nvlink.gbytesPerSecPerLinkPerDirection =
        n.number("gbytes_per_s_per_link_per_direction", p.nvlink.linksPerGpu > 0, 0, 1000);
    p.nvlink.efficiency = n.number("efficiency", p.nvlink.linksPerGpu > 0, 0.01, 1, 1);
    p.nvlink.smEfficiency = n.number("sm_efficiency", false, 0.01, 1, p.nvlink.efficiency);
    p.nvlink.latencyNs = static_cast<uint64_t>(n.integer("latency_ns", p.nvlink.linksPerGpu > 0, 0, 1000000));
    p.nvlink.crossGpuSyncNs =
        static_cast<uint64_t>(n.integer("cross_gpu_sync_ns", p.nvlink.linksPerGpu > 0, 0, 1000000000));
    n.finish();
  }
  {
    r.get("nvswitch", true);
    ObjectReader n(s, "/nvswitch");
    p.nvswitch.count = static_cast<int>(n.integer("count", true, 0, 1024));
    const bool any = p.nvswitch.count > 0;
    p.nvswitch.linksPerGpuPerSwitch = n.intList("links_per_gpu_per_switch", any, 0, 64);
    p.nvswitch.ports = static_cast<int>(n.integer("ports", any, 0, 1024));
    p.nvswitch.multicastSlots = static_cast<int>(n.integer("multicast_slots", any, 0, 1 << 20));
    p.nvswitch.crossbarGbytesPerSec = n.number("crossbar_gbytes_per_s", any, 1, 1e7, 0);
    p.nvswitch.latencyNs = static_cast<uint64_t>(n.integer("latency_ns", any, 0, 1000000));
    p.nvswitch.reduceLineRateFraction = n.number("reduce_line_rate_fraction", false, 0.01, 1, 1);
    p.nvswitch.reduceLatencyNs = static_cast<uint64_t>(n.integer("reduce_latency_ns", false, 0, 1000000, 0));
    if (any) {
      if (static_cast<int>(p.nvswitch.linksPerGpuPerSwitch.size()) != p.nvswitch.count) {
        s.fail("/nvswitch/links_per_gpu_per_switch", "must list one link count per switch");
      }
      const int sum = std::accumulate(p.nvswitch.linksPerGpuPerSwitch.begin(),
                                      p.nvswitch.linksPerGpuPerSwitch.end(), 0);
      if (sum != p.nvlink.linksPerGpu) {
        s.fail("/nvswitch/links_per_gpu_per_switch",
               "links per switch add up to " + std::to_string(sum) + ", but nvlink.links_per_gpu is " +
                   std::to_string(p.nvlink.linksPerGpu));
      }
    }
    n.finish();
  }
  {
    r.get("multicast", true);
    ObjectReader m(s, "/multicast");
    const bool any = p.nvswitch.count > 0;
    p.multicast.granularityMinimum = static_cast<uint64_t>(m.integer("granularity_minimum", any, 0, 1ll << 34));
    p.multicast.granularityRecommended =
        static_cast<uint64_t>(m.integer("granularity_recommended", any, 0, 1ll << 34));
    p.multicast.maxTeamSize = static_cast<int>(m.integer("max_team_size", any, 0, kMaxGpus));
    if (any) {
      if (!isPow2(p.multicast.granularityMinimum)) s.fail("/multicast/granularity_minimum", "must be a power of two");
      if (p.multicast.granularityRecommended % p.multicast.granularityMinimum != 0) {
        s.fail("/multicast/granularity_recommended", "must be a multiple of granularity_minimum");
      }
      if (p.multicast.maxTeamSize > p.gpuCount) s.fail("/multicast/max_team_size", "exceeds gpu_count");
    }
    m.finish();
  }
  p.imexChannel = r.boolean("imex_channel", false, false);
  p.fabricManagerInitialState = p.multicastSupported() ? "ready" : "not-started";
  if (r.get("fabric_manager", false) != nullptr) {
    ObjectReader f(s, "/fabric_manager");
    const std::string state = f.str("initial_state", true);
    const auto& names = fabricManagerStateNames();
    if (std::find(names.begin(), names.end(), state) == names.end()) {
      s.fail("/fabric_manager/initial_state",
             "unknown fabric manager state '" + state + "' (not-started, initialising, ready, degraded)");
    }
    // Without NVSwitches there is no manager to start; a preset that says otherwise is a mistake.
    if (!p.multicastSupported() && state != "not-started") {
      s.fail("/fabric_manager/initial_state", "a preset without a multicast fabric has no fabric manager running: "
                                              "its initial_state can only be 'not-started'");
    }
    p.fabricManagerInitialState = state;
    f.finish();
  }
  if (r.get("trays", false) != nullptr) {
    ObjectReader t(s, "/trays");
    p.trayCount = static_cast<int>(t.integer("count", true, 1, kMaxGpus));
    p.gpusPerTray = static_cast<int>(t.integer("gpus_per_tray", true, 1, kMaxGpus));
    if (p.trayCount * p.gpusPerTray != p.gpuCount) {
      s.fail("/trays", std::to_string(p.trayCount) + " trays of " + std::to_string(p.gpusPerTray) + " GPUs make " +
                           std::to_string(p.trayCount * p.gpusPerTray) + " GPUs, but gpu_count is " +
                           std::to_string(p.gpuCount));
    }
    t.finish();
  }
  r.finish();
  return p;
}

int TraySpan::ordinalOf(int rackGpu) const {
  if (rackGpu < 0) return rackGpu;
  int hostGpu = rackGpu;
  if (holds(rackGpu)) {
    hostGpu = rackGpu - firstGpu;
  } else if (tray >= 0 && gpus > 0) {
    return rackGpu % gpus;
  }
  for (size_t o = 0; o < visible.size(); ++o) {
    if (visible[o] == hostGpu) return static_cast<int>(o);
  }
  return hostGpu;
}

bool traySpan(const Preset& preset, int tray, TraySpan* out, std::string* error) {
  if (preset.trayCount == 0) {
    *error = "MCSIM_TRAY=" + std::to_string(tray) + ", but the preset '" + preset.name +
             "' has no trays: its GPUs are one host (docs/presets.md, \"trays\")";
    return false;
  }
  if (tray < 0 || tray >= preset.trayCount) {
    *error = "MCSIM_TRAY=" + std::to_string(tray) + " is no tray of '" + preset.name + "', which has trays 0 to " +
             std::to_string(preset.trayCount - 1);
    return false;
  }
  TraySpan s;
  s.tray = tray;
  s.gpus = preset.gpusPerTray;
  s.firstGpu = tray * preset.gpusPerTray;
  const auto first = preset.gpuNumaNode.begin() + s.firstGpu;
  const auto [lo, hi] = std::minmax_element(first, first + s.gpus);
  s.firstNumaNode = *lo;
  s.numaNodes = *hi - *lo + 1;
  *out = s;
  return true;
}

}  // namespace mcsim::fabric
