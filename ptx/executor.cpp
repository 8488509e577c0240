#include "ptx/executor.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <deque>
#include <utility>

#if defined(__SSE2__)
#include <emmintrin.h>
#include <sys/mman.h>
#endif

#include "mcsim/kernels.h"
#include "model/float_env.h"
#include "model/half_float.h"
#include "model/reduction.h"
#include "ptx/parser.h"
#include "ptx/alu.h"

namespace mcsim::ptx {

namespace {

constexpr uint32_t kNoPc = 0xffffffffu;

// A warp's registers: 32 lanes of 64 bits for each register of the kernel and of every function
// linked into it, zero at the start of a block. A kernel with NCCL's device functions linked in has
// tens of thousands of registers (51,764 with its NVLS all-reduce: 13 MB a warp, 4 GB for the 320
// warps of 16 blocks), of which a warp touches a small part. So a large file is anonymous memory
// mapped for it (pages the host allocates when first written, zero until then), grown in place
// (mremap) when a function is linked, and cleared by giving its pages back (MADV_DONTNEED: a
// private anonymous mapping then reads zero): its cost follows the registers used, not declared.
class RegisterFile {
 public:
  RegisterFile() = default;
  RegisterFile(const RegisterFile&) = delete;
  RegisterFile& operator=(const RegisterFile&) = delete;
  RegisterFile(RegisterFile&& o) noexcept { swap(o); }
  RegisterFile& operator=(RegisterFile&& o) noexcept {
    swap(o);
    return *this;
  }
  ~RegisterFile() {
    if (mapped_ != nullptr) munmap(mapped_, mappedBytes_);
  }

  uint64_t* data() { return mapped_ != nullptr ? mapped_ : small_.data(); }

  // `n` values, the first ones kept, the new ones zero.
  void resize(size_t n) {
    const size_t bytes = n * sizeof(uint64_t);
    if (mapped_ == nullptr && bytes < kMapFrom) {
      small_.resize(n, 0);
      return;
    }
    const size_t want = (bytes + kPage - 1) & ~(kPage - 1);
    if (mapped_ == nullptr) {
      void* p = mmap(nullptr, want, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      if (p == MAP_FAILED) throw std::bad_alloc();
      mapped_ = static_cast<uint64_t*>(p);
      mappedBytes_ = want;
      if (!small_.empty()) std::memcpy(mapped_, small_.data(), small_.size() * sizeof(uint64_t));
      std::vector<uint64_t>().swap(small_);
    } else if (want > mappedBytes_) {
      void* p = mremap(mapped_, mappedBytes_, want, MREMAP_MAYMOVE);
      if (p == MAP_FAILED) throw std::bad_alloc();
      mapped_ = static_cast<uint64_t*>(p);
      mappedBytes_ = want;
    }
  }

  void zero() {
    if (mapped_ != nullptr) madvise(mapped_, mappedBytes_, MADV_DONTNEED);
    else std::fill(small_.begin(), small_.end(), 0);
  }

 private:
  static constexpr size_t kPage = 4096;
  static constexpr size_t kMapFrom = 256 * 1024;  // smaller files are a vector

  void swap(RegisterFile& o) noexcept {
    small_.swap(o.small_);
    std::swap(mapped_, o.mapped_);
    std::swap(mappedBytes_, o.mappedBytes_);
  }

  std::vector<uint64_t> small_;
  uint64_t* mapped_ = nullptr;
  size_t mappedBytes_ = 0;
};
// Instructions a warp runs before the next warp of its block takes a turn: large enough that
// switching costs nothing measurable, small enough that warps waiting on each other through
// memory (a flag spin) progress.
constexpr uint64_t kQuantum = 4096;
// The instructions at the end of a turn over which a warp's reads are watched for a spin.
constexpr uint64_t kWatchTail = 256;
// The instructions a resident block runs before the next resident block takes its turn.
constexpr uint64_t kBlockTurn = 1 << 18;
constexpr unsigned kBarriers = 16;  // named barriers 0..15 (PTX ISA, bar)
constexpr unsigned kMaxOperands = 6;  // Instruction::ops
// The most arguments a device printf takes (CUDA C++ Programming Guide, "Formatted Output").
constexpr int32_t kPrintfArguments = 32;
// Calls a lane may be in at once: deeper recursion fails as a GPU's stack overflow does.
constexpr size_t kMaxCallDepth = 1024;
// Where in a lane's local memory the frames of recursive activations start: far above any
// kernel's own local memory, which grows when a function is linked at its first call and must
// not run into them (docs/ptx.md, "Device functions").
constexpr uint64_t kFrameBase = uint64_t{1} << 40;

// An mbarrier object (PTX ISA, "Parallel Synchronization and Communication Instructions:
// mbarrier"): 8 bytes of shared memory whose layout the ISA leaves opaque. mcsim's: the pending
// arrival count in bits 0-19, the expected arrival count in bits 20-39, the tx-count (signed) in
// bits 40-61, bit 62 set while the object is valid (from mbarrier.init to mbarrier.inval), bit 63
// the current phase's parity. The `state` an arrive returns is the object's value before it.
struct Mbarrier {
  bool valid = false;
  uint32_t phase = 0;  // parity
  uint32_t pending = 0, expected = 0;
  int64_t tx = 0;
};
constexpr uint32_t kMbarrierMaxCount = (1u << 20) - 1;  // arrival counts and tx-count: 2^20 - 1 at most
Mbarrier unpackMbarrier(uint64_t v) {
  Mbarrier b;
  b.pending = static_cast<uint32_t>(v & 0xfffff);
  b.expected = static_cast<uint32_t>((v >> 20) & 0xfffff);
  b.tx = static_cast<int64_t>(((v >> 40) & 0x3fffff) ^ 0x200000) - 0x200000;
  b.valid = ((v >> 62) & 1) != 0;
  b.phase = static_cast<uint32_t>(v >> 63);
  return b;
}
uint64_t packMbarrier(const Mbarrier& b) {
  return uint64_t{b.pending} | (uint64_t{b.expected} << 20) | ((static_cast<uint64_t>(b.tx) & 0x3fffff) << 40) |
         (uint64_t{b.valid} << 62) | (uint64_t{b.phase} << 63);
}

std::string hex(uint64_t v) {
  char b[24];
  std::snprintf(b, sizeof b, "0x%llx", static_cast<unsigned long long>(v));
  return b;
}

uint64_t widthMask(Type t) {
  const unsigned w = typeBits(t);
  return w == 0 || w >= 64 ? ~uint64_t{0} : (uint64_t{1} << w) - 1;
}

uint64_t signExtend(uint64_t v, unsigned bits) {
  if (bits >= 64) return v;
  const uint64_t m = uint64_t{1} << (bits - 1);
  v &= (uint64_t{1} << bits) - 1;
  return (v ^ m) - m;
}

// acc = acc op in over `bytes` bytes of elements of `in.type` (a vector's elements one after
// another), with multimem's operator (in.atomOp): the arithmetic of model/reduction.h for the
// floating-point types and the integer types it has, so that multimem from PTX and the library's
// behavioural models round alike; s64 min/max and the bitwise operators here.
void multimemCombine(const Instruction& in, uint8_t* acc, const uint8_t* src, unsigned bytes) {
  const uint32_t op = in.atomOp == AtomOp::kMin ? MCSIM_REDOP_MIN : in.atomOp == AtomOp::kMax ? MCSIM_REDOP_MAX : MCSIM_REDOP_ADD;
  switch (in.type) {
    case Type::kF32: model::reduceInto(MCSIM_DTYPE_F32, op, acc, src, bytes / 4); return;
    case Type::kF64: model::reduceInto(MCSIM_DTYPE_F64, op, acc, src, bytes / 8); return;
    // Scalar f16 / bf16 come in vectors of at least two: the lanes of the packed type.
    case Type::kF16: case Type::kF16x2: model::reduceInto(MCSIM_DTYPE_F16X2, op, acc, src, bytes / 4); return;
    case Type::kBF16: case Type::kBF16x2: model::reduceInto(MCSIM_DTYPE_BF16X2, op, acc, src, bytes / 4); return;
    case Type::kU32: model::reduceInto(MCSIM_DTYPE_U32, op, acc, src, bytes / 4); return;
    case Type::kS32: model::reduceInto(MCSIM_DTYPE_S32, op, acc, src, bytes / 4); return;
    case Type::kU64: model::reduceInto(MCSIM_DTYPE_U64, op, acc, src, bytes / 8); return;
    default: break;
  }
  // b32 / b64 and, or, xor; s64 min, max.
  const unsigned esize = typeBytes(in.type);
  for (unsigned o = 0; o < bytes; o += esize) {
    uint64_t a = 0, b = 0;
    std::memcpy(&a, acc + o, esize);
    std::memcpy(&b, src + o, esize);
    switch (in.atomOp) {
      case AtomOp::kAnd: a &= b; break;
      case AtomOp::kOr: a |= b; break;
      case AtomOp::kXor: a ^= b; break;
      case AtomOp::kMin: a = static_cast<int64_t>(b) < static_cast<int64_t>(a) ? b : a; break;
      case AtomOp::kMax: a = static_cast<int64_t>(b) > static_cast<int64_t>(a) ? b : a; break;
      default: break;
    }
    std::memcpy(acc + o, &a, esize);
  }
}

// multimem.ld_reduce.add.acc::f32 on f16 / bf16 lanes: each member's value converted to f32
// (exactly), summed in f32 in member order (each sum rounded to nearest even in f32), the total
// rounded once to the lane's type; a NaN total is the canonical half NaN 0x7fff, as
// model/reduction.cpp gives f16 / bf16 NaN results.
void multimemSumF32(bool bf16, const std::vector<const uint8_t*>& members, uint8_t* out, unsigned bytes) {
  for (unsigned o = 0; o < bytes; o += 2) {
    float sum = 0;
    for (size_t i = 0; i < members.size(); ++i) {
      uint16_t h = 0;
      std::memcpy(&h, members[i] + o, 2);
      const float v = bf16 ? model::half::bf16ToFloat(h) : model::half::f16ToFloat(h);
      sum = i == 0 ? v : sum + v;
    }
    const uint16_t r = sum != sum ? uint16_t{0x7fff}
                                  : static_cast<uint16_t>(bf16 ? model::half::floatToBf16(sum) : model::half::floatToF16(sum));
    std::memcpy(out + o, &r, 2);
  }
}

// multimem.ld_reduce on fp8 lanes (every byte a value; PTX ISA, multimem): .min / .max pick a
// member's value as PTX's min and max do (a NaN loses to a number, two NaNs give the canonical NaN
// 0x7f, -0 is below +0); .add rounds each step to nearest even in the lane's own format, or with
// .acc::f16 in f16 (each member's value converted exactly), the total rounded once to the lane's
// format. A sum beyond the format's range overflows (e5m2 infinity, e4m3 NaN) rather than
// saturating: the ISA says nothing of saturation here, and cvt saturates only with .satfinite.
void multimemFp8(const Instruction& in, const std::vector<const uint8_t*>& members, uint8_t* out, unsigned bytes) {
  const bool e4m3 = in.mmFp8 == 1;
  for (unsigned o = 0; o < bytes; ++o) {
    uint32_t acc = members[0][o];
    if (in.atomOp == AtomOp::kAdd && in.accF16) {
      float sum = static_cast<float>(fp8ToDouble(acc, e4m3));
      for (size_t i = 1; i < members.size(); ++i)  // each f16 sum in float, then rounded to f16 (Figueroa 1995)
        sum = model::half::f16ToFloat(model::half::floatToF16(sum + static_cast<float>(fp8ToDouble(members[i][o], e4m3))));
      acc = doubleToFp8(sum, e4m3, false);
    } else {
      for (size_t i = 1; i < members.size(); ++i) {
        const uint32_t b = members[i][o];
        const double x = fp8ToDouble(acc, e4m3), y = fp8ToDouble(b, e4m3);
        if (in.atomOp == AtomOp::kAdd) {
          acc = doubleToFp8(static_cast<float>(x) + static_cast<float>(y), e4m3, false);
        } else if (x != x || y != y) {
          acc = x != x && y != y ? 0x7fu : x != x ? b : acc;
        } else {
          // -0 is below +0: of two zeros, min takes the negative one, max the positive one.
          const bool below = y < x || (y == x && (b & 0x80) != 0 && (acc & 0x80) == 0);
          const bool above = y > x || (y == x && (b & 0x80) == 0 && (acc & 0x80) != 0);
          if (in.atomOp == AtomOp::kMin ? below : above) acc = b;
        }
      }
    }
    out[o] = static_cast<uint8_t>(acc);
  }
}

}  // namespace

const char* faultName(Fault f) {
  switch (f) {
    case Fault::kNone: return "none";
    case Fault::kInvalidLaunch: return "invalid launch";
    case Fault::kIllegalAddress: return "illegal address";
    case Fault::kMisalignedAddress: return "misaligned address";
    case Fault::kTrap: return "trap";
    case Fault::kBarrierDeadlock: return "barrier deadlock";
    case Fault::kTimeout: return "timeout";
    case Fault::kAssert: return "assert";
    case Fault::kInvalidPc: return "invalid program counter";
    case Fault::kNvlink: return "NVLink error";
    case Fault::kIllegalInstruction: return "illegal instruction";
  }
  return "?";
}

uint32_t loadBytesInFlight(const Function& fn) {
  std::vector<bool> pending(fn.regTypes.size(), false);
  std::vector<uint32_t> loaded;  // the registers marked pending
  uint32_t bytes = 0, best = 0;
  const auto reset = [&] {
    for (uint32_t r : loaded) pending[r] = false;
    loaded.clear();
    bytes = 0;
  };
  for (size_t pc = 0; pc < fn.code.size(); ++pc) {
    const Instruction& in = fn.code[pc];
    // A wait for asynchronous copies or an mbarrier phase uses what the copies before it loaded.
    const bool waits = (in.op == Op::kCpAsync && in.cpAsync != CpAsyncOp::kCopy && in.cpAsync != CpAsyncOp::kBulk) ||
                       (in.op == Op::kMbarrier && (in.mbar == MbarOp::kTestWait || in.mbar == MbarOp::kTryWait));
    if (in.op == Op::kBar || in.op == Op::kRet || in.op == Op::kExit || in.op == Op::kTrap ||
        (in.op == Op::kBra && in.ops[0].target <= pc) || in.op == Op::kBrx || waits) {
      reset();
      continue;
    }
    // cp.async and a global-to-shared cp.async.bulk of a constant size: loads in flight until a wait.
    if (in.op == Op::kCpAsync && (in.cpAsync == CpAsyncOp::kCopy || in.cpAsync == CpAsyncOp::kBulk) &&
        in.srcSpace == Space::kGlobal && in.ops[2].kind == Operand::Kind::kImm) {
      bytes += static_cast<uint32_t>(std::min<uint64_t>(in.ops[2].imm, 1u << 20));
      best = std::max(best, bytes);
      continue;
    }
    const bool load = (in.op == Op::kLd && (in.space == Space::kGlobal || in.space == Space::kGeneric)) ||
                      (in.op == Op::kMultimem && in.multimem == MultimemOp::kLdReduce);
    const bool store = in.op == Op::kSt || in.op == Op::kRed || (in.op == Op::kMultimem && !load);
    const unsigned firstSource = store ? 0 : in.op == Op::kSetp || in.op == Op::kShfl ? 2 : 1;
    bool uses = in.guard != kNoReg && pending[in.guard];
    for (unsigned i = firstSource; i < in.nops && !uses; ++i) {
      const Operand& o = in.ops[i];
      if ((o.kind == Operand::Kind::kReg || o.kind == Operand::Kind::kAddr) && o.reg != kNoReg) uses = pending[o.reg];
      for (unsigned e = 0; o.kind == Operand::Kind::kVec && e < o.vecCount && !uses; ++e)
        uses = !o.vec[e].isImm && !o.vec[e].sink && pending[o.vec[e].reg];
    }
    if (uses) reset();
    if (!load) continue;
    bytes += typeBytes(in.type) * in.vec;
    best = std::max(best, bytes);
    const Operand& d = in.ops[0];
    for (unsigned e = 0; e < (d.kind == Operand::Kind::kVec ? d.vecCount : 1u); ++e) {
      const uint32_t r = d.kind == Operand::Kind::kVec ? (d.vec[e].sink ? kNoReg : d.vec[e].reg) : d.reg;
      if (r == kNoReg || pending[r]) continue;
      pending[r] = true;
      loaded.push_back(r);
    }
  }
  return best;
}

std::vector<uint8_t> packParams(const Function& fn, const void* const* args) {
  std::vector<uint8_t> out(fn.paramBytes, 0);
  for (size_t i = 0; i < fn.params.size(); ++i) std::memcpy(out.data() + fn.params[i].offset, args[i], fn.params[i].size);
  return out;
}

// One launch: its resident blocks, run piecewise (advance).
class Executor::Run {
 public:
  Run(Executor& ex, const Function& fn, const LaunchConfig& cfg) : ex_(ex), fn_(fn), cfg_(cfg) {
    hasCalls_ = fn.callees.size() > 1;
    clockNs_ = cfg.globalTimerNs;
    threadsPerBlock_ = cfg.block.x * cfg.block.y * cfg.block.z;
    localStride_ = fn.localBytes;
    prepareCode();
    sharedBytes_ = static_cast<uint64_t>(fn.staticShared);
    if (cfg.dynamicShared != 0)
      sharedBytes_ = (sharedBytes_ + fn.dynamicSharedAlign - 1) / fn.dynamicSharedAlign * fn.dynamicSharedAlign + cfg.dynamicShared;
  }

  // The per-register and per-instruction tables, for the registers and code not yet in them:
  // all at the start, the rest after a function was linked into the kernel at its first call.
  void prepareCode() {
    const Function& fn = fn_;
    for (size_t r = regMask_.size(); r < fn.regTypes.size(); ++r) regMask_.push_back(widthMask(fn.regTypes[r]));
    const size_t from = direct_.size();
    // Every immediate operand as a row of 32 copies, made once per launch, so that arithmetic
    // reads immediates and registers alike without filling a row each time.
    // Arithmetic whose results always fit its destination registers (no narrowing needed) may
    // write them directly: results are zero-extended from the instruction's type except a cvt
    // to a signed type (sign-extended), and setp's are 0 or 1.
    direct_.resize(fn.code.size(), false);
    for (size_t i = from; i < fn.code.size(); ++i) {
      const Instruction& in = fn.code[i];
      if (!isAluOp(in.op) || in.nops == 0 || in.ops[0].kind != Operand::Kind::kReg) continue;
      bool ok = true;
      for (unsigned k = 0; k < (in.op == Op::kSetp ? 2u : 1u); ++k) {
        if (in.ops[k].kind != Operand::Kind::kReg) continue;
        const uint64_t m = regMask_[in.ops[k].reg];
        const unsigned regBits = static_cast<unsigned>(__builtin_popcountll(m));
        const unsigned resultBits = in.op == Op::kSetp ? 1 : in.mulMode == MulMode::kWide ? 64 : typeBits(in.type);
        ok = ok && (m == ~uint64_t{0} || (resultBits <= regBits && !(in.op == Op::kCvt && isSigned(in.type))));
      }
      // setp with a boolean operation makes a second pass over its results that reads c.
      direct_[i] = ok && !(in.op == Op::kSetp && in.boolOp != BoolOp::kNone);
    }
    immRows_.resize(fn.code.size() * kMaxOperands, nullptr);
    for (size_t i = from; i < fn.code.size(); ++i) {
      for (unsigned k = 0; k < fn.code[i].nops; ++k) {
        if (fn.code[i].ops[k].kind != Operand::Kind::kImm || fn.code[i].ops[k].frame) continue;
        immStore_.emplace_back(32, fn.code[i].ops[k].imm);
        immRows_[i * kMaxOperands + k] = immStore_.back().data();
      }
    }
  }

