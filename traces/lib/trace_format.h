// Constants of the trace format (docs/traces.md).
#pragma once

namespace mcsim::trace {

// Bumped whenever a reader of the previous version would misread a trace of the new one.
constexpr int kTraceVersion = 1;

// The settings of the run that the header keeps, so that a replay in mcsim reproduces the node,
// the seed, the emulated driver version and the fault plan's rank filter.
constexpr const char* kRecordedEnvironment[] = {
    "MCSIM_TOPOLOGY", "MCSIM_SEED",       "MCSIM_DRIVER_VERSION", "MCSIM_RANK",
    "MCSIM_FABRIC_MANAGER", "MCSIM_HANG_GRACE_S", "MCSIM_HANG_RESULT", "MCSIM_ON_HANG",
};

}  // namespace mcsim::trace
