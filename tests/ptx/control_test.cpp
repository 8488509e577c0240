// Control flow (divergence, reconvergence, exit), barriers, warp-level instructions, special
// registers, kernel-stopping faults and determinism.
#include "tests/ptx/harness.h"

namespace mcsim::ptx::test {
namespace {

const char* kHeader = ".version 8.0\n.target sm_90\n.address_size 64\n";

TEST(PtxControl, BarrierOrdersSharedMemoryAcrossWarps) {
  // Each thread writes its id, waits, then reads the id its mirror image wrote (another warp).
  Program p(std::string(kHeader) + R"(
.visible .entry k(.param .u64 pout)
{
  .reg .b32 %r<8>;
  .reg .b64 %rd<4>;
  .shared .align 4 .b32 s[256];
  ld.param.u64 %rd1, [pout];
  mov.u32 %r0, %tid.x;
  shl.b32 %r1, %r0, 2;
  mov.u32 %r2, s;
  add.u32 %r3, %r2, %r1;
  st.shared.u32 [%r3], %r0;
  barrier.sync 0;
  sub.u32 %r4, 255, %r0;
  shl.b32 %r4, %r4, 2;
  add.u32 %r4, %r2, %r4;
  ld.shared.u32 %r5, [%r4];
  mul.wide.u32 %rd2, %r0, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r5;
  ret;
}
)");
  ASSERT_TRUE(p.ok()) << p.error();
  const uint64_t out = p.buffer(256 * 4);
  const LaunchResult r = p.launch("k", {}, {256, 1, 1}, {out});
  ASSERT_EQ(r.fault, Fault::kNone) << r.message;
  const auto v = p.read<uint32_t>(out, 256);
  for (uint32_t t = 0; t < 256; ++t) ASSERT_EQ(v[t], 255 - t) << t;
}

TEST(PtxControl, DivergentBranchesReconverge) {
  // Odd lanes take one path, even lanes another; both then run the common tail together, which
  // a ballot after the join shows (all 32 lanes active), and a data-dependent loop diverges.
  Program p(std::string(kHeader) + R"(
.visible .entry k(.param .u64 pout)
{
  .reg .b32 %r<10>;
  .reg .b64 %rd<4>;
  .reg .pred %p<4>;
  ld.param.u64 %rd1, [pout];
  mov.u32 %r0, %laneid;
  and.b32 %r1, %r0, 1;
  setp.eq.u32 %p1, %r1, 1;
  @%p1 bra ODD;
  mov.u32 %r2, 100;
  activemask.b32 %r7;
  bra.uni JOIN;
ODD:
  mov.u32 %r2, 200;
  activemask.b32 %r7;
JOIN:
  activemask.b32 %r3;
  // loop: sum 0..lane-1
  mov.u32 %r4, 0;
  mov.u32 %r5, 0;
LOOP:
  setp.ge.u32 %p2, %r5, %r0;
  @%p2 bra END;
  add.u32 %r4, %r4, %r5;
  add.u32 %r5, %r5, 1;
  bra LOOP;
END:
  activemask.b32 %r6;
  add.u32 %r2, %r2, %r4;
  mul.wide.u32 %rd2, %r0, 16;
  add.s64 %rd3, %rd1, %rd2;
  st.global.v4.u32 [%rd3], {%r2, %r3, %r6, %r7};
  ret;
}
)");
  ASSERT_TRUE(p.ok()) << p.error();
  const uint64_t out = p.buffer(32 * 16);
  const LaunchResult r = p.launch("k", {}, {32, 1, 1}, {out});
  ASSERT_EQ(r.fault, Fault::kNone) << r.message;
  const auto v = p.read<uint32_t>(out, 32 * 4);
  for (uint32_t l = 0; l < 32; ++l) {
    EXPECT_EQ(v[4 * l], (l & 1 ? 200u : 100u) + l * (l - 1) / 2) << l;
    EXPECT_EQ(v[4 * l + 1], 0xffffffffu) << l;  // reconverged after the if/else
    EXPECT_EQ(v[4 * l + 2], 0xffffffffu) << l;  // and after the loop
    EXPECT_EQ(v[4 * l + 3], l & 1 ? 0xaaaaaaaau : 0x55555555u) << l;  // inside each arm
  }
}

TEST(PtxControl, ExitedThreadsDoNotHoldABarrier) {
  Program p(std::string(kHeader) + R"(
.visible .entry k(.param .u64 pout)
{
  .reg .b32 %r<4>;
  .reg .b64 %rd<4>;
  .reg .pred %p<2>;
  .shared .align 4 .u32 n;
  ld.param.u64 %rd1, [pout];
  mov.u32 %r0, %tid.x;
  setp.ge.u32 %p1, %r0, 40;
  @%p1 exit;
  atom.shared.add.u32 %r1, [n], 1;
  bar.sync 0;
  ld.shared.u32 %r2, [n];
  mul.wide.u32 %rd2, %r0, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r2;
  ret;
}
)");
  ASSERT_TRUE(p.ok()) << p.error();
  const uint64_t out = p.buffer(128 * 4);
  const LaunchResult r = p.launch("k", {}, {128, 1, 1}, {out});
  ASSERT_EQ(r.fault, Fault::kNone) << r.message;
  const auto v = p.read<uint32_t>(out, 128);
  for (uint32_t t = 0; t < 40; ++t) EXPECT_EQ(v[t], 40u) << t;
  EXPECT_EQ(v[40], 0u);
}

TEST(PtxControl, ShuffleModesAndClamps) {
  const auto out = runWords(
      "mov.u32 %r0, %laneid;\n"
      "shfl.sync.down.b32 %r1|%p1, %r0, 3, 31, -1;\n"
      "shfl.sync.up.b32 %r2, %r0, 2, 0, -1;\n"
      "shfl.sync.bfly.b32 %r3, %r0, 5, 31, -1;\n"
      "shfl.sync.idx.b32 %r4, %r0, 7, 0x101f, -1;\n"  // 16-lane segments (segmask 0x10): lane 7 of each
      "selp.b32 %r5, 1, 0, %p1;\n"
      "shl.b32 %r1, %r1, 8;\n or.b32 %r1, %r1, %r5;\n"
      "shl.b32 %r3, %r3, 8;\n or.b32 %r3, %r3, %r4;\n"
      "mov.b64 %rd7, {%r1, %r3};\n"
      "cvt.u64.u32 %rd8, %r2;\n shl.b64 %rd8, %rd8, 24;\n xor.b64 %rd7, %rd7, %rd8;",
      std::vector<uint64_t>(32, 0));
  for (uint32_t l = 0; l < 32; ++l) {
    const uint32_t down = l + 3 <= 31 ? l + 3 : l, valid = l + 3 <= 31;
    const uint32_t up = l >= 2 ? l - 2 : l;
    const uint32_t bfly = l ^ 5, idx = (l & 16) | 7;
    const uint64_t expect = pair((down << 8) | valid, (bfly << 8) | idx) ^ (uint64_t{up} << 24);
    EXPECT_EQ(out[l], expect) << l;
  }
}

TEST(PtxControl, VotesOverTheActiveLanes) {
  const auto out = runWords(
      "mov.u32 %r0, %laneid;\n"
      "setp.lt.u32 %p1, %r0, 4;\n"
      "vote.sync.ballot.b32 %r1, %p1, -1;\n"
      "vote.sync.any.pred %p2, %p1, -1;\n"
      "vote.sync.all.pred %p3, %p1, -1;\n"
      "vote.sync.all.pred %p4, !%p2, -1;\n"
      "vote.sync.uni.pred %p5, %p2, -1;\n"
      "selp.b32 %r2, 1, 0, %p2;\n selp.b32 %r3, 2, 0, %p3;\n selp.b32 %r4, 4, 0, %p4;\n selp.b32 %r5, 8, 0, %p5;\n"
      "or.b32 %r2, %r2, %r3;\n or.b32 %r2, %r2, %r4;\n or.b32 %r2, %r2, %r5;\n mov.b64 %rd7, {%r1, %r2};",
      std::vector<uint64_t>(32, 0));
  for (uint32_t l = 0; l < 32; ++l) EXPECT_EQ(out[l], pair(0xf, 1 | 8)) << l;
}

TEST(PtxControl, SpecialRegistersDescribeTheGrid) {
  Program p(std::string(kHeader) + R"(
.visible .entry k(.param .u64 pout)
{
  .reg .b32 %r<16>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [pout];
  mov.u32 %r0, %tid.x;
  mov.u32 %r1, %tid.y;
  mov.u32 %r2, %ntid.x;
  mov.u32 %r3, %ctaid.x;
  mov.u32 %r4, %ctaid.y;
  mov.u32 %r5, %nctaid.x;
  mov.u32 %r6, %laneid;
  mov.u32 %r7, %warpid;
  mad.lo.u32 %r8, %r1, %r2, %r0;
  mov.u32 %r9, %ntid.y;
  mul.lo.u32 %r10, %r2, %r9;
  mad.lo.u32 %r11, %r4, %r5, %r3;
  mad.lo.u32 %r12, %r11, %r10, %r8;
  mul.wide.u32 %rd2, %r12, 16;
  add.s64 %rd3, %rd1, %rd2;
  st.global.v4.u32 [%rd3], {%r8, %r6, %r7, %r11};
  ret;
}
)");
  ASSERT_TRUE(p.ok()) << p.error();
  const uint32_t blocks = 6, threads = 48;
  const uint64_t out = p.buffer(blocks * threads * 16);
  const LaunchResult r = p.launch("k", {3, 2, 1}, {16, 3, 1}, {out});
  ASSERT_EQ(r.fault, Fault::kNone) << r.message;
  const auto v = p.read<uint32_t>(out, blocks * threads * 4);
  for (uint32_t b = 0; b < blocks; ++b) {
    for (uint32_t t = 0; t < threads; ++t) {
      const uint32_t* e = &v[(b * threads + t) * 4];
      EXPECT_EQ(e[0], t);
      EXPECT_EQ(e[1], t % 32);
      EXPECT_EQ(e[2], t / 32);
      EXPECT_EQ(e[3], b);
    }
  }
}

TEST(PtxControl, TrapDeadlockAndTimeoutStopTheKernel) {
  Program p(std::string(kHeader) + R"(
.visible .entry trapper()
{
  .reg .b32 %r<2>;
  .reg .pred %p<2>;
  mov.u32 %r0, %tid.x;
  setp.eq.u32 %p1, %r0, 5;
  @%p1 trap;
  ret;
}
.visible .entry stuck()
{
  .reg .b32 %r<2>;
  .reg .pred %p<2>;
  mov.u32 %r0, %tid.x;
  setp.lt.u32 %p1, %r0, 32;
  @%p1 bar.sync 1, 64;
  ret;
}
.visible .entry forever()
{
LOOP:
  bra LOOP;
}
)", "stop.ptx");
  ASSERT_TRUE(p.ok()) << p.error();
  LaunchResult r = p.launch("trapper", {}, {32, 1, 1}, {});
  EXPECT_EQ(r.fault, Fault::kTrap);
  EXPECT_NE(r.message.find("thread (5,0,0): trap in 'trap' at stop.ptx:11"), std::string::npos) << r.message;
  r = p.launch("stuck", {}, {64, 1, 1}, {});
  EXPECT_EQ(r.fault, Fault::kBarrierDeadlock) << r.message;
  r = p.launch("forever", {}, {32, 1, 1}, {}, 0, /*maxWarpInstructions=*/10000);
  EXPECT_EQ(r.fault, Fault::kTimeout) << r.message;
}

TEST(PtxControl, TwoRunsAreIdentical) {
  // Atomics from many warps and blocks, clock values and float sums in atomic order: all of it
  // must repeat exactly.
  const std::string text = std::string(kHeader) + R"(
.visible .entry k(.param .u64 pout)
{
  .reg .b32 %r<8>;
  .reg .b64 %rd<8>;
  .reg .f32 %f<4>;
  ld.param.u64 %rd1, [pout];
  mov.u32 %r0, %tid.x;
  mov.u32 %r1, %ctaid.x;
  mad.lo.u32 %r2, %r1, 256, %r0;
  cvt.rn.f32.u32 %f1, %r2;
  mul.f32 %f1, %f1, 0f3DCCCCCD;
  red.global.add.f32 [%rd1], %f1;
  atom.global.add.u32 %r3, [%rd1+4], 1;
  mov.u64 %rd2, %clock64;
  mul.wide.u32 %rd3, %r2, 8;
  add.s64 %rd4, %rd1, %rd3;
  cvt.u64.u32 %rd5, %r3;
  shl.b64 %rd5, %rd5, 32;
  add.s64 %rd5, %rd5, %rd2;
  st.global.u64 [%rd4+8], %rd5;
  ret;
}
)";
  std::vector<uint8_t> results[2];
  LaunchResult runs[2];
  for (int i = 0; i < 2; ++i) {
    Program p(text);
    ASSERT_TRUE(p.ok()) << p.error();
    const uint64_t out = p.buffer(8 + 8 * 1024);
    runs[i] = p.launch("k", {4, 1, 1}, {256, 1, 1}, {out});
    ASSERT_EQ(runs[i].fault, Fault::kNone) << runs[i].message;
    results[i] = p.read<uint8_t>(out, 8 + 8 * 1024);
  }
  EXPECT_EQ(results[0], results[1]);
  EXPECT_EQ(runs[0].warpInstructions, runs[1].warpInstructions);
  EXPECT_EQ(runs[0].threadInstructions, runs[1].threadInstructions);
  EXPECT_GT(runs[0].warpInstructions, 0u);
}

}  // namespace
}  // namespace mcsim::ptx::test