  // The kernel grew (a function linked at its first call, by this run or another of the same
  // kernel): the tables and every warp's registers and local memory follow; what is there keeps
  // its place (a lane's local memory moves to the lane's new stride).
  void followKernel() {
    if (direct_.size() == fn_.code.size() && regMask_.size() == fn_.regTypes.size() && localStride_ == fn_.localBytes) return;
    prepareCode();
    const uint64_t from = localStride_, to = fn_.localBytes;
    auto growWarps = [&](std::vector<Warp>& warps) {
      for (Warp& w : warps) {
        w.regs.resize(fn_.regTypes.size() * 32);
        if (from == to) continue;
        std::vector<uint8_t> local(to * 32, 0);
        for (uint64_t l = 0; l < 32 && from != 0; ++l) std::memcpy(local.data() + l * to, w.local.data() + l * from, from);
        w.local.swap(local);
      }
    };
    growWarps(warps_);
    for (Slot& sl : slots_) growWarps(sl.warps);
    localStride_ = static_cast<uint32_t>(to);
  }

  // A launch the executor refused: its first advance reports the fault.
  Run(Executor& ex, const LaunchConfig& cfg, std::string why) : ex_(ex), fn_(noFunction()), cfg_(cfg) {
    result_.fault = Fault::kInvalidLaunch;
    result_.message = std::move(why);
    state_ = RunState::kFaulted;
  }

  const LaunchResult& result() const { return result_; }
  bool wroteGlobal() const { return wroteGlobal_; }
  bool progressed() const { return progressed_; }

  void wake() {
    for (Slot& s : slots_) lookAgain(s.parked);
  }

  void setClock(uint64_t ns) {
    clockNs_ = ns;
    clockInstructions_ = result_.warpInstructions;
  }


  RunState advance(uint64_t budget) {
    if (state_ != RunState::kProgress && state_ != RunState::kWaiting) return state_;
    model::FloatEnvironment fenv;  // IEEE arithmetic whatever the host program set (model/float_env.h)
    if (slots_.empty()) {
      blocks_ = uint64_t{cfg_.grid.x} * cfg_.grid.y * cfg_.grid.z;
      resident_ = cfg_.residentBlocks == 0 ? blocks_ : std::min(blocks_, cfg_.residentBlocks);
      openSlot();
    }
    wroteGlobal_ = false;
    progressed_ = false;
    const uint64_t stopAt =
        budget > ~uint64_t{0} - result_.warpInstructions ? ~uint64_t{0} : result_.warpInstructions + budget;
    for (;;) {
      bool ran = false, left = false, longTurn = false;
      const uint64_t writes = writes_;
      for (Slot& slot : slots_) {
        if (!slot.used) continue;
        enter(slot);
        const bool done = runBlockTurn(&ran, &longTurn);
        leave(slot);
        if (result_.fault != Fault::kNone) {
          flushTraffic();
          finishOutput();
          return state_ = RunState::kFaulted;
        }
        if (done) {
          // The block has exited: the next block of the grid takes its place on the SM.
          slot.used = nextBlock_ < blocks_;
          if (slot.used) initBlock(slot, nextBlock_++);
          progressed_ = true;
        }
        left = left || slot.used;
      }
      if (!left) {
        flushTraffic();
        finishOutput();
        return state_ = RunState::kFinished;
      }
      const bool grow = slots_.size() < resident_ && nextBlock_ < blocks_;
      // Memory changed: whatever a parked warp waits on may have changed too.
      if (writes_ != writes) {
        wake();
      } else if (!ran) {
        if (grow) {
          openSlot();
          continue;
        }
        flushTraffic();
        return state_ = RunState::kWaiting;
      }
      if (grow && longTurn) openSlot();
      // A warp made a fence the memory times: the piece ends here, so that the caller times the
      // traffic before the fence, and the fence, before the warps run on (a piece that ran on
      // would leave the fenced warp waiting for the piece's end, however soon its fence completed).
      if (result_.warpInstructions >= stopAt || std::exchange(fenceMade_, false)) {
        flushTraffic();
        return state_ = RunState::kProgress;
      }
    }
  }

  // Whether the run can do nothing but spin: every warp left is parked, waits at a barrier, or
  // spins while it writes (BusySpin), at least one does the last, and no block is still to start
  // beside them. Only the node's memory changing can make it do anything else.
  bool spinning() const {
    if (state_ != RunState::kProgress && state_ != RunState::kWaiting) return false;
    if (slots_.size() < resident_ && nextBlock_ < blocks_) return false;
    bool busy = false;
    for (const Slot& s : slots_) {
      if (!s.used) continue;
      for (size_t i = 0; i < s.warps.size(); ++i) {
        const Warp& w = s.warps[i];
        if (w.live == 0 || (w.live & ~w.blocked) == 0 || s.parked[i].on || s.spins[i].idle) continue;
        if (!s.spins[i].on) return false;
        busy = true;
      }
    }
    return busy;
  }

  std::string describeWait() const {
    std::string out;
    for (const Slot& s : slots_) {
      if (!s.used) continue;
      for (size_t i = 0; i < s.parked.size(); ++i) {
        const bool busy = !s.parked[i].on && s.spins[i].on && s.warps[i].live != 0;
        const Park& p = busy ? s.spins[i].last : s.parked[i];
        if (!p.on) continue;
        const Instruction& in = fn_.code[p.pc];
        const uint32_t t = static_cast<uint32_t>(i) * 32 + p.lane;
        std::string line = "kernel '" + fn_.name + "' block (" + std::to_string(s.ctaid[0]) + "," +
                           std::to_string(s.ctaid[1]) + "," + std::to_string(s.ctaid[2]) + ") thread (" +
                           std::to_string(t % cfg_.block.x) + "," + std::to_string((t / cfg_.block.x) % cfg_.block.y) +
                           "," + std::to_string(t / (cfg_.block.x * cfg_.block.y)) + ") waits on the " +
                           (p.global ? "global" : "shared") + " word at " + hex(p.addr) + ": it holds " + hex(p.value);
        if (p.mbarrier) {
          const Mbarrier b = unpackMbarrier(p.value);
          line = line.substr(0, line.find(" waits on the ")) + " waits on the mbarrier at " + hex(p.addr) +
                 " for its phase of parity " + std::to_string(p.waitParity) + " to complete: " +
                 (b.valid ? "the current phase has " + std::to_string(b.pending) + " of " + std::to_string(b.expected) +
                                " arrivals pending and a tx-count of " + std::to_string(b.tx)
                          : std::string("it is not initialised"));
        }
        if (p.hasExpected) line += ", the warp compares it with " + hex(p.expected);
        line += " ('" + in.text + "' at " + ex_.module_.name + ":" + std::to_string(in.line);
        const std::string src = ex_.module_.sourceOf(in);
        if (!src.empty()) line += ", " + src;
        line += ")";
        if (busy) line += "; it spins unparked, writing memory as it waits";
        out += line + "\n";
        break;  // one warp a block says what the block waits on
      }
    }
    return out;
  }

 private:
  static const Function& noFunction() {
    static const Function none;
    return none;
  }

  // A lane's call in progress: where it returns to, through which call site, and for a call of a
  // recursive function the callee's registers as the outer activation left them and the lane's
  // frame offset and stack top before the call (the callee's frame is above them).
  struct Frame {
    uint32_t returnPc = 0;
    uint32_t site = 0;
    uint32_t callee = 0;  // index in Function::callees (an indirect call's differs lane by lane)
    std::vector<uint64_t> regs;
    uint64_t shift = 0;
    size_t stackTop = 0;
  };
  struct Warp {
    uint32_t id = 0;
    uint32_t live = 0;     // lanes that exist and have not exited
    uint32_t active = 0;   // lanes executing at pc
    uint32_t blocked = 0;  // lanes waiting at barrier barId
    uint32_t pc = 0;
    uint32_t nextPc = kNoPc;  // the lowest pc of the runnable lanes not active
    uint32_t barId = 0;
    const Instruction* barRed = nullptr;  // the bar.red the blocked lanes wait at (its result is theirs)
    uint32_t lanePc[32] = {};
    uint64_t executed = 0;  // instructions this warp has issued (%clock64)
    uint32_t carry = 0;     // per lane: the condition code's carry flag, CC.CF (add.cc, addc ...)
    RegisterFile regs;
    std::vector<uint8_t> local;
    std::vector<Frame> frames[32];  // per lane: the calls it is in, innermost last
    // Per lane: the frames of recursive activations, at local offsets from kFrameBase up, and
    // the offset of the innermost one from its function's linked local addresses (Operand::frame).
    std::vector<uint8_t> stack[32];
    uint64_t shift[32] = {};
    // A fence at .gpu or .sys scope since its last global store: that store is a release
    // (GlobalMemory::deferRelease).
    bool fenced = false;
    // Whether it wrote global memory since its last such fence (before its running turn), and
    // the fence it waits on to complete (GlobalMemory::fence; 0: none).
    bool wroteSinceFence = false;
    uint64_t fenceTicket = 0;
    // Its last turn ended at a barrier or a timed fence: the next is watched whole (runTurn).
    bool turnFromSync = false;
    // %globaltimer on a clock (LaunchConfig::warpInstructionPs): what nanosleep added to it, and
    // the last value read, which it never goes below.
    uint64_t sleptNs = 0;
    uint64_t lastTimer = 0;
  };
  struct Barrier {
    uint32_t arrived = 0;
    uint32_t expected = 0;  // 0: every live thread of the block
    uint32_t predTrue = 0;  // bar.red: arrived threads whose predicate is true
  };
  // A warp parked because it spins, and what it last read (for the report), until memory changes.
  struct Park {
    bool on = false;
    bool check = false;  // memory changed since it parked: look at its words before its next turn
    bool global = true;
    bool hasExpected = false;
    bool mbarrier = false;  // parked at once by a failed mbarrier wait on the word at addr
    uint32_t waitParity = 0;  // the phase parity it waits to see completed
    unsigned lane = 0;
    uint32_t pc = 0;
    uint64_t addr = 0, value = 0, expected = 0;
  };
  // The words a warp read at the end of its turn, with the values it last read there. A word is
  // known by its host bytes, which stay put while the launch runs (shared memory is the slot's,
  // global memory the allocation's backing, which the memory keeps for the launch), and is a
  // lane's access of up to 16 bytes, all of them watched (a vector load's flag may lie in any of
  // them: LL128's is the second half of a lane's 16 bytes); a wider access is two words. A spin
  // re-reads a few words, or a line a lane (NCCL's LL128 receive: 4 lines of 16 bytes a lane, 128
  // words a warp); a warp that reads more is working. Beyond kSpinWords a turn's tail must have
  // read its words twice on average to count as a spin (a loop that reads new data reads each once).
  static constexpr unsigned kWatchWords = 128;
  static constexpr unsigned kSpinWords = 32;
  static constexpr unsigned kWatchBytes = 16;
  struct Word {
    const uint8_t* host;
    uint8_t value[kWatchBytes];
    uint8_t size;
  };
  struct Watched {
    std::vector<Word> words;  // grows to what a warp's spin reads, and keeps its capacity
    size_t next = 0;          // where the next read of a re-reading loop is likely noted
    uint64_t reads = 0;       // reads noted
    void clear() {
      words.clear();
      next = 0;
      reads = 0;
    }
    // Whether the reads look like a loop re-reading its words.
    bool rereads() const { return words.size() <= kSpinWords || reads >= 2 * words.size(); }
  };
  // A turn's words read, with the values read, and words written, sorted.
  struct TurnWords {
    std::vector<Word> reads;
    std::vector<const uint8_t*> writes;
  };
  // Turns between barriers or fences come in cycles (a loop with two barriers alternates two
  // kinds of turn): a turn is compared with the last few of its warp's, not only the last.
  static constexpr size_t kSpinCycle = 4;
  // A warp that spins without being parked: it writes memory as it waits (an iteration counter, a
  // heartbeat), so the parking rule above does not take it, but its whole turns (a quantum's
  // tail, or from one barrier or fence to the next) end re-reading the same few words, which hold
  // the same values each time (words it wrote itself aside), and writing only the same few words.
  // `on` once a turn repeats one of its last kSpinCycle turns so; the run is then spinning
  // (Run::spinning) if every other warp is too, or parked, or waits at a barrier, or only keeps
  // step with its block (`idle`): nothing it does can change what it reads.
  struct BusySpin {
    bool on = false;
    // Its last turn ran from one barrier or fence to the next touching no memory (a warp that
    // only keeps step with its block): it neither spins nor makes progress.
    bool idle = false;
    std::vector<TurnWords> recent;  // the warp's last such turns, newest last
    Park last;                      // what it compares, for the report (describeWait)
    void clear() {
      on = false;
      idle = false;
      recent.clear();
    }
  };
  // A resident block: an SM's share of the grid. Its state is swapped into the run's members
  // (warps_, shared_ ...) while its warps take their turns.
  struct Slot {
    bool used = false;
    uint64_t linear = 0;
    uint32_t ctaid[3] = {};
    std::vector<Warp> warps;
    std::vector<uint8_t> shared;
    Barrier bars[kBarriers];
    std::vector<Park> parked;  // per warp
    std::vector<Watched> watched;  // per warp, while parked
    std::vector<BusySpin> spins;   // per warp
  };
  // Memory changed: each parked warp looks at its words before its next turn.
  static void lookAgain(std::vector<Park>& parked) {
    for (Park& p : parked) p.check = p.on;
  }

  // What the warp now taking its turn has done: whether it may be spinning.
  struct SpinWatch {
    bool changed = false;   // stored, changed a word atomically, arrived at a barrier or exited
    uint64_t changedAt = 0;  // LaunchResult::warpInstructions at the latest change
    bool overflow = false;  // read more distinct words than a spin does
    Watched words;
    Park last;  // its latest read of global or shared memory
    const uint8_t* lastHost = nullptr;  // ... and its bytes
    std::vector<const uint8_t*> written;  // the words it wrote at the end of its turn (BusySpin)
    bool writeOverflow = false;           // ... more than a spin writes, or a multicast store
  };

  // Blocks become resident as they are needed, up to the GPU's residency: the next block of the
  // grid starts in a slot of its own when every resident block waits, or when one has run a whole
  // turn (kBlockTurn) without finishing. So a grid of short blocks runs one block after another
  // in the host's caches, while blocks that wait for each other, or run long, share the SMs.
  void openSlot() {
    progressed_ = true;
    const unsigned nwarps = (threadsPerBlock_ + 31) / 32;
    slots_.emplace_back();
    Slot& s = slots_.back();
    s.warps.resize(nwarps);
    for (unsigned i = 0; i < nwarps; ++i) {
      s.warps[i].id = i;
      s.warps[i].regs.resize(fn_.regTypes.size() * 32);
      s.warps[i].local.resize(uint64_t{localStride_} * 32);
    }
    s.shared.resize(sharedBytes_);
    s.parked.resize(nwarps);
    s.watched.resize(nwarps);
    s.spins.resize(nwarps);
    initBlock(s, nextBlock_++);
  }

  void initBlock(Slot& s, uint64_t linear) {
    s.used = true;
    s.linear = linear;
    s.ctaid[0] = static_cast<uint32_t>(linear % cfg_.grid.x);
    s.ctaid[1] = static_cast<uint32_t>((linear / cfg_.grid.x) % cfg_.grid.y);
    s.ctaid[2] = static_cast<uint32_t>(linear / (uint64_t{cfg_.grid.x} * cfg_.grid.y));
    std::fill(s.shared.begin(), s.shared.end(), 0);
    for (Barrier& b : s.bars) b = Barrier{};
    std::fill(s.parked.begin(), s.parked.end(), Park{});
    for (BusySpin& b : s.spins) b.clear();
    for (Warp& w : s.warps) {
      const uint32_t first = w.id * 32;
      const uint32_t n = std::min<uint32_t>(32, threadsPerBlock_ - first);
      w.live = n == 32 ? 0xffffffffu : (1u << n) - 1;
      w.active = w.live;
      w.blocked = 0;
      w.pc = 0;
      w.nextPc = kNoPc;
      w.executed = 0;
      w.carry = 0;
      std::fill(std::begin(w.lanePc), std::end(w.lanePc), 0);
      w.regs.zero();
      std::fill(w.local.begin(), w.local.end(), 0);
      for (auto& f : w.frames) f.clear();
      for (auto& st : w.stack) st.clear();
      std::fill(std::begin(w.shift), std::end(w.shift), 0);
      w.fenced = false;
      w.wroteSinceFence = false;
      w.fenceTicket = 0;
      w.sleptNs = 0;
      w.lastTimer = 0;
      w.turnFromSync = false;
    }
  }

  // The block of `s` becomes the one instructions act on (vectors swapped, not copied).
  void enter(Slot& s) {
    block_ = s.linear;
    std::copy(std::begin(s.ctaid), std::end(s.ctaid), ctaid_);
    warps_.swap(s.warps);
    shared_.swap(s.shared);
    parked_.swap(s.parked);
    watched_.swap(s.watched);
    spins_.swap(s.spins);
    std::copy(std::begin(s.bars), std::end(s.bars), bars_);
  }
  void leave(Slot& s) {
    warps_.swap(s.warps);
    shared_.swap(s.shared);
    parked_.swap(s.parked);
    watched_.swap(s.watched);
    spins_.swap(s.spins);
    std::copy(std::begin(bars_), std::end(bars_), s.bars);
  }

  // The entered block's turn: rounds of its warps until it is done, waits, or has run
  // kBlockTurn instructions (a block keeps the host's caches warm for a while before the next
  // resident block runs). Returns whether the block is done.
  bool runBlockTurn(bool* ran, bool* longTurn) {
    const uint64_t start = result_.warpInstructions;
    for (;;) {
      const uint64_t writes = writes_;
      bool ranRound = false;
      const bool done = runRound(&ranRound);
      // A block that finishes in its first round ran too (else a grid beyond residency whose
      // first block exits at once, writing nothing, would read as waiting).
      *ran = *ran || ranRound;
      if (done || result_.fault != Fault::kNone) return result_.fault == Fault::kNone;
      if (writes_ != writes) lookAgain(parked_);
      else if (!ranRound) return false;
      if (fenceMade_) return false;  // the piece ends (advance)
      if (result_.warpInstructions - start >= kBlockTurn) {
        *longTurn = true;
        return false;
      }
    }
  }

