// Topology presets: the built-in ones load with the facts the design names, user files load from
// a path, and every malformed file is refused with an InputError naming the file and the exact
// line of the problem (a user editing a preset must be sent to the right line).
#include "fabric/preset.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <numeric>
#include <string>
#include <vector>

namespace mcsim::fabric {
namespace {

int sum(const std::vector<int>& v) { return std::accumulate(v.begin(), v.end(), 0); }

// ---- built-in presets ------------------------------------------------------------------------

TEST(BuiltinPresets, DesignNamesAreAllBuiltIn) {
  const std::vector<std::string> names = builtinPresetNames();
  for (const char* want : {"hgx-h100", "hgx-h200", "dgx-b200", "gb200-nvl72", "single-h100"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), want), names.end()) << want;
  }
}

TEST(BuiltinPresets, EveryBuiltInLoadsAndIsSelfConsistent) {
  for (const std::string& name : builtinPresetNames()) {
    SCOPED_TRACE(name);
    const Preset p = loadPreset(name);
    EXPECT_EQ(p.name, name);
    EXPECT_EQ(p.file, "<builtin>/nodes/" + name + ".json");
    EXPECT_GE(p.gpuCount, 1);
    EXPECT_EQ(static_cast<int>(p.gpuNumaNode.size()), p.gpuCount);
    EXPECT_FALSE(p.gpu.name.empty());
    EXPECT_GT(p.gpu.memoryBytes, 0u);
    EXPECT_FALSE(p.gpu.attributes.empty());
    if (p.nvswitch.count > 0) {
      EXPECT_EQ(static_cast<int>(p.nvswitch.linksPerGpuPerSwitch.size()), p.nvswitch.count);
      EXPECT_EQ(sum(p.nvswitch.linksPerGpuPerSwitch), p.nvlink.linksPerGpu);
    }
  }
}

TEST(BuiltinPresets, DefaultPresetIsBuiltIn) {
  EXPECT_EQ(loadPreset(defaultPresetName()).name, defaultPresetName());
}

TEST(BuiltinPresets, HgxH100) {
  const Preset p = loadPreset("hgx-h100");
  EXPECT_EQ(p.gpuCount, 8);
  EXPECT_EQ(p.nvswitch.count, 4);
  EXPECT_EQ(p.nvlink.linksPerGpu, 18);
  EXPECT_EQ(sum(p.nvswitch.linksPerGpuPerSwitch), 18);
  EXPECT_TRUE(p.multicastSupported());
  EXPECT_FALSE(p.imexChannel);
  EXPECT_EQ(p.gpu.model, "h100-sxm5-80gb");
}

TEST(BuiltinPresets, SingleH100HasNoMulticast) {
  const Preset p = loadPreset("single-h100");
  EXPECT_EQ(p.gpuCount, 1);
  EXPECT_EQ(p.nvswitch.count, 0);
  EXPECT_FALSE(p.multicastSupported());
}

TEST(BuiltinPresets, Gb200Nvl72) {
  const Preset p = loadPreset("gb200-nvl72");
  EXPECT_EQ(p.gpuCount, 72);
  EXPECT_EQ(p.nvswitch.count, 18);
  EXPECT_EQ(sum(p.nvswitch.linksPerGpuPerSwitch), p.nvlink.linksPerGpu);
  EXPECT_TRUE(p.imexChannel);
  EXPECT_TRUE(p.multicastSupported());
}

// ---- presets from files ----------------------------------------------------------------------

// A temporary directory, removed with its files at the end of the test.
class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/mcsim-preset-test-XXXXXX";
    const char* d = mkdtemp(tmpl);
    if (d == nullptr) std::abort();
    path_ = d;
  }
  ~TempDir() {
    for (auto it = files_.rbegin(); it != files_.rend(); ++it) std::remove(it->c_str());
    for (auto it = dirs_.rbegin(); it != dirs_.rend(); ++it) rmdir(it->c_str());
    rmdir(path_.c_str());
  }
  const std::string& path() const { return path_; }
  std::string mkdir(const std::string& rel) {
    const std::string p = path_ + "/" + rel;
    ::mkdir(p.c_str(), 0700);
    dirs_.push_back(p);
    return p;
  }
  std::string write(const std::string& rel, const std::string& text) {
    const std::string p = path_ + "/" + rel;
    std::ofstream(p, std::ios::binary) << text;
    files_.push_back(p);
    return p;
  }

 private:
  std::string path_;
  std::vector<std::string> files_, dirs_;
};

