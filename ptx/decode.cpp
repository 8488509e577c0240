#include "ptx/decode.h"

#include <cstring>
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
      {"redux", Op::kRedux}, {"match", Op::kMatch}, {"elect", Op::kElect},
      {"mbarrier", Op::kMbarrier}, {"cp", Op::kCpAsync}, {"nanosleep", Op::kNanosleep},
      {"addc", Op::kAddc},   {"subc", Op::kSubc},     {"madc", Op::kMadc},
      {"mul24", Op::kMul24}, {"mad24", Op::kMad24},   {"sad", Op::kSad},
      {"dp4a", Op::kDp4a},   {"dp2a", Op::kDp2a},     {"set", Op::kSet},     {"isspacep", Op::kIsspacep},
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
      // A cluster of one CTA (mcsim launches no larger clusters): its shared::cluster window is
      // the CTA's own shared memory.
      {".shared::cluster", Space::kShared},
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

// redux.sync, match.sync, elect.sync (PTX ISA, "Parallel Synchronization and Communication
// Instructions: redux.sync, match.sync, elect.sync").
bool decodeWarpLevel(const std::vector<std::string>& mods, Instruction* in, std::string* error) {
  bool haveSync = false, haveOp = false, haveMode = false;
  std::vector<Type> ts;
  for (const std::string& m : mods) {
    auto bad = [&] { return fail(error, "unsupported modifier '" + m + "' in '" + in->text + "'"); };
    if (m == ".sync") {
      haveSync = true;
    } else if (auto t = types().find(m); t != types().end()) {
      ts.push_back(t->second);
    } else if (in->op == Op::kRedux && !haveOp && (m == ".add" || m == ".min" || m == ".max" || m == ".and" || m == ".or" || m == ".xor")) {
      in->atomOp = atomOps().at(m);
      haveOp = true;
    } else if (in->op == Op::kRedux && m == ".abs") {
      in->reduxAbs = true;
    } else if (in->op == Op::kRedux && m == ".NaN") {
      in->reduxNaN = true;
    } else if (in->op == Op::kMatch && !haveMode && (m == ".any" || m == ".all")) {
      in->matchAll = m == ".all";
      haveMode = true;
    } else {
      return bad();
    }
  }
  if (!haveSync) return fail(error, "'" + in->text + "' needs .sync");
  if (in->op == Op::kElect) {
    if (!ts.empty()) return fail(error, "'" + in->text + "' takes no type");
    in->type = Type::kB32;
    return true;
  }
  if (ts.size() != 1) return fail(error, "'" + in->text + "' needs one type");
  in->type = ts[0];
  const Type t = in->type;
  if (in->op == Op::kMatch) {
    if (!haveMode) return fail(error, "'" + in->text + "' needs .any or .all");
    if (t != Type::kB32 && t != Type::kB64) return fail(error, "'" + in->text + "': match.sync takes .b32 or .b64");
    return true;
  }
  if (!haveOp) return fail(error, "'" + in->text + "' needs an operator (.add, .min, .max, .and, .or, .xor)");
  const AtomOp op = in->atomOp;
  bool ok;
  if (t == Type::kF32) ok = op == AtomOp::kMin || op == AtomOp::kMax;  // sm_100a: .min/.max{.abs}{.NaN}.f32
  else if (op == AtomOp::kAnd || op == AtomOp::kOr || op == AtomOp::kXor) ok = t == Type::kB32;
  else ok = t == Type::kU32 || t == Type::kS32;
  if (!ok) return fail(error, "'" + in->text + "': redux.sync does not take this operator with ." + typeName(t));
  if ((in->reduxAbs || in->reduxNaN) && t != Type::kF32)
    return fail(error, "'" + in->text + "': .abs and .NaN are for redux.sync.min/max.f32");
  return true;
}

