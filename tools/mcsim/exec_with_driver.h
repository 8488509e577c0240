// Starting a program against mcsim's libcuda.so.1, for the commands that do (`mcsim run`,
// `mcsim bench`): the run's settings go to the environment the driver reads, the library's
// directory goes first on LD_LIBRARY_PATH, and this process becomes the program, so that the exit
// status and signals are the program's.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mcsim::tools {

struct DriverSettings {
  std::string topology;                // MCSIM_TOPOLOGY (preset name or file); empty: the driver's default
  std::string faults;                  // MCSIM_FAULTS_FILE
  std::string record;                  // MCSIM_RECORD
  std::optional<uint64_t> seed;        // MCSIM_SEED
  std::optional<int> driverVersion;    // MCSIM_DRIVER_VERSION
  bool timingOnly = false;             // MCSIM_TIMING_ONLY=1: time everything, move no data
  std::string timeline;                // MCSIM_TIMELINE
  bool timelineSummary = false;        // MCSIM_TIMELINE_SUMMARY=1
  std::optional<int> tray;             // MCSIM_TRAY (and NCCL_HOSTID, unless set)
};

// Refuses a preset or fault plan the driver would refuse (reported as `who`: "mcsim run"), so
// that the user sees the loader's message rather than the program's report of
// CUDA_ERROR_NO_DEVICE; then exports the settings and replaces this process with `command`
// (command[0] is found on PATH when it has no slash). When a timeline is kept (by `settings` or the
// environment), NVTX_INJECTION64_PATH names mcsim's NVTX injection library unless it names one
// already, so that the program's NVTX ranges are on it. Returns only when it fails: the exit status.
int execWithDriver(const char* who, const DriverSettings& settings, const std::vector<std::string>& command);

}  // namespace mcsim::tools