  // Each warp of the entered block that can run takes a turn; returns whether the block is done.
  bool runRound(bool* ran) {
    bool done = true, parked = false;
    for (Warp& w : warps_) {
      if (w.live == 0) continue;
      done = false;
      if ((w.live & ~w.blocked) == 0) continue;
      if (w.fenceTicket != 0) {
        // Waiting for its fence to complete (the memory times it): not progress until the fence
        // has completed, nor then for a warp that spins with a fence in its loop (runTurn).
        if (!ex_.memory_.fenceDone(w.fenceTicket)) continue;
        w.fenceTicket = 0;
        if (!spins_[w.id].on) progressed_ = true;
      }
      if (parked_[w.id].on) {
        // Parked: it runs again once a word it spins on holds another value.
        if (!parked_[w.id].check || !watchedChanged(watched_[w.id])) {
          parked_[w.id].check = false;
          parked = true;
          continue;
        }
        // A word it waits on changed: released, which is progress (Run::progressed), however
        // little it then does before it waits again.
        parked_[w.id] = Park{};
        progressed_ = true;
      }
      *ran = true;
      runWarp(w);
      if (result_.fault != Fault::kNone) return false;
      parked = parked || parked_[w.id].on;
    }
    if (done) return true;
    bool live = false, runnable = false;
    for (const Warp& w : warps_) {
      live = live || w.live != 0;
      runnable = runnable || (w.live & ~w.blocked) != 0;
    }
    if (!live) return true;
    if (!runnable && !parked) {
      fail(Fault::kBarrierDeadlock, warps_[0], 0, nullptr,
           "every live thread waits at a barrier that the others can never reach (bar.sync with a thread count the block cannot meet?)");
    }
    return false;
  }

  // A warp's turn, then what it moved told to the memory, with whether the turn was polling.
  void runWarp(Warp& w) {
    polled_ = false;
    turnWrites_ = globalWrites_;
    runTurn(w);
    w.wroteSinceFence = w.wroteSinceFence || globalWrites_ != turnWrites_;
    flushTraffic();
    ex_.memory_.turnEnded(polled_);
  }

  void runTurn(Warp& w) {
    const Instruction* code = fn_.code.data();
    spin_.changed = false;
    spin_.overflow = false;
    spin_.words.clear();
    spin_.written.clear();
    spin_.writeOverflow = false;
    spins_[w.id].on = false;  // says what the turn that ends last did, nothing older
    spins_[w.id].idle = false;
    waitLoop_.on = false;
    // A turn that began at a barrier's release or a fence's completion is watched whole: it may
    // end at the next barrier or fence, and a loop that waits with one in it ends every turn so.
    const bool whole = std::exchange(w.turnFromSync, false);
    uint64_t n = 0;
    for (; n < kQuantum && w.active != 0; ++n) {
      // The words a warp reads are noted over the end of its turn only (a spin loop is a few
      // instructions long), so that warps doing work pay nothing for the watch.
      if (n == kQuantum - kWatchTail || (n == 0 && whole)) watching_ = true;
      const Instruction& in = code[w.pc];
      step(w, in);
      if (result_.fault != Fault::kNone) return;
      // A function linked at its first call (indirectCall) may have moved the code: `in` is gone.
      if (fn_.code.data() != code) {
        code = fn_.code.data();
        continue;
      }
      // After a barrier the turn passes on, so that the warps leave a barrier in warp order.
      if (in.op == Op::kBar && in.barMode != BarMode::kWarpSync) {
        endSyncTurn(w, whole);
        return;
      }
      // A fence the memory times: the warp waits for it to complete (runRound), and the piece
      // ends after this round (advance).
      if (w.fenceTicket != 0) {
        endSyncTurn(w, whole);
        fenceMade_ = true;
        return;
      }
      // A failed mbarrier wait: the warp waits for the object to change (below, mbarrier()).
      if (in.op == Op::kMbarrier && mbarrierPark_.on) {
        parked_[w.id] = mbarrierPark_;
        watched_[w.id] = mbarrierWatch_;
        mbarrierPark_.on = false;
        watching_ = false;
        spins_[w.id].clear();
        progressed_ = true;
        return;
      }
      if (cfg_.maxWarpInstructions != 0 && result_.warpInstructions > cfg_.maxWarpInstructions) {
        fail(Fault::kTimeout, w, static_cast<unsigned>(__builtin_ctz(w.live | 1u)), &code[w.pc],
             "ran past " + std::to_string(cfg_.maxWarpInstructions) + " warp instructions");
        return;
      }
    }
    watching_ = false;
    // A whole turn that, at its end, only re-read a few words: if it changed nothing, the warp
    // spins on them, and will until memory changes (wake); if it wrote, it may be a spin that
    // writes as it waits (BusySpin).
    const bool rereads = n == kQuantum && w.active != 0 && !spin_.overflow && !spin_.words.words.empty() &&
                         spin_.words.rereads();
    if (rereads && !spin_.changed) {
      park(w);
      spins_[w.id].clear();
      result_.pollingInstructions += n;
      polled_ = true;
    } else {
      if (rereads && result_.warpInstructions - spin_.changedAt > kWatchTail) {
        // A turn that changed memory and then, for the rest of it (at least its watched tail), only
        // re-read a few words: it began to spin at its last change (a barrier's arrival, then the
        // wait for the others). Those instructions poll, as a parked warp's do, and cost no issue
        // time; the next turn, which spins throughout, parks the warp.
        result_.pollingInstructions += result_.warpInstructions - spin_.changedAt;
      }
      // Any turn but a spin's is progress (Run::progressed): it did something a spin does not.
      if (!noteBusySpin(w, rereads && !spin_.writeOverflow)) progressed_ = true;
    }
  }

  // A turn that ended at a barrier or a timed fence. Watched whole (it began at one too), a turn
  // that only re-read a few words and wrote the same few is a spin that waits with a barrier or a
  // fence in its loop (a heartbeat made visible before each look, a block polling together):
  // BusySpin, as for a whole quantum. Anything else is progress.
  void endSyncTurn(Warp& w, bool whole) {
    watching_ = false;
    w.turnFromSync = true;
    if (whole && !spin_.overflow && !spin_.writeOverflow && spin_.words.words.empty() && spin_.written.empty()) {
      spins_[w.id].idle = true;  // touched no memory: it waits on its block mates (spinning)
      return;
    }
    const bool rereads = whole && !spin_.overflow && !spin_.words.words.empty() && spin_.words.rereads();
    if (!noteBusySpin(w, rereads && !spin_.writeOverflow)) progressed_ = true;
  }

  // After a turn that was not parked: whether the warp spins while it writes (BusySpin). Returns
  // whether it does.
  bool noteBusySpin(Warp& w, bool candidate) {
    BusySpin& b = spins_[w.id];
    b.idle = false;
    if (!candidate) {
      b.clear();
      return false;
    }
    std::sort(spin_.written.begin(), spin_.written.end());
    const auto wroteItself = [&](const uint8_t* host) {
      return std::binary_search(spin_.written.begin(), spin_.written.end(), host);
    };
    // The same words as one of the last few turns, each holding what it held then, but for words
    // the warp writes itself (a counter it reads back); and the same words written.
    const auto sameAs = [&](const TurnWords& t) {
      bool same = t.writes == spin_.written && t.reads.size() == spin_.words.words.size();
      for (size_t i = 0; same && i < spin_.words.words.size(); ++i) {
        const Word& now = spin_.words.words[i];
        const Word* before = nullptr;
        for (const Word& x : t.reads) {
          if (x.host == now.host && x.size == now.size) {
            before = &x;
            break;
          }
        }
        same = before != nullptr && (wroteItself(now.host) || std::memcmp(before->value, now.value, now.size) == 0);
      }
      return same;
    };
    if (std::any_of(b.recent.begin(), b.recent.end(), sameAs)) {
      if (!b.on) {
        b.on = true;
        b.last = spinReport(w);
      }
      return true;
    }
    b.on = false;
    if (b.recent.size() == kSpinCycle) b.recent.erase(b.recent.begin());
    b.recent.push_back(TurnWords{spin_.words.words, spin_.written});
    return false;
  }

  void park(Warp& w) {
    parked_[w.id] = spinReport(w);
    watched_[w.id] = spin_.words;
  }

  // What the warp that just ended its turn spins on (its last read), and what it compares it with.
  Park spinReport(Warp& w) {
    Park p = spin_.last;
    p.on = true;
    // What the warp compares the word with: the setp that reads the loaded register, just after
    // the load (an atomic compare-and-swap says it itself).
    const Instruction& ld = fn_.code[p.pc];
    const bool loads = ld.op == Op::kLd || (ld.op == Op::kMultimem && ld.multimem == MultimemOp::kLdReduce);
    // A vector load (LL128's `ld.v2.u64`): the element the setp reads is the one the report shows.
    const bool vector = loads && ld.ops[0].kind == Operand::Kind::kVec;
    if (!p.hasExpected && loads && (ld.ops[0].kind == Operand::Kind::kReg || vector)) {
      for (uint32_t pc = p.pc + 1; pc < fn_.code.size() && pc <= p.pc + 8; ++pc) {
        const Instruction& in = fn_.code[pc];
        if (in.op != Op::kSetp || in.nops < 4) continue;
        for (unsigned k = 2; k < 4 && !p.hasExpected; ++k) {
          if (in.ops[k].kind != Operand::Kind::kReg) continue;
          unsigned element = 0;
          if (vector) {
            while (element < ld.vec && (ld.ops[0].vec[element].sink || ld.ops[0].vec[element].reg != in.ops[k].reg)) ++element;
            if (element == ld.vec) continue;
          } else if (in.ops[k].reg != ld.ops[0].reg) {
            continue;
          }
          const Operand& other = in.ops[k == 2 ? 3 : 2];
          if (other.kind == Operand::Kind::kImm) p.expected = other.imm;
          else if (other.kind == Operand::Kind::kReg) p.expected = row(w, other.reg)[p.lane];
          else continue;
          p.hasExpected = true;
          if (vector && spin_.lastHost != nullptr) {
            const unsigned esize = typeBytes(ld.type);
            p.value = 0;
            std::memcpy(&p.value, spin_.lastHost + element * esize, std::min(esize, 8u));
            p.addr += element * esize;
          }
        }
        break;
      }
    }
    return p;
  }

  // Notes the word at host bytes `p` (and the value there) in `ws`; false when it is full.
  static bool noteWord(Watched& ws, const uint8_t* p, unsigned size) {
    if (size > kWatchBytes) return noteWord(ws, p, kWatchBytes) && noteWord(ws, p + kWatchBytes, size - kWatchBytes);
    // A loop re-reads its words in the order it read them: look where the last one was first.
    const size_t n = ws.words.size();
    size_t i = ws.next < n && ws.words[ws.next].host == p ? ws.next : 0;
    while (i < n && ws.words[i].host != p) ++i;
    if (i == n) {
      if (n == kWatchWords) return false;
      ws.words.emplace_back();
      ws.words[i].host = p;
    }
    Word& w = ws.words[i];
    ++ws.reads;
    std::memcpy(w.value, p, size);
    w.size = static_cast<uint8_t>(size);
    ws.next = i + 1;
    return true;
  }

  // Whether a word `w` watches holds another value than the warp read there.
  static bool watchedChanged(const Watched& w) {
    for (const Word& x : w.words) {
      if (std::memcmp(x.host, x.value, x.size) != 0) return true;
    }
    return false;
  }

  // A read by `lane` of the word at `addr` (global or shared; p: its bytes) near the end of a turn.
  void watch(const Warp& w, unsigned lane, uint64_t addr, const uint8_t* p, unsigned size) {
    if ((!watching_ && !waitLoop_.on) || (locSpace_ != Space::kGlobal && locSpace_ != Space::kShared)) return;
    if (locSpace_ == Space::kGlobal && win_.turnOnly) {
      // Bytes the memory may take back after this turn: no word of them is watched, so the warp
      // is not parked on them (it reads them again each turn).
      spin_.overflow = true;
      waitLoop_.overflow = true;
      return;
    }
    if (waitLoop_.on && !waitLoop_.overflow) waitLoop_.overflow = !noteWord(waitLoop_.words, p, size);
    if (!watching_ || spin_.overflow) return;
    if (!noteWord(spin_.words, p, size)) {
      spin_.overflow = true;
      return;
    }
    Park& l = spin_.last;
    l.global = locSpace_ == Space::kGlobal;
    l.hasExpected = false;
    l.lane = lane;
    l.pc = w.pc;
    l.addr = addr;
    l.value = 0;
    std::memcpy(&l.value, p, std::min(size, 8u));
    spin_.lastHost = p;
  }

  // A write by the warp now running to the space locate() resolved last.
  void noteWrite() {
    if (locSpace_ != Space::kGlobal && locSpace_ != Space::kShared) return;
    spin_.changed = true;
    spin_.changedAt = result_.warpInstructions;
    ++writes_;
    if (locSpace_ == Space::kGlobal) ++globalWrites_;
    wroteGlobal_ = wroteGlobal_ || locSpace_ == Space::kGlobal;
    if (!watching_ || spin_.writeOverflow) return;
    // The words a turn's tail writes (BusySpin): a few, the same each turn, for a spin that writes.
    std::vector<const uint8_t*>& ws = spin_.written;
    if (locHost_ == nullptr) {
      spin_.writeOverflow = true;  // a multicast store: every member's memory
    } else if (std::find(ws.begin(), ws.end(), locHost_) == ws.end()) {
      if (ws.size() == kSpinWords) spin_.writeOverflow = true;
      else ws.push_back(locHost_);
    }
  }

  // ---- control flow: min-PC reconvergence

  void reschedule(Warp& w) {
    const uint32_t runnable = w.live & ~w.blocked;
    if (runnable == 0) {
      w.active = 0;
      return;
    }
    uint32_t lo = kNoPc;
    for (uint32_t m = runnable; m != 0; m &= m - 1) lo = std::min(lo, w.lanePc[__builtin_ctz(m)]);
    uint32_t active = 0, next = kNoPc;
    for (uint32_t m = runnable; m != 0; m &= m - 1) {
      const unsigned l = static_cast<unsigned>(__builtin_ctz(m));
      if (w.lanePc[l] == lo) active |= 1u << l;
      else next = std::min(next, w.lanePc[l]);
    }
    w.active = active;
    w.pc = lo;
    w.nextPc = next;
  }

  // The active lanes go to `pc`; if that reaches or passes a waiting group, the lowest runs next.
  void jump(Warp& w, uint32_t pc) {
    if (pc < w.nextPc) {
      w.pc = pc;
      return;
    }
    for (uint32_t m = w.active; m != 0; m &= m - 1) w.lanePc[__builtin_ctz(m)] = pc;
    reschedule(w);
  }

  // Lanes `taken` go to `a`, the other active lanes to `b`.
  void split(Warp& w, uint32_t taken, uint32_t a, uint32_t b) {
    for (uint32_t m = w.active; m != 0; m &= m - 1) {
      const unsigned l = static_cast<unsigned>(__builtin_ctz(m));
      w.lanePc[l] = (taken >> l) & 1u ? a : b;
    }
    reschedule(w);
  }

  // ---- operands

  uint64_t* row(Warp& w, uint32_t reg) { return w.regs.data() + uint64_t{reg} * 32; }

  void writeRow(Warp& w, uint32_t reg, uint32_t mask, const uint64_t* v) {
    uint64_t* r = row(w, reg);
    const uint64_t m = regMask_[reg];
    if (mask == 0xffffffffu) {
      for (unsigned l = 0; l < 32; ++l) r[l] = v[l] & m;
    } else {
      for (uint32_t k = mask; k != 0; k &= k - 1) {
        const unsigned l = static_cast<unsigned>(__builtin_ctz(k));
        r[l] = v[l] & m;
      }
    }
  }

  uint32_t predMask(Warp& w, uint32_t reg) {
    // Predicate registers hold 0 or 1 (writeRow masks them to their 1-bit width).
    const uint64_t* r = row(w, reg);
    uint32_t m = 0;
#if defined(__SSE2__)
    // Bit 0 of two lanes to the sign bits, then both at once: 16 steps instead of 32.
    for (unsigned l = 0; l < 32; l += 2) {
      const __m128i v = _mm_slli_epi64(_mm_loadu_si128(reinterpret_cast<const __m128i*>(r + l)), 63);
      m |= static_cast<uint32_t>(_mm_movemask_pd(_mm_castsi128_pd(v))) << l;
    }
#else
    for (unsigned l = 0; l < 32; ++l) m |= static_cast<uint32_t>(r[l] & 1u) << l;
#endif
    return m;
  }

  void tid(const Warp& w, unsigned lane, uint32_t out[3]) const {
    const uint32_t t = w.id * 32 + lane;
    out[0] = t % cfg_.block.x;
    out[1] = (t / cfg_.block.x) % cfg_.block.y;
    out[2] = t / (cfg_.block.x * cfg_.block.y);
  }

  uint64_t special(Warp& w, const Operand& o, unsigned lane) {
    const uint32_t ntid[3] = {cfg_.block.x, cfg_.block.y, cfg_.block.z};
    const uint32_t nctaid[3] = {cfg_.grid.x, cfg_.grid.y, cfg_.grid.z};
    switch (o.special) {
      case Special::kTid: {
        uint32_t t[3];
        tid(w, lane, t);
        return t[o.component];
      }
      case Special::kNtid: return ntid[o.component];
      case Special::kCtaid: return ctaid_[o.component];
      case Special::kNctaid: return nctaid[o.component];
      case Special::kLaneid: return lane;
      case Special::kWarpid: return w.id;
      case Special::kNwarpid: return 64;  // the most warps an SM holds (sm_90)
      case Special::kSmid: return block_ % cfg_.smCount;
      case Special::kNsmid: return cfg_.smCount;
      case Special::kGridid: return 1;
      case Special::kLanemaskEq: return uint64_t{1} << lane;
      case Special::kLanemaskLt: return (uint64_t{1} << lane) - 1;
      case Special::kLanemaskLe: return (uint64_t{2} << lane) - 1;
      case Special::kLanemaskGt: return ~((uint64_t{2} << lane) - 1) & 0xffffffffu;
      case Special::kLanemaskGe: return ~((uint64_t{1} << lane) - 1) & 0xffffffffu;
      case Special::kClock: return w.executed & 0xffffffffu;
      case Special::kClock64: return w.executed;
      case Special::kGlobaltimer: {
        if (cfg_.warpInstructionPs <= 0) return cfg_.globalTimerNs + w.executed;
        // The caller's clock at the piece's start, moved on by the time the kernel's instructions
        // since then take to issue (as the caller times them), and by the warp's sleeps.
        const uint64_t t = clockNs_ +
                           static_cast<uint64_t>(static_cast<double>(result_.warpInstructions - clockInstructions_) *
                                                 cfg_.warpInstructionPs / 1000.0) +
                           w.sleptNs;
        w.lastTimer = std::max(w.lastTimer, t);
        return w.lastTimer;
      }
      case Special::kDynamicSmemSize: return cfg_.dynamicShared;
      case Special::kTotalSmemSize: return sharedBytes_;
    }
    return 0;
  }

