// Floating-point instructions: IEEE results in each rounding mode, .ftz, .sat, NaN and signed
// zero rules, conversions, f16/bf16. Expected bit patterns are worked out from IEEE 754 and the
// PTX ISA's definitions (min/max, canonical NaN, cvt saturation).
#include <cmath>

#include "tests/ptx/harness.h"

namespace mcsim::ptx::test {
namespace {

// `op` on two f32 (the input's halves); returns the result's bits.
std::vector<uint32_t> f32op(const std::string& op, const std::vector<std::pair<uint32_t, uint32_t>>& ab) {
  std::vector<uint64_t> in;
  for (auto [a, b] : ab) in.push_back(pair(a, b));
  const auto out = runWords("mov.b64 {%r1, %r2}, %rd6;\n mov.b32 %f1, %r1;\n mov.b32 %f2, %r2;\n" + op +
                                " %f3, %f1, %f2;\n mov.b32 %r3, %f3;\n cvt.u64.u32 %rd7, %r3;",
                            in);
  std::vector<uint32_t> r;
  for (uint64_t v : out) r.push_back(static_cast<uint32_t>(v));
  return r;
}

constexpr uint32_t kOne = 0x3f800000, kThree = 0x40400000, kTwo = 0x40000000;
constexpr uint32_t kQuarterUlp3 = 0x33c00000;  // 3 * 2^-25: three quarters of an ulp of 1.0
constexpr uint32_t kNaN = 0x7fffffff, kInf = 0x7f800000, kNegInf = 0xff800000;

TEST(PtxFloat, AddRoundsInEachMode) {
  // 1 + 0.75 ulp: nearest and up give 1 + ulp, zero and down give 1; mirrored for negatives.
  EXPECT_EQ(f32op("add.rn.f32", {{kOne, kQuarterUlp3}, {kOne | 0x80000000u, kQuarterUlp3 | 0x80000000u}}),
            (std::vector<uint32_t>{0x3f800001, 0xbf800001}));
  EXPECT_EQ(f32op("add.rz.f32", {{kOne, kQuarterUlp3}, {kOne | 0x80000000u, kQuarterUlp3 | 0x80000000u}}),
            (std::vector<uint32_t>{0x3f800000, 0xbf800000}));
  EXPECT_EQ(f32op("add.rm.f32", {{kOne, kQuarterUlp3}, {kOne | 0x80000000u, kQuarterUlp3 | 0x80000000u}}),
            (std::vector<uint32_t>{0x3f800000, 0xbf800001}));
  EXPECT_EQ(f32op("add.rp.f32", {{kOne, kQuarterUlp3}, {kOne | 0x80000000u, kQuarterUlp3 | 0x80000000u}}),
            (std::vector<uint32_t>{0x3f800001, 0xbf800000}));
  // A tie (half an ulp) goes to even.
  EXPECT_EQ(f32op("add.f32", {{kOne, 0x33800000}}), (std::vector<uint32_t>{kOne}));
}

TEST(PtxFloat, DivideAndSquareRootRoundCorrectly) {
  EXPECT_EQ(f32op("div.rn.f32", {{kOne, kThree}}), (std::vector<uint32_t>{0x3eaaaaab}));
  EXPECT_EQ(f32op("div.rz.f32", {{kOne, kThree}}), (std::vector<uint32_t>{0x3eaaaaaa}));
  EXPECT_EQ(runWords("mov.b32 %f1, 0f40000000;\n sqrt.rn.f32 %f2, %f1;\n sqrt.rp.f32 %f3, %f1;\n rcp.rn.f32 %f4, 0f40400000;\n"
                     "mov.b32 %r1, %f2;\n mov.b32 %r2, %f3;\n mov.b64 %rd7, {%r1, %r2};\n mov.b32 %r3, %f4;\n"
                     "cvt.u64.u32 %rd8, %r3;\n xor.b64 %rd7, %rd7, %rd8;",
                     {0})[0],
            pair(0x3fb504f3, 0x3fb504f4) ^ 0x3eaaaaab);
}

TEST(PtxFloat, FmaRoundsOnce) {
  // a = 1 + 2^-12: a*a - 1 is 2^-11 + 2^-24 exactly (fma); mul rounds a*a first (a tie, to even).
  const auto out = runWords("mov.b32 %f1, 0f3F800800;\n fma.rn.f32 %f2, %f1, %f1, 0fBF800000;\n mul.rn.f32 %f3, %f1, %f1;\n"
                            "sub.rn.f32 %f3, %f3, 0f3F800000;\n mov.b32 %r1, %f2;\n mov.b32 %r2, %f3;\n mov.b64 %rd7, {%r1, %r2};",
                            {0});
  EXPECT_EQ(out[0], pair(0x3a000400, 0x3a000000));
}

TEST(PtxFloat, MinMaxNaNAndSignedZero) {
  EXPECT_EQ(f32op("min.f32", {{kNaN, kOne}, {0x80000000u, 0}, {0x7fc00001, 0x7fc00002}, {kTwo, kOne}}),
            (std::vector<uint32_t>{kOne, 0x80000000u, kNaN, kOne}));
  EXPECT_EQ(f32op("max.f32", {{kOne, 0xffc00000u}, {0x80000000u, 0}}), (std::vector<uint32_t>{kOne, 0}));
}

TEST(PtxFloat, NaNResultsAreCanonical) {
  EXPECT_EQ(f32op("add.f32", {{kInf, kNegInf}, {0xffc12345u, kOne}}), (std::vector<uint32_t>{kNaN, kNaN}));
  EXPECT_EQ(f32op("mul.f32", {{0, kInf}}), (std::vector<uint32_t>{kNaN}));
}

TEST(PtxFloat, FlushToZeroAndSaturate) {
  constexpr uint32_t kSub = 0x00080000, kNegSub = 0x80080000;
  EXPECT_EQ(f32op("add.f32", {{kSub, 0}}), (std::vector<uint32_t>{kSub}));
  EXPECT_EQ(f32op("add.ftz.f32", {{kSub, 0}, {kNegSub, 0x80000000u}}), (std::vector<uint32_t>{0, 0x80000000u}));
  EXPECT_EQ(f32op("mul.ftz.f32", {{0x00800000, 0x3f000000}}), (std::vector<uint32_t>{0}));  // 2^-126 * 0.5: subnormal result
  EXPECT_EQ(f32op("mul.f32", {{0x00800000, 0x3f000000}}), (std::vector<uint32_t>{0x00400000}));
  EXPECT_EQ(f32op("add.sat.f32", {{kOne, kOne}, {0xc0a00000u, 0}, {kNaN, 0}, {0x3f000000, 0}}),
            (std::vector<uint32_t>{kOne, 0, 0, 0x3f000000}));
}

TEST(PtxFloat, CompareOrderedAndUnordered) {
  const auto out = runWords(
      "mov.b64 {%r1, %r2}, %rd6;\n mov.b32 %f1, %r1;\n mov.b32 %f2, %r2;\n"
      "setp.lt.f32 %p1, %f1, %f2;\n setp.ltu.f32 %p2, %f1, %f2;\n setp.nan.f32 %p3, %f1, %f2;\n"
      "testp.subnormal.f32 %p4, %f1;\n setp.eq.f32 %p5, %f1, %f2;\n"
      "selp.b32 %r3, 1, 0, %p1;\n selp.b32 %r4, 2, 0, %p2;\n selp.b32 %r5, 4, 0, %p3;\n selp.b32 %r6, 8, 0, %p4;\n"
      "selp.b32 %r7, 16, 0, %p5;\n"
      "or.b32 %r3, %r3, %r4;\n or.b32 %r3, %r3, %r5;\n or.b32 %r3, %r3, %r6;\n or.b32 %r3, %r3, %r7;\n cvt.u64.u32 %rd7, %r3;",
      {pair(kNaN, kOne), pair(kOne, kTwo), pair(0x00000001, kOne), pair(0x80000000u, 0)});
  EXPECT_EQ(out, (std::vector<uint64_t>{2 | 4, 1 | 2, 1 | 2 | 8, 16}));
}

TEST(PtxFloat, DoublePrecisionRounding) {
  const auto out = runWords(
      "mov.b64 %fd1, 0d3FB999999999999A;\n mov.b64 %fd2, 0d3FC999999999999A;\n add.rn.f64 %fd3, %fd1, %fd2;\n"
      "mov.b64 %rd7, %fd3;",
      {0});
  EXPECT_EQ(out[0], 0x3FD3333333333334ull);  // 0.1 + 0.2
  const auto div = runWords("mov.b64 %fd1, %rd6;\n div.rp.f64 %fd2, 0d3FF0000000000000, %fd1;\n mov.b64 %rd7, %fd2;", {f64(3.0)});
  EXPECT_EQ(div[0], 0x3FD5555555555556ull);
  const auto rn = runWords("mov.b64 %fd1, %rd6;\n div.rn.f64 %fd2, 0d3FF0000000000000, %fd1;\n mov.b64 %rd7, %fd2;", {f64(3.0)});
  EXPECT_EQ(rn[0], 0x3FD5555555555555ull);
}

TEST(PtxFloat, FloatToIntegerConversions) {
  auto cvt = [](const std::string& op, float x) {
    return static_cast<uint32_t>(runWords("cvt.u32.u64 %r1, %rd6;\n mov.b32 %f1, %r1;\n " + op + " %r2, %f1;\n cvt.u64.u32 %rd7, %r2;", {f32(x)})[0]);
  };
  EXPECT_EQ(cvt("cvt.rni.s32.f32", 2.5f), 2u);
  EXPECT_EQ(cvt("cvt.rni.s32.f32", 3.5f), 4u);
  EXPECT_EQ(cvt("cvt.rni.s32.f32", -2.5f), static_cast<uint32_t>(-2));
  EXPECT_EQ(cvt("cvt.rzi.s32.f32", -2.7f), static_cast<uint32_t>(-2));
  EXPECT_EQ(cvt("cvt.rmi.s32.f32", -2.1f), static_cast<uint32_t>(-3));
  EXPECT_EQ(cvt("cvt.rpi.s32.f32", 2.1f), 3u);
  EXPECT_EQ(cvt("cvt.rzi.s32.f32", 1e10f), 0x7fffffffu);  // saturates
  EXPECT_EQ(cvt("cvt.rzi.s32.f32", -1e10f), 0x80000000u);
  EXPECT_EQ(cvt("cvt.rzi.u32.f32", -1.0f), 0u);
  EXPECT_EQ(static_cast<uint32_t>(runWords("mov.b32 %f1, 0f7FFFFFFF;\n cvt.rzi.s32.f32 %r2, %f1;\n cvt.u64.u32 %rd7, %r2;", {0})[0]), 0u);
}

TEST(PtxFloat, IntegerToFloatRoundsInEachMode) {
  auto cvt = [](const std::string& op, uint32_t x) {
    return static_cast<uint32_t>(runWords("cvt.u32.u64 %r1, %rd6;\n " + op + " %f1, %r1;\n mov.b32 %r2, %f1;\n cvt.u64.u32 %rd7, %r2;", {x})[0]);
  };
  EXPECT_EQ(cvt("cvt.rn.f32.s32", 16777217), 0x4b800000u);  // 2^24 + 1: a tie, to even
  EXPECT_EQ(cvt("cvt.rp.f32.s32", 16777217), 0x4b800001u);
  EXPECT_EQ(cvt("cvt.rn.f32.u32", 0xffffffffu), 0x4f800000u);
  EXPECT_EQ(cvt("cvt.rz.f32.u32", 0xffffffffu), 0x4f7fffffu);
  EXPECT_EQ(cvt("cvt.rn.f32.s32", static_cast<uint32_t>(-3)), 0xc0400000u);
}

TEST(PtxFloat, FloatToFloatConversions) {
  const auto out = runWords("mov.b64 %fd1, %rd6;\n cvt.rn.f32.f64 %f1, %fd1;\n cvt.rz.f32.f64 %f2, %fd1;\n"
                            "mov.b32 %r1, %f1;\n mov.b32 %r2, %f2;\n mov.b64 %rd7, {%r1, %r2};",
                            {f64(0.1)});
  EXPECT_EQ(out[0], pair(0x3dcccccd, 0x3dcccccc));
  const auto up = runWords("cvt.u32.u64 %r1, %rd6;\n mov.b32 %f1, %r1;\n cvt.f64.f32 %fd1, %f1;\n mov.b64 %rd7, %fd1;", {f32(0.1f)});
  EXPECT_EQ(up[0], f64(static_cast<double>(0.1f)));
  const auto rint = runWords("cvt.u32.u64 %r1, %rd6;\n mov.b32 %f1, %r1;\n cvt.rni.f32.f32 %f2, %f1;\n mov.b32 %r2, %f2;\n"
                             "cvt.u64.u32 %rd7, %r2;",
                             {f32(2.5f), f32(-0.5f)});
  EXPECT_EQ(rint, (std::vector<uint64_t>{f32(2.0f), 0x80000000u}));
}

TEST(PtxFloat, HalfPrecisionConversionsAndArithmetic) {
  const auto to16 = runWords("cvt.u32.u64 %r1, %rd6;\n mov.b32 %f1, %r1;\n cvt.rn.f16.f32 %h1, %f1;\n cvt.rn.bf16.f32 %h2, %f1;\n"
                             "mov.b32 %r2, {%h1, %h2};\n cvt.u64.u32 %rd7, %r2;",
                             {f32(1.0f), f32(65520.0f), f32(65519.0f), 0x3f808000, 0x3f818000});
  EXPECT_EQ(to16[0], pair(0x3c00 | (0x3f80u << 16), 0));
  EXPECT_EQ(to16[1] & 0xffff, 0x7c00u);  // rounds to infinity
  EXPECT_EQ(to16[2] & 0xffff, 0x7bffu);  // 65504
  EXPECT_EQ(to16[3] >> 16, 0x3f80u);     // a tie, to even
  EXPECT_EQ(to16[4] >> 16, 0x3f82u);
  // Packed: cvt.rn.f16x2.f32 d, a, b puts a in the upper half, b in the lower (PTX ISA, cvt).
  const auto packed = runWords("mov.b64 {%r1, %r2}, %rd6;\n mov.b32 %f1, %r1;\n mov.b32 %f2, %r2;\n"
                               "cvt.rn.f16x2.f32 %r3, %f1, %f2;\n cvt.rn.bf16x2.f32 %r4, %f1, %f2;\n"
                               "mov.b64 %rd7, {%r3, %r4};",
                               {pair(f32(1.0f), f32(-2.0f)), pair(f32(65520.0f), 0x3f808000)});
  EXPECT_EQ(packed[0], pair((0x3c00u << 16) | 0xc000u, (0x3f80u << 16) | 0xc000u));
  EXPECT_EQ(packed[1], pair((0x7c00u << 16) | 0x3c04u, (0x4780u << 16) | 0x3f80u));  // inf; 1.00390625 -> f16 exact, bf16 a tie to even
  // fp8 pairs (e4m3: bias 7, 3 fraction bits, largest 448, no infinity, NaN 0x7f; e5m2: f16's
  // upper byte): to fp8 rounded to nearest even with .satfinite (infinity to the largest finite,
  // NaN to 0x7f), the first source in the upper byte; back to f16x2, exactly.
  const auto to8 = runWords("mov.b64 {%r1, %r2}, %rd6;\n mov.b32 %f1, %r1;\n mov.b32 %f2, %r2;\n"
                            "cvt.rn.satfinite.e4m3x2.f32 %h1, %f1, %f2;\n cvt.rn.satfinite.e5m2x2.f32 %h2, %f1, %f2;\n"
                            "mov.b32 %r3, {%h1, %h2};\n cvt.u64.u32 %rd7, %r3;",
                            {pair(f32(1.0f), f32(-448.0f)), pair(f32(500.0f), 0x7fc00000u),
                             pair(f32(0.001953125f), f32(0.0009765625f)), pair(0x7f800000u, f32(1.25f))});
  EXPECT_EQ(to8, (std::vector<uint64_t>{0x3cdf38feu, 0x607f7e7fu, 0x18140100u, 0x7b3d7e3au}));
  const auto from8 = runWords("cvt.u16.u64 %h1, %rd6;\n cvt.rn.f16x2.e4m3x2 %r1, %h1;\n cvt.rn.f16x2.e5m2x2 %r2, %h1;\n"
                              "mov.b64 %rd7, {%r1, %r2};",
                              {0x38fe, 0x3c7c});
  EXPECT_EQ(from8, (std::vector<uint64_t>{pair(0x3c00df00u, 0x38007fffu), pair(0x3e005e00u, 0x3c007c00u)}));
  EXPECT_EQ(runWords("cvt.u32.u64 %r1, %rd6;\n cvt.rn.satfinite.e4m3x2.f16x2 %h1, %r1;\n cvt.u64.u16 %rd7, %h1;",
                     {0x3c003e00u})[0],
            0x383cu);
  const auto back = runWords("cvt.u16.u64 %h1, %rd6;\n cvt.f32.f16 %f1, %h1;\n mov.b32 %r1, %f1;\n cvt.u64.u32 %rd7, %r1;", {0x3c00, 0x0001});
  EXPECT_EQ(back, (std::vector<uint64_t>{f32(1.0f), f32(5.9604644775390625e-8f)}));
  // add.f16 1 + 1 = 2; mul.f16x2 {2, 3} * {0.5, -1}; fma.rn.f16 1.5 * 2 + 0.25
  const auto ar = runWords(
      "mov.b16 %h1, 0x3c00;\n add.f16 %h2, %h1, %h1;\n"
      "mov.b32 %r1, 0x42004000;\n mov.b32 %r2, 0xbc003800;\n mul.f16x2 %r3, %r1, %r2;\n"
      "mov.b16 %h3, 0x3e00;\n mov.b16 %h4, 0x4000;\n mov.b16 %h5, 0x3400;\n fma.rn.f16 %h6, %h3, %h4, %h5;\n"
      "mov.b32 %r4, {%h2, %h6};\n mov.b64 %rd7, {%r3, %r4};",
      {0});
  EXPECT_EQ(ar[0], pair(0xc2003c00u, 0x4000 | (0x4280u << 16)));
}

}  // namespace
}  // namespace mcsim::ptx::test