// mbarrier.<op> (PTX ISA, "Parallel Synchronization and Communication Instructions: mbarrier"):
// the object is 8 bytes of shared memory; .shared, .shared::cta and .shared::cluster (a cluster
// of one CTA) name it, or a generic address.
bool decodeMbarrier(const std::vector<std::string>& mods, Instruction* in, std::string* error) {
  static const std::map<std::string, MbarOp> ops = {
      {".init", MbarOp::kInit},           {".inval", MbarOp::kInval},         {".arrive", MbarOp::kArrive},
      {".arrive_drop", MbarOp::kArriveDrop}, {".test_wait", MbarOp::kTestWait}, {".try_wait", MbarOp::kTryWait},
      {".expect_tx", MbarOp::kExpectTx},  {".complete_tx", MbarOp::kCompleteTx}, {".pending_count", MbarOp::kPendingCount},
  };
  if (mods.empty() || ops.count(mods[0]) == 0)
    return fail(error, "'" + in->text + "': unknown mbarrier operation");
  in->mbar = ops.at(mods[0]);
  const MbarOp k = in->mbar;
  const bool arrive = k == MbarOp::kArrive || k == MbarOp::kArriveDrop;
  const bool wait = k == MbarOp::kTestWait || k == MbarOp::kTryWait;
  for (size_t i = 1; i < mods.size(); ++i) {
    const std::string& m = mods[i];
    if (m == ".b64") {
      in->type = Type::kB64;
    } else if (m == ".shared" || m == ".shared::cta" || m == ".shared::cluster") {
      in->space = Space::kShared;
    } else if (arrive && m == ".expect_tx" && !in->expectTx) {
      in->expectTx = true;
    } else if (arrive && m == ".noComplete") {
      in->noComplete = true;
    } else if (wait && m == ".parity") {
      in->parity = true;
    } else if (m == ".release" || m == ".relaxed" || m == ".acquire" || m == ".cta" || m == ".cluster") {
      // Orderings and scopes: every access is visible at once in the executor (docs/ptx.md).
    } else {
      return fail(error, "unsupported modifier '" + m + "' in '" + in->text + "'");
    }
  }
  if (in->type != Type::kB64) return fail(error, "'" + in->text + "' needs .b64");
  if (in->noComplete && in->expectTx) return fail(error, "'" + in->text + "': .noComplete and .expect_tx do not go together");
  return true;
}