  // The row of values of a source operand: a register row, or `tmp` filled.
  const uint64_t* source(Warp& w, const Operand& o, uint64_t* tmp) {
    switch (o.kind) {
      case Operand::Kind::kReg:
        if (!o.negate) return row(w, o.reg);
        {
          const uint64_t* r = row(w, o.reg);
          for (unsigned l = 0; l < 32; ++l) tmp[l] = r[l] == 0;
        }
        return tmp;
      case Operand::Kind::kSpecial:
        for (unsigned l = 0; l < 32; ++l) tmp[l] = special(w, o, l);
        return tmp;
      default:
        for (unsigned l = 0; l < 32; ++l) tmp[l] = o.imm;
        if (o.frame)
          for (unsigned l = 0; l < 32; ++l) tmp[l] += w.shift[l];
        return tmp;
    }
  }

  // ---- faults

  void fail(Fault f, const Warp& w, unsigned lane, const Instruction* in, const std::string& what) {
    if (result_.fault != Fault::kNone) return;
    uint32_t t[3];
    tid(w, lane, t);
    std::string m = "kernel '" + fn_.name + "' block (" + std::to_string(ctaid_[0]) + "," + std::to_string(ctaid_[1]) + "," +
                    std::to_string(ctaid_[2]) + ") thread (" + std::to_string(t[0]) + "," + std::to_string(t[1]) + "," +
                    std::to_string(t[2]) + "): " + what;
    if (in != nullptr) {
      m += " in '" + in->text + "' at " + ex_.module_.name + ":" + std::to_string(in->line);
      const std::string src = ex_.module_.sourceOf(*in);
      if (!src.empty()) m += " (" + src + ")";
    }
    result_.fault = f;
    result_.message = m;
  }

  // ---- memory

  // Host bytes for `size` bytes at `addr` in `space` for `lane`, or nullptr after a fault.
  // `align`: the alignment the access needs, when not its size (cp.async's partial and bulk copies).
  uint8_t* locate(Warp& w, unsigned lane, const Instruction& in, Space space, uint64_t addr, unsigned size, AccessKind kind,
                  unsigned align = 0) {
    if (addr % (align != 0 ? align : size) != 0) {
      fail(Fault::kMisalignedAddress, w, lane, &in,
           "misaligned address " + hex(addr) + " (" + std::to_string(size) + "-byte access" +
               (align != 0 && align != size ? ", aligned to " + std::to_string(align) : std::string()) + ")");
      return nullptr;
    }
    uint64_t off = addr;
    if (space == Space::kGeneric) {
      const uint64_t window = addr & ~(kWindowSize - 1);
      off = addr - window;
      space = window == kSharedWindow  ? Space::kShared
              : window == kLocalWindow ? Space::kLocal
              : window == kConstWindow ? Space::kConst
              : window == kParamWindow ? Space::kParam
                                       : Space::kGlobal;
      if (space == Space::kGlobal) off = addr;
    }
    auto inside = [&](uint64_t bytes) { return off < bytes && size <= bytes - off; };
    const bool write = kind != AccessKind::kRead;
    const char* bad = nullptr;
    bool linkDown = false;  // the memory is behind an NVLink path that is down
    uint8_t* p = nullptr;
    switch (space) {
      case Space::kShared:
        if (inside(shared_.size())) p = shared_.data() + off;
        else bad = "outside the block's shared memory";
        break;
      case Space::kLocal:
        if (inside(localStride_)) {
          p = w.local.data() + uint64_t{lane} * localStride_ + off;
        } else if (off >= kFrameBase) {
          // The frames of recursive activations, far above the kernel's own local memory (which
          // grows when a function is linked at its first call, and must not move them).
          std::vector<uint8_t>& st = w.stack[lane];
          const uint64_t at = off - kFrameBase;
          if (at < st.size() && size <= st.size() - at) p = st.data() + at;
          else bad = "outside the thread's local memory";
        } else {
          bad = "outside the thread's local memory";
        }
        break;
      case Space::kParam:
        if (write) bad = "a write to kernel parameters";
        else if (inside(cfg_.params.size())) p = const_cast<uint8_t*>(cfg_.params.data()) + off;
        else bad = "outside the kernel's parameters";
        break;
      case Space::kConst:
        if (write) {
          bad = "a write to constant memory";
          break;
        }
        if (!inside(ex_.consts_.size())) {
          bad = "outside the module's constant memory";
          break;
        }
        if (cfg_.moduleGlobalsVa == 0) {
          p = ex_.consts_.data() + off;
          break;
        }
        // The bank lives in device memory after the .global variables (the driver placed it, and
        // the host writes it there): read through the global window, as a constant cache would,
        // without counting DRAM traffic.
        addr = cfg_.moduleGlobalsVa + ex_.module_.constOffset() + off;
        [[fallthrough]];
      default:
        if (space != Space::kConst && (addr & ~(kWindowSize - 1)) == kModuleGlobalWindow) {
          off = addr - kModuleGlobalWindow;
          if (!inside(ex_.globals_.size())) {
            bad = "outside the module's global variables";
            break;
          }
          if (cfg_.moduleGlobalsVa == 0) {
            p = ex_.globals_.data() + off;
            break;
          }
          // The variables live in device memory (the driver placed them): an access to them is
          // an access to global memory there.
          addr = cfg_.moduleGlobalsVa + off;
        }
        if (!(addr >= win_.va && addr - win_.va < win_.size && win_.host != nullptr)) {
          flushTraffic();
          const MemoryError e = ex_.memory_.resolve(addr, kind, cfg_.device, &win_);
          if (e != MemoryError::kNone) {
            flushTraffic();
            win_ = MemoryWindow{};
            if (e == MemoryError::kMulticast && plainMulticastStore_) {
              // A plain store to a multicast address: the caller stores to every member
              // (multicastStore), as the hardware does (docs/ptx.md, "Multimem").
              locSpace_ = Space::kGlobal;
              locHost_ = nullptr;
              multicastHit_ = true;
              return nullptr;
            }
            bad = memoryErrorText(e);
            linkDown = e == MemoryError::kLinkDown;
            break;
          }
        }
        if (addr - win_.va + size > win_.size) {
          bad = "runs past the end of its mapping";
          break;
        }
        p = win_.host + (addr - win_.va);
        if (space == Space::kConst) break;
        winBytes_ += size;
        winKind_ = kind;
        countSector(addr, size);
        if (kind == AccessKind::kRead) result_.globalBytesRead += size;
        else result_.globalBytesWritten += size;
        break;
    }
    locSpace_ = space;
    locHost_ = p;
    if (p == nullptr) {
      fail(linkDown ? Fault::kNvlink : Fault::kIllegalAddress, w, lane, &in,
           std::string(linkDown ? "uncorrectable NVLink error at " : "illegal address ") + hex(addr) + " (" + spaceName(space) +
               ", " + std::to_string(size) + " bytes: " + bad + ")");
    }
    return p;
  }

  // Counts the 32-byte sector an access of `size` bytes at `addr` touches (an aligned access of up
  // to 32 bytes lies in one), once for the run however many lanes touch it: the coalescing of a
  // warp instruction's lanes (AccessRun).
  void countSector(uint64_t addr, unsigned size) {
    winLow_ = std::min(winLow_, addr);
    winHigh_ = std::max(winHigh_, addr + size);
    const uint64_t first = addr >> 5, last = (addr + size - 1) >> 5;
    for (uint64_t sector = first; sector <= last; ++sector) {
      bool seen = nSectors_ != 0 && sectors_[nSectors_ - 1] == sector;  // the common case: a lane's neighbour
      for (unsigned i = 0; !seen && i + 1 < nSectors_; ++i) seen = sectors_[i] == sector;
      if (seen) continue;
      if (nSectors_ == kRunSectors) nSectors_ = 0;  // a long run (not one instruction's): count on
      sectors_[nSectors_++] = sector;
      winSectorBytes_ += 32;
    }
  }

  // Tells the memory what the accesses since the window was resolved moved through it.
  void flushTraffic() {
    if (winBytes_ != 0 && win_.host != nullptr) {
      ex_.memory_.accessed(win_, winKind_, AccessRun{winBytes_, winSectorBytes_, winLow_, winHigh_});
    }
    winBytes_ = 0;
    winSectorBytes_ = 0;
    nSectors_ = 0;
    winLow_ = UINT64_MAX;
    winHigh_ = 0;
  }

  void addresses(Warp& w, const Operand& o, uint64_t* out) {
    if (o.reg == kNoReg) {
      for (unsigned l = 0; l < 32; ++l) out[l] = o.imm;
    } else {
      const uint64_t* r = row(w, o.reg);
      for (unsigned l = 0; l < 32; ++l) out[l] = r[l] + o.imm;
    }
    if (o.frame)
      for (unsigned l = 0; l < 32; ++l) out[l] += w.shift[l];
  }

  void load(Warp& w, const Instruction& in, uint32_t exec) {
    const unsigned esize = typeBytes(in.type), n = in.vec;
    uint64_t addr[32];
    addresses(w, in.ops[1], addr);
    const Operand& d = in.ops[0];
    flushTraffic();
    win_ = MemoryWindow{};
    for (uint32_t m = exec; m != 0; m &= m - 1) {
      const unsigned l = static_cast<unsigned>(__builtin_ctz(m));
      const uint8_t* p = locate(w, l, in, in.space, addr[l], esize * n, AccessKind::kRead);
      if (p == nullptr) return;
      watch(w, l, addr[l], p, esize * n);
      for (unsigned e = 0; e < n; ++e) {
        uint64_t v = 0;
        std::memcpy(&v, p + e * esize, esize);  // little-endian host
        if (isSigned(in.type)) v = signExtend(v, esize * 8);
        const uint32_t reg = d.kind == Operand::Kind::kVec ? (d.vec[e].sink ? kNoReg : d.vec[e].reg) : d.reg;
        if (reg != kNoReg) row(w, reg)[l] = v & regMask_[reg];
      }
    }
  }

  void store(Warp& w, const Instruction& in, uint32_t exec) {
    const unsigned esize = typeBytes(in.type), n = in.vec;
    uint64_t addr[32];
    addresses(w, in.ops[0], addr);
    const Operand& s = in.ops[1];
    uint64_t tmp[32];
    const uint64_t* scalar = s.kind == Operand::Kind::kVec ? nullptr : source(w, s, tmp);
    flushTraffic();
    win_ = MemoryWindow{};
    MulticastWindow mc;
    uint8_t value[32];  // the widest st: .v8 of 32 bits
    // A release (st.release at .gpu / .sys, or the warp's first store after such a fence): the
    // memory may hold its bytes back until the writes before it have landed.
    const bool release = in.release || w.fenced;
    const bool offer = release || ex_.memory_.holding();
    for (uint32_t m = exec; m != 0; m &= m - 1) {
      const unsigned l = static_cast<unsigned>(__builtin_ctz(m));
      plainMulticastStore_ = true;
      multicastHit_ = false;
      uint8_t* p = locate(w, l, in, in.space, addr[l], esize * n, AccessKind::kWrite);
      plainMulticastStore_ = false;
      if (p == nullptr && !multicastHit_) return;
      const bool held = p != nullptr && offer && locSpace_ == Space::kGlobal;
      for (unsigned e = 0; e < n; ++e) {
        uint64_t v;
        if (scalar != nullptr) v = scalar[l];
        else v = s.vec[e].isImm ? s.vec[e].imm : row(w, s.vec[e].reg)[l];
        std::memcpy((p != nullptr && !held ? p : value) + e * esize, &v, esize);
      }
      if (held && !ex_.memory_.deferRelease(win_, p, value, esize * n, release)) std::memcpy(p, value, esize * n);
      if (p == nullptr && !multicastStore(w, l, in, addr[l], value, esize * n, mc)) return;
      noteWrite();
    }
    if (locSpace_ == Space::kGlobal) w.fenced = false;
  }

  // A plain st to a multicast address (locate found one): the value goes to every member's
  // memory at that offset, as multimem.st would put it. The PTX ISA (9.7.9.14) leaves any access
  // but multimem's to a multicast address undefined; NCCL's NVLS kernels post their step counters
  // through multicast addresses with plain st (st.relaxed.sys.global.u64, and st.b8 / st.b16 for
  // the odd bytes of a multimem copy), and NCCL's developers state that on the hardware a
  // multimem store and a plain store are the same instruction (NVIDIA/nccl#1230): so mcsim treats
  // it as multimem.st (docs/ptx.md, "Multimem"). Plain loads and atomics there stay illegal.
  bool multicastStore(Warp& w, unsigned l, const Instruction& in, uint64_t a, const uint8_t* value, unsigned bytes,
                      MulticastWindow& mc) {
    if (!(a >= mc.va && a - mc.va < mc.size && !mc.members.empty())) {
      const MemoryError e = ex_.memory_.resolveMulticast(a, AccessKind::kWrite, cfg_.device, &mc);
      if (e != MemoryError::kNone) {
        mc = MulticastWindow{};
        fail(Fault::kIllegalAddress, w, l, &in,
             "illegal address " + hex(a) + " (global, " + std::to_string(bytes) + " bytes: " + memoryErrorText(e) + ")");
        return false;
      }
    }
    if (a - mc.va + bytes > mc.size) {
      fail(Fault::kIllegalAddress, w, l, &in,
           "illegal address " + hex(a) + " (global, " + std::to_string(bytes) + " bytes: runs past the end of its mapping)");
      return false;
    }
    const uint64_t off = a - mc.va;
    for (uint8_t* p : mc.members) std::memcpy(p + off, value, bytes);
    result_.globalBytesWritten += uint64_t{bytes} * mc.members.size();
    MulticastWindow at = mc;
    at.offset += off;
    at.va = a;
    ex_.memory_.accessedMulticast(at, MultimemKind::kStore, bytes);
    locSpace_ = Space::kGlobal;
    locHost_ = nullptr;
    return true;
  }

  void atomic(Warp& w, const Instruction& in, uint32_t exec) {
    const bool isAtom = in.op == Op::kAtom;
    const Operand& a = in.ops[isAtom ? 1 : 0];
    uint64_t addr[32], tb[32], tc[32];
    addresses(w, a, addr);
    const uint64_t* b = source(w, in.ops[isAtom ? 2 : 1], tb);
    const uint64_t* c = isAtom && in.nops > 3 ? source(w, in.ops[3], tc) : nullptr;
    const unsigned size = typeBytes(in.type);
    uint64_t old[32] = {};
    flushTraffic();
    win_ = MemoryWindow{};
    // Lanes in ascending order: the order in which one warp's atomics to one address apply.
    for (uint32_t m = exec; m != 0; m &= m - 1) {
      const unsigned l = static_cast<unsigned>(__builtin_ctz(m));
      uint8_t* p = locate(w, l, in, in.space, addr[l], size, AccessKind::kAtomic);
      if (p == nullptr) return;
      uint64_t v = 0;
      std::memcpy(&v, p, size);
      old[l] = isSigned(in.type) ? signExtend(v, size * 8) : v;
      const uint64_t nv = atomicResult(in, v, b[l], c != nullptr ? c[l] : 0);
      std::memcpy(p, &nv, size);
      if (((nv ^ v) & (size >= 8 ? ~uint64_t{0} : (uint64_t{1} << (size * 8)) - 1)) != 0) {
        noteWrite();
      } else {
        // An atomic that changed nothing (a failed compare-and-swap) is a read, as spins do.
        watch(w, l, addr[l], p, size);
        if (in.atomOp == AtomOp::kCas && c != nullptr && spin_.last.addr == addr[l]) {
          spin_.last.expected = b[l];
          spin_.last.hasExpected = true;
        }
      }
    }
    if (isAtom && in.ops[0].kind == Operand::Kind::kReg) writeRow(w, in.ops[0].reg, exec, old);
  }

  // ---- multimem (PTX ISA 9.7.9.14)

  // multimem.ld_reduce / .st / .red: each lane's address is a multicast address, resolved now to
  // every member device's memory behind it (GlobalMemory::resolveMulticast). ld_reduce reads
  // every member's value and combines them in ascending device ordinal, ((m0 op m1) op m2) ...;
  // st writes the value to every member; red combines it into every member, member by member in
  // ascending ordinal. Lanes in ascending order, as the atomics'.
  void multimem(Warp& w, const Instruction& in, uint32_t exec) {
    const bool load = in.multimem == MultimemOp::kLdReduce;
    const unsigned esize = typeBytes(in.type), n = in.vec, bytes = esize * n;
    const AccessKind kind = load ? AccessKind::kRead : in.multimem == MultimemOp::kSt ? AccessKind::kWrite : AccessKind::kAtomic;
    const MultimemKind mk = load ? MultimemKind::kLoadReduce : in.multimem == MultimemOp::kSt ? MultimemKind::kStore : MultimemKind::kReduce;
    uint64_t addr[32];
    addresses(w, in.ops[load ? 1 : 0], addr);
    const Operand& v = in.ops[load ? 0 : 1];
    uint64_t tmp[32];
    const uint64_t* scalar = v.kind == Operand::Kind::kVec ? nullptr : source(w, v, tmp);
    flushTraffic();
    win_ = MemoryWindow{};
    MulticastWindow mc;
    uint64_t mcBytes = 0, mcFirst = 0;  // bytes accessed through `mc`, from the lowest address
    const auto flush = [&] {
      if (mcBytes != 0 && !mc.members.empty()) {
        MulticastWindow at = mc;
        at.offset += mcFirst - mc.va;
        at.va = mcFirst;
        ex_.memory_.accessedMulticast(at, mk, mcBytes);
      }
      mcBytes = 0;
    };
    uint8_t value[16], acc[16];
    std::vector<const uint8_t*> at;
    for (uint32_t m = exec; m != 0; m &= m - 1) {
      const unsigned l = static_cast<unsigned>(__builtin_ctz(m));
      const uint64_t a = addr[l];
      const uint64_t window = a & ~(kWindowSize - 1);
      if (window == kSharedWindow || window == kLocalWindow || window == kConstWindow || window == kParamWindow ||
          window == kModuleGlobalWindow) {
        flush();
        fail(Fault::kIllegalAddress, w, l, &in,
             "illegal address " + hex(a) + " (multimem, " + std::to_string(bytes) + " bytes: not a multicast address, which multimem instructions need)");
        return;
      }
      if (a % bytes != 0) {
        flush();
        fail(Fault::kMisalignedAddress, w, l, &in, "misaligned address " + hex(a) + " (" + std::to_string(bytes) + "-byte access)");
        return;
      }
      if (!(a >= mc.va && a - mc.va < mc.size && !mc.members.empty())) {
        flush();
        const MemoryError e = ex_.memory_.resolveMulticast(a, kind, cfg_.device, &mc);
        if (e != MemoryError::kNone) {
          mc = MulticastWindow{};
          fail(e == MemoryError::kLinkDown ? Fault::kNvlink : Fault::kIllegalAddress, w, l, &in,
               std::string(e == MemoryError::kLinkDown ? "uncorrectable NVLink error at " : "illegal address ") + hex(a) +
                   " (multimem, " + std::to_string(bytes) + " bytes: " + memoryErrorText(e) + ")");
          return;
        }
      }
      if (a - mc.va + bytes > mc.size) {
        flush();
        fail(Fault::kIllegalAddress, w, l, &in,
             "illegal address " + hex(a) + " (multimem, " + std::to_string(bytes) + " bytes: runs past the end of its mapping)");
        return;
      }
      const uint64_t off = a - mc.va;
      mcFirst = mcBytes == 0 ? a : std::min(mcFirst, a);
      mcBytes += bytes;
      if (load) {
        result_.globalBytesRead += bytes * mc.members.size();
        if (in.mmFp8 != 0 || (in.accF32 && in.atomOp == AtomOp::kAdd)) {
          at.clear();
          for (uint8_t* p : mc.members) at.push_back(p + off);
          if (in.mmFp8 != 0) multimemFp8(in, at, acc, bytes);
          else multimemSumF32(in.type == Type::kBF16 || in.type == Type::kBF16x2, at, acc, bytes);
        } else {
          std::memcpy(acc, mc.members[0] + off, bytes);
          for (size_t i = 1; i < mc.members.size(); ++i) multimemCombine(in, acc, mc.members[i] + off, bytes);
        }
        if (watching_) {
          // A spin on ld_reduce watches every member's word; the report shows the reduced value.
          locSpace_ = Space::kGlobal;
          for (uint8_t* p : mc.members) watch(w, l, a, p + off, bytes);
          spin_.last.value = 0;
          std::memcpy(&spin_.last.value, acc, std::min(bytes, 8u));
        }
        for (unsigned e = 0; e < n; ++e) {
          uint64_t x = 0;
          std::memcpy(&x, acc + e * esize, esize);
          if (isSigned(in.type)) x = signExtend(x, esize * 8);
          const uint32_t reg = v.kind == Operand::Kind::kVec ? (v.vec[e].sink ? kNoReg : v.vec[e].reg) : v.reg;
          if (reg != kNoReg) row(w, reg)[l] = x & regMask_[reg];
        }
        continue;
      }
      for (unsigned e = 0; e < n; ++e) {
        const uint64_t x = scalar != nullptr ? scalar[l] : v.vec[e].isImm ? v.vec[e].imm : row(w, v.vec[e].reg)[l];
        std::memcpy(value + e * esize, &x, esize);
      }
      result_.globalBytesWritten += bytes * mc.members.size();
      for (uint8_t* p : mc.members) {
        if (in.multimem == MultimemOp::kSt) std::memcpy(p + off, value, bytes);
        else multimemCombine(in, p + off, value, bytes);
      }
      locSpace_ = Space::kGlobal;
      locHost_ = nullptr;
      noteWrite();
    }
    flush();
  }

