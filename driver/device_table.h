// Device attributes: the cuda.h attribute names, and the per-device values a preset gives.
#pragma once

#include <cuda.h>

#include <string>
#include <vector>

#include "fabric/preset.h"

namespace mcsim::driver {

// The cuda.h name of an attribute value without the prefix; nullptr for a value with no name.
const char* deviceAttributeName(int attribute);

// Values for every attribute of every device: the GPU description's values, then what the node
// determines per device (PCI location, host NUMA node, multicast support). Throws
// fabric::InputError naming the preset file and line for an attribute name cuda.h lacks.
std::vector<std::vector<int>> resolveDeviceAttributes(const fabric::Preset& preset);

}  // namespace mcsim::driver
