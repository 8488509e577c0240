// The preset files compiled into the library (generated from fabric/presets/ by CMake).
#pragma once

#include <string>
#include <vector>

namespace mcsim::fabric {

// kind is "nodes" or "gpus"; nullptr when there is no such built-in file.
const char* builtinPresetText(const std::string& kind, const std::string& name);
std::vector<std::string> builtinNames(const std::string& kind);

}  // namespace mcsim::fabric