  // ---- synchronisation

  uint32_t liveThreads() const {
    uint32_t n = 0;
    for (const Warp& w : warps_) n += static_cast<uint32_t>(__builtin_popcount(w.live));
    return n;
  }

  void checkBarrier(unsigned id) {
    Barrier& b = bars_[id];
    if (b.arrived == 0) return;
    const uint32_t expected = b.expected != 0 ? b.expected : liveThreads();
    if (b.arrived < expected) return;
    for (Warp& w : warps_) {
      if (w.blocked != 0 && w.barId == id) {
        if (w.barRed != nullptr) {  // bar.red: the reduction over every arrived thread
          const Instruction& in = *w.barRed;
          const uint64_t v = in.boolOp == BoolOp::kAnd ? (b.predTrue == b.arrived ? 1 : 0)
                             : in.boolOp == BoolOp::kOr ? (b.predTrue != 0 ? 1 : 0)
                                                        : b.predTrue;
          uint64_t* d = row(w, in.ops[0].reg);
          for (uint32_t m = w.blocked; m != 0; m &= m - 1) d[__builtin_ctz(m)] = v;
          w.barRed = nullptr;
        }
        w.blocked = 0;
        reschedule(w);
      }
    }
    b = Barrier{};
  }

  void barrier(Warp& w, const Instruction& in, uint32_t exec) {
    uint64_t t0[32], t1[32], t2[32];
    const unsigned lane = static_cast<unsigned>(__builtin_ctz(exec));
    const bool red = in.barMode == BarMode::kRed;  // bar.red d, a, [b,] c: the id and count one operand on
    const uint64_t id = source(w, in.ops[red ? 1 : 0], t0)[lane];
    if (id >= kBarriers) {
      fail(Fault::kTrap, w, lane, &in, "barrier id " + std::to_string(id) + " out of range 0-15");
      return;
    }
    Barrier& b = bars_[id];
    if (in.nops > (red ? 3 : 1)) b.expected = static_cast<uint32_t>(source(w, in.ops[red ? 2 : 1], t1)[lane]);
    b.arrived += static_cast<uint32_t>(__builtin_popcount(exec));
    if (red) {
      const uint64_t* c = source(w, in.ops[in.nops - 1], t2);
      for (uint32_t m = exec; m != 0; m &= m - 1) b.predTrue += c[__builtin_ctz(m)] != 0 ? 1 : 0;
      w.barRed = &in;
    }
    for (uint32_t m = w.active; m != 0; m &= m - 1) w.lanePc[__builtin_ctz(m)] = w.pc + 1;
    if (in.barMode == BarMode::kSync || red) {
      w.blocked |= exec;
      w.barId = static_cast<uint32_t>(id);
    }
    reschedule(w);
    checkBarrier(static_cast<unsigned>(id));
  }

  void shuffle(Warp& w, const Instruction& in, uint32_t exec) {
    uint64_t ta[32], tb[32], tc[32];
    const uint64_t* a = source(w, in.ops[2], ta);
    const uint64_t* b = source(w, in.ops[3], tb);
    const uint64_t* c = source(w, in.ops[4], tc);
    uint64_t d[32] = {}, p[32] = {};
    for (uint32_t m = exec; m != 0; m &= m - 1) {
      const unsigned l = static_cast<unsigned>(__builtin_ctz(m));
      // PTX ISA, shfl.sync: c packs the clamp value (bits 0-4) and the segment mask (8-12).
      const int seg = static_cast<int>((c[l] >> 8) & 0x1f), clamp = static_cast<int>(c[l] & 0x1f);
      const int lane = static_cast<int>(l), bv = static_cast<int>(b[l] & 0x1f);
      const int maxLane = (lane & seg) | (clamp & ~seg), minLane = lane & seg;
      int j = lane;
      bool ok = false;
      switch (in.shflMode) {
        case ShflMode::kUp: j = lane - bv; ok = j >= maxLane; break;
        case ShflMode::kDown: j = lane + bv; ok = j <= maxLane; break;
        case ShflMode::kBfly: j = lane ^ bv; ok = j <= maxLane; break;
        case ShflMode::kIdx: j = minLane | (bv & ~seg); ok = j <= maxLane; break;
      }
      if (!ok) j = lane;
      d[l] = a[j] & 0xffffffffu;
      p[l] = ok;
    }
    writeRow(w, in.ops[0].reg, exec, d);
    if (in.ops[1].kind == Operand::Kind::kReg) writeRow(w, in.ops[1].reg, exec, p);
  }

  void vote(Warp& w, const Instruction& in, uint32_t exec) {
    uint64_t ta[32];
    const uint64_t* a = source(w, in.ops[1], ta);
    uint32_t yes = 0;
    for (uint32_t m = exec; m != 0; m &= m - 1) {
      const unsigned l = static_cast<unsigned>(__builtin_ctz(m));
      if (a[l] != 0) yes |= 1u << l;
    }
    uint64_t v;
    switch (in.voteMode) {
      case VoteMode::kBallot: v = yes; break;
      case VoteMode::kAll: v = yes == exec; break;
      case VoteMode::kAny: v = yes != 0; break;
      default: v = yes == 0 || yes == exec; break;
    }
    uint64_t d[32];
    std::fill(std::begin(d), std::end(d), v);
    writeRow(w, in.ops[0].reg, exec, d);
  }

  void move(Warp& w, const Instruction& in, uint32_t exec) {
    const Operand& d = in.ops[0];
    const Operand& s = in.ops[1];
    uint64_t tmp[32], out[32];
    if (d.kind == Operand::Kind::kVec || s.kind == Operand::Kind::kVec) {
      const Operand& v = d.kind == Operand::Kind::kVec ? d : s;
      const unsigned bits = typeBits(in.type) / v.vecCount;
      const uint64_t em = bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
      if (s.kind == Operand::Kind::kVec) {  // pack: element 0 in the low bits
        std::fill(std::begin(out), std::end(out), 0);
        for (unsigned e = 0; e < v.vecCount; ++e) {
          for (unsigned l = 0; l < 32; ++l) {
            const uint64_t x = v.vec[e].isImm ? v.vec[e].imm : row(w, v.vec[e].reg)[l];
            out[l] |= (x & em) << (e * bits);
          }
        }
        writeRow(w, d.reg, exec, out);
      } else {  // unpack
        const uint64_t* x = source(w, s, tmp);
        for (unsigned e = 0; e < v.vecCount; ++e) {
          if (v.vec[e].sink || v.vec[e].isImm) continue;
          for (unsigned l = 0; l < 32; ++l) out[l] = (x[l] >> (e * bits)) & em;
          writeRow(w, v.vec[e].reg, exec, out);
        }
      }
      return;
    }
    writeRow(w, d.reg, exec, source(w, s, tmp));
  }

  void convertAddress(Warp& w, const Instruction& in, uint32_t exec) {
    uint64_t tmp[32], out[32];
    const uint64_t* a = source(w, in.ops[1], tmp);
    uint64_t base = 0;
    switch (in.space) {
      case Space::kShared: base = kSharedWindow; break;
      case Space::kLocal: base = kLocalWindow; break;
      case Space::kConst: base = kConstWindow; break;
      case Space::kParam: base = kParamWindow; break;
      default: break;  // global and generic addresses are the same (PTX ISA, cvta)
    }
    for (unsigned l = 0; l < 32; ++l) out[l] = in.cvtaTo ? a[l] - base : a[l] + base;
    writeRow(w, in.ops[0].reg, exec, out);
  }

  // ---- warp-level reductions, matching and election (PTX ISA, "Parallel Synchronization and
  // Communication Instructions: redux.sync, match.sync, elect.sync")

  // The lanes each executing lane's instruction spans: those of its membermask that execute it.
  // Lanes of the membermask that do not execute the instruction (exited, or on another path) are
  // left out (the ISA leaves waiting for them undefined). The ISA also leaves an executing lane
  // outside its own membermask undefined; a real H200 runs such a kernel to completion (its
  // synchronisation answers cudaSuccess: docs/real-driver/h200-ptx-isa-nccl-2026-11-29.txt), so
  // mcsim does too, the lane spanning its membermask and itself.
  void memberLanes(Warp& w, uint32_t exec, const Operand& maskOp, uint32_t* span) {
    uint64_t tm[32];
    const uint64_t* mask = source(w, maskOp, tm);
    for (uint32_t m = exec; m != 0; m &= m - 1) {
      const unsigned l = static_cast<unsigned>(__builtin_ctz(m));
      span[l] = (static_cast<uint32_t>(mask[l]) | (1u << l)) & exec;
    }
  }

  // redux.sync.<op>.<type> d, a, membermask: every lane of the span gets the reduction of a over it.
  __attribute__((noinline)) void redux(Warp& w, const Instruction& in, uint32_t exec) {
    uint32_t span[32] = {};
    memberLanes(w, exec, in.ops[2], span);
    uint64_t ta[32], d[32] = {};
    const uint64_t* a = source(w, in.ops[1], ta);
    uint32_t lastSpan = 0;
    uint64_t last = 0;
    for (uint32_t m = exec; m != 0; m &= m - 1) {
      const unsigned l = static_cast<unsigned>(__builtin_ctz(m));
      if (span[l] != lastSpan || lastSpan == 0) {
        lastSpan = span[l];
        last = reduceOver(in, a, span[l]);
      }
      d[l] = last;
    }
    writeRow(w, in.ops[0].reg, exec, d);
  }

  static uint64_t reduceOver(const Instruction& in, const uint64_t* a, uint32_t lanes) {
    const unsigned first = static_cast<unsigned>(__builtin_ctz(lanes));
    if (in.type == Type::kF32) {
      // .min / .max .f32 (sm_100a): .abs takes each value's magnitude; -0 is below +0; a NaN
      // input is left out unless .NaN is given, where it makes the result NaN (the canonical
      // 0x7fffffff, as every f32 NaN the executor produces).
      bool nan = false, any = false;
      float best = 0;
      for (uint32_t m = lanes; m != 0; m &= m - 1) {
        uint32_t bits = static_cast<uint32_t>(a[__builtin_ctz(m)]);
        if (in.reduxAbs) bits &= 0x7fffffffu;
        float x;
        std::memcpy(&x, &bits, 4);
        if (x != x) {
          nan = true;
          continue;
        }
        const bool isMax = in.atomOp == AtomOp::kMax;
        if (!any) {
          best = x;
          any = true;
        } else if (x == best) {
          if (std::signbit(x) != std::signbit(best) && (isMax ? !std::signbit(x) : std::signbit(x))) best = x;
        } else if (isMax ? x > best : x < best) {
          best = x;
        }
      }
      if ((nan && in.reduxNaN) || !any) return 0x7fffffffu;
      uint32_t out;
      std::memcpy(&out, &best, 4);
      return out;
    }
    const bool sgn = in.type == Type::kS32;
    uint32_t acc = static_cast<uint32_t>(a[first]);
    for (uint32_t m = lanes & (lanes - 1); m != 0; m &= m - 1) {
      const uint32_t x = static_cast<uint32_t>(a[__builtin_ctz(m)]);
      switch (in.atomOp) {
        case AtomOp::kAdd: acc += x; break;
        case AtomOp::kAnd: acc &= x; break;
        case AtomOp::kOr: acc |= x; break;
        case AtomOp::kXor: acc ^= x; break;
        case AtomOp::kMin:
          acc = sgn ? static_cast<uint32_t>(std::min(static_cast<int32_t>(acc), static_cast<int32_t>(x))) : std::min(acc, x);
          break;
        default:
          acc = sgn ? static_cast<uint32_t>(std::max(static_cast<int32_t>(acc), static_cast<int32_t>(x))) : std::max(acc, x);
          break;
      }
    }
    return acc;
  }

  // match.any.sync.<type> d, a, membermask: the lanes of the span holding the same a;
  // match.all.sync.<type> d{|p}, a, membermask: membermask if every lane of the span holds the
  // same a (p true), else 0 (p false).
  __attribute__((noinline)) void match(Warp& w, const Instruction& in, uint32_t exec) {
    uint32_t span[32] = {};
    memberLanes(w, exec, in.ops[3], span);
    uint64_t ta[32], tm[32], d[32] = {}, p[32] = {};
    const uint64_t* a = source(w, in.ops[2], ta);
    const uint64_t* mask = source(w, in.ops[3], tm);
    const uint64_t vm = in.type == Type::kB64 ? ~uint64_t{0} : 0xffffffffu;
    for (uint32_t m = exec; m != 0; m &= m - 1) {
      const unsigned l = static_cast<unsigned>(__builtin_ctz(m));
      uint32_t same = 0;
      for (uint32_t k = span[l]; k != 0; k &= k - 1) {
        const unsigned j = static_cast<unsigned>(__builtin_ctz(k));
        if (((a[j] ^ a[l]) & vm) == 0) same |= 1u << j;
      }
      if (in.matchAll) {
        p[l] = same == span[l];
        d[l] = p[l] != 0 ? static_cast<uint32_t>(mask[l]) : 0;
      } else {
        d[l] = same;
      }
    }
    writeRow(w, in.ops[0].reg, exec, d);
    if (in.matchAll && in.ops[1].kind == Operand::Kind::kReg) writeRow(w, in.ops[1].reg, exec, p);
  }

  // elect.sync d|p, membermask: the leader is the lowest lane of the span (the ISA asks only that
  // the same membermask elect the same lane every time); d its %laneid, p true in it alone.
  __attribute__((noinline)) void elect(Warp& w, const Instruction& in, uint32_t exec) {
    uint32_t span[32] = {};
    memberLanes(w, exec, in.ops[2], span);
    uint64_t d[32] = {}, p[32] = {};
    for (uint32_t m = exec; m != 0; m &= m - 1) {
      const unsigned l = static_cast<unsigned>(__builtin_ctz(m));
      const unsigned leader = static_cast<unsigned>(__builtin_ctz(span[l]));
      d[l] = leader;
      p[l] = leader == l;
    }
    if (in.ops[0].kind == Operand::Kind::kReg) writeRow(w, in.ops[0].reg, exec, d);
    if (in.ops[1].kind == Operand::Kind::kReg) writeRow(w, in.ops[1].reg, exec, p);
  }

  // ---- extended precision (PTX ISA, "Extended-Precision Integer Arithmetic Instructions")

  // add.cc / addc{.cc}: d = a + b (+ CC.CF), the carry out to CC.CF; sub.cc / subc{.cc}: d = a -
  // (b + CC.CF), the borrow out to CC.CF; mad{c}.lo/.hi{.cc}: d = the low or high half of a * b,
  // plus c (+ CC.CF), the carry of that addition to CC.CF. 32- or 64-bit; each thread its own CC.
  __attribute__((noinline)) void carry(Warp& w, const Instruction& in, uint32_t exec) {
    __extension__ typedef unsigned __int128 U128;
    __extension__ typedef __int128 S128;
    uint64_t ta[32], tb[32], tc[32], d[32] = {};
    const uint64_t* a = source(w, in.ops[1], ta);
    const uint64_t* b = source(w, in.ops[2], tb);
    const uint64_t* c = in.op == Op::kMadc ? source(w, in.ops[3], tc) : nullptr;
    const unsigned bits = typeBits(in.type);
    const uint64_t m = bits == 64 ? ~uint64_t{0} : 0xffffffffu;
    uint32_t out = 0;
    for (uint32_t k = exec; k != 0; k &= k - 1) {
      const unsigned l = static_cast<unsigned>(__builtin_ctz(k));
      const U128 cf = in.carryIn ? (w.carry >> l) & 1u : 0;
      const uint64_t x = a[l] & m, y = b[l] & m;
      U128 r;
      bool flag;
      if (in.op == Op::kAddc) {
        r = U128{x} + y + cf;
        flag = ((r >> bits) & 1u) != 0;
      } else if (in.op == Op::kSubc) {
        r = U128{x} - y - cf;
        flag = U128{x} < U128{y} + cf;
      } else {
        U128 prod;
        if (isSigned(in.type)) {
          const S128 sx = bits == 64 ? S128{static_cast<int64_t>(x)} : S128{static_cast<int32_t>(x)};
          const S128 sy = bits == 64 ? S128{static_cast<int64_t>(y)} : S128{static_cast<int32_t>(y)};
          prod = static_cast<U128>(sx * sy);
        } else {
          prod = U128{x} * y;
        }
        const uint64_t half = static_cast<uint64_t>(in.mulMode == MulMode::kHi ? prod >> bits : prod) & m;
        r = U128{half} + (c[l] & m) + cf;
        flag = ((r >> bits) & 1u) != 0;
      }
      d[l] = static_cast<uint64_t>(r) & m;
      if (flag) out |= 1u << l;
    }
    writeRow(w, in.ops[0].reg, exec, d);
    if (in.carryOut) w.carry = (w.carry & ~exec) | out;
  }

