// Constants of the trace format (docs/traces.md).
#pragma once

#include <string>

namespace mcsim::trace {

// Bumped whenever a reader of the previous version would misread a trace of the new one.
constexpr int kTraceVersion = 1;

// The settings of the run that the header keeps, so that a replay in mcsim reproduces the node,
// the seed, the emulated driver version, the fault plan's rank filter, the tray it ran on and the
// GPUs it saw (CUDA_VISIBLE_DEVICES, which the driver reads itself).
constexpr const char* kRecordedEnvironment[] = {
    "MCSIM_TOPOLOGY", "MCSIM_SEED",       "MCSIM_DRIVER_VERSION", "MCSIM_RANK",
    "MCSIM_FABRIC_MANAGER", "MCSIM_HANG_GRACE_S", "MCSIM_HANG_RESULT", "MCSIM_ON_HANG", "MCSIM_TRAY",
    "CUDA_VISIBLE_DEVICES",
};

// Whether a trace's header may set `name`: a replay restores these settings and nothing else.
inline bool isRecordedSetting(const std::string& name) {
  for (const char* r : kRecordedEnvironment) {
    if (name == r) return true;
  }
  return false;
}

}  // namespace mcsim::trace
