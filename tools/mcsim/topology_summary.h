// A preset as a person wants to read it: what the GPUs are, how they are wired, what the fabric
// allows, and where they sit on the host.
#pragma once

#include <string>

#include "fabric/preset.h"

namespace mcsim::tools {

std::string summarizeTopology(const fabric::Preset& preset);

}  // namespace mcsim::tools
