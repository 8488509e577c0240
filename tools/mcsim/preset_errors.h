// How the subcommands tell the user about a preset the loader refuses.
#pragma once

#include "fabric/json_source.h"

namespace mcsim::tools {

// "file:line: problem" when the problem is in a file; just the problem when it is in the name
// given on the command line (the loader then names MCSIM_TOPOLOGY, which the user never set).
void reportPresetError(const char* command, const fabric::InputError& e);

}  // namespace mcsim::tools
