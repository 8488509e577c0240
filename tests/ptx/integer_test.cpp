// Integer and bit instructions against results worked out from the PTX ISA's definitions.
#include "tests/ptx/harness.h"

namespace mcsim::ptx::test {
namespace {

// Runs `op d, a, b` on 32-bit a and b (low and high halves of each input); returns d's.
std::vector<uint32_t> binary32(const std::string& op, const std::vector<std::pair<uint32_t, uint32_t>>& ab) {
  std::vector<uint64_t> in;
  for (auto [a, b] : ab) in.push_back(pair(a, b));
  const auto out = runWords("mov.b64 {%r1, %r2}, %rd6;\n" + op + " %r3, %r1, %r2;\ncvt.u64.u32 %rd7, %r3;", in);
  std::vector<uint32_t> r;
  for (uint64_t v : out) r.push_back(static_cast<uint32_t>(v));
  return r;
}

TEST(PtxInteger, AddSubWrapAndSaturate) {
  EXPECT_EQ(binary32("add.s32", {{0x7fffffff, 1}, {5, 0xfffffffd}}), (std::vector<uint32_t>{0x80000000u, 2}));
  EXPECT_EQ(binary32("add.sat.s32", {{0x7fffffff, 1}, {0x80000000u, 0xffffffffu}}), (std::vector<uint32_t>{0x7fffffff, 0x80000000u}));
  EXPECT_EQ(binary32("sub.u32", {{1, 2}}), (std::vector<uint32_t>{0xffffffffu}));
}

TEST(PtxInteger, MultiplyHalves) {
  EXPECT_EQ(binary32("mul.lo.s32", {{0x10000, 0x10001}, {0xffffffff, 3}}), (std::vector<uint32_t>{0x10000, 0xfffffffd}));
  // (-1) * 3 = -3: high word all ones signed, 2 unsigned (0xffffffff * 3 = 0x2_fffffffd).
  EXPECT_EQ(binary32("mul.hi.s32", {{0xffffffff, 3}}), (std::vector<uint32_t>{0xffffffff}));
  EXPECT_EQ(binary32("mul.hi.u32", {{0xffffffff, 3}}), (std::vector<uint32_t>{2}));
}

TEST(PtxInteger, WideMultiplyAndMad) {
  const auto out = runWords(
      "mov.b64 {%r1, %r2}, %rd6;\n"
      "mul.wide.s32 %rd8, %r1, %r2;\n"
      "mad.wide.u32 %rd9, %r1, %r2, %rd8;\n"
      "mad.lo.s32 %r3, %r1, %r2, 7;\n"
      "xor.b64 %rd7, %rd8, %rd9;\n"
      "cvt.u64.u32 %rd10, %r3;\n"
      "add.s64 %rd7, %rd7, %rd10;",
      {pair(0xfffffffe, 3)});
  const uint64_t sw = static_cast<uint64_t>(int64_t{-2} * 3);          // mul.wide.s32
  const uint64_t uw = uint64_t{0xfffffffe} * 3 + sw;                   // mad.wide.u32
  const uint64_t lo = static_cast<uint32_t>(0xfffffffeu * 3u + 7u);   // mad.lo
  EXPECT_EQ(out[0], (sw ^ uw) + lo);
}

TEST(PtxInteger, DivisionTruncatesTowardZero) {
  EXPECT_EQ(binary32("div.s32", {{static_cast<uint32_t>(-7), 2}, {7, static_cast<uint32_t>(-2)}, {0x80000000u, 0xffffffffu}}),
            (std::vector<uint32_t>{static_cast<uint32_t>(-3), static_cast<uint32_t>(-3), 0x80000000u}));
  EXPECT_EQ(binary32("rem.s32", {{static_cast<uint32_t>(-7), 2}, {7, static_cast<uint32_t>(-2)}}),
            (std::vector<uint32_t>{static_cast<uint32_t>(-1), 1}));
  EXPECT_EQ(binary32("div.u32", {{0xffffffffu, 2}, {5, 0}}), (std::vector<uint32_t>{0x7fffffff, 0xffffffffu}));
  EXPECT_EQ(binary32("rem.u32", {{10, 3}}), (std::vector<uint32_t>{1}));
}

TEST(PtxInteger, MinMaxSignedness) {
  EXPECT_EQ(binary32("min.s32", {{0xffffffffu, 1}}), (std::vector<uint32_t>{0xffffffffu}));
  EXPECT_EQ(binary32("min.u32", {{0xffffffffu, 1}}), (std::vector<uint32_t>{1}));
  EXPECT_EQ(binary32("max.s32", {{0xffffffffu, 1}}), (std::vector<uint32_t>{1}));
}

TEST(PtxInteger, LogicAndShifts) {
  EXPECT_EQ(binary32("and.b32", {{0xf0f0, 0xff00}}), (std::vector<uint32_t>{0xf000}));
  EXPECT_EQ(binary32("or.b32", {{0xf0f0, 0xff00}}), (std::vector<uint32_t>{0xfff0}));
  EXPECT_EQ(binary32("xor.b32", {{0xf0f0, 0xff00}}), (std::vector<uint32_t>{0x0ff0}));
  // Shift amounts past the width shift everything out (shr.s fills with the sign).
  EXPECT_EQ(binary32("shl.b32", {{1, 31}, {1, 32}, {1, 100}}), (std::vector<uint32_t>{0x80000000u, 0, 0}));
  EXPECT_EQ(binary32("shr.u32", {{0x80000000u, 31}, {0x80000000u, 40}}), (std::vector<uint32_t>{1, 0}));
  EXPECT_EQ(binary32("shr.s32", {{0x80000000u, 4}, {0x80000000u, 40}}), (std::vector<uint32_t>{0xf8000000u, 0xffffffffu}));
}

TEST(PtxInteger, UnaryBitOperations) {
  const auto out = runWords(
      "cvt.u32.u64 %r1, %rd6;\n"
      "popc.b32 %r2, %r1;\n"
      "clz.b32 %r3, %r1;\n"
      "brev.b32 %r4, %r1;\n"
      "not.b32 %r5, %r1;\n"
      "neg.s32 %r6, %r1;\n"
      "abs.s32 %r7, %r1;\n"
      "bfind.u32 %r8, %r1;\n"
      // pack: popc | clz << 8 | (brev & 0xff) << 16 ... check each separately in 64 bits
      "cvt.u64.u32 %rd8, %r2;\n cvt.u64.u32 %rd9, %r3;\n shl.b64 %rd9, %rd9, 8;\n or.b64 %rd7, %rd8, %rd9;\n"
      "cvt.u64.u32 %rd8, %r8;\n and.b64 %rd8, %rd8, 255;\n shl.b64 %rd8, %rd8, 16;\n or.b64 %rd7, %rd7, %rd8;\n"
      "cvt.u64.u32 %rd8, %r4;\n shl.b64 %rd8, %rd8, 32;\n or.b64 %rd7, %rd7, %rd8;\n",
      {0x00000006, 0, 0x80000001u});
  // 6: popc 2, clz 29, bfind 2, brev 0x60000000
  EXPECT_EQ(out[0], 2 | (29u << 8) | (2u << 16) | (uint64_t{0x60000000} << 32));
  // 0: popc 0, clz 32, bfind 0xffffffff (low byte 0xff), brev 0
  EXPECT_EQ(out[1], 0 | (32u << 8) | (0xffu << 16));
  // 0x80000001: popc 2, clz 0, bfind 31, brev 0x80000001
  EXPECT_EQ(out[2], 2 | (0u << 8) | (31u << 16) | (uint64_t{0x80000001u} << 32));
  // bfind.shiftamt: the left shift that brings the found bit to the top (PTX ISA, bfind): 31 - 2
  // for 6, none for 0, 0 for 0x80000001; .s32 looks for the first bit unlike the sign: for -6
  // (...11111010) bit 2, for -1 none.
  const auto shiftamt = runWords("cvt.u32.u64 %r1, %rd6;\n bfind.shiftamt.u32 %r2, %r1;\n bfind.shiftamt.s32 %r3, %r1;\n"
                                 "mov.b64 %rd7, {%r2, %r3};",
                                 {6, 0, 0x80000001u, static_cast<uint32_t>(-6), 0xffffffffu});
  EXPECT_EQ(shiftamt[0], pair(29, 29));
  EXPECT_EQ(shiftamt[1], pair(0xffffffffu, 0xffffffffu));
  EXPECT_EQ(shiftamt[2], pair(0, 1));  // .s32 of 0x80000001: bit 30 is the first unlike the sign
  EXPECT_EQ(shiftamt[3], pair(0, 29));
  EXPECT_EQ(shiftamt[4], pair(0, 0xffffffffu));
  const auto negabs = runWords("cvt.u32.u64 %r1, %rd6;\n neg.s32 %r2, %r1;\n abs.s32 %r3, %r1;\n not.b32 %r4, %r1;\n"
                               "mov.b64 %rd7, {%r2, %r3};\n xor.b64 %rd7, %rd7, 0;",
                               {5, static_cast<uint32_t>(-9)});
  EXPECT_EQ(negabs[0], pair(static_cast<uint32_t>(-5), 5));
  EXPECT_EQ(negabs[1], pair(9, 9));
}

TEST(PtxInteger, BitFieldExtractInsertAndPermute) {
  // bfe.u32 of 0xabcd1234 at 8, 12 bits: 0xd12; bfe.s32 at 12, 8 bits: 0xd1 -> sign-extended.
  EXPECT_EQ(runWords("cvt.u32.u64 %r1, %rd6;\n bfe.u32 %r2, %r1, 8, 12;\n bfe.s32 %r3, %r1, 12, 8;\n mov.b64 %rd7, {%r2, %r3};",
                     {0xabcd1234u})[0],
            pair(0xd12, 0xffffffd1u));
  // bfi: 0x5 (3 bits) into 0xffffffff at 4 -> 0xffffffdf
  EXPECT_EQ(runWords("cvt.u32.u64 %r1, %rd6;\n bfi.b32 %r2, 5, %r1, 4, 3;\n cvt.u64.u32 %rd7, %r2;", {0xffffffffu})[0], 0xffffffdfu);
  // prmt: bytes of {b, a} = 0x77665544_33221100; selector 0x0123 reverses a; 0x8 replicates sign.
  const auto out = runWords("mov.b64 {%r1, %r2}, %rd6;\n prmt.b32 %r3, %r1, %r2, 0x0123;\n prmt.b32 %r4, %r1, %r2, 0x4444;\n"
                            "prmt.b32 %r5, %r1, %r2, 0x000e;\n mov.b64 %rd7, {%r3, %r4};\n cvt.u64.u32 %rd8, %r5;\n"
                            "add.s64 %rd7, %rd7, %rd8;",
                            {pair(0x33221100u, 0x778655a4u)});
  // 0x0123 -> bytes a[3],a[2],a[1],a[0] from high to low... selector nibble i picks result byte i:
  // byte0 = sel 3 = 0x33, byte1 = sel 2 = 0x22, byte2 = sel 1 = 0x11, byte3 = sel 0 = 0x00.
  // 0x4444 -> 0xa4 in all four bytes; 0x000e -> byte0 = the sign of byte 6 (0x86) replicated,
  // the others byte 0 (0x00).
  EXPECT_EQ(out[0], pair(0x00112233u, 0xa4a4a4a4u) + 0xffu);
}

TEST(PtxInteger, ConversionsBetweenWidths) {
  const auto out = runWords(
      "cvt.u32.u64 %r1, %rd6;\n"
      "cvt.s64.s32 %rd8, %r1;\n"          // sign-extends
      "xor.b64 %rd7, %rd8, 0;\n",
      {0xfffffff0u, 0x1ff});
  EXPECT_EQ(out[0], 0xfffffffffffffff0ull);
  EXPECT_EQ(out[1], 0x1ffull);
  const auto narrow = runWords(
      "cvt.u32.u64 %r1, %rd6;\n cvt.u8.u32 %r2, %r1;\n cvt.sat.s8.s32 %r3, %r1;\n mov.b64 %rd7, {%r2, %r3};", {0x1ff, 0xfffffff0u, 0x80000000u});
  EXPECT_EQ(narrow[0], pair(0xff, 127));
  EXPECT_EQ(narrow[1], pair(0xf0, 0xfffffff0u));
  EXPECT_EQ(narrow[2], pair(0x00, 0xffffff80u));
}

TEST(PtxInteger, CompareAndSelect) {
  const auto out = runWords(
      "mov.b64 {%r1, %r2}, %rd6;\n"
      "setp.lt.s32 %p1, %r1, %r2;\n"
      "setp.lo.u32 %p2|%p3, %r1, %r2;\n"
      "setp.ne.and.s32 %p4, %r1, 0, %p1;\n"
      "selp.b32 %r3, 1, 0, %p1;\n selp.b32 %r4, 2, 0, %p2;\n selp.b32 %r5, 4, 0, %p3;\n selp.b32 %r6, 8, 0, %p4;\n"
      "slct.s32.s32 %r7, 16, 0, %r1;\n"
      "add.s32 %r3, %r3, %r4;\n add.s32 %r3, %r3, %r5;\n add.s32 %r3, %r3, %r6;\n add.s32 %r3, %r3, %r7;\n"
      "cvt.u64.u32 %rd7, %r3;",
      {pair(0xffffffffu, 1), pair(1, 2), pair(3, 3)});
  // -1 < 1 signed (1), not unsigned (q: 4); ne&&lt (8); slct: -1 < 0 -> 0
  EXPECT_EQ(out[0], 1u + 4u + 8u);
  // 1 < 2 both (1 + 2); 8; slct 16
  EXPECT_EQ(out[1], 1u + 2u + 8u + 16u);
  // 3 == 3: q only (4); slct 16
  EXPECT_EQ(out[2], 4u + 16u);
}

}  // namespace
}  // namespace mcsim::ptx::test

