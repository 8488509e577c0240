// PTX text -> Module (ptx/ir.h). A hand-written recursive-descent parser (docs/dependencies.md
// says why) for PTX as nvcc emits it; docs/ptx.md lists what it accepts. Anything it does not
// implement is refused here, at load, never at run time: an error names the module (file or
// image name), the line and the instruction or directive.
#pragma once

#include <string>
#include <vector>

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

// A survey of what the parser refuses in `text`: a lenient parse that goes on past every refusal
// (an instruction, a directive, a function header, a module-level declaration), skipping to the
// end of the statement, and records each in `refusals` ("name:line: why", in text order); a
// function with any refusal is left out of `out` and listed in Module::refused with its first.
// For a whole module's list of what is missing (docs/nccl.md: NCCL's PTX); never used to run code.
bool surveyModule(const std::string& text, const std::string& name, Module* out, std::string* error,
                  std::vector<std::string>* refusals);

// Links device function `name` into `kernel`, a linked kernel of `module` (Function::callees), when
// an indirect call first reaches it (docs/ptx.md, "Linking a function at its first call"): `extra`
// is a module parsed from a link that defines `name` and what it calls, and declares the
// same functions (the same addresses) and variables (the same places) as `module`. `name` and
// the functions it calls directly that `kernel` lacks are appended after its code, registers
// and local memory (what is there stays where it is), and those whose address the module takes
// join Function::indirect. False with `why` when `extra` does not fit `module` or lacks a function.
bool extendKernel(const Module& module, Function* kernel, const Module& extra, const std::string& name, std::string* why);

}  // namespace mcsim::ptx
