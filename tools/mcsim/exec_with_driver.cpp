#include "exec_with_driver.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <vector>

#include "commands.h"
#include "driver/cuda_names.h"
#include "driver_library.h"
#include "fabric/fault_plan.h"
#include "fabric/json_source.h"
#include "fabric/preset.h"
#include "fabric/tray_node.h"
#include "preset_errors.h"
#include "tool_settings.h"

namespace mcsim::tools {

namespace {

void setEnv(const char* name, const std::string& value) { ::setenv(name, value.c_str(), 1); }

// An absolute path, so that the driver finds the file whatever directory the program moves to.
std::string absolutePath(const std::string& path) {
  std::error_code ec;
  const std::filesystem::path absolute = std::filesystem::absolute(path, ec);
  return ec ? path : absolute.string();
}

}  // namespace

int execWithDriver(const char* who, const DriverSettings& s, const std::vector<std::string>& command) {
  if (!s.topology.empty()) {
    try {
      fabric::loadPreset(s.topology);
    } catch (const fabric::InputError& e) {
      reportPresetError(who, e);
      return kExitBadInput;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%s: %s: %s\n", who, s.topology.c_str(), e.what());
      return kExitBadInput;
    }
    setEnv("MCSIM_TOPOLOGY", s.topology);
  }
  if (!s.faults.empty()) {
    // Refuse a plan the driver would refuse (cuInit would fail with CUDA_ERROR_NO_DEVICE).
    try {
      std::vector<fabric::FaultRule> rules = fabric::parseFaultPlan(fabric::readFaultPlanFile(s.faults), s.faults);
      driver::resolveFaultPlanNames(&rules);
      fabric::checkFaultPlanFor(rules, fabric::loadPreset(s.topology.empty() ? fabric::defaultPresetName() : s.topology));
    } catch (const fabric::InputError& e) {
      std::fprintf(stderr, "%s: %s\n", who, e.what());
      return kExitBadInput;
    }
    setEnv("MCSIM_FAULTS_FILE", absolutePath(s.faults));
  }
  if (s.tray) {
    // A tray the preset lacks is refused here, with the driver's words; a shared node's preset is
    // the node's, which cuInit checks.
    if (toolSettings().node.empty()) {
      std::string error;
      fabric::TraySpan span;
      if (!fabric::traySpan(fabric::loadPreset(s.topology.empty() ? fabric::defaultPresetName() : s.topology), *s.tray,
                            &span, &error)) {
        std::fprintf(stderr, "%s: %s\n", who, error.c_str());
        return kExitBadInput;
      }
    }
    setEnv("MCSIM_TRAY", std::to_string(*s.tray));
    // Each tray is a host of its own: NCCL tells hosts apart by NCCL_HOSTID when it is set
    // (docs/nccl.md), which the processes of one tray share and those of another tray do not.
    ::setenv("NCCL_HOSTID", ("mcsim-tray-" + std::to_string(*s.tray)).c_str(), 0);  // 0: a value set stays
  }
  // The driver records every call to this file (docs/traces.md); %p in it becomes the pid.
  if (!s.record.empty()) setEnv("MCSIM_RECORD", absolutePath(s.record));
  if (s.seed) setEnv("MCSIM_SEED", std::to_string(*s.seed));
  if (s.driverVersion) setEnv("MCSIM_DRIVER_VERSION", std::to_string(*s.driverVersion));
  if (s.timingOnly) setEnv("MCSIM_TIMING_ONLY", "1");
  if (!s.timeline.empty()) setEnv("MCSIM_TIMELINE", absolutePath(s.timeline));
  if (s.timelineSummary) setEnv("MCSIM_TIMELINE_SUMMARY", "1");

  const DriverLibraryDir lib = findDriverLibraryDir();
  if (lib.dir.empty()) {
    std::fprintf(stderr, "%s: %s\n", who, lib.problem.c_str());
    return kExitFailure;
  }
  const char* old = std::getenv("LD_LIBRARY_PATH");
  setEnv("LD_LIBRARY_PATH", (old != nullptr && *old != '\0') ? lib.dir + ":" + old : lib.dir);
  // The program's NVTX ranges go on the timeline through mcsim's injection library
  // (docs/timeline.md); a tool the user named keeps its place.
  const settings::Settings& env = toolSettings();
  const bool keptTimeline = !s.timeline.empty() || s.timelineSummary || !env.timeline.empty() || env.timelineSummary;
  if (keptTimeline && !env.isSet("NVTX_INJECTION64_PATH")) {
    setEnv("NVTX_INJECTION64_PATH", lib.dir + "/libmcsim-nvtx.so");
  }

  std::vector<char*> argv;
  for (const std::string& a : command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  ::execvp(argv[0], argv.data());
  std::fprintf(stderr, "%s: cannot start '%s': %s\n", who, argv[0], std::strerror(errno));
  return kExitCannotStart;
}

}  // namespace mcsim::tools
