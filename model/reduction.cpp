// Element-wise reductions with PTX's arithmetic, bit for bit (the contract is in reduction.h).
//
// What PTX and CUDA say, and what is chosen where they leave a choice (PTX ISA 9.0, sections
// 9.7.3 "Floating-Point Instructions", 9.7.4 "Half Precision Floating-Point Instructions" and
// 9.7.9.14 "multimem"; CUDA C++ Programming Guide, "Floating-Point Standard"):
//
//  - add.rn.{f32,f64,f16x2,bf16x2} rounds to nearest even; subnormal inputs and results are
//    supported unless .ftz is given (never, here).
//  - f32 NaN: PTX says single-precision instructions "return an unspecified NaN"; the CUDA
//    Programming Guide says the result of a single-precision operation involving one or more
//    input NaNs is the quiet NaN 0x7fffffff (CUDART_NAN_F in math_constants.h is the same).
//    Every f32 NaN result here is 0x7fffffff, an invalid operation's (inf - inf) included, which
//    the guide does not mention; tests/unit/reduction_real_check.cu checks both on a GPU.
//  - f16 / bf16 NaN: PTX: half-precision instructions "return an unspecified NaN". The canonical
//    half NaN that PTX's min/max name, and that cuda_fp16.hpp / cuda_bf16.hpp define
//    (CUDART_NAN_FP16, CUDART_NAN_BF16), is 0x7fff; every f16 / bf16 NaN result here is 0x7fff.
//  - f64 NaN: PTX: "NaN payloads are supported for double-precision instructions". A NaN input's
//    payload is kept (made quiet); when both inputs are NaN the second operand's wins (unlike
//    x86, where the first does). An invalid operation (inf - inf) gives 0xfff8000000000000,
//    CUDART_NAN in math_constants.h. Neither choice is written down by NVIDIA; both were measured
//    with tests/unit/reduction_real_check.cu on a real H100 (add.rn.f64 d, a, b: b's payload;
//    docs/real-driver/reduction-h100-2026-11-21.txt). In a reduction the second operand is the
//    element being added to the running result.
//  - min / max (f32: 9.7.3.11-12; f16x2 / bf16x2: 9.7.4.7-8), without .NaN: if exactly one input
//    is NaN the result is the other input; if both are, the canonical NaN; otherwise the smaller
//    (larger), with -0.0 < +0.0 ("If values of both inputs are 0.0, then +0.0 > -0.0").
//  - Integer add wraps; min / max compare as signed or unsigned by the type.
//  - f64 reduces only with add (reduction.h). Note that PTX 9.0's multimem table lists .min /
//    .max for the integer and half types only, not for .f32; the reduce kernel's plain min.f32 /
//    max.f32 (kernels.h) are defined, and reduceInto serves both.
//
// Speed: simulations reduce gigabytes. Every element operation is branch-free integer and float
// arithmetic on bit patterns, so that loops over blocks of elements vectorise (see
// reduceDisjoint), and the f16 / bf16 lanes convert through binary32 without tables. On x86-64
// the loops also come in an AVX2 build, and f16 add uses F16C's conversions where the CPU has
// them (see dispatch and f16AddF16c).
#include "model/reduction.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "mcsim/kernels.h"
#include "model/float_env.h"
#include "model/half_float.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