// A valid two-GPU preset. Tests break one thing in it and expect the error on that line.
const char* const kValidPreset = R"({
  "mcsim_preset": 1,
  "name": "test-node",
  "description": "two GPUs behind two switches",
  "gpu": "h100-sxm5-80gb",
  "gpu_count": 2,
  "host": {
    "numa_nodes": 1,
    "gpu_numa_node": [
      0,
      0
    ],
    "memory_bytes_per_numa_node": 1099511627776
  },
  "nvlink": {
    "links_per_gpu": 4,
    "gbytes_per_s_per_link_per_direction": 25.0,
    "efficiency": 0.9,
    "latency_ns": 400,
    "cross_gpu_sync_ns": 5000
  },
  "nvswitch": {
    "count": 2,
    "links_per_gpu_per_switch": [2, 2],
    "ports": 64,
    "multicast_slots": 128,
    "crossbar_gbytes_per_s": 1600,
    "latency_ns": 300,
    "reduce_line_rate_fraction": 0.5,
    "reduce_latency_ns": 700
  },
  "multicast": {
    "granularity_minimum": 2097152,
    "granularity_recommended": 2097152,
    "max_team_size": 2
  }
}
)";

// A valid GPU description, for presets that name a GPU file by path.
const char* const kValidGpu = R"({
  "mcsim_gpu": 1,
  "name": "Test GPU",
  "memory_bytes": 1073741824,
  "vmm_granularity": {
    "minimum": 2097152,
    "recommended": 2097152
  },
  "timing": {
    "hbm": {"stacks": 2, "channels_per_stack": 16, "gbytes_per_s": 1000, "efficiency": 0.9,
            "latency_ns": 500, "interleave_bytes": 4096},
    "l2": {"gbytes_per_s": 2000, "latency_ns": 200, "model_line_bytes": 65536},
    "copy_engine": {"setup_ns": 5000, "chunk_bytes": 262144, "window_chunks": 8},
    "pcie": {"gbytes_per_s_per_direction": 63, "efficiency": 0.85, "pageable_gbytes_per_s": 20,
             "latency_ns": 1500},
    "sm": {"launch_ns": 3000, "chunk_bytes": 65536, "bytes_in_flight_per_thread": 16}
  },
  "attributes": {
    "WARP_SIZE": 32,
    "MULTIPROCESSOR_COUNT": 4
  }
}
)";

// The 1-based line of the first line of `text` that contains `needle`; 0 when none does.
int lineContaining(const std::string& text, const std::string& needle) {
  const auto at = text.find(needle);
  if (at == std::string::npos) return 0;
  return 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<long>(at), '\n'));
}

// `text` with the first occurrence of `from` replaced by `to` (which must exist).
std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  if (at == std::string::npos) {
    ADD_FAILURE() << "test bug: '" << from << "' not in the template";
    return text;
  }
  return text.replace(at, from.size(), to);
}

