// PTX text -> Module (ptx/ir.h). A hand-written recursive-descent parser (docs/dependencies.md
// says why) for PTX as nvcc emits it; docs/ptx.md lists what it accepts. Anything it does not
// implement is refused here, at load, never at run time: an error names the module (file or
// image name), the line and the instruction or directive.
#pragma once

#include <string>

#include "ptx/ir.h"

namespace mcsim::ptx {

// Parses `text`. `name` is the file or image name errors begin with ("vecadd.ptx:12: ...").
// On failure returns false, sets `error` and leaves `out` unspecified. `lenient`: a function the
// parser refuses (an instruction not implemented yet, say) is left out and recorded in
// Module::refused with the reason, and the rest of the module is parsed, so that the kernels
// of a module that the executor can run do run (the driver's choice: a program's module often
// holds kernels of several kinds); errors outside functions still fail the parse.
bool parseModule(const std::string& text, const std::string& name, Module* out, std::string* error,
                 bool lenient = false);

}  // namespace mcsim::ptx