namespace mcsim::model {
namespace {

// Buffers are images of GPU memory, which is little-endian: a packed word's lane 0 is its first
// two bytes. Loading with host-order memcpy is right only on a little-endian host.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "reductions assume a little-endian host");

// x86-64 code paths beyond the baseline ISA, chosen at run time (see dispatch and f16AddF16c).
// -DMCSIM_REDUCTION_BASELINE leaves them out, to test the portable code on a machine that has
// AVX2 and F16C (reduction_baseline_test).
#if defined(__x86_64__) && defined(__ELF__) && defined(__GNUC__) && \
    !defined(MCSIM_REDUCTION_BASELINE)
#define MCSIM_REDUCTION_X86_FAST_PATHS 1
#else
#define MCSIM_REDUCTION_X86_FAST_PATHS 0
#endif

constexpr uint32_t kF32NaN = 0x7fffffffu;
constexpr uint16_t kHalfNaN = 0x7fffu;
constexpr uint64_t kF64InvalidNaN = 0xfff8000000000000ull;
constexpr uint64_t kF64QuietBit = 0x0008000000000000ull;

template <typename T>
inline T load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

template <typename T>
inline void store(uint8_t* p, T v) {
  std::memcpy(p, &v, sizeof v);
}

inline double doubleOf(uint64_t u) {
  double d;
  std::memcpy(&d, &u, sizeof d);
  return d;
}

inline uint64_t bitsOf(double d) {
  uint64_t u;
  std::memcpy(&u, &d, sizeof u);
  return u;
}

// ---- Element operations: each maps two bit patterns to one. -------------------------------

struct F32Add {
  uint32_t operator()(uint32_t a, uint32_t b) const {
    const float r = half::floatOf(a) + half::floatOf(b);
    return half::select(half::maskIf<uint32_t>(r != r), kF32NaN, half::bitsOf(r));  // r != r: NaN
  }
};

struct F64Add {
  uint64_t operator()(uint64_t a, uint64_t b) const {
    const double x = doubleOf(a), y = doubleOf(b);
    const double r = x + y;
    // The host's own NaN propagation is not used: which operand's payload an SSE addition keeps
    // depends on the order the compiler gives the operands, and addition commutes.
    uint64_t nan = half::select(half::maskIf<uint64_t>(x != x), a | kF64QuietBit, kF64InvalidNaN);
    nan = half::select(half::maskIf<uint64_t>(y != y), b | kF64QuietBit, nan);
    return half::select(half::maskIf<uint64_t>(r != r), nan, bitsOf(r));
  }
};

// f16 / bf16 add: each lane's exact sum a + b, rounded once to the lane's format. Computing the
// sum in binary32 first and then rounding that to f16 / bf16 gives the same result:
//
// Let P be the lane format (p-bit significand: f16 p = 11, bf16 p = 8), W binary32 (q = 24);
// every P number is a W number. Let x = a + b (exact), |a| >= |b| > 0, and RW, RP rounding to
// nearest even into W and P. RP's result changes only at P's midpoints (halfway between two
// neighbouring P numbers, or between the largest P number and the next power of two, where it
// overflows to infinity); a midpoint has p + 1 <= q significant bits and lies in W's range, so it
// is a W number. RW is monotonic and fixes W numbers, so RW(x) never crosses a midpoint m; the
// two roundings can differ only if RW(x) = m != x, i.e. 0 < |x - m| <= ulpW(x)/2 <= 2^-q |x|.
// That cannot happen:
//  (1) Both operands are multiples of g, the spacing of P numbers at b's magnitude (b's ulp, or
//      P's subnormal spacing), so x is too; a multiple of g below 2^q g in magnitude is a W
//      number (g is at least P's smallest spacing, 2^-24 or 2^-133, both multiples of W's 2^-149).
//      So RW is inexact only if |x| >= 2^q g; and |b| < 2^p g, so |b| < 2^(p-q) |x|.
//  (2) a is a P number and m a midpoint, so |a - m| >= half the P spacing at m, which is more
//      than 2^(-p-1) |m| (m is in P's normal range: |x| >= 2^q g is far above P's subnormals).
//  (3) So |x - m| >= |a - m| - |b| > 2^(-p-1) |m| - 2^(p-q) |x|, and with |m| >= (1 - 2^-q) |x|
//      this exceeds 2^-q |x| whenever 2^(q-p-1) (1 - 2^-q) > 2^p + 1: f16 4096 > 2049, bf16
//      32768 > 257. Contradiction.
// When W itself overflows (bf16 only: |x| >= 2^128 - 2^103), |x| is beyond the bf16 overflow
// threshold 2^128 - 2^119 and both roundings give infinity. Zero sums are exact, with IEEE's
// sign (+0, or -0 for -0 + -0), which the conversions keep.
// This needs binary32 arithmetic with round-to-nearest-even and subnormals: FloatEnvironment.
struct F16Add {
  uint32_t operator()(uint32_t a, uint32_t b) const {
    const float r = half::f16ToFloat(a) + half::f16ToFloat(b);
    const uint32_t nan = half::maskIf<uint32_t>(r != r);
    return half::select(nan, uint32_t{kHalfNaN}, half::floatToF16(r));
  }
};

struct Bf16Add {
  uint32_t operator()(uint32_t a, uint32_t b) const {
    const float r = half::bf16ToFloat(a) + half::bf16ToFloat(b);
    const uint32_t nan = half::maskIf<uint32_t>(r != r);
    return half::select(nan, uint32_t{kHalfNaN}, half::floatToBf16(r));
  }
};

// PTX min / max on a floating-point format held in the unsigned type U (S its signed twin), with
// integer operations only (no float comparison, so a host in denormals-are-zero mode cannot
// equate a subnormal with zero). key() maps every non-NaN value to a signed integer in numeric
// order, -0 just below +0: negative values get their magnitude bits flipped. key() is its own
// inverse. A NaN gets the key that loses: the largest for min, the smallest for max. Then
//  - min: the smaller key, mapped back. If both are NaN that key is the largest, S's maximum,
//    which maps back to 0x7fff.. : exactly the canonical NaN.
//  - max: the larger key, mapped back; both NaN give S's minimum, replaced by the canonical NaN.
template <typename U, typename S, U kInf, U kNaN, bool kMax>
struct FloatMinMax {
  static constexpr U kSign = static_cast<U>(~kNaN);
  static constexpr S kLoses =
      kMax ? std::numeric_limits<S>::min() : std::numeric_limits<S>::max();
  static U key(U u) { return static_cast<U>(u ^ (half::maskIf<U>(u & kSign) & kNaN)); }
  static S nanAwareKey(U u) {
    const U nan = half::maskIf<U>(static_cast<U>(u & kNaN) > kInf);
    return static_cast<S>(half::select(nan, static_cast<U>(kLoses), key(u)));
  }
  U operator()(U a, U b) const {
    const S x = nanAwareKey(a), y = nanAwareKey(b);
    const S k = kMax ? std::max(x, y) : std::min(x, y);
    const U r = key(static_cast<U>(k));
    // max of two NaNs: key(S's minimum) is all ones, a NaN with the sign set; clear the sign.
    return kMax ? static_cast<U>(r & ~(half::maskIf<U>(k == kLoses) & kSign)) : r;
  }
};

template <bool kMax>
using F32MinMax = FloatMinMax<uint32_t, int32_t, 0x7f800000u, kF32NaN, kMax>;
template <bool kMax>
using F16MinMax = FloatMinMax<uint16_t, int16_t, half::kF16ExpMask, kHalfNaN, kMax>;
template <bool kMax>
using Bf16MinMax = FloatMinMax<uint16_t, int16_t, half::kBf16ExpMask, kHalfNaN, kMax>;

template <typename T>
struct IntAdd {
  T operator()(T a, T b) const { return static_cast<T>(a + b); }  // unsigned: wraps
};

// Compares as C (signed or unsigned); T is the unsigned storage type.
template <typename T, typename C, bool kMax>
struct IntMinMax {
  T operator()(T a, T b) const {
    const C x = static_cast<C>(a), y = static_cast<C>(b);
    return (kMax ? x >= y : x <= y) ? a : b;
  }
};

// A lane operation applied to both halves of a packed 32-bit word; Lane is the type the lane
// operation takes (the additions work on 32-bit lane values, which vectorises without packing
// and unpacking 16-bit elements; min / max on 16-bit ones, which have native min / max).
template <typename Lane, typename LaneOp>
struct Packed {
  LaneOp lane;
  uint32_t operator()(uint32_t a, uint32_t b) const {
    const uint32_t lo = lane(static_cast<Lane>(a & 0xffffu), static_cast<Lane>(b & 0xffffu));
    const uint32_t hi = lane(static_cast<Lane>(a >> 16), static_cast<Lane>(b >> 16));
    return (lo & 0xffffu) | hi << 16;
  }
};

// ---- Loops ----------------------------------------------------------------------------------

// acc and in do not overlap. Blocks of a fixed number of elements: an inner loop with a constant
// trip count vectorises even at -O2 (GCC's default cost model there refuses loops that need a
// scalar epilogue or a runtime alias check), and __restrict spares the alias check.
template <typename T, typename Op>
void reduceDisjoint(uint8_t* __restrict acc, const uint8_t* __restrict in, uint64_t count, Op op) {
  constexpr uint64_t kBlock = 256 / sizeof(T);
  uint64_t i = 0;
  for (; i + kBlock <= count; i += kBlock) {
    uint8_t* a = acc + i * sizeof(T);
    const uint8_t* b = in + i * sizeof(T);
    for (uint64_t j = 0; j < kBlock; ++j) {
      store<T>(a + j * sizeof(T), op(load<T>(a + j * sizeof(T)), load<T>(b + j * sizeof(T))));
    }
  }
  for (; i < count; ++i) {
    store<T>(acc + i * sizeof(T), op(load<T>(acc + i * sizeof(T)), load<T>(in + i * sizeof(T))));
  }
}

// acc and in overlap: element after element, in order, each element read whole before it is
// written, exactly as "acc[i] = acc[i] op in[i] for i = 0, 1, ..." reads.
template <typename T, typename Op>
void reduceInOrder(uint8_t* acc, const uint8_t* in, uint64_t count, Op op) {
  for (uint64_t i = 0; i < count; ++i) {
    const T a = load<T>(acc + i * sizeof(T));
    const T b = load<T>(in + i * sizeof(T));
    store<T>(acc + i * sizeof(T), op(a, b));
  }
}

bool disjoint(const uint8_t* acc, const uint8_t* in, uint64_t bytes) {
  const auto a = reinterpret_cast<uintptr_t>(acc), b = reinterpret_cast<uintptr_t>(in);
  return a + bytes <= b || b + bytes <= a;
}

template <typename T, typename Op>
void run(uint8_t* acc, const uint8_t* in, uint64_t count, Op op) {
  if (disjoint(acc, in, count * sizeof(T))) {
    reduceDisjoint<T>(acc, in, count, op);
  } else {
    reduceInOrder<T>(acc, in, count, op);
  }
}

// min / max of packed f16x2 / bf16x2 words. Disjoint buffers reduce as 2 * count independent
// 16-bit lanes (lane 0 of word i is lane 2i in memory order); overlapping ones word by word, so
// that both lanes of a word are read before it is written. (The additions run word by word in
// any case: see Packed.)
template <typename LaneOp>
void runHalfLanes(uint8_t* acc, const uint8_t* in, uint64_t count, LaneOp op) {
  if (disjoint(acc, in, count * 4)) {
    reduceDisjoint<uint16_t>(acc, in, count * 2, op);
  } else {
    reduceInOrder<uint32_t>(acc, in, count, Packed<uint16_t, LaneOp>{op});
  }
}

template <template <bool> class MinMax, typename T>
void runMinMax(uint32_t op, uint8_t* acc, const uint8_t* in, uint64_t count) {
  if (op == MCSIM_REDOP_MIN) {
    run<T>(acc, in, count, MinMax<false>{});
  } else {
    run<T>(acc, in, count, MinMax<true>{});
  }
}

template <template <bool> class MinMax>
void runPackedMinMax(uint32_t op, uint8_t* acc, const uint8_t* in, uint64_t count) {
  if (op == MCSIM_REDOP_MIN) {
    runHalfLanes(acc, in, count, MinMax<false>{});
  } else {
    runHalfLanes(acc, in, count, MinMax<true>{});
  }
}

template <typename C>
struct IntMinMaxOf {
  template <bool kMax>
  using For = IntMinMax<std::make_unsigned_t<C>, C, kMax>;
};

// Not inlined into reduceInto: the float arithmetic must stay between FloatEnvironment's
// constructor and destructor, and a call is a boundary the compiler does not move it across.
// Flattened: every loop is inlined into it, so that the clones below cover them.
//
// On x86-64 compiled twice, for AVX2 and for the baseline (SSE2), and chosen once at load time
// (an ifunc, which is never inlined either): the same source, but AVX2's 256-bit integer
// operations, blends and min / max make the half-precision and min / max loops two to three times
// faster; f32 / f64 / integer add reach memory bandwidth either way. GCC only: Clang refuses
// target_clones with flatten, and without flatten the clones would call baseline loops. Not under
// ThreadSanitizer: GCC instruments the ifunc resolver that target_clones makes, and the dynamic
// loader runs it before the sanitizer's runtime is up (libcuda.so.1 crashed at load).
#if MCSIM_REDUCTION_X86_FAST_PATHS && !defined(__clang__) && !defined(__SANITIZE_THREAD__)
#define MCSIM_REDUCTION_DISPATCH __attribute__((flatten, target_clones("avx2", "default")))
#endif
#ifndef MCSIM_REDUCTION_DISPATCH
#define MCSIM_REDUCTION_DISPATCH __attribute__((flatten, noinline))
#endif

MCSIM_REDUCTION_DISPATCH void dispatch(uint32_t dtype, uint32_t op, uint8_t* acc, const uint8_t* in,
                                       uint64_t count) {
  const bool add = op == MCSIM_REDOP_ADD;
  switch (dtype) {
    case MCSIM_DTYPE_F32:
      if (add) return run<uint32_t>(acc, in, count, F32Add{});
      return runMinMax<F32MinMax, uint32_t>(op, acc, in, count);
    case MCSIM_DTYPE_F16X2:
      if (add) return run<uint32_t>(acc, in, count, Packed<uint32_t, F16Add>{});
      return runPackedMinMax<F16MinMax>(op, acc, in, count);
    case MCSIM_DTYPE_BF16X2:
      if (add) return run<uint32_t>(acc, in, count, Packed<uint32_t, Bf16Add>{});
      return runPackedMinMax<Bf16MinMax>(op, acc, in, count);
    case MCSIM_DTYPE_F64:
      return run<uint64_t>(acc, in, count, F64Add{});
    case MCSIM_DTYPE_U32:
      if (add) return run<uint32_t>(acc, in, count, IntAdd<uint32_t>{});
      return runMinMax<IntMinMaxOf<uint32_t>::For, uint32_t>(op, acc, in, count);
    case MCSIM_DTYPE_S32:
      if (add) return run<uint32_t>(acc, in, count, IntAdd<uint32_t>{});
      return runMinMax<IntMinMaxOf<int32_t>::For, uint32_t>(op, acc, in, count);
    case MCSIM_DTYPE_U64:
      if (add) return run<uint64_t>(acc, in, count, IntAdd<uint64_t>{});
      return runMinMax<IntMinMaxOf<uint64_t>::For, uint64_t>(op, acc, in, count);
    default:
      return;
  }
}

#if MCSIM_REDUCTION_X86_FAST_PATHS
// f16x2 add with F16C's conversions, which do in one instruction per 8 lanes what f16ToFloat /
// floatToF16 do in a dozen: 8 lanes a step, the rest by the portable loop. The arithmetic is
// F16Add's: exact conversion to binary32, one binary32 addition, one conversion back that
// rounds to nearest even (the immediate, not MXCSR, selects the rounding) with gradual underflow
// and overflow to infinity, NaN results replaced by 0x7fff.
[[gnu::target("avx2,f16c"), gnu::noinline]] void f16AddF16c(uint8_t* __restrict acc,
                                                          const uint8_t* __restrict in,
                                                          uint64_t count) {
  const uint64_t lanes = count * 2;
  const __m128i canonical = _mm_set1_epi16(static_cast<short>(kHalfNaN));
  uint64_t i = 0;
  for (; i + 8 <= lanes; i += 8) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(acc + 2 * i));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + 2 * i));
    const __m256 sum = _mm256_add_ps(_mm256_cvtph_ps(a), _mm256_cvtph_ps(b));
    const __m128i rounded = _mm256_cvtps_ph(sum, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    // All-ones 32-bit masks where the sum is NaN, narrowed to 16 bits (saturation keeps -1).
    const __m256i nan32 = _mm256_castps_si256(_mm256_cmp_ps(sum, sum, _CMP_UNORD_Q));
    const __m128i nan16 =
        _mm_packs_epi32(_mm256_castsi256_si128(nan32), _mm256_extracti128_si256(nan32, 1));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(acc + 2 * i),
                     _mm_blendv_epi8(rounded, canonical, nan16));
  }
  reduceDisjoint<uint32_t>(acc + 2 * i, in + 2 * i, (lanes - i) / 2, Packed<uint32_t, F16Add>{});
}

