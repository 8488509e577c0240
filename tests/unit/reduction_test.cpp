// The reduction arithmetic (model/reduction.cpp): PTX's add / min / max on every mcsim dtype, bit
// for bit. Hand-computed cases for each rule, then randomized and exhaustive cross-checks against
// slow references written another way (tests/unit/reduction_reference.h), then buffer shapes
// (alignment, tails, overlap) and a hostile host floating-point environment.
#include "model/reduction.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cfenv>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "mcsim/kernels.h"
#include "tests/unit/reduction_reference.h"

#if defined(__x86_64__)
#include <xmmintrin.h>
#endif

namespace {

using mcsim::model::reduceInto;
using mcsim::model::reductionDefined;
using mcsim::test::Format;
using mcsim::test::kBf16;
using mcsim::test::kF16;
using mcsim::test::kF32;
using mcsim::test::kF64;

constexpr uint32_t kAdd = MCSIM_REDOP_ADD, kMin = MCSIM_REDOP_MIN, kMax = MCSIM_REDOP_MAX;

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

uint64_t bits(double d) {
  uint64_t u;
  std::memcpy(&u, &d, sizeof u);
  return u;
}

std::string hex(uint64_t v) {
  char s[24];
  std::snprintf(s, sizeof s, "0x%llx", static_cast<unsigned long long>(v));
  return s;
}

// acc op in for one element, through buffers one byte off alignment.
template <typename T>
T reduceOne(uint32_t dtype, uint32_t op, T acc, T in) {
  uint8_t a[sizeof(T) + 1], b[sizeof(T) + 1];
  std::memcpy(a + 1, &acc, sizeof acc);
  std::memcpy(b + 1, &in, sizeof in);
  EXPECT_TRUE(reduceInto(dtype, op, a + 1, b + 1, 1));
  T r;
  std::memcpy(&r, a + 1, sizeof r);
  return r;
}

uint32_t f32(uint32_t op, uint32_t a, uint32_t b) { return reduceOne<uint32_t>(MCSIM_DTYPE_F32, op, a, b); }
uint32_t f32(uint32_t op, float a, float b) { return f32(op, bits(a), bits(b)); }
uint64_t f64b(uint64_t a, uint64_t b) { return reduceOne<uint64_t>(MCSIM_DTYPE_F64, kAdd, a, b); }
uint64_t f64(double a, double b) { return f64b(bits(a), bits(b)); }

// a op b in a half lane. Both lanes of a word are exercised: lane 0 computes a op b and lane 1
// b op a, which must agree (the operations commute, NaNs included, as NaN results are canonical).
uint16_t halfOp(uint32_t dtype, uint32_t op, uint16_t a, uint16_t b) {
  const uint32_t acc = a | static_cast<uint32_t>(b) << 16, in = b | static_cast<uint32_t>(a) << 16;
  const uint32_t r = reduceOne<uint32_t>(dtype, op, acc, in);
  EXPECT_EQ(r & 0xffff, r >> 16) << "lanes disagree for " << hex(a) << ", " << hex(b);
  return static_cast<uint16_t>(r);
}
uint16_t f16(uint32_t op, uint16_t a, uint16_t b) { return halfOp(MCSIM_DTYPE_F16X2, op, a, b); }
uint16_t bf16(uint32_t op, uint16_t a, uint16_t b) { return halfOp(MCSIM_DTYPE_BF16X2, op, a, b); }

// ---- Domain ------------------------------------------------------------------------------------

TEST(ReductionDomain, DefinedForEveryTypeAndOperatorButMinMaxOfF64) {
  for (uint32_t dtype = 0; dtype <= MCSIM_DTYPE_U64; ++dtype) {
    for (uint32_t op : {kAdd, kMin, kMax}) {
      EXPECT_EQ(reductionDefined(dtype, op), dtype != MCSIM_DTYPE_F64 || op == kAdd)
          << "dtype " << dtype << " op " << op;
    }
  }
  for (uint32_t dtype : {7u, 8u, 100u, 0xffffffffu}) EXPECT_FALSE(reductionDefined(dtype, kAdd));
  for (uint32_t op : {3u, 4u, 0xffffffffu}) EXPECT_FALSE(reductionDefined(MCSIM_DTYPE_U32, op));
}

TEST(ReductionDomain, ReduceIntoAgreesWithReductionDefinedAndLeavesAccAloneWhenUndefined) {
  for (uint32_t dtype = 0; dtype < 10; ++dtype) {
    for (uint32_t op = 0; op < 5; ++op) {
      std::vector<uint8_t> acc(64), in(64);
      for (size_t i = 0; i < acc.size(); ++i) {
        acc[i] = static_cast<uint8_t>(i * 7 + 1);
        in[i] = static_cast<uint8_t>(i * 13 + 5);
      }
      const std::vector<uint8_t> before = acc;
      const bool defined = reductionDefined(dtype, op);
      EXPECT_EQ(reduceInto(dtype, op, acc.data(), in.data(), 4), defined) << dtype << "/" << op;
      if (!defined) {
        EXPECT_EQ(acc, before) << "dtype " << dtype << " op " << op;
      }
    }
  }
}

TEST(ReductionDomain, ZeroElementsIsANoOp) {
  EXPECT_TRUE(reduceInto(MCSIM_DTYPE_F32, kAdd, nullptr, nullptr, 0));
  EXPECT_FALSE(reduceInto(MCSIM_DTYPE_F64, kMin, nullptr, nullptr, 0));
  uint32_t acc = 7, in = 9;
  EXPECT_TRUE(reduceInto(MCSIM_DTYPE_U32, kAdd, reinterpret_cast<uint8_t*>(&acc),
                         reinterpret_cast<const uint8_t*>(&in), 0));
  EXPECT_EQ(acc, 7u);
}

// ---- f32 ---------------------------------------------------------------------------------------

TEST(ReductionF32, AddRoundsToNearestEven) {
  EXPECT_EQ(f32(kAdd, 1.0f, 2.0f), bits(3.0f));
  EXPECT_EQ(f32(kAdd, 0.1f, 0.2f), bits(0.3f));  // 0.1f + 0.2f rounds to 0.3f's pattern
  // 1 + 2^-24 is halfway between 1 and 1 + 2^-23: the tie goes to 1 (even fraction).
  EXPECT_EQ(f32(kAdd, 1.0f, 0x1p-24f), bits(1.0f));
  // (1 + 2^-23) + 2^-24: halfway between odd 1 + 2^-23 and even 1 + 2^-22: up.
  EXPECT_EQ(f32(kAdd, 0x1.000002p0f, 0x1p-24f), bits(0x1.000004p0f));
  // Just over half an ulp rounds up, just under rounds down.
  EXPECT_EQ(f32(kAdd, 1.0f, 0x1.000002p-24f), bits(0x1.000002p0f));
  EXPECT_EQ(f32(kAdd, 1.0f, 0x1.fffffep-25f), bits(1.0f));
  EXPECT_EQ(f32(kAdd, -1.0f, -0x1p-24f), bits(-1.0f));
  EXPECT_EQ(f32(kAdd, 16777216.0f, 1.0f), bits(16777216.0f));  // 2^24 + 1: tie to even
  EXPECT_EQ(f32(kAdd, 16777218.0f, 1.0f), bits(16777220.0f));
}

TEST(ReductionF32, AddOverflowsToInfinity) {
  const float max = 0x1.fffffep127f;
  EXPECT_EQ(f32(kAdd, max, max), 0x7f800000u);
  EXPECT_EQ(f32(kAdd, -max, -max), 0xff800000u);
  EXPECT_EQ(f32(kAdd, max, 0x1p103f), 0x7f800000u);  // half an ulp: tie, max is odd: up
  EXPECT_EQ(f32(kAdd, max, 0x1.fffffep102f), bits(max));
  EXPECT_EQ(f32(kAdd, 0x7f800000u, bits(-max)), 0x7f800000u);
  EXPECT_EQ(f32(kAdd, 0xff800000u, 0xff800000u), 0xff800000u);
}

TEST(ReductionF32, AddKeepsSubnormals) {
  EXPECT_EQ(f32(kAdd, 0x00000001u, 0x00000001u), 0x00000002u);          // 2^-149 + 2^-149
  EXPECT_EQ(f32(kAdd, 0x00800000u, 0x80000001u), 0x007fffffu);          // min normal - 2^-149
  EXPECT_EQ(f32(kAdd, 0x007fffffu, 0x00000001u), 0x00800000u);          // up into the normals
  EXPECT_EQ(f32(kAdd, 0x00400000u, 0x00400000u), 0x00800000u);
  EXPECT_EQ(f32(kAdd, 0x80000003u, 0x00000001u), 0x80000002u);
  EXPECT_EQ(f32(kAdd, 0x00000001u, 0x80000001u), 0x00000000u);          // exact zero: +0
}

TEST(ReductionF32, AddSignsOfZero) {
  EXPECT_EQ(f32(kAdd, -0.0f, 0.0f), 0x00000000u);
  EXPECT_EQ(f32(kAdd, 0.0f, -0.0f), 0x00000000u);
  EXPECT_EQ(f32(kAdd, -0.0f, -0.0f), 0x80000000u);
  EXPECT_EQ(f32(kAdd, 0.0f, 0.0f), 0x00000000u);
  EXPECT_EQ(f32(kAdd, 5.0f, -5.0f), 0x00000000u);
  EXPECT_EQ(f32(kAdd, -5.0f, 5.0f), 0x00000000u);
  EXPECT_EQ(f32(kAdd, -0.0f, 3.0f), bits(3.0f));
  EXPECT_EQ(f32(kAdd, -2.0f, -0.0f), bits(-2.0f));
}

TEST(ReductionF32, AddGivesTheCanonicalNaN) {
  constexpr uint32_t kNaN = 0x7fffffffu;
  EXPECT_EQ(f32(kAdd, 0x7fc00000u, bits(1.0f)), kNaN);
  EXPECT_EQ(f32(kAdd, bits(1.0f), 0xffc00123u), kNaN);   // negative NaN with a payload
  EXPECT_EQ(f32(kAdd, 0x7f800001u, bits(1.0f)), kNaN);   // signaling
  EXPECT_EQ(f32(kAdd, 0x7fa00000u, 0xffc00000u), kNaN);  // two NaNs
  EXPECT_EQ(f32(kAdd, 0x7f800000u, 0xff800000u), kNaN);  // inf - inf
  EXPECT_EQ(f32(kAdd, 0xff800000u, 0x7f800000u), kNaN);
  EXPECT_EQ(f32(kAdd, 0x7fffffffu, 0x7f800000u), kNaN);
}

TEST(ReductionF32, MinMaxFollowPtx) {
  EXPECT_EQ(f32(kMin, 1.0f, 2.0f), bits(1.0f));
  EXPECT_EQ(f32(kMax, 1.0f, 2.0f), bits(2.0f));
  EXPECT_EQ(f32(kMin, -1.0f, 1.0f), bits(-1.0f));
  EXPECT_EQ(f32(kMax, -1.0f, -2.0f), bits(-1.0f));
  EXPECT_EQ(f32(kMin, 0xff800000u, 0x7f800000u), 0xff800000u);
  EXPECT_EQ(f32(kMax, 0xff800000u, 0x7f800000u), 0x7f800000u);
  // -0.0 < +0.0, in either order.
  EXPECT_EQ(f32(kMin, -0.0f, 0.0f), 0x80000000u);
  EXPECT_EQ(f32(kMin, 0.0f, -0.0f), 0x80000000u);
  EXPECT_EQ(f32(kMax, -0.0f, 0.0f), 0x00000000u);
  EXPECT_EQ(f32(kMax, 0.0f, -0.0f), 0x00000000u);
  // Subnormals are not zero.
  EXPECT_EQ(f32(kMin, 0x00000001u, 0x00000000u), 0x00000000u);
  EXPECT_EQ(f32(kMax, 0x00000001u, 0x80000000u), 0x00000001u);
  EXPECT_EQ(f32(kMin, 0x80000001u, 0x80000000u), 0x80000001u);
  EXPECT_EQ(f32(kMin, 0x00000002u, 0x00000001u), 0x00000001u);
  // One NaN: the other operand, whatever the NaN's sign or kind.
  for (uint32_t nan : {0x7fc00000u, 0xffc00000u, 0x7f800001u, 0xffffffffu, 0x7fffffffu}) {
    EXPECT_EQ(f32(kMin, nan, bits(3.0f)), bits(3.0f)) << hex(nan);
    EXPECT_EQ(f32(kMin, bits(3.0f), nan), bits(3.0f)) << hex(nan);
    EXPECT_EQ(f32(kMax, nan, 0xff800000u), 0xff800000u) << hex(nan);
    EXPECT_EQ(f32(kMax, 0x80000000u, nan), 0x80000000u) << hex(nan);
    EXPECT_EQ(f32(kMin, nan, 0x7f800000u), 0x7f800000u) << hex(nan);
    // Two NaNs: the canonical NaN.
    EXPECT_EQ(f32(kMin, nan, 0xffc00001u), 0x7fffffffu) << hex(nan);
    EXPECT_EQ(f32(kMax, nan, 0xffc00001u), 0x7fffffffu) << hex(nan);
    EXPECT_EQ(f32(kMax, 0x7f800002u, nan), 0x7fffffffu) << hex(nan);
  }
}

// ---- f64 ---------------------------------------------------------------------------------------

TEST(ReductionF64, AddRoundsToNearestEvenAndKeepsSubnormals) {
  EXPECT_EQ(f64(1.0, 2.0), bits(3.0));
  EXPECT_EQ(f64(1.0, 0x1p-53), bits(1.0));                          // tie: even
  EXPECT_EQ(f64(0x1.0000000000001p0, 0x1p-53), bits(0x1.0000000000002p0));
  EXPECT_EQ(f64(1.0, 0x1.0000000000001p-53), bits(0x1.0000000000001p0));
  EXPECT_EQ(f64(0x1.fffffffffffffp1023, 0x1.fffffffffffffp1023), 0x7ff0000000000000ull);
  EXPECT_EQ(f64(0x1.fffffffffffffp1023, 0x1p970), 0x7ff0000000000000ull);  // tie, odd: up
  EXPECT_EQ(f64b(uint64_t{1}, uint64_t{1}), uint64_t{2});                      // 2^-1074 * 2
  EXPECT_EQ(f64b(0x0010000000000000ull, 0x8000000000000001ull), 0x000fffffffffffffull);
  EXPECT_EQ(f64(-0.0, 0.0), uint64_t{0});
  EXPECT_EQ(f64(-0.0, -0.0), 0x8000000000000000ull);
  EXPECT_EQ(f64(7.0, -7.0), uint64_t{0});
}

TEST(ReductionF64, AddKeepsTheNaNPayload) {
  // A NaN input's payload, made quiet; the second operand's when both are NaN (as a real H100's
  // add.rn.f64 gives: docs/real-driver/reduction-h100-2026-11-21.txt).
  EXPECT_EQ(f64b(0x7ff8000000000123ull, bits(1.0)), 0x7ff8000000000123ull);
  EXPECT_EQ(f64b(bits(1.0), 0xfff8000000000456ull), 0xfff8000000000456ull);
  EXPECT_EQ(f64b(0x7ff0000000000001ull, bits(1.0)), 0x7ff8000000000001ull);  // signaling
  EXPECT_EQ(f64b(0x7ff8000000000abcull, 0xfff0000000000def), 0xfff8000000000defull);
  EXPECT_EQ(f64b(0xfff0000000000defull, 0x7ff8000000000abcull), 0x7ff8000000000abcull);
  // Two of the H100's answers, verbatim.
  EXPECT_EQ(f64b(0x7ff8000000000000ull, 0x7ff0000000000001ull), 0x7ff8000000000001ull);
  EXPECT_EQ(f64b(0x7ff0000000000001ull, 0x7ff8000000000000ull), 0x7ff8000000000000ull);
  EXPECT_EQ(f64b(0x7ff8000000000001ull, 0x7ff0000000000000ull), 0x7ff8000000000001ull);
  // An invalid operation makes the default NaN.
  EXPECT_EQ(f64b(0x7ff0000000000000ull, 0xfff0000000000000ull), 0xfff8000000000000ull);
  EXPECT_EQ(f64b(0x7ff0000000000000ull, 0x7ff0000000000000ull), 0x7ff0000000000000ull);
}

// ---- f16 / bf16 --------------------------------------------------------------------------------

TEST(ReductionF16, AddRoundsOnceToNearestEven) {
  EXPECT_EQ(f16(kAdd, 0x3c00, 0x3c00), 0x4000);  // 1 + 1 = 2
  EXPECT_EQ(f16(kAdd, 0x3c00, 0xc000), 0xbc00);  // 1 - 2 = -1
  // f16's 0.1 and 0.2 are 0.0999755859375 and 0.199951171875; their sum is 1228.5 times the
  // spacing 2^-12 of [0.25, 0.5): a tie, to even 1228 * 2^-12 (0x34cc, not 0.3's 0x34cd).
  EXPECT_EQ(f16(kAdd, 0x2e66, 0x3266), 0x34cc);
  // 1 + 2^-11: halfway between 1 and 1 + 2^-10: even, 1. (1 + 2^-10) + 2^-11: up to 1 + 2^-9.
  EXPECT_EQ(f16(kAdd, 0x3c00, 0x1000), 0x3c00);
  EXPECT_EQ(f16(kAdd, 0x3c01, 0x1000), 0x3c02);
  EXPECT_EQ(f16(kAdd, 0x3c00, 0x1001), 0x3c01);  // just over half an ulp
  EXPECT_EQ(f16(kAdd, 0x6800, 0x3c00), 0x6800);  // 2048 + 1: tie, even 2048
  EXPECT_EQ(f16(kAdd, 0x6801, 0x3c00), 0x6802);  // 2050 + 1: tie, even 2052
  // The exact sum 2^15 + 2^-24 is not a binary32 number; it rounds to 2^15 either way.
  EXPECT_EQ(f16(kAdd, 0x7800, 0x0001), 0x7800);
  // 1 - 2^-24 rounds to 1 (far below half an ulp of 1's binade below).
  EXPECT_EQ(f16(kAdd, 0x3c00, 0x8001), 0x3c00);
  // Below 2^-11 the spacing is 2^-22: 2^-11 - 2 * 2^-24 is a tie between 2047 * 2^-22 (odd) and
  // 2^-11 (even), 2^-11 - 3 * 2^-24 is nearer 2047 * 2^-22.
  EXPECT_EQ(f16(kAdd, 0x1000, 0x8002), 0x1000);
  EXPECT_EQ(f16(kAdd, 0x1000, 0x8003), 0x0fff);
}

TEST(ReductionF16, AddOverflowsToInfinityAndKeepsSubnormals) {
  EXPECT_EQ(f16(kAdd, 0x7bff, 0x4c00), 0x7c00);  // 65504 + 16 = 65520: tie, 65504 odd: inf
  EXPECT_EQ(f16(kAdd, 0x7bff, 0x4800), 0x7bff);  // 65504 + 8 = 65512: down
  EXPECT_EQ(f16(kAdd, 0x7bff, 0x7bff), 0x7c00);
  EXPECT_EQ(f16(kAdd, 0xfbff, 0xcc00), 0xfc00);
  EXPECT_EQ(f16(kAdd, 0x7c00, 0xfbff), 0x7c00);  // inf - max = inf
  EXPECT_EQ(f16(kAdd, 0x0001, 0x0001), 0x0002);  // 2^-24 + 2^-24
  EXPECT_EQ(f16(kAdd, 0x0400, 0x8001), 0x03ff);  // min normal - 2^-24
  EXPECT_EQ(f16(kAdd, 0x03ff, 0x0001), 0x0400);
  EXPECT_EQ(f16(kAdd, 0x8005, 0x0002), 0x8003);
  EXPECT_EQ(f16(kAdd, 0x0001, 0x8001), 0x0000);
}

TEST(ReductionF16, AddSignsOfZeroAndNaN) {
  EXPECT_EQ(f16(kAdd, 0x8000, 0x0000), 0x0000);
  EXPECT_EQ(f16(kAdd, 0x8000, 0x8000), 0x8000);
  EXPECT_EQ(f16(kAdd, 0x0000, 0x0000), 0x0000);
  EXPECT_EQ(f16(kAdd, 0x3c00, 0xbc00), 0x0000);
  EXPECT_EQ(f16(kAdd, 0x8000, 0x3c00), 0x3c00);
  EXPECT_EQ(f16(kAdd, 0x7e00, 0x3c00), 0x7fff);  // quiet NaN
  EXPECT_EQ(f16(kAdd, 0xfc01, 0x0000), 0x7fff);  // negative signaling NaN
  EXPECT_EQ(f16(kAdd, 0x7c00, 0xfc00), 0x7fff);  // inf - inf
  EXPECT_EQ(f16(kAdd, 0x7c00, 0x3c00), 0x7c00);
  EXPECT_EQ(f16(kAdd, 0xfc00, 0xfc00), 0xfc00);
}

TEST(ReductionBf16, AddRoundsOnceToNearestEven) {
  EXPECT_EQ(bf16(kAdd, 0x3f80, 0x3f80), 0x4000);  // 1 + 1 = 2
  EXPECT_EQ(bf16(kAdd, 0x3f80, 0x3b80), 0x3f80);  // 1 + 2^-8: tie, even 1
  EXPECT_EQ(bf16(kAdd, 0x3f81, 0x3b80), 0x3f82);  // (1 + 2^-7) + 2^-8: tie, up to even
  EXPECT_EQ(bf16(kAdd, 0x3f80, 0x3b81), 0x3f81);  // just over half an ulp
  // 1 - 2^-30: binary32 rounds it to 1 first; correctly rounded it is 1 too.
  EXPECT_EQ(bf16(kAdd, 0x3f80, 0xb080), 0x3f80);
  // 256 + (1 + 2^-7) = 257.0078125, just over the tie between 256 and 258 (spacing 2): up.
  EXPECT_EQ(bf16(kAdd, 0x4380, 0x3f81), 0x4381);
  EXPECT_EQ(bf16(kAdd, 0x4380, 0x3f80), 0x4380);  // 257: tie, even 256
}

TEST(ReductionBf16, AddOverflowsToInfinityAndKeepsSubnormals) {
  EXPECT_EQ(bf16(kAdd, 0x7f7f, 0x7f7f), 0x7f80);
  EXPECT_EQ(bf16(kAdd, 0x7f7f, 0x7b00), 0x7f80);  // max + 2^119, half an ulp: tie, odd: inf
  EXPECT_EQ(bf16(kAdd, 0x7f7f, 0x7a80), 0x7f7f);  // max + 2^118: down
  EXPECT_EQ(bf16(kAdd, 0xff7f, 0xff7f), 0xff80);
  EXPECT_EQ(bf16(kAdd, 0x0001, 0x0001), 0x0002);  // 2^-133 + 2^-133: binary32 subnormals
  EXPECT_EQ(bf16(kAdd, 0x0080, 0x8001), 0x007f);  // min normal - 2^-133
  EXPECT_EQ(bf16(kAdd, 0x007f, 0x0001), 0x0080);
  EXPECT_EQ(bf16(kAdd, 0x0001, 0x8001), 0x0000);
}

TEST(ReductionBf16, AddSignsOfZeroAndNaN) {
  EXPECT_EQ(bf16(kAdd, 0x8000, 0x0000), 0x0000);
  EXPECT_EQ(bf16(kAdd, 0x8000, 0x8000), 0x8000);
  EXPECT_EQ(bf16(kAdd, 0x3f80, 0xbf80), 0x0000);
  EXPECT_EQ(bf16(kAdd, 0x7fc0, 0x3f80), 0x7fff);
  EXPECT_EQ(bf16(kAdd, 0xff81, 0x0000), 0x7fff);
  EXPECT_EQ(bf16(kAdd, 0x7f80, 0xff80), 0x7fff);
  EXPECT_EQ(bf16(kAdd, 0x7f80, 0x3f80), 0x7f80);
}

TEST(ReductionHalf, MinMaxFollowPtx) {
  for (uint32_t dtype : {uint32_t{MCSIM_DTYPE_F16X2}, uint32_t{MCSIM_DTYPE_BF16X2}}) {
    SCOPED_TRACE(dtype == MCSIM_DTYPE_F16X2 ? "f16" : "bf16");
    const bool isF16 = dtype == MCSIM_DTYPE_F16X2;
    const uint16_t one = isF16 ? 0x3c00 : 0x3f80, two = isF16 ? 0x4000 : 0x4000;
    const uint16_t inf = isF16 ? 0x7c00 : 0x7f80, ninf = isF16 ? 0xfc00 : 0xff80;
    const uint16_t qnan = isF16 ? 0x7e00 : 0x7fc0, snan = isF16 ? 0x7c01 : 0x7f81;
    auto op = [&](uint32_t o, uint16_t a, uint16_t b) { return halfOp(dtype, o, a, b); };
    EXPECT_EQ(op(kMin, one, two), one);
    EXPECT_EQ(op(kMax, one, two), two);
    EXPECT_EQ(op(kMin, static_cast<uint16_t>(one | 0x8000), one), one | 0x8000);
    EXPECT_EQ(op(kMin, ninf, inf), ninf);
    EXPECT_EQ(op(kMax, ninf, inf), inf);
    EXPECT_EQ(op(kMin, 0x8000, 0x0000), 0x8000);
    EXPECT_EQ(op(kMin, 0x0000, 0x8000), 0x8000);
    EXPECT_EQ(op(kMax, 0x8000, 0x0000), 0x0000);
    EXPECT_EQ(op(kMax, 0x0000, 0x8000), 0x0000);
    EXPECT_EQ(op(kMin, 0x0001, 0x0000), 0x0000);
    EXPECT_EQ(op(kMin, 0x8001, 0x8000), 0x8001);
    EXPECT_EQ(op(kMax, 0x0001, 0x8000), 0x0001);
    for (uint16_t nan : {qnan, snan, static_cast<uint16_t>(qnan | 0x8000), uint16_t{0xffff},
                         uint16_t{0x7fff}}) {
      EXPECT_EQ(op(kMin, nan, one), one) << hex(nan);
      EXPECT_EQ(op(kMax, nan, ninf), ninf) << hex(nan);
      EXPECT_EQ(op(kMin, nan, inf), inf) << hex(nan);
      EXPECT_EQ(op(kMax, 0x8000, nan), 0x8000) << hex(nan);
      EXPECT_EQ(op(kMin, nan, static_cast<uint16_t>(qnan | 0x8000)), 0x7fff) << hex(nan);
      EXPECT_EQ(op(kMax, nan, snan), 0x7fff) << hex(nan);
    }
  }
}

// ---- Integers ----------------------------------------------------------------------------------

TEST(ReductionIntegers, AddWraps) {
  EXPECT_EQ(reduceOne<uint32_t>(MCSIM_DTYPE_U32, kAdd, 0xffffffffu, 2u), 1u);
  EXPECT_EQ(reduceOne<uint32_t>(MCSIM_DTYPE_U32, kAdd, 40u, 2u), 42u);
  EXPECT_EQ(reduceOne<uint32_t>(MCSIM_DTYPE_S32, kAdd, 0x7fffffffu, 1u), 0x80000000u);
  EXPECT_EQ(reduceOne<uint32_t>(MCSIM_DTYPE_S32, kAdd, static_cast<uint32_t>(-5), 3u),
            static_cast<uint32_t>(-2));
  EXPECT_EQ(reduceOne<uint64_t>(MCSIM_DTYPE_U64, kAdd, ~uint64_t{0}, uint64_t{2}), uint64_t{1});
  EXPECT_EQ(reduceOne<uint64_t>(MCSIM_DTYPE_U64, kAdd, uint64_t{1} << 63, uint64_t{1} << 63),
            uint64_t{0});
}

TEST(ReductionIntegers, MinMaxCompareByTheTypesSignedness) {
  EXPECT_EQ(reduceOne<uint32_t>(MCSIM_DTYPE_U32, kMin, 0xffffffffu, 1u), 1u);
  EXPECT_EQ(reduceOne<uint32_t>(MCSIM_DTYPE_U32, kMax, 0xffffffffu, 1u), 0xffffffffu);
  EXPECT_EQ(reduceOne<uint32_t>(MCSIM_DTYPE_S32, kMin, 0xffffffffu, 1u), 0xffffffffu);  // -1 < 1
  EXPECT_EQ(reduceOne<uint32_t>(MCSIM_DTYPE_S32, kMax, 0xffffffffu, 1u), 1u);
  EXPECT_EQ(reduceOne<uint32_t>(MCSIM_DTYPE_S32, kMin, 0x80000000u, 0x7fffffffu), 0x80000000u);
  EXPECT_EQ(reduceOne<uint32_t>(MCSIM_DTYPE_S32, kMax, 0x80000000u, 0x7fffffffu), 0x7fffffffu);
  EXPECT_EQ(reduceOne<uint64_t>(MCSIM_DTYPE_U64, kMin, uint64_t{1} << 63, uint64_t{5}), uint64_t{5});
  EXPECT_EQ(reduceOne<uint64_t>(MCSIM_DTYPE_U64, kMax, uint64_t{1} << 63, uint64_t{5}),
            uint64_t{1} << 63);
  EXPECT_EQ(reduceOne<uint64_t>(MCSIM_DTYPE_U64, kMax, uint64_t{0x100000000}, uint64_t{0xffffffff}),
            uint64_t{0x100000000});
}

// ---- Cross-checks against the references -------------------------------------------------------

struct Pair {
  uint64_t a, b;
};

unsigned laneBytes(const Format& f) { return static_cast<unsigned>(f.expBits + f.fracBits + 1) / 8; }

uint64_t expected(const Format& f, uint32_t op, uint64_t a, uint64_t b) {
  return op == kAdd ? mcsim::test::referenceAdd(f, a, b)
                    : mcsim::test::referenceMinMax(f, op == kMax, a, b);
}

// Lays the pairs out as lanes of one acc and one in buffer (lane i at byte i * laneBytes, which
// for f16x2 / bf16x2 is lane i % 2 of word i / 2), reduces the whole buffer in one call, and
// compares every lane with the reference. Returns the number of mismatches (the first few are
// reported).
int checkPairs(uint32_t dtype, uint32_t op, const Format& f, const std::vector<Pair>& pairs) {
  const unsigned lb = laneBytes(f);
  const size_t elementLanes = mcsim_dtype_bytes(dtype) / lb;
  std::vector<Pair> padded = pairs;
  while (padded.size() % elementLanes != 0) padded.push_back({0, 0});
  std::vector<uint8_t> acc(padded.size() * lb), in(padded.size() * lb);
  for (size_t i = 0; i < padded.size(); ++i) {
    std::memcpy(&acc[i * lb], &padded[i].a, lb);  // little-endian host: the low bytes
    std::memcpy(&in[i * lb], &padded[i].b, lb);
  }
  EXPECT_TRUE(reduceInto(dtype, op, acc.data(), in.data(), padded.size() / elementLanes));
  int bad = 0;
  for (size_t i = 0; i < padded.size(); ++i) {
    uint64_t got = 0;
    std::memcpy(&got, &acc[i * lb], lb);
    const uint64_t want = expected(f, op, padded[i].a, padded[i].b);
    if (got != want && ++bad <= 10) {
      ADD_FAILURE() << "dtype " << dtype << " op " << op << ": " << hex(padded[i].a) << " op "
                    << hex(padded[i].b) << " gave " << hex(got) << ", want " << hex(want);
    }
  }
  return bad;
}

// Values worth combining: zeros, subnormal edges, normal edges, ones, infinities, NaNs of each
// kind and sign.
std::vector<uint64_t> specials(const Format& f) {
  const uint64_t frac = f.fracMask(), expOne = f.expMax() >> 1, e = f.fracBits;
  const uint64_t inf = f.expMax() << e;
  std::vector<uint64_t> v = {
      0, 1, 2, 3, frac, frac - 1, frac + 1,                 // zero, subnormals, min normal
      uint64_t{1} << e, (uint64_t{2} << e) | 1,             // small normals
      expOne << e, (expOne << e) | 1, (expOne << e) | frac,  // 1, 1 + ulp, 2 - ulp
      (expOne + 1) << e, (expOne - 1) << e,                  // 2, 0.5
      ((expOne - e - 1) << e), ((expOne - e) << e),          // half an ulp of 1, an ulp of 1
      ((expOne + e + 1) << e),                               // 2^(p): 1 is half its ulp
      inf - 1, inf - 2, (inf - (uint64_t{1} << e)),           // max, max - ulp, max binade
      ((f.expMax() - e - 2) << e),                           // half an ulp of max
      inf, inf | (uint64_t{1} << (e - 1)), inf | 1, inf | frac,  // inf, qNaN, sNaN, all-ones NaN
  };
  const size_t n = v.size();
  for (size_t i = 0; i < n; ++i) v.push_back(v[i] | f.signBit());
  return v;
}

std::vector<Pair> allPairs(const std::vector<uint64_t>& values) {
  std::vector<Pair> pairs;
  for (uint64_t a : values) {
    for (uint64_t b : values) pairs.push_back({a, b});
  }
  return pairs;
}

// Random operand pairs that reach every rounding situation: uniform patterns, exponents close
// together (carries, ties, cancellation), near-negations, tiny and huge magnitudes, and operands
// exactly half an ulp or less apart in scale.
std::vector<Pair> randomPairs(const Format& f, size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const int width = f.expBits + f.fracBits + 1;
  const uint64_t all = width == 64 ? ~uint64_t{0} : (uint64_t{1} << width) - 1;
  const uint64_t emax = f.expMax();
  auto withExp = [&](uint64_t e, uint64_t bits) {
    return (bits & (f.signBit() | f.fracMask())) | (std::min(e, emax) << f.fracBits);
  };
  std::vector<Pair> pairs(n);
  for (auto& p : pairs) {
    const uint64_t r1 = rng() & all, r2 = rng() & all;
    const uint64_t ea = f.expOf(r1);
    switch (rng() % 8) {
      case 0:  // uniform patterns (NaNs and infinities included)
        p = {r1, r2};
        break;
      case 1: {  // exponents within a few binades
        const uint64_t eb = std::min<uint64_t>(emax - 1, ea + rng() % 5);
        p = {withExp(std::min(ea, emax - 1), r1), withExp(eb > 2 ? eb - 2 : 0, r2)};
        break;
      }
      case 2:  // near-cancellation: -a with the low bits changed
        p = {r1, (r1 ^ f.signBit()) ^ (r2 & 0xff)};
        break;
      case 3:  // subnormals and the smallest normals
        p = {withExp(rng() % 3, r1), withExp(rng() % 3, r2)};
        break;
      case 4:  // near the top of the range
        p = {withExp(emax - 1 - rng() % 2, r1), withExp(emax - 1 - rng() % 3, r2)};
        break;
      case 5: {  // b about half an ulp of a: ties and near-ties
        const uint64_t shift = static_cast<uint64_t>(f.fracBits) + 1 + rng() % 2;
        const uint64_t eb = ea > shift ? ea - shift : 0;
        p = {withExp(std::min(ea, emax - 1), r1), withExp(eb, r2 & (rng() % 2 ? ~uint64_t{0} : f.signBit()))};
        break;
      }
      case 6: {  // b far below a: only sticky bits
        const uint64_t shift = static_cast<uint64_t>(f.fracBits) + 2 + rng() % 40;
        const uint64_t eb = ea > shift ? ea - shift : 0;
        p = {withExp(std::min(ea, emax - 1), r1), withExp(eb, r2)};
        break;
      }
      default:  // same binade, opposite signs
        p = {withExp(std::min(ea, emax - 1), r1), withExp(std::min(ea, emax - 1), r2) ^ f.signBit()};
        break;
    }
    if (rng() % 2) std::swap(p.a, p.b);
  }
  return pairs;
}

struct Case {
  const char* name;
  uint32_t dtype;
  const Format* format;
};

const Case kFloatCases[] = {
    {"f16", MCSIM_DTYPE_F16X2, &kF16},
    {"bf16", MCSIM_DTYPE_BF16X2, &kBf16},
    {"f32", MCSIM_DTYPE_F32, &kF32},
};

TEST(ReductionCrossCheck, SpecialValuesPairwise) {
  for (const Case& c : kFloatCases) {
    const auto pairs = allPairs(specials(*c.format));
    for (uint32_t op : {kAdd, kMin, kMax}) EXPECT_EQ(checkPairs(c.dtype, op, *c.format, pairs), 0) << c.name;
  }
  EXPECT_EQ(checkPairs(MCSIM_DTYPE_F64, kAdd, kF64, allPairs(specials(kF64))), 0);
}

TEST(ReductionCrossCheck, RandomAdds) {
  for (const Case& c : kFloatCases) {
    for (uint64_t seed = 1; seed <= 4; ++seed) {
      EXPECT_EQ(checkPairs(c.dtype, kAdd, *c.format, randomPairs(*c.format, 1 << 16, seed)), 0)
          << c.name << " seed " << seed;
    }
  }
  EXPECT_EQ(checkPairs(MCSIM_DTYPE_F64, kAdd, kF64, randomPairs(kF64, 1 << 14, 5)), 0);
}

TEST(ReductionCrossCheck, RandomMinMax) {
  for (const Case& c : kFloatCases) {
    const auto pairs = randomPairs(*c.format, 1 << 16, 11);
    for (uint32_t op : {kMin, kMax}) EXPECT_EQ(checkPairs(c.dtype, op, *c.format, pairs), 0) << c.name;
  }
}

// Every f16 / bf16 value against the values most likely to expose a conversion or rounding slip
// (the operations commute, which halfOp checks, so one operand order is enough).
TEST(ReductionCrossCheck, EveryHalfValueAgainstTheEdges) {
  for (const Case& c : kFloatCases) {
    if (c.format == &kF32) continue;
    const Format& f = *c.format;
    const uint64_t one = (f.expMax() >> 1) << f.fracBits, inf = f.expMax() << f.fracBits;
    const uint64_t minNormal = uint64_t{1} << f.fracBits;
    const uint64_t ulpOfOne = f.fracBits == 10 ? 0x1400 : 0x3c00;  // 2^-10, 2^-7
    std::vector<uint64_t> edges = {0,   1,         minNormal - 1,      minNormal,
                                   one, one | 1,   ulpOfOne,           ulpOfOne - minNormal,  // half
                                   inf - 1, inf,   inf | (uint64_t{1} << (f.fracBits - 1)), inf | 1};
    const size_t n = edges.size();
    for (size_t i = 0; i < n; ++i) edges.push_back(edges[i] | f.signBit());
    std::vector<Pair> pairs;
    for (uint64_t s : edges) {
      for (uint64_t v = 0; v < 0x10000; ++v) pairs.push_back({v, s});
    }
    for (uint32_t op : {kAdd, kMin, kMax}) EXPECT_EQ(checkPairs(c.dtype, op, f, pairs), 0) << c.name;
  }
}

// x + -0 is x for every non-NaN x (-0 + -0 = -0 included): the conversions to binary32 and back
// are the identity on every f16 / bf16 pattern.
TEST(ReductionCrossCheck, AddingNegativeZeroIsTheIdentityOnEveryHalf) {
  for (uint32_t dtype : {uint32_t{MCSIM_DTYPE_F16X2}, uint32_t{MCSIM_DTYPE_BF16X2}}) {
    const Format& f = dtype == MCSIM_DTYPE_F16X2 ? kF16 : kBf16;
    std::vector<uint16_t> acc(0x10000), in(0x10000, 0x8000);
    for (uint32_t v = 0; v < 0x10000; ++v) acc[v] = static_cast<uint16_t>(v);
    ASSERT_TRUE(reduceInto(dtype, kAdd, reinterpret_cast<uint8_t*>(acc.data()),
                           reinterpret_cast<const uint8_t*>(in.data()), 0x8000));
    int bad = 0;
    for (uint32_t v = 0; v < 0x10000; ++v) {
      const uint16_t want = f.isNaN(v) ? 0x7fff : static_cast<uint16_t>(v);
      if (acc[v] != want && ++bad <= 10) ADD_FAILURE() << hex(v) << " + -0 gave " << hex(acc[v]);
    }
  }
}

// ---- Buffer shapes -----------------------------------------------------------------------------

// Every alignment and every length around the internal block size give the same per-element
// results as one-element calls.
TEST(ReductionBuffers, AnyAlignmentAndLength) {
  std::mt19937_64 rng(3);
  for (uint32_t dtype = 0; dtype <= MCSIM_DTYPE_U64; ++dtype) {
    for (uint32_t op : {kAdd, kMin, kMax}) {
      if (!reductionDefined(dtype, op)) continue;
      const size_t size = mcsim_dtype_bytes(dtype);
      for (size_t count : {size_t{1}, size_t{7}, size_t{31}, size_t{64}, size_t{65}, size_t{129},
                           size_t{300}}) {
        for (size_t accOffset : {size_t{0}, size_t{1}, size_t{3}}) {
          const size_t inOffset = (accOffset * 5 + 2) % 8;
          std::vector<uint8_t> accBuf(count * size + 8), inBuf(count * size + 8);
          for (auto& b : accBuf) b = static_cast<uint8_t>(rng());
          for (auto& b : inBuf) b = static_cast<uint8_t>(rng());
          std::vector<uint8_t> want(accBuf.begin() + accOffset,
                                    accBuf.begin() + accOffset + count * size);
          for (size_t i = 0; i < count; ++i) {
            ASSERT_TRUE(reduceInto(dtype, op, &want[i * size], &inBuf[inOffset + i * size], 1));
          }
          ASSERT_TRUE(reduceInto(dtype, op, &accBuf[accOffset], &inBuf[inOffset], count));
          EXPECT_TRUE(std::equal(want.begin(), want.end(), accBuf.begin() + accOffset))
              << "dtype " << dtype << " op " << op << " count " << count << " offset " << accOffset;
        }
      }
    }
  }
}

// acc[i] = acc[i] op in[i] for i = 0, 1, ... in order, when the buffers overlap: each element is
// read whole before it is written, and an element already written is read as written.
TEST(ReductionBuffers, OverlappingBuffersReduceInOrder) {
  // The same buffer: x + x.
  std::vector<float> same = {1.5f, -2.0f, 0x1p-149f, 3.0f};
  ASSERT_TRUE(reduceInto(MCSIM_DTYPE_F32, kAdd, reinterpret_cast<uint8_t*>(same.data()),
                         reinterpret_cast<const uint8_t*>(same.data()), same.size()));
  EXPECT_EQ(same, (std::vector<float>{3.0f, -4.0f, 0x1p-148f, 6.0f}));

  // in one element behind acc: in[i] is acc[i - 1], already updated: running sums.
  std::vector<uint32_t> ones(301, 1);
  ASSERT_TRUE(reduceInto(MCSIM_DTYPE_U32, kAdd, reinterpret_cast<uint8_t*>(ones.data() + 1),
                         reinterpret_cast<const uint8_t*>(ones.data()), 300));
  for (uint32_t i = 0; i < 301; ++i) ASSERT_EQ(ones[i], i + 1) << i;

  // in one element ahead: in[i] is acc[i + 1], not yet updated.
  std::vector<uint64_t> ahead(301);
  for (uint64_t i = 0; i < 301; ++i) ahead[i] = i;
  ASSERT_TRUE(reduceInto(MCSIM_DTYPE_U64, kAdd, reinterpret_cast<uint8_t*>(ahead.data()),
                         reinterpret_cast<const uint8_t*>(ahead.data() + 1), 300));
  for (uint64_t i = 0; i < 300; ++i) ASSERT_EQ(ahead[i], 2 * i + 1) << i;

  // Packed halves one lane apart, both directions: word by word, both lanes of a word read
  // before it is written. Checked against one-word calls in order.
  for (uint32_t dtype : {uint32_t{MCSIM_DTYPE_F16X2}, uint32_t{MCSIM_DTYPE_BF16X2}}) {
    for (uint32_t op : {kAdd, kMin, kMax}) {
      for (int direction : {-1, 1}) {
        std::vector<uint16_t> buf(2 * 200 + 2), want;
        std::mt19937 rng(op * 2 + static_cast<uint32_t>(direction + 1));
        for (auto& v : buf) v = static_cast<uint16_t>(0x3000 + rng() % 0x1000);  // finite
        want = buf;
        uint16_t* acc = buf.data() + 1;
        const uint16_t* in = acc + direction;
        uint16_t* wantAcc = want.data() + 1;
        for (size_t w = 0; w < 200; ++w) {
          uint32_t a, b;
          std::memcpy(&a, wantAcc + 2 * w, 4);
          std::memcpy(&b, wantAcc + direction + 2 * w, 4);
          a = reduceOne<uint32_t>(dtype, op, a, b);
          std::memcpy(wantAcc + 2 * w, &a, 4);
        }
        ASSERT_TRUE(reduceInto(dtype, op, reinterpret_cast<uint8_t*>(acc),
                               reinterpret_cast<const uint8_t*>(in), 200));
        EXPECT_EQ(buf, want) << "dtype " << dtype << " op " << op << " direction " << direction;
      }
    }
  }
}

// ---- The host's floating-point environment -----------------------------------------------------

// Results that a changed environment would change: subnormal results and inputs (FTZ / DAZ),
// ties (rounding mode), NaN from inf - inf (invalid-operation trap).
void expectEnvironmentSensitiveResults() {
  EXPECT_EQ(f32(kAdd, 0x00000001u, 0x00000001u), 0x00000002u);
  EXPECT_EQ(f32(kAdd, 0x00800000u, 0x80000001u), 0x007fffffu);
  EXPECT_EQ(f32(kAdd, 1.0f, 0x1p-24f), bits(1.0f));
  EXPECT_EQ(f32(kAdd, 1.0f, 0x1.000002p-24f), bits(0x1.000002p0f));
  EXPECT_EQ(f32(kAdd, -1.0f, -0x1.000002p-24f), bits(-0x1.000002p0f));
  EXPECT_EQ(f32(kAdd, 0x7f800000u, 0xff800000u), 0x7fffffffu);
  EXPECT_EQ(f32(kMin, 0x00000001u, 0x00000000u), 0x00000000u);
  EXPECT_EQ(f64b(uint64_t{1}, uint64_t{1}), uint64_t{2});
  EXPECT_EQ(f64(1.0, 0x1.0000000000001p-53), bits(0x1.0000000000001p0));
  EXPECT_EQ(f16(kAdd, 0x0001, 0x0001), 0x0002);
  EXPECT_EQ(f16(kAdd, 0x3c00, 0x1001), 0x3c01);
  EXPECT_EQ(f16(kAdd, 0x6801, 0x3c00), 0x6802);
  EXPECT_EQ(f16(kAdd, 0xbc00, 0x9001), 0xbc01);
  EXPECT_EQ(bf16(kAdd, 0x0001, 0x0001), 0x0002);
  EXPECT_EQ(bf16(kAdd, 0x3f81, 0x3b80), 0x3f82);
  EXPECT_EQ(bf16(kAdd, 0x7f80, 0xff80), 0x7fff);
}

TEST(ReductionEnvironment, RoundingModeOfTheHostDoesNotMatter) {
  for (int mode : {FE_UPWARD, FE_DOWNWARD, FE_TOWARDZERO}) {
    ASSERT_EQ(std::fesetround(mode), 0);
    expectEnvironmentSensitiveResults();
    EXPECT_EQ(std::fegetround(), mode) << "the caller's rounding mode must be restored";
    std::fesetround(FE_TONEAREST);
  }
}

#if defined(__x86_64__)
// What -Ofast programs run with (flush-to-zero, denormals-are-zero), plus rounding toward zero and
// every exception unmasked (a trap would kill the test with SIGFPE). The caller's MXCSR, status
// flags included, must come back unchanged.
TEST(ReductionEnvironment, FlushToZeroDenormalsAreZeroAndTrapsOfTheHostDoNotMatter) {
  const unsigned saved = _mm_getcsr();
  const unsigned hostile = (0x8000u | 0x0040u | 0x6000u | 0x0001u) & ~0x1f80u;  // + a set flag
  _mm_setcsr(hostile);
  expectEnvironmentSensitiveResults();
  const unsigned after = _mm_getcsr();
  _mm_setcsr(saved);
  EXPECT_EQ(after, hostile);
}
#endif

}  // namespace
