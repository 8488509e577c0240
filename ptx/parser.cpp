#include "ptx/parser.h"

#include <cmath>
#include <algorithm>
#include <cstring>
#include <map>
#include <set>

#include "ptx/decode.h"
#include "ptx/lexer.h"

namespace mcsim::ptx {

namespace {

using TK = Token::Kind;

struct Symbol {
  Space space;
  uint64_t address;  // within the space (for .global: within the module's global storage)
  bool isExtern;     // `.extern .shared`: placed after the function's static shared memory
  bool frame = false;  // a device function's parameter or a body's `.param`: in local memory
  uint32_t size = 0;   // bytes (frame parameters: what a call copies)
};

// A .branchtargets list's labels, resolved at the function's end into Function::targetLists.
struct TargetRef {
  uint32_t list = 0;
  uint32_t line = 0;
  std::vector<std::string> labels;
};

struct LabelRef {
  size_t instr;
  unsigned operand;
  std::string name;
  uint32_t line;
};

struct ExternRef {
  size_t instr;
  unsigned operand;
};

uint64_t alignUp(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

Builtin builtinNamed(const std::string& n) {
  if (n == "vprintf") return Builtin::kVprintf;
  if (n == "__assertfail") return Builtin::kAssertFail;
  if (n == "malloc") return Builtin::kMalloc;
  if (n == "free") return Builtin::kFree;
  if (n == "__cuda_syscall_aligned_malloc") return Builtin::kAlignedMalloc;
  return Builtin::kNone;
}

// Places device function `g` as callee `c` after what a kernel already holds: its code at
// `codeEnd`, its registers at `regEnd`, its local memory (parameters included) at `localEnd`
// aligned to 16; each end moves past it.
void placeAfter(const Function& g, Callee* c, uint32_t* codeEnd, uint32_t* regEnd, uint32_t* localEnd) {
  c->entryPc = *codeEnd;
  c->regBase = *regEnd;
  c->regCount = static_cast<uint32_t>(g.regTypes.size());
  c->localBase = static_cast<uint32_t>(alignUp(*localEnd, 16));
  c->localBytes = g.localBytes;
  for (const Param& p : g.params) c->params.emplace_back(c->localBase + p.offset, p.size);
  for (const Param& p : g.returns) c->returns.emplace_back(c->localBase + p.offset, p.size);
  *codeEnd += static_cast<uint32_t>(g.code.size());
  *regEnd += c->regCount;
  *localEnd = c->localBase + c->localBytes;
}

// Appends device function `f`'s code to kernel `out`, placed at `base` (Callee: code, registers
// and local memory; whether it is recursive must be known), relocated (registers, labels, branch
// target lists, local addresses, a recursive function's in its frame), and its call sites, whose
// direct callees `index` names (name -> index in out->callees).
void placeCode(Function* out, const Function& f, const Callee& base, const std::map<std::string, uint32_t>& index) {
  const uint32_t siteBase = static_cast<uint32_t>(out->calls.size());
  for (const CallSite& cs : f.calls) {
    CallSite site = cs;
    for (auto& a : site.args) a.first += base.localBase;
    for (auto& r : site.rets) r.first += base.localBase;
    if (!cs.indirect) site.callee = index.at(cs.name);
    site.inFrame = base.recursive;
    out->calls.push_back(site);
  }
  const uint32_t listBase = static_cast<uint32_t>(out->targetLists.size());
  for (std::vector<uint32_t> list : f.targetLists) {
    for (uint32_t& pc : list) pc += base.entryPc;
    out->targetLists.push_back(std::move(list));
  }
  std::vector<Instruction> code = f.code;
  auto reloc = [&](uint32_t& r) {
    if (r != kNoReg) r += base.regBase;
  };
  for (Instruction& in : code) {
    reloc(in.guard);
    if (in.op == Op::kCall) in.ops[0].target += siteBase;
    for (unsigned k = 0; k < in.nops; ++k) {
      Operand& o = in.ops[k];
      reloc(o.reg);
      for (unsigned e = 0; e < o.vecCount; ++e) reloc(o.vec[e].reg);
      if (o.kind == Operand::Kind::kLabel) o.target += base.entryPc;
      if (o.kind == Operand::Kind::kTargets) o.target += listBase;
    }
  }
  for (const auto& [instr, operand] : f.localRefs) {
    code[instr].ops[operand].imm += base.localBase;
    code[instr].ops[operand].frame = base.recursive;
  }
  out->code.insert(out->code.end(), code.begin(), code.end());
  out->regTypes.insert(out->regTypes.end(), f.regTypes.begin(), f.regTypes.end());
  for (const std::string& n : f.regNames) out->regNames.push_back(f.name + ":" + n);
}

bool specialByName(const std::string& n, Special* out, bool* vector) {
  static const std::map<std::string, std::pair<Special, bool>> m = {
      {"%tid", {Special::kTid, true}},         {"%ntid", {Special::kNtid, true}},
      {"%ctaid", {Special::kCtaid, true}},     {"%nctaid", {Special::kNctaid, true}},
      {"%laneid", {Special::kLaneid, false}},  {"%warpid", {Special::kWarpid, false}},
      {"%nwarpid", {Special::kNwarpid, false}}, {"%smid", {Special::kSmid, false}},
      {"%nsmid", {Special::kNsmid, false}},    {"%gridid", {Special::kGridid, false}},
      {"%lanemask_eq", {Special::kLanemaskEq, false}}, {"%lanemask_lt", {Special::kLanemaskLt, false}},
      {"%lanemask_le", {Special::kLanemaskLe, false}}, {"%lanemask_gt", {Special::kLanemaskGt, false}},
      {"%lanemask_ge", {Special::kLanemaskGe, false}}, {"%clock", {Special::kClock, false}},
      {"%clock64", {Special::kClock64, false}}, {"%globaltimer", {Special::kGlobaltimer, false}},
      {"%dynamic_smem_size", {Special::kDynamicSmemSize, false}},
      {"%total_smem_size", {Special::kTotalSmemSize, false}},
  };
  auto it = m.find(n);
  if (it == m.end()) return false;
  *out = it->second.first;
  *vector = it->second.second;
  return true;
}

class Parser {
 public:
  // survey: every refusal is recorded in `refusals` and parsing goes on past it (implies lenient).
  Parser(std::vector<Token> toks, Module* m, bool lenient, std::vector<std::string>* refusals = nullptr)
      : t_(std::move(toks)), m_(m), lenient_(lenient || refusals != nullptr), refusals_(refusals) {}

  bool run() {
    while (!at(TK::kEnd)) {
      const size_t start = p_;
      if (topLevel()) continue;
      if (!refusals_ || at(TK::kEnd)) return false;
      record();
      if (!statementDone(start)) skipStatement(/*inBody=*/false);
    }
    return linkKernels();
  }

  std::string error;
  uint32_t errorLine = 0;

 private:
  // ---- token helpers
  const Token& peek(size_t k = 0) const { return t_[std::min(p_ + k, t_.size() - 1)]; }
  bool at(TK k) const { return peek().kind == k; }
  bool atPunct(char c) const { return peek().kind == TK::kPunct && peek().text[0] == c; }
  bool atDir(const char* d) const { return peek().kind == TK::kDirective && peek().text == d; }
  const Token& next() { return t_[std::min(p_++, t_.size() - 1)]; }
  bool fail(const std::string& msg) { return failAt(peek().line, msg); }
  bool failAt(uint32_t line, const std::string& msg) {
    if (error.empty()) {
      error = msg;
      errorLine = line;
    }
    return false;
  }
  // A survey's refusal: the error so far is recorded and cleared.
  void record() {
    if (refusals_ && !error.empty()) refusals_->push_back(m_->name + ":" + std::to_string(errorLine) + ": " + error);
    error.clear();
    errorLine = 0;
  }
  // Whether the statement that began at `start` was read to its ';' before it was refused.
  bool statementDone(size_t start) const { return p_ > start && t_[p_ - 1].kind == TK::kPunct && t_[p_ - 1].text == ";"; }
  // Skips past the next ';' (or a braced block, at module level); in a body, stops before a '}'.
  void skipStatement(bool inBody) {
    while (!at(TK::kEnd)) {
      if (atPunct(';')) {
        ++p_;
        return;
      }
      if (atPunct('}') && inBody) return;
      if (atPunct('{')) {
        ++p_;
        for (int depth = 1; depth > 0 && !at(TK::kEnd); ++p_) {
          if (atPunct('{')) ++depth;
          if (atPunct('}')) --depth;
        }
        if (!inBody) return;
        continue;
      }
      ++p_;
    }
  }
  bool expectPunct(char c, const char* where) {
    if (!atPunct(c)) return fail(std::string("expected '") + c + "' " + where + ", found '" + peek().text + "'");
    ++p_;
    return true;
  }
  bool expectInt(uint64_t* v, const char* what) {
    if (!at(TK::kInt)) return fail(std::string("expected ") + what + ", found '" + peek().text + "'");
    *v = next().bits;
    return true;
  }

  // ---- module level
  bool topLevel() {
    const Token& tk = peek();
    if (tk.kind != TK::kDirective) return fail("expected a directive, found '" + tk.text + "'");
    if (tk.text == ".version") {
      ++p_;
      if (!at(TK::kF64) && !at(TK::kInt)) return fail("expected a version number after .version");
      m_->version = next().text;
      return true;
    }
    if (tk.text == ".target") {
      ++p_;
      if (!at(TK::kIdent)) return fail("expected a target after .target");
      m_->target = next().text;
      while (atPunct(',')) {
        ++p_;
        if (!at(TK::kIdent)) return fail("expected a target option after ','");
        const std::string opt = next().text;
        if (opt == "map_f64_to_f32" || opt == "texmode_independent" || opt == "texmode_unified") continue;
        if (opt != "debug") return fail("unsupported .target option '" + opt + "'");
      }
      return true;
    }
    if (tk.text == ".address_size") {
      const uint32_t line = tk.line;
      ++p_;
      uint64_t v;
      if (!expectInt(&v, "an address size")) return false;
      if (v != 64) return failAt(line, ".address_size " + std::to_string(v) + " is not supported (only 64)");
      m_->addressSize = 64;
      return true;
    }
    if (tk.text == ".file") return fileDirective();
    if (tk.text == ".section") return skipSection();
    if (tk.text == ".pragma") return pragma();
    bool isExtern = false;
    while (atDir(".visible") || atDir(".extern") || atDir(".weak") || atDir(".common")) {
      isExtern |= peek().text == ".extern";
      ++p_;
    }
    if (atDir(".entry") || atDir(".func")) return function(isExtern);
    if (atDir(".global") || atDir(".const") || atDir(".shared")) {
      const std::string sp = next().text;
      const Space space = sp == ".global" ? Space::kGlobal : sp == ".const" ? Space::kConst : Space::kShared;
      return variable(space, isExtern, /*inFunction=*/false);
    }
    return fail("unsupported directive '" + peek().text + "'");
  }

  bool fileDirective() {
    ++p_;
    uint64_t n;
    if (!expectInt(&n, "a file number")) return false;
    if (!at(TK::kString)) return fail("expected a file name after .file");
    m_->files.emplace_back(static_cast<unsigned>(n), next().text);
    while (atPunct(',')) {  // optional timestamp and size
      ++p_;
      uint64_t ignored;
      if (!expectInt(&ignored, "a number")) return false;
    }
    return true;
  }

  bool skipSection() {
    // Debug sections (.section .debug_str { ... }): not needed to run; skipped whole.
    ++p_;
    if (at(TK::kDirective)) ++p_;
    if (!expectPunct('{', "after .section")) return false;
    int depth = 1;
    while (depth > 0) {
      if (at(TK::kEnd)) return fail("unterminated .section");
      const Token& tk = next();
      if (tk.kind == TK::kPunct && tk.text[0] == '{') ++depth;
      if (tk.kind == TK::kPunct && tk.text[0] == '}') --depth;
    }
    return true;
  }

  bool pragma() {
    ++p_;
    while (at(TK::kString) || atPunct(',')) ++p_;
    return expectPunct(';', "after .pragma");
  }

  // [.align N] [.v2|.v4] .type name[N]... [= init] ;
  bool variable(Space space, bool isExtern, bool inFunction, bool frameParam = false) {
    const uint32_t line = peek().line;
    uint64_t align = 0;
    unsigned vec = 1;
    Type type = Type::kNone;
    while (at(TK::kDirective)) {
      const std::string d = next().text;
      if (d == ".align") {
        if (!expectInt(&align, "an alignment")) return false;
        if (align == 0 || (align & (align - 1)) != 0) return failAt(line, "alignment " + std::to_string(align) + " is not a power of two");
      } else if (d == ".v2" || d == ".v4") {
        vec = d == ".v2" ? 2 : 4;
      } else if (typeFromDirective(d, &type)) {
        break;
      } else {
        return failAt(line, "unsupported variable attribute '" + d + "'");
      }
    }
    if (type == Type::kNone || type == Type::kPred) return failAt(line, "a variable needs a data type");
    if (!at(TK::kIdent)) return fail("expected a variable name, found '" + peek().text + "'");
    const std::string name = next().text;
    uint64_t count = 1;
    bool unsized = false;
    while (atPunct('[')) {
      ++p_;
      if (atPunct(']')) {
        unsized = true;
      } else {
        uint64_t n;
        if (!expectInt(&n, "an array size")) return false;
        count *= n;
      }
      if (!expectPunct(']', "after an array size")) return false;
    }
    const uint64_t elem = typeBytes(type) * vec;
    if (align == 0) align = elem;
    std::vector<uint64_t> init;
    if (atPunct('=')) {
      ++p_;
      if (space != Space::kGlobal && space != Space::kConst) return failAt(line, "only .global and .const variables take initialisers");
      if (!initialiser(type, &init)) return false;
      if (unsized) {
        count = (init.size() + vec - 1) / vec;
        unsized = false;
      }
      if (init.size() > count * vec) return failAt(line, "too many initialisers for '" + name + "'");
    }
    if (!expectPunct(';', "after a variable declaration")) return false;
    if (unsized && !(space == Space::kShared && isExtern)) return failAt(line, "'" + name + "' has no size");
    const uint64_t size = unsized ? 0 : elem * count;
    Symbol sym{space, 0, false};
    switch (space) {
      case Space::kGlobal:
      case Space::kConst: {
        std::vector<uint8_t>& store = space == Space::kGlobal ? m_->globalInit : m_->constInit;
        sym.address = alignUp(store.size(), align);
        store.resize(sym.address + size, 0);
        for (size_t i = 0; i < init.size(); ++i) std::memcpy(&store[sym.address + i * typeBytes(type)], &init[i], typeBytes(type));
        break;
      }
      case Space::kShared:
        if (isExtern) {
          sym.isExtern = true;
          if (inFunction) fn_->dynamicSharedAlign = std::max<uint32_t>(fn_->dynamicSharedAlign, static_cast<uint32_t>(align));
          else moduleExternAlign_ = std::max<uint32_t>(moduleExternAlign_, static_cast<uint32_t>(align));
        } else if (inFunction) {
          sym.address = alignUp(fn_->staticShared, align);
          fn_->staticShared = static_cast<uint32_t>(sym.address + size);
        } else {
          sym.address = alignUp(m_->moduleShared, align);
          m_->moduleShared = static_cast<uint32_t>(sym.address + size);
        }
        break;
      case Space::kLocal:
        sym.address = alignUp(fn_->localBytes, align);
        fn_->localBytes = static_cast<uint32_t>(sym.address + size);
        break;
      default:
        return failAt(line, "unsupported variable space");
    }
    ModuleVariable v;
    v.name = name;
    v.space = space;
    v.offset = sym.address;
    v.size = size;
    v.align = static_cast<uint32_t>(align);
    v.isExtern = sym.isExtern;
    if (inFunction) {
      sym.frame = frameParam;
      sym.size = static_cast<uint32_t>(size);
      fnSymbols_[name] = sym;
    } else {
      if (symbols_.count(name) != 0) return failAt(line, "'" + name + "' is declared twice");
      symbols_[name] = sym;
      m_->variables.push_back(v);
    }
    return true;
  }

  static bool typeFromDirective(const std::string& d, Type* t) {
    static const std::map<std::string, Type> m = {
        {".pred", Type::kPred}, {".b8", Type::kB8},   {".b16", Type::kB16},   {".b32", Type::kB32},
        {".b64", Type::kB64},   {".u8", Type::kU8},   {".u16", Type::kU16},   {".u32", Type::kU32},
        {".u64", Type::kU64},   {".s8", Type::kS8},   {".s16", Type::kS16},   {".s32", Type::kS32},
        {".s64", Type::kS64},   {".f16", Type::kF16}, {".f16x2", Type::kF16x2}, {".bf16", Type::kBF16},
        {".bf16x2", Type::kBF16x2}, {".f32", Type::kF32}, {".f64", Type::kF64},
    };
    auto it = m.find(d);
    if (it == m.end()) return false;
    *t = it->second;
    return true;
  }

  // A constant or a { } list (nested lists flatten), as element bit patterns of `type`.
  bool initialiser(Type type, std::vector<uint64_t>* out) {
    if (atPunct('{')) {
      ++p_;
      if (!atPunct('}')) {
        for (;;) {
          if (!initialiser(type, out)) return false;
          if (!atPunct(',')) break;
          ++p_;
        }
      }
      return expectPunct('}', "after an initialiser list");
    }
    uint64_t v;
    if (at(TK::kIdent)) {
      // A function's address (a table of device functions), or a .global / .const variable's.
      const std::string n = next().text;
      if (typeBytes(type) != 8) return fail("an address ('" + n + "') initialises only a 64-bit element");
      if (functionAddress(n, &v)) {
        out->push_back(v);
        return true;
      }
      auto it = symbols_.find(n);
      if (it == symbols_.end() || (it->second.space != Space::kGlobal && it->second.space != Space::kConst))
        return fail("undefined symbol '" + n + "' in an initialiser");
      v = it->second.address + (it->second.space == Space::kGlobal ? kModuleGlobalWindow : kConstWindow);
      out->push_back(v);
      return true;
    }
    if (!constant(type, &v)) return false;
    out->push_back(v);
    return true;
  }

  // Functions get an address when first declared (ir.h: kFunctionWindow); naming one as a value
  // takes its address (Module::addressTaken).
  void declareFunction(const std::string& name) {
    if (!declared_.insert(name).second) return;
    functionIds_[name] = static_cast<uint32_t>(m_->functionNames.size());
    m_->functionNames.push_back(name);
    m_->addressTaken.push_back(false);
  }
  bool functionAddress(const std::string& name, uint64_t* addr) {
    auto it = functionIds_.find(name);
    if (it == functionIds_.end()) return false;
    m_->addressTaken[it->second] = true;
    *addr = kFunctionWindow + uint64_t{it->second} * kFunctionStride;
    return true;
  }

  // A numeric constant for an operand or initialiser of `type`: integers as two's complement;
  // 0f / 0d / decimal floats converted to `type` when it is a float type.
  bool constant(Type type, uint64_t* v) {
    bool neg = false;
    if (atPunct('-')) {
      neg = true;
      ++p_;
    }
    const Token& tk = peek();
    if (tk.kind == TK::kInt) {
      ++p_;
      uint64_t x = neg ? ~tk.bits + 1 : tk.bits;
      if (type == Type::kF32 || type == Type::kF64) {
        // An integer where a float is wanted: its value (PTX converts constants to the type).
        const double d = neg ? -static_cast<double>(tk.bits) : static_cast<double>(tk.bits);
        x = floatBits(d, type);
      }
      *v = x;
      return true;
    }
    if (tk.kind == TK::kF32 || tk.kind == TK::kF64) {
      ++p_;
      double d;
      if (tk.kind == TK::kF32) {
        float f;
        const uint32_t b = static_cast<uint32_t>(tk.bits);
        std::memcpy(&f, &b, sizeof f);
        if (type == Type::kF32 && !neg) {
          *v = b;  // keep the exact bits (NaN payloads included)
          return true;
        }
        d = f;
      } else {
        std::memcpy(&d, &tk.bits, sizeof d);
        if (type == Type::kF64 && !neg) {
          *v = tk.bits;
          return true;
        }
      }
      if (neg) d = -d;
      if (type == Type::kF32 || type == Type::kF64) {
        *v = floatBits(d, type);
      } else if (type == Type::kF16 || type == Type::kBF16 || type == Type::kF16x2 || type == Type::kBF16x2) {
        return fail("floating-point constants for f16/bf16 operands are not implemented");
      } else {
        // A float constant for an integer or bit type: its bit pattern (as 0f/0d in mov.b32).
        uint64_t bits = tk.kind == TK::kF32 ? static_cast<uint32_t>(tk.bits) : tk.bits;
        if (neg) bits ^= tk.kind == TK::kF32 ? 0x80000000ull : 0x8000000000000000ull;
        *v = bits;
      }
      return true;
    }
    return fail("expected a constant, found '" + tk.text + "'");
  }

  static uint64_t floatBits(double d, Type type) {
    if (type == Type::kF32) {
      const float f = static_cast<float>(d);
      uint32_t b;
      std::memcpy(&b, &f, sizeof b);
      return b;
    }
    uint64_t b;
    std::memcpy(&b, &d, sizeof b);
    return b;
  }

  // ---- functions
  // A function; in a lenient parse, one the parser refuses is skipped whole (its body's braces
  // balanced) and recorded in Module::refused with the reason, and the module goes on.
  bool function(bool isExtern) {
    const size_t start = p_;
    if (functionBody(isExtern)) return true;
    fn_ = nullptr;
    if (!lenient_ || at(TK::kEnd)) return false;
    const std::string why = firstInFunction_.empty() ? m_->name + ":" + std::to_string(errorLine) + ": " + error
                                                     : firstInFunction_;
    record();
    error.clear();
    errorLine = 0;
    p_ = start + 1;  // past .entry / .func
    std::string name;
    int parens = 0;
    for (;;) {
      if (at(TK::kEnd)) return fail("function '" + name + "' is not closed");
      if (atPunct('(')) ++parens;
      if (atPunct(')')) --parens;
      if (parens == 0 && name.empty() && at(TK::kIdent)) name = peek().text;
      if (parens == 0 && atPunct(';')) {
        ++p_;
        break;
      }
      if (parens == 0 && atPunct('{')) {
        ++p_;
        for (int depth = 1; depth > 0;) {
          if (at(TK::kEnd)) return fail("function '" + name + "' is not closed");
          if (atPunct('{')) ++depth;
          if (atPunct('}')) --depth;
          ++p_;
        }
        break;
      }
      ++p_;
    }
    m_->refused[name] = why;
    return true;
  }

  bool functionBody(bool isExtern) {
    const bool entry = next().text == ".entry";
    Function f;
    f.isEntry = entry;
    f.line = peek().line;
    fn_ = &f;
    firstInFunction_.clear();
    regs_.clear();
    labels_.clear();
    labelRefs_.clear();
    targetLists_.clear();
    targetRefs_.clear();
    externRefs_.clear();
    fnSymbols_.clear();
    prototypes_.clear();
    callTargets_.clear();
    loc_ = {0, 0};
    f.staticShared = m_->moduleShared;
    f.dynamicSharedAlign = moduleExternAlign_;
    if (atPunct('(')) {  // a .func's return parameters
      if (entry) return fail("a kernel (.entry) has no return value");
      ++p_;
      if (!atPunct(')')) {
        for (;;) {
          if (!param(&f, /*isReturn=*/true)) return false;
          if (!atPunct(',')) break;
          ++p_;
        }
      }
      if (!expectPunct(')', "after the return parameters")) return false;
    }
    if (!at(TK::kIdent)) return fail("expected a function name, found '" + peek().text + "'");
    f.name = next().text;
    if (atPunct('(')) {
      ++p_;
      if (!atPunct(')')) {
        for (;;) {
          if (!param(&f, false)) return false;
          if (!atPunct(',')) break;
          ++p_;
        }
      }
      if (!expectPunct(')', "after the parameter list")) return false;
    }
    // Performance tuning directives: accepted, not needed to execute.
    while (atDir(".maxntid") || atDir(".reqntid") || atDir(".minnctapersm") || atDir(".maxnreg") || atDir(".noreturn") ||
           atDir(".maxnctapersm") || atDir(".reqnctapercluster") || atDir(".explicitcluster") || atDir(".maxclusterrank") ||
           atDir(".pragma")) {
      if (atDir(".pragma")) {
        if (!pragma()) return false;
        continue;
      }
      ++p_;
      while (at(TK::kInt) || atPunct(',')) ++p_;
    }
    if (atPunct(';')) {  // a prototype
      ++p_;
      if (!isExtern && entry) return fail("kernel '" + f.name + "' has no body");
      declareFunction(f.name);
      fn_ = nullptr;
      return true;
    }
    declareFunction(f.name);  // a function may call itself
    if (!expectPunct('{', "to open the function body")) return false;
    int depth = 1;
    while (depth > 0) {
      if (at(TK::kEnd)) return fail("function '" + f.name + "' is not closed");
      if (atPunct('{')) {
        ++p_;
        ++depth;
      } else if (atPunct('}')) {
        ++p_;
        --depth;
      } else if (const size_t start = p_; !statement()) {
        if (!refusals_) return false;
        surveyRefusal();
        if (!statementDone(start)) skipStatement(/*inBody=*/true);
        for (auto& l : pendingLabel_) l.clear();
        for (auto& b : pendingExtern_) b = false;
        operandIndex_ = 0;
      }
    }
    const std::string name = f.name;
    if (!finishFunction(&f)) return false;
    if (firstInFunction_.empty()) return true;
    // A survey read the whole body past its refusals: the function is refused all the same.
    m_->functions.pop_back();
    m_->refused[name] = firstInFunction_;
    return true;
  }

  // A kernel's parameter (in its parameter space), or a device function's parameter or return
  // parameter (in its local memory, where a call copies the caller's arguments and takes the return
  // values from: docs/ptx.md, "Device functions").
  bool param(Function* f, bool isReturn) {
    if (!atDir(".param")) return fail("expected .param, found '" + peek().text + "'");
    ++p_;
    uint64_t align = 0;
    Type type = Type::kNone;
    // Attributes come before the type (".param .align 8 .b8 x[16]") or after it: nvcc writes
    // ".param .u64 .ptr .align 1 x" for PTX 9.0 (CUDA 13.0, .target sm_120), the state space
    // after .ptr being optional (PTX ISA, "Kernel Function Parameter Attribute: .ptr").
    // An .align after .ptr is the alignment of the memory pointed to, not the parameter's own.
    bool pointerAttributes = false;
    while (at(TK::kDirective)) {
      const std::string d = next().text;
      Type t = Type::kNone;
      if (d == ".align") {
        uint64_t n = 0;
        if (!expectInt(&n, "an alignment")) return false;
        if (!pointerAttributes) align = n;
      } else if (d == ".ptr" || d == ".global" || d == ".const" || d == ".local" || d == ".shared") {
        // .ptr attributes only describe what a pointer parameter points to
        pointerAttributes = true;
      } else if (type == Type::kNone && typeFromDirective(d, &t)) {
        type = t;
      } else {
        return fail("unsupported parameter attribute '" + d + "'");
      }
    }
    if (type == Type::kNone || type == Type::kPred) return fail("a parameter needs a data type");
    if (!at(TK::kIdent)) return fail("expected a parameter name");
    Param p;
    p.name = next().text;
    uint64_t count = 1;
    if (atPunct('[')) {
      ++p_;
      if (!expectInt(&count, "an array size")) return false;
      if (!expectPunct(']', "after an array size")) return false;
    }
    p.size = static_cast<uint32_t>(typeBytes(type) * count);
    p.align = static_cast<uint32_t>(align != 0 ? align : typeBytes(type));
    if (f->isEntry) {
      p.offset = static_cast<uint32_t>(alignUp(f->paramBytes, p.align));
      f->paramBytes = p.offset + p.size;
      fnSymbols_[p.name] = Symbol{Space::kParam, p.offset, false};
      f->params.push_back(p);
      return true;
    }
    p.offset = static_cast<uint32_t>(alignUp(f->localBytes, p.align));
    f->localBytes = p.offset + p.size;
    Symbol sym{Space::kLocal, p.offset, false};
    sym.frame = true;
    sym.size = p.size;
    fnSymbols_[p.name] = sym;
    (isReturn ? f->returns : f->params).push_back(p);
    return true;
  }

  bool statement() {
    const Token& tk = peek();
    if (tk.kind == TK::kDirective) {
      const std::string d = tk.text;
      if (d == ".reg") return regDecl();
      if (d == ".loc") return locDirective();
      if (d == ".pragma") return pragma();
      if (d == ".shared" && !fn_->isEntry) return fail("a .shared variable inside a device function is not supported");
      if (d == ".local" || d == ".shared") {
        ++p_;
        return variable(d == ".local" ? Space::kLocal : Space::kShared, false, true);
      }
      if (d == ".param") {  // a call's argument or return value: in the caller's local memory
        ++p_;
        return variable(Space::kLocal, false, true, /*frameParam=*/true);
      }
      if (d == ".callprototype" || d == ".calltargets") return fail(d + " needs a label ('name: " + d + " ...')");
      return fail("unsupported directive '" + d + "' in a function body");
    }
    if (tk.kind == TK::kIdent && peek(1).kind == TK::kPunct && peek(1).text == ":" && peek(2).kind == TK::kDirective &&
        peek(2).text == ".branchtargets")
      return branchTargets();
    if (tk.kind == TK::kIdent && peek(1).kind == TK::kPunct && peek(1).text == ":" && peek(2).kind == TK::kDirective &&
        (peek(2).text == ".callprototype" || peek(2).text == ".calltargets")) {
      const std::string label = tk.text;
      p_ += 2;
      return next().text == ".callprototype" ? callPrototype(label) : callTargetList(label);
    }
    if (tk.kind == TK::kIdent && peek(1).kind == TK::kPunct && peek(1).text == ":") {
      if (labels_.count(tk.text) != 0 || targetLists_.count(tk.text) != 0) return fail("label '" + tk.text + "' is defined twice");
      labels_[tk.text] = static_cast<uint32_t>(fn_->code.size());
      p_ += 2;
      return true;
    }
    return instruction();
  }

  // `name: .branchtargets L1, L2, ...;` (PTX ISA, "Control Flow Directives: .branchtargets"): the
  // list brx.idx indexes. Its labels may be defined later in the function; they are resolved at
  // its end.
  bool branchTargets() {
    const std::string name = next().text;
    const uint32_t line = peek().line;
    p_ += 2;  // ':' and the directive
    if (labels_.count(name) != 0 || targetLists_.count(name) != 0) return fail("label '" + name + "' is defined twice");
    TargetRef ref;
    ref.list = static_cast<uint32_t>(fn_->targetLists.size());
    ref.line = line;
    for (;;) {
      if (!at(TK::kIdent) || peek().text[0] == '%') return fail("expected a label in .branchtargets, found '" + peek().text + "'");
      ref.labels.push_back(next().text);
      if (!atPunct(',')) break;
      ++p_;
    }
    if (!expectPunct(';', "after .branchtargets")) return false;
    targetLists_[name] = ref.list;
    fn_->targetLists.emplace_back();
    targetRefs_.push_back(std::move(ref));
    return true;
  }

  bool regDecl() {
    ++p_;
    Type type = Type::kNone;
    if (at(TK::kDirective) && (peek().text == ".v2" || peek().text == ".v4")) return fail("vector registers are not implemented");
    if (!at(TK::kDirective) || !typeFromDirective(peek().text, &type)) return fail("expected a register type after .reg");
    ++p_;
    for (;;) {
      if (!at(TK::kIdent)) return fail("expected a register name, found '" + peek().text + "'");
      const std::string base = next().text;
      if (atPunct('<')) {
        ++p_;
        uint64_t n;
        if (!expectInt(&n, "a register count")) return false;
        if (!expectPunct('>', "after a register count")) return false;
        if (n > (1u << 20)) return fail("too many registers");
        for (uint64_t i = 0; i < n; ++i) addReg(base + std::to_string(i), type);
      } else {
        addReg(base, type);
      }
      if (!atPunct(',')) break;
      ++p_;
    }
    return expectPunct(';', "after .reg");
  }

  void addReg(const std::string& name, Type type) {
    if (regs_.count(name) != 0) return;  // a redeclaration in an inner scope reuses the slot
    regs_[name] = static_cast<uint32_t>(fn_->regTypes.size());
    fn_->regTypes.push_back(type);
    fn_->regNames.push_back(name);
  }

  bool locDirective() {
    ++p_;
    uint64_t file, line, col;
    if (!expectInt(&file, "a file number") || !expectInt(&line, "a line") || !expectInt(&col, "a column")) return false;
    loc_ = {static_cast<uint16_t>(file), static_cast<uint32_t>(line)};
    while (atPunct(',')) {  // , function_name label, inlined_at f l c
      ++p_;
      if (!at(TK::kIdent)) return fail("expected an attribute of .loc");
      const std::string attr = next().text;
      if (attr == "function_name") {
        if (!at(TK::kIdent)) return fail("expected a label after function_name");
        ++p_;
      } else if (attr == "inlined_at") {
        for (int i = 0; i < 3; ++i)
          if (!expectInt(&col, "a number after inlined_at")) return false;
      } else {
        return fail("unsupported .loc attribute '" + attr + "'");
      }
    }
    return true;
  }

  // Instructions whose first operand may be a pair `d|p` (PTX ISA: setp, shfl.sync, match.sync,
  // elect.sync): the second destination, or none, becomes operand 1.
  static bool pairedDestination(Op op) { return op == Op::kSetp || op == Op::kShfl || op == Op::kMatch || op == Op::kElect; }

  bool instruction() {
    Instruction in;
    in.line = peek().line;
    in.srcFile = loc_.first;
    in.srcLine = loc_.second;
    if (atPunct('@')) {
      ++p_;
      if (atPunct('!')) {
        ++p_;
        in.guardNegated = true;
      }
      if (!at(TK::kIdent) || regs_.count(peek().text) == 0) return fail("expected a predicate register after '@'");
      in.guard = regs_.at(next().text);
    }
    if (!at(TK::kIdent)) return fail("expected an instruction, found '" + peek().text + "'");
    if (peek().text == "call") return call(&in);
    const std::string opcode = next().text;
    std::vector<std::string> mods;
    while (at(TK::kDirective)) mods.push_back(next().text);
    std::string err;
    if (!decodeOpcode(opcode, mods, &in, &err)) return failAt(in.line, err);
    // operands
    std::vector<Operand> ops;
    Operand pair;
    bool havePair = false;
    if (!atPunct(';') && !atPunct('}') && !at(TK::kEnd)) {
      for (;;) {
        Operand o;
        if (!operand(in, &o)) return false;
        ops.push_back(o);
        if (atPunct('|')) {
          ++p_;
          if (ops.size() != 1 || !pairedDestination(in.op)) return fail("'|' is allowed only after the first operand of setp, shfl, match and elect");
          if (!operand(in, &pair)) return false;
          havePair = true;
        }
        if (!atPunct(',')) break;
        ++p_;
      }
    }
    if (!atPunct(';')) return fail("expected ';' after '" + in.text + "', found '" + peek().text + "'");
    ++p_;
    if (pairedDestination(in.op)) {
      // The second destination (or none) goes second: see checkOperands.
      if (!ops.empty()) ops.insert(ops.begin() + 1, havePair ? pair : Operand{});
    }
    if (ops.size() > 6) return failAt(in.line, "too many operands for '" + in.text + "'");
    in.nops = static_cast<uint8_t>(ops.size());
    for (size_t i = 0; i < ops.size(); ++i) in.ops[i] = ops[i];
    for (size_t i = 0; i < ops.size(); ++i) {
      if (pendingLabel_[i].size() != 0) labelRefs_.push_back({fn_->code.size(), static_cast<unsigned>(i), pendingLabel_[i], in.line});
      if (pendingExtern_[i]) externRefs_.push_back({fn_->code.size(), static_cast<unsigned>(i)});
    }
    // pendingExtern_ is indexed in parse order, which is the final order unless setp/shfl had no
    // second destination inserted after their first.
    if (pairedDestination(in.op) && !ops.empty() && !havePair) {
      for (auto& r : externRefs_)
        if (r.instr == fn_->code.size() && r.operand >= 1) ++r.operand;
    }
    for (size_t i = 0; i < ops.size(); ++i)
      if (pendingLocal_[i]) fn_->localRefs.emplace_back(static_cast<uint32_t>(fn_->code.size()), static_cast<uint8_t>(i));
    if (pairedDestination(in.op) && !ops.empty() && !havePair) {
      for (auto& r : fn_->localRefs)
        if (r.first == fn_->code.size() && r.second >= 1) ++r.second;
    }
    // A body's `.param` variables and a device function's parameters live in local memory.
    if (frameParam_ && in.space == Space::kParam) in.space = Space::kLocal;
    frameParam_ = false;
    for (auto& s : pendingLabel_) s.clear();
    for (auto& b : pendingExtern_) b = false;
    for (auto& b : pendingLocal_) b = false;
    operandIndex_ = 0;
    if (!checkOperands(in, &err)) return failAt(in.line, err);
    fn_->code.push_back(std::move(in));
    return true;
  }

  // One operand; symbols resolve now, labels and dynamic shared memory at the function's end.
  bool operand(const Instruction& in, Operand* o) {
    const unsigned index = operandIndex_++;
    if (atPunct('[')) {
      ++p_;
      o->kind = Operand::Kind::kAddr;
      if (at(TK::kIdent)) {
        const std::string n = next().text;
        if (regs_.count(n) != 0) {
          o->reg = regs_.at(n);
        } else if (!symbolAddress(n, index, &o->imm)) {
          return false;
        }
      } else if (at(TK::kInt)) {
        o->imm = next().bits;
      } else {
        return fail("expected a register, symbol or address in [ ]");
      }
      if (atPunct('+') || atPunct('-')) {
        const bool minus = next().text[0] == '-';
        bool neg = minus;
        if (atPunct('-')) {
          ++p_;
          neg = !neg;
        }
        uint64_t off;
        if (!expectInt(&off, "an offset")) return false;
        o->imm += neg ? ~off + 1 : off;
      }
      return expectPunct(']', "to close an address");
    }
    if (atPunct('{')) {
      ++p_;
      o->kind = Operand::Kind::kVec;
      for (;;) {
        if (o->vecCount == 8) return fail("vectors have at most 8 elements");
        VecElem& e = o->vec[o->vecCount++];
        if (at(TK::kIdent) && peek().text == "_") {
          ++p_;
          e.sink = true;
        } else if (at(TK::kIdent)) {
          const std::string n = next().text;
          if (regs_.count(n) == 0) return fail("'" + n + "' is not a register");
          e.reg = regs_.at(n);
        } else {
          e.isImm = true;
          if (!constant(in.type, &e.imm)) return false;
        }
        if (!atPunct(',')) break;
        ++p_;
      }
      return expectPunct('}', "to close a vector");
    }
    if (atPunct('!')) {
      ++p_;
      if (!at(TK::kIdent) || regs_.count(peek().text) == 0) return fail("expected a predicate register after '!'");
      o->kind = Operand::Kind::kReg;
      o->reg = regs_.at(next().text);
      o->negate = true;
      return true;
    }
    if (at(TK::kIdent)) {
      const std::string n = next().text;
      if (n == "_") {
        o->kind = Operand::Kind::kNone;  // a discarded destination
        return true;
      }
      if (regs_.count(n) != 0) {
        o->kind = Operand::Kind::kReg;
        o->reg = regs_.at(n);
        return true;
      }
      Special sp;
      bool vector = false;
      if (specialByName(n, &sp, &vector)) {
        o->kind = Operand::Kind::kSpecial;
        o->special = sp;
        if (vector) {
          if (!at(TK::kDirective) || (peek().text != ".x" && peek().text != ".y" && peek().text != ".z"))
            return fail("'" + n + "' needs a component .x, .y or .z");
          o->component = static_cast<uint8_t>(next().text[1] - 'x');
        }
        return true;
      }
      if (n[0] == '%') return fail("'" + n + "' is not a declared register or a supported special register");
      if (in.op == Op::kBra) {
        o->kind = Operand::Kind::kLabel;
        pendingLabel_[index] = n;
        return true;
      }
      if (in.op == Op::kBrx) {  // the list must be defined before its use (PTX ISA, brx.idx)
        auto it = targetLists_.find(n);
        if (it == targetLists_.end()) return fail("'" + n + "' is not a .branchtargets list defined before this brx.idx");
        o->kind = Operand::Kind::kTargets;
        o->target = it->second;
        return true;
      }
      o->kind = Operand::Kind::kImm;
      if (!symbolAddress(n, index, &o->imm)) return false;
      if (atPunct('+')) {
        ++p_;
        uint64_t off;
        if (!expectInt(&off, "an offset")) return false;
        o->imm += off;
      }
      return true;
    }
    o->kind = Operand::Kind::kImm;
    // Immediates take the instruction's source type: cvt's is its second, mul.wide's its own;
    // redux.sync's membermask is a .b32 whatever the type reduced.
    const Type t = in.op == Op::kCvt ? in.type2 : in.op == Op::kRedux && index == 2 ? Type::kB32 : in.type;
    return constant(t, &o->imm);
  }

  // The address of symbol `n` in its space.
  bool symbolAddress(const std::string& n, unsigned index, uint64_t* addr) {
    const Symbol* s = nullptr;
    if (auto it = fnSymbols_.find(n); it != fnSymbols_.end()) s = &it->second;
    else if (auto jt = symbols_.find(n); jt != symbols_.end()) s = &jt->second;
    if (s == nullptr) {
      if (uint64_t fa; functionAddress(n, &fa)) {
        *addr = fa;
        return true;
      }
      return fail("undefined symbol '" + n + "'");
    }
    *addr = s->address + (s->space == Space::kGlobal ? kModuleGlobalWindow : 0);
    if (s->isExtern) pendingExtern_[index] = true;
    if (s->space == Space::kLocal) pendingLocal_[index] = true;
    if (s->frame) frameParam_ = true;
    return true;
  }

  // label: .callprototype [(ret)] _ [(params)] [.noreturn] ; (PTX ISA, "Control Flow
  // Directives: .callprototype"): the signature of an indirect call; its counts are checked
  // against the calls that name it.
  bool callPrototype(const std::string& label) {
    if (prototypes_.count(label) != 0 || callTargets_.count(label) != 0) return fail("label '" + label + "' is defined twice");
    auto list = [&](size_t* n) {
      if (!expectPunct('(', "in .callprototype")) return false;
      while (!atPunct(')')) {
        if (!atDir(".param") && !atDir(".reg")) return fail("expected .param in .callprototype, found '" + peek().text + "'");
        ++p_;
        while (at(TK::kDirective) || at(TK::kInt)) ++p_;  // .align N, the type, .ptr ...
        if (!at(TK::kIdent) || peek().text != "_") return fail("expected '_' in .callprototype, found '" + peek().text + "'");
        ++p_;
        if (atPunct('[')) {
          ++p_;
          uint64_t ignored;
          if (!expectInt(&ignored, "an array size") || !expectPunct(']', "after an array size")) return false;
        }
        ++*n;
        if (!atPunct(',')) break;
        ++p_;
      }
      return expectPunct(')', "to close a .callprototype list");
    };
    size_t rets = 0, params = 0;
    if (atPunct('(') && !list(&rets)) return false;
    if (!at(TK::kIdent) || peek().text != "_") return fail("expected '_' in .callprototype, found '" + peek().text + "'");
    ++p_;
    if (atPunct('(') && !list(&params)) return false;
    while (atDir(".noreturn")) ++p_;
    if (!expectPunct(';', "after .callprototype")) return false;
    prototypes_[label] = {rets, params};
    return true;
  }

  // label: .calltargets f, g ... ; the functions an indirect call naming it may reach: their
  // addresses are taken (they are linked into a kernel making indirect calls).
  bool callTargetList(const std::string& label) {
    if (prototypes_.count(label) != 0 || callTargets_.count(label) != 0) return fail("label '" + label + "' is defined twice");
    std::vector<std::string> names;
    for (;;) {
      if (!at(TK::kIdent)) return fail("expected a function in .calltargets, found '" + peek().text + "'");
      const std::string n = next().text;
      uint64_t ignored;
      if (!functionAddress(n, &ignored)) return fail("'" + n + "' in .calltargets is not a declared function");
      names.push_back(n);
      if (!atPunct(',')) break;
      ++p_;
    }
    if (!expectPunct(';', "after .calltargets")) return false;
    callTargets_[label] = std::move(names);
    return true;
  }

  // call[.uni] [(ret, ...),] callee [, (arg, ...)] ; the return values and arguments are the
  // caller's `.param` variables. An indirect call names a register for the callee and ends with
  // a .callprototype or .calltargets label: call[.uni] [(ret, ...),] %rd [, (arg, ...)], label ;
  bool call(Instruction* in) {
    ++p_;
    while (at(TK::kDirective)) {
      const std::string m = next().text;
      if (m != ".uni") return failAt(in->line, "unsupported modifier '" + m + "' in 'call'");
    }
    in->op = Op::kCall;
    in->text = "call";
    CallSite site;
    site.line = in->line;
    auto list = [&](std::vector<std::pair<uint32_t, uint32_t>>* out) {
      ++p_;  // (
      if (atPunct(')')) {
        ++p_;
        return true;
      }
      for (;;) {
        if (!at(TK::kIdent)) return fail("expected a .param variable in the call's list, found '" + peek().text + "'");
        const std::string n = next().text;
        auto it = fnSymbols_.find(n);
        if (it == fnSymbols_.end() || !it->second.frame) {
          if (regs_.count(n) != 0) return fail("a call passes .param variables, not registers ('" + n + "')");
          return fail("'" + n + "' is not a .param variable of this function");
        }
        out->emplace_back(static_cast<uint32_t>(it->second.address), it->second.size);
        if (!atPunct(',')) break;
        ++p_;
      }
      return expectPunct(')', "to close the call's list");
    };
    if (atPunct('(')) {
      if (!list(&site.rets)) return false;
      if (!expectPunct(',', "after the call's return values")) return false;
    }
    if (!at(TK::kIdent)) return fail("expected the function a call calls, found '" + peek().text + "'");
    site.name = next().text;
    if (regs_.count(site.name) != 0) {
      const uint32_t reg = regs_.at(site.name);
      if (typeBits(fn_->regTypes[reg]) != 64) return failAt(in->line, "an indirect call's address '" + site.name + "' must be a 64-bit register");
      site.indirect = true;
      in->ops[0].kind = Operand::Kind::kReg;
      in->ops[0].reg = reg;
      in->nops = 1;
    } else if (site.name[0] == '%') {
      return failAt(in->line, "'" + site.name + "' is not a declared register");
    } else if (declared_.count(site.name) == 0) {
      return failAt(in->line, "call to undeclared function '" + site.name + "'");
    }
    if (atPunct(',') && peek(1).kind == TK::kPunct && peek(1).text == "(") {
      ++p_;
      if (!list(&site.args)) return false;
    }
    if (site.indirect) {
      if (!atPunct(',')) return failAt(in->line, "an indirect call needs a .callprototype or .calltargets label after its arguments");
      ++p_;
      if (!at(TK::kIdent)) return fail("expected a .callprototype or .calltargets label, found '" + peek().text + "'");
      const std::string label = next().text;
      if (auto it = prototypes_.find(label); it != prototypes_.end()) {
        if (it->second.first != site.rets.size() || it->second.second != site.args.size())
          return failAt(in->line, "the call passes " + std::to_string(site.args.size()) + " arguments and takes " +
                                      std::to_string(site.rets.size()) + " return values, but prototype '" + label + "' has " +
                                      std::to_string(it->second.second) + " and " + std::to_string(it->second.first));
      } else if (callTargets_.count(label) == 0 && symbols_.count(label) == 0) {
        // flist may also name a call table: an array initialised with function names.
        return failAt(in->line, "'" + label + "' is not a .callprototype or .calltargets label of this function, nor a call table");
      }
      site.name = label;
    } else if (atPunct(',')) {
      return failAt(in->line, "a direct call takes no prototype");
    } else {
      in->nops = 0;
    }
    if (!expectPunct(';', "after 'call'")) return false;
    in->ops[0].target = static_cast<uint32_t>(fn_->calls.size());
    fn_->calls.push_back(std::move(site));
    fn_->code.push_back(std::move(*in));
    return true;
  }

  // Each kernel gets the device functions it calls, directly or not, placed after its own code,
  // registers and local memory (Function::callees); a call site names its callee's index. A call
  // to a function declared but not defined here (other than the executor's builtins), or to one a
  // lenient parse refused, refuses the kernel.
  bool linkKernels() {
    std::map<std::string, const Function*> defined;
    for (const Function& f : m_->functions) defined[f.name] = &f;
    std::vector<Function> kernels;
    for (const Function& f : m_->functions) {
      if (!f.isEntry) continue;
      Function k;
      std::string why;
      uint32_t line = 0;
      if (link(f, defined, &k, &why, &line)) {
        kernels.push_back(std::move(k));
        continue;
      }
      if (!lenient_) return failAt(line, why);
      m_->refused[f.name] = m_->name + ":" + std::to_string(line) + ": " + why;
    }
    // The device functions stay in the module (unlinked) after the kernels.
    for (Function& f : m_->functions)
      if (!f.isEntry) kernels.push_back(std::move(f));
    m_->functions = std::move(kernels);
    // Kernels that call malloc or free find the device heap through a variable of the module's.
    bool heap = false;
    for (const Function& f : m_->functions)
      for (const Callee& c : f.callees)
        heap = heap || c.builtin == Builtin::kMalloc || c.builtin == Builtin::kFree || c.builtin == Builtin::kAlignedMalloc;
    if (heap) {
      ModuleVariable v;
      v.name = kDeviceHeapVariable;
      v.offset = alignUp(m_->globalInit.size(), 16);
      v.size = 16;
      v.align = 16;
      m_->globalInit.resize(v.offset + v.size, 0);
      m_->heapVariable = static_cast<int64_t>(v.offset);
      m_->variables.push_back(v);
    }
    return true;
  }


  bool link(const Function& entry, const std::map<std::string, const Function*>& defined, Function* out,
            std::string* why, uint32_t* line) {
    *out = entry;
    out->calls.clear();
    out->localRefs.clear();
    // 1. The functions it reaches, in the order first called, and where each is placed.
    std::vector<const Function*> placed{&entry};  // nullptr: a builtin
    std::map<std::string, uint32_t> index{{entry.name, 0}};
    Callee self;
    self.name = entry.name;
    self.regCount = static_cast<uint32_t>(entry.regTypes.size());
    self.localBytes = entry.localBytes;
    out->callees.push_back(self);
    uint32_t codeEnd = static_cast<uint32_t>(entry.code.size());
    uint32_t regEnd = self.regCount, localEnd = entry.localBytes;
    std::vector<std::vector<uint32_t>> edges(1);
    // An indirect call may reach any function whose address the module takes: all of them are
    // placed (in the order of their declaration) where a function makes one.
    std::vector<std::string> addressTaken;
    for (size_t n = 0; n < m_->functionNames.size(); ++n) {
      auto dt = defined.find(m_->functionNames[n]);
      if (m_->addressTaken[n] && dt != defined.end() && !dt->second->isEntry) addressTaken.push_back(m_->functionNames[n]);
    }
    bool indirect = false;
    for (size_t i = 0; i < placed.size(); ++i) {
      if (placed[i] == nullptr) continue;
      std::vector<std::pair<std::string, uint32_t>> targets;  // (callee, line of the call)
      for (const CallSite& cs : placed[i]->calls) {
        if (!cs.indirect) {
          targets.emplace_back(cs.name, cs.line);
          continue;
        }
        indirect = true;
        for (const std::string& t : addressTaken) targets.emplace_back(t, cs.line);
      }
      for (const auto& cs : targets) {
        auto it = index.find(cs.first);
        if (it == index.end()) {
          Callee c;
          c.name = cs.first;
          auto dt = defined.find(cs.first);
          if (dt != defined.end() && dt->second->isEntry) dt = defined.end();  // a kernel is not a callee
          if (dt != defined.end()) {
            // A program's own definition of a builtin's name is the program's function.
            const Function& g = *dt->second;
            placeAfter(g, &c, &codeEnd, &regEnd, &localEnd);
            placed.push_back(&g);
          } else {
            c.builtin = builtinNamed(cs.first);
            if (c.builtin == Builtin::kNone) {
              *line = cs.second;
              auto rt = m_->refused.find(cs.first);
              *why = rt != m_->refused.end() ? "call to '" + cs.first + "', which is not supported (" + rt->second + ")"
                                             : "call to '" + cs.first + "', which is declared but not defined in this module";
              return false;
            }
            placed.push_back(nullptr);
          }
          it = index.emplace(cs.first, static_cast<uint32_t>(out->callees.size())).first;
          out->callees.push_back(c);
          edges.emplace_back();
        }
        edges[i].push_back(it->second);
      }
    }
    // Recursive: a function from which a chain of calls leads back to itself.
    for (size_t c = 1; c < out->callees.size(); ++c) {
      std::vector<bool> seen(out->callees.size(), false);
      std::vector<uint32_t> todo(edges[c].begin(), edges[c].end());
      while (!todo.empty()) {
        const uint32_t x = todo.back();
        todo.pop_back();
        if (seen[x]) continue;
        seen[x] = true;
        for (uint32_t y : edges[x]) todo.push_back(y);
      }
      out->callees[c].recursive = seen[c];
    }
    // 2. Their code, relocated (registers, labels, local addresses, call sites), and the call sites.
    for (size_t i = 0; i < placed.size(); ++i) {
      if (placed[i] == nullptr) continue;
      if (i == 0) {
        const uint32_t siteBase = static_cast<uint32_t>(out->calls.size());
        for (const CallSite& cs : entry.calls) {
          CallSite site = cs;
          if (!cs.indirect) site.callee = index.at(cs.name);
          out->calls.push_back(site);
        }
        for (Instruction& in : out->code)
          if (in.op == Op::kCall) in.ops[0].target += siteBase;
        continue;
      }
      placeCode(out, *placed[i], out->callees[i], index);
    }
    out->localBytes = localEnd;
    if (indirect) {
      for (const std::string& t : addressTaken) {
        const uint32_t id = functionIds_.at(t);
        out->indirect.emplace_back(kFunctionWindow + uint64_t{id} * kFunctionStride, index.at(t));
      }
      std::sort(out->indirect.begin(), out->indirect.end());
    }
    return true;
  }

  bool finishFunction(Function* f) {
    for (const LabelRef& r : labelRefs_) {
      auto it = labels_.find(r.name);
      if (it == labels_.end()) return failAt(r.line, "undefined label '" + r.name + "'");
      f->code[r.instr].ops[r.operand].target = it->second;
    }
    for (const TargetRef& r : targetRefs_) {
      for (const std::string& l : r.labels) {
        auto it = labels_.find(l);
        if (it == labels_.end()) return failAt(r.line, "undefined label '" + l + "' in .branchtargets");
        f->targetLists[r.list].push_back(it->second);
      }
    }
    const uint64_t dyn = alignUp(f->staticShared, f->dynamicSharedAlign);
    for (const ExternRef& r : externRefs_) f->code[r.instr].ops[r.operand].imm += dyn;
    // A body that can run off its end gets an implicit return (nvcc always ends with ret).
    Instruction ret;
    ret.op = Op::kRet;
    ret.text = "ret";
    ret.line = peek().line;
    f->code.push_back(ret);
    for (const Function& g : m_->functions)
      if (g.name == f->name) return failAt(f->line, "function '" + f->name + "' is defined twice");
    m_->functions.push_back(std::move(*f));
    fn_ = nullptr;
    return true;
  }

  std::vector<Token> t_;
  size_t p_ = 0;
  Module* m_;
  // In a survey: records the refusal, keeping the function's first.
  void surveyRefusal() {
    if (firstInFunction_.empty()) firstInFunction_ = m_->name + ":" + std::to_string(errorLine) + ": " + error;
    record();
  }

  const bool lenient_;
  std::vector<std::string>* refusals_;
  std::string firstInFunction_;  // a survey's first refusal in the current function
  Function* fn_ = nullptr;
  uint32_t moduleExternAlign_ = 1;
  std::map<std::string, Symbol> symbols_;    // module scope
  std::map<std::string, Symbol> fnSymbols_;  // the current function's params, locals, shared
  std::map<std::string, uint32_t> regs_;
  std::map<std::string, uint32_t> labels_;
  std::vector<LabelRef> labelRefs_;
  std::map<std::string, uint32_t> targetLists_;  // the current function's .branchtargets lists
  std::vector<TargetRef> targetRefs_;
  std::vector<ExternRef> externRefs_;
  std::pair<uint16_t, uint32_t> loc_{0, 0};
  unsigned operandIndex_ = 0;
  std::string pendingLabel_[8];
  bool pendingExtern_[8] = {};
  bool pendingLocal_[8] = {};
  bool frameParam_ = false;               // the instruction names a frame parameter (Symbol::frame)
  std::set<std::string> declared_;        // functions declared or defined so far
  std::map<std::string, uint32_t> functionIds_;  // their index in Module::functionNames
  // The current body's `.callprototype` labels (their parameter and return counts) and
  // `.calltargets` labels (their functions).
  std::map<std::string, std::pair<size_t, size_t>> prototypes_;
  std::map<std::string, std::vector<std::string>> callTargets_;
};

}  // namespace

namespace {

bool parse(const std::string& text, const std::string& name, Module* out, std::string* error, bool lenient,
           std::vector<std::string>* refusals) {
  *out = Module{};
  out->name = name;
  std::vector<Token> toks;
  std::string lexError;
  if (!tokenize(text, &toks, &lexError)) {
    *error = name + ":" + lexError.substr(5);  // "line N: msg" -> "name:N: msg"
    return false;
  }
  Parser p(std::move(toks), out, lenient, refusals);
  if (!p.run()) {
    *error = name + ":" + std::to_string(p.errorLine) + ": " + p.error;
    return false;
  }
  if (out->version.empty()) {
    *error = name + ": no .version directive (is this PTX?)";
    return false;
  }
  return true;
}

}  // namespace

bool parseModule(const std::string& text, const std::string& name, Module* out, std::string* error, bool lenient) {
  return parse(text, name, out, error, lenient, nullptr);
}

bool surveyModule(const std::string& text, const std::string& name, Module* out, std::string* error,
                  std::vector<std::string>* refusals) {
  refusals->clear();
  return parse(text, name, out, error, true, refusals);
}

bool extendKernel(const Module& module, Function* kernel, const Module& extra, const std::string& name, std::string* why) {
  // The extension must see the module as the kernel does: the same functions at the same
  // addresses, the same variables in the same places.
  if (extra.functionNames.size() < module.functionNames.size() ||
      !std::equal(module.functionNames.begin(), module.functionNames.end(), extra.functionNames.begin())) {
    *why = "its link declares the module's functions in another order (their addresses would differ)";
    return false;
  }
  bool sameVariables = extra.variables.size() == module.variables.size() && extra.moduleShared == module.moduleShared &&
                       extra.globalInit.size() == module.globalInit.size() && extra.constInit.size() == module.constInit.size();
  for (size_t v = 0; sameVariables && v < module.variables.size(); ++v) {
    const ModuleVariable& a = module.variables[v];
    const ModuleVariable& b = extra.variables[v];
    sameVariables = a.name == b.name && a.space == b.space && a.offset == b.offset && a.size == b.size;
  }
  if (!sameVariables) {
    *why = "its link lays out the module's variables differently (it names variables the kernel's link left out)";
    return false;
  }
  std::map<std::string, const Function*> defined;
  for (const Function& f : extra.functions)
    if (!f.isEntry) defined.emplace(f.name, &f);
  std::map<std::string, uint32_t> index;
  for (uint32_t c = 0; c < kernel->callees.size(); ++c) index.emplace(kernel->callees[c].name, c);
  const size_t first = kernel->callees.size();
  std::vector<const Function*> placed;  // of callees [first, ...); nullptr: a builtin
  uint32_t codeEnd = static_cast<uint32_t>(kernel->code.size());
  uint32_t regEnd = static_cast<uint32_t>(kernel->regTypes.size());
  uint32_t localEnd = kernel->localBytes;
  auto place = [&](const std::string& n) -> bool {
    if (index.count(n) != 0) return true;
    Callee c;
    c.name = n;
    auto dt = defined.find(n);
    if (dt != defined.end()) {
      const Function& g = *dt->second;
      placeAfter(g, &c, &codeEnd, &regEnd, &localEnd);
      placed.push_back(&g);
    } else {
      c.builtin = builtinNamed(n);
      if (c.builtin == Builtin::kNone) {
        auto rt = extra.refused.find(n);
        *why = rt != extra.refused.end() ? "'" + n + "' is not supported (" + rt->second + ")"
                                         : "'" + n + "' is declared but not defined in its link";
        return false;
      }
      placed.push_back(nullptr);
    }
    index.emplace(n, static_cast<uint32_t>(kernel->callees.size()));
    kernel->callees.push_back(std::move(c));
    return true;
  };
  if (defined.count(name) == 0) {
    auto rt = extra.refused.find(name);
    *why = rt != extra.refused.end() ? "it is not supported (" + rt->second + ")" : "its link does not define it";
    return false;
  }
  if (!place(name)) return false;
  // What the new functions call directly, in the order first called; their indirect calls find
  // their targets (or link them) when they run.
  for (size_t i = 0; i < placed.size(); ++i) {
    if (placed[i] == nullptr) continue;
    for (const CallSite& cs : placed[i]->calls)
      if (!cs.indirect && !place(cs.name)) return false;
  }
  // Recursive, conservatively: a new function from which direct calls among the new ones lead
  // back to itself, or from which they reach an indirect call (which may lead anywhere).
  for (size_t i = 0; i < placed.size(); ++i) {
    if (placed[i] == nullptr) continue;
    std::vector<bool> seen(placed.size(), false);
    std::vector<size_t> todo{i};
    bool recursive = false;
    while (!todo.empty() && !recursive) {
      const size_t x = todo.back();
      todo.pop_back();
      for (const CallSite& cs : placed[x]->calls) {
        if (cs.indirect) {
          recursive = true;
          break;
        }
        const uint32_t y = index.at(cs.name);
        if (y < first || placed[y - first] == nullptr) continue;
        if (y - first == i) recursive = true;
        if (!seen[y - first]) {
          seen[y - first] = true;
          todo.push_back(y - first);
        }
      }
    }
    kernel->callees[first + i].recursive = recursive;
  }
  // Their code, once each knows whether it is recursive (its locals in a frame of their own).
  for (size_t i = 0; i < placed.size(); ++i)
    if (placed[i] != nullptr) placeCode(kernel, *placed[i], kernel->callees[first + i], index);
  kernel->localBytes = localEnd;
  // Their addresses, for indirect calls: those the module takes.
  for (size_t n = 0; n < extra.functionNames.size(); ++n) {
    auto it = index.find(extra.functionNames[n]);
    if (it == index.end() || it->second < first || !(extra.addressTaken[n] || extra.functionNames[n] == name)) continue;
    const std::pair<uint64_t, uint32_t> e{kFunctionWindow + uint64_t{n} * kFunctionStride, it->second};
    kernel->indirect.insert(std::lower_bound(kernel->indirect.begin(), kernel->indirect.end(), e), e);
  }
  return true;
}

}  // namespace mcsim::ptx