// Loads `path`, expecting an InputError; returns it.
InputError loadError(const std::string& path) {
  try {
    loadPreset(path);
  } catch (const InputError& e) {
    return e;
  }
  ADD_FAILURE() << "no InputError loading " << path;
  return InputError("", -1, "");
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TEST(PresetFromPath, ValidFileLoads) {
  TempDir dir;
  const std::string path = dir.write("node.json", kValidPreset);
  const Preset p = loadPreset(path);
  EXPECT_EQ(p.name, "test-node");
  EXPECT_EQ(p.file, path);
  EXPECT_EQ(p.gpuCount, 2);
  EXPECT_EQ(p.nvswitch.count, 2);
  EXPECT_TRUE(p.multicastSupported());
  EXPECT_EQ(p.gpu.name, "NVIDIA H100 80GB HBM3");  // the built-in GPU it names
}

TEST(PresetFromPath, GpuFileIsFoundRelativeToThePresetsDirectory) {
  // The process's working directory is not the preset's directory, so only resolution against
  // the preset file's own directory finds the GPU file.
  TempDir dir;
  dir.mkdir("gpus");
  dir.write("gpus/test-gpu.json", kValidGpu);
  const std::string path =
      dir.write("node.json", replaced(kValidPreset, "\"h100-sxm5-80gb\"", "\"gpus/test-gpu.json\""));
  const Preset p = loadPreset(path);
  EXPECT_EQ(p.gpu.name, "Test GPU");
  EXPECT_EQ(p.gpu.model, "gpus/test-gpu.json");
  EXPECT_EQ(p.gpu.memoryBytes, 1073741824u);
  EXPECT_EQ(p.gpu.vmmGranularityMinimum, 2097152u);
  EXPECT_EQ(p.gpu.attributes.size(), 2u);
}

TEST(PresetFromPath, GpuAttributesComeSortedByName) {
  // fabric/preset.h documents GpuSpec::attributes as sorted by name, whatever the file order:
  // here WARP_SIZE comes first in the file but is read second.
  TempDir dir;
  dir.write("gpu.json", kValidGpu);
  const Preset p = loadPreset(dir.write("node.json", replaced(kValidPreset, "\"h100-sxm5-80gb\"", "\"gpu.json\"")));
  ASSERT_EQ(p.gpu.attributes.size(), 2u);
  EXPECT_EQ(p.gpu.attributes[0].first, "MULTIPROCESSOR_COUNT");
  EXPECT_EQ(p.gpu.attributes[1].first, "WARP_SIZE");
  EXPECT_EQ(p.gpu.attributes[1].second, 32);
}

TEST(PresetFromPath, MissingGpuFileBlamesThePresetsGpuLine) {
  TempDir dir;
  const std::string text = replaced(kValidPreset, "\"h100-sxm5-80gb\"", "\"gpus/absent.json\"");
  const std::string path = dir.write("node.json", text);
  const InputError e = loadError(path);
  EXPECT_EQ(e.file(), path);
  EXPECT_EQ(e.line(), lineContaining(text, "\"gpu\":"));
  EXPECT_TRUE(contains(e.problem(), "cannot read file")) << e.what();
  EXPECT_TRUE(contains(e.problem(), dir.path() + "/gpus/absent.json")) << e.what();
}

TEST(PresetFromPath, ErrorInsideGpuFileNamesTheGpuFileAndLine) {
  TempDir dir;
  dir.mkdir("gpus");
  const std::string gpu = replaced(kValidGpu, "\"memory_bytes\": 1073741824", "\"memory_bytes\": \"1 GiB\"");
  const std::string gpuPath = dir.write("gpus/test-gpu.json", gpu);
  const std::string path =
      dir.write("node.json", replaced(kValidPreset, "\"h100-sxm5-80gb\"", "\"gpus/test-gpu.json\""));
  const InputError e = loadError(path);
  EXPECT_EQ(e.file(), gpuPath);
  EXPECT_EQ(e.line(), 4);
  EXPECT_TRUE(contains(e.problem(), "must be an integer")) << e.what();
}

TEST(PresetFromPath, BadTimingInGpuFileIsBlamedOnItsLine) {
  TempDir dir;
  const std::string gpu = replaced(kValidGpu, "\"interleave_bytes\": 4096", "\"interleave_bytes\": 3000");
  const std::string gpuPath = dir.write("gpu.json", gpu);
  const InputError e = loadError(dir.write("node.json", replaced(kValidPreset, "\"h100-sxm5-80gb\"", "\"gpu.json\"")));
  EXPECT_EQ(e.file(), gpuPath);
  EXPECT_EQ(e.line(), lineContaining(gpu, "\"interleave_bytes\""));
  EXPECT_TRUE(contains(e.problem(), "power of two")) << e.what();
}

TEST(PresetFromPath, TimingParametersAreReadWithTheirUnits) {
  TempDir dir;
  dir.write("gpu.json", kValidGpu);
  const Preset p = loadPreset(dir.write("node.json", replaced(kValidPreset, "\"h100-sxm5-80gb\"", "\"gpu.json\"")));
  const mcsim::model::GpuTimingSpec& t = p.gpu.timing;
  EXPECT_EQ(t.hbm.stacks, 2);
  EXPECT_DOUBLE_EQ(t.hbm.bytesPerSecond, 1000 * 0.9 * 1e9);  // peak times efficiency
  EXPECT_EQ(t.hbm.latencyPs, 500000u);
  EXPECT_DOUBLE_EQ(t.l2.bytesPerSecond, 2000e9);
  EXPECT_EQ(t.copyEngine.setupPs, 5000000u);
  EXPECT_EQ(t.copyEngine.chunkBytes, 262144u);
  EXPECT_DOUBLE_EQ(t.pcie.bytesPerSecond, 63 * 0.85 * 1e9);
  EXPECT_DOUBLE_EQ(p.nvlink.efficiency, 0.9);
  EXPECT_EQ(p.nvlink.latencyNs, 400u);
  EXPECT_DOUBLE_EQ(p.nvswitch.crossbarGbytesPerSec, 1600);
  EXPECT_DOUBLE_EQ(p.nvswitch.reduceLineRateFraction, 0.5);
  EXPECT_EQ(p.nvswitch.reduceLatencyNs, 700u);
  EXPECT_EQ(t.sm.launchPs, 3000000u);
  EXPECT_EQ(t.sm.bytesInFlightPerThread, 16u);
  EXPECT_EQ(t.sm.maxResidentThreads, 4u * 2048u);  // MULTIPROCESSOR_COUNT x the default 2048 threads
}

TEST(BuiltinPreset, L2SizeAndCopyEnginesComeFromTheAttributes) {
  const Preset p = loadPreset("hgx-h200");
  EXPECT_EQ(p.gpu.timing.l2.bytes, 62914560u);  // L2_CACHE_SIZE of a real H200
  EXPECT_EQ(p.gpu.timing.copyEngine.count, 3);   // ASYNC_ENGINE_COUNT
  EXPECT_EQ(p.gpu.timing.hbm.stacks, 6);
}

TEST(PresetFromPath, NonIntegerAttributeInGpuFileIsBlamedOnItsLine) {
  TempDir dir;
  const std::string gpu = replaced(kValidGpu, "\"MULTIPROCESSOR_COUNT\": 4", "\"MULTIPROCESSOR_COUNT\": 4.5");
  const std::string gpuPath = dir.write("gpu.json", gpu);
  const std::string path = dir.write("node.json", replaced(kValidPreset, "\"h100-sxm5-80gb\"", "\"gpu.json\""));
  const InputError e = loadError(path);
  EXPECT_EQ(e.file(), gpuPath);
  EXPECT_EQ(e.line(), lineContaining(gpu, "MULTIPROCESSOR_COUNT"));
}

TEST(PresetFromPath, GpuFileMissingARequiredObjectIsAnInputError) {
  // BUG (fabric/preset.cpp, readGpu): `ObjectReader gr(*src, "/vmm_granularity")` is built
  // before `r.get("vmm_granularity", true)` checks that the key exists, so a GPU file without
  // "vmm_granularity" escapes as nlohmann::json::out_of_range instead of an InputError naming
  // the file and line. Expected: InputError at the GPU file's line 1 ("missing required key").
  TempDir dir;
  const std::string gpu = replaced(kValidGpu,
                                   "  \"vmm_granularity\": {\n"
                                   "    \"minimum\": 2097152,\n"
                                   "    \"recommended\": 2097152\n"
                                   "  },\n",
                                   "");
  const std::string gpuPath = dir.write("gpu.json", gpu);
  const std::string path = dir.write("node.json", replaced(kValidPreset, "\"h100-sxm5-80gb\"", "\"gpu.json\""));
  try {
    loadPreset(path);
    FAIL() << "loaded a GPU file without vmm_granularity";
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), gpuPath);
    EXPECT_EQ(e.line(), 1);
    EXPECT_TRUE(contains(e.problem(), "missing required key 'vmm_granularity'")) << e.what();
  } catch (const std::exception& e) {
    FAIL() << "not an InputError: " << e.what();
  }
}

