// The executable form of a PTX module: what the parser (ptx/parser.h) builds and the executor
// (ptx/executor.h) runs. Everything textual is resolved at load: registers are slots, labels are
// instruction indices, symbols are addresses in their state space, and each instruction's
// modifiers are decoded into fields, so that execution never looks at a string.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace mcsim::ptx {

// Fundamental types (PTX ISA, "Fundamental Types"). kPred is the predicate register type.
enum class Type : uint8_t {
  kNone, kPred,
  kB8, kB16, kB32, kB64,
  kU8, kU16, kU32, kU64,
  kS8, kS16, kS32, kS64,
  kF16, kF16x2, kBF16, kBF16x2, kF32, kF64,
};
unsigned typeBits(Type t);
inline unsigned typeBytes(Type t) { return typeBits(t) / 8; }
bool isSigned(Type t);
bool isFloat(Type t);  // f16, bf16, f32, f64 and the packed forms
const char* typeName(Type t);

// State spaces. kGeneric: an address that the executor places by its window (ptx/address_map.h).
enum class Space : uint8_t { kGeneric, kGlobal, kShared, kLocal, kParam, kConst };
const char* spaceName(Space s);

enum class Op : uint8_t {
  // integer and bit operations
  kAdd, kSub, kMul, kMad, kDiv, kRem, kMin, kMax, kAbs, kNeg,
  kAnd, kOr, kXor, kNot, kCnot, kShl, kShr, kPopc, kClz, kBrev, kBfe, kBfi, kPrmt, kBfind, kLop3, kShf,
  // comparison and selection
  kSetp, kSelp, kSlct,
  // data movement and conversion
  kMov, kCvt, kCvta, kLd, kSt,
  // floating point (add/sub/mul/min/max/abs/neg/div above are shared with the integer forms)
  kFma, kSqrt, kRcp, kRsqrt, kEx2, kLg2, kSin, kCos, kTestp, kCopysign,
  // atomics and synchronisation
  kAtom, kRed, kBar, kShfl, kVote, kActivemask, kMembar,
  // control
  kBra, kBrx, kRet, kExit, kTrap, kCall,
  // multimem.ld_reduce / .st / .red on a multicast address (Instruction::multimem says which)
  kMultimem,
  // warp-level: redux.sync (its operator in Instruction::atomOp), match.sync, elect.sync
  kRedux, kMatch, kElect,
  // mbarrier.* (Instruction::mbar says which) and cp.async / cp.async.bulk (Instruction::cpAsync)
  kMbarrier, kCpAsync, kNanosleep,
  // extended-precision arithmetic through the carry flag: add.cc / addc, sub.cc / subc, mad.cc /
  // madc (Instruction::carryIn, carryOut), run by the executor, which keeps each thread's CC.CF
  kAddc, kSubc, kMadc,
  // 24-bit multiply, sum of absolute differences, dot products, compare-and-set (pure arithmetic)
  kMul24, kMad24, kSad, kDp4a, kDp2a, kSet,
  // isspacep.<space> p, a: whether generic address a is in the space (Instruction::space)
  kIsspacep,
};
const char* opName(Op op);

enum class Rounding : uint8_t { kNone, kRn, kRz, kRm, kRp, kRni, kRzi, kRmi, kRpi };
enum class MulMode : uint8_t { kLo, kHi, kWide };
enum class Cmp : uint8_t { kEq, kNe, kLt, kLe, kGt, kGe, kLo, kLs, kHi, kHs, kEqu, kNeu, kLtu, kLeu, kGtu, kGeu, kNum, kNan };
enum class BoolOp : uint8_t { kNone, kAnd, kOr, kXor };
enum class AtomOp : uint8_t { kAdd, kMin, kMax, kExch, kCas, kAnd, kOr, kXor, kInc, kDec };
enum class ShflMode : uint8_t { kUp, kDown, kBfly, kIdx };
enum class VoteMode : uint8_t { kAll, kAny, kUni, kBallot };
// kWarpSync: bar.warp.sync (docs/ptx.md: nothing to wait for under min-PC scheduling). kRed:
// bar.red / barrier.red, a bar.sync that reduces a predicate over the arriving threads (.popc.u32
// counts, .and.pred / .or.pred in Instruction::boolOp).
enum class BarMode : uint8_t { kSync, kArrive, kWarpSync, kRed };
// The three multimem instructions (PTX ISA 9.7.9.14); their operator is Instruction::atomOp.
enum class MultimemOp : uint8_t { kLdReduce, kSt, kRed };
// mbarrier.<op> (PTX ISA, "Parallel Synchronization and Communication Instructions: mbarrier").
enum class MbarOp : uint8_t { kInit, kInval, kArrive, kArriveDrop, kTestWait, kTryWait, kExpectTx, kCompleteTx, kPendingCount };
// cp.async (PTX ISA, "Data Movement and Conversion Instructions: cp.async", "cp.async.bulk" ...).
enum class CpAsyncOp : uint8_t { kCopy, kCommit, kWaitGroup, kWaitAll, kMbarArrive, kBulk, kBulkCommit, kBulkWait };
// prmt's modes (PTX ISA, prmt): the default (a selector nibble a byte), and the five fixed patterns.
enum class PrmtMode : uint8_t { kDefault, kF4e, kB4e, kRc8, kEcl, kEcr, kRc16 };
enum class TestpMode : uint8_t { kFinite, kInfinite, kNumber, kNotANumber, kNormal, kSubnormal };

