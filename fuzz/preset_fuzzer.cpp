// libFuzzer target for topology presets: any file is a preset or an InputError naming a file and a
// line; never another exception, a crash, undefined behaviour or memory out of proportion to the
// input (built with ASan/UBSan, libFuzzer's -rss_limit_mb). The first byte chooses what the rest
// is: a node preset (even), or the GPU file a fixed node preset names (odd). Run by
// scripts/fuzz.sh (docs/reliability.md, "Fuzzing").
#include <unistd.h>

#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "fabric/json_source.h"
#include "fabric/preset.h"

namespace {

// A directory of this process's own for the files, made once.
const std::string& workDir() {
  static const std::string dir = [] {
    char tmpl[] = "/tmp/mcsim-preset-fuzz-XXXXXX";
    if (mkdtemp(tmpl) == nullptr) std::abort();
    return std::string(tmpl);
  }();
  return dir;
}

const char* const kNodeNamingGpuFile = R"({
  "mcsim_preset": 1, "name": "fuzz", "gpu": "gpu.json", "gpu_count": 2,
  "host": {"numa_nodes": 1, "gpu_numa_node": [0, 0], "memory_bytes_per_numa_node": 1099511627776},
  "nvlink": {"links_per_gpu": 4, "gbytes_per_s_per_link_per_direction": 25.0, "efficiency": 0.9,
             "latency_ns": 400, "cross_gpu_sync_ns": 5000},
  "nvswitch": {"count": 2, "links_per_gpu_per_switch": [2, 2], "ports": 64, "multicast_slots": 128,
               "crossbar_gbytes_per_s": 1600, "latency_ns": 300, "reduce_line_rate_fraction": 0.5,
               "reduce_latency_ns": 700},
  "multicast": {"granularity_minimum": 2097152, "granularity_recommended": 2097152, "max_team_size": 2}
})";

void write(const std::string& path, const char* data, size_t size) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(data, static_cast<std::streamsize>(size));
  if (!out) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mcsim::fabric;
  if (size == 0) return 0;
  const bool gpuFile = (data[0] & 1) != 0;
  const std::string node = workDir() + "/node.json";
  const std::string gpu = workDir() + "/gpu.json";
  if (gpuFile) {
    write(node, kNodeNamingGpuFile, std::char_traits<char>::length(kNodeNamingGpuFile));
    write(gpu, reinterpret_cast<const char*>(data + 1), size - 1);
  } else {
    ::unlink(gpu.c_str());  // a preset naming gpu.json finds none: each input is judged alone
    write(node, reinterpret_cast<const char*>(data + 1), size - 1);
  }
  try {
    const Preset p = loadPreset(node);
    if (p.gpuCount < 1 || static_cast<int>(p.gpuNumaNode.size()) != p.gpuCount) std::abort();
    for (const auto& [name, value] : p.gpu.attributes) {
      if (value < INT_MIN || value > INT_MAX) std::abort();  // cuDeviceGetAttribute answers an int
    }
  } catch (const InputError& e) {
    if (e.file().empty() || e.line() < 0) std::abort();
  }
  return 0;
}