// cp.async and cp.async.bulk (PTX ISA, "Data Movement and Conversion Instructions: cp.async,
// cp.async.commit_group, cp.async.wait_group / wait_all, cp.async.mbarrier.arrive, cp.async.bulk,
// cp.async.bulk.commit_group, cp.async.bulk.wait_group").
bool decodeCpAsync(const std::vector<std::string>& mods, Instruction* in, std::string* error) {
  if (mods.empty() || mods[0] != ".async") return fail(error, "unknown instruction '" + in->text + "'");
  size_t i = 1;
  auto has = [&](const char* m) { return i < mods.size() && mods[i] == m; };
  bool bulk = false;
  if (has(".bulk")) {
    bulk = true;
    ++i;
    if (has(".tensor") || has(".prefetch")) return fail(error, "instruction '" + in->text + "' is not implemented yet");
  }
  if (has(".commit_group")) {
    in->cpAsync = bulk ? CpAsyncOp::kBulkCommit : CpAsyncOp::kCommit;
    ++i;
  } else if (has(".wait_group")) {
    in->cpAsync = bulk ? CpAsyncOp::kBulkWait : CpAsyncOp::kWaitGroup;
    ++i;
    if (bulk && has(".read")) ++i;
  } else if (!bulk && has(".wait_all")) {
    in->cpAsync = CpAsyncOp::kWaitAll;
    ++i;
  } else if (!bulk && has(".mbarrier")) {
    ++i;
    if (!has(".arrive")) return fail(error, "'" + in->text + "' must be cp.async.mbarrier.arrive");
    ++i;
    in->cpAsync = CpAsyncOp::kMbarArrive;
    if (has(".noinc")) {
      in->noinc = true;
      ++i;
    }
    for (; i < mods.size(); ++i) {
      if (mods[i] == ".shared" || mods[i] == ".shared::cta") in->space = Space::kShared;
      else if (mods[i] == ".b64") in->type = Type::kB64;
      else return fail(error, "unsupported modifier '" + mods[i] + "' in '" + in->text + "'");
    }
    if (in->type != Type::kB64) return fail(error, "'" + in->text + "' needs .b64");
    return true;
  } else {
    in->cpAsync = bulk ? CpAsyncOp::kBulk : CpAsyncOp::kCopy;
    if (!bulk) {
      if (!has(".ca") && !has(".cg")) return fail(error, "'" + in->text + "' needs .ca or .cg");
      in->cg = mods[i] == ".cg";  // cp-size 16 only (checked with the operands)
      ++i;
    }
    unsigned spaces = 0;
    for (; i < mods.size(); ++i) {
      const std::string& m = mods[i];
      const bool shared = m == ".shared" || m == ".shared::cta" || m == ".shared::cluster";
      if (shared || m == ".global") {
        const Space sp = shared ? Space::kShared : Space::kGlobal;
        if (spaces == 0) in->space = sp;
        else if (spaces == 1) in->srcSpace = sp;
        else return fail(error, "'" + in->text + "' names more than two state spaces");
        ++spaces;
      } else if (bulk && m == ".mbarrier::complete_tx::bytes") {
        in->bulkMbar = true;
      } else if (bulk && m == ".bulk_group") {
      } else if (m == ".L2::cache_hint") {
        in->cacheHint = true;  // a cache-policy operand follows (ignored)
      } else if (!bulk && (m == ".L2::64B" || m == ".L2::128B" || m == ".L2::256B")) {
      } else if (m == ".multicast::cluster") {
        return fail(error, "'" + in->text + "': .multicast::cluster is not implemented yet (mcsim launches clusters of one CTA)");
      } else {
        return fail(error, "unsupported modifier '" + m + "' in '" + in->text + "'");
      }
    }
    if (spaces != 2) return fail(error, "'" + in->text + "' needs a destination and a source state space");
    const bool ok = bulk ? ((in->space == Space::kShared && in->srcSpace == Space::kGlobal && in->bulkMbar) ||
                            (in->space == Space::kShared && in->srcSpace == Space::kShared && in->bulkMbar) ||
                            (in->space == Space::kGlobal && in->srcSpace == Space::kShared && !in->bulkMbar))
                         : in->space == Space::kShared && in->srcSpace == Space::kGlobal;
    if (!ok) return fail(error, "'" + in->text + "': this combination of state spaces and completion is not a cp.async" +
                                    std::string(bulk ? ".bulk" : "") + " form");
    return true;
  }
  if (i != mods.size()) return fail(error, "unsupported modifier '" + mods[i] + "' in '" + in->text + "'");
  return true;
}

}  // namespace

