#include "ptx/ir.h"

namespace mcsim::ptx {

unsigned typeBits(Type t) {
  switch (t) {
    case Type::kNone: return 0;
    case Type::kPred: return 1;
    case Type::kB8: case Type::kU8: case Type::kS8: return 8;
    case Type::kB16: case Type::kU16: case Type::kS16: case Type::kF16: case Type::kBF16: return 16;
    case Type::kB32: case Type::kU32: case Type::kS32: case Type::kF32: case Type::kF16x2: case Type::kBF16x2: return 32;
    case Type::kB64: case Type::kU64: case Type::kS64: case Type::kF64: return 64;
  }
  return 0;
}

bool isSigned(Type t) { return t == Type::kS8 || t == Type::kS16 || t == Type::kS32 || t == Type::kS64; }

bool isFloat(Type t) {
  return t == Type::kF16 || t == Type::kF16x2 || t == Type::kBF16 || t == Type::kBF16x2 || t == Type::kF32 || t == Type::kF64;
}

const char* typeName(Type t) {
  static const char* const names[] = {"none", "pred", "b8", "b16", "b32", "b64", "u8", "u16", "u32", "u64", "s8", "s16",
                                      "s32", "s64", "f16", "f16x2", "bf16", "bf16x2", "f32", "f64"};
  return names[static_cast<unsigned>(t)];
}

const char* spaceName(Space s) {
  static const char* const names[] = {"generic", "global", "shared", "local", "param", "const"};
  return names[static_cast<unsigned>(s)];
}

const char* opName(Op op) {
  static const char* const names[] = {
      "add", "sub", "mul", "mad", "div", "rem", "min", "max", "abs", "neg",
      "and", "or", "xor", "not", "cnot", "shl", "shr", "popc", "clz", "brev", "bfe", "bfi", "prmt", "bfind", "lop3", "shf",
      "setp", "selp", "slct", "mov", "cvt", "cvta", "ld", "st",
      "fma", "sqrt", "rcp", "rsqrt", "ex2", "lg2", "sin", "cos", "testp", "copysign",
      "atom", "red", "bar", "shfl", "vote", "activemask", "membar",
      "bra", "brx", "ret", "exit", "trap", "call", "multimem",
      "redux", "match", "elect", "mbarrier", "cp.async", "nanosleep", "addc", "subc", "madc",
      "mul24", "mad24", "sad", "dp4a", "dp2a", "set", "isspacep"};
  return names[static_cast<unsigned>(op)];
}

const Function* Module::find(const std::string& fn) const {
  for (const Function& f : functions)
    if (f.name == fn) return &f;
  return nullptr;
}

const std::string* Module::functionAt(uint64_t address) const {
  if (address < kFunctionWindow || (address - kFunctionWindow) % kFunctionStride != 0) return nullptr;
  const uint64_t n = (address - kFunctionWindow) / kFunctionStride;
  return n < functionNames.size() ? &functionNames[n] : nullptr;
}

std::string Module::sourceOf(const Instruction& in) const {
  if (in.srcFile == 0 || in.srcLine == 0) return "";
  for (const auto& [n, file] : files) {
    if (n != in.srcFile) continue;
    const size_t slash = file.find_last_of('/');
    return (slash == std::string::npos ? file : file.substr(slash + 1)) + ":" + std::to_string(in.srcLine);
  }
  return "";
}

}  // namespace mcsim::ptx