// ---- malformed presets: each case breaks one thing and names the line it must be blamed on ---

struct BadPreset {
  const char* what;
  const char* from;      // text in kValidPreset to replace
  const char* to;        // its replacement
  const char* blame;     // text on the line the error must name (in the broken file); "" = line 1
  const char* problem;   // part of the problem text
};

const BadPreset kBadPresets[] = {
    {"unknown top-level key", "  \"gpu_count\": 2,\n", "  \"gpu_count\": 2,\n  \"gpu_cuont\": 2,\n",
     "\"gpu_cuont\"", "unknown key 'gpu_cuont'"},
    {"unknown nested key", "    \"ports\": 64,\n", "    \"ports\": 64,\n    \"port\": 64,\n", "\"port\":",
     "unknown key 'port'"},
    {"wrong type (string for integer)", "\"gpu_count\": 2", "\"gpu_count\": \"2\"", "\"gpu_count\"",
     "must be an integer"},
    {"wrong type (number for object)", "  \"nvlink\": {\n    \"links_per_gpu\": 4,\n"
     "    \"gbytes_per_s_per_link_per_direction\": 25.0,\n    \"efficiency\": 0.9,\n    \"latency_ns\": 400,\n"
     "    \"cross_gpu_sync_ns\": 5000\n  },\n",
     "  \"nvlink\": 4,\n", "\"nvlink\"", "expected an object"},
    {"link efficiency above 1", "\"efficiency\": 0.9", "\"efficiency\": 1.5", "\"efficiency\"", "out of range"},
    {"link latency missing", "    \"latency_ns\": 400,\n", "", "\"nvlink\"", "missing required key 'latency_ns'"},
    {"crossbar bandwidth not a number", "\"crossbar_gbytes_per_s\": 1600", "\"crossbar_gbytes_per_s\": \"fast\"",
     "\"crossbar_gbytes_per_s\"", "must be a number"},
    {"wrong type (float for integer)", "\"numa_nodes\": 1", "\"numa_nodes\": 1.5", "\"numa_nodes\"",
     "must be an integer"},
    {"gpu_count zero", "\"gpu_count\": 2", "\"gpu_count\": 0", "\"gpu_count\"", "outside [1, 1024]"},
    {"gpu_count too large", "\"gpu_count\": 2", "\"gpu_count\": 1025", "\"gpu_count\"", "outside [1, 1024]"},
    {"gpu_numa_node too short", "[\n      0,\n      0\n    ]", "[\n      0\n    ]", "\"gpu_numa_node\"",
     "one NUMA node per GPU"},
    {"gpu_numa_node element out of range", "      0,\n      0\n", "      0,\n      1\n", "      1\n",
     "element out of range"},
    {"nvswitch links do not sum to links_per_gpu", "[2, 2]", "[2, 1]", "\"links_per_gpu_per_switch\"",
     "add up to 3"},
    {"nvswitch link list shorter than count", "[2, 2]", "[4]", "\"links_per_gpu_per_switch\"",
     "one link count per switch"},
    {"unknown built-in GPU", "\"h100-sxm5-80gb\"", "\"h100-sxm9\"", "\"gpu\":",
     "unknown built-in GPU 'h100-sxm9' (built-in: "},
    {"missing required top-level key", "  \"gpu_count\": 2,\n", "", "", "missing required key 'gpu_count'"},
    {"missing required nested key", "    \"ports\": 64,\n", "", "\"nvswitch\"", "missing required key 'ports'"},
    {"max_team_size over gpu_count", "\"max_team_size\": 2", "\"max_team_size\": 3", "\"max_team_size\"",
     "exceeds gpu_count"},
    {"granularity not a power of two", "\"granularity_minimum\": 2097152", "\"granularity_minimum\": 3000000",
     "\"granularity_minimum\"", "power of two"},
    {"wrong schema version", "\"mcsim_preset\": 1", "\"mcsim_preset\": 2", "\"mcsim_preset\"", "outside [1, 1]"},
    // Issue 19, item 13: this aborted cuInit (nlohmann's out_of_range escaped the reader).
    {"number beyond a double", "\"latency_ns\": 400", "\"latency_ns\": 1e400", "1e400", "number overflow"},
};