namespace mcsim::ptx::test {
namespace {

TEST(PtxControl, WarpSyncAfterDivergenceSeesTheOtherLanesStores) {
  // __syncwarp as nvcc emits it (bar.warp.sync): lanes that went two ways store to shared memory,
  // meet at the barrier, and each reads its neighbour's store.
  Program p(std::string(kHeader) + R"(
.visible .entry k(.param .u64 pout)
{
  .reg .b32 %r<10>;
  .reg .b64 %rd<4>;
  .reg .pred %p<2>;
  .shared .align 4 .b32 s[32];
  ld.param.u64 %rd1, [pout];
  mov.u32 %r1, %laneid;
  shl.b32 %r2, %r1, 2;
  mov.u32 %r5, s;
  add.u32 %r6, %r5, %r2;
  and.b32 %r3, %r1, 1;
  setp.eq.u32 %p1, %r3, 1;
  @%p1 bra ODD;
  mul.lo.u32 %r4, %r1, 3;
  st.shared.u32 [%r6], %r4;
  bra.uni SYNC;
ODD:
  mul.lo.u32 %r4, %r1, 5;
  st.shared.u32 [%r6], %r4;
SYNC:
  bar.warp.sync -1;
  xor.b32 %r7, %r1, 1;
  shl.b32 %r8, %r7, 2;
  add.u32 %r8, %r5, %r8;
  ld.shared.u32 %r9, [%r8];
  mul.wide.u32 %rd2, %r1, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r9;
  ret;
}
)");
  ASSERT_TRUE(p.ok()) << p.error();
  const uint64_t out = p.buffer(32 * 4);
  const LaunchResult r = p.launch("k", {}, {32, 1, 1}, {out});
  ASSERT_EQ(r.fault, Fault::kNone) << r.message;
  const auto v = p.read<uint32_t>(out, 32);
  for (uint32_t l = 0; l < 32; ++l) {
    const uint32_t n = l ^ 1u;
    EXPECT_EQ(v[l], n * ((n & 1u) ? 5u : 3u)) << l;
  }
}

TEST(PtxControl, BarrierRedReducesAPredicateOverTheBlock) {
  // __syncthreads_or as nvcc writes it (NCCL's PTX), then .and and .popc: 96 threads, three warps.
  Program p(std::string(kHeader) + R"(
.visible .entry k(.param .u64 pout)
{
  .reg .b32 %r<12>;
  .reg .b64 %rd<4>;
  .reg .pred %p<4>;
  ld.param.u64 %rd1, [pout];
  mov.u32 %r1, %tid.x;
  setp.eq.u32 %p1, %r1, 37;
  mov.u32 %r2, 0;
  mov.u32 %r3, 96;
  { .reg .pred p; barrier.red.or.pred p, %r2, %r3, %p1; selp.s32 %r4, 1, 0, p; }
  setp.ne.u32 %p2, %r1, 5;
  bar.red.and.pred %p3, 1, %p2;
  selp.s32 %r5, 1, 0, %p3;
  and.b32 %r6, %r1, 1;
  setp.eq.u32 %p2, %r6, 1;
  bar.red.popc.u32 %r7, 2, !%p2;
  shl.b32 %r5, %r5, 8;
  shl.b32 %r7, %r7, 16;
  or.b32 %r8, %r4, %r5;
  or.b32 %r8, %r8, %r7;
  mul.wide.u32 %rd2, %r1, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r8;
  ret;
}
)");
  ASSERT_TRUE(p.ok()) << p.error();
  const uint64_t out = p.buffer(96 * 4);
  const LaunchResult r = p.launch("k", {}, {96, 1, 1}, {out});
  ASSERT_EQ(r.fault, Fault::kNone) << r.message;
  const auto v = p.read<uint32_t>(out, 96);
  // or: one thread's predicate is true; and: thread 5's is false; popc: the 48 even threads.
  for (uint32_t t = 0; t < 96; ++t) EXPECT_EQ(v[t], 1u | (0u << 8) | (48u << 16)) << t;
}

TEST(PtxControl, ArriveLetsAProducerWarpGoOn) {
  // Warp 0 produces and arrives at barrier 1 without waiting; warp 1 waits there, then reads.
  std::string text = std::string(kHeader) + R"(
.visible .entry k(.param .u64 pout)
{
  .reg .b32 %r<8>;
  .reg .b64 %rd<4>;
  .reg .pred %p<2>;
  .shared .align 4 .b32 s[32];
  ld.param.u64 %rd1, [pout];
  mov.u32 %r0, %tid.x;
  mov.u32 %r1, %laneid;
  shl.b32 %r2, %r1, 2;
  mov.u32 %r5, s;
  add.u32 %r6, %r5, %r2;
  setp.ge.u32 %p1, %r0, 32;
  @%p1 bra CONSUMER;
  mul.lo.u32 %r3, %r1, 7;
  st.shared.u32 [%r6], %r3;
  bar.arrive 1, 64;
  mov.u32 %r4, %lanemask_lt;
  bra.uni OUT;
CONSUMER:
  bar.sync 1, 64;
  ld.shared.u32 %r4, [%r6];
OUT:
  mul.wide.u32 %rd2, %r0, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r4;
  ret;
}
)";
  Program q(text);
  ASSERT_TRUE(q.ok()) << q.error();
  const uint64_t out = q.buffer(64 * 4);
  const LaunchResult r = q.launch("k", {}, {64, 1, 1}, {out});
  ASSERT_EQ(r.fault, Fault::kNone) << r.message;
  const auto v = q.read<uint32_t>(out, 64);
  for (uint32_t l = 0; l < 32; ++l) {
    EXPECT_EQ(v[l], (1u << l) - 1) << l;  // %lanemask_lt
    EXPECT_EQ(v[32 + l], l * 7) << l;     // what warp 0 wrote before it arrived
  }
}

TEST(PtxControl, ParametersThroughAGenericAddress) {
  Program p(std::string(kHeader) + R"(
.visible .entry k(.param .u64 pout, .param .align 4 .b8 pstruct[8])
{
  .reg .b32 %r<4>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [pout];
  mov.u64 %rd2, pstruct;
  cvta.param.u64 %rd3, %rd2;
  ld.u32 %r1, [%rd3+4];
  st.global.u32 [%rd1], %r1;
  ret;
}
)");
  ASSERT_TRUE(p.ok()) << p.error();
  const uint64_t out = p.buffer(4);
  const LaunchResult r = p.launch("k", {}, {1, 1, 1}, {out, 0x1234567800000000ull});
  ASSERT_EQ(r.fault, Fault::kNone) << r.message;
  EXPECT_EQ(p.read<uint32_t>(out, 1)[0], 0x12345678u);
}

}  // namespace
}  // namespace mcsim::ptx::test

