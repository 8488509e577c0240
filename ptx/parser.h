// PTX text -> Module (ptx/ir.h). A hand-written recursive-descent parser (docs/dependencies.md
// says why) for PTX as nvcc emits it; docs/ptx.md lists what it accepts. Anything it does not
// implement is refused here, at load, never at run time: an error names the module (file or
// image name), the line and the instruction or directive.
#pragma once

#include <string>

#include "ptx/ir.h"

namespace mcsim::ptx {

// Parses `text`. `name` is the file or image name errors begin with ("vecadd.ptx:12: ...").
// On failure returns false, sets `error` and leaves `out` unspecified.
bool parseModule(const std::string& text, const std::string& name, Module* out, std::string* error);

}  // namespace mcsim::ptx