namespace mcsim::ptx::test {
namespace {

TEST(PtxInteger, SetpMayCombineWithItsOwnDestination) {
  // p = (a != 0) and p: the destination is also the predicate operand.
  const auto out = runWords("cvt.u32.u64 %r1, %rd6;\n setp.lt.u32 %p1, %r1, 3;\n setp.ne.and.u32 %p1|%p2, %r1, 0, %p1;\n"
                            "selp.b32 %r2, 1, 0, %p1;\n selp.b32 %r3, 1, 0, %p2;\n mov.b64 %rd7, {%r2, %r3};",
                            std::vector<uint64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21,
                                                  22, 23, 24, 25, 26, 27, 28, 29, 30, 31});
  for (uint64_t i = 0; i < 32; ++i) EXPECT_EQ(out[i], pair(i != 0 && i < 3, i == 0 && i < 3)) << i;
}

}  // namespace
}  // namespace mcsim::ptx::test

namespace mcsim::ptx::test {
namespace {

TEST(PtxInteger, ThreeInputLogicAndFunnelShifts) {
  const uint32_t a = 0xf0f0ff00u, b = 0xcccc0ff0u, c = 0xaaaa3c3cu;
  const auto out = runWords(
      "mov.b64 {%r1, %r2}, %rd6;\n mov.u32 %r3, " + std::to_string(c) + ";\n"
      "lop3.b32 %r4, %r1, %r2, %r3, 0x96;\n lop3.b32 %r5, %r1, %r2, %r3, 0xe8;\n lop3.b32 %r6, %r1, %r2, %r3, 0xca;\n"
      "xor.b32 %r7, %r4, %r5;\n mov.b64 %rd7, {%r6, %r7};",
      {pair(a, b)});
  EXPECT_EQ(out[0], pair((a & b) | (~a & c), (a ^ b ^ c) ^ ((a & b) | (a & c) | (b & c))));
  const auto sh = runWords(
      "mov.b64 {%r1, %r2}, %rd6;\n shf.l.wrap.b32 %r3, %r1, %r1, 36;\n shf.r.clamp.b32 %r4, %r1, %r2, 40;\n"
      "shf.r.wrap.b32 %r5, %r1, %r2, 8;\n xor.b32 %r4, %r4, %r5;\n mov.b64 %rd7, {%r3, %r4};",
      {pair(0x80000001u, 0x12345678u)});
  // rotl(0x80000001, 4) = 0x18; clamp at 32 gives b; wrap 8 gives b's low byte over a's top.
  EXPECT_EQ(sh[0], pair(0x18, 0x12345678u ^ 0x78800000u));
}

}  // namespace
}  // namespace mcsim::ptx::test