namespace mcsim::ptx::test {
namespace {

TEST(PtxControl, BadLaunchesAreRefusedWithTheReason) {
  Program p(std::string(kHeader) + ".visible .entry k(.param .u32 x)\n{\n  .shared .align 4 .b8 s[1024];\n  ret;\n}\n");
  ASSERT_TRUE(p.ok()) << p.error();
  LaunchResult r = p.launch("nope", {}, {32, 1, 1}, {0});
  EXPECT_EQ(r.fault, Fault::kInvalidLaunch);
  EXPECT_EQ(r.message, "module 'test.ptx' has no kernel 'nope'");
  r = p.launch("k", {}, {2048, 1, 1}, {0});
  EXPECT_EQ(r.fault, Fault::kInvalidLaunch);
  EXPECT_EQ(r.message, "kernel 'k': invalid grid or block dimensions");
  r = p.launch("k", {}, {32, 1, 1}, {});
  EXPECT_EQ(r.message, "kernel 'k' takes 4 bytes of parameters, not 0");
  r = p.launch("k", {}, {32, 1, 1}, {0}, /*dynamicShared=*/232448);
  EXPECT_EQ(r.message, "kernel 'k' needs 233472 bytes of shared memory a block, more than 232448");
  EXPECT_EQ(p.launch("k", {}, {32, 1, 1}, {0}, 232448 - 1024).fault, Fault::kNone);
}

}  // namespace
}  // namespace mcsim::ptx::test

