// `mcsim run`: starts a program against mcsim's libcuda.so.1 by putting the library's directory
// first on LD_LIBRARY_PATH, passes the run's settings through the environment the driver reads,
// and replaces itself with the program, so that the exit status and signals are the program's.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "commands.h"
#include "driver_library.h"
#include "fabric/fault_plan.h"
#include "fabric/json_source.h"
#include "fabric/preset.h"
#include "preset_errors.h"

namespace mcsim::tools {

namespace {

struct RunOptions {
  std::string topology;
  std::string faults;
  std::string record;
  uint64_t seed = 0;
  int driverVersion = 0;
  std::vector<std::string> command;
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

void setEnv(const char* name, const std::string& value) { ::setenv(name, value.c_str(), 1); }

int run(const RunOptions& o) {
  // Refuse a preset the driver would refuse, before the program starts, so that the user sees
  // the loader's message rather than the program's report of CUDA_ERROR_NO_DEVICE.
  if (!o.topology.empty()) {
    try {
      fabric::loadPreset(o.topology);
    } catch (const fabric::InputError& e) {
      reportPresetError("mcsim run", e);
      return kExitBadInput;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "mcsim run: %s: %s\n", o.topology.c_str(), e.what());
      return kExitBadInput;
    }
    setEnv("MCSIM_TOPOLOGY", o.topology);
  }
  if (!o.faults.empty()) {
    // Refuse a plan the driver would refuse (cuInit would fail with CUDA_ERROR_NO_DEVICE).
    std::ifstream in(o.faults);
    if (!in) {
      std::fprintf(stderr, "mcsim run: %s: cannot read the fault plan\n", o.faults.c_str());
      return kExitBadInput;
    }
    std::stringstream text;
    text << in.rdbuf();
    try {
      fabric::parseFaultPlan(text.str(), o.faults);
    } catch (const fabric::InputError& e) {
      std::fprintf(stderr, "mcsim run: %s\n", e.what());
      return kExitBadInput;
    }
    std::error_code ec;
    const std::filesystem::path absolute = std::filesystem::absolute(o.faults, ec);
    setEnv("MCSIM_FAULTS_FILE", ec ? o.faults : absolute.string());
  }
  if (!o.record.empty()) {
    // The driver records every call to this file (docs/traces.md); %p in it becomes the pid.
    std::error_code ec;
    const std::filesystem::path absolute = std::filesystem::absolute(o.record, ec);
    setEnv("MCSIM_RECORD", ec ? o.record : absolute.string());
  }
  if (o.seedOption->count() > 0) setEnv("MCSIM_SEED", std::to_string(o.seed));
  if (o.versionOption->count() > 0) setEnv("MCSIM_DRIVER_VERSION", std::to_string(o.driverVersion));

  const DriverLibraryDir lib = findDriverLibraryDir();
  if (lib.dir.empty()) {
    std::fprintf(stderr, "mcsim run: %s\n", lib.problem.c_str());
    return kExitFailure;
  }
  const char* old = std::getenv("LD_LIBRARY_PATH");
  setEnv("LD_LIBRARY_PATH", (old != nullptr && *old != '\0') ? lib.dir + ":" + old : lib.dir);

  std::vector<char*> argv;
  for (const std::string& a : o.command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  ::execvp(argv[0], argv.data());
  std::fprintf(stderr, "mcsim run: cannot start '%s': %s\n", argv[0], std::strerror(errno));
  return kExitCannotStart;
}

}  // namespace

Command addRunCommand(CLI::App& parent) {
  auto o = std::make_shared<RunOptions>();
  CLI::App* cmd = parent.add_subcommand(
      "run", "Run a program against mcsim's libcuda.so.1: mcsim run [OPTIONS] -- PROGRAM [ARGS...]");
  cmd->add_option("--topology", o->topology, "Built-in preset name or preset file (MCSIM_TOPOLOGY)");
  cmd->add_option("--faults", o->faults, "Fault plan file to install at cuInit (MCSIM_FAULTS_FILE; docs/faults.md)");
  cmd->add_option("--record", o->record, "Record every driver call to this trace (MCSIM_RECORD; docs/traces.md)");
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