TEST(MalformedPreset, EachIsRejectedAtTheRightFileAndLine) {
  for (const BadPreset& c : kBadPresets) {
    SCOPED_TRACE(c.what);
    TempDir dir;
    const std::string text = replaced(kValidPreset, c.from, c.to);
    const std::string path = dir.write("bad.json", text);
    const int want = *c.blame == '\0' ? 1 : lineContaining(text, c.blame);
    ASSERT_GT(want, 0) << "test bug: blame text not in the broken file";
    const InputError e = loadError(path);
    EXPECT_EQ(e.file(), path);
    EXPECT_EQ(e.line(), want) << e.what();
    EXPECT_TRUE(contains(e.problem(), c.problem)) << e.what();
    EXPECT_EQ(std::string(e.what()).rfind(path + ":" + std::to_string(want) + ": ", 0), 0u) << e.what();
  }
}

TEST(MalformedPreset, UnknownTopLevelKeyIsBlamedOnItsExactLine) {
  // The same check as the table, with the line spelt out: the misspelt key is on line 7.
  TempDir dir;
  const std::string text = replaced(kValidPreset, "  \"gpu_count\": 2,\n", "  \"gpu_count\": 2,\n  \"hots\": {},\n");
  const InputError e = loadError(dir.write("bad.json", text));
  EXPECT_EQ(e.line(), 7);
}