  // nanosleep.u32 t (PTX ISA, "Miscellaneous Instructions: nanosleep"): the warp's clock
  // (%clock64, %globaltimer) moves on by t (at most 1 ms, the ISA's bound), as if it had slept;
  // nothing sleeps on the host. The lanes sleep together: the longest request counts.
  __attribute__((noinline)) void nanosleep(Warp& w, const Instruction& in, uint32_t exec) {
    uint64_t tt[32];
    const uint64_t* t = source(w, in.ops[0], tt);
    uint64_t most = 0;
    for (uint32_t m = exec; m != 0; m &= m - 1) most = std::max(most, t[__builtin_ctz(m)] & 0xffffffffu);
    w.executed += std::min<uint64_t>(most, 1000000);
    w.sleptNs += std::min<uint64_t>(most, 1000000);
  }

  // ---- mbarrier (PTX ISA, "Parallel Synchronization and Communication Instructions: mbarrier")

  // The host bytes of the mbarrier object `lane` names at `addr`: in shared memory (a .shared
  // address, or a generic one in the shared window), aligned to 8. nullptr after a fault.
  uint8_t* mbarrierAt(Warp& w, unsigned lane, const Instruction& in, Space space, uint64_t addr) {
    if (space != Space::kShared && space != Space::kGeneric) space = Space::kGeneric;
    if (space == Space::kGeneric && (addr & ~(kWindowSize - 1)) != kSharedWindow) {
      const uint64_t window = addr & ~(kWindowSize - 1);
      const char* where = window == kLocalWindow ? "local" : window == kConstWindow ? "const" : window == kParamWindow ? "param" : "global";
      // A real H200 (driver 580.159.04) stops such a kernel with CUDA_ERROR_ILLEGAL_INSTRUCTION
      // (docs/real-driver/h200-ptx-isa-nccl-2026-11-29.txt).
      fail(Fault::kIllegalInstruction, w, lane, &in,
           "illegal instruction at " + hex(addr) + " (mbarrier, 8 bytes: a " + where +
               " address; an mbarrier object lives in shared memory)");
      return nullptr;
    }
    return locate(w, lane, in, space, addr, 8, AccessKind::kAtomic);
  }

  // The object's phase completes when no arrival is pending and its tx-count is zero: the phase
  // flips, the pending count starts again at the expected count.
  static bool settle(Mbarrier& b) {
    if (b.pending != 0 || b.tx != 0) return false;
    b.phase ^= 1;
    b.pending = b.expected;
    return true;
  }

  // Adds `delta` to the tx-count of `b`; the ISA bounds it to +-(2^20 - 1), beyond which mcsim
  // stops the kernel (kTrap). False after a fault.
  bool addTx(Warp& w, unsigned lane, const Instruction& in, uint64_t addr, Mbarrier& b, int64_t delta) {
    b.tx += delta;
    if (b.tx > kMbarrierMaxCount || b.tx < -static_cast<int64_t>(kMbarrierMaxCount)) {
      fail(Fault::kTrap, w, lane, &in,
           "the tx-count of the mbarrier at " + hex(addr) + " would be " + std::to_string(b.tx) +
               ", outside the ISA's range of -(2^20-1) to 2^20-1");
      return false;
    }
    return true;
  }

  // The mbarrier object `lane` names at `addr` (mbarrierAt): its bytes, with its 64-bit word in
  // `word` and unpacked in `b`, checked to be initialised unless `initialising` (mbarrier.init).
  // nullptr after a fault.
  uint8_t* mbarrierRead(Warp& w, unsigned lane, const Instruction& in, Space space, uint64_t addr, uint64_t* word,
                        Mbarrier* b, bool initialising = false) {
    uint8_t* p = mbarrierAt(w, lane, in, space, addr);
    if (p == nullptr) return nullptr;
    std::memcpy(word, p, 8);
    *b = unpackMbarrier(*word);
    if (!initialising && !mbarrierValid(w, lane, in, addr, *b)) return nullptr;
    return p;
  }

  bool mbarrierValid(Warp& w, unsigned lane, const Instruction& in, uint64_t addr, const Mbarrier& b) {
    if (b.valid) return true;
    fail(Fault::kTrap, w, lane, &in,
         "the mbarrier at " + hex(addr) + " is not initialised (mbarrier.init) or was invalidated (undefined in the PTX ISA)");
    return false;
  }

  // An arrive-on of `count` (PTX ISA, mbarrier.arrive): more arrivals than are pending, and an
  // arrival with .noComplete that completes the phase, are undefined in the ISA; mcsim stops the
  // kernel (kTrap). False after a fault.
  bool arrive(Warp& w, unsigned lane, const Instruction& in, uint64_t addr, Mbarrier& b, uint64_t count, bool drop,
              bool noComplete) {
    if (count == 0 || count > kMbarrierMaxCount) {
      fail(Fault::kTrap, w, lane, &in, "arrival count " + std::to_string(count) + " outside the ISA's range of 1 to 2^20-1");
      return false;
    }
    if (count > b.pending || (drop && count > b.expected)) {
      fail(Fault::kTrap, w, lane, &in,
           std::to_string(count) + " arrivals at the mbarrier at " + hex(addr) + ", whose current phase has " +
               std::to_string(b.pending) + " pending (undefined in the PTX ISA)");
      return false;
    }
    if (drop) b.expected -= static_cast<uint32_t>(count);
    b.pending -= static_cast<uint32_t>(count);
    if (noComplete && b.pending == 0 && b.tx == 0) {
      fail(Fault::kTrap, w, lane, &in,
           "an arrival with .noComplete completes the phase of the mbarrier at " + hex(addr) + " (undefined in the PTX ISA)");
      return false;
    }
    settle(b);
    return true;
  }

  // mbarrier.<op>, lane by lane in ascending order (as atomics are). A wait that finds its phase
  // not complete answers false at once (try_wait's suspend-time hint is not waited out); when every
  // lane's wait failed and the warp has no other lanes to run, the warp is parked on the object
  // until it changes (docs/ptx.md, "Spin parking"), so a waiting loop costs no host time.
  __attribute__((noinline)) void mbarrier(Warp& w, const Instruction& in, uint32_t exec) {
    uint64_t tv[32], d[32] = {};
    if (in.mbar == MbarOp::kPendingCount) {
      const uint64_t* state = source(w, in.ops[1], tv);
      for (uint32_t m = exec; m != 0; m &= m - 1) d[__builtin_ctz(m)] = unpackMbarrier(state[__builtin_ctz(m)]).pending;
      writeRow(w, in.ops[0].reg, exec, d);
      return;
    }
    const bool waits = in.mbar == MbarOp::kTestWait || in.mbar == MbarOp::kTryWait;
    const bool arrives = in.mbar == MbarOp::kArrive || in.mbar == MbarOp::kArriveDrop;
    const unsigned ai = waits || arrives ? 1 : 0;  // the address operand
    uint64_t addr[32];
    addresses(w, in.ops[ai], addr);
    const uint64_t* v = in.nops > ai + 1 ? source(w, in.ops[ai + 1], tv) : nullptr;
    flushTraffic();
    win_ = MemoryWindow{};
    uint32_t failed = 0;
    uint8_t* lastWord = nullptr;
    unsigned lastLane = 0;
    uint32_t lastParity = 0;
    for (uint32_t m = exec; m != 0; m &= m - 1) {
      const unsigned l = static_cast<unsigned>(__builtin_ctz(m));
      uint64_t word;
      Mbarrier b;
      uint8_t* p = mbarrierRead(w, l, in, in.space, addr[l], &word, &b, in.mbar == MbarOp::kInit);
      if (p == nullptr) return;
      switch (in.mbar) {
        case MbarOp::kInit: {
          const uint64_t count = v[l] & 0xffffffffu;
          if (count == 0 || count > kMbarrierMaxCount) {
            fail(Fault::kTrap, w, l, &in, "mbarrier.init count " + std::to_string(count) + " outside the ISA's range of 1 to 2^20-1");
            return;
          }
          b = Mbarrier{};
          b.valid = true;
          b.pending = b.expected = static_cast<uint32_t>(count);
          break;
        }
        case MbarOp::kInval: b = Mbarrier{}; break;
        case MbarOp::kArrive: case MbarOp::kArriveDrop: {
          if (in.expectTx && !addTx(w, l, in, addr[l], b, static_cast<int64_t>(v[l] & 0xffffffffu))) return;
          const uint64_t count = v != nullptr && !in.expectTx ? v[l] & 0xffffffffu : 1;
          if (!arrive(w, l, in, addr[l], b, count, in.mbar == MbarOp::kArriveDrop, in.noComplete)) return;
          d[l] = word;
          break;
        }
        case MbarOp::kExpectTx: case MbarOp::kCompleteTx: {
          const int64_t n = static_cast<int64_t>(v[l] & 0xffffffffu);
          if (!addTx(w, l, in, addr[l], b, in.mbar == MbarOp::kExpectTx ? n : -n)) return;
          settle(b);
          break;
        }
        default: {  // test_wait / try_wait: has the phase of the state's (or the given) parity completed?
          const uint32_t parity = in.parity ? static_cast<uint32_t>(v[l] & 1) : static_cast<uint32_t>(v[l] >> 63);
          d[l] = parity != b.phase;
          watch(w, l, addr[l], p, 8);
          if (d[l] == 0) {
            failed |= 1u << l;
            lastWord = p;
            lastLane = l;
            lastParity = parity;
          }
          continue;
        }
      }
      const uint64_t now = packMbarrier(b);
      if (now != word) {
        std::memcpy(p, &now, 8);
        noteWrite();
      }
    }
    if (arrives && in.ops[0].kind == Operand::Kind::kReg) writeRow(w, in.ops[0].reg, exec, d);
    if (!waits) return;
    writeRow(w, in.ops[0].reg, exec, d);
    if (failed != exec || w.nextPc != kNoPc) {
      waitLoop_.on = false;
      return;
    }
    // Every lane's wait failed, and the warp has no other lanes to run. The second such failure
    // of this wait in a row, with nothing written in between and few words read, is a waiting
    // loop: the warp parks on the words it read (the object's among them) until one changes.
    WaitLoop& lp = waitLoop_;
    if (lp.on && lp.pc == w.pc && lp.exec == exec && lp.writes == writes_ && !lp.overflow && !lp.words.words.empty()) {
      Park& pk = mbarrierPark_;
      pk = Park{};
      pk.on = true;
      pk.mbarrier = true;
      pk.global = false;
      pk.waitParity = lastParity;
      pk.addr = addr[lastLane];
      pk.lane = lastLane;
      pk.pc = w.pc;
      std::memcpy(&pk.value, lastWord, 8);
      mbarrierWatch_ = lp.words;
      lp.on = false;
      return;
    }
    lp.on = true;
    lp.pc = w.pc;
    lp.exec = exec;
    lp.writes = writes_;
    lp.overflow = false;
    lp.words.clear();
  }

  // ---- cp.async (PTX ISA, "Data Movement and Conversion Instructions: cp.async" and
  // "cp.async.bulk", with their commit_group / wait_group, and cp.async.mbarrier.arrive)

  // Each copy completes when it is issued: its bytes are read and written through locate(), as
  // ld and st move theirs (the global side counts as the kernel's global traffic, timed as
  // theirs), so they are in place before any wait can say so. commit_group and wait_group /
  // wait_all then have nothing to wait for; cp.async.mbarrier.arrive's arrive-on, which the ISA
  // makes when the thread's earlier cp.async operations are complete, happens at once: without
  // .noinc it raised the pending count first, so it changes nothing; with .noinc it is an arrival.
  __attribute__((noinline)) void cpAsync(Warp& w, const Instruction& in, uint32_t exec) {
    switch (in.cpAsync) {
      case CpAsyncOp::kCopy: copyAsync(w, in, exec); return;
      case CpAsyncOp::kBulk: copyBulk(w, in, exec); return;
      case CpAsyncOp::kMbarArrive: {
        uint64_t addr[32];
        addresses(w, in.ops[0], addr);
        for (uint32_t m = exec; m != 0; m &= m - 1) {
          const unsigned l = static_cast<unsigned>(__builtin_ctz(m));
          uint64_t word;
          Mbarrier b;
          uint8_t* p = mbarrierRead(w, l, in, in.space, addr[l], &word, &b);
          if (p == nullptr) return;
          if (!in.noinc) continue;
          if (!arrive(w, l, in, addr[l], b, 1, false, false)) return;
          const uint64_t now = packMbarrier(b);
          std::memcpy(p, &now, 8);
          noteWrite();
        }
        return;
      }
      default: return;  // commit_group, wait_group, wait_all: every copy is complete already
    }
  }

  // cp.async.{ca,cg}.shared.global [dst], [src], cp-size {, src-size | ignore-src}: cp-size bytes
  // to shared memory, the first src-size of them read from global memory and the rest zero (an
  // ignore-src predicate that holds reads none). Both addresses aligned to cp-size; a src-size
  // above cp-size is undefined in the ISA, and mcsim stops the kernel (kTrap).
  void copyAsync(Warp& w, const Instruction& in, uint32_t exec) {
    const unsigned cpSize = static_cast<unsigned>(in.ops[2].imm);
    uint64_t dst[32], src[32], tv[32];
    addresses(w, in.ops[0], dst);
    addresses(w, in.ops[1], src);
    const bool hasSrcSize = in.nops > (in.cacheHint ? 4 : 3);
    const uint64_t* sv = hasSrcSize ? source(w, in.ops[3], tv) : nullptr;
    const bool ignoreSrc = hasSrcSize && in.ops[3].kind == Operand::Kind::kReg && fn_.regTypes[in.ops[3].reg] == Type::kPred;
    flushTraffic();
    win_ = MemoryWindow{};
    for (uint32_t m = exec; m != 0; m &= m - 1) {
      const unsigned l = static_cast<unsigned>(__builtin_ctz(m));
      uint64_t n = cpSize;
      if (sv != nullptr) n = ignoreSrc ? (sv[l] != 0 ? 0 : cpSize) : sv[l] & 0xffffffffu;
      if (n > cpSize) {
        fail(Fault::kTrap, w, l, &in,
             "src-size " + std::to_string(n) + " is larger than cp-size " + std::to_string(cpSize) + " (undefined in the PTX ISA)");
        return;
      }
      uint8_t bytes[16] = {};
      if (n != 0) {
        const uint8_t* p = locate(w, l, in, in.srcSpace, src[l], static_cast<unsigned>(n), AccessKind::kRead, cpSize);
        if (p == nullptr) return;
        std::memcpy(bytes, p, n);
      }
      uint8_t* q = locate(w, l, in, in.space, dst[l], cpSize, AccessKind::kWrite);
      if (q == nullptr) return;
      std::memcpy(q, bytes, cpSize);
      noteWrite();
    }
  }

  // cp.async.bulk [dst], [src], size {, [mbar]}: size bytes (a multiple of 16; both addresses
  // aligned to 16) from global to shared memory, shared to shared, or shared to global; with
  // .mbarrier::complete_tx::bytes the copy then performs complete-tx of size on the mbarrier.
  void copyBulk(Warp& w, const Instruction& in, uint32_t exec) {
    uint64_t dst[32], src[32], mb[32], ts[32];
    addresses(w, in.ops[0], dst);
    addresses(w, in.ops[1], src);
    const uint64_t* sz = source(w, in.ops[2], ts);
    if (in.bulkMbar) addresses(w, in.ops[3], mb);
    for (uint32_t m = exec; m != 0; m &= m - 1) {
      const unsigned l = static_cast<unsigned>(__builtin_ctz(m));
      const uint64_t n = sz[l] & 0xffffffffu;
      if (n % 16 != 0) {
        fail(Fault::kMisalignedAddress, w, l, &in, "cp.async.bulk size " + std::to_string(n) + " is not a multiple of 16");
        return;
      }
      if (n != 0) {
        flushTraffic();
        win_ = MemoryWindow{};
        const uint8_t* p = locate(w, l, in, in.srcSpace, src[l], static_cast<unsigned>(n), AccessKind::kRead, 16);
        if (p == nullptr) return;
        std::vector<uint8_t> bytes(p, p + n);  // the windows of source and destination may overlap
        flushTraffic();
        win_ = MemoryWindow{};
        uint8_t* q = locate(w, l, in, in.space, dst[l], static_cast<unsigned>(n), AccessKind::kWrite, 16);
        if (q == nullptr) return;
        std::memcpy(q, bytes.data(), n);
        noteWrite();
      }
      if (!in.bulkMbar) continue;
      uint64_t word;
      Mbarrier b;
      uint8_t* bp = mbarrierRead(w, l, in, Space::kShared, mb[l], &word, &b);
      if (bp == nullptr) return;
      if (!addTx(w, l, in, mb[l], b, -static_cast<int64_t>(n))) return;
      settle(b);
      const uint64_t now = packMbarrier(b);
      std::memcpy(bp, &now, 8);
      noteWrite();
    }
  }

  // ---- one instruction

  void step(Warp& w, const Instruction& in) {
    uint32_t exec = w.active;
    if (in.guard != kNoReg) exec &= in.guardNegated ? ~predMask(w, in.guard) : predMask(w, in.guard);
    ++result_.warpInstructions;
    ++w.executed;
    result_.threadInstructions += exec == 0xffffffffu ? 32 : static_cast<uint64_t>(__builtin_popcount(exec));
    switch (in.op) {
      case Op::kBra: {
        const uint32_t target = in.ops[0].target;
        if (exec == w.active) jump(w, target);
        else if (exec == 0) jump(w, w.pc + 1);
        else split(w, exec, target, w.pc + 1);
        return;
      }
      case Op::kBrx:
        branchIndexed(w, in, exec);
        return;
      case Op::kCall:
        call(w, in, exec);
        return;
      case Op::kRet:
        if (exec != 0 && hasCalls_) {
          returnFrom(w, exec);
          return;
        }
        [[fallthrough]];
      case Op::kExit: {
        // The kernel's ret, or exit anywhere, ends the thread.
        w.live &= ~exec;
        const uint32_t rest = w.active & ~exec;
        w.active = rest;
        if (rest != 0) jump(w, w.pc + 1);
        else reschedule(w);
        if (exec != 0)
          for (unsigned id = 0; id < kBarriers; ++id) checkBarrier(id);
        return;
      }
      case Op::kTrap:
        if (exec != 0) {
          fail(Fault::kTrap, w, static_cast<unsigned>(__builtin_ctz(exec)), &in, "trap");
          return;
        }
        break;
      case Op::kBar:
        // bar.warp.sync: min-PC scheduling already holds back lanes that are ahead until the lanes
        // behind them have caught up, and every access is visible at once (docs/ptx.md).
        if (in.barMode == BarMode::kWarpSync) break;
        if (exec != 0) {
          barrier(w, in, exec);
          return;
        }
        break;
      case Op::kMembar:
        // Orders memory accesses: a sequential interpreter performs every access in program
        // order, visible to all threads at once, so there is nothing to do for the results. A
        // fence beyond the CTA makes the warp's next store a release, which a memory that times
        // visibility publishes once the writes before it have landed (GlobalMemory::deferRelease).
        if (in.release) w.fenced = true;
        // Its cost (a memory that times fences: GlobalMemory::fence): the warp waits while the
        // writes before it are made visible at its scope. A fence with no write of the warp's
        // own since its last one has nothing of the warp's to order and costs nothing here, so
        // that a loop that polls a word with a fence each time around still parks as a spin.
        if (in.release && exec != 0 && (w.wroteSinceFence || globalWrites_ != turnWrites_)) {
          w.fenceTicket = ex_.memory_.fence(in.systemScope);
          w.wroteSinceFence = false;
          turnWrites_ = globalWrites_;
        }
        break;
      case Op::kLd: if (exec) load(w, in, exec); break;
      case Op::kSt: if (exec) store(w, in, exec); break;
      case Op::kAtom: case Op::kRed: if (exec) atomic(w, in, exec); break;
      case Op::kMultimem: if (exec) multimem(w, in, exec); break;
      case Op::kShfl: if (exec) shuffle(w, in, exec); break;
      case Op::kVote: if (exec) vote(w, in, exec); break;
      case Op::kActivemask: {
        uint64_t d[32];
        std::fill(std::begin(d), std::end(d), uint64_t{w.active});
        writeRow(w, in.ops[0].reg, exec, d);
        break;
      }
      case Op::kMov: if (exec) move(w, in, exec); break;
      case Op::kCvta: if (exec) convertAddress(w, in, exec); break;
      case Op::kRedux: if (exec) redux(w, in, exec); break;
      case Op::kMatch: if (exec) match(w, in, exec); break;
      case Op::kElect: if (exec) elect(w, in, exec); break;
      case Op::kMbarrier: if (exec) mbarrier(w, in, exec); break;
      case Op::kCpAsync: if (exec) cpAsync(w, in, exec); break;
      case Op::kNanosleep: if (exec) nanosleep(w, in, exec); break;
      case Op::kAddc: case Op::kSubc: case Op::kMadc: if (exec) carry(w, in, exec); break;
      default:
        if (exec != 0) alu(w, in, exec);
        break;
    }
    if (result_.fault != Fault::kNone) return;
    jump(w, w.pc + 1);
  }