namespace mcsim::ptx::test {
namespace {

float asFloat(uint64_t bits) {
  const uint32_t u = static_cast<uint32_t>(bits);
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

TEST(PtxFloat, ApproximateFunctionsWithinTheIsaError) {
  // PTX ISA bounds: rcp/sqrt/rsqrt.approx.f32 within 1-2 ulp, ex2.approx.f32 2 ulp (full range),
  // lg2.approx.f32 2^-22.6 absolute in [0.5, 2], sin/cos.approx.f32 2^-20.9 absolute in [-pi, pi].
  const auto out = runWords("cvt.u32.u64 %r1, %rd6;\n mov.b32 %f1, %r1;\n"
                            "rcp.approx.f32 %f2, %f1;\n ex2.approx.f32 %f3, %f1;\n"
                            "mov.b32 %r2, %f2;\n mov.b32 %r3, %f3;\n mov.b64 %rd7, {%r2, %r3};",
                            {f32(3.0f), f32(-1.5f), f32(10.25f)});
  const float xs[] = {3.0f, -1.5f, 10.25f};
  for (int i = 0; i < 3; ++i) {
    EXPECT_NEAR(asFloat(out[i]), 1.0f / xs[i], std::abs(1.0f / xs[i]) * 2.4e-7f) << i;
    EXPECT_NEAR(asFloat(out[i] >> 32), std::exp2(xs[i]), std::exp2(xs[i]) * 2.4e-7f) << i;
  }
  const auto trig = runWords("cvt.u32.u64 %r1, %rd6;\n mov.b32 %f1, %r1;\n sin.approx.f32 %f2, %f1;\n cos.approx.f32 %f3, %f1;\n"
                             "mov.b32 %r2, %f2;\n mov.b32 %r3, %f3;\n mov.b64 %rd7, {%r2, %r3};",
                             {f32(0.5f), f32(-2.0f)});
  EXPECT_NEAR(asFloat(trig[0]), std::sin(0.5), 5.1e-7);
  EXPECT_NEAR(asFloat(trig[0] >> 32), std::cos(0.5), 5.1e-7);
  EXPECT_NEAR(asFloat(trig[1]), std::sin(-2.0), 5.1e-7);
  const auto lg = runWords("cvt.u32.u64 %r1, %rd6;\n mov.b32 %f1, %r1;\n lg2.approx.f32 %f2, %f1;\n rsqrt.approx.f32 %f3, %f1;\n"
                           "mov.b32 %r2, %f2;\n mov.b32 %r3, %f3;\n mov.b64 %rd7, {%r2, %r3};",
                           {f32(1.5f)});
  EXPECT_NEAR(asFloat(lg[0]), std::log2(1.5), 1.6e-7);
  EXPECT_NEAR(asFloat(lg[0] >> 32), 1.0 / std::sqrt(1.5), 2.0 * 1.2e-7);
}

TEST(PtxFloat, CopysignTakesTheFirstOperandsSign) {
  // copysign.f32 d, a, b: b's magnitude with a's sign (PTX ISA).
  EXPECT_EQ(f32op("copysign.f32", {{0x80000000u, kTwo}, {0, 0xc0400000u}}), (std::vector<uint32_t>{0xc0000000u, kThree}));
  // neg and abs change the sign bit alone, NaN payloads included.
  const auto out = runWords("mov.b64 {%r1, %r2}, %rd6;\n mov.b32 %f1, %r1;\n neg.f32 %f2, %f1;\n abs.f32 %f3, %f1;\n"
                            "mov.b32 %r3, %f2;\n mov.b32 %r4, %f3;\n mov.b64 %rd7, {%r3, %r4};",
                            {pair(kOne, 0), pair(0xff800000u, 0), pair(0xffc00001u, 0)});
  EXPECT_EQ(out, (std::vector<uint64_t>{pair(0xbf800000u, kOne), pair(kInf, kInf), pair(0x7fc00001u, 0x7fc00001u)}));
}

}  // namespace
}  // namespace mcsim::ptx::test