TEST(MalformedPreset, NvswitchLinkSumIsBlamedOnItsExactLine) {
  TempDir dir;
  const std::string text = replaced(kValidPreset, "[2, 2]", "[3, 2]");
  const InputError e = loadError(dir.write("bad.json", text));
  EXPECT_EQ(e.line(), lineContaining(text, "[3, 2]"));
  EXPECT_EQ(e.line(), 24);
}

TEST(MalformedPreset, UnknownTopLevelKeyWithSlashIsBlamedOnItsLine) {
  // BUG (fabric/preset.cpp, ObjectReader::at): member pointers are built as ptr + "/" + key
  // without JSON-pointer escaping ('/' -> "~1", '~' -> "~0"), while JsonSource records lines
  // under escaped pointers, so an unknown key containing '/' is blamed on line 1 instead of
  // its own line.
  TempDir dir;
  const std::string text = replaced(kValidPreset, "  \"gpu_count\": 2,\n", "  \"gpu_count\": 2,\n  \"nv/link\": 1,\n");
  const InputError e = loadError(dir.write("bad.json", text));
  EXPECT_EQ(e.line(), lineContaining(text, "\"nv/link\""));
  EXPECT_TRUE(contains(e.problem(), "unknown key 'nv/link'")) << e.what();
}

// BUG (fabric/json_source.cpp:84, LineRecorder::parse_error): the handler takes the error as
// `const nlohmann::detail::exception&` and passes it on to json_sax_dom_parser::parse_error, a
// template that rethrows its argument by its static type. The parse_error is sliced to its base
// class, so JsonSource::parse's `catch (const nlohmann::json::parse_error&)` never matches and
// every JSON syntax error escapes as nlohmann::json::exception instead of an InputError with a
// file and line. The three tests below fail for that reason (a template parameter for the
// exception type fixes it).
TEST(MalformedPreset, TruncatedJsonIsRejectedOnTheLastLine) {
  TempDir dir;
  const std::string full = kValidPreset;
  // Cut in the middle of the "nvlink" object, in the middle of a line.
  const std::string cut = "\"links_per_gpu\": 4";
  const std::string text = full.substr(0, full.find(cut) + cut.size());
  const std::string path = dir.write("cut.json", text);
  const InputError e = loadError(path);
  EXPECT_EQ(e.file(), path);
  EXPECT_EQ(e.line(), 16);
  EXPECT_EQ(e.line(), lineContaining(text, cut));
  EXPECT_TRUE(contains(e.problem(), "invalid JSON")) << e.what();
}

TEST(MalformedPreset, TruncatedJsonEndingWithANewlineBlamesItsLastLine) {
  // BUG (minor; fabric/json_source.cpp, lineAtOffset in JsonSource::parse): at end of input the
  // offset is past the final newline, so the error names line 17 of a 16-line file. It should
  // name the last line there is. (Also fails for the slicing bug above.)
  TempDir dir;
  const std::string full = kValidPreset;
  const std::string cut = "\"links_per_gpu\": 4,\n";
  const std::string text = full.substr(0, full.find(cut) + cut.size());
  const InputError e = loadError(dir.write("cut.json", text));
  EXPECT_EQ(e.line(), 16);
}

TEST(MalformedPreset, EmptyFileIsRejected) {
  TempDir dir;
  const std::string path = dir.write("empty.json", "");
  const InputError e = loadError(path);
  EXPECT_EQ(e.file(), path);
  EXPECT_EQ(e.line(), 1);
}

TEST(MalformedPreset, RootThatIsNotAnObjectIsRejected) {
  TempDir dir;
  const std::string path = dir.write("list.json", "[\n  1\n]\n");
  const InputError e = loadError(path);
  EXPECT_EQ(e.line(), 1);
  EXPECT_TRUE(contains(e.problem(), "expected an object")) << e.what();
}

TEST(MalformedPreset, MissingFileIsAnInputError) {
  TempDir dir;
  const std::string path = dir.path() + "/absent.json";
  const InputError e = loadError(path);
  EXPECT_EQ(e.file(), path);
  EXPECT_TRUE(contains(e.problem(), "cannot read file")) << e.what();
}