namespace mcsim::ptx::test {
namespace {

// brx.idx (PTX ISA, "Control Flow Instructions: brx.idx"): each lane goes to entry `index` of the
// .branchtargets list (labels defined after the list, one of them twice); lanes that pick
// different entries diverge and reconverge after the switch (the ballot there sees all 32); a
// false guard falls through; .uni is accepted. The same code in a device function (its list
// relocated with it).
const char* kSwitch = R"(
.func (.param .b32 func_retval0) pick(.param .b32 pick_param_0)
{
  .reg .b32 %r<4>;
  ld.param.u32 %r1, [pick_param_0];
  ts: .branchtargets C0, C1, C2, C1;
  brx.idx %r1, ts;
C0:
  mov.u32 %r2, 1000;
  bra.uni J;
C1:
  mov.u32 %r2, 2000;
  bra.uni J;
C2:
  mov.u32 %r2, 3000;
J:
  add.u32 %r3, %r2, %r1;
  st.param.b32 [func_retval0+0], %r3;
  ret;
}
.visible .entry k(.param .u64 pout, .param .u64 pmask, .param .u64 pfn)
{
  .reg .b32 %r<12>;
  .reg .b64 %rd<8>;
  .reg .pred %p<3>;
  ld.param.u64 %rd1, [pout];
  ld.param.u64 %rd2, [pmask];
  ld.param.u64 %rd5, [pfn];
  mov.u32 %r0, %tid.x;
  rem.u32 %r1, %r0, 5;
  mov.u32 %r2, 7;
  setp.ne.u32 %p1, %r1, 4;
  sw: .branchtargets L0, L1, L2, L3;
  @%p1 brx.idx %r1, sw;
  bra.uni JOIN;
L2:
  add.u32 %r2, %r2, 20;
L3:
  add.u32 %r2, %r2, 300;
  bra.uni JOIN;
L0:
  mov.u32 %r2, 0;
  bra.uni JOIN;
L1:
  mov.u32 %r2, 1;
JOIN:
  activemask.b32 %r5;
  mul.wide.u32 %rd3, %r0, 4;
  add.s64 %rd4, %rd1, %rd3;
  st.global.u32 [%rd4], %r2;
  add.s64 %rd4, %rd2, %rd3;
  st.global.u32 [%rd4], %r5;
  and.b32 %r6, %r0, 3;
  { .param .b32 param0;
  st.param.b32 [param0+0], %r6;
  .param .b32 retval0;
  call (retval0), pick, (param0);
  ld.param.b32 %r7, [retval0+0]; }
  mov.u32 %r8, 0;
  uni: .branchtargets U0;
  brx.idx.uni %r8, uni;
U0:
  add.s64 %rd6, %rd5, %rd3;
  st.global.u32 [%rd6], %r7;
  ret;
}
)";

TEST(PtxControl, BranchIndexedGoesToEachLanesEntry) {
  Program p(std::string(kHeader) + kSwitch, "switch.ptx");
  ASSERT_TRUE(p.ok()) << p.error();
  const uint64_t out = p.buffer(64 * 4), mask = p.buffer(64 * 4), fn = p.buffer(64 * 4);
  const LaunchResult r = p.launch("k", {}, {64, 1, 1}, {out, mask, fn});
  ASSERT_EQ(r.fault, Fault::kNone) << r.message;
  const auto v = p.read<uint32_t>(out, 64), m = p.read<uint32_t>(mask, 64), f = p.read<uint32_t>(fn, 64);
  const uint32_t want[5] = {0, 1, 327, 307, 7};  // L2 falls through into L3; index 4 is guarded off
  for (uint32_t t = 0; t < 64; ++t) {
    EXPECT_EQ(v[t], want[t % 5]) << t;
    EXPECT_EQ(m[t], 0xffffffffu) << t;
    const uint32_t i = t & 3;
    EXPECT_EQ(f[t], (i == 0 ? 1000u : i == 2 ? 3000u : 2000u) + i) << t;
  }
}

// The ISA leaves an index past the list undefined: mcsim stops the kernel and says why.
TEST(PtxControl, BranchIndexPastTheListStopsTheKernel) {
  Program p(std::string(kHeader) + R"(
.visible .entry k()
{
  .reg .b32 %r<2>;
  mov.u32 %r0, %tid.x;
  ts: .branchtargets A, B;
  brx.idx %r0, ts;
A:
B:
  ret;
}
)", "past.ptx");
  ASSERT_TRUE(p.ok()) << p.error();
  EXPECT_EQ(p.launch("k", {}, {2, 1, 1}, {}).fault, Fault::kNone);
  const LaunchResult r = p.launch("k", {}, {32, 1, 1}, {});
  EXPECT_EQ(r.fault, Fault::kInvalidPc);
  EXPECT_NE(r.message.find("thread (2,0,0): brx.idx index 2 is outside its .branchtargets list of 2 labels in 'brx.idx' at past.ptx:10"),
            std::string::npos)
      << r.message;
}

std::string loadError(const std::string& body) {
  Module m;
  std::string error;
  if (parseModule(std::string(kHeader) + body, "b.ptx", &m, &error)) return "(accepted)";
  return error;
}

TEST(PtxControl, BadBranchTargetListsAreRefusedAtLoad) {
  // The list must be defined before the brx.idx that uses it (PTX ISA, brx.idx).
  EXPECT_EQ(loadError(".visible .entry k()\n{\n.reg .b32 %r<2>;\nbrx.idx %r1, ts;\nts: .branchtargets A;\nA:\nret;\n}\n"),
            "b.ptx:7: 'ts' is not a .branchtargets list defined before this brx.idx");
  EXPECT_EQ(loadError(".visible .entry k()\n{\n.reg .b32 %r<2>;\nts: .branchtargets A, Z;\nbrx.idx %r1, ts;\nA:\nret;\n}\n"),
            "b.ptx:7: undefined label 'Z' in .branchtargets");
  EXPECT_EQ(loadError(".visible .entry k()\n{\n.reg .b32 %r<2>;\nts: .branchtargets A;\nbrx %r1, ts;\nA:\nret;\n}\n"),
            "b.ptx:8: 'brx' needs .idx");
  EXPECT_EQ(loadError(".visible .entry k()\n{\n.reg .b32 %r<2>;\nts: .branchtargets A;\nbrx.idx 1, ts;\nA:\nret;\n}\n"),
            "b.ptx:8: 'brx.idx' needs an index register and the label of a .branchtargets list");
  EXPECT_EQ(loadError(".visible .entry k()\n{\n.reg .b32 %r<2>;\nts: .branchtargets A;\nts: .branchtargets A;\nA:\nret;\n}\n"),
            "b.ptx:8: label 'ts' is defined twice");
}

}  // namespace
}  // namespace mcsim::ptx::test
