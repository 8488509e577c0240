#include "ptx/alu.h"

#include <cfenv>
#include <climits>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "model/half_float.h"

namespace mcsim::ptx {

namespace {

// 128-bit products for mul.hi / mad.hi of 64-bit operands (a GCC and Clang extension).
__extension__ typedef __int128 Int128;
__extension__ typedef unsigned __int128 UInt128;

// Runs fn(lane) for each lane in `mask`; the full-warp case is a plain loop the compiler can
// vectorise.
template <typename F>
inline void each(uint32_t mask, F fn) {
  if (mask == 0xffffffffu) {
    for (unsigned l = 0; l < 32; ++l) fn(l);
  } else {
    for (uint32_t m = mask; m != 0; m &= m - 1) fn(static_cast<unsigned>(__builtin_ctz(m)));
  }
}

template <typename T>
inline uint64_t bitsOut(T v) {
  if constexpr (std::is_floating_point_v<T>) {
    if constexpr (sizeof(T) == 4) {
      uint32_t u;
      std::memcpy(&u, &v, 4);
      return u;
    } else {
      uint64_t u;
      std::memcpy(&u, &v, 8);
      return u;
    }
  } else {
    return static_cast<uint64_t>(static_cast<std::make_unsigned_t<T>>(v));
  }
}

template <typename T>
inline T valueIn(uint64_t bits) {
  if constexpr (std::is_same_v<T, float>) {
    const uint32_t u = static_cast<uint32_t>(bits);
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  } else if constexpr (std::is_same_v<T, double>) {
    double d;
    std::memcpy(&d, &bits, 8);
    return d;
  } else {
    return static_cast<T>(static_cast<std::make_unsigned_t<T>>(bits));
  }
}

// The host rounding mode for the extent of a scope (directed roundings only: the environment
// is already round-to-nearest).
class RoundingScope {
 public:
  explicit RoundingScope(Rounding r) {
    const int mode = r == Rounding::kRz || r == Rounding::kRzi   ? FE_TOWARDZERO
                     : r == Rounding::kRm || r == Rounding::kRmi ? FE_DOWNWARD
                     : r == Rounding::kRp || r == Rounding::kRpi ? FE_UPWARD
                                                                 : FE_TONEAREST;
    if (mode != FE_TONEAREST) {
      saved_ = std::fegetround();
      std::fesetround(mode);
      set_ = true;
    }
  }
  ~RoundingScope() {
    if (set_) std::fesetround(saved_);
  }
  RoundingScope(const RoundingScope&) = delete;
  RoundingScope& operator=(const RoundingScope&) = delete;