bool decodeOpcode(const std::string& opcode, const std::vector<std::string>& mods, Instruction* in, std::string* error) {
  auto it = opcodes().find(opcode);
  if (it == opcodes().end()) {
    // PTX instructions the executor does not implement yet (docs/ptx.md): named as such, so that
    // a user sees a missing feature rather than a typo.
    static const std::set<std::string> later = {
        "call", "ldmatrix", "stmatrix", "mma", "wmma", "wgmma",
        "tex", "tld4", "suld", "sust", "sured", "prefetch", "prefetchu", "tanh", "fns",
        "cvt.pack", "griddepcontrol", "applypriority", "discard", "createpolicy", "getctarank",
        "stackrestore", "stacksave", "alloca", "pmevent", "brkpt", "vote.any", "bar.red", "setmaxnreg",
        "istypep", "szext", "bmsk", "copysign.f16", "st.async", "red.async", "cp.async", "tensormap"};
    if (later.count(opcode) != 0) return fail(error, "instruction '" + opcode + "' is not implemented yet");
    return fail(error, "unknown instruction '" + opcode + "'");
  }
  in->op = it->second;
  in->text = opcode;
  for (const std::string& m : mods) in->text += m;
  if (in->op == Op::kMultimem) return decodeMultimem(mods, in, error);
  if (in->op == Op::kRedux || in->op == Op::kMatch || in->op == Op::kElect) return decodeWarpLevel(mods, in, error);
  if (in->op == Op::kMbarrier) return decodeMbarrier(mods, in, error);
  if (in->op == Op::kCpAsync) return decodeCpAsync(mods, in, error);
  // Extended precision (PTX ISA, "Extended-Precision Integer Arithmetic Instructions"): add.cc,
  // sub.cc and mad.cc write the carry flag; addc, subc and madc read it (and write it with .cc).
  if (in->op == Op::kAddc || in->op == Op::kSubc || in->op == Op::kMadc) in->carryIn = true;
  for (const std::string& m : mods) {
    if (m != ".cc") continue;
    if (in->op == Op::kAdd) in->op = Op::kAddc;
    else if (in->op == Op::kSub) in->op = Op::kSubc;
    else if (in->op == Op::kMad) in->op = Op::kMadc;
    else if (in->op != Op::kAddc && in->op != Op::kSubc && in->op != Op::kMadc)
      return fail(error, "unsupported modifier '.cc' in '" + in->text + "'");
    in->carryOut = true;
  }
  const Op op = in->op;
  std::vector<Type> ts;
  bool haveMulMode = false;
  bool haveIdx = false;  // brx.idx
  bool ordering = false, wideScope = false, systemScope = false;  // Instruction::release, systemScope
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
    } else if (m == ".cc" && (op == Op::kAddc || op == Op::kSubc || op == Op::kMadc)) {
    } else if ((op == Op::kMadc || op == Op::kMul24 || op == Op::kMad24 || op == Op::kDp2a) && (m == ".lo" || m == ".hi")) {
      in->mulMode = m == ".lo" ? MulMode::kLo : MulMode::kHi;
      haveMulMode = true;
    } else if (op == Op::kPrmt && (m == ".f4e" || m == ".b4e" || m == ".rc8" || m == ".ecl" || m == ".ecr" || m == ".rc16")) {
      in->prmt = m == ".f4e" ? PrmtMode::kF4e : m == ".b4e" ? PrmtMode::kB4e : m == ".rc8" ? PrmtMode::kRc8
               : m == ".ecl" ? PrmtMode::kEcl : m == ".ecr" ? PrmtMode::kEcr : PrmtMode::kRc16;
    } else if (op == Op::kSet && comparisons().count(m) != 0) {
      in->cmp = comparisons().at(m);
    } else if (op == Op::kSet && (m == ".and" || m == ".or" || m == ".xor")) {
      in->boolOp = m == ".and" ? BoolOp::kAnd : m == ".or" ? BoolOp::kOr : BoolOp::kXor;
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
    } else if (spaces().count(m) != 0 && (op == Op::kLd || op == Op::kSt || op == Op::kAtom || op == Op::kRed || op == Op::kCvta ||
                                          op == Op::kIsspacep)) {
      in->space = spaces().at(m);
    } else if ((op == Op::kLd || op == Op::kSt || op == Op::kMov) && (m == ".v2" || m == ".v4")) {
      in->vec = m == ".v2" ? 2 : 4;
    } else if (ignoredModifiers().count(m) != 0) {
      // Kept for the node's timing of visibility (Instruction::release); no result depends on it.
      if (m == ".release" || m == ".acq_rel" || m == ".sc") ordering = true;
      if (m == ".gpu" || m == ".sys" || m == ".gl") wideScope = true;
      if (m == ".sys") systemScope = true;
    } else {
      return bad();
    }
  }
  in->release = wideScope && (op == Op::kMembar || (ordering && op == Op::kSt));
  in->systemScope = in->release && systemScope;
  if (op == Op::kCvt) {
    if (ts.size() != 2) return fail(error, "'" + in->text + "' needs a destination and a source type");
    in->type = ts[0];
    in->type2 = ts[1];
  } else if (op == Op::kSet) {
    // set.<cmp>.<dtype>.<stype>: compared as stype (`type`), the result as dtype (`type2`).
    if (ts.size() != 2) return fail(error, "'" + in->text + "' needs a destination and a source type");
    in->type = ts[1];
    in->type2 = ts[0];
    if (in->type2 != Type::kU32 && in->type2 != Type::kS32 && in->type2 != Type::kF32)
      return fail(error, "'" + in->text + "': set's destination type is .u32, .s32 or .f32");
  } else if (op == Op::kDp4a || op == Op::kDp2a) {
    // dp4a.<atype>.<btype>, dp2a.<mode>.<atype>.<btype> (.u32 or .s32 each)
    if (ts.size() != 2) return fail(error, "'" + in->text + "' needs two types");
    for (Type x : ts)
      if (x != Type::kU32 && x != Type::kS32) return fail(error, "'" + in->text + "': the types are .u32 or .s32");
    in->type = ts[0];
    in->type2 = ts[1];
    if (op == Op::kDp2a && !haveMulMode) return fail(error, "'" + in->text + "' needs .lo or .hi");
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
    case Op::kNanosleep:
      if (in->type != Type::kU32) return fail(error, "'" + in->text + "' needs .u32");
      break;
    case Op::kIsspacep:
      // isspacep.space p, a (PTX ISA, "Data Movement and Conversion Instructions: isspacep"): no type.
      if (in->type != Type::kNone || in->space == Space::kGeneric)
        return fail(error, "'" + in->text + "' needs a state space and takes no type");
      in->type = Type::kPred;
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
  if ((op == Op::kMadc || op == Op::kMul24 || op == Op::kMad24) && !haveMulMode)
    return fail(error, "'" + in->text + "' needs .lo or .hi");
  if ((op == Op::kAddc || op == Op::kSubc || op == Op::kMadc) &&
      in->type != Type::kU32 && in->type != Type::kS32 && in->type != Type::kU64 && in->type != Type::kS64)
    return fail(error, "'" + in->text + "': extended-precision arithmetic takes .u32, .s32, .u64 or .s64");
  if ((op == Op::kMul24 || op == Op::kMad24) && in->type != Type::kU32 && in->type != Type::kS32)
    return fail(error, "'" + in->text + "': 24-bit multiplication takes .u32 or .s32");
  if (op == Op::kMad24 && in->sat) return fail(error, "unsupported modifier '.sat' in '" + in->text + "'");
  if (op == Op::kSad && (isFloat(in->type) || typeBits(in->type) < 16))
    return fail(error, "'" + in->text + "': sad takes 16-, 32- or 64-bit integers");
  if (op == Op::kPrmt && in->type != Type::kB32) return fail(error, "'" + in->text + "' needs .b32");
  if (op == Op::kSet && isFloat(in->type) && in->type != Type::kF32 && in->type != Type::kF64)
    return fail(error, "'" + in->text + "': set compares integers, .f32 or .f64");
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

namespace {

// The operands of the asynchronous and warp-election instructions, against `shape`: one letter an
// operand, 'a' an address [..], 'd' a destination register, 's' a destination register or the
// sink `_`, 'v' a value (register, immediate or special register); `optional` letters may follow.
bool checkShape(const Instruction& in, const char* shape, const char* optional, std::string* error) {
  using K = Operand::Kind;
  const unsigned need = static_cast<unsigned>(std::strlen(shape)), more = static_cast<unsigned>(std::strlen(optional));
  if (in.nops < need || in.nops > need + more)
    return fail(error, "'" + in.text + "' takes " + std::to_string(need) + (more != 0 ? "-" + std::to_string(need + more) : "") +
                           " operands, not " + std::to_string(in.nops));
  for (unsigned i = 0; i < in.nops; ++i) {
    const char c = i < need ? shape[i] : optional[i - need];
    const Operand& o = in.ops[i];
    const bool ok = c == 'a'   ? o.kind == K::kAddr
                    : c == 'd' ? o.kind == K::kReg && !o.negate
                    : c == 's' ? (o.kind == K::kReg && !o.negate) || o.kind == K::kNone
                               : o.kind == K::kReg || o.kind == K::kImm || o.kind == K::kSpecial;
    if (!ok)
      return fail(error, "'" + in.text + "': operand " + std::to_string(i + 1) +
                             (c == 'a' ? " must be an address [..]" : c == 'v' ? " must be a register or a constant" : " must be a register"));
  }
  return true;
}

bool checkAsync(const Instruction& in, std::string* error) {
  using K = Operand::Kind;
  if (in.op == Op::kElect) return checkShape(in, "ssv", "", error);
  if (in.op == Op::kNanosleep) return checkShape(in, "v", "", error);
  if (in.op == Op::kMbarrier) {
    switch (in.mbar) {
      case MbarOp::kInit: return checkShape(in, "av", "", error);
      case MbarOp::kInval: return checkShape(in, "a", "", error);
      case MbarOp::kArrive: case MbarOp::kArriveDrop:
        // state|_, [addr] {, count}; .expect_tx and .noComplete need their count.
        return in.expectTx || in.noComplete ? checkShape(in, "sav", "", error) : checkShape(in, "sa", "v", error);
      case MbarOp::kTestWait: return checkShape(in, "dav", "", error);
      case MbarOp::kTryWait: return checkShape(in, "dav", "v", error);
      case MbarOp::kExpectTx: case MbarOp::kCompleteTx: return checkShape(in, "av", "", error);
      case MbarOp::kPendingCount: return checkShape(in, "dv", "", error);
    }
  }
  switch (in.cpAsync) {
    case CpAsyncOp::kCommit: case CpAsyncOp::kWaitAll: case CpAsyncOp::kBulkCommit: return checkShape(in, "", "", error);
    case CpAsyncOp::kWaitGroup: case CpAsyncOp::kBulkWait:
      if (!checkShape(in, "v", "", error)) return false;
      if (in.ops[0].kind != K::kImm) return fail(error, "'" + in.text + "': the group count must be a constant");
      return true;
    case CpAsyncOp::kMbarArrive: return checkShape(in, "a", "", error);
    case CpAsyncOp::kCopy: {
      // [dst], [src], cp-size {, src-size | ignore-src} {, cache-policy}
      if (!checkShape(in, "aav", in.cacheHint ? "vv" : "v", error)) return false;
      if (in.cacheHint && in.nops == 3) return fail(error, "'" + in.text + "' needs its cache-policy operand");
      const Operand& size = in.ops[2];
      if (size.kind != K::kImm || (size.imm != 4 && size.imm != 8 && size.imm != 16))
        return fail(error, "'" + in.text + "': cp-size must be 4, 8 or 16");
      if (in.cg && size.imm != 16) return fail(error, "'" + in.text + "': cp.async.cg copies 16 bytes");
      return true;
    }
    case CpAsyncOp::kBulk: {
      // [dst], [src], size {, [mbar]} {, cache-policy}
      if (!checkShape(in, in.bulkMbar ? "aava" : "aav", in.cacheHint ? "v" : "", error)) return false;
      if (in.cacheHint && in.nops == (in.bulkMbar ? 4 : 3)) return fail(error, "'" + in.text + "' needs its cache-policy operand");
      const Operand& size = in.ops[2];
      if (size.kind == K::kImm && size.imm % 16 != 0)
        return fail(error, "'" + in.text + "': the size must be a multiple of 16");
      return true;
    }
  }
  return true;
}

}  // namespace

bool checkOperands(const Instruction& in, std::string* error) {
  using K = Operand::Kind;
  if (in.op == Op::kMbarrier || in.op == Op::kCpAsync || in.op == Op::kElect || in.op == Op::kNanosleep) return checkAsync(in, error);
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
    case Op::kIsspacep: lo = hi = 2; break;
    case Op::kAtom: lo = 3; hi = 4; break;
    case Op::kMad: case Op::kFma: case Op::kSelp: case Op::kSlct: case Op::kBfe: case Op::kPrmt: case Op::kShf: lo = hi = 4; break;
    case Op::kMadc: case Op::kMad24: case Op::kSad: case Op::kDp4a: case Op::kDp2a: lo = hi = 4; break;
    case Op::kSet: lo = 3; hi = 4; break;    // d, a, b [, c]
    case Op::kMatch: lo = hi = 4; break;     // d, p|none, a, membermask
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
