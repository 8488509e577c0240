// multimem.ld_reduce / .st / .red (PTX ISA 9.7.9.14) on FlatMemory's multicast ranges: every
// form the executor implements, with expected values worked out from the ISA's definitions
// (ld_reduce combines the members' values in ascending device ordinal, st writes every member,
// red combines its operand into every member), the faults of bad use, and the forms refused at load.
#include <cmath>
#include <cstring>

#include "model/half_float.h"

#include "tests/ptx/harness.h"

namespace mcsim::ptx::test {
namespace {

// A kernel in which thread i runs `body` with %rd1 = mc + i * stride and %rd2 = out + i * stride.
std::string mmKernel(const std::string& body, unsigned stride) {
  return R"(
.version 8.1
.target sm_90
.address_size 64
.visible .entry k(.param .u64 pmc, .param .u64 pout)
{
  .reg .b32 %r<16>;
  .reg .b64 %rd<16>;
  .reg .f32 %f<16>;
  .reg .f64 %fd<4>;
  .reg .b16 %h<16>;
  .reg .pred %p<4>;
  ld.param.u64 %rd3, [pmc];
  ld.param.u64 %rd4, [pout];
  mov.u32 %r0, %tid.x;
  mul.wide.u32 %rd5, %r0, )" + std::to_string(stride) + R"(;
  add.s64 %rd1, %rd3, %rd5;
  add.s64 %rd2, %rd4, %rd5;
)" + body + R"(
  ret;
}
)";
}

// `members` buffers of `bytes` each, member i holding init[i], and a multicast range over them.
struct Team {
  Program* p;
  std::vector<uint64_t> members;
  uint64_t mc = 0;
  template <typename T>
  Team(Program& prog, const std::vector<std::vector<T>>& init) : p(&prog) {
    for (const auto& v : init) members.push_back(prog.buffer(v));
    mc = prog.memory().allocateMulticast(members, init[0].size() * sizeof(T));
  }
  template <typename T>
  std::vector<T> member(size_t i, size_t n) { return p->read<T>(members[i], n); }
};

template <typename T>
std::vector<T> ldReduce(const std::string& body, unsigned stride, const std::vector<std::vector<T>>& init, unsigned threads) {
  Program p(mmKernel(body, stride));
  EXPECT_TRUE(p.ok()) << p.error();
  if (!p.ok()) return {};
  Team t(p, init);
  const uint64_t out = p.buffer(init[0].size() * sizeof(T));
  const LaunchResult r = p.launch("k", {}, {threads, 1, 1}, {t.mc, out});
  EXPECT_EQ(r.fault, Fault::kNone) << r.message;
  return p.read<T>(out, init[0].size());
}

float fl(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

TEST(PtxMultimem, LdReduceAddF32CombinesMembersInAscendingOrdinal) {
  // ((1e8 + 1) + -1e8) + 1 = 1 in f32 (1e8 + 1 rounds to 1e8); any other order gives 0 or 2.
  const std::vector<std::vector<float>> init = {{1e8f, 1.5f}, {1.0f, 2.25f}, {-1e8f, -0.5f}, {1.0f, 4.0f}};
  const auto out = ldReduce<float>(
      "  multimem.ld_reduce.relaxed.sys.global.add.f32 %f1, [%rd1];\n  st.global.f32 [%rd2], %f1;\n", 4, init, 2);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0], 1.0f);
  EXPECT_EQ(out[1], 7.25f);
}

TEST(PtxMultimem, LdReduceVectorF32) {
  std::vector<std::vector<float>> init(3, std::vector<float>(8));
  for (int m = 0; m < 3; ++m)
    for (int i = 0; i < 8; ++i) init[m][i] = static_cast<float>((m + 1) * 10 + i);
  const auto out = ldReduce<float>(R"(
  multimem.ld_reduce.relaxed.sys.global.add.v4.f32 {%f1, %f2, %f3, %f4}, [%rd1];
  st.global.v4.f32 [%rd2], {%f1, %f2, %f3, %f4};
)", 16, init, 2);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(out[i], 60.0f + 3 * i) << i;
  const auto v2 = ldReduce<float>(R"(
  multimem.ld_reduce.weak.global.add.v2.f32 {%f1, %f2}, [%rd1];
  st.global.v2.f32 [%rd2], {%f1, %f2};
)", 8, init, 4);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(v2[i], 60.0f + 3 * i) << i;
}

TEST(PtxMultimem, LdReduceF16x2RoundsEachStepToF16) {
  // f16: 2048 = 0x6800, 1 = 0x3c00. 2048 + 1 ties to even (2048) at each step: 2048 + 1 + 1 =
  // 2048 in f16 arithmetic; with .acc::f32 the sum is 2050 (0x6801), rounded once at the end.
  const uint32_t w0 = 0x6800u | (0x3c00u << 16), w1 = 0x3c00u | (0x3c00u << 16);
  const std::vector<std::vector<uint32_t>> init = {{w0}, {w1}, {w1}};
  const auto plain = ldReduce<uint32_t>(
      "  multimem.ld_reduce.relaxed.sys.global.add.f16x2 %r1, [%rd1];\n  st.global.b32 [%rd2], %r1;\n", 4, init, 1);
  EXPECT_EQ(plain[0], 0x6800u | (0x4200u << 16));  // 2048 | 3.0
  const auto acc = ldReduce<uint32_t>(
      "  multimem.ld_reduce.relaxed.sys.global.add.acc::f32.f16x2 %r1, [%rd1];\n  st.global.b32 [%rd2], %r1;\n", 4, init, 1);
  EXPECT_EQ(acc[0], 0x6801u | (0x4200u << 16));  // 2050 | 3.0
}