 private:
  int saved_ = FE_TONEAREST;
  bool set_ = false;
};

template <typename F>
inline F flush(F x, bool ftz) {
  if (ftz && std::fpclassify(x) == FP_SUBNORMAL) return std::signbit(x) ? F(-0.0) : F(0.0);
  return x;
}

// finish() with the flags known at compile time.
template <typename F, bool kFtz, bool kSat>
inline uint64_t finishAs(F r) {
  if constexpr (kFtz) r = flush(r, true);
  if constexpr (kSat) r = std::isnan(r) ? F(0.0) : std::min(std::max(r, F(0.0)), F(1.0));
  const uint64_t bits = bitsOut(r);
  if constexpr (sizeof(F) == 4) return r != r ? uint64_t{0x7fffffffu} : bits;
  return bits;
}

// The result as PTX gives it: .ftz flushing, .sat clamping, f32 NaN canonical.
template <typename F>
inline uint64_t finish(F r, const Instruction& in) {
  if (in.ftz) return in.sat ? finishAs<F, true, true>(r) : finishAs<F, true, false>(r);
  return in.sat ? finishAs<F, false, true>(r) : finishAs<F, false, false>(r);
}

// min/max (PTX ISA): a NaN operand yields the other one; two NaNs the canonical NaN; -0 < +0.
template <typename F>
inline F fmin(F a, F b, bool isMax) {
  if (std::isnan(a)) return b;
  if (std::isnan(b)) return a;
  if (a == b) return (std::signbit(a) != isMax) ? a : b;  // -0 for min, +0 for max
  return (a < b) != isMax ? a : b;
}

template <typename T>
bool compareInt(Cmp c, T a, T b) {
  switch (c) {
    case Cmp::kEq: return a == b;
    case Cmp::kNe: return a != b;
    case Cmp::kLt: case Cmp::kLo: return a < b;
    case Cmp::kLe: case Cmp::kLs: return a <= b;
    case Cmp::kGt: case Cmp::kHi: return a > b;
    case Cmp::kGe: case Cmp::kHs: return a >= b;
    default: return false;
  }
}

template <typename F>
bool compareFloat(Cmp c, F a, F b) {
  const bool un = std::isnan(a) || std::isnan(b);
  switch (c) {
    case Cmp::kEq: return !un && a == b;
    case Cmp::kNe: return !un && a != b;
    case Cmp::kLt: return !un && a < b;
    case Cmp::kLe: return !un && a <= b;
    case Cmp::kGt: return !un && a > b;
    case Cmp::kGe: return !un && a >= b;
    case Cmp::kEqu: return un || a == b;
    case Cmp::kNeu: return un || a != b;
    case Cmp::kLtu: return un || a < b;
    case Cmp::kLeu: return un || a <= b;
    case Cmp::kGtu: return un || a > b;
    case Cmp::kGeu: return un || a >= b;
    case Cmp::kNum: return !un;
    case Cmp::kNan: return un;
    default: return false;
  }
}

inline bool combine(BoolOp op, bool r, uint64_t c) {
  switch (op) {
    case BoolOp::kNone: return r;
    case BoolOp::kAnd: return r && c != 0;
    case BoolOp::kOr: return r || c != 0;
    case BoolOp::kXor: return r != (c != 0);
  }
  return r;
}

// d[l] = cmp(a, b) for the lanes, with the comparison chosen once, outside the lane loop.
template <typename T, typename Cmp2>
inline void compareLanes(uint32_t mask, const uint64_t* a, const uint64_t* b, bool ftz, uint64_t* d, Cmp2 cmp) {
  each(mask, [&](unsigned l) {
    T x = valueIn<T>(a[l]), y = valueIn<T>(b[l]);
    if constexpr (std::is_floating_point_v<T>) {
      x = flush(x, ftz);
      y = flush(y, ftz);
    }
    d[l] = cmp(x, y);
  });
}

template <typename T>
void setp(const Instruction& in, uint32_t mask, const uint64_t* const* s, uint64_t* d, uint64_t* d2) {
  const uint64_t* a = s[0];
  const uint64_t* b = s[1];
  const bool z = in.ftz;
  if constexpr (std::is_floating_point_v<T>) {
    if (in.cmp == Cmp::kLt) compareLanes<T>(mask, a, b, z, d, [](T x, T y) { return x < y; });
    else if (in.cmp == Cmp::kGt) compareLanes<T>(mask, a, b, z, d, [](T x, T y) { return x > y; });
    else if (in.cmp == Cmp::kLe) compareLanes<T>(mask, a, b, z, d, [](T x, T y) { return x <= y; });
    else if (in.cmp == Cmp::kGe) compareLanes<T>(mask, a, b, z, d, [](T x, T y) { return x >= y; });
    else compareLanes<T>(mask, a, b, z, d, [c = in.cmp](T x, T y) { return compareFloat(c, x, y); });
  } else {
    switch (in.cmp) {
      case Cmp::kEq: compareLanes<T>(mask, a, b, false, d, [](T x, T y) { return x == y; }); break;
      case Cmp::kNe: compareLanes<T>(mask, a, b, false, d, [](T x, T y) { return x != y; }); break;
      case Cmp::kLt: case Cmp::kLo: compareLanes<T>(mask, a, b, false, d, [](T x, T y) { return x < y; }); break;
      case Cmp::kLe: case Cmp::kLs: compareLanes<T>(mask, a, b, false, d, [](T x, T y) { return x <= y; }); break;
      case Cmp::kGt: case Cmp::kHi: compareLanes<T>(mask, a, b, false, d, [](T x, T y) { return x > y; }); break;
      default: compareLanes<T>(mask, a, b, false, d, [](T x, T y) { return x >= y; }); break;
    }
  }
  // The second result is the complement of the comparison, combined the same way.
  if (d2 != nullptr) each(mask, [&](unsigned l) { d2[l] = d[l] ^ 1u; });
  if (in.boolOp != BoolOp::kNone) {
    const uint64_t* c = s[2];
    each(mask, [&](unsigned l) {
      d[l] = combine(in.boolOp, d[l] != 0, c[l]);
      if (d2 != nullptr) d2[l] = combine(in.boolOp, d2[l] != 0, c[l]);
    });
  }
}

// Integer and bit operations on T (signed or unsigned of 8-64 bits).
template <typename T>
void intOp(const Instruction& in, uint32_t mask, const uint64_t* const* s, uint64_t* d) {
  using U = std::make_unsigned_t<T>;
  constexpr unsigned W = sizeof(T) * 8;
  const uint64_t* a = s[0];
  const uint64_t* b = s[1];
  const uint64_t* c = s[2];
  auto A = [&](unsigned l) { return valueIn<T>(a[l]); };
  auto B = [&](unsigned l) { return valueIn<T>(b[l]); };
  switch (in.op) {
    case Op::kAdd:
      if (in.sat && std::is_signed_v<T>) {
        each(mask, [&](unsigned l) {
          const int64_t r = static_cast<int64_t>(A(l)) + static_cast<int64_t>(B(l));
          d[l] = bitsOut(static_cast<T>(std::min<int64_t>(std::max<int64_t>(r, std::numeric_limits<T>::min()), std::numeric_limits<T>::max())));
        });
      } else {
        each(mask, [&](unsigned l) { d[l] = bitsOut(static_cast<U>(static_cast<U>(a[l]) + static_cast<U>(b[l]))); });
      }
      return;
    case Op::kSub:
      if (in.sat && std::is_signed_v<T>) {
        each(mask, [&](unsigned l) {
          const int64_t r = static_cast<int64_t>(A(l)) - static_cast<int64_t>(B(l));
          d[l] = bitsOut(static_cast<T>(std::min<int64_t>(std::max<int64_t>(r, std::numeric_limits<T>::min()), std::numeric_limits<T>::max())));
        });
      } else {
        each(mask, [&](unsigned l) { d[l] = bitsOut(static_cast<U>(static_cast<U>(a[l]) - static_cast<U>(b[l]))); });
      }
      return;
    case Op::kMul:
    case Op::kMad: {
      const bool mad = in.op == Op::kMad;
      each(mask, [&](unsigned l) {
        using Wide = std::conditional_t<std::is_signed_v<T>, Int128, UInt128>;
        const Wide p = static_cast<Wide>(A(l)) * static_cast<Wide>(B(l));
        uint64_t r;
        if (in.mulMode == MulMode::kLo) {
          r = bitsOut(static_cast<U>(static_cast<U>(p) + (mad ? static_cast<U>(c[l]) : U(0))));
        } else if (in.mulMode == MulMode::kHi) {
          r = bitsOut(static_cast<U>(static_cast<U>(p >> W) + (mad ? static_cast<U>(c[l]) : U(0))));
        } else {  // wide: a 2W-bit result (W <= 32)
          const uint64_t mask2 = W >= 32 ? ~uint64_t{0} : ((uint64_t{1} << (2 * W)) - 1);
          r = (static_cast<uint64_t>(p) + (mad ? c[l] : 0)) & mask2;
        }
        d[l] = r;
      });
      return;
    }
    case Op::kDiv:
      // Division by zero has no defined result (PTX ISA); all ones, as the hardware gives for
      // unsigned division. INT_MIN / -1 wraps to INT_MIN.
      each(mask, [&](unsigned l) {
        const T x = A(l), y = B(l);
        if (y == 0) d[l] = bitsOut(static_cast<U>(~U(0)));
        else if (std::is_signed_v<T> && y == T(-1)) d[l] = bitsOut(static_cast<U>(U(0) - static_cast<U>(x)));
        else d[l] = bitsOut(static_cast<T>(x / y));
      });
      return;
    case Op::kRem:
      each(mask, [&](unsigned l) {
        const T x = A(l), y = B(l);
        if (y == 0) d[l] = bitsOut(x);
        else if (std::is_signed_v<T> && y == T(-1)) d[l] = 0;
        else d[l] = bitsOut(static_cast<T>(x % y));
      });
      return;
    case Op::kMin: each(mask, [&](unsigned l) { d[l] = bitsOut(std::min(A(l), B(l))); }); return;
    case Op::kMax: each(mask, [&](unsigned l) { d[l] = bitsOut(std::max(A(l), B(l))); }); return;
    case Op::kAbs:
      each(mask, [&](unsigned l) { const T x = A(l); d[l] = bitsOut(x < 0 ? static_cast<U>(U(0) - static_cast<U>(x)) : static_cast<U>(x)); });
      return;
    case Op::kNeg: each(mask, [&](unsigned l) { d[l] = bitsOut(static_cast<U>(U(0) - static_cast<U>(a[l]))); }); return;
    case Op::kAnd:
      if (in.type == Type::kPred) each(mask, [&](unsigned l) { d[l] = (a[l] != 0) & (b[l] != 0); });
      else each(mask, [&](unsigned l) { d[l] = bitsOut(static_cast<U>(a[l] & b[l])); });
      return;
    case Op::kOr:
      if (in.type == Type::kPred) each(mask, [&](unsigned l) { d[l] = (a[l] != 0) | (b[l] != 0); });
      else each(mask, [&](unsigned l) { d[l] = bitsOut(static_cast<U>(a[l] | b[l])); });
      return;
    case Op::kXor:
      if (in.type == Type::kPred) each(mask, [&](unsigned l) { d[l] = (a[l] != 0) ^ (b[l] != 0); });
      else each(mask, [&](unsigned l) { d[l] = bitsOut(static_cast<U>(a[l] ^ b[l])); });
      return;
    case Op::kNot:
      if (in.type == Type::kPred) each(mask, [&](unsigned l) { d[l] = a[l] == 0; });
      else each(mask, [&](unsigned l) { d[l] = bitsOut(static_cast<U>(~a[l])); });
      return;
    case Op::kCnot: each(mask, [&](unsigned l) { d[l] = static_cast<U>(a[l]) == 0 ? 1 : 0; }); return;
    case Op::kShl:
      // Shift amounts are unsigned 32-bit; amounts past the width shift everything out.
      each(mask, [&](unsigned l) {
        const uint32_t n = static_cast<uint32_t>(b[l]);
        d[l] = n >= W ? 0 : bitsOut(static_cast<U>(static_cast<U>(a[l]) << n));
      });
      return;
    case Op::kShr:
      each(mask, [&](unsigned l) {
        const uint32_t n = static_cast<uint32_t>(b[l]);
        if constexpr (std::is_signed_v<T>) {
          d[l] = bitsOut(static_cast<T>(A(l) >> (n >= W ? W - 1 : n)));
        } else {
          d[l] = n >= W ? 0 : bitsOut(static_cast<U>(static_cast<U>(a[l]) >> n));
        }
      });
      return;
    case Op::kPopc: each(mask, [&](unsigned l) { d[l] = static_cast<uint64_t>(__builtin_popcountll(static_cast<U>(a[l]))); }); return;
    case Op::kClz:
      each(mask, [&](unsigned l) {
        const uint64_t x = static_cast<U>(a[l]);
        d[l] = x == 0 ? W : static_cast<uint64_t>(__builtin_clzll(x) - (64 - W));
      });
      return;
    case Op::kBrev:
      each(mask, [&](unsigned l) {
        U x = static_cast<U>(a[l]), r = 0;
        for (unsigned i = 0; i < W; ++i) r = static_cast<U>(r | (((x >> i) & 1u) << (W - 1 - i)));
        d[l] = bitsOut(r);
      });
      return;
    case Op::kBfind:
      // The position of the most significant bit that differs from the sign (signed) or is set
      // (unsigned); 0xffffffff when there is none.
      each(mask, [&](unsigned l) {
        U x = static_cast<U>(a[l]);
        if (std::is_signed_v<T> && A(l) < 0) x = static_cast<U>(~x);
        const unsigned pos = x == 0 ? 0 : static_cast<unsigned>(63 - __builtin_clzll(static_cast<uint64_t>(x)));
        // .shiftamt: the left shift that brings that bit to the most significant position.
        d[l] = x == 0 ? 0xffffffffu : in.shiftAmt ? W - 1 - pos : pos;
      });
      return;
    case Op::kBfe:
      // bfe d, a, pos, len (PTX ISA): pos and len are the low 8 bits of b and c.
      each(mask, [&](unsigned l) {
        const unsigned pos = static_cast<unsigned>(b[l] & 0xff), len = static_cast<unsigned>(c[l] & 0xff);
        const U x = static_cast<U>(a[l]);
        bool sbit = false;
        if (std::is_signed_v<T> && len != 0) {
          const unsigned msb = std::min(pos + len - 1, W - 1);
          sbit = (x >> msb) & 1u;
        }
        U r = 0;
        for (unsigned i = 0; i < W; ++i) {
          const bool bit = (i < len && pos + i < W) ? ((x >> (pos + i)) & 1u) != 0 : sbit;
          r = static_cast<U>(r | (U(bit) << i));
        }
        d[l] = bitsOut(r);
      });
      return;
    case Op::kBfi:
      // bfi d, f, b, pos, len: f's low len bits inserted into b at pos.
      each(mask, [&](unsigned l) {
        const unsigned pos = static_cast<unsigned>(s[2][l] & 0xff), len = static_cast<unsigned>(s[3][l] & 0xff);
        U r = static_cast<U>(b[l]);
        const U f = static_cast<U>(a[l]);
        for (unsigned i = 0; i < len && pos + i < W; ++i) {
          const U bit = static_cast<U>(U(1) << (pos + i));
          r = static_cast<U>(((f >> i) & 1u) ? (r | bit) : (r & ~bit));
        }
        d[l] = bitsOut(r);
      });
      return;
    default:
      return;
  }
}

// Floating-point arithmetic on F (float or double).
// kFtz and kSat are template parameters so that the lane loops carry no flag tests.
template <typename F, bool kFtz, bool kSat>
void floatOp(const Instruction& in, uint32_t mask, const uint64_t* const* s, uint64_t* d) {
  auto X = [&](unsigned i, unsigned l) { return flush(valueIn<F>(s[i][l]), kFtz); };
  auto finish = [](F r) { return finishAs<F, kFtz, kSat>(r); };
  RoundingScope rounding(in.rounding);
  switch (in.op) {
    case Op::kAdd: each(mask, [&](unsigned l) { d[l] = finish(X(0, l) + X(1, l)); }); return;
    case Op::kSub: each(mask, [&](unsigned l) { d[l] = finish(X(0, l) - X(1, l)); }); return;
    case Op::kMul: each(mask, [&](unsigned l) { d[l] = finish(X(0, l) * X(1, l)); }); return;
    case Op::kFma:
    case Op::kMad: each(mask, [&](unsigned l) { d[l] = finish(std::fma(X(0, l), X(1, l), X(2, l))); }); return;
    case Op::kDiv: each(mask, [&](unsigned l) { d[l] = finish(X(0, l) / X(1, l)); }); return;
    case Op::kRcp: each(mask, [&](unsigned l) { d[l] = finish(F(1) / X(0, l)); }); return;
    case Op::kSqrt: each(mask, [&](unsigned l) { d[l] = finish(std::sqrt(X(0, l))); }); return;
    // The .approx functions: computed in double and rounded once, well inside the ISA's bounds.
    case Op::kRsqrt: each(mask, [&](unsigned l) { d[l] = finish(static_cast<F>(1.0 / std::sqrt(static_cast<double>(X(0, l))))); }); return;
    case Op::kEx2: each(mask, [&](unsigned l) { d[l] = finish(static_cast<F>(std::exp2(static_cast<double>(X(0, l))))); }); return;
    case Op::kLg2: each(mask, [&](unsigned l) { d[l] = finish(static_cast<F>(std::log2(static_cast<double>(X(0, l))))); }); return;
    case Op::kSin: each(mask, [&](unsigned l) { d[l] = finish(static_cast<F>(std::sin(static_cast<double>(X(0, l))))); }); return;
    case Op::kCos: each(mask, [&](unsigned l) { d[l] = finish(static_cast<F>(std::cos(static_cast<double>(X(0, l))))); }); return;
    case Op::kMin: each(mask, [&](unsigned l) { d[l] = finish(fmin(X(0, l), X(1, l), false)); }); return;
    case Op::kMax: each(mask, [&](unsigned l) { d[l] = finish(fmin(X(0, l), X(1, l), true)); }); return;
    // abs and neg change the sign bit only (a NaN keeps its payload).
    case Op::kAbs: each(mask, [&](unsigned l) { d[l] = bitsOut(std::fabs(X(0, l))); }); return;
    case Op::kNeg: each(mask, [&](unsigned l) { d[l] = bitsOut(-X(0, l)); }); return;
    case Op::kCopysign: each(mask, [&](unsigned l) { d[l] = bitsOut(std::copysign(X(1, l), X(0, l))); }); return;
    case Op::kTestp:
      each(mask, [&](unsigned l) {
        const F x = valueIn<F>(s[0][l]);
        bool r = false;
        switch (in.testpMode) {
          case TestpMode::kFinite: r = std::isfinite(x); break;
          case TestpMode::kInfinite: r = std::isinf(x); break;
          case TestpMode::kNumber: r = !std::isnan(x); break;
          case TestpMode::kNotANumber: r = std::isnan(x); break;
          case TestpMode::kNormal: r = std::isnormal(x); break;
          case TestpMode::kSubnormal: r = std::fpclassify(x) == FP_SUBNORMAL; break;
        }
        d[l] = r;
      });
      return;
    default:
      return;
  }
}

template <typename F>
void floatOp(const Instruction& in, uint32_t mask, const uint64_t* const* s, uint64_t* d) {
  if (in.ftz) {
    if (in.sat) floatOp<F, true, true>(in, mask, s, d);
    else floatOp<F, true, false>(in, mask, s, d);
  } else {
    if (in.sat) floatOp<F, false, true>(in, mask, s, d);
    else floatOp<F, false, false>(in, mask, s, d);
  }
}

// The float lanes with the host's fused multiply-add and AVX2 where it has them (x86-64): fma
// is otherwise a libm call per lane. Both clones compute the same IEEE results. flatten inlines
// the lane loops into each clone. Not under ThreadSanitizer, as in model/reduction.cpp: GCC
// instruments the ifunc resolver target_clones makes, and the dynamic loader runs it before the
// sanitizer's runtime is up (libcuda.so.1 crashed at load in the TSan build).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__) && \
    !defined(__SANITIZE_THREAD__)
#define MCSIM_PTX_FLOAT_CLONES __attribute__((flatten, target_clones("fma", "default")))
#else
#define MCSIM_PTX_FLOAT_CLONES
#endif
MCSIM_PTX_FLOAT_CLONES void floatOpF32(const Instruction& in, uint32_t mask, const uint64_t* const* s, uint64_t* d) {
  floatOp<float>(in, mask, s, d);
}
MCSIM_PTX_FLOAT_CLONES void floatOpF64(const Instruction& in, uint32_t mask, const uint64_t* const* s, uint64_t* d) {
  floatOp<double>(in, mask, s, d);
}

// f16 / bf16 (scalar, or two packed in 32 bits): each half converted exactly to float, the
// operation done in float and rounded once to nearest even. For add, sub and mul float's 24-bit
// significand (>= 2 * 11 + 2) makes the double rounding innocuous (Figueroa, "When is double
// rounding innocuous?", 1995); fma is computed in double, where a*b is exact and the sum is
// exact unless its smaller term lies far below the half's rounding point.
float halfToFloat(uint32_t h, bool bf) { return bf ? model::half::bf16ToFloat(h) : model::half::f16ToFloat(h); }
uint32_t floatToHalf(float f, bool bf) {
  if (std::isnan(f)) return bf ? 0x7fffu : 0x7fffu;  // canonical NaN of both formats
  return bf ? model::half::floatToBf16(f) : model::half::floatToF16(f);
}

uint32_t halfOp(const Instruction& in, bool bf, uint32_t a, uint32_t b, uint32_t c) {
  float x = halfToFloat(a, bf), y = halfToFloat(b, bf);
  const float z = halfToFloat(c, bf);
  if (in.ftz) {
    x = flush(x, true);
    y = flush(y, true);
  }
  float r;
  switch (in.op) {
    case Op::kAdd: r = x + y; break;
    case Op::kSub: r = x - y; break;
    case Op::kMul: r = x * y; break;
    case Op::kFma: r = static_cast<float>(static_cast<double>(x) * y + z); break;
    case Op::kMin: r = fmin(x, y, false); break;
    case Op::kMax: r = fmin(x, y, true); break;
    case Op::kNeg: return a ^ 0x8000u;
    case Op::kAbs: return a & 0x7fffu;
    default: r = 0; break;
  }
  if (in.sat) r = std::isnan(r) ? 0.0f : std::min(std::max(r, 0.0f), 1.0f);
  return floatToHalf(r, bf);
}

void halfCompute(const Instruction& in, uint32_t mask, const uint64_t* const* s, uint64_t* d) {
  const bool bf = in.type == Type::kBF16 || in.type == Type::kBF16x2;
  const bool packed = in.type == Type::kF16x2 || in.type == Type::kBF16x2;
  const unsigned nsrc = in.op == Op::kFma ? 3 : (in.op == Op::kNeg || in.op == Op::kAbs) ? 1 : 2;
  each(mask, [&](unsigned l) {
    const uint64_t a = s[0][l], b = nsrc > 1 ? s[1][l] : 0, c = nsrc > 2 ? s[2][l] : 0;
    const uint32_t lo = halfOp(in, bf, a & 0xffff, b & 0xffff, c & 0xffff);
    const uint32_t hi = packed ? halfOp(in, bf, (a >> 16) & 0xffff, (b >> 16) & 0xffff, (c >> 16) & 0xffff) : 0;
    d[l] = lo | (uint64_t{hi} << 16);
  });
}

// ---- cvt

// Reads a source of type t as a signed or unsigned 64-bit integer.
inline int64_t asSigned(uint64_t v, Type t) {
  switch (typeBits(t)) {
    case 8: return static_cast<int8_t>(v);
    case 16: return static_cast<int16_t>(v);
    case 32: return static_cast<int32_t>(v);
    default: return static_cast<int64_t>(v);
  }
}
inline uint64_t asUnsigned(uint64_t v, Type t) {
  const unsigned w = typeBits(t);
  return w >= 64 ? v : v & ((uint64_t{1} << w) - 1);
}

// A float rounded to an integral value by a cvt rounding (rni/rzi/rmi/rpi; none = rzi for
// float-to-integer, as PTX requires one).
template <typename F>
F roundIntegral(F x, Rounding r) {
  switch (r) {
    case Rounding::kRni: return std::nearbyint(x);  // the environment rounds to nearest even
    case Rounding::kRmi: return std::floor(x);
    case Rounding::kRpi: return std::ceil(x);
    default: return std::trunc(x);
  }
}

// Float to integer: NaN to 0, out-of-range values saturate (PTX ISA, cvt: "saturate" is
// the behaviour for float-to-integer conversions on sm_20+).
uint64_t floatToInt(double x, Type dst) {
  const unsigned w = typeBits(dst);
  if (std::isnan(x)) return 0;
  if (isSigned(dst)) {
    const double lo = -std::ldexp(1.0, static_cast<int>(w) - 1), hi = std::ldexp(1.0, static_cast<int>(w) - 1);
    int64_t r;
    if (x <= lo) r = static_cast<int64_t>(lo);
    else if (x >= hi) r = w == 64 ? INT64_MAX : static_cast<int64_t>(hi) - 1;
    else r = static_cast<int64_t>(x);
    return asUnsigned(static_cast<uint64_t>(r), dst);
  }
  const double hi = std::ldexp(1.0, static_cast<int>(w));
  if (x <= 0) return 0;
  if (x >= hi) return w == 64 ? UINT64_MAX : (uint64_t{1} << w) - 1;
  return static_cast<uint64_t>(x);
}

uint64_t intSaturate(uint64_t v, Type src, Type dst) {
  const unsigned w = typeBits(dst);
  if (isSigned(src)) {
    const int64_t x = asSigned(v, src);
    if (isSigned(dst)) {
      const int64_t lo = w == 64 ? INT64_MIN : -(int64_t{1} << (w - 1)), hi = w == 64 ? INT64_MAX : (int64_t{1} << (w - 1)) - 1;
      return asUnsigned(static_cast<uint64_t>(std::min(std::max(x, lo), hi)), dst);
    }
    if (x < 0) return 0;
    const uint64_t hi = w == 64 ? UINT64_MAX : (uint64_t{1} << w) - 1;
    return std::min(static_cast<uint64_t>(x), hi);
  }
  const uint64_t x = asUnsigned(v, src);
  const uint64_t hi = isSigned(dst) ? (w == 64 ? uint64_t{INT64_MAX} : (uint64_t{1} << (w - 1)) - 1)
                                    : (w == 64 ? UINT64_MAX : (uint64_t{1} << w) - 1);
  return std::min(x, hi);
}

void convert(const Instruction& in, uint32_t mask, const uint64_t* a, uint64_t* d) {
  const Type dt = in.type, st = in.type2;
  const bool df = isFloat(dt), sf = isFloat(st);
  const bool integralRounding = in.rounding == Rounding::kRni || in.rounding == Rounding::kRzi ||
                                in.rounding == Rounding::kRmi || in.rounding == Rounding::kRpi;
  RoundingScope rounding(integralRounding ? Rounding::kNone : in.rounding);
  auto srcFloat = [&](uint64_t v) -> double {  // exact: every source float fits a double
    switch (st) {
      case Type::kF16: return model::half::f16ToFloat(static_cast<uint32_t>(v & 0xffff));
      case Type::kBF16: return model::half::bf16ToFloat(static_cast<uint32_t>(v & 0xffff));
      case Type::kF32: return flush(valueIn<float>(v), in.ftz);
      default: return valueIn<double>(v);
    }
  };
  each(mask, [&](unsigned l) {
    const uint64_t v = a[l];
    if (!df && !sf) {  // integer to integer: truncate or extend, or saturate
      d[l] = in.sat ? intSaturate(v, st, dt) : asUnsigned(isSigned(st) ? static_cast<uint64_t>(asSigned(v, st)) : asUnsigned(v, st), dt);
      if (isSigned(dt)) d[l] = static_cast<uint64_t>(asSigned(d[l], dt));  // sign-extended for the register
    } else if (!df && sf) {  // float to integer
      const double x = roundIntegral(srcFloat(v), in.rounding == Rounding::kNone ? Rounding::kRzi : in.rounding);
      d[l] = floatToInt(x, dt);
      if (isSigned(dt)) d[l] = static_cast<uint64_t>(asSigned(d[l], dt));
    } else if (df && !sf) {  // integer to float, in the rounding mode
      if (dt == Type::kF64) {
        d[l] = bitsOut(isSigned(st) ? static_cast<double>(asSigned(v, st)) : static_cast<double>(asUnsigned(v, st)));
      } else if (dt == Type::kF32) {
        const float f = isSigned(st) ? static_cast<float>(asSigned(v, st)) : static_cast<float>(asUnsigned(v, st));
        d[l] = finish<float>(f, in);
      } else {  // f16/bf16 (.rn): through float, exact for integers of up to 24 bits
        const float f = isSigned(st) ? static_cast<float>(asSigned(v, st)) : static_cast<float>(asUnsigned(v, st));
        d[l] = floatToHalf(f, dt == Type::kBF16);
      }
    } else {  // float to float
      double x = srcFloat(v);
      if (integralRounding) x = roundIntegral(x, in.rounding);
      if (dt == Type::kF64) {
        d[l] = finish<double>(x, in);
      } else if (dt == Type::kF32) {
        d[l] = finish<float>(static_cast<float>(x), in);
      } else {  // to f16/bf16 (.rn), from f16/bf16/f32 (decode refuses f64 sources)
        const float f = static_cast<float>(x);
        d[l] = floatToHalf(f, dt == Type::kBF16);
      }
    }
  });
}

// cvt with an fp8 pair (decode admits these forms only): the pair's upper byte is the upper half's
// value, or the first source's.
void convertFp8(const Instruction& in, uint32_t mask, const uint64_t* const* s, uint64_t* d) {
  const bool e4m3 = in.fp8 == 1;
  RoundingScope rounding(Rounding::kRn);
  if (!in.fp8Dest) {  // f16x2 <- fp8x2: exact
    each(mask, [&](unsigned l) {
      const uint32_t v = static_cast<uint32_t>(s[0][l]);
      const uint32_t hi = floatToHalf(static_cast<float>(fp8ToDouble((v >> 8) & 0xff, e4m3)), false);
      const uint32_t lo = floatToHalf(static_cast<float>(fp8ToDouble(v & 0xff, e4m3)), false);
      d[l] = (uint64_t{hi} << 16) | lo;
    });
  } else if (in.type2 == Type::kF16x2) {
    each(mask, [&](unsigned l) {
      const uint32_t v = static_cast<uint32_t>(s[0][l]);
      const uint32_t hi = doubleToFp8(model::half::f16ToFloat(v >> 16), e4m3, true);
      const uint32_t lo = doubleToFp8(model::half::f16ToFloat(v & 0xffff), e4m3, true);
      d[l] = (hi << 8) | lo;
    });
  } else {  // .f32 d, a, b
    each(mask, [&](unsigned l) {
      const uint32_t hi = doubleToFp8(valueIn<float>(s[0][l]), e4m3, true);
      const uint32_t lo = doubleToFp8(valueIn<float>(s[1][l]), e4m3, true);
      d[l] = (hi << 8) | lo;
    });
  }
}

}  // namespace

double fp8ToDouble(uint32_t v, bool e4m3) {
  const int mbits = e4m3 ? 3 : 2, bias = e4m3 ? 7 : 15;
  const uint32_t e = (v & 0x7f) >> mbits, m = v & ((1u << mbits) - 1);
  double r;
  if (e4m3 && e == 15 && m == 7) return std::numeric_limits<double>::quiet_NaN();
  if (!e4m3 && e == 31) {
    if (m != 0) return std::numeric_limits<double>::quiet_NaN();
    r = std::numeric_limits<double>::infinity();
  } else if (e == 0) {
    r = std::ldexp(static_cast<double>(m), 1 - bias - mbits);
  } else {
    r = std::ldexp(static_cast<double>(m + (1u << mbits)), static_cast<int>(e) - bias - mbits);
  }
  return (v & 0x80) ? -r : r;
}

uint32_t doubleToFp8(double x, bool e4m3, bool satfinite) {
  if (std::isnan(x)) return 0x7f;
  const int mbits = e4m3 ? 3 : 2, bias = e4m3 ? 7 : 15;
  const double largest = e4m3 ? 448.0 : 57344.0;
  const uint32_t sign = std::signbit(x) ? 0x80u : 0u;
  const uint32_t overflow = satfinite ? (e4m3 ? 0x7eu : 0x7bu) : (e4m3 ? 0x7fu : 0x7cu);
  const double a = std::fabs(x);
  if (std::isinf(a)) return sign | overflow;
  if (satfinite && a >= largest) return sign | overflow;
  if (a == 0) return sign;
  int e = 0;
  std::frexp(a, &e);                            // a = f 2^e, f in [0.5, 1)
  const int exp = std::max(e - 1, 1 - bias);    // subnormals share the smallest normal's quantum
  const double quantum = std::ldexp(1.0, exp - mbits);
  const double r = std::nearbyint(a / quantum) * quantum;
  if (r > largest) return sign | overflow;      // rounded past the largest finite value
  if (r == 0) return sign;
  std::frexp(r, &e);
  if (e - 1 < 1 - bias) return sign | static_cast<uint32_t>(r / std::ldexp(1.0, 1 - bias - mbits));
  const uint32_t frac = static_cast<uint32_t>(r / std::ldexp(1.0, e - 1 - mbits)) - (1u << mbits);
  return sign | (static_cast<uint32_t>(e - 1 + bias) << mbits) | frac;
}


bool isAluOp(Op op) {
  switch (op) {
    case Op::kMov: case Op::kCvta: case Op::kLd: case Op::kSt: case Op::kAtom: case Op::kRed: case Op::kBar:
    case Op::kShfl: case Op::kVote: case Op::kActivemask: case Op::kMembar: case Op::kBra: case Op::kBrx: case Op::kRet:
    case Op::kExit: case Op::kTrap: case Op::kCall: case Op::kMultimem:
    case Op::kRedux: case Op::kMatch: case Op::kElect: case Op::kMbarrier: case Op::kCpAsync: case Op::kNanosleep:
    case Op::kAddc: case Op::kSubc: case Op::kMadc:
      return false;
    default:
      return true;
  }
}

// setp's comparison of a and b as type t (and its combination with c).
// (inlined: setp is common)
__attribute__((always_inline)) static inline void compareAs(Type t, const Instruction& in, uint32_t mask, const uint64_t* const* s, uint64_t* d, uint64_t* d2) {
  switch (t) {
    case Type::kS8: setp<int8_t>(in, mask, s, d, d2); return;
    case Type::kS16: setp<int16_t>(in, mask, s, d, d2); return;
    case Type::kS32: setp<int32_t>(in, mask, s, d, d2); return;
    case Type::kS64: setp<int64_t>(in, mask, s, d, d2); return;
    case Type::kU8: case Type::kB8: setp<uint8_t>(in, mask, s, d, d2); return;
    case Type::kU16: case Type::kB16: setp<uint16_t>(in, mask, s, d, d2); return;
    case Type::kU32: case Type::kB32: setp<uint32_t>(in, mask, s, d, d2); return;
    case Type::kF32: setp<float>(in, mask, s, d, d2); return;
    case Type::kF64: setp<double>(in, mask, s, d, d2); return;
    default: setp<uint64_t>(in, mask, s, d, d2); return;
  }
}

// set, mul24 / mad24, sad, dp4a / dp2a: kept out of compute()'s common paths.
__attribute__((noinline)) static void computeRare(const Instruction& in, uint32_t mask, const uint64_t* const* s, uint64_t* d) {
  const Type t = in.type;
  switch (in.op) {
    case Op::kSet: {
      // set.<cmp>{.<bool>}.<dtype>.<stype> d, a, b {, c} (PTX ISA, "Comparison and Selection
      // Instructions: set"): the comparison (combined with c as setp combines it) as 0xffffffff
      // for true in an integer destination, 1.0f in an .f32 one, 0 for false.
      compareAs(t, in, mask, s, d, nullptr);
      const uint64_t yes = in.type2 == Type::kF32 ? 0x3f800000u : 0xffffffffu;
      each(mask, [&](unsigned l) { d[l] = d[l] != 0 ? yes : 0; });
      return;
    }
    case Op::kMul24:
    case Op::kMad24:
      // mul24 / mad24 .lo / .hi (PTX ISA, "Integer Arithmetic Instructions: mul24, mad24"): the
      // 48-bit product of the operands' low 24 bits (sign-extended for .s32); .lo its bits 31..0,
      // .hi its bits 47..16; mad24 adds c to that (modulo 2^32).
      each(mask, [&](unsigned l) {
        int64_t x = static_cast<int64_t>(s[0][l] & 0xffffff), y = static_cast<int64_t>(s[1][l] & 0xffffff);
        if (t == Type::kS32) {
          x = (x ^ 0x800000) - 0x800000;
          y = (y ^ 0x800000) - 0x800000;
        }
        const uint64_t p = static_cast<uint64_t>(x * y);
        uint32_t r = in.mulMode == MulMode::kHi ? static_cast<uint32_t>(p >> 16) : static_cast<uint32_t>(p);
        if (in.op == Op::kMad24) r += static_cast<uint32_t>(s[2][l]);
        d[l] = r;
      });
      return;
    case Op::kSad: {
      // sad d, a, b, c: d = c + |a - b| (PTX ISA, "Integer Arithmetic Instructions: sad"), in the
      // type's width.
      const unsigned bits = typeBits(t);
      const uint64_t m = bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
      each(mask, [&](unsigned l) {
        uint64_t diff;
        if (isSigned(t)) {
          const int64_t x = asSigned(s[0][l], t), y = asSigned(s[1][l], t);
          diff = x > y ? static_cast<uint64_t>(x) - static_cast<uint64_t>(y) : static_cast<uint64_t>(y) - static_cast<uint64_t>(x);
        } else {
          const uint64_t x = s[0][l] & m, y = s[1][l] & m;
          diff = x > y ? x - y : y - x;
        }
        d[l] = (s[2][l] + diff) & m;
      });
      return;
    }
    case Op::kDp4a:
    case Op::kDp2a: {
      // dp4a.atype.btype d, a, b, c: c + the sum of the products of a's and b's four bytes;
      // dp2a.{lo,hi}.atype.btype: c + a's two 16-bit halves times b's bytes 0-1 (.lo) or 2-3
      // (.hi). Each part sign-extended when its type is .s32; the sum modulo 2^32 (PTX ISA,
      // "Integer Arithmetic Instructions: dp4a, dp2a").
      const bool sa = t == Type::kS32, sb = in.type2 == Type::kS32;
      each(mask, [&](unsigned l) {
        const uint32_t a = static_cast<uint32_t>(s[0][l]), b = static_cast<uint32_t>(s[1][l]);
        auto byteOf = [](uint32_t v, unsigned i, bool sgn) {
          const uint32_t x = (v >> (8 * i)) & 0xff;
          return sgn ? static_cast<int64_t>(static_cast<int8_t>(x)) : static_cast<int64_t>(x);
        };
        int64_t acc = static_cast<int64_t>(static_cast<uint32_t>(s[2][l]));
        if (in.op == Op::kDp4a) {
          for (unsigned i = 0; i < 4; ++i) acc += byteOf(a, i, sa) * byteOf(b, i, sb);
        } else {
          const unsigned base = in.mulMode == MulMode::kHi ? 2 : 0;
          for (unsigned i = 0; i < 2; ++i) {
            const uint32_t h = (a >> (16 * i)) & 0xffff;
            const int64_t hv = sa ? static_cast<int64_t>(static_cast<int16_t>(h)) : static_cast<int64_t>(h);
            acc += hv * byteOf(b, base + i, sb);
          }
        }
        d[l] = static_cast<uint32_t>(static_cast<uint64_t>(acc));
      });
      return;
    }
    case Op::kIsspacep: {
      // isspacep.<space> p, a: whether the generic address a falls in the space's window
      // (docs/ptx.md, "Memory"); .global: outside every other space's window.
      const uint64_t base = in.space == Space::kShared  ? kSharedWindow
                            : in.space == Space::kLocal ? kLocalWindow
                            : in.space == Space::kConst ? kConstWindow
                            : in.space == Space::kParam ? kParamWindow
                                                        : 0;
      each(mask, [&](unsigned l) {
        const uint64_t window = s[0][l] & ~(kWindowSize - 1);
        d[l] = base != 0 ? window == base
                         : window != kSharedWindow && window != kLocalWindow && window != kConstWindow && window != kParamWindow;
      });
      return;
    }
    default:
      return;
  }
}

void compute(const Instruction& in, uint32_t mask, const uint64_t* const* s, uint64_t* d, uint64_t* d2) {
  const Type t = in.type;
  switch (in.op) {
    case Op::kCvt:
      if (in.fp8 != 0) {
        convertFp8(in, mask, s, d);
        return;
      }
      if (t == Type::kF16x2 || t == Type::kBF16x2) {
        // cvt.rn.{f16x2,bf16x2}.f32 d, a, b (PTX ISA, cvt): a rounded into the upper half, b the lower.
        const bool bf = t == Type::kBF16x2;
        RoundingScope rounding(Rounding::kRn);
        each(mask, [&](unsigned l) {
          d[l] = (uint64_t{floatToHalf(valueIn<float>(s[0][l]), bf)} << 16) | floatToHalf(valueIn<float>(s[1][l]), bf);
        });
        return;
      }
      convert(in, mask, s[0], d);
      return;
    case Op::kSetp:
      compareAs(t, in, mask, s, d, d2);
      return;
    case Op::kSet: case Op::kMul24: case Op::kMad24: case Op::kSad: case Op::kDp4a: case Op::kDp2a: case Op::kIsspacep:
      computeRare(in, mask, s, d);
      return;
    case Op::kSelp:
      each(mask, [&](unsigned l) { d[l] = s[2][l] != 0 ? s[0][l] : s[1][l]; });
      return;
    case Op::kSlct:
      if (in.type2 == Type::kF32) {
        each(mask, [&](unsigned l) {
          const float c = flush(valueIn<float>(s[2][l]), in.ftz);
          d[l] = c >= 0.0f ? s[0][l] : s[1][l];  // NaN selects b
        });
      } else {
        each(mask, [&](unsigned l) { d[l] = static_cast<int32_t>(s[2][l]) >= 0 ? s[0][l] : s[1][l]; });
      }
      return;
    case Op::kLop3:
      // lop3.b32 d, a, b, c, lut (PTX ISA): bit i of d is bit (a_i b_i c_i) of lut, where the
      // table's index reads a, b, c as a 3-bit number (a the most significant).
      each(mask, [&](unsigned l) {
        const uint32_t a = static_cast<uint32_t>(s[0][l]), b = static_cast<uint32_t>(s[1][l]), c = static_cast<uint32_t>(s[2][l]);
        const uint32_t lut = static_cast<uint32_t>(s[3][l]) & 0xff;
        uint32_t r = 0;
        for (unsigned k = 0; k < 8; ++k) {
          if (((lut >> k) & 1u) == 0) continue;
          r |= ((k & 4) ? a : ~a) & ((k & 2) ? b : ~b) & ((k & 1) ? c : ~c);
        }
        d[l] = r;
      });
      return;
    case Op::kShf:
      // shf.{l,r}.{wrap,clamp}.b32 d, a, b, c (PTX ISA): b:a as a 64-bit value shifted by c
      // (mod 32 for .wrap, at most 32 for .clamp); .l keeps the high word, .r the low one.
      each(mask, [&](unsigned l) {
        const uint64_t v = (s[0][l] & 0xffffffffu) | ((s[1][l] & 0xffffffffu) << 32);
        const uint32_t c = static_cast<uint32_t>(s[2][l]);
        const unsigned n = in.shfClamp ? std::min(c, 32u) : c & 31u;
        d[l] = in.shfLeft ? static_cast<uint32_t>((v << n) >> 32) : static_cast<uint32_t>(v >> n);
      });
      return;
    case Op::kPrmt:
      if (in.prmt != PrmtMode::kDefault) {
        // The fixed modes (PTX ISA, "Integer Arithmetic Instructions: prmt", its table): c's two
        // low bits pick a row of four byte indices into {b, a} (result byte 0 first).
        static const uint8_t rows[6][4][4] = {
            {{0, 1, 2, 3}, {1, 2, 3, 4}, {2, 3, 4, 5}, {3, 4, 5, 6}},  // .f4e
            {{0, 7, 6, 5}, {1, 0, 7, 6}, {2, 1, 0, 7}, {3, 2, 1, 0}},  // .b4e
            {{0, 0, 0, 0}, {1, 1, 1, 1}, {2, 2, 2, 2}, {3, 3, 3, 3}},  // .rc8
            {{0, 1, 2, 3}, {1, 1, 2, 3}, {2, 2, 2, 3}, {3, 3, 3, 3}},  // .ecl
            {{0, 0, 0, 0}, {0, 1, 1, 1}, {0, 1, 2, 2}, {0, 1, 2, 3}},  // .ecr
            {{0, 1, 0, 1}, {2, 3, 2, 3}, {0, 1, 0, 1}, {2, 3, 2, 3}},  // .rc16
        };
        const auto& row = rows[static_cast<unsigned>(in.prmt) - 1];
        each(mask, [&](unsigned l) {
          const uint64_t bytes = (s[0][l] & 0xffffffffu) | ((s[1][l] & 0xffffffffu) << 32);
          const auto& sel = row[s[2][l] & 3];
          uint32_t r = 0;
          for (unsigned i = 0; i < 4; ++i) r |= static_cast<uint32_t>((bytes >> (8 * sel[i])) & 0xff) << (8 * i);
          d[l] = r;
        });
        return;
      }
      // Default mode (PTX ISA, prmt): four selector nibbles of c pick bytes of {b, a}; a
      // selector's bit 3 replicates the chosen byte's sign bit.
      each(mask, [&](unsigned l) {
        const uint64_t bytes = (s[0][l] & 0xffffffffu) | ((s[1][l] & 0xffffffffu) << 32);
        uint32_t r = 0;
        for (unsigned i = 0; i < 4; ++i) {
          const unsigned sel = static_cast<unsigned>((s[2][l] >> (4 * i)) & 0xf);
          uint32_t byte = static_cast<uint32_t>((bytes >> (8 * (sel & 7))) & 0xff);
          if (sel & 8) byte = (byte & 0x80) ? 0xff : 0;
          r |= byte << (8 * i);
        }
        d[l] = r;
      });
      return;
    default:
      break;
  }
  switch (t) {
    case Type::kF32: floatOpF32(in, mask, s, d); return;
    case Type::kF64: floatOpF64(in, mask, s, d); return;
    case Type::kF16: case Type::kF16x2: case Type::kBF16: case Type::kBF16x2: halfCompute(in, mask, s, d); return;
    case Type::kS8: intOp<int8_t>(in, mask, s, d); return;
    case Type::kS16: intOp<int16_t>(in, mask, s, d); return;
    case Type::kS32: intOp<int32_t>(in, mask, s, d); return;
    case Type::kS64: intOp<int64_t>(in, mask, s, d); return;
    case Type::kU8: case Type::kB8: intOp<uint8_t>(in, mask, s, d); return;
    case Type::kU16: case Type::kB16: intOp<uint16_t>(in, mask, s, d); return;
    case Type::kU32: case Type::kB32: intOp<uint32_t>(in, mask, s, d); return;
    case Type::kPred: intOp<uint8_t>(in, mask, s, d); return;
    default: intOp<uint64_t>(in, mask, s, d); return;
  }
}

uint64_t atomicResult(const Instruction& in, uint64_t old, uint64_t b, uint64_t c) {
  const Type t = in.type;
  const unsigned w = typeBits(t);
  const uint64_t m = w >= 64 ? ~uint64_t{0} : (uint64_t{1} << w) - 1;
  switch (in.atomOp) {
    case AtomOp::kExch: return b & m;
    case AtomOp::kCas: return (old & m) == (b & m) ? c & m : old & m;
    case AtomOp::kAnd: return old & b & m;
    case AtomOp::kOr: return (old | b) & m;
    case AtomOp::kXor: return (old ^ b) & m;
    case AtomOp::kInc: return (old & m) >= (b & m) ? 0 : (old + 1) & m;
    case AtomOp::kDec: return ((old & m) == 0 || (old & m) > (b & m)) ? b & m : (old - 1) & m;
    case AtomOp::kAdd:
      if (t == Type::kF32) return finish<float>(valueIn<float>(old) + valueIn<float>(b), in);
      if (t == Type::kF64) return bitsOut(valueIn<double>(old) + valueIn<double>(b));
      return (old + b) & m;
    case AtomOp::kMin:
    case AtomOp::kMax: {
      const bool isMax = in.atomOp == AtomOp::kMax;
      if (t == Type::kF32) return bitsOut(fmin(valueIn<float>(old), valueIn<float>(b), isMax));
      if (t == Type::kF64) return bitsOut(fmin(valueIn<double>(old), valueIn<double>(b), isMax));
      if (isSigned(t)) {
        const int64_t x = asSigned(old, t), y = asSigned(b, t);
        return static_cast<uint64_t>(isMax ? std::max(x, y) : std::min(x, y)) & m;
      }
      return isMax ? std::max(old & m, b & m) : std::min(old & m, b & m);
    }
  }
  return old;
}

}  // namespace mcsim::ptx
