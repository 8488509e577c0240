// An instruction's opcode and modifiers (as the parser read them) -> the decoded fields of
// ptx/ir.h, and a check of its operands' number and kinds. Separate from the parser so that the
// grammar and the instruction set each stay in one place.
#pragma once

#include <string>
#include <vector>

#include "ptx/ir.h"

namespace mcsim::ptx {

// Sets in->op and the modifier fields from `opcode` and `mods` (each with its leading dot). On an
// unknown opcode or a modifier not implemented, returns false with `error` naming it.
bool decodeOpcode(const std::string& opcode, const std::vector<std::string>& mods, Instruction* in, std::string* error);

// Checks that in->ops fit in->op (count and kind), after the parser has filled them.
bool checkOperands(const Instruction& in, std::string* error);

}  // namespace mcsim::ptx