TEST(PtxMultimem, LdReduceBf16x2AndAccF32) {
  // bf16: 256 = 0x4380, 1 = 0x3f80; 256 + 1 ties to even (256); 258 = 0x4381.
  const uint32_t w0 = 0x4380u | (0x3f80u << 16), w1 = 0x3f80u | (0x3f80u << 16);
  const std::vector<std::vector<uint32_t>> init = {{w0, w1}, {w1, w1}, {w1, w1}};
  const auto plain = ldReduce<uint32_t>(R"(
  multimem.ld_reduce.acquire.gpu.global.add.v2.bf16x2 {%r1, %r2}, [%rd1];
  st.global.v2.b32 [%rd2], {%r1, %r2};
)", 8, init, 1);
  EXPECT_EQ(plain[0], 0x4380u | (0x4040u << 16));  // 256 | 3.0
  EXPECT_EQ(plain[1], 0x4040u | (0x4040u << 16));
  const auto acc = ldReduce<uint32_t>(R"(
  multimem.ld_reduce.add.acc::f32.v2.bf16x2 {%r1, %r2}, [%rd1];
  st.global.v2.b32 [%rd2], {%r1, %r2};
)", 8, init, 1);
  EXPECT_EQ(acc[0], 0x4381u | (0x4040u << 16));
}

TEST(PtxMultimem, LdReduceV8F16MinMax) {
  // Eight f16 values in b16 registers: min and max per element across two members.
  std::vector<std::vector<uint16_t>> init = {{0x3c00, 0x4000, 0xbc00, 0x7c00, 0x0001, 0x8000, 0x4200, 0x7fff},
                                             {0x4000, 0x3c00, 0xc000, 0x3c00, 0x0000, 0x0000, 0xfc00, 0x3c00}};
  const std::string store = "  st.global.v4.b16 [%rd2], {%h1, %h2, %h3, %h4};\n  st.global.v4.b16 [%rd2+8], {%h5, %h6, %h7, %h8};\n";
  const auto mn = ldReduce<uint16_t>(
      "  multimem.ld_reduce.relaxed.sys.global.min.v8.f16 {%h1, %h2, %h3, %h4, %h5, %h6, %h7, %h8}, [%rd1];\n" + store, 16, init, 1);
  // min(-0, +0) = -0; a NaN operand gives the other.
  const std::vector<uint16_t> wantMin = {0x3c00, 0x3c00, 0xc000, 0x3c00, 0x0000, 0x8000, 0xfc00, 0x3c00};
  EXPECT_EQ(mn, wantMin);
  const auto mx = ldReduce<uint16_t>(
      "  multimem.ld_reduce.relaxed.sys.global.max.v8.f16 {%h1, %h2, %h3, %h4, %h5, %h6, %h7, %h8}, [%rd1];\n" + store, 16, init, 1);
  const std::vector<uint16_t> wantMax = {0x4000, 0x4000, 0xbc00, 0x7c00, 0x0001, 0x0000, 0x4200, 0x3c00};
  EXPECT_EQ(mx, wantMax);
}

TEST(PtxMultimem, LdReduceIntegers) {
  const std::vector<std::vector<uint32_t>> i32 = {{5, 0xfffffff0u}, {7, 3}, {0xffffffffu, 0x10}};
  const std::string st32 = "  st.global.b32 [%rd2], %r1;\n";
  EXPECT_EQ(ldReduce<uint32_t>("  multimem.ld_reduce.add.u32 %r1, [%rd1];\n" + st32, 4, i32, 2),
            (std::vector<uint32_t>{11, 0x3}));
  EXPECT_EQ(ldReduce<uint32_t>("  multimem.ld_reduce.min.s32 %r1, [%rd1];\n" + st32, 4, i32, 2),
            (std::vector<uint32_t>{0xffffffffu, 0xfffffff0u}));
  EXPECT_EQ(ldReduce<uint32_t>("  multimem.ld_reduce.max.u32 %r1, [%rd1];\n" + st32, 4, i32, 2),
            (std::vector<uint32_t>{0xffffffffu, 0xfffffff0u}));
  EXPECT_EQ(ldReduce<uint32_t>("  multimem.ld_reduce.and.b32 %r1, [%rd1];\n" + st32, 4, i32, 2),
            (std::vector<uint32_t>{5 & 7, 0}));
  EXPECT_EQ(ldReduce<uint32_t>("  multimem.ld_reduce.or.b32 %r1, [%rd1];\n" + st32, 4, i32, 2),
            (std::vector<uint32_t>{0xffffffffu, 0xfffffff3u}));
  EXPECT_EQ(ldReduce<uint32_t>("  multimem.ld_reduce.xor.b32 %r1, [%rd1];\n" + st32, 4, i32, 2),
            (std::vector<uint32_t>{5u ^ 7u ^ 0xffffffffu, 0xfffffff0u ^ 3u ^ 0x10u}));
  const std::vector<std::vector<uint64_t>> i64 = {{1ull << 40, 0x8000000000000000ull}, {3, 5}};
  const std::string st64 = "  st.global.b64 [%rd2], %rd6;\n";
  EXPECT_EQ(ldReduce<uint64_t>("  multimem.ld_reduce.add.u64 %rd6, [%rd1];\n" + st64, 8, i64, 2),
            (std::vector<uint64_t>{(1ull << 40) + 3, 0x8000000000000005ull}));
  EXPECT_EQ(ldReduce<uint64_t>("  multimem.ld_reduce.min.s64 %rd6, [%rd1];\n" + st64, 8, i64, 2),
            (std::vector<uint64_t>{3, 0x8000000000000000ull}));
  EXPECT_EQ(ldReduce<uint64_t>("  multimem.ld_reduce.max.u64 %rd6, [%rd1];\n" + st64, 8, i64, 2),
            (std::vector<uint64_t>{1ull << 40, 0x8000000000000000ull}));
  EXPECT_EQ(ldReduce<uint64_t>("  multimem.ld_reduce.xor.b64 %rd6, [%rd1];\n" + st64, 8, i64, 2),
            (std::vector<uint64_t>{(1ull << 40) ^ 3, 0x8000000000000005ull}));
}

