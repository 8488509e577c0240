// `mcsim presets`: the built-in topology presets, one per line.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <vector>

#include "commands.h"
#include "fabric/preset.h"

namespace mcsim::tools {

namespace {

int listPresets() {
  std::vector<fabric::Preset> presets;
  size_t nameWidth = 4, gpuWidth = 3;
  try {
    for (const std::string& name : fabric::builtinPresetNames()) {
      presets.push_back(fabric::loadPreset(name));
      nameWidth = std::max(nameWidth, presets.back().name.size());
      gpuWidth = std::max(gpuWidth, presets.back().gpu.name.size());
    }
  } catch (const fabric::InputError& e) {
    // A built-in preset that does not load is a bug in mcsim itself, not a user error.
    std::fprintf(stderr, "mcsim presets: %s\n", e.what());
    return kExitFailure;
  }
  const char* const kDefault = fabric::defaultPresetName();
  fmt::print("{:<{}}  {:>4}  {:<{}}  {}\n", "name", nameWidth, "GPUs", "GPU", gpuWidth, "description");
  for (const fabric::Preset& p : presets) {
    fmt::print("{:<{}}  {:>4}  {:<{}}  {}{}\n", p.name, nameWidth, p.gpuCount, p.gpu.name, gpuWidth,
               p.description, p.name == kDefault ? " [default]" : "");
  }
  return kExitOk;
}

}  // namespace

Command addPresetsCommand(CLI::App& parent) {
  CLI::App* cmd = parent.add_subcommand("presets", "List the built-in topology presets");
  return {cmd, [] { return listPresets(); }};
}

}  // namespace mcsim::tools
