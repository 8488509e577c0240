// The settings `mcsim` itself reads (settings/settings.def): MCSIM_LIB_DIR, MCSIM_NODE,
// MCSIM_WORKLOAD_DIR, MCSIM_REAL_MULTICAST.
#pragma once

#include "settings/settings.h"

namespace mcsim::tools {

// Read from the environment once, on the first call (main makes it when the command line is
// parsed), each unknown MCSIM_* name and refused value reported on stderr on one line.
const settings::Settings& toolSettings();

}  // namespace mcsim::tools