  // brx.idx: the lanes `exec` go to entry `index` of the instruction's .branchtargets list, each
  // its own (lanes that pick different entries diverge and reconverge by the min-PC rule); the
  // other active lanes go on. The ISA leaves an index past the list's end undefined: it stops the
  // kernel (Fault::kInvalidPc) naming the index and the list's length.
  void branchIndexed(Warp& w, const Instruction& in, uint32_t exec) {
    const std::vector<uint32_t>& list = fn_.targetLists[in.ops[1].target];
    const uint64_t* index = row(w, in.ops[0].reg);
    for (uint32_t m = exec; m != 0; m &= m - 1) {
      const unsigned l = static_cast<unsigned>(__builtin_ctz(m));
      if ((index[l] & 0xffffffffu) >= list.size()) {
        fail(Fault::kInvalidPc, w, l, &in,
             "brx.idx index " + std::to_string(index[l] & 0xffffffffu) + " is outside its .branchtargets list of " +
                 std::to_string(list.size()) + " labels");
        return;
      }
    }
    for (uint32_t m = w.active; m != 0; m &= m - 1) {
      const unsigned l = static_cast<unsigned>(__builtin_ctz(m));
      w.lanePc[l] = (exec >> l) & 1u ? list[index[l] & 0xffffffffu] : w.pc + 1;
    }
    reschedule(w);
  }

  // ---- calls (docs/ptx.md, "Device functions")

  // Host bytes at local offset `off` of lane `lane`: the kernel's local memory, or from kFrameBase
  // on a frame on the lane's stack. Offsets from linking (call sites, parameters) are always inside.
  uint8_t* localAt(Warp& w, unsigned lane, uint64_t off) {
    if (off < kFrameBase) return w.local.data() + uint64_t{lane} * localStride_ + off;
    return w.stack[lane].data() + (off - kFrameBase);
  }
  // The offset of a call site's argument and return variables for `lane`.
  static uint64_t siteShift(const Warp& w, unsigned lane, const CallSite& site) { return site.inFrame ? w.shift[lane] : 0; }

  // The lanes `exec` call; the other active lanes go on. A recursive callee gets a frame of its own
  // on the lane's stack (its local memory at addresses no other activation has, so that pointers
  // to a caller's locals stay valid in the callee) and its registers are saved; the caller's
  // argument variables are copied into the callee's parameters.
  void call(Warp& w, const Instruction& in, uint32_t exec) {
    const CallSite& site = fn_.calls[in.ops[0].target];
    if (site.indirect) {
      indirectCall(w, in, exec);
      return;
    }
    const Callee& c = fn_.callees[site.callee];
    if (c.builtin != Builtin::kNone) {
      if (exec != 0) builtin(w, in, exec, site, c);
      if (result_.fault == Fault::kNone) jump(w, w.pc + 1);
      return;
    }
    if (exec == 0) {
      jump(w, w.pc + 1);
      return;
    }
    for (uint32_t m = exec; m != 0; m &= m - 1) {
      const unsigned l = static_cast<unsigned>(__builtin_ctz(m));
      std::vector<Frame>& frames = w.frames[l];
      if (frames.size() >= kMaxCallDepth) {
        fail(Fault::kIllegalAddress, w, l, &in,
             "call stack overflow: " + std::to_string(kMaxCallDepth) + " calls deep calling '" + c.name + "'");
        return;
      }
      enter(w, l, in.ops[0].target, site.callee);
    }
    split(w, exec, c.entryPc, w.pc + 1);
  }

  // Lane `l` enters callee `callee` from call site `siteIndex`: its frame is pushed (a recursive
  // callee's registers saved, and its locals given a frame of their own on the lane's stack, so
  // that pointers to a caller's locals stay valid) and the arguments copied into the callee's
  // parameters.
  void enter(Warp& w, unsigned l, uint32_t siteIndex, uint32_t callee) {
    const CallSite& site = fn_.calls[siteIndex];
    const Callee& c = fn_.callees[callee];
    Frame f;
    f.returnPc = w.pc + 1;
    f.site = siteIndex;
    f.callee = callee;
    const uint64_t from = siteShift(w, l, site);
    uint64_t to = 0;
    if (c.recursive) {
      f.regs.resize(c.regCount);
      for (uint32_t r = 0; r < c.regCount; ++r) f.regs[r] = row(w, c.regBase + r)[l];
      f.shift = w.shift[l];
      f.stackTop = w.stack[l].size();
      const uint64_t base = kFrameBase + (f.stackTop + 15) / 16 * 16;  // as linking aligns a function's locals
      w.stack[l].resize(base - kFrameBase + c.localBytes);             // zeroed, as every run's
      to = base - c.localBase;
      w.shift[l] = to;
    }
    w.frames[l].push_back(std::move(f));
    for (size_t k = 0; k < c.params.size() && k < site.args.size(); ++k)
      std::memcpy(localAt(w, l, c.params[k].first + to), localAt(w, l, site.args[k].first + from),
                  std::min(c.params[k].second, site.args[k].second));
  }

  // Links function `name` into the kernel (Module::linkOnCall, extendKernel) and grows this run.
  bool linkFunction(const std::string& name, std::string* why) {
    Module extra;
    if (!ex_.module_.linkOnCall(name, &extra, why)) return false;
    // The module is the executor's owner's, not const: the kernel grows in place.
    Module& module = const_cast<Module&>(ex_.module_);
    if (!extendKernel(module, const_cast<Function*>(&fn_), extra, name, why)) return false;
    hasCalls_ = true;
    followKernel();
    return true;
  }

  // An indirect call (docs/ptx.md, "Indirect calls"): each lane goes to the function whose address
  // its register holds, among those linked into the kernel (Function::indirect); lanes calling
  // different functions diverge and reconverge at the return as any other lanes. An address that
  // is not such a function's stops the kernel with an illegal address before any lane enters.
  void indirectCall(Warp& w, const Instruction& in, uint32_t exec) {
    followKernel();  // another run of this kernel may have linked functions into it
    const uint64_t* target = row(w, in.ops[0].reg);
    uint32_t callee[32];
    for (uint32_t m = exec; m != 0; m &= m - 1) {
      const unsigned l = static_cast<unsigned>(__builtin_ctz(m));
      auto it = std::lower_bound(fn_.indirect.begin(), fn_.indirect.end(), std::make_pair(target[l], uint32_t{0}));
      if (it == fn_.indirect.end() || it->first != target[l]) {
        const std::string* name = ex_.module_.functionAt(target[l]);
        char addr[24];
        std::snprintf(addr, sizeof addr, "0x%llx", static_cast<unsigned long long>(target[l]));
        std::string why;
        if (name != nullptr && ex_.module_.linkOnCall) {
          // A function the link declared only: linked now, at its first call (docs/ptx.md,
          // "Linking a function at its first call"); the kernel's code may move, so the call
          // starts again from its instruction there.
          if (linkFunction(*name, &why)) {
            indirectCall(w, fn_.code[w.pc], exec);
            return;
          }
          why = "', which could not be linked at its first call: " + why;
        }
        fail(Fault::kIllegalAddress, w, l, &in,
             name == nullptr ? std::string("indirect call to ") + addr + ", which is not a function's address"
             : !why.empty()  ? std::string("indirect call to ") + addr + ", the address of '" + *name + why
                             : std::string("indirect call to ") + addr + ", the address of '" + *name +
                                   "', which is declared but not defined in this module");
        return;
      }
      if (w.frames[l].size() >= kMaxCallDepth) {
        fail(Fault::kIllegalAddress, w, l, &in,
             "call stack overflow: " + std::to_string(kMaxCallDepth) + " calls deep calling '" + fn_.callees[it->second].name + "'");
        return;
      }
      callee[l] = it->second;
    }
    for (uint32_t m = w.active; m != 0; m &= m - 1) {
      const unsigned l = static_cast<unsigned>(__builtin_ctz(m));
      if ((exec >> l) & 1u) {
        enter(w, l, in.ops[0].target, callee[l]);
        w.lanePc[l] = fn_.callees[callee[l]].entryPc;
      } else {
        w.lanePc[l] = w.pc + 1;
      }
    }
    reschedule(w);
  }

  // The lanes `exec` execute ret: those in a call return to their callers (the return values
  // copied out; a recursive callee's frame given back and registers restored), the others exit.
  void returnFrom(Warp& w, uint32_t exec) {
    uint32_t exiting = 0;
    for (uint32_t m = w.active & ~exec; m != 0; m &= m - 1) w.lanePc[__builtin_ctz(m)] = w.pc + 1;
    for (uint32_t m = exec; m != 0; m &= m - 1) {
      const unsigned l = static_cast<unsigned>(__builtin_ctz(m));
      std::vector<Frame>& frames = w.frames[l];
      if (frames.empty()) {
        exiting |= 1u << l;
        continue;
      }
      Frame& f = frames.back();
      const CallSite& site = fn_.calls[f.site];
      const Callee& c = fn_.callees[f.callee];
      // The caller's variables are below the callee's frame: copy before the frame is given back.
      const uint64_t from = c.recursive ? w.shift[l] : 0;
      const uint64_t to = site.inFrame ? (c.recursive ? f.shift : w.shift[l]) : 0;
      for (size_t k = 0; k < c.returns.size() && k < site.rets.size(); ++k)
        std::memcpy(localAt(w, l, site.rets[k].first + to), localAt(w, l, c.returns[k].first + from),
                    std::min(c.returns[k].second, site.rets[k].second));
      if (c.recursive) {
        for (uint32_t r = 0; r < c.regCount; ++r) row(w, c.regBase + r)[l] = f.regs[r];
        w.shift[l] = f.shift;
        w.stack[l].resize(f.stackTop);
      }
      w.lanePc[l] = f.returnPc;
      frames.pop_back();
    }
    w.live &= ~exiting;
    reschedule(w);
    if (exiting != 0)
      for (unsigned id = 0; id < kBarriers; ++id) checkBarrier(id);
  }

  // ---- the executor's own functions: vprintf and __assertfail (docs/ptx.md, "printf and assert")

  // The calls of the lanes `exec`, in ascending lane order; arguments from the call's .param
  // variables.
  void builtin(Warp& w, const Instruction& in, uint32_t exec, const CallSite& site, const Callee& c) {
    flushTraffic();
    win_ = MemoryWindow{};
    std::string asserts;
    for (uint32_t m = exec; m != 0; m &= m - 1) {
      const unsigned l = static_cast<unsigned>(__builtin_ctz(m));
      const uint64_t shift = siteShift(w, l, site);
      const auto arg = [&](size_t k) {
        uint64_t v = 0;
        if (k < site.args.size()) std::memcpy(&v, localAt(w, l, site.args[k].first + shift), std::min<uint32_t>(8, site.args[k].second));
        return v;
      };
      if (c.builtin == Builtin::kVprintf) {
        std::string text;
        const int32_t n = formatPrintf(w, l, in, arg(0), arg(1), &text);
        if (result_.fault != Fault::kNone) return;
        if (!site.rets.empty()) std::memcpy(localAt(w, l, site.rets[0].first + shift), &n, std::min<uint32_t>(4, site.rets[0].second));
        if (n >= 0) addPrintfRecord(std::move(text), 16 + 8 * static_cast<uint64_t>(n));
        continue;
      }
      if (c.builtin == Builtin::kMalloc || c.builtin == Builtin::kAlignedMalloc || c.builtin == Builtin::kFree) {
        uint64_t got = 0;
        const bool ok = c.builtin == Builtin::kFree ? heapFree(w, l, in, arg(0))
                                                    : heapAlloc(w, l, in, arg(0), c.builtin == Builtin::kMalloc ? 16 : arg(1), &got);
        if (!ok) return;
        if (c.builtin != Builtin::kFree && !site.rets.empty())
          std::memcpy(localAt(w, l, site.rets[0].first + shift), &got, std::min<uint32_t>(8, site.rets[0].second));
        continue;
      }
      // __assertfail(message, file, line, function, charSize)
      std::string message, file, function;
      if (!readString(w, l, in, arg(0), &message) || !readString(w, l, in, arg(1), &file) ||
          !readString(w, l, in, arg(3), &function))
        return;
      uint32_t t[3];
      tid(w, l, t);
      asserts += file + ":" + std::to_string(static_cast<uint32_t>(arg(2))) + ": " + function + ": block: [" +
                 std::to_string(ctaid_[0]) + "," + std::to_string(ctaid_[1]) + "," + std::to_string(ctaid_[2]) +
                 "], thread: [" + std::to_string(t[0]) + "," + std::to_string(t[1]) + "," + std::to_string(t[2]) +
                 "] Assertion `" + message + "` failed.\n";
    }
    if (c.builtin == Builtin::kAssertFail) {
      result_.assertOutput += asserts;
      fail(Fault::kAssert, w, static_cast<unsigned>(__builtin_ctz(exec)), &in, "device assert failed");
    }
  }

  // ---- the device heap (docs/ptx.md, "malloc and free")
  //
  // The context's heap is a range of device memory whose address and size the module's
  // kDeviceHeapVariable holds; the allocator keeps its state in the heap itself, so that every
  // kernel of the context, of any module, shares it, and allocations outlive the launch. Layout
  // (offsets from the heap's start): a 64-byte header (kHeapMagic, `top`: where the blocks end,
  // the number of free blocks below it), then blocks from offset 64, each a 16-byte header (its
  // payload's bytes, kBlockUsed or kBlockFree) and its payload, so that every payload is 16-byte
  // aligned (the CUDA C++ Programming Guide, "Dynamic Global Memory Allocation": malloc's pointer is
  // aligned to 16 bytes). malloc takes the first free block that fits (merging free neighbours on
  // the way, splitting what is left over), else the space above `top`, else returns NULL.
  static constexpr uint64_t kHeapMagic = 0x3170616568736d63ull;  // "cmsheap1"
  static constexpr uint64_t kBlockUsed = 0x6573752d6b6c62ull;    // "blk-use"
  static constexpr uint64_t kBlockFree = 0x6572662d6b6c62ull;    // "blk-fre"
  static constexpr uint64_t kHeapHeader = 64;

  struct Heap {
    uint64_t base = 0, bytes = 0, top = 0, freeBlocks = 0;
  };

  bool heapRead(Warp& w, unsigned l, const Instruction& in, uint64_t va, uint64_t* v) {
    const uint8_t* p = locate(w, l, in, Space::kGlobal, va, 8, AccessKind::kRead);
    if (p == nullptr) return false;
    std::memcpy(v, p, 8);
    return true;
  }
  bool heapWrite(Warp& w, unsigned l, const Instruction& in, uint64_t va, uint64_t v) {
    uint8_t* p = locate(w, l, in, Space::kGlobal, va, 8, AccessKind::kWrite);
    if (p == nullptr) return false;
    std::memcpy(p, &v, 8);
    noteWrite();
    return true;
  }
  // The heap's place and header (set up on first use); bytes 0: the module has no heap placed.
  bool heapOpen(Warp& w, unsigned l, const Instruction& in, Heap* h) {
    if (ex_.module_.heapVariable < 0) return true;
    const uint64_t var = kModuleGlobalWindow + static_cast<uint64_t>(ex_.module_.heapVariable);
    if (!heapRead(w, l, in, var, &h->base) || !heapRead(w, l, in, var + 8, &h->bytes)) return false;
    if (h->base == 0 || h->bytes < kHeapHeader + 32) {
      h->bytes = 0;
      return true;
    }
    uint64_t magic = 0;
    if (!heapRead(w, l, in, h->base, &magic)) return false;
    if (magic != kHeapMagic) {
      h->top = kHeapHeader;
      h->freeBlocks = 0;
      return heapWrite(w, l, in, h->base, kHeapMagic) && heapWrite(w, l, in, h->base + 8, h->top) &&
             heapWrite(w, l, in, h->base + 16, 0);
    }
    return heapRead(w, l, in, h->base + 8, &h->top) && heapRead(w, l, in, h->base + 16, &h->freeBlocks);
  }
  bool heapClose(Warp& w, unsigned l, const Instruction& in, const Heap& h) {
    return heapWrite(w, l, in, h.base + 8, h.top) && heapWrite(w, l, in, h.base + 16, h.freeBlocks);
  }
  bool heapCorrupt(Warp& w, unsigned l, const Instruction& in, uint64_t block) {
    fail(Fault::kIllegalAddress, w, l, &in,
         "the device heap's block at " + hex(block) + " is overwritten (a write past an allocation's end?)");
    return false;
  }

