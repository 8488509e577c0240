// Instruction families added for issue 17's list: warp-level reductions, matching and election
// (redux.sync, match.sync, elect.sync), mbarrier, cp.async and cp.async.bulk, extended-precision
// arithmetic through the carry flag, 24-bit multiplication, sad, dp4a/dp2a, set, nanosleep and
// prmt's modes. Expected values follow from the PTX ISA's text (docs/ptx.md cites the sections).
#include <algorithm>
#include <cmath>

#include "tests/ptx/harness.h"

namespace mcsim::ptx::test {
namespace {

const char* kHeader = ".version 8.0\n.target sm_90\n.address_size 64\n";

// ---- redux.sync, match.sync, elect.sync

TEST(PtxIsa, ReduxReducesOverTheMembermask) {
  Program p(std::string(kHeader) + R"(
.visible .entry k(.param .u64 pout)
{
  .reg .b32 %r<20>;
  .reg .b64 %rd<4>;
  .reg .pred %p<2>;
  ld.param.u64 %rd1, [pout];
  mov.u32 %r0, %laneid;
  mul.lo.u32 %r1, %r0, 7;
  sub.s32 %r1, %r1, 50;
  redux.sync.add.u32 %r2, %r1, 0xffffffff;
  redux.sync.min.s32 %r3, %r1, 0xffffffff;
  redux.sync.max.u32 %r4, %r1, 0xffffffff;
  redux.sync.max.s32 %r5, %r1, 0xffffffff;
  redux.sync.and.b32 %r6, %r1, 0xffffffff;
  redux.sync.or.b32 %r7, %r1, 0xffffffff;
  redux.sync.xor.b32 %r8, %r1, 0xffffffff;
  setp.lt.u32 %p1, %r0, 16;
  selp.b32 %r9, 0x0000ffff, 0xffff0000, %p1;
  redux.sync.add.u32 %r10, %r1, %r9;
  redux.sync.min.u32 %r11, %r1, %r9;
  redux.sync.min.s32 %r12, %r1, %r9;
  mov.u32 %r13, %tid.x;
  mul.wide.u32 %rd2, %r13, 48;
  add.s64 %rd3, %rd1, %rd2;
  st.global.v4.u32 [%rd3], {%r2, %r3, %r4, %r5};
  st.global.v4.u32 [%rd3+16], {%r6, %r7, %r8, %r10};
  st.global.v4.u32 [%rd3+32], {%r11, %r12, %r12, %r12};
  ret;
}
)");
  ASSERT_TRUE(p.ok()) << p.error();
  const uint64_t out = p.buffer(64 * 48);
  const LaunchResult r = p.launch("k", {}, {64, 1, 1}, {out});
  ASSERT_EQ(r.fault, Fault::kNone) << r.message;
  const auto v = p.read<uint32_t>(out, 64 * 12);
  auto a = [](unsigned l) { return static_cast<int32_t>(l * 7) - 50; };
  for (unsigned t = 0; t < 64; ++t) {
    uint32_t sum = 0, umax = 0, andv = ~0u, orv = 0, xorv = 0, halfSum = 0, halfUmin = ~0u;
    int32_t smin = INT32_MAX, smax = INT32_MIN, halfSmin = INT32_MAX;
    for (unsigned l = 0; l < 32; ++l) {
      const uint32_t x = static_cast<uint32_t>(a(l));
      sum += x;
      umax = std::max(umax, x);
      andv &= x;
      orv |= x;
      xorv ^= x;
      smin = std::min(smin, a(l));
      smax = std::max(smax, a(l));
      if ((l < 16) == (t % 32 < 16)) {
        halfSum += x;
        halfUmin = std::min(halfUmin, x);
        halfSmin = std::min(halfSmin, a(l));
      }
    }
    const uint32_t* w = &v[t * 12];
    ASSERT_EQ(w[0], sum) << t;
    ASSERT_EQ(w[1], static_cast<uint32_t>(smin)) << t;
    ASSERT_EQ(w[2], umax) << t;
    ASSERT_EQ(w[3], static_cast<uint32_t>(smax)) << t;
    ASSERT_EQ(w[4], andv) << t;
    ASSERT_EQ(w[5], orv) << t;
    ASSERT_EQ(w[6], xorv) << t;
    ASSERT_EQ(w[7], halfSum) << t;
    ASSERT_EQ(w[8], halfUmin) << t;
    ASSERT_EQ(w[9], static_cast<uint32_t>(halfSmin)) << t;
  }
}

TEST(PtxIsa, ReduxF32MinMaxWithAbsAndNaN) {
  // Lane l holds (l - 10) / 2, lane 3 a NaN and lane 12 -0.0: NaN is left out unless .NaN.
  Program p(std::string(kHeader) + R"(
.visible .entry k(.param .u64 pout)
{
  .reg .b32 %r<8>;
  .reg .f32 %f<8>;
  .reg .b64 %rd<4>;
  .reg .pred %p<3>;
  ld.param.u64 %rd1, [pout];
  mov.u32 %r0, %laneid;
  cvt.rn.f32.u32 %f1, %r0;
  sub.f32 %f1, %f1, 0f41200000;
  mul.f32 %f1, %f1, 0f3F000000;
  setp.eq.u32 %p1, %r0, 3;
  selp.f32 %f1, 0f7FC00000, %f1, %p1;
  setp.eq.u32 %p2, %r0, 12;
  selp.f32 %f1, 0f80000000, %f1, %p2;
  redux.sync.min.f32 %f2, %f1, 0xffffffff;
  redux.sync.max.f32 %f3, %f1, 0xffffffff;
  redux.sync.min.abs.f32 %f4, %f1, 0xffffffff;
  redux.sync.max.NaN.f32 %f5, %f1, 0xffffffff;
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd2, %r1, 16;
  add.s64 %rd3, %rd1, %rd2;
  st.global.v4.f32 [%rd3], {%f2, %f3, %f4, %f5};
  ret;
}
)");
  ASSERT_TRUE(p.ok()) << p.error();
  const uint64_t out = p.buffer(32 * 16);
  const LaunchResult r = p.launch("k", {}, {32, 1, 1}, {out});
  ASSERT_EQ(r.fault, Fault::kNone) << r.message;
  const auto v = p.read<uint32_t>(out, 32 * 4);
  for (unsigned t = 0; t < 32; ++t) {
    EXPECT_EQ(v[t * 4 + 0], f32(-5.0f)) << t;
    EXPECT_EQ(v[t * 4 + 1], f32(10.5f)) << t;
    EXPECT_EQ(v[t * 4 + 2], f32(0.0f)) << t;  // |-0| and lane 10's +0
    EXPECT_EQ(v[t * 4 + 3], 0x7fffffffu) << t;
  }
}

TEST(PtxIsa, MatchAnyAllAndElect) {
  Program p(std::string(kHeader) + R"(
.visible .entry k(.param .u64 pout)
{
  .reg .b32 %r<20>;
  .reg .b64 %rd<8>;
  .reg .pred %p<6>;
  ld.param.u64 %rd1, [pout];
  mov.u32 %r0, %laneid;
  rem.u32 %r1, %r0, 3;
  match.any.sync.b32 %r2, %r1, 0xffffffff;
  match.all.sync.b32 %r3|%p1, %r1, 0xffffffff;
  match.all.sync.b32 %r4|%p2, 5, 0xffffffff;
  and.b32 %r5, %r0, 1;
  cvt.u64.u32 %rd4, %r5;
  shl.b64 %rd4, %rd4, 40;
  match.any.sync.b64 %r6, %rd4, 0xffffffff;
  selp.u32 %r7, 1, 0, %p1;
  selp.u32 %r8, 1, 0, %p2;
  elect.sync %r9|%p3, 0xffffffff;
  and.b32 %r10, %r0, 4;
  setp.ne.u32 %p4, %r10, 0;
  selp.b32 %r11, 0xf0f0f0f0, 0x0f0f0f0f, %p4;
  elect.sync %r12|%p5, %r11;
  selp.u32 %r13, 1, 0, %p3;
  selp.u32 %r14, 1, 0, %p5;
  elect.sync _|%p5, 0xffffffff;
  selp.u32 %r15, 1, 0, %p5;
  mov.u32 %r16, %tid.x;
  mul.wide.u32 %rd2, %r16, 48;
  add.s64 %rd3, %rd1, %rd2;
  st.global.v4.u32 [%rd3], {%r2, %r3, %r4, %r6};
  st.global.v4.u32 [%rd3+16], {%r7, %r8, %r9, %r12};
  st.global.v4.u32 [%rd3+32], {%r13, %r14, %r15, %r15};
  ret;
}
)");
  ASSERT_TRUE(p.ok()) << p.error();
  const uint64_t out = p.buffer(32 * 48);
  const LaunchResult r = p.launch("k", {}, {32, 1, 1}, {out});
  ASSERT_EQ(r.fault, Fault::kNone) << r.message;
  const auto v = p.read<uint32_t>(out, 32 * 12);
  for (unsigned l = 0; l < 32; ++l) {
    const uint32_t* w = &v[l * 12];
    uint32_t same = 0;
    for (unsigned j = 0; j < 32; ++j)
      if (j % 3 == l % 3) same |= 1u << j;
    EXPECT_EQ(w[0], same) << l;
    EXPECT_EQ(w[1], 0u) << l;             // not all equal: 0, p false
    EXPECT_EQ(w[2], 0xffffffffu) << l;    // all equal: the membermask, p true
    EXPECT_EQ(w[3], (l & 1) ? 0xaaaaaaaau : 0x55555555u) << l;  // 64-bit values differ above bit 32
    EXPECT_EQ(w[4], 0u) << l;
    EXPECT_EQ(w[5], 1u) << l;
    EXPECT_EQ(w[6], 0u) << l;             // the leader of the whole warp: lane 0
    EXPECT_EQ(w[7], (l & 4) ? 4u : 0u) << l;  // of 0xf0f0f0f0: lane 4; of 0x0f0f0f0f: lane 0
    EXPECT_EQ(w[8], l == 0 ? 1u : 0u) << l;
    EXPECT_EQ(w[9], l == 0 || l == 4 ? 1u : 0u) << l;
    EXPECT_EQ(w[10], l == 0 ? 1u : 0u) << l;
  }
}

// Undefined in the ISA; a real H200 runs it to completion, and so does mcsim: each lane reduces
// over its membermask's executing lanes and itself.
TEST(PtxIsa, WarpLevelWithALaneOutsideItsMembermaskRunsOn) {
  Program p(std::string(kHeader) + R"(
.visible .entry k(.param .u64 pout)
{
  .reg .b32 %r<4>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [pout];
  mov.u32 %r0, %laneid;
  redux.sync.add.u32 %r1, %r0, 0x0000ffff;
  mul.wide.u32 %rd2, %r0, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r1;
  ret;
}
)");
  ASSERT_TRUE(p.ok()) << p.error();
  const uint64_t out = p.buffer(128);
  const LaunchResult r = p.launch("k", {}, {32, 1, 1}, {out});
  ASSERT_EQ(r.fault, Fault::kNone) << r.message;
  const std::vector<uint32_t> got = p.read<uint32_t>(out, 32);
  for (uint32_t l = 0; l < 32; ++l) EXPECT_EQ(got[l], l < 16 ? 120u : 120u + l) << l;  // 0 + ... + 15 = 120
}

TEST(PtxIsa, WarpLevelFormsAreCheckedAtLoad) {
  auto error = [](const std::string& body) {
    Module m;
    std::string e;
    parseModule(std::string(kHeader) + ".visible .entry k()\n{\n  .reg .b32 %r<4>;\n  .reg .b64 %rd<2>;\n" + body + "\n}\n",
                "bad.ptx", &m, &e);
    return e;
  };
  EXPECT_EQ(error("  redux.sync.add.b32 %r0, %r1, 0xffffffff;"),
            "bad.ptx:8: 'redux.sync.add.b32': redux.sync does not take this operator with .b32");
  EXPECT_EQ(error("  redux.sync.and.u32 %r0, %r1, 0xffffffff;"),
            "bad.ptx:8: 'redux.sync.and.u32': redux.sync does not take this operator with .u32");
  EXPECT_EQ(error("  redux.add.u32 %r0, %r1, 0xffffffff;"), "bad.ptx:8: 'redux.add.u32' needs .sync");
  EXPECT_EQ(error("  match.sync.b32 %r0, %r1, 0xffffffff;"), "bad.ptx:8: 'match.sync.b32' needs .any or .all");
  EXPECT_EQ(error("  match.any.sync.u32 %r0, %r1, 0xffffffff;"),
            "bad.ptx:8: 'match.any.sync.u32': match.sync takes .b32 or .b64");
}

// ---- mbarrier

// One thread walks an mbarrier through its phases: arrivals, counts, tx-counts, arrive_drop.
TEST(PtxIsa, MbarrierPhasesFollowArrivalsAndTransactions) {
  Program p(std::string(kHeader) + R"(
.visible .entry k(.param .u64 pout)
{
  .reg .b32 %r<40>;
  .reg .b64 %rd<12>;
  .reg .pred %p<20>;
  .shared .align 8 .b64 bar;
  ld.param.u64 %rd1, [pout];
  mbarrier.init.shared.b64 [bar], 3;
  mbarrier.arrive.shared.b64 %rd2, [bar];
  mbarrier.test_wait.shared.b64 %p1, [bar], %rd2;
  mbarrier.arrive.noComplete.shared.b64 %rd3, [bar], 1;
  mbarrier.pending_count.b64 %r1, %rd3;
  mbarrier.arrive.expect_tx.shared::cta.b64 %rd4, [bar], 64;
  mbarrier.test_wait.parity.shared.b64 %p2, [bar], 0;
  mbarrier.complete_tx.shared::cta.b64 [bar], 32;
  mbarrier.try_wait.parity.shared::cta.b64 %p3, [bar], 0;
  mbarrier.complete_tx.shared::cta.b64 [bar], 32;
  mbarrier.test_wait.shared.b64 %p4, [bar], %rd2;
  mbarrier.test_wait.parity.shared.b64 %p5, [bar], 0;
  mbarrier.try_wait.parity.shared.b64 %p6, [bar], 1, 1000;
  mbarrier.arrive_drop.shared.b64 %rd5, [bar];
  mbarrier.arrive.shared.b64 %rd6, [bar], 2;
  mbarrier.test_wait.parity.shared.b64 %p7, [bar], 1;
  mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [bar], 16;
  mbarrier.arrive.release.cta.shared::cta.b64 _, [bar], 2;
  mbarrier.test_wait.parity.shared.b64 %p8, [bar], 0;
  mbarrier.complete_tx.shared::cta.b64 [bar], 16;
  mbarrier.test_wait.parity.acquire.cta.shared::cta.b64 %p9, [bar], 0;
  mov.u64 %rd7, bar;
  cvta.shared.u64 %rd7, %rd7;
  mbarrier.arrive.b64 %rd8, [%rd7];
  mbarrier.pending_count.b64 %r2, %rd8;
  mbarrier.inval.shared.b64 [bar];
  selp.u32 %r11, 1, 0, %p1;
  selp.u32 %r12, 1, 0, %p2;
  selp.u32 %r13, 1, 0, %p3;
  selp.u32 %r14, 1, 0, %p4;
  selp.u32 %r15, 1, 0, %p5;
  selp.u32 %r16, 1, 0, %p6;
  selp.u32 %r17, 1, 0, %p7;
  selp.u32 %r18, 1, 0, %p8;
  selp.u32 %r19, 1, 0, %p9;
  st.global.v4.u32 [%rd1], {%r11, %r12, %r13, %r14};
  st.global.v4.u32 [%rd1+16], {%r15, %r16, %r17, %r18};
  st.global.v4.u32 [%rd1+32], {%r19, %r1, %r2, %r2};
  ret;
}
)");
  ASSERT_TRUE(p.ok()) << p.error();
  const uint64_t out = p.buffer(48);
  const LaunchResult r = p.launch("k", {}, {1, 1, 1}, {out});
  ASSERT_EQ(r.fault, Fault::kNone) << r.message;
  const auto v = p.read<uint32_t>(out, 11);
  EXPECT_EQ(v[0], 0u);  // one arrival of three: phase 0 not complete
  EXPECT_EQ(v[1], 0u);  // arrivals all in, tx-count 64 outstanding
  EXPECT_EQ(v[2], 0u);  // 32 of them done
  EXPECT_EQ(v[3], 1u);  // all done: phase 0 complete (the first state's phase)
  EXPECT_EQ(v[4], 1u);  // parity 0 complete
  EXPECT_EQ(v[5], 0u);  // parity 1: the current phase, not complete
  EXPECT_EQ(v[6], 1u);  // arrive_drop (expected now 2) and an arrival of 2 complete phase 1
  EXPECT_EQ(v[7], 0u);  // phase 2: both arrivals in but 16 tx bytes outstanding
  EXPECT_EQ(v[8], 1u);  // complete_tx of 16 completes it
  EXPECT_EQ(v[9], 2u);  // pending_count of the .noComplete arrival's state: 2 pending before it
  EXPECT_EQ(v[10], 2u); // phase 3 (expected 2): 2 pending before the generic-address arrival
}

// Four warps: warp 0 waits on an mbarrier the other three arrive at after writing shared
// memory. The waiting warp is parked, not spinning: the kernel runs a few hundred instructions.
TEST(PtxIsa, MbarrierWaitParksTheWarp) {
  Program p(std::string(kHeader) + R"(
.visible .entry k(.param .u64 pout)
{
  .reg .b32 %r<20>;
  .reg .b64 %rd<8>;
  .reg .pred %p<4>;
  .shared .align 8 .b64 bar;
  .shared .align 4 .b32 data[128];
  ld.param.u64 %rd1, [pout];
  mov.u32 %r0, %tid.x;
  setp.ne.u32 %p1, %r0, 0;
  @%p1 bra SYNC;
  mbarrier.init.shared.b64 [bar], 96;
SYNC:
  bar.sync 0;
  setp.lt.u32 %p2, %r0, 32;
  @%p2 bra WAIT;
  mov.u32 %r1, data;
  shl.b32 %r2, %r0, 2;
  add.u32 %r3, %r1, %r2;
  mul.lo.u32 %r4, %r0, 3;
  st.shared.u32 [%r3], %r4;
  mbarrier.arrive.shared.b64 _, [bar];
  ret;
WAIT:
  mbarrier.try_wait.parity.shared.b64 %p3, [bar], 0;
  @!%p3 bra WAIT;
  mov.u32 %r1, data;
  shl.b32 %r2, %r0, 2;
  add.u32 %r2, %r2, 128;
  add.u32 %r3, %r1, %r2;
  ld.shared.u32 %r5, [%r3];
  mul.wide.u32 %rd2, %r0, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r5;
  ret;
}
)");
  ASSERT_TRUE(p.ok()) << p.error();
  const uint64_t out = p.buffer(32 * 4);
  const LaunchResult r = p.launch("k", {}, {128, 1, 1}, {out});
  ASSERT_EQ(r.fault, Fault::kNone) << r.message;
  const auto v = p.read<uint32_t>(out, 32);
  for (uint32_t t = 0; t < 32; ++t) ASSERT_EQ(v[t], (t + 32) * 3) << t;
  EXPECT_LT(r.warpInstructions, 200u);  // a spin would take a quantum (4096) at least
  EXPECT_EQ(r.pollingInstructions, 0u);
}

// Two warps: warp 0 stores a word (as a barrier's arrival does), then spins on a flag that warp
// 1 sets in its later turn. The rest of warp 0's first turn after its store is a spin: it polls,
// and costs no issue time (LaunchResult::pollingInstructions), as the turns of a parked warp do.
// (Before 2026-11-29 only a turn that spun throughout was polling, so every barrier's first turn
// of spinning cost a whole quantum of issue.)
TEST(PtxIsa, TheSpinAfterAStoreInOneTurnIsPolling) {
  Program p(std::string(kHeader) + R"(
.visible .entry k(.param .u64 pout)
{
  .reg .b32 %r<8>;
  .reg .b64 %rd<8>;
  .reg .pred %p<4>;
  ld.param.u64 %rd1, [pout];
  mov.u32 %r0, %tid.x;
  setp.ge.u32 %p1, %r0, 32;
  @%p1 bra SETTER;
  st.global.u32 [%rd1+4], 7;
SPIN:
  ld.volatile.global.u32 %r1, [%rd1];
  setp.eq.u32 %p2, %r1, 0;
  @%p2 bra SPIN;
  st.global.u32 [%rd1+8], %r1;
  ret;
SETTER:
  st.global.u32 [%rd1], 5;
  ret;
}
)");
  ASSERT_TRUE(p.ok()) << p.error();
  const uint64_t out = p.buffer(3 * 4);
  const LaunchResult r = p.launch("k", {}, {64, 1, 1}, {out});
  ASSERT_EQ(r.fault, Fault::kNone) << r.message;
  const auto v = p.read<uint32_t>(out, 3);
  EXPECT_EQ(v[0], 5u);
  EXPECT_EQ(v[1], 7u);
  EXPECT_EQ(v[2], 5u);
  // Warp 0's first turn: its store, then a quantum (4096 instructions) of spinning, all but the
  // few before the store polling.
  EXPECT_GE(r.warpInstructions, 4096u);
  EXPECT_GE(r.pollingInstructions, 4096u - 8);
  EXPECT_LT(r.warpInstructions - r.pollingInstructions, 32u);
}

TEST(PtxIsa, AnMbarrierNeverCompletedIsReportedAsAWait) {
  Program p(std::string(kHeader) + R"(
.visible .entry k()
{
  .reg .pred %p<2>;
  .shared .align 8 .b64 bar;
  mbarrier.init.shared.b64 [bar], 2;
  mbarrier.arrive.shared.b64 _, [bar];
WAIT:
  mbarrier.try_wait.parity.shared.b64 %p1, [bar], 0;
  @!%p1 bra WAIT;
  ret;
}
)");
  ASSERT_TRUE(p.ok()) << p.error();
  const LaunchResult r = p.launch("k", {}, {1, 1, 1}, {});
  EXPECT_EQ(r.fault, Fault::kTimeout);
  EXPECT_NE(r.message.find("kernel 'k' block (0,0,0) thread (0,0,0) waits on the mbarrier at 0x"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("for its phase of parity 0 to complete: the current phase has 1 of 2 arrivals pending and a tx-count of 0"),
            std::string::npos)
      << r.message;
}

TEST(PtxIsa, MbarrierBadUseFaults) {
  auto run = [](const std::string& body, uint64_t arg = 0) {
    Program p(std::string(kHeader) + ".visible .entry k(.param .u64 pa)\n{\n  .reg .b64 %rd<4>;\n  .reg .pred %p<2>;\n"
              "  .shared .align 8 .b64 bar[2];\n  ld.param.u64 %rd1, [pa];\n" + body + "\n  ret;\n}\n");
    EXPECT_TRUE(p.ok()) << p.error();
    const uint64_t buf = p.buffer(64);
    return p.launch("k", {}, {1, 1, 1}, {arg != 0 ? arg : buf});
  };
  LaunchResult r = run("  mbarrier.init.b64 [%rd1], 1;");  // a global address: as a real H200
  EXPECT_EQ(r.fault, Fault::kIllegalInstruction);
  EXPECT_NE(r.message.find("(mbarrier, 8 bytes: a global address; an mbarrier object lives in shared memory)"), std::string::npos)
      << r.message;
  r = run("  mbarrier.init.shared.b64 [bar+4], 1;");
  EXPECT_EQ(r.fault, Fault::kMisalignedAddress);
  EXPECT_NE(r.message.find("misaligned address 0x4 (8-byte access) in 'mbarrier.init.shared.b64'"), std::string::npos) << r.message;
  r = run("  mbarrier.arrive.shared.b64 %rd2, [bar];");
  EXPECT_EQ(r.fault, Fault::kTrap);
  EXPECT_NE(r.message.find("is not initialised (mbarrier.init) or was invalidated"), std::string::npos) << r.message;
  r = run("  mbarrier.init.shared.b64 [bar], 1;\n  mbarrier.arrive.shared.b64 %rd2, [bar], 2;");
  EXPECT_EQ(r.fault, Fault::kTrap);
  EXPECT_NE(r.message.find("2 arrivals at the mbarrier at 0x0, whose current phase has 1 pending"), std::string::npos) << r.message;
  r = run("  mbarrier.init.shared.b64 [bar], 1;\n  mbarrier.arrive.noComplete.shared.b64 %rd2, [bar], 1;");
  EXPECT_EQ(r.fault, Fault::kTrap);
  EXPECT_NE(r.message.find("an arrival with .noComplete completes the phase"), std::string::npos) << r.message;
  r = run("  mbarrier.init.shared.b64 [bar], 0;");
  EXPECT_EQ(r.fault, Fault::kTrap);
  EXPECT_NE(r.message.find("mbarrier.init count 0 outside the ISA's range of 1 to 2^20-1"), std::string::npos) << r.message;
  r = run("  mbarrier.init.shared.b64 [bar], 1;\n  mbarrier.inval.shared.b64 [bar];\n  mbarrier.test_wait.parity.shared.b64 %p1, [bar], 0;");
  EXPECT_EQ(r.fault, Fault::kTrap);
}

// ---- cp.async

TEST(PtxIsa, CpAsyncCopiesZeroFillsAndArrives) {
  // Thread t: 16 bytes (.cg) to buf16[t], 4 bytes with src-size 2 (.ca) to buf4[t], 8 bytes to
  // buf8[t] and, through ignore-src, 8 zero bytes to buf8z[t]; commit, wait; an mbarrier counts
  // each thread's cp.async.mbarrier.arrive.noinc; every thread then reads another's bytes.
  Program p(std::string(kHeader) + R"(
.visible .entry k(.param .u64 pin, .param .u64 pout)
{
  .reg .b32 %r<30>;
  .reg .b64 %rd<12>;
  .reg .pred %p<4>;
  .shared .align 8 .b64 bar;
  .shared .align 16 .b8 buf16[512];
  .shared .align 4 .b8 buf4[128];
  .shared .align 8 .b8 buf8[256];
  .shared .align 8 .b8 buf8z[256];
  ld.param.u64 %rd1, [pin];
  ld.param.u64 %rd2, [pout];
  mov.u32 %r0, %tid.x;
  setp.ne.u32 %p1, %r0, 0;
  @%p1 bra GO;
  mbarrier.init.shared.b64 [bar], 32;
GO:
  bar.sync 0;
  cvta.to.global.u64 %rd1, %rd1;
  mul.wide.u32 %rd3, %r0, 16;
  add.s64 %rd4, %rd1, %rd3;
  mov.u32 %r1, buf16;
  shl.b32 %r2, %r0, 4;
  add.u32 %r3, %r1, %r2;
  cp.async.cg.shared.global [%r3], [%rd4], 16;
  mov.u32 %r4, buf4;
  shl.b32 %r5, %r0, 2;
  add.u32 %r6, %r4, %r5;
  cp.async.ca.shared.global [%r6], [%rd4], 4, 2;
  mov.u32 %r7, buf8;
  shl.b32 %r8, %r0, 3;
  add.u32 %r9, %r7, %r8;
  cp.async.ca.shared.global.L2::128B [%r9], [%rd4+8], 8;
  mov.u32 %r10, buf8z;
  add.u32 %r11, %r10, %r8;
  setp.eq.u32 %p2, %r0, %r0;
  cp.async.ca.shared.global [%r11], [%rd4], 8, %p2;
  cp.async.commit_group;
  cp.async.wait_group 0;
  cp.async.wait_all;
  cp.async.mbarrier.arrive.noinc.shared.b64 [bar];
WAIT:
  mbarrier.try_wait.parity.shared.b64 %p3, [bar], 0;
  @!%p3 bra WAIT;
  xor.b32 %r12, %r0, 31;
  shl.b32 %r13, %r12, 4;
  add.u32 %r14, %r1, %r13;
  ld.shared.v4.u32 {%r15, %r16, %r17, %r18}, [%r14];
  shl.b32 %r13, %r12, 2;
  add.u32 %r14, %r4, %r13;
  ld.shared.u32 %r19, [%r14];
  shl.b32 %r13, %r12, 3;
  add.u32 %r14, %r7, %r13;
  ld.shared.u64 %rd5, [%r14];
  add.u32 %r14, %r10, %r13;
  ld.shared.u64 %rd6, [%r14];
  mul.wide.u32 %rd7, %r0, 48;
  add.s64 %rd8, %rd2, %rd7;
  st.global.v4.u32 [%rd8], {%r15, %r16, %r17, %r18};
  st.global.u32 [%rd8+16], %r19;
  st.global.u64 [%rd8+24], %rd5;
  st.global.u64 [%rd8+32], %rd6;
  ret;
}
)");
  ASSERT_TRUE(p.ok()) << p.error();
  std::vector<uint32_t> in(32 * 4);
  for (uint32_t i = 0; i < in.size(); ++i) in[i] = 0x01000000u * (i % 7 + 1) + i * 0x10001u;
  const uint64_t src = p.buffer(in), out = p.buffer(32 * 48);
  const LaunchResult r = p.launch("k", {}, {32, 1, 1}, {src, out});
  ASSERT_EQ(r.fault, Fault::kNone) << r.message;
  const auto v = p.read<uint32_t>(out, 32 * 12);
  for (uint32_t t = 0; t < 32; ++t) {
    const uint32_t o = t ^ 31;
    const uint32_t* w = &v[t * 12];
    for (unsigned k = 0; k < 4; ++k) EXPECT_EQ(w[k], in[o * 4 + k]) << t;
    EXPECT_EQ(w[4], in[o * 4] & 0xffffu) << t;  // 2 bytes read, 2 zero-filled
    EXPECT_EQ(w[6], in[o * 4 + 2]) << t;
    EXPECT_EQ(w[7], in[o * 4 + 3]) << t;
    EXPECT_EQ(w[8], 0u) << t;  // ignore-src: zeros
    EXPECT_EQ(w[9], 0u) << t;
  }
  // The copies' global reads count as the kernel's global traffic, as loads do: 16 + 2 + 8 bytes
  // a thread, and the two parameters (not global memory) are not counted.
  EXPECT_EQ(r.globalBytesRead, 32u * (16 + 2 + 8));
  // For the timing, the copies are loads in flight until the wait: 16 + 4 + 8 + 8 bytes a thread.
  EXPECT_EQ(loadBytesInFlight(*p.module().find("k")), 36u);
}

TEST(PtxIsa, CpAsyncBadUse) {
  auto error = [](const std::string& body) {
    Module m;
    std::string e;
    parseModule(std::string(kHeader) + ".visible .entry k()\n{\n  .reg .b32 %r<4>;\n  .reg .b64 %rd<2>;\n" + body + "\n}\n",
                "bad.ptx", &m, &e);
    return e;
  };
  EXPECT_EQ(error("  cp.async.ca.shared.global [%r0], [%rd0], 12;"),
            "bad.ptx:8: 'cp.async.ca.shared.global': cp-size must be 4, 8 or 16");
  EXPECT_EQ(error("  cp.async.cg.shared.global [%r0], [%rd0], 8;"),
            "bad.ptx:8: 'cp.async.cg.shared.global': cp.async.cg copies 16 bytes");
  EXPECT_EQ(error("  cp.async.ca.global.shared [%r0], [%rd0], 8;"),
            "bad.ptx:8: 'cp.async.ca.global.shared': this combination of state spaces and completion is not a cp.async form");
  EXPECT_EQ(error("  cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r0], [%rd0], 24, [%r1];"),
            "bad.ptx:8: 'cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes': the size must be a multiple of 16");
  EXPECT_EQ(error("  cp.async.bulk.prefetch.L2.global [%rd0], 16;"),
            "bad.ptx:8: instruction 'cp.async.bulk.prefetch.L2.global' is not implemented yet");

  auto run = [](const std::string& body) {
    Program p(std::string(kHeader) + ".visible .entry k(.param .u64 pa)\n{\n  .reg .b32 %r<4>;\n  .reg .b64 %rd<4>;\n"
              "  .shared .align 16 .b8 buf[64];\n  ld.param.u64 %rd1, [pa];\n  mov.u32 %r1, buf;\n" + body + "\n  ret;\n}\n");
    EXPECT_TRUE(p.ok()) << p.error();
    const uint64_t a = p.buffer(64);
    return p.launch("k", {}, {1, 1, 1}, {a});
  };
  LaunchResult r = run("  cp.async.ca.shared.global [%r1], [%rd1], 16, 20;");
  EXPECT_EQ(r.fault, Fault::kTrap);
  EXPECT_NE(r.message.find("src-size 20 is larger than cp-size 16"), std::string::npos) << r.message;
  r = run("  cp.async.ca.shared.global [%r1], [%rd1+4], 8;");
  EXPECT_EQ(r.fault, Fault::kMisalignedAddress);
  r = run("  cp.async.ca.shared.global [%r1+8], [%rd1], 16;");
  EXPECT_EQ(r.fault, Fault::kMisalignedAddress);
  r = run("  cp.async.ca.shared.global [%r1], [%rd1+60], 8;");
  EXPECT_EQ(r.fault, Fault::kMisalignedAddress);
  r = run("  cp.async.ca.shared.global [%r1], [%rd1+64], 8;");
  EXPECT_EQ(r.fault, Fault::kIllegalAddress);
}

TEST(PtxIsa, CpAsyncBulkCompletesTransactionsOnTheMbarrier) {
  // Thread 0 expects 256 bytes on the mbarrier and starts a bulk copy of them into shared memory;
  // all 64 threads wait for the phase, then thread 0 copies the buffer back out in bulk (bulk_group).
  Program p(std::string(kHeader) + R"(
.visible .entry k(.param .u64 pin, .param .u64 pout, .param .u64 pout2)
{
  .reg .b32 %r<12>;
  .reg .b64 %rd<12>;
  .reg .pred %p<4>;
  .shared .align 8 .b64 bar;
  .shared .align 16 .b8 buf[256];
  ld.param.u64 %rd1, [pin];
  ld.param.u64 %rd2, [pout];
  ld.param.u64 %rd9, [pout2];
  mov.u32 %r0, %tid.x;
  setp.ne.u32 %p1, %r0, 0;
  @%p1 bra GO;
  mbarrier.init.shared::cta.b64 [bar], 1;
  mbarrier.arrive.expect_tx.shared::cta.b64 _, [bar], 256;
  mov.u32 %r1, buf;
  mov.u32 %r2, bar;
  cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r1], [%rd1], 256, [%r2];
GO:
  bar.sync 0;
WAIT:
  mbarrier.try_wait.parity.shared::cta.b64 %p2, [bar], 0;
  @!%p2 bra WAIT;
  mov.u32 %r1, buf;
  shl.b32 %r3, %r0, 2;
  add.u32 %r4, %r1, %r3;
  ld.shared.u32 %r5, [%r4];
  mul.wide.u32 %rd3, %r0, 4;
  add.s64 %rd4, %rd2, %rd3;
  st.global.u32 [%rd4], %r5;
  @%p1 bra DONE;
  mov.u32 %r6, 256;
  cp.async.bulk.global.shared::cta.bulk_group.L2::cache_hint [%rd9], [%r1], %r6, %rd9;
  cp.async.bulk.commit_group;
  cp.async.bulk.wait_group.read 0;
  cp.async.bulk.wait_group 0;
DONE:
  ret;
}
)");
  ASSERT_TRUE(p.ok()) << p.error();
  std::vector<uint32_t> in(64);
  for (uint32_t i = 0; i < 64; ++i) in[i] = 0xabc00000u + i * 17;
  const uint64_t src = p.buffer(in), out = p.buffer(256), out2 = p.buffer(256);
  const LaunchResult r = p.launch("k", {}, {64, 1, 1}, {src, out, out2});
  ASSERT_EQ(r.fault, Fault::kNone) << r.message;
  EXPECT_EQ(p.read<uint32_t>(out, 64), in);
  EXPECT_EQ(p.read<uint32_t>(out2, 64), in);
  EXPECT_EQ(r.globalBytesRead, 256u);
  EXPECT_EQ(r.globalBytesWritten, 256u + 256u);
  EXPECT_EQ(loadBytesInFlight(*p.module().find("k")), 256u);
}

// ---- extended precision, 24-bit, sad, dot products, set, prmt modes, nanosleep

TEST(PtxIsa, CarryChainsAddSubtractAndMultiply) {
  Program p(std::string(kHeader) + R"(
.visible .entry k(.param .u64 pout)
{
  .reg .b32 %r<30>;
  .reg .b64 %rd<12>;
  ld.param.u64 %rd1, [pout];
  add.cc.u32 %r1, 0xffffffff, 1;
  addc.cc.u32 %r2, 1, 0;
  addc.u32 %r3, 0, 0;
  sub.cc.u32 %r4, 0, 1;
  subc.cc.u32 %r5, 2, 0;
  subc.u32 %r6, 5, 1;
  mad.lo.cc.u32 %r7, 0xffffffff, 0xffffffff, 0xffffffff;
  madc.hi.cc.u32 %r8, 0xffffffff, 0xffffffff, 0;
  addc.u32 %r9, 0, 0;
  mad.hi.cc.s32 %r10, -2, 3, -1;
  addc.u32 %r11, 0, 0;
  add.cc.u64 %rd2, 0xffffffffffffffff, 2;
  addc.cc.u64 %rd3, 7, 0;
  subc.u64 %rd4, 0, 0;
  add.cc.s32 %r12, 1, 1;
  addc.u32 %r13, 0, 0;
  st.global.v4.u32 [%rd1], {%r1, %r2, %r3, %r4};
  st.global.v4.u32 [%rd1+16], {%r5, %r6, %r7, %r8};
  st.global.v4.u32 [%rd1+32], {%r9, %r10, %r11, %r13};
  st.global.v2.u64 [%rd1+48], {%rd2, %rd3};
  st.global.u64 [%rd1+64], %rd4;
  ret;
}
)");
  ASSERT_TRUE(p.ok()) << p.error();
  const uint64_t out = p.buffer(72);
  const LaunchResult r = p.launch("k", {}, {1, 1, 1}, {out});
  ASSERT_EQ(r.fault, Fault::kNone) << r.message;
  const auto v = p.read<uint32_t>(out, 12);
  EXPECT_EQ(v[0], 0u);            // 0xffffffff + 1: carry out
  EXPECT_EQ(v[1], 2u);            // 1 + 0 + carry
  EXPECT_EQ(v[2], 0u);            // no carry from 1 + 0 + 1
  EXPECT_EQ(v[3], 0xffffffffu);   // 0 - 1: borrow out
  EXPECT_EQ(v[4], 1u);            // 2 - (0 + borrow)
  EXPECT_EQ(v[5], 4u);            // 5 - (1 + no borrow)
  EXPECT_EQ(v[6], 0u);            // lo(0xfffffffe00000001) + 0xffffffff = 0x1_00000000: carry
  EXPECT_EQ(v[7], 0xffffffffu);   // hi 0xfffffffe + 0 + carry
  EXPECT_EQ(v[8], 0u);            // no carry from that
  EXPECT_EQ(v[9], 0xfffffffeu);   // hi(-6) = 0xffffffff, + 0xffffffff = 0x1_fffffffe: carry
  EXPECT_EQ(v[10], 1u);
  EXPECT_EQ(v[11], 0u);           // 1 + 1: no carry
  const auto q = p.read<uint64_t>(out + 48, 3);
  EXPECT_EQ(q[0], 1u);            // 2^64 - 1 + 2: carry out
  EXPECT_EQ(q[1], 8u);
  EXPECT_EQ(q[2], 0u);            // 0 - (0 + no borrow)
}

TEST(PtxIsa, TwentyFourBitSadDotProductsSetPrmtModesAndIsspacep) {
  struct Case {
    const char* body;
    uint64_t expected;
  };
  const Case cases[] = {
      {"mul24.lo.u32 %r1, 0x00ffffff, 0x00ffffff;", 0xfe000001u},
      {"mul24.hi.u32 %r1, 0x00ffffff, 0x00ffffff;", 0xfffffe00u},
      {"mul24.lo.u32 %r1, 0xab000003, 5;", 15},
      {"mul24.lo.s32 %r1, 0x00800000, 2;", 0xff000000u},
      {"mul24.hi.s32 %r1, 0x00800000, 2;", 0xffffff00u},
      {"mad24.lo.u32 %r1, 3, 5, 100;", 115},
      {"mad24.hi.u32 %r1, 0x00ffffff, 0x00ffffff, 0x1ff;", 0xffffffffu},
      {"sad.u32 %r1, 3, 10, 100;", 107},
      {"sad.s32 %r1, -3, 4, 1;", 8},
      {"sad.u16 %rs1, 0xfffe, 1, 0; cvt.u32.u16 %r1, %rs1;", 0xfffd},
      {"dp4a.u32.u32 %r1, 0x01020304, 0x01010101, 10;", 20},
      {"dp4a.s32.s32 %r1, 0xff02fe01, 0x03030303, 5;", 5},
      {"dp4a.s32.u32 %r1, 0x000000ff, 0x000000ff, 0;", 0xffffff01u},
      {"dp2a.lo.u32.u32 %r1, 0x00020003, 0x00000504, 0;", 22},
      {"dp2a.hi.u32.u32 %r1, 0x00020003, 0x05040000, 1;", 23},
      {"dp2a.lo.s32.s32 %r1, 0xffff0002, 0x0000ff03, 0;", 7},
      {"set.lt.u32.s32 %r1, -1, 0;", 0xffffffffu},
      {"set.lt.u32.u32 %r1, -1, 0;", 0},
      {"set.lt.f32.s32 %r1, -1, 0;", 0x3f800000u},
      {"set.gt.s32.f32 %r1, 0f3F800000, 0f40000000;", 0},
      {"setp.eq.u32 %p1, 0, 1; set.eq.and.u32.u32 %r1, 1, 1, %p1;", 0},
      {"setp.eq.u32 %p1, 0, 1; set.eq.and.u32.u32 %r1, 1, 1, !%p1;", 0xffffffffu},
      {"set.nan.u32.f64 %r1, 0d7FF8000000000000, 0d3FF0000000000000;", 0xffffffffu},
      {"prmt.b32.f4e %r1, 0x33221100, 0x77665544, 1;", 0x44332211u},
      {"prmt.b32.b4e %r1, 0x33221100, 0x77665544, 0;", 0x55667700u},
      {"prmt.b32.b4e %r1, 0x33221100, 0x77665544, 3;", 0x00112233u},
      {"prmt.b32.rc8 %r1, 0x33221100, 0x77665544, 2;", 0x22222222u},
      {"prmt.b32.ecl %r1, 0x33221100, 0x77665544, 1;", 0x33221111u},
      {"prmt.b32.ecr %r1, 0x33221100, 0x77665544, 2;", 0x22221100u},
      {"prmt.b32.rc16 %r1, 0x33221100, 0x77665544, 1;", 0x33223322u},
      {"prmt.b32.f4e %r1, 0x33221100, 0x77665544, 7;", 0x66554433u},  // only c's two low bits count
      {"mov.u64 %rd8, 16; cvta.shared.u64 %rd8, %rd8; isspacep.shared %p1, %rd8; selp.u32 %r1, 1, 0, %p1;", 1},
      {"mov.u64 %rd8, 16; cvta.shared.u64 %rd8, %rd8; isspacep.shared::cluster %p1, %rd8; selp.u32 %r1, 1, 0, %p1;", 1},
      {"mov.u64 %rd8, 16; cvta.shared.u64 %rd8, %rd8; isspacep.global %p1, %rd8; selp.u32 %r1, 1, 0, %p1;", 0},
      {"mov.u64 %rd8, 8; cvta.local.u64 %rd8, %rd8; isspacep.local %p1, %rd8; selp.u32 %r1, 1, 0, %p1;", 1},
      {"isspacep.global %p1, %rd2; selp.u32 %r1, 1, 0, %p1;", 1},  // the output pointer
      {"isspacep.shared::cta %p1, %rd2; selp.u32 %r1, 1, 0, %p1;", 0},
      {"isspacep.const %p1, %rd2; selp.u32 %r1, 1, 0, %p1;", 0},
  };
  for (const Case& c : cases) {
    const std::vector<uint64_t> out = runWords(std::string("  .reg .b16 %rs<2>;\n  ") + c.body + "\n  cvt.u64.u32 %rd7, %r1;\n", {0});
    ASSERT_EQ(out.size(), 1u) << c.body;
    EXPECT_EQ(out[0], c.expected) << c.body;
  }
}

TEST(PtxIsa, ExtendedFormsAreCheckedAtLoad) {
  auto error = [](const std::string& body) {
    Module m;
    std::string e;
    parseModule(std::string(kHeader) + ".visible .entry k()\n{\n  .reg .b32 %r<4>;\n" + body + "\n}\n", "bad.ptx", &m, &e);
    return e;
  };
  EXPECT_EQ(error("  addc.u16 %r0, %r1, %r2;"),
            "bad.ptx:7: 'addc.u16': extended-precision arithmetic takes .u32, .s32, .u64 or .s64");
  EXPECT_EQ(error("  madc.u32 %r0, %r1, %r2, %r3;"), "bad.ptx:7: 'madc.u32' needs .lo or .hi");
  EXPECT_EQ(error("  mul24.lo.u64 %r0, %r1, %r2;"), "bad.ptx:7: 'mul24.lo.u64': 24-bit multiplication takes .u32 or .s32");
  EXPECT_EQ(error("  dp4a.u32.u16 %r0, %r1, %r2, %r3;"), "bad.ptx:7: 'dp4a.u32.u16': the types are .u32 or .s32");
  EXPECT_EQ(error("  set.lt.u16.u32 %r0, %r1, %r2;"), "bad.ptx:7: 'set.lt.u16.u32': set's destination type is .u32, .s32 or .f32");
  EXPECT_EQ(error("  mul.lo.cc.u32 %r0, %r1, %r2;"), "bad.ptx:7: unsupported modifier '.cc' in 'mul.lo.cc.u32'");
}

TEST(PtxIsa, NanosleepAdvancesTheWarpsClock) {
  const std::vector<uint64_t> out = runWords(R"(
  mov.u64 %rd8, %clock64;
  nanosleep.u32 1000;
  mov.u64 %rd9, %clock64;
  sub.u64 %rd7, %rd9, %rd8;
)", {0, 0});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0], 1002u);  // the sleep and two instructions issued
  EXPECT_EQ(out[1], 1002u);
}

}  // namespace
}  // namespace mcsim::ptx::test
