// `mcsim run`: starts a program against mcsim's libcuda.so.1 with the run's settings
// (exec_with_driver.h).
#include <CLI/CLI.hpp>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "exec_with_driver.h"

namespace mcsim::tools {

namespace {

struct RunOptions {
  DriverSettings driver;
  uint64_t seed = 0;
  int driverVersion = 0;
  int tray = 0;
  std::vector<std::string> command;
  CLI::Option* trayOption = nullptr;
  CLI::Option* seedOption = nullptr;
  CLI::Option* versionOption = nullptr;
};

// The driver takes versions written as 1000 * major + 10 * minor (12080 is 12.8).
std::string checkDriverVersion(const std::string& text) {
  char* end = nullptr;
  const long v = std::strtol(text.c_str(), &end, 10);
  if (*end != '\0' || v < 11000 || v > 99990 || v % 10 != 0) {
    return "'" + text + "' is not a driver version such as 12080 (1000 * major + 10 * minor)";
  }
  return "";
}

int run(RunOptions& o) {
  if (o.seedOption->count() > 0) o.driver.seed = o.seed;
  if (o.versionOption->count() > 0) o.driver.driverVersion = o.driverVersion;
  if (o.trayOption->count() > 0) o.driver.tray = o.tray;
  return execWithDriver("mcsim run", o.driver, o.command);
}

}  // namespace

Command addRunCommand(CLI::App& parent) {
  auto o = std::make_shared<RunOptions>();
  CLI::App* cmd = parent.add_subcommand(
      "run", "Run a program against mcsim's libcuda.so.1: mcsim run [OPTIONS] -- PROGRAM [ARGS...]");
  cmd->add_option("--topology", o->driver.topology, "Built-in preset name or preset file (MCSIM_TOPOLOGY)");
  cmd->add_option("--faults", o->driver.faults, "Fault plan file to install at cuInit (MCSIM_FAULTS_FILE; docs/faults.md)");
  cmd->add_option("--record", o->driver.record, "Record every driver call to this trace (MCSIM_RECORD; docs/traces.md)");
  cmd->add_flag("--timing-only", o->driver.timingOnly, "Time everything but move no data (MCSIM_TIMING_ONLY=1)");
  cmd->add_option("--timeline", o->driver.timeline,
                  "Write the simulated activity, NVTX ranges included, to this Perfetto / Chrome trace-event JSON file "
                  "at exit (MCSIM_TIMELINE; docs/timeline.md)");
  cmd->add_flag("--timeline-summary", o->driver.timelineSummary,
                "At exit, print simulated time per kernel, per copy kind, per link and switch (MCSIM_TIMELINE_SUMMARY=1)");
  o->trayOption = cmd->add_option("--tray", o->tray,
                                  "Run the program on this compute tray of the rack: it sees the tray's GPUs as devices "
                                  "0-3 (MCSIM_TRAY; sets NCCL_HOSTID to the tray's unless set; docs/multiprocess.md)")
                      ->check(CLI::Range(0, 1023));
  o->seedOption = cmd->add_option("--seed", o->seed, "Seed of every random choice (MCSIM_SEED)");
  o->versionOption = cmd->add_option("--driver-version", o->driverVersion,
                                     "Driver version to emulate, e.g. 12080 (MCSIM_DRIVER_VERSION)")
                         ->check(checkDriverVersion, "VERSION");
  cmd->add_option("program", o->command, "The program and its arguments")->required();
  // Everything from the program's name on is the program's, options included.
  cmd->positionals_at_end();
  return {cmd, [o] { return run(*o); }};
}

}  // namespace mcsim::tools