  // malloc(size) (align 16) and __nv_aligned_device_malloc(size, align): `*out` the payload's
  // address, 0 when the heap has no room, or `align` is not a power of two (the guide).
  bool heapAlloc(Warp& w, unsigned l, const Instruction& in, uint64_t size, uint64_t align, uint64_t* out) {
    *out = 0;
    Heap h;
    if (!heapOpen(w, l, in, &h)) return false;
    if (h.bytes == 0 || align == 0 || (align & (align - 1)) != 0 || size > h.bytes || align > h.bytes) return true;
    const uint64_t need = std::max<uint64_t>((size + 15) / 16 * 16, 16);  // malloc(0) too gets a block of its own
    align = std::max<uint64_t>(align, 16);
    if (h.freeBlocks != 0 && align == 16) {
      for (uint64_t b = kHeapHeader; b < h.top;) {
        uint64_t bytes = 0, mark = 0;
        if (!heapRead(w, l, in, h.base + b, &bytes) || !heapRead(w, l, in, h.base + b + 8, &mark)) return false;
        if ((mark != kBlockUsed && mark != kBlockFree) || bytes % 16 != 0 || bytes > h.top - b - 16)
          return heapCorrupt(w, l, in, h.base + b);
        if (mark == kBlockUsed) {
          b += 16 + bytes;
          continue;
        }
        // Merge the free blocks that follow.
        for (uint64_t next = b + 16 + bytes; next < h.top;) {
          uint64_t nb = 0, nm = 0;
          if (!heapRead(w, l, in, h.base + next, &nb) || !heapRead(w, l, in, h.base + next + 8, &nm)) return false;
          if (nm != kBlockFree) break;
          if (nb % 16 != 0 || nb > h.top - next - 16) return heapCorrupt(w, l, in, h.base + next);
          bytes += 16 + nb;
          --h.freeBlocks;
          next = b + 16 + bytes;
        }
        if (b + 16 + bytes == h.top) {  // the last block: the space above `top` again
          h.top = b;
          --h.freeBlocks;
          break;
        }
        if (!heapWrite(w, l, in, h.base + b, bytes)) return false;
        if (bytes < need) {
          b += 16 + bytes;
          continue;
        }
        if (bytes - need >= 32) {  // the rest stays free
          if (!heapWrite(w, l, in, h.base + b + 16 + need, bytes - need - 16) ||
              !heapWrite(w, l, in, h.base + b + 24 + need, kBlockFree))
            return false;
          ++h.freeBlocks;
          bytes = need;
        }
        --h.freeBlocks;
        if (!heapWrite(w, l, in, h.base + b, bytes) || !heapWrite(w, l, in, h.base + b + 8, kBlockUsed) ||
            !heapClose(w, l, in, h))
          return false;
        *out = h.base + b + 16;
        return true;
      }
    }
    // Above `top`: the payload at the alignment asked for; a gap before it becomes a free block.
    const uint64_t payload = (h.base + h.top + 16 + align - 1) / align * align;
    const uint64_t block = payload - 16 - h.base;
    if (block + 16 > h.bytes || need > h.bytes - block - 16) return heapClose(w, l, in, h);  // no room: NULL
    if (block > h.top) {
      if (!heapWrite(w, l, in, h.base + h.top, block - h.top - 16) || !heapWrite(w, l, in, h.base + h.top + 8, kBlockFree))
        return false;
      ++h.freeBlocks;
    }
    if (!heapWrite(w, l, in, h.base + block, need) || !heapWrite(w, l, in, h.base + block + 8, kBlockUsed)) return false;
    h.top = block + 16 + need;
    if (!heapClose(w, l, in, h)) return false;
    *out = payload;
    return true;
  }

  // free(ptr): nothing for NULL (the guide); a pointer that is not a live allocation of the heap
  // (the guide leaves freeing one twice undefined) is an illegal address.
  bool heapFree(Warp& w, unsigned l, const Instruction& in, uint64_t ptr) {
    if (ptr == 0) return true;
    Heap h;
    if (!heapOpen(w, l, in, &h)) return false;
    uint64_t mark = 0;
    const bool inside = h.bytes != 0 && ptr >= h.base + kHeapHeader + 16 && ptr - h.base <= h.top && (ptr - h.base) % 16 == 0;
    if (inside && !heapRead(w, l, in, ptr - 8, &mark)) return false;
    if (mark != kBlockUsed) {
      fail(Fault::kIllegalAddress, w, l, &in,
           "free(" + hex(ptr) + "): not an allocation of the device heap's that is live (freed already, or not from malloc)");
      return false;
    }
    ++h.freeBlocks;
    return heapWrite(w, l, in, ptr - 8, kBlockFree) && heapClose(w, l, in, h);
  }

  // A NUL-terminated string at the generic address `va` (at most 64 KiB); "(null)" for 0.
  bool readString(Warp& w, unsigned lane, const Instruction& in, uint64_t va, std::string* out) {
    out->clear();
    if (va == 0) {
      *out = "(null)";
      return true;
    }
    for (uint64_t i = 0; i < (uint64_t{1} << 16); ++i) {
      const uint8_t* p = locate(w, lane, in, Space::kGeneric, va + i, 1, AccessKind::kRead);
      if (p == nullptr) return false;
      if (*p == 0) break;
      out->push_back(static_cast<char>(*p));
    }
    return true;
  }

  // Formats one printf: `fmt` the format string's generic address, `args` the argument buffer's
  // (each argument at its size's alignment, as nvcc packs them: ints and chars 4 bytes, long,
  // long long, pointers, strings and doubles 8, floats promoted to double). Returns what vprintf
  // returns: the number of arguments the format consumed, -1 for a null format.
  int32_t formatPrintf(Warp& w, unsigned lane, const Instruction& in, uint64_t fmtVa, uint64_t args, std::string* out) {
    if (fmtVa == 0) return -1;
    std::string fmt;
    if (!readString(w, lane, in, fmtVa, &fmt)) return 0;
    uint64_t offset = 0;
    int32_t count = 0;
    bool ok = true;
    const auto next = [&](unsigned size) -> uint64_t {
      offset = (offset + size - 1) / size * size;
      uint64_t v = 0;
      const uint8_t* p = locate(w, lane, in, Space::kGeneric, args + offset, size, AccessKind::kRead);
      if (p == nullptr) {
        ok = false;
        return 0;
      }
      std::memcpy(&v, p, size);
      offset += size;
      ++count;
      return v;
    };
    char buf[512];
    for (size_t i = 0; i < fmt.size() && ok;) {
      if (fmt[i] != '%') {
        out->push_back(fmt[i++]);
        continue;
      }
      const size_t start = i++;
      std::string spec = "%";
      while (i < fmt.size() && std::strchr("-+ #0", fmt[i]) != nullptr) spec.push_back(fmt[i++]);
      const auto number = [&]() {
        if (i < fmt.size() && fmt[i] == '*') {
          ++i;
          spec += std::to_string(static_cast<int32_t>(next(4)));
          return;
        }
        while (i < fmt.size() && fmt[i] >= '0' && fmt[i] <= '9') spec.push_back(fmt[i++]);
      };
      number();
      if (i < fmt.size() && fmt[i] == '.') {
        spec.push_back(fmt[i++]);
        number();
      }
      bool wide = false;
      std::string narrow;  // h, hh: printed as such (the argument is still a 4-byte int)
      while (i < fmt.size() && std::strchr("hlLqjzt", fmt[i]) != nullptr) {
        if (fmt[i] == 'h') narrow.push_back('h');
        else wide = true;
        ++i;
      }
      if (i >= fmt.size()) {
        out->append(fmt, start, std::string::npos);
        break;
      }
      const char conv = fmt[i++];
      int n = 0;
      if (conv != '%' && count >= kPrintfArguments) {
        // The guide: arguments beyond 32 are ignored and their specifiers printed as written.
        out->append(fmt, start, i - start);
        continue;
      }
      switch (conv) {
        case '%':
          out->push_back('%');
          continue;
        case 'd': case 'i': {
          const uint64_t v = next(wide ? 8 : 4);
          const long long x = wide ? static_cast<long long>(v) : static_cast<long long>(static_cast<int32_t>(v));
          if (narrow.empty()) n = std::snprintf(buf, sizeof buf, (spec + "ll" + conv).c_str(), x);
          else n = std::snprintf(buf, sizeof buf, (spec + narrow + conv).c_str(), static_cast<int>(x));
          break;
        }
        case 'u': case 'x': case 'X': case 'o': {
          const uint64_t v = next(wide ? 8 : 4);
          if (!narrow.empty() || !wide) n = std::snprintf(buf, sizeof buf, (spec + narrow + conv).c_str(), static_cast<unsigned>(v));
          else n = std::snprintf(buf, sizeof buf, (spec + "ll" + conv).c_str(), static_cast<unsigned long long>(v));
          break;
        }
        case 'c':
          n = std::snprintf(buf, sizeof buf, (spec + conv).c_str(), static_cast<int>(static_cast<int32_t>(next(4))));
          break;
        case 'f': case 'F': case 'e': case 'E': case 'g': case 'G': case 'a': case 'A': {
          const uint64_t v = next(8);
          double d;
          std::memcpy(&d, &v, sizeof d);
          n = std::snprintf(buf, sizeof buf, (spec + conv).c_str(), d);
          break;
        }
        case 'p': {
          const uint64_t v = next(8);
          n = std::snprintf(buf, sizeof buf, (spec + "llx").c_str(), static_cast<unsigned long long>(v));
          out->append("0x");
          break;
        }
        case 's': {
          std::string str;
          if (!readString(w, lane, in, next(8), &str)) return 0;
          // Width and precision apply as the host's printf applies them.
          std::vector<char> big(str.size() + 512);
          n = std::snprintf(big.data(), big.size(), (spec + "s").c_str(), str.c_str());
          if (n > 0) out->append(big.data(), std::min<size_t>(static_cast<size_t>(n), big.size() - 1));
          continue;
        }
        default:  // not a conversion: printed as written
          out->append(fmt, start, i - start);
          continue;
      }
      if (n > 0) out->append(buf, std::min<size_t>(static_cast<size_t>(n), sizeof buf - 1));
    }
    return ok ? count : 0;
  }

  // A printf record in the FIFO: the oldest go when the records outgrow it (it is circular).
  void addPrintfRecord(std::string text, uint64_t bytes) {
    printfRecords_.emplace_back(std::move(text), bytes);
    printfBytes_ += bytes;
    while (printfBytes_ > cfg_.printfFifoBytes && !printfRecords_.empty()) {
      printfBytes_ -= printfRecords_.front().second;
      printfRecords_.pop_front();
    }
  }

  void finishOutput() {
    for (const auto& r : printfRecords_) result_.printfOutput += r.first;
    printfRecords_.clear();
    printfBytes_ = 0;
  }

  void alu(Warp& w, const Instruction& in, uint32_t exec) {
    const unsigned ndst = in.op == Op::kSetp ? 2 : 1;
    const uint64_t* src[5] = {zeros_, zeros_, zeros_, zeros_, zeros_};
    const uint64_t* const* imm = &immRows_[static_cast<size_t>(&in - fn_.code.data()) * kMaxOperands];

    for (unsigned i = ndst; i < in.nops; ++i) src[i - ndst] = imm[i] != nullptr ? imm[i] : source(w, in.ops[i], tmp_[i - ndst]);
    const bool second = ndst == 2 && in.ops[1].kind == Operand::Kind::kReg;
    const size_t pc = static_cast<size_t>(&in - fn_.code.data());
    if (exec == 0xffffffffu && direct_[pc]) {
      // Straight into the destination registers: every lane computes from its own operands
      // only, so a destination that is also a source is safe.
      compute(in, exec, src, row(w, in.ops[0].reg), second ? row(w, in.ops[1].reg) : nullptr);
      return;
    }
    compute(in, exec, src, out_, second ? out2_ : nullptr);
    writeRow(w, in.ops[0].reg, exec, out_);
    if (second) writeRow(w, in.ops[1].reg, exec, out2_);
  }

  Executor& ex_;
  const Function& fn_;
  const LaunchConfig cfg_;
  LaunchResult result_;
  RunState state_ = RunState::kProgress;
  uint64_t blocks_ = 0;     // in the grid
  uint64_t resident_ = 0;   // the most blocks resident at once
  uint64_t nextBlock_ = 0;  // the next block to become resident
  std::vector<Slot> slots_;  // the resident blocks
  std::vector<Park> parked_;  // the entered block's, per warp
  std::vector<Watched> watched_;  // the entered block's, per warp
  std::vector<BusySpin> spins_;   // the entered block's, per warp
  SpinWatch spin_;
  // A failed mbarrier wait of the running warp (mbarrier()): the loop it may be waiting in, and
  // where it parks at the end of the instruction once that is clear.
  struct WaitLoop {
    bool on = false;
    bool overflow = false;  // read more words than a waiting loop does
    uint32_t pc = 0, exec = 0;
    uint64_t writes = 0;    // writes_ at the first failure
    Watched words;          // read since
  };
  WaitLoop waitLoop_;
  Park mbarrierPark_;
  Watched mbarrierWatch_;
  bool watching_ = false;     // the running warp's reads are noted (watch)
  bool polled_ = false;       // the running warp's turn ended with it parked (runWarp)
  Space locSpace_ = Space::kGlobal;  // the space locate() resolved last
  const uint8_t* locHost_ = nullptr;  // ... and the bytes (nullptr: none, or a multicast address)
  bool plainMulticastStore_ = false;  // locate() may answer a multicast address (store)
  bool multicastHit_ = false;         // ... and did: nullptr without a fault
  uint64_t writes_ = 0;       // writes to global or shared memory so far (noteWrite)
  uint64_t globalWrites_ = 0;  // ... of them to global memory
  uint64_t turnWrites_ = 0;
  bool fenceMade_ = false;     // a warp parked on a fence this round (advance)
  uint64_t clockNs_ = 0;            // %globaltimer's clock (setClock) ...
  uint64_t clockInstructions_ = 0;  // ... and LaunchResult::warpInstructions when it was set    // globalWrites_ when the running warp's turn began, or at its last fence
  bool wroteGlobal_ = false;  // a warp wrote global memory this advance()
  bool progressed_ = false;   // ... or took a turn that was no spin's, or a block started (progressed)
  std::vector<uint64_t> regMask_;
  uint32_t localStride_ = 0;  // a lane's local memory: the kernel's localBytes when this run last grew
  std::deque<std::pair<std::string, uint64_t>> printfRecords_;  // (text, FIFO bytes)
  uint64_t printfBytes_ = 0;
  bool hasCalls_ = false;     // the kernel calls device functions (ret may return rather than exit)
  uint32_t threadsPerBlock_ = 0;
  uint64_t sharedBytes_ = 0;
  uint64_t block_ = 0;
  uint32_t ctaid_[3] = {};
  std::vector<Warp> warps_;
  std::vector<uint8_t> shared_;
  Barrier bars_[kBarriers];
  MemoryWindow win_;  // the global window resolved by the current instruction
  uint64_t winBytes_ = 0;  // bytes accessed in win_ not yet told to the memory (flushTraffic)
  // ... the sectors they touched (countSector), and the address range they spanned.
  static constexpr unsigned kRunSectors = 32;
  uint64_t sectors_[kRunSectors] = {};
  unsigned nSectors_ = 0;
  uint64_t winSectorBytes_ = 0;
  uint64_t winLow_ = UINT64_MAX, winHigh_ = 0;
  AccessKind winKind_ = AccessKind::kRead;
  std::vector<bool> direct_;                     // per instruction: see the constructor
  std::vector<const uint64_t*> immRows_;         // [instruction * kMaxOperands + operand]
  std::deque<std::vector<uint64_t>> immStore_;   // the rows immRows_ points at
  alignas(64) uint64_t tmp_[5][32] = {};
  alignas(64) uint64_t zeros_[32] = {};
  alignas(64) uint64_t out_[32] = {};
  alignas(64) uint64_t out2_[32] = {};
};

Executor::Executor(const Module& module, GlobalMemory& memory)
    : module_(module), memory_(memory), globals_(module.globalInit), consts_(module.constInit) {}

Executor::~Executor() = default;

Executor::RunPtr Executor::start(const std::string& kernel, const LaunchConfig& config) {
  const Function* fn = module_.find(kernel);
  if (fn == nullptr || !fn->isEntry) return RunPtr(new Run(*this, config, "module '" + module_.name + "' has no kernel '" + kernel + "'"));
  const uint64_t threads = uint64_t{config.block.x} * config.block.y * config.block.z;
  if (threads == 0 || threads > 1024 || config.grid.x == 0 || config.grid.y == 0 || config.grid.z == 0 ||
      config.grid.y > 65535 || config.grid.z > 65535 || config.block.z > 64) {
    return RunPtr(new Run(*this, config, "kernel '" + kernel + "': invalid grid or block dimensions"));
  }
  if (config.params.size() != fn->paramBytes) {
    return RunPtr(new Run(*this, config, "kernel '" + kernel + "' takes " + std::to_string(fn->paramBytes) +
                                             " bytes of parameters, not " + std::to_string(config.params.size())));
  }
  const uint64_t shared = (uint64_t{fn->staticShared} + fn->dynamicSharedAlign - 1) / fn->dynamicSharedAlign *
                              fn->dynamicSharedAlign + config.dynamicShared;
  if (shared > config.maxSharedBytes) {
    return RunPtr(new Run(*this, config, "kernel '" + kernel + "' needs " + std::to_string(shared) +
                                             " bytes of shared memory a block, more than " + std::to_string(config.maxSharedBytes)));
  }
  return RunPtr(new Run(*this, *fn, config));
}

void Executor::RunDeleter::operator()(Run* r) const { delete r; }
RunState Executor::advance(Run& run, uint64_t budget) { return run.advance(budget); }
void Executor::wake(Run& run) { run.wake(); }
void Executor::setClock(Run& run, uint64_t ns) { run.setClock(ns); }
const LaunchResult& Executor::result(const Run& run) { return run.result(); }
bool Executor::wroteGlobal(const Run& run) { return run.wroteGlobal(); }
std::string Executor::describeWait(const Run& run) { return run.describeWait(); }
bool Executor::spinning(const Run& run) { return run.spinning(); }
bool Executor::progressed(const Run& run) { return run.progressed(); }

LaunchResult Executor::launch(const std::string& kernel, const LaunchConfig& config) {
  // Nothing but the kernel itself runs here, so what it waits for can never come: a run whose
  // every warp waits (kWaiting) has hung, and so has one that can only spin while it writes
  // (Run::spinning) for its grace period. The node gives such a spin wall time (a loop that gives
  // up after some tries ends by itself); here, without other work to wait for, the grace is
  // counted in the run's own warp instructions: kSpinGraceSlices slices in a row that made no
  // progress. The run is advanced a slice at a time so that it is seen.
  constexpr uint64_t kSlice = 1 << 16;
  constexpr int kSpinGraceSlices = 256;  // at least 16 Mi warp instructions of spinning, about a second
  RunPtr run = start(kernel, config);
  RunState s = RunState::kProgress;
  for (int spinningSlices = 0; s == RunState::kProgress;) {
    s = run->advance(kSlice);
    spinningSlices = s == RunState::kProgress && run->spinning() && !run->progressed() ? spinningSlices + 1 : 0;
    if (spinningSlices == kSpinGraceSlices) break;
  }
  LaunchResult r = run->result();
  if (s == RunState::kWaiting || s == RunState::kProgress) {
    r.fault = Fault::kTimeout;
    r.message = std::string(s == RunState::kWaiting ? "every warp left waits for memory that nothing will change:\n"
                                                    : "every warp left spins on memory that nothing will change:\n") +
                run->describeWait();
  }
  return r;
}

}  // namespace mcsim::ptx