// Special registers (PTX ISA, "Special Registers"); the vector ones take a component .x/.y/.z.
enum class Special : uint8_t {
  kTid, kNtid, kCtaid, kNctaid, kLaneid, kWarpid, kNwarpid, kSmid, kNsmid, kGridid,
  kLanemaskEq, kLanemaskLt, kLanemaskLe, kLanemaskGt, kLanemaskGe,
  kClock, kClock64, kGlobaltimer, kDynamicSmemSize, kTotalSmemSize,
};

constexpr uint32_t kNoReg = 0xffffffffu;

// Generic addressing (PTX ISA, "Generic Addressing"): the windows through which a generic
// address reaches the state spaces that are not global. Far above any device allocation; a
// generic address outside them is a global address. .global variables of a module live in the
// executor's own storage at kModuleGlobalWindow (a global address too) until a driver places
// them in device memory.
constexpr uint64_t kSharedWindow = 0xfe00000000000000ull;
constexpr uint64_t kLocalWindow = 0xfd00000000000000ull;
constexpr uint64_t kModuleGlobalWindow = 0xfc00000000000000ull;
constexpr uint64_t kConstWindow = 0xfb00000000000000ull;
constexpr uint64_t kParamWindow = 0xfa00000000000000ull;
constexpr uint64_t kWindowSize = 0x0100000000000000ull;
// Function addresses (`mov.u64 %rd, f;`, a `.global .u64` initialiser naming a function): the
// module's n-th declared function (Module::functionNames) is at kFunctionWindow + n *
// kFunctionStride. Not memory: an indirect call (`call %rd, ...`) takes such an address, and any
// access through one is an illegal address as any other address outside device memory.
constexpr uint64_t kFunctionWindow = 0xf900000000000000ull;
constexpr uint64_t kFunctionStride = 16;

struct VecElem {
  bool isImm = false;
  bool sink = false;  // `_`: a destination that is discarded
  uint32_t reg = kNoReg;
  uint64_t imm = 0;
};

struct Operand {
  // kTargets: a `.branchtargets` list (brx.idx); `target` indexes Function::targetLists.
  enum class Kind : uint8_t { kNone, kReg, kImm, kSpecial, kAddr, kVec, kLabel, kTargets };
  Kind kind = Kind::kNone;
  bool negate = false;    // `!p` for a predicate source
  // An address in a recursive function's local memory (Function::localRefs of a Callee that is
  // `recursive`): each activation has its own frame, so the executor adds the lane's frame offset.
  bool frame = false;
  Special special = Special::kTid;
  uint8_t component = 0;  // 0..2 for .x/.y/.z
  uint8_t vecCount = 0;
  uint32_t reg = kNoReg;  // register slot; for kAddr the base register (kNoReg: none)
  uint64_t imm = 0;       // immediate bits; for kAddr the offset (symbol address folded in)
  uint32_t target = 0;    // kLabel: instruction index
  VecElem vec[8];  // .v8 (multimem's f16/bf16 vectors) is the widest
};