bool haveF16c() {
  static const bool have = [] {
    __builtin_cpu_init();
#if defined(__clang__)
    // clang (14) knows no "f16c" feature name here: CPUID leaf 1, ECX bit 29.
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    return __builtin_cpu_supports("avx2") && __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 && (ecx & bit_F16C) != 0;
#else
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c");
#endif
  }();
  return have;
}
#endif

// The fast paths that apply (run under the caller's FloatEnvironment); false if none does.
bool fastPath(uint32_t dtype, uint32_t op, uint8_t* acc, const uint8_t* in, uint64_t count) {
#if MCSIM_REDUCTION_X86_FAST_PATHS
  if (dtype == MCSIM_DTYPE_F16X2 && op == MCSIM_REDOP_ADD && disjoint(acc, in, count * 4) &&
      haveF16c()) {
    f16AddF16c(acc, in, count);
    return true;
  }
#else
  (void)dtype, (void)op, (void)acc, (void)in, (void)count;
#endif
  return false;
}

}  // namespace

bool reductionDefined(uint32_t dtype, uint32_t op) {
  if (dtype > MCSIM_DTYPE_U64) return false;
  if (op != MCSIM_REDOP_ADD && op != MCSIM_REDOP_MIN && op != MCSIM_REDOP_MAX) return false;
  return dtype != MCSIM_DTYPE_F64 || op == MCSIM_REDOP_ADD;
}

bool reduceInto(uint32_t dtype, uint32_t op, uint8_t* acc, const uint8_t* in, uint64_t count) {
  if (!reductionDefined(dtype, op)) return false;
  if (count == 0) return true;
  // Only the additions of floating-point types use float arithmetic; min / max and the integer
  // types are integer operations, which the environment does not affect.
  const bool floatAdd = op == MCSIM_REDOP_ADD && dtype != MCSIM_DTYPE_U32 &&
                        dtype != MCSIM_DTYPE_S32 && dtype != MCSIM_DTYPE_U64;
  if (floatAdd) {
    FloatEnvironment env;
    if (!fastPath(dtype, op, acc, in, count)) dispatch(dtype, op, acc, in, count);
  } else {
    dispatch(dtype, op, acc, in, count);
  }
  return true;
}

}  // namespace mcsim::model