TEST(PtxMultimem, LdReduceF64Add) {
  const std::vector<std::vector<double>> init = {{1e16}, {1.0}, {-1e16}, {1.0}};
  const auto out = ldReduce<double>(
      "  multimem.ld_reduce.relaxed.sys.global.add.f64 %fd1, [%rd1];\n  st.global.f64 [%rd2], %fd1;\n", 8, init, 1);
  EXPECT_EQ(out[0], 1.0);
}

TEST(PtxMultimem, StoreWritesEveryMember) {
  Program p(mmKernel(R"(
  cvt.rn.f32.u32 %f1, %r0;
  add.f32 %f2, %f1, 0f3F000000;
  multimem.st.relaxed.sys.global.v4.f32 [%rd1], {%f1, %f2, %f1, %f2};
  mul.wide.u32 %rd6, %r0, 8;
  add.s64 %rd7, %rd3, %rd6;
  add.s64 %rd7, %rd7, 64;
  cvt.u64.u32 %rd8, %r0;
  multimem.st.release.gpu.b64 [%rd7], %rd8;
)", 16));
  ASSERT_TRUE(p.ok()) << p.error();
  Team t(p, std::vector<std::vector<uint8_t>>(4, std::vector<uint8_t>(128, 0xee)));
  const LaunchResult r = p.launch("k", {}, {4, 1, 1}, {t.mc, p.buffer(64)});
  ASSERT_EQ(r.fault, Fault::kNone) << r.message;
  for (size_t m = 0; m < 4; ++m) {
    const auto f = t.member<float>(m, 16);
    for (int i = 0; i < 4; ++i) {
      EXPECT_EQ(f[i * 4 + 0], static_cast<float>(i));
      EXPECT_EQ(f[i * 4 + 1], i + 0.5f);
    }
    const auto w = t.member<uint64_t>(m, 12);
    for (int i = 0; i < 4; ++i) EXPECT_EQ(w[8 + i], static_cast<uint64_t>(i));
  }
}

TEST(PtxMultimem, ReduceUpdatesEveryMemberLaneByLane) {
  // 32 lanes add to one word of every member (the barrier form NCCL and PyTorch use), and each
  // lane adds its f32 value to its own element.
  Program p(mmKernel(R"(
  multimem.red.release.sys.global.add.u32 [%rd3], 1;
  cvt.rn.f32.u32 %f1, %r0;
  add.s64 %rd6, %rd1, 16;
  multimem.red.relaxed.sys.global.add.f32 [%rd6], %f1;
  mov.b32 %r2, 0x3c003c00;
  add.s64 %rd7, %rd1, 144;
  multimem.red.add.f16x2 [%rd7], %r2;
)", 4));
  ASSERT_TRUE(p.ok()) << p.error();
  std::vector<std::vector<uint32_t>> init(3, std::vector<uint32_t>(80, 0));
  init[1][0] = 100;
  for (int i = 0; i < 32; ++i) init[2][4 + i] = 0x3f800000u;  // member 2 starts at 1.0
  Team t(p, init);
  const LaunchResult r = p.launch("k", {}, {32, 1, 1}, {t.mc, p.buffer(4)});
  ASSERT_EQ(r.fault, Fault::kNone) << r.message;
  EXPECT_EQ(t.member<uint32_t>(0, 1)[0], 32u);
  EXPECT_EQ(t.member<uint32_t>(1, 1)[0], 132u);
  for (int i = 0; i < 32; ++i) {
    EXPECT_EQ(fl(t.member<uint32_t>(0, 80)[4 + i]), static_cast<float>(i));
    EXPECT_EQ(fl(t.member<uint32_t>(2, 80)[4 + i]), static_cast<float>(i) + 1);
    EXPECT_EQ(t.member<uint32_t>(1, 80)[36 + i], 0x3c003c00u);  // 0 + 1.0 in both halves
  }
}

TEST(PtxMultimem, TwoRunsGiveIdenticalBytes) {
  const std::string body = R"(
  multimem.ld_reduce.add.v4.f32 {%f1, %f2, %f3, %f4}, [%rd1];
  st.global.v4.f32 [%rd2], {%f1, %f2, %f3, %f4};
  multimem.red.add.v4.f32 [%rd1], {%f1, %f2, %f3, %f4};
)";
  std::vector<std::vector<float>> init(8, std::vector<float>(256));
  for (int m = 0; m < 8; ++m)
    for (int i = 0; i < 256; ++i) init[m][i] = 1.0f / static_cast<float>(1 + (m * 37 + i * 11) % 97);
  std::vector<std::vector<uint8_t>> runs;
  for (int run = 0; run < 2; ++run) {
    Program p(mmKernel(body, 16));
    ASSERT_TRUE(p.ok()) << p.error();
    Team t(p, init);
    const uint64_t out = p.buffer(1024);
    const LaunchResult r = p.launch("k", {}, {64, 1, 1}, {t.mc, out});
    ASSERT_EQ(r.fault, Fault::kNone) << r.message;
    std::vector<uint8_t> bytes = p.read<uint8_t>(out, 1024);
    for (int m = 0; m < 8; ++m) {
      const auto b = t.member<uint8_t>(static_cast<size_t>(m), 1024);
      bytes.insert(bytes.end(), b.begin(), b.end());
    }
    runs.push_back(bytes);
  }
  EXPECT_EQ(runs[0], runs[1]);
}

// ---- bad use

LaunchResult runBad(const std::string& body, bool bindAll, std::string* message) {
  Program p(mmKernel(body, 4));
  EXPECT_TRUE(p.ok()) << p.error();
  const uint64_t a = p.buffer(64), b = p.buffer(64);
  const uint64_t mc = p.memory().allocateMulticast({a, bindAll ? b : 0}, 64);
  const LaunchResult r = p.launch("k", {}, {1, 1, 1}, {mc, a});
  *message = r.message;
  return r;
}

TEST(PtxMultimem, MultimemOnPlainMemoryIsAnIllegalAddress) {
  std::string m;
  // %rd2 is a plain buffer.
  EXPECT_EQ(runBad("  multimem.ld_reduce.add.u32 %r1, [%rd2];\n", true, &m).fault, Fault::kIllegalAddress);
  EXPECT_NE(m.find("not a multicast address"), std::string::npos) << m;
  EXPECT_NE(m.find("multimem.ld_reduce.add.u32"), std::string::npos) << m;
  EXPECT_EQ(runBad("  multimem.st.b32 [%rd2], 1;\n", true, &m).fault, Fault::kIllegalAddress);
  EXPECT_EQ(runBad("  multimem.ld_reduce.add.u32 %r1, [0x10];\n", true, &m).fault, Fault::kIllegalAddress);
  EXPECT_NE(m.find("unmapped"), std::string::npos) << m;
}

TEST(PtxMultimem, PlainLoadsAndAtomicsAtAMulticastAddressAreIllegalAddresses) {
  // A plain store there is multimem.st's (below); nothing says what a plain load or an atomic
  // does, so they stay faults.
  for (const char* body : {"  ld.global.u32 %r1, [%rd1];\n", "  ld.volatile.u64 %rd6, [%rd1];\n",
                           "  ld.relaxed.sys.global.u64 %rd6, [%rd1];\n", "  atom.global.add.u32 %r1, [%rd1], 1;\n",
                           "  red.release.sys.global.add.u32 [%rd1], 1;\n", "  atom.cas.b32 %r1, [%rd1], 0, 1;\n"}) {
    std::string m;
    EXPECT_EQ(runBad(body, true, &m).fault, Fault::kIllegalAddress) << body;
    EXPECT_NE(m.find("a multicast address, which only multimem instructions and plain stores may access"), std::string::npos) << m;
  }
}

// A plain st to a multicast address writes every member, as multimem.st: NCCL's NVLS kernels post
// their step counters so (st.relaxed.sys.global.u64 and a generic st.u64 to a multicast head or
// tail; st.b8 / st.b16 for a copy's odd bytes), and on the hardware the two are one instruction
// (NVIDIA/nccl#1230; docs/ptx.md, "Multimem").
TEST(PtxMultimem, PlainStoreToAMulticastAddressWritesEveryMember) {
  Program p(mmKernel(R"(
  setp.ne.u32 %p1, %r0, 0;
  @%p1 bra DONE;
  st.relaxed.sys.global.u64 [%rd3], 0x1122334455667788;
  st.u64 [%rd3+8], 42;
  mov.u16 %h1, 0xabcd;
  st.global.b16 [%rd3+16], %h1;
  st.global.b8 [%rd3+19], 0x7e;
  mov.u32 %r1, 7;
  mov.u32 %r2, 8;
  st.volatile.global.v4.u32 [%rd3+32], {%r1, %r2, %r1, %r2};
DONE:
)", 4));
  ASSERT_TRUE(p.ok()) << p.error();
  Team t(p, std::vector<std::vector<uint8_t>>(3, std::vector<uint8_t>(64, 0xee)));
  const LaunchResult r = p.launch("k", {}, {32, 1, 1}, {t.mc, p.buffer(4)});
  ASSERT_EQ(r.fault, Fault::kNone) << r.message;
  for (size_t m = 0; m < 3; ++m) {
    const auto w = t.member<uint64_t>(m, 2);
    EXPECT_EQ(w[0], 0x1122334455667788ull);
    EXPECT_EQ(w[1], 42u);
    const auto b = t.member<uint8_t>(m, 48);
    EXPECT_EQ(b[16], 0xcd);
    EXPECT_EQ(b[17], 0xab);
    EXPECT_EQ(b[18], 0xee);  // untouched
    EXPECT_EQ(b[19], 0x7e);
    const auto v = t.member<uint32_t>(m, 12);
    EXPECT_EQ(v[8], 7u);
    EXPECT_EQ(v[9], 8u);
    EXPECT_EQ(v[10], 7u);
    EXPECT_EQ(v[11], 8u);
  }
}

// NCCL's credit: one warp spins with plain loads on its own member's word (a unicast address)
// until another warp's plain store through the multicast address reaches it.
TEST(PtxMultimem, APlainStoreThroughTheMulticastAddressReleasesAWarpSpinningOnAMember) {
  Program p(mmKernel(R"(
  setp.ge.u32 %p1, %r0, 32;
  @%p1 bra WRITER;
SPIN:
  ld.volatile.global.u64 %rd6, [%rd4];
  setp.ne.u64 %p2, %rd6, 5;
  @%p2 bra SPIN;
  add.s64 %rd7, %rd4, 8;
  st.global.u64 [%rd7], %rd6;
  bra DONE;
WRITER:
  st.relaxed.sys.global.u64 [%rd3], 5;
DONE:
)", 0));
  ASSERT_TRUE(p.ok()) << p.error();
  Team t(p, std::vector<std::vector<uint64_t>>(2, std::vector<uint64_t>(2, 0)));
  // The kernel's second parameter is member 1's own (unicast) memory.
  const LaunchResult r = p.launch("k", {}, {64, 1, 1}, {t.mc, t.members[1]});
  ASSERT_EQ(r.fault, Fault::kNone) << r.message;
  EXPECT_EQ(t.member<uint64_t>(0, 2)[0], 5u);
  EXPECT_EQ(t.member<uint64_t>(1, 2)[1], 5u);
}

TEST(PtxMultimem, PlainStoreFaultsAsMultimemStWould) {
  std::string m;
  EXPECT_EQ(runBad("  st.u32 [%rd1], 1;\n", false, &m).fault, Fault::kIllegalAddress);
  EXPECT_NE(m.find("(global, 4 bytes: a multicast address some member device has no memory bound at)"), std::string::npos) << m;
  EXPECT_EQ(runBad("  add.s64 %rd6, %rd1, 4;\n  st.global.u64 [%rd6], 1;\n", true, &m).fault, Fault::kMisalignedAddress);
  EXPECT_EQ(runBad("  add.s64 %rd6, %rd1, 60;\n  st.global.v2.u32 [%rd6], {%r1, %r1};\n", true, &m).fault,
            Fault::kMisalignedAddress);
  EXPECT_EQ(runBad("  add.s64 %rd6, %rd1, 56;\n  st.global.v4.u32 [%rd6], {%r1, %r1, %r1, %r1};\n", true, &m).fault,
            Fault::kMisalignedAddress);
}

TEST(PtxMultimem, AMemberWithoutBoundMemoryIsAnIllegalAddress) {
  std::string m;
  EXPECT_EQ(runBad("  multimem.red.add.u32 [%rd1], 1;\n", false, &m).fault, Fault::kIllegalAddress);
  EXPECT_NE(m.find("no memory bound"), std::string::npos) << m;
}

TEST(PtxMultimem, MisalignedAndSharedAddressesFault) {
  std::string m;
  EXPECT_EQ(runBad("  add.s64 %rd6, %rd1, 4;\n  multimem.ld_reduce.add.v4.f32 {%f1, %f2, %f3, %f4}, [%rd6];\n", true, &m).fault,
            Fault::kMisalignedAddress);
  EXPECT_NE(m.find("16-byte"), std::string::npos) << m;
  EXPECT_EQ(runBad("  add.s64 %rd6, %rd1, 256;\n  multimem.st.b32 [%rd6], 1;\n", true, &m).fault, Fault::kIllegalAddress);
  EXPECT_EQ(runBad("  mov.u64 %rd6, 0xfe00000000000000;\n  multimem.st.b32 [%rd6], 1;\n", true, &m).fault,
            Fault::kIllegalAddress);
  EXPECT_NE(m.find("not a multicast address"), std::string::npos) << m;
}

TEST(PtxMultimem, FormsTheIsaDoesNotAllowAreRefusedAtLoad) {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"multimem.st.acquire.sys.global.b32 [%rd1], %r1;", "unsupported modifier '.acquire'"},
      {"multimem.red.weak.global.add.u32 [%rd1], %r1;", "unsupported modifier '.weak'"},
      {"multimem.ld_reduce.release.add.u32 %r1, [%rd1];", "unsupported modifier '.release'"},
      {"multimem.red.min.f32 [%rd1], %f1;", ".min is not defined on .f32"},
      {"multimem.ld_reduce.and.u32 %r1, [%rd1];", ".and is not defined on .u32"},
      {"multimem.ld_reduce.add.s64 %rd6, [%rd1];", ".add is not defined on .s64"},
      {"multimem.ld_reduce.add.v8.f32 {%f1, %f2, %f3, %f4, %f5, %f6, %f7, %f8}, [%rd1];", ".v8 is not allowed with .f32"},
      {"multimem.ld_reduce.add.f16 %h1, [%rd1];", "no .vec is not allowed with .f16"},
      {"multimem.st.v2.f64 [%rd1], {%fd1, %fd2};", ".v2 is not allowed with .f64"},
      {"multimem.st.v2.b32 [%rd1], {%r1, %r2};", "integer multimem takes no .vec"},
      {"multimem.ld_reduce.add.acc::f32.f32 %f1, [%rd1];", ".acc::f32 is for"},
      {"multimem.red.add.v4.e4m3 [%rd1], {%h1, %h2, %h3, %h4};", "multimem.red has no fp8 forms"},
      {"multimem.ld_reduce.add.e4m3 %h1, [%rd1];", "must be 32, 64 or 128 bits, not 8"},
      {"multimem.st.v8.e4m3x4 [%rd1], {%r1, %r2, %r3, %r4, %r5, %r6, %r7, %r8};", "not 256"},
      {"multimem.ld_reduce.add.acc::f16.v2.f16x2 {%r1, %r2}, [%rd1];", ".acc::f16 is for the fp8 types"},
      {"multimem.ld_reduce.add.acc::f32.e4m3x4 %r1, [%rd1];", ".acc::f32 is for"},
      {"multimem.ld_reduce.and.e5m2x4 %r1, [%rd1];", "takes .add, .min or .max"},
      {"multimem.ld_reduce.u32 %r1, [%rd1];", "needs an operator"},
      {"multimem.ld.add.u32 %r1, [%rd1];", "must be multimem.ld_reduce, multimem.st or multimem.red"},
      {"multimem.ld_reduce.add.v4.f32 {%f1, %f2}, [%rd1];", "needs a vector of 4 registers"},
      {"multimem.st.b32 %r1, [%rd1];", "must be an address"},
  };
  for (const auto& [line, want] : bad) {
    Program p(mmKernel("  " + line + "\n", 4));
    EXPECT_FALSE(p.ok()) << line;
    EXPECT_NE(p.error().find(want), std::string::npos) << line << ": " << p.error();
    EXPECT_NE(p.error().find("test.ptx:"), std::string::npos) << p.error();
  }
}

// fp8 by definition (the OCP formats the PTX ISA names): a code's value, and a value rounded to
// nearest even by search over every finite code; past the largest finite value (by more than half
// its quantum, or by half with an odd largest code) e4m3 gives NaN 0x7f, e5m2 infinity 0x7c.
struct Fp8 {
  bool e4m3;
  double value(uint8_t c) const {
    const double sign = (c & 0x80) ? -1.0 : 1.0;
    if (e4m3) {
      const int e = (c >> 3) & 15, m = c & 7;
      if (e == 15 && m == 7) return std::nan("");
      return sign * (e == 0 ? std::ldexp(m, -9) : std::ldexp(8 + m, e - 10));
    }
    const int e = (c >> 2) & 31, m = c & 3;
    if (e == 31) return m != 0 ? std::nan("") : sign * INFINITY;
    return sign * (e == 0 ? std::ldexp(m, -16) : std::ldexp(4 + m, e - 17));
  }
  uint8_t round(double x) const {
    if (x != x) return 0x7f;
    const uint8_t sign = std::signbit(x) ? 0x80 : 0;
    const double a = std::fabs(x);
    const uint8_t largest = e4m3 ? 0x7e : 0x7b;
    const double top = value(largest), quantum = e4m3 ? 32.0 : 8192.0;
    if (a > top + quantum / 2 || (a == top + quantum / 2 && (largest & 1) != 0)) return sign | (e4m3 ? 0x7f : 0x7c);
    uint8_t best = 0;
    for (uint8_t c = 1; c <= largest; ++c) {
      const double d = std::fabs(value(c) - a), bd = std::fabs(value(best) - a);
      if (d < bd || (d == bd && (c & 1) == 0)) best = c;
    }
    return sign | best;
  }
};

// Bytes for `members` members: a deterministic spread over every code but NaN (and inf for e5m2),
// with the edge cases the ISA's rounding meets in the first 16 bytes: zeros of both signs,
// subnormals, the largest values (sums that overflow), NaN.
std::vector<std::vector<uint8_t>> fp8Members(bool e4m3, unsigned members, unsigned bytes) {
  std::vector<std::vector<uint8_t>> m(members, std::vector<uint8_t>(bytes));
  uint32_t x = 12345;
  const uint8_t nan = 0x7f, top = e4m3 ? 0x7e : 0x7b;
  const uint8_t edge[4][16] = {
      {0x00, 0x80, 0x01, 0x81, top, top, static_cast<uint8_t>(0x80 | top), nan, 0x00, 0x08, 0x38, 0x40, 0x02, 0x80, 0x7f, 0x30},
      {0x80, 0x80, 0x01, 0x01, top, 0x00, static_cast<uint8_t>(0x80 | top), 0x00, 0x00, 0x88, 0xb8, 0x40, 0x82, 0x00, 0x7f, 0xb0},
      {0x00, 0x80, 0x81, 0x01, top, 0x00, static_cast<uint8_t>(0x80 | top), 0x01, 0x80, 0x08, 0x38, 0x40, 0x02, 0x00, 0x00, 0x30},
      {0x80, 0x00, 0x01, 0x01, 0x01, 0x00, 0x80, 0x01, 0x80, 0x08, 0x38, 0xc0, 0x02, 0x80, 0x00, 0xb0}};
  for (unsigned i = 0; i < members; ++i) {
    for (unsigned b = 0; b < bytes; ++b) {
      x = x * 1103515245u + 12345u;
      uint8_t c = static_cast<uint8_t>(x >> 16);
      if ((c & 0x7f) > top) c = static_cast<uint8_t>((c & 0x80) | (c & 0x3f));  // no NaN / inf in the spread
      m[i][b] = b < 16 ? edge[i % 4][b] : c;
    }
  }
  return m;
}

TEST(PtxMultimem, LdReduceFp8AddRoundsEachStepInItsFormat) {
  for (bool e4m3 : {true, false}) {
    const Fp8 f{e4m3};
    const auto init = fp8Members(e4m3, 4, 256);
    const std::string type = e4m3 ? "e4m3" : "e5m2";
    const auto out = ldReduce<uint8_t>("  multimem.ld_reduce.relaxed.sys.global.add.v4." + type +
                                           " {%h1, %h2, %h3, %h4}, [%rd1];\n  st.global.v4.b8 [%rd2], {%h1, %h2, %h3, %h4};\n",
                                       4, init, 64);
    ASSERT_EQ(out.size(), 256u);
    for (unsigned b = 0; b < 256; ++b) {
      uint8_t acc = init[0][b];
      for (unsigned i = 1; i < 4; ++i) acc = f.round(static_cast<float>(f.value(acc)) + static_cast<float>(f.value(init[i][b])));
      EXPECT_EQ(out[b], acc) << type << " byte " << b;
    }
  }
}

TEST(PtxMultimem, LdReduceFp8AccF16SumsInF16AndRoundsOnce) {
  for (bool e4m3 : {true, false}) {
    const Fp8 f{e4m3};
    const auto init = fp8Members(e4m3, 3, 256);
    const std::string type = e4m3 ? "e4m3x2" : "e5m2x2";
    const auto out = ldReduce<uint8_t>("  multimem.ld_reduce.add.acc::f16.v4." + type +
                                           " {%h1, %h2, %h3, %h4}, [%rd1];\n  st.global.v4.b16 [%rd2], {%h1, %h2, %h3, %h4};\n",
                                       8, init, 32);
    ASSERT_EQ(out.size(), 256u);
    for (unsigned b = 0; b < 256; ++b) {
      // Each member's value is an f16 exactly; each partial sum rounded to f16 (through float,
      // exact for two f16 values' sum's rounding: the double rounding is innocuous).
      float sum = static_cast<float>(f.value(init[0][b]));
      for (unsigned i = 1; i < 3; ++i)
        sum = model::half::f16ToFloat(model::half::floatToF16(sum + static_cast<float>(f.value(init[i][b]))));
      EXPECT_EQ(out[b], f.round(sum)) << type << " byte " << b;
    }
  }
  // Where the accumulation's precision shows: 448 + 16 + 16 in e4m3 steps stays 448 (464 rounds to
  // even 448, twice); in f16 it is 480, which e4m3 cannot hold: NaN.
  const std::vector<std::vector<uint8_t>> init = {{0x7e, 0, 0, 0}, {0x58, 0, 0, 0}, {0x58, 0, 0, 0}};  // 448, 16, 16
  const auto plain = ldReduce<uint8_t>("  multimem.ld_reduce.add.e4m3x4 %r1, [%rd1];\n  st.global.b32 [%rd2], %r1;\n", 4, init, 1);
  const auto wide = ldReduce<uint8_t>("  multimem.ld_reduce.add.acc::f16.e4m3x4 %r1, [%rd1];\n  st.global.b32 [%rd2], %r1;\n", 4, init, 1);
  ASSERT_EQ(plain.size(), 4u);
  ASSERT_EQ(wide.size(), 4u);
  EXPECT_EQ(plain[0], 0x7e);
  EXPECT_EQ(wide[0], 0x7f);
}

TEST(PtxMultimem, LdReduceFp8MinMaxAndStore) {
  for (bool e4m3 : {true, false}) {
    const Fp8 f{e4m3};
    const auto init = fp8Members(e4m3, 4, 128);
    const std::string type = e4m3 ? "e4m3x4" : "e5m2x4";
    for (bool isMin : {true, false}) {
      const auto out = ldReduce<uint8_t>(std::string("  multimem.ld_reduce.") + (isMin ? "min" : "max") + ".v4." + type +
                                             " {%r1, %r2, %r3, %r4}, [%rd1];\n  st.global.v4.b32 [%rd2], {%r1, %r2, %r3, %r4};\n",
                                         16, init, 8);
      ASSERT_EQ(out.size(), 128u);
      for (unsigned b = 0; b < 128; ++b) {
        uint8_t acc = init[0][b];
        for (unsigned i = 1; i < 4; ++i) {
          const uint8_t c = init[i][b];
          const double x = f.value(acc), y = f.value(c);
          if (x != x || y != y) {
            acc = x != x && y != y ? 0x7f : x != x ? c : acc;
            continue;
          }
          // As PTX's min and max: -0 below +0.
          const auto below = [&](uint8_t p, uint8_t q) {
            const double vp = f.value(p), vq = f.value(q);
            return vp < vq || (vp == vq && vp == 0 && (p & 0x80) != 0 && (q & 0x80) == 0);
          };
          if (isMin ? below(c, acc) : below(acc, c)) acc = c;
        }
        EXPECT_EQ(out[b], acc) << type << (isMin ? " min" : " max") << " byte " << b;
      }
    }
  }
  // st writes the bytes to every member, unchanged.
  Program p(mmKernel("  mov.b32 %r1, 0x7f80017e;\n  mov.b32 %r2, 0x00fe7c01;\n  multimem.st.v2.e5m2x4 [%rd1], {%r1, %r2};\n", 8));
  ASSERT_TRUE(p.ok()) << p.error();
  Team t(p, std::vector<std::vector<uint32_t>>(3, std::vector<uint32_t>(2, 0)));
  ASSERT_EQ(p.launch("k", {}, {1, 1, 1}, {t.mc, p.buffer(8)}).fault, Fault::kNone);
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(t.member<uint32_t>(i, 2), (std::vector<uint32_t>{0x7f80017eu, 0x00fe7c01u})) << i;
}

TEST(PtxMultimem, ASpinOnLdReduceIsParkedAndReported) {
  // Waits until the members' sum reaches 10; they hold 1 + 2 + 3 and nothing else runs: the warp
  // is parked and the launch ends with the report of what it waits on, not after its limit.
  Program p(mmKernel(R"(
SPIN:
  multimem.ld_reduce.relaxed.sys.global.add.u32 %r1, [%rd3];
  setp.lt.u32 %p1, %r1, 10;
  @%p1 bra SPIN;
)", 4));
  ASSERT_TRUE(p.ok()) << p.error();
  Team t(p, std::vector<std::vector<uint32_t>>{{1}, {2}, {3}});
  const LaunchResult r = p.launch("k", {}, {1, 1, 1}, {t.mc, p.buffer(4)}, 0, 1000000000);
  EXPECT_EQ(r.fault, Fault::kTimeout);
  EXPECT_NE(r.message.find("it holds 0x6, the warp compares it with 0xa"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("multimem.ld_reduce.relaxed.sys.global.add.u32"), std::string::npos) << r.message;
  EXPECT_LT(r.warpInstructions, 100000u);
}

// ---- what a thread's code keeps in flight (the node times a kernel with it)

TEST(PtxMultimem, LoadBytesInFlightFollowTheUnroll) {
  // NCCL's NVLS loop: four guarded .v4 ld_reduce (forward branches around each), then the stores.
  Program nvls(mmKernel(R"(
  setp.eq.u32 %p1, %r0, 99;
  multimem.ld_reduce.add.v4.f32 {%f1, %f2, %f3, %f4}, [%rd1];
  @%p1 bra SKIP1;
  multimem.ld_reduce.add.v4.f32 {%f5, %f6, %f7, %f8}, [%rd1+16];
SKIP1:
  @%p1 bra SKIP2;
  multimem.ld_reduce.add.v4.f32 {%f9, %f10, %f11, %f12}, [%rd1+32];
SKIP2:
  ld.global.v4.f32 {%f13, %f14, %f15, _}, [%rd2];
  multimem.st.v4.f32 [%rd1], {%f1, %f2, %f3, %f4};
  ld.global.f32 %f1, [%rd2+64];
)", 16));
  ASSERT_TRUE(nvls.ok()) << nvls.error();
  EXPECT_EQ(loadBytesInFlight(*nvls.module().find("k")), 64u);
  // A load whose value is used at once, in a loop: one access at a time.
  Program loop(mmKernel(R"(
LOOP:
  ld.global.f32 %f1, [%rd2];
  add.f32 %f2, %f1, %f1;
  ld.global.f32 %f3, [%rd2+4];
  st.global.f32 [%rd2], %f3;
  bra.uni LOOP;
)", 4));
  ASSERT_TRUE(loop.ok()) << loop.error();
  EXPECT_EQ(loadBytesInFlight(*loop.module().find("k")), 4u);
}

}  // namespace
}  // namespace mcsim::ptx::test
