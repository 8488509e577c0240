// IEEE binary16 (f16) and bfloat16 (bf16) as bit patterns, converted to and from binary32 with
// integer operations and, where noted, one exact or correctly rounding float operation. Written
// branch-free so that loops over many lanes vectorise. No _Float16 / __bf16: those are compiler
// extensions whose presence and rounding vary, and these conversions must be bit-exact.
//
// Conversions *to* float are exact (both formats are subsets of binary32). Conversions *from*
// float round to nearest even, with gradual underflow and overflow to infinity. NaN is not
// handled here: callers decide which NaN a result gets (see model/reduction.cpp).
//
// The float operations assume round-to-nearest and no flush-to-zero / denormals-are-zero in the
// host's floating-point environment: run them under FloatEnvironment (model/float_env.h).
#pragma once

#include <cstdint>
#include <cstring>

namespace mcsim::model::half {

inline uint32_t bitsOf(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

inline float floatOf(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// All ones if c, else zero; select(m, a, b) is a where m is all ones, b where it is zero. Written
// as arithmetic rather than `c ? a : b` so that the compiler keeps the code straight-line (with
// branches it may sink a float operation into one arm, and then cannot vectorise the loop).
template <typename U>
inline U maskIf(bool c) {
  return static_cast<U>(-static_cast<U>(c));
}
template <typename U>
inline U select(U m, U a, U b) {
  return static_cast<U>((a & m) | (b & ~m));
}

// f16: 1 sign, 5 exponent (bias 15), 10 fraction bits.
constexpr uint16_t kF16ExpMask = 0x7c00;
// bf16: 1 sign, 8 exponent (bias 127), 7 fraction bits: the top half of a binary32.
constexpr uint16_t kBf16ExpMask = 0x7f80;

inline bool f16IsNaN(uint16_t h) { return (h & 0x7fffu) > kF16ExpMask; }
inline bool bf16IsNaN(uint16_t h) { return (h & 0x7fffu) > kBf16ExpMask; }

// Exact, and without arithmetic on subnormal floats (which some CPUs run in slow microcode).
// Shifted into binary32's fields, the f16's exponent needs 112 added (127 - 15), and 224 for
// infinity and NaN (exponent 31 to 255), which keep their fraction (a NaN stays a NaN). A
// subnormal f16 (exponent 0, value frac * 2^-24) gets 113 instead: that makes the float
// 2^-14 + frac * 2^-24, and subtracting 2^-14 leaves frac * 2^-24 exactly (the two are within a
// factor of two of each other: Sterbenz), +0 for a zero fraction. Other values subtract +0,
// which changes nothing. The sign goes on last.
inline float f16ToFloat(uint32_t h) {
  const uint32_t sign = (h & 0x8000u) << 16;
  const uint32_t mag = h & 0x7fffu;
  const uint32_t subnormal = maskIf<uint32_t>(mag < 0x0400u);
  const uint32_t special = maskIf<uint32_t>(mag >= kF16ExpMask);
  const uint32_t bits = (mag << 13) + (112u << 23) + (special & (112u << 23)) + (subnormal & (1u << 23));
  const float value = floatOf(bits) - floatOf(subnormal & 0x38800000u);  // 0x38800000 = 2^-14
  return floatOf(bitsOf(value) | sign);
}

// Round to nearest even. `f` must not be NaN (the result would be some infinity or NaN pattern).
//  - |f| >= 65520 (halfway between 65504, the largest f16, and 2^16; the tie goes to the even
//    neighbour 2^16) overflows to infinity;
//  - |f| < 2^-14 (f16's subnormal range): |f| + 0.5 is in [0.5, 1), where binary32's spacing is
//    2^-24, f16's subnormal spacing; so the float addition itself rounds |f| to nearest even on
//    f16's grid, and the low bits of the sum are the f16 fraction (0x400 when it rounds up to
//    2^-14, which is exactly the smallest normal f16's pattern);
//  - otherwise rebias the exponent and round the 13 dropped fraction bits to nearest even by
//    integer addition (a carry into the exponent is the right result, up to 65504).
inline uint32_t floatToF16(float f) {
  const uint32_t u = bitsOf(f);
  const uint32_t sign = (u >> 16) & 0x8000u;
  const uint32_t mag = u & 0x7fffffffu;
  const uint32_t sub = bitsOf(floatOf(mag) + 0.5f) - 0x3f000000u;
  const uint32_t norm = (mag - (112u << 23) + 0x0fffu + ((mag >> 13) & 1u)) >> 13;
  uint32_t h = select(maskIf<uint32_t>(mag < 0x38800000u), sub, norm);  // 2^-14
  h = select(maskIf<uint32_t>(mag >= 0x477ff000u), uint32_t{kF16ExpMask}, h);  // 65520
  return sign | h;
}

// Exact: bf16 is the upper half of a binary32.
inline float bf16ToFloat(uint32_t h) { return floatOf(h << 16); }

// Round to nearest even by integer addition on the binary32 pattern: add just under half of the
// dropped 16 bits' weight, plus the kept lsb (ties go to even). Subnormals round on the same
// grid; a carry out of the fraction steps the exponent, and out of the largest finite bf16 gives
// exactly infinity (0x7f80). `f` must not be NaN.
inline uint32_t floatToBf16(float f) {
  const uint32_t u = bitsOf(f);
  return (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
}

}  // namespace mcsim::model::half