// One instruction with its modifiers decoded. `type` is the instruction's type (the destination
// type for cvt, the source type for mul.wide); `type2` the second type where PTX names two.
struct Instruction {
  Op op = Op::kMov;
  Type type = Type::kNone;
  Type type2 = Type::kNone;
  Space space = Space::kGeneric;
  Rounding rounding = Rounding::kNone;
  MulMode mulMode = MulMode::kLo;
  Cmp cmp = Cmp::kEq;
  BoolOp boolOp = BoolOp::kNone;
  AtomOp atomOp = AtomOp::kAdd;
  ShflMode shflMode = ShflMode::kIdx;
  VoteMode voteMode = VoteMode::kAll;
  BarMode barMode = BarMode::kSync;
  TestpMode testpMode = TestpMode::kFinite;
  MultimemOp multimem = MultimemOp::kLdReduce;
  bool accF32 = false;      // multimem.ld_reduce .acc::f32: f16/bf16 values accumulate in f32
  bool accF16 = false;      // multimem.ld_reduce .acc::f16: fp8 values accumulate in f16
  // multimem on fp8 (.e4m3, .e5m2 and their x2 / x4 packings): 1 e4m3, 2 e5m2; `type` is then
  // .b8 / .b16 / .b32, the packing's width (every byte one value).
  uint8_t mmFp8 = 0;
  MbarOp mbar = MbarOp::kInit;
  CpAsyncOp cpAsync = CpAsyncOp::kCopy;
  PrmtMode prmt = PrmtMode::kDefault;
  bool noComplete = false;  // mbarrier.arrive(_drop).noComplete
  bool expectTx = false;    // mbarrier.arrive(_drop).expect_tx
  bool parity = false;      // mbarrier.test_wait / try_wait .parity
  bool noinc = false;       // cp.async.mbarrier.arrive.noinc
  bool bulkMbar = false;    // cp.async.bulk ... .mbarrier::complete_tx::bytes (else .bulk_group)
  Space srcSpace = Space::kGeneric;  // cp.async(.bulk): the source's space (`space` is the destination's)
  bool carryIn = false, carryOut = false;  // addc/subc/madc read CC.CF; .cc writes it
  bool matchAll = false;    // match.all (else match.any)
  bool cg = false;          // cp.async.cg (else .ca)
  bool cacheHint = false;   // .L2::cache_hint: a cache-policy operand follows (ignored)
  bool reduxAbs = false, reduxNaN = false;  // redux.sync .min/.max .f32: .abs, .NaN
  bool ftz = false, sat = false, approx = false;
  bool cvtaTo = false;      // cvta.to.<space> (generic -> space) rather than cvta.<space>
  bool uniform = false;     // bra.uni: the program promises that the branch does not diverge
  bool shfLeft = false;     // shf.l (else shf.r)
  bool shfClamp = false;    // shf .clamp (else .wrap)
  bool shiftAmt = false;    // bfind.shiftamt: the shift that brings the found bit to the top
  // cvt with an fp8 pair (.e4m3x2 / .e5m2x2), held in a 16-bit register: 1 e4m3, 2 e5m2; whether
  // it is the destination (then .satfinite, required, clamps to the largest finite value).
  uint8_t fp8 = 0;
  bool fp8Dest = false;
  bool satfinite = false;   // cvt .satfinite
  uint8_t vec = 1;          // ld/st/mov/multimem vector width
  // Memory ordering at a scope beyond the CTA: a st .release (or .acq_rel, .sc) at .gpu or .sys,
  // or a fence / membar at .gpu, .gl or .sys (docs/ptx.md, "On the node": the store after it is
  // seen once the writes before it have landed).
  bool release = false;
  // ... and whether that scope is .sys (a fence's cost depends on it: docs/ptx.md, "Fences").
  bool systemScope = false;
  uint32_t guard = kNoReg;  // guard predicate slot, kNoReg when unguarded
  bool guardNegated = false;
  uint8_t nops = 0;
  Operand ops[6];
  uint32_t line = 0;        // line in the PTX text
  uint16_t srcFile = 0;     // from the last .loc: file number (0: none) and line
  uint32_t srcLine = 0;
  std::string text;         // the opcode with its modifiers, for reports ("ld.global.v2.f32")
};

struct Param {
  std::string name;
  uint32_t offset = 0;
  uint32_t size = 0;
  uint32_t align = 0;
};

// Functions the executor provides itself, called as nvcc calls them (`.extern .func`).
enum class Builtin : uint8_t {
  kNone,
  kVprintf,     // vprintf(format, args): device printf (docs/ptx.md, "printf")
  kAssertFail,  // __assertfail(message, file, line, function, charSize): a failed assert
  // The device heap (docs/ptx.md, "malloc and free"): malloc(size), free(ptr), and
  // __cuda_syscall_aligned_malloc(size, align), which nvcc emits for __nv_aligned_device_malloc.
  kMalloc,
  kFree,
  kAlignedMalloc,
};

// A module whose kernels call malloc/free gets a variable of this name in its .global space (16
// bytes: the device heap's address and size, both 0 until whoever places the module says where
// the heap is: the driver, at the module's first launch in a context; Module::heapVariable).
constexpr const char* kDeviceHeapVariable = "__mcsim_device_heap";

// A `call` as the parser reads it: the callee and the caller's `.param` variables that carry the
// arguments and receive the return values (offsets and sizes in the caller's local memory, where
// a body's `.param` variables live). Linking (below) sets `callee`. An indirect call (through a
// register holding a function's address, with a `.callprototype` or `.calltargets` label) has
// `indirect` set, the register in its instruction's ops[0].reg, the label in `name`, and no
// callee: the executor finds it by the address (Function::indirect).
struct CallSite {
  std::string name;
  bool indirect = false;
  uint32_t line = 0;
  std::vector<std::pair<uint32_t, uint32_t>> args, rets;  // (local offset, bytes)
  uint32_t callee = 0;  // after linking: index in Function::callees
  bool inFrame = false;  // the caller is recursive: args and rets are in the lane's current frame
};

