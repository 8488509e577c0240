#include "ptx/decode.h"

#include <map>
#include <set>

namespace mcsim::ptx {

namespace {

const std::map<std::string, Op>& opcodes() {
  static const std::map<std::string, Op> m = {
      {"add", Op::kAdd},     {"sub", Op::kSub},       {"mul", Op::kMul},     {"mad", Op::kMad},
      {"div", Op::kDiv},     {"rem", Op::kRem},       {"min", Op::kMin},     {"max", Op::kMax},
      {"abs", Op::kAbs},     {"neg", Op::kNeg},       {"and", Op::kAnd},     {"or", Op::kOr},
      {"xor", Op::kXor},     {"not", Op::kNot},       {"cnot", Op::kCnot},   {"shl", Op::kShl},
      {"shr", Op::kShr},     {"popc", Op::kPopc},     {"clz", Op::kClz},     {"brev", Op::kBrev},
      {"bfe", Op::kBfe},     {"bfi", Op::kBfi},       {"prmt", Op::kPrmt},   {"bfind", Op::kBfind},
      {"lop3", Op::kLop3},   {"shf", Op::kShf},
      {"setp", Op::kSetp},   {"selp", Op::kSelp},     {"slct", Op::kSlct},   {"mov", Op::kMov},
      {"cvt", Op::kCvt},     {"cvta", Op::kCvta},     {"ld", Op::kLd},       {"st", Op::kSt},
      {"fma", Op::kFma},     {"sqrt", Op::kSqrt},     {"rcp", Op::kRcp},     {"rsqrt", Op::kRsqrt},
      {"ex2", Op::kEx2},     {"lg2", Op::kLg2},       {"sin", Op::kSin},     {"cos", Op::kCos},
      {"testp", Op::kTestp}, {"copysign", Op::kCopysign},
      {"atom", Op::kAtom},   {"red", Op::kRed},       {"bar", Op::kBar},     {"barrier", Op::kBar},
      {"shfl", Op::kShfl},   {"vote", Op::kVote},     {"activemask", Op::kActivemask},
      {"membar", Op::kMembar}, {"fence", Op::kMembar},
      {"bra", Op::kBra},     {"brx", Op::kBrx},       {"ret", Op::kRet},       {"exit", Op::kExit},   {"trap", Op::kTrap},
      {"multimem", Op::kMultimem},
  };
  return m;
}

const std::map<std::string, Type>& types() {
  static const std::map<std::string, Type> m = {
      {".pred", Type::kPred}, {".b8", Type::kB8},   {".b16", Type::kB16},   {".b32", Type::kB32},
      {".b64", Type::kB64},   {".u8", Type::kU8},   {".u16", Type::kU16},   {".u32", Type::kU32},
      {".u64", Type::kU64},   {".s8", Type::kS8},   {".s16", Type::kS16},   {".s32", Type::kS32},
      {".s64", Type::kS64},   {".f16", Type::kF16}, {".f16x2", Type::kF16x2}, {".bf16", Type::kBF16},
      {".bf16x2", Type::kBF16x2}, {".f32", Type::kF32}, {".f64", Type::kF64},
  };
  return m;
}

const std::map<std::string, Rounding>& roundings() {
  static const std::map<std::string, Rounding> m = {
      {".rn", Rounding::kRn},   {".rz", Rounding::kRz},   {".rm", Rounding::kRm},   {".rp", Rounding::kRp},
      {".rni", Rounding::kRni}, {".rzi", Rounding::kRzi}, {".rmi", Rounding::kRmi}, {".rpi", Rounding::kRpi},
  };
  return m;
}

const std::map<std::string, Space>& spaces() {
  static const std::map<std::string, Space> m = {
      {".global", Space::kGlobal}, {".shared", Space::kShared}, {".local", Space::kLocal},
      {".param", Space::kParam},   {".const", Space::kConst},   {".shared::cta", Space::kShared},
  };
  return m;
}

const std::map<std::string, Cmp>& comparisons() {
  static const std::map<std::string, Cmp> m = {
      {".eq", Cmp::kEq},   {".ne", Cmp::kNe},   {".lt", Cmp::kLt},   {".le", Cmp::kLe},   {".gt", Cmp::kGt},
      {".ge", Cmp::kGe},   {".lo", Cmp::kLo},   {".ls", Cmp::kLs},   {".hi", Cmp::kHi},   {".hs", Cmp::kHs},
      {".equ", Cmp::kEqu}, {".neu", Cmp::kNeu}, {".ltu", Cmp::kLtu}, {".leu", Cmp::kLeu}, {".gtu", Cmp::kGtu},
      {".geu", Cmp::kGeu}, {".num", Cmp::kNum}, {".nan", Cmp::kNan},
  };
  return m;
}

const std::map<std::string, AtomOp>& atomOps() {
  static const std::map<std::string, AtomOp> m = {
      {".add", AtomOp::kAdd}, {".min", AtomOp::kMin}, {".max", AtomOp::kMax}, {".exch", AtomOp::kExch},
      {".cas", AtomOp::kCas}, {".and", AtomOp::kAnd}, {".or", AtomOp::kOr},   {".xor", AtomOp::kXor},
      {".inc", AtomOp::kInc}, {".dec", AtomOp::kDec},
  };
  return m;
}

// Modifiers that order or cache memory accesses, or promise convergence. In a sequential
// interpreter every access is visible to every later one in program order, so these change no
// result (docs/ptx.md, "Memory ordering"); they are accepted and ignored.
const std::set<std::string>& ignoredModifiers() {
  static const std::set<std::string> s = {
      ".volatile", ".relaxed", ".acquire", ".release", ".acq_rel", ".sc", ".weak", ".mmio",
      ".cta", ".gpu", ".sys", ".cluster", ".gl",
      ".nc", ".ca", ".cg", ".cs", ".lu", ".cv", ".wb", ".wt",
      ".L1::no_allocate", ".L1::evict_normal", ".L1::evict_unchanged", ".L1::evict_first",
      ".L1::evict_last", ".L2::evict_normal", ".L2::evict_first", ".L2::evict_last",
      ".L2::64B", ".L2::128B", ".L2::256B",
      ".aligned", ".sync",
  };
  return s;
}

bool fail(std::string* error, const std::string& msg) {
  *error = msg;
  return false;
}

// multimem.ld_reduce / .st / .red (PTX ISA 9.7.9.14, "Data Movement and Conversion Instructions:
// multimem.ld_reduce, multimem.st, multimem.red"): the semantics, scope, state space, operator,
// accumulation precision, vector width and type, checked against the ISA's syntax and its tables
// of valid (.vec, type) and (.op, type) pairs, so that a form the hardware refuses is refused at
// load. The fp8 types (.e5m2, .e4m3 and their packed forms, sm_100a and newer) and .acc::f16 (which
// only they take) are not implemented.
bool decodeMultimem(const std::vector<std::string>& mods, Instruction* in, std::string* error) {
  if (mods.empty() || (mods[0] != ".ld_reduce" && mods[0] != ".st" && mods[0] != ".red"))
    return fail(error, "'" + in->text + "' must be multimem.ld_reduce, multimem.st or multimem.red");
  const MultimemOp kind = mods[0] == ".ld_reduce" ? MultimemOp::kLdReduce : mods[0] == ".st" ? MultimemOp::kSt : MultimemOp::kRed;
  in->multimem = kind;
  std::vector<Type> ts;
  bool haveOp = false, haveSem = false;
  for (size_t i = 1; i < mods.size(); ++i) {
    const std::string& m = mods[i];
    auto bad = [&] { return fail(error, "unsupported modifier '" + m + "' in '" + in->text + "'"); };
    if (auto t = types().find(m); t != types().end()) {
      ts.push_back(t->second);
    } else if (m == ".weak" || m == ".relaxed" || m == ".acquire" || m == ".release") {
      // .ldsem = {.relaxed, .acquire} (and .weak), .stsem = {.relaxed, .release} (and .weak),
      // .redsem = {.relaxed, .release}.
      const bool ok = m == ".relaxed" || (m == ".weak" && kind != MultimemOp::kRed) ||
                      (m == ".acquire" && kind == MultimemOp::kLdReduce) || (m == ".release" && kind != MultimemOp::kLdReduce);
      if (!ok || haveSem) return bad();
      haveSem = true;
    } else if (m == ".cta" || m == ".cluster" || m == ".gpu" || m == ".sys") {
    } else if (m == ".global") {
      in->space = Space::kGlobal;
    } else if (kind != MultimemOp::kSt && atomOps().count(m) != 0 && !haveOp) {
      in->atomOp = atomOps().at(m);
      if (in->atomOp != AtomOp::kAdd && in->atomOp != AtomOp::kMin && in->atomOp != AtomOp::kMax &&
          in->atomOp != AtomOp::kAnd && in->atomOp != AtomOp::kOr && in->atomOp != AtomOp::kXor)
        return bad();
      haveOp = true;
    } else if (kind == MultimemOp::kLdReduce && m == ".acc::f32") {
      in->accF32 = true;
    } else if (kind == MultimemOp::kLdReduce && m == ".acc::f16") {
      in->accF16 = true;
    } else if (m == ".e4m3" || m == ".e4m3x2" || m == ".e4m3x4" || m == ".e5m2" || m == ".e5m2x2" || m == ".e5m2x4") {
      // fp8 values, one a byte (PTX ISA 8.6, sm_100a and newer).
      in->mmFp8 = m[2] == '4' ? 1 : 2;
      ts.push_back(m.size() == 5 ? Type::kB8 : m[6] == '2' ? Type::kB16 : Type::kB32);
    } else if (m == ".v2" || m == ".v4" || m == ".v8") {
      in->vec = static_cast<uint8_t>(m[2] - '0');
    } else {
      return bad();
    }
  }
  if (ts.size() != 1) return fail(error, "'" + in->text + "' needs one type");
  const Type t = ts[0];
  in->type = t;
  if (kind != MultimemOp::kSt && !haveOp) return fail(error, "'" + in->text + "' needs an operator (.add, .min ...)");
  if (in->accF16 && in->mmFp8 == 0) return fail(error, "'" + in->text + "': .acc::f16 is for the fp8 types (.e4m3, .e5m2 ...)");
  if (in->mmFp8 != 0) {
    // The ISA's .type has the fp8 forms for ld_reduce and st; .redtype has none.
    if (kind == MultimemOp::kRed) return fail(error, "'" + in->text + "': multimem.red has no fp8 forms");
    if (in->accF32) return fail(error, "'" + in->text + "': .acc::f32 is for .f16, .f16x2, .bf16 and .bf16x2");
    const unsigned bits = typeBits(t) * in->vec;
    if (bits != 32 && bits != 64 && bits != 128)
      return fail(error, "'" + in->text + "': the vector must be 32, 64 or 128 bits, not " + std::to_string(bits));
    if (kind == MultimemOp::kLdReduce && in->atomOp != AtomOp::kAdd && in->atomOp != AtomOp::kMin && in->atomOp != AtomOp::kMax)
      return fail(error, "'" + in->text + "': fp8 multimem.ld_reduce takes .add, .min or .max");
    return true;
  }
  const bool half = t == Type::kF16 || t == Type::kBF16, packed = t == Type::kF16x2 || t == Type::kBF16x2;
  const bool fp = isFloat(t);
  const unsigned v = in->vec;
  if (fp) {
    // The ISA's table of .vec and base type: 32, 64 or 128 bits in all, .f64 without .vec.
    const bool ok = v == 1   ? (packed || t == Type::kF32 || t == Type::kF64)
                    : v == 8 ? half
                             : (half || packed || t == Type::kF32);
    if (!ok) return fail(error, "'" + in->text + "': " + (v == 1 ? std::string("no .vec") : ".v" + std::to_string(v)) +
                                    " is not allowed with ." + typeName(t));
  } else {
    if (v != 1) return fail(error, "'" + in->text + "': integer multimem takes no .vec");
    if (t != Type::kB32 && t != Type::kB64 && t != Type::kU32 && t != Type::kU64 && t != Type::kS32 && t != Type::kS64)
      return fail(error, "'" + in->text + "': ." + typeName(t) + " is not a multimem type");
  }
  if (in->accF32 && !half && !packed)
    return fail(error, "'" + in->text + "': .acc::f32 is for .f16, .f16x2, .bf16 and .bf16x2");
  if (kind != MultimemOp::kSt) {
    // The ISA's table of .op and base type (multimem.red's float form takes .add only).
    bool ok = false;
    switch (in->atomOp) {
      case AtomOp::kAdd: ok = fp || t == Type::kU32 || t == Type::kU64 || t == Type::kS32; break;
      case AtomOp::kAnd: case AtomOp::kOr: case AtomOp::kXor: ok = t == Type::kB32 || t == Type::kB64; break;
      case AtomOp::kMin: case AtomOp::kMax:
        ok = t == Type::kU32 || t == Type::kS32 || t == Type::kU64 || t == Type::kS64 ||
             ((half || packed) && kind == MultimemOp::kLdReduce);
        break;
      default: break;
    }
    static const char* const names[] = {"add", "min", "max", "exch", "cas", "and", "or", "xor", "inc", "dec"};
    if (!ok)
      return fail(error, "'" + in->text + "': ." + names[static_cast<unsigned>(in->atomOp)] + " is not defined on ." +
                             typeName(t) + " for multimem");
  }
  return true;
}

}  // namespace

bool decodeOpcode(const std::string& opcode, const std::vector<std::string>& mods, Instruction* in, std::string* error) {
  auto it = opcodes().find(opcode);
  if (it == opcodes().end()) {
    // PTX instructions the executor does not implement yet (docs/ptx.md): named as such, so that
    // a user sees a missing feature rather than a typo.
    static const std::set<std::string> later = {
        "call", "cp", "mbarrier", "redux", "match", "ldmatrix", "stmatrix", "mma", "wmma", "wgmma",
        "tex", "tld4", "suld", "sust", "sured", "prefetch", "prefetchu", "nanosleep", "addc", "subc", "madc",
        "mad24", "mul24", "sad", "dp4a", "dp2a", "set", "tanh", "fns", "isspacep",
        "cvt.pack", "elect", "griddepcontrol", "applypriority", "discard", "createpolicy", "getctarank",
        "stackrestore", "stacksave", "alloca", "pmevent", "brkpt", "vote.any", "bar.red", "setmaxnreg",
        "istypep", "szext", "bmsk", "copysign.f16", "st.async", "red.async", "cp.async", "tensormap"};
    if (later.count(opcode) != 0) return fail(error, "instruction '" + opcode + "' is not implemented yet");
    return fail(error, "unknown instruction '" + opcode + "'");
  }
  in->op = it->second;
  in->text = opcode;
  for (const std::string& m : mods) in->text += m;
  if (in->op == Op::kMultimem) return decodeMultimem(mods, in, error);
  const Op op = in->op;
  std::vector<Type> ts;
  bool haveMulMode = false;
  bool haveIdx = false;  // brx.idx
  for (const std::string& m : mods) {
    auto bad = [&] { return fail(error, "unsupported modifier '" + m + "' in '" + in->text + "'"); };
    if (auto t = types().find(m); t != types().end()) {
      ts.push_back(t->second);
    } else if (op == Op::kCvt && (m == ".e4m3x2" || m == ".e5m2x2") && in->fp8 == 0) {
      in->fp8 = m == ".e4m3x2" ? 1 : 2;
      in->fp8Dest = ts.empty();
      ts.push_back(Type::kB16);
    } else if (op == Op::kCvt && m == ".satfinite") {
      in->satfinite = true;
    } else if (auto r = roundings().find(m); r != roundings().end() && op != Op::kSetp) {
      in->rounding = r->second;
    } else if (m == ".ftz") {
      in->ftz = true;
    } else if (m == ".sat") {
      in->sat = true;
    } else if (m == ".approx") {
      in->approx = true;
    } else if (m == ".full") {
      in->approx = true;  // div.full.f32: within 2 ulp (the executor rounds correctly)
    } else if ((op == Op::kMul || op == Op::kMad) && (m == ".lo" || m == ".hi" || m == ".wide")) {
      in->mulMode = m == ".lo" ? MulMode::kLo : m == ".hi" ? MulMode::kHi : MulMode::kWide;
      haveMulMode = true;
    } else if (op == Op::kSetp && comparisons().count(m) != 0) {
      in->cmp = comparisons().at(m);
    } else if (op == Op::kSetp && (m == ".and" || m == ".or" || m == ".xor")) {
      in->boolOp = m == ".and" ? BoolOp::kAnd : m == ".or" ? BoolOp::kOr : BoolOp::kXor;
    } else if ((op == Op::kAtom || op == Op::kRed) && atomOps().count(m) != 0) {
      in->atomOp = atomOps().at(m);
    } else if (op == Op::kShfl && (m == ".up" || m == ".down" || m == ".bfly" || m == ".idx")) {
      in->shflMode = m == ".up" ? ShflMode::kUp : m == ".down" ? ShflMode::kDown : m == ".bfly" ? ShflMode::kBfly : ShflMode::kIdx;
    } else if (op == Op::kVote && (m == ".all" || m == ".any" || m == ".uni" || m == ".ballot")) {
      in->voteMode = m == ".all" ? VoteMode::kAll : m == ".any" ? VoteMode::kAny : m == ".uni" ? VoteMode::kUni : VoteMode::kBallot;
    } else if (op == Op::kBar && m == ".arrive") {
      in->barMode = BarMode::kArrive;
    } else if (op == Op::kBar && m == ".red") {
      in->barMode = BarMode::kRed;
    } else if (op == Op::kBar && in->barMode == BarMode::kRed && (m == ".and" || m == ".or" || m == ".popc")) {
      in->boolOp = m == ".and" ? BoolOp::kAnd : m == ".or" ? BoolOp::kOr : BoolOp::kNone;
    } else if (op == Op::kBar && m == ".warp" && in->text.rfind("bar.", 0) == 0) {
      in->barMode = BarMode::kWarpSync;
    } else if (op == Op::kBfind && m == ".shiftamt") {
      in->shiftAmt = true;
    } else if (op == Op::kTestp && (m == ".finite" || m == ".infinite" || m == ".number" || m == ".notanumber" ||
                                   m == ".normal" || m == ".subnormal")) {
      in->testpMode = m == ".finite"     ? TestpMode::kFinite
                      : m == ".infinite" ? TestpMode::kInfinite
                      : m == ".number"   ? TestpMode::kNumber
                      : m == ".notanumber" ? TestpMode::kNotANumber
                      : m == ".normal"   ? TestpMode::kNormal
                                         : TestpMode::kSubnormal;
    } else if (op == Op::kCvta && m == ".to") {
      in->cvtaTo = true;
    } else if (op == Op::kMembar && m == ".proxy") {
      // fence.proxy.<kind>: orders proxies; nothing to order in a sequential interpreter.
    } else if (op == Op::kMembar && (m == ".alias" || m == ".async" || m == ".generic" || m == ".tensormap")) {
    } else if (op == Op::kShf && (m == ".l" || m == ".r")) {
      in->shfLeft = m == ".l";
    } else if (op == Op::kShf && (m == ".wrap" || m == ".clamp")) {
      in->shfClamp = m == ".clamp";
    } else if ((op == Op::kBra || op == Op::kBrx) && m == ".uni") {
      in->uniform = true;
    } else if (op == Op::kBrx && m == ".idx") {
      haveIdx = true;
    } else if (spaces().count(m) != 0 && (op == Op::kLd || op == Op::kSt || op == Op::kAtom || op == Op::kRed || op == Op::kCvta)) {
      in->space = spaces().at(m);
    } else if ((op == Op::kLd || op == Op::kSt || op == Op::kMov) && (m == ".v2" || m == ".v4")) {
      in->vec = m == ".v2" ? 2 : 4;
    } else if (ignoredModifiers().count(m) != 0) {
    } else {
      return bad();
    }
  }
  if (op == Op::kCvt) {
    if (ts.size() != 2) return fail(error, "'" + in->text + "' needs a destination and a source type");
    in->type = ts[0];
    in->type2 = ts[1];
  } else if (op == Op::kSetp || op == Op::kSlct) {
    // setp.<cmp>.<type>; slct.<dtype>.<ctype>
    if (ts.empty()) return fail(error, "'" + in->text + "' has no type");
    in->type = ts[0];
    in->type2 = ts.size() > 1 ? ts[1] : ts[0];
  } else if (ts.size() > 1) {
    return fail(error, "'" + in->text + "' names more than one type");
  } else if (!ts.empty()) {
    in->type = ts[0];
  }
  // Instructions that need a type.
  switch (op) {
    case Op::kBra: case Op::kRet: case Op::kExit: case Op::kTrap: case Op::kBar: case Op::kMembar: case Op::kShfl:
    case Op::kVote: case Op::kActivemask:
      break;
    case Op::kBrx:
      // brx.idx{.uni} index, tlist (PTX ISA, "Control Flow Instructions: brx.idx"): no type.
      if (!haveIdx) return fail(error, "'" + in->text + "' needs .idx");
      if (in->type != Type::kNone) return fail(error, "'" + in->text + "' takes no type");
      break;
    default:
      if (in->type == Type::kNone) return fail(error, "'" + in->text + "' has no type");
  }
  if ((op == Op::kMul || op == Op::kMad) && !isFloat(in->type) && !haveMulMode)
    return fail(error, "'" + in->text + "' needs .lo, .hi or .wide");
  if (in->vec > 1 && op == Op::kMov) return fail(error, "unsupported modifier '.v" + std::to_string(in->vec) + "' in '" + in->text + "'");
  // Not implemented yet: refused at load so that a kernel never fails half-way through.
  const Type t = in->type;
  const bool packed = t == Type::kF16x2 || t == Type::kBF16x2;
  const bool half = t == Type::kF16 || t == Type::kBF16 || packed;
  if (half && op != Op::kMov && op != Op::kLd && op != Op::kSt && op != Op::kCvt && op != Op::kAdd && op != Op::kSub &&
      op != Op::kMul && op != Op::kFma && op != Op::kNeg && op != Op::kAbs && op != Op::kMin && op != Op::kMax)
    return fail(error, "'" + in->text + "': f16/bf16 forms of " + opName(op) + " are not implemented");
  if (op == Op::kCvt && (in->type == Type::kF16 || in->type == Type::kBF16) && in->rounding != Rounding::kRn &&
      isFloat(in->type2))
    return fail(error, "'" + in->text + "': conversions to f16/bf16 are implemented with .rn only");
  if (op == Op::kCvt && (in->type == Type::kF16 || in->type == Type::kBF16) && in->type2 == Type::kF64)
    return fail(error, "'" + in->text + "': conversions from f64 to f16/bf16 are not implemented");
  // cvt.rn.f16x2.f32 / cvt.rn.bf16x2.f32 d, a, b (two f32 values packed, a in the upper half) is
  // implemented; the other packed conversions are not.
  const bool packFromF32 = packed && in->type2 == Type::kF32 && in->rounding == Rounding::kRn && !in->sat && !in->ftz;
  // fp8 pairs: cvt.rn.f16x2.{e4m3x2,e5m2x2} d, a; cvt.rn.satfinite.{e4m3x2,e5m2x2}.f16x2 d, a and
  // .f32 d, a, b (PTX ISA, cvt: .satfinite is required for an fp8 destination).
  if (op == Op::kCvt && in->fp8 != 0) {
    const bool ok = in->rounding == Rounding::kRn && !in->sat && !in->ftz &&
                    (in->fp8Dest ? in->satfinite && (in->type2 == Type::kF16x2 || in->type2 == Type::kF32)
                                 : !in->satfinite && in->type == Type::kF16x2);
    if (!ok) return fail(error, "'" + in->text + "': this fp8 conversion is not implemented");
  } else if (op == Op::kCvt && in->satfinite) {
    return fail(error, "unsupported modifier '.satfinite' in '" + in->text + "'");
  } else if ((op == Op::kCvt) && !packFromF32 && (packed || in->type2 == Type::kF16x2 || in->type2 == Type::kBF16x2)) {
    return fail(error, "'" + in->text + "': packed conversions are not implemented");
  }
  if ((op == Op::kAtom || op == Op::kRed) && half)
    return fail(error, "'" + in->text + "': f16/bf16 atomics are not implemented");
  if (op == Op::kVote && in->voteMode == VoteMode::kUni && in->type == Type::kNone) in->type = Type::kPred;
  if (op == Op::kBar && in->barMode == BarMode::kRed &&
      !(in->boolOp == BoolOp::kNone ? in->type == Type::kU32 : in->type == Type::kPred))
    return fail(error, "'" + in->text + "' needs .popc.u32, .and.pred or .or.pred");
  return true;
}

bool checkOperands(const Instruction& in, std::string* error) {
  using K = Operand::Kind;
  unsigned lo = 0, hi = 0;
  switch (in.op) {
    case Op::kRet: case Op::kExit: case Op::kTrap: case Op::kMembar: lo = hi = 0; break;
    case Op::kActivemask: lo = hi = 1; break;
    case Op::kBra: lo = hi = 1; break;
    case Op::kBrx: lo = hi = 2; break;
    case Op::kBar: lo = 1; hi = 2; break;
    case Op::kAbs: case Op::kNeg: case Op::kNot: case Op::kCnot: case Op::kPopc: case Op::kClz: case Op::kBrev:
    case Op::kBfind: case Op::kMov: case Op::kCvt: case Op::kCvta: case Op::kSqrt: case Op::kRcp: case Op::kRsqrt:
    case Op::kEx2: case Op::kLg2: case Op::kSin: case Op::kCos: case Op::kTestp: case Op::kLd: case Op::kSt:
      lo = hi = 2; break;
    case Op::kRed: case Op::kMultimem: lo = hi = 2; break;
    case Op::kAtom: lo = 3; hi = 4; break;
    case Op::kMad: case Op::kFma: case Op::kSelp: case Op::kSlct: case Op::kBfe: case Op::kPrmt: case Op::kShf: lo = hi = 4; break;
    case Op::kLop3: lo = hi = 5; break;
    case Op::kBfi: lo = hi = 5; break;
    case Op::kSetp: lo = 4; hi = 5; break;   // p, q|none, a, b [, c]
    case Op::kShfl: lo = hi = 6; break;      // d, p|none, a, b, c, membermask
    case Op::kVote: lo = hi = 3; break;      // d, a, membermask
    default: lo = hi = 3; break;
  }
  if (in.op == Op::kCvt && (in.type == Type::kF16x2 || in.type == Type::kBF16x2) && in.fp8 == 0) lo = hi = 3;  // d, a, b
  if (in.op == Op::kCvt && in.fp8Dest && in.type2 == Type::kF32) lo = hi = 3;  // d, a, b
  if (in.op == Op::kBar && in.barMode == BarMode::kRed) { lo = 3; hi = 4; }  // d, a, [b,] c
  if (in.nops < lo || in.nops > hi)
    return fail(error, "'" + in.text + "' takes " + std::to_string(lo) + (hi != lo ? "-" + std::to_string(hi) : "") +
                           " operands, not " + std::to_string(in.nops));
  const bool mmLoad = in.op == Op::kMultimem && in.multimem == MultimemOp::kLdReduce;
  const bool isStore = in.op == Op::kSt || in.op == Op::kRed || (in.op == Op::kMultimem && !mmLoad);
  for (unsigned i = 0; i < in.nops; ++i) {
    const Operand& o = in.ops[i];
    const bool wantsAddr = ((in.op == Op::kLd || in.op == Op::kAtom || mmLoad) && i == 1) || (isStore && i == 0);
    if (wantsAddr != (o.kind == K::kAddr))
      return fail(error, "'" + in.text + "': operand " + std::to_string(i + 1) + (wantsAddr ? " must be an address [..]" : " cannot be an address"));
    if (o.kind == K::kLabel && in.op != Op::kBra) return fail(error, "'" + in.text + "': a label is not a value");
    if (o.kind == K::kVec && !(((in.op == Op::kLd || mmLoad) && i == 0) || ((in.op == Op::kSt || in.op == Op::kMultimem) && i == 1) ||
                               in.op == Op::kMov))
      return fail(error, "'" + in.text + "': a vector operand is not allowed here");
  }
  if (in.op == Op::kBra && in.ops[0].kind != K::kLabel) return fail(error, "'" + in.text + "' needs a label");
  if (in.op == Op::kBrx && (in.ops[0].kind != K::kReg || in.ops[1].kind != K::kTargets))
    return fail(error, "'" + in.text + "' needs an index register and the label of a .branchtargets list");
  const bool writesFirst = !(isStore || in.op == Op::kBra || in.op == Op::kBrx || (in.op == Op::kBar && in.barMode != BarMode::kRed));
  if (writesFirst && in.nops > 0 && in.ops[0].kind != K::kReg && in.ops[0].kind != K::kVec)
    return fail(error, "'" + in.text + "': the destination must be a register");
  if ((in.op == Op::kLd || in.op == Op::kSt || in.op == Op::kMultimem) && in.vec > 1) {
    const Operand& v = in.ops[in.op == Op::kLd || mmLoad ? 0 : 1];
    if (v.kind != K::kVec || v.vecCount != in.vec)
      return fail(error, "'" + in.text + "' needs a vector of " + std::to_string(in.vec) + " registers");
  }
  return true;
}

}  // namespace mcsim::ptx
