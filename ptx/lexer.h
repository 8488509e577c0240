// PTX text as tokens. PTX's lexical rules (PTX ISA, "Syntax"): identifiers may start with a
// letter, `_`, `$` or `%` (registers); `.name` is a directive or an instruction modifier; integer
// constants are decimal, hex (0x), octal (leading 0) or binary (0b), optionally with a U suffix;
// floating constants are `0fXXXXXXXX` (binary32 bits), `0dXXXXXXXXXXXXXXXX` (binary64 bits) or
// decimal with a point or exponent (binary64); comments are `//` and `/* */`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mcsim::ptx {

struct Token {
  enum class Kind : uint8_t { kEnd, kIdent, kDirective, kInt, kF32, kF64, kString, kPunct };
  Kind kind = Kind::kEnd;
  std::string text;    // identifier / directive (with its dot) / string contents / punctuation
  uint64_t bits = 0;   // kInt: the value; kF32 / kF64: the IEEE bits
  uint32_t line = 0;
};

// Tokens of `text`, ending with one kEnd. On a lexical error returns false and sets `error`
// ("line N: ...").
bool tokenize(const std::string& text, std::vector<Token>* out, std::string* error);

}  // namespace mcsim::ptx