// A function placed in a linked kernel (Function::callees): where its code, registers and local
// memory (its `.local` variables and its parameters) start in the kernel's.
struct Callee {
  std::string name;
  Builtin builtin = Builtin::kNone;
  uint32_t entryPc = 0;
  uint32_t regBase = 0, regCount = 0;
  uint32_t localBase = 0, localBytes = 0;
  // On a cycle of calls: each activation's local memory is a frame of its own on the lane's stack
  // (its addresses distinct from every other activation's), and a call saves its registers.
  bool recursive = false;
  std::vector<std::pair<uint32_t, uint32_t>> params, returns;  // (local offset in the kernel's, bytes)
};

struct Function {
  std::string name;
  bool isEntry = false;
  uint32_t line = 0;
  // A kernel's parameters (offsets in its parameter space); a device function's (offsets in its
  // local memory, as its return parameters `returns`).
  std::vector<Param> params;
  std::vector<Param> returns;
  std::vector<CallSite> calls;   // a call instruction's ops[0].target indexes these
  // The `.branchtargets` lists of brx.idx (instruction indices), which ops[1].target indexes.
  std::vector<std::vector<uint32_t>> targetLists;
  // Instructions whose operand holds an address in this function's local memory, relocated when
  // the function is placed in a kernel: (instruction, operand).
  std::vector<std::pair<uint32_t, uint8_t>> localRefs;
  // A kernel after linking: the device functions it calls, directly or not, placed after its own
  // code, registers and local memory, in the order first called (callees[0] is the kernel itself).
  std::vector<Callee> callees;
  // A kernel after linking that makes indirect calls: (function address, index in callees) of
  // every function whose address the module takes, sorted by address (docs/ptx.md, "Indirect calls").
  std::vector<std::pair<uint64_t, uint32_t>> indirect;
  uint32_t paramBytes = 0;
  std::vector<Type> regTypes;    // per register slot
  std::vector<std::string> regNames;
  std::vector<Instruction> code;
  uint32_t staticShared = 0;     // bytes of .shared this function uses (module-level ones included)
  uint32_t dynamicSharedAlign = 1;  // alignment of an `.extern .shared` array, which starts at staticShared
  uint32_t localBytes = 0;       // per thread
};

struct ModuleVariable {
  std::string name;
  Space space = Space::kGlobal;
  uint64_t offset = 0;           // within its space's module storage
  uint64_t size = 0;
  uint32_t align = 1;
  bool isExtern = false;         // `.extern .shared` (dynamic shared memory)
};

struct Module {
  std::string name;              // the file or image name given to the parser, for reports
  std::string version;           // .version
  std::string target;            // .target (first field, e.g. "sm_90")
  unsigned addressSize = 64;
  std::vector<Function> functions;
  std::vector<ModuleVariable> variables;
  std::vector<uint8_t> globalInit;   // the module's .global variables, initialised
  std::vector<uint8_t> constInit;    // its .const variables, initialised
  uint32_t moduleShared = 0;         // bytes of module-level static .shared
  // The offset of kDeviceHeapVariable in the module's .global space; -1: no kernel calls malloc/free.
  int64_t heapVariable = -1;
  std::vector<std::pair<unsigned, std::string>> files;  // .file number -> name
  // Every function declared or defined, in the order first declared: the n-th is at address
  // kFunctionWindow + n * kFunctionStride. `addressTaken`: those whose address the module takes
  // (a mov or an initialiser names them), which a kernel with indirect calls links in.
  std::vector<std::string> functionNames;
  std::vector<bool> addressTaken;
  // A lenient parse's functions left out: name -> why ("k.ptx:12: instruction ... not implemented").
  std::map<std::string, std::string> refused;
  // A linked module whose link declared functions it did not define (a table's, docs/nccl.md):
  // parses a link that defines function `name` into `extra`, for the executor to add it to a
  // kernel at its first call (extendKernel, ptx/parser.h). Set by the module's owner; empty: none.
  // Called on the thread that runs the kernel.
  std::function<bool(const std::string& name, Module* extra, std::string* why)> linkOnCall;

  // Where the .const bank (constInit) starts in the device memory the module's owner places its
  // variables in: after the .global variables, at a 256-byte boundary (docs/ptx.md, "Constant
  // memory"). The allocation holds constOffset() + constInit.size() bytes.
  uint64_t constOffset() const { return (globalInit.size() + 255) / 256 * 256; }

  const Function* find(const std::string& fn) const;
  // The name of the function at `address` (kFunctionWindow ...), or nullptr.
  const std::string* functionAt(uint64_t address) const;
  // "k.cu:12" for an instruction with a .loc, "" otherwise.
  std::string sourceOf(const Instruction& in) const;
};

}  // namespace mcsim::ptx