// Issue 19, item 13: nesting is bounded (a deeply nested preset took gigabytes).
TEST(MalformedPreset, DeepNestingIsRejectedAtItsLine) {
  TempDir dir;
  const std::string deep = "  \"notes\": " + std::string(1000, '[') + std::string(1000, ']') + ",\n";
  const std::string text = replaced(kValidPreset, "  \"gpu_count\": 2,\n", "  \"gpu_count\": 2,\n" + deep);
  const std::string path = dir.write("deep.json", text);
  const InputError e = loadError(path);
  EXPECT_EQ(e.file(), path);
  EXPECT_EQ(e.line(), lineContaining(text, "\"notes\""));
  EXPECT_TRUE(contains(e.problem(), "nested deeper than")) << e.what();
}

// Issue 19, item 12's sibling: a GPU file that is a directory, or a device that reads for ever,
// is refused at the preset's line, never read without bound.
TEST(PresetFromPath, GpuFileThatIsADirectoryOrADeviceIsRefused) {
  TempDir dir;
  dir.mkdir("gpu.json");
  for (const char* gpu : {"gpu.json", "/dev/zero"}) {
    SCOPED_TRACE(gpu);
    const std::string text = replaced(kValidPreset, "\"h100-sxm5-80gb\"", std::string("\"") + gpu + "\"");
    const std::string path = dir.write("node.json", text);
    const InputError e = loadError(path);
    EXPECT_EQ(e.file(), path);
    EXPECT_EQ(e.line(), lineContaining(text, "\"gpu\":"));
    EXPECT_TRUE(contains(e.problem(), std::string(gpu) == "/dev/zero" ? "is not a regular file" : "is a directory")) << e.what();
  }
}

// Issue 19, item 16: attributes the driver answers as an int, and launch limits of 0 or less,
// were accepted (2^64 - 1 read back as -1). Each is refused at its line.
TEST(PresetFromPath, AttributeOutOfRangeIsBlamedOnItsLine) {
  struct Case {
    const char* attribute;
    const char* range;
  };
  for (const auto& [attribute, range] : {Case{"\"WARP_SIZE\": 18446744073709551615", "outside [1, 2147483647]"},
                                         Case{"\"MAX_THREADS_PER_BLOCK\": 0", "outside [1, 2147483647]"},
                                         Case{"\"MAX_THREADS_PER_BLOCK\": -5", "outside [1, 2147483647]"},
                                         Case{"\"L2_CACHE_SIZE\": 2147483648", "outside [0, 2147483647]"},
                                         Case{"\"NUMA_ID\": -2", "outside [-1, 2147483647]"}}) {
    SCOPED_TRACE(attribute);
    TempDir dir;
    const std::string gpu = replaced(kValidGpu, "\"WARP_SIZE\": 32", attribute);
    const std::string gpuPath = dir.write("gpu.json", gpu);
    const std::string path = dir.write("node.json", replaced(kValidPreset, "\"h100-sxm5-80gb\"", "\"gpu.json\""));
    const InputError e = loadError(path);
    EXPECT_EQ(e.file(), gpuPath);
    EXPECT_EQ(e.line(), lineContaining(gpu, attribute));
    EXPECT_TRUE(contains(e.problem(), range)) << e.what();
  }
}

TEST(PresetFromPath, NumaIdOfMinusOneIsAccepted) {
  TempDir dir;
  dir.write("gpu.json", replaced(kValidGpu, "\"WARP_SIZE\": 32", "\"WARP_SIZE\": 32,\n    \"NUMA_ID\": -1"));
  const std::string path = dir.write("node.json", replaced(kValidPreset, "\"h100-sxm5-80gb\"", "\"gpu.json\""));
  EXPECT_NO_THROW(loadPreset(path));
}

TEST(UnknownPresetName, MessageListsEveryBuiltIn) {
  try {
    loadPreset("no-such-node");
    FAIL() << "loaded an unknown preset";
  } catch (const InputError& e) {
    // There is no file to blame: the name came from MCSIM_TOPOLOGY, --topology or the API, and
    // the caller says which; the message is the problem alone, with no "file:0:".
    EXPECT_EQ(e.file(), "");
    EXPECT_EQ(e.line(), 0);
    EXPECT_EQ(std::string(e.what()), e.problem());
    EXPECT_TRUE(contains(e.problem(), "unknown built-in preset 'no-such-node'")) << e.what();
    for (const std::string& name : builtinPresetNames()) {
      EXPECT_TRUE(contains(e.problem(), name)) << name << " missing from: " << e.what();
    }
  }
}

}  // namespace
}  // namespace mcsim::fabric
