// `mcsim topo [PRESET]`: what a preset describes, checked by the same loader the driver uses, so
// that a preset that reads well here is one the driver accepts.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <memory>
#include <string>

#include "commands.h"
#include "fabric/preset.h"
#include "preset_errors.h"
#include "topology_summary.h"

namespace mcsim::tools {

namespace {

int showTopology(const std::string& which) {
  const std::string name = which.empty() ? fabric::defaultPresetName() : which;
  try {
    fmt::print("{}", summarizeTopology(fabric::loadPreset(name)));
  } catch (const fabric::InputError& e) {
    reportPresetError("mcsim topo", e);
    return kExitBadInput;
  } catch (const std::exception& e) {
    // The loader should say everything as an InputError; whatever slips past is still about
    // the user's file, and no reason to die on std::terminate.
    std::fprintf(stderr, "mcsim topo: %s: %s\n", name.c_str(), e.what());
    return kExitBadInput;
  }
  return kExitOk;
}

}  // namespace

Command addTopoCommand(CLI::App& parent) {
  auto which = std::make_shared<std::string>();
  CLI::App* cmd = parent.add_subcommand("topo", "Describe a topology preset (a built-in name or a file)");
  cmd->add_option("preset", *which, fmt::format("Preset name or path (default: {})", fabric::defaultPresetName()));
  return {cmd, [which] { return showTopology(*which); }};
}

}  // namespace mcsim::tools
