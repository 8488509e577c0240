// Scheduling: resident blocks that wait for each other through memory (a grid-wide barrier, a
// spin lock), spin parking, a kernel that can never finish, and running a launch piecewise
// (Executor::start / advance), as the node does.
#include <cstdio>

#include "tests/common/unparked_spin_ptx.h"
#include "tests/ptx/harness.h"

namespace mcsim::ptx::test {
namespace {

const char* kHeader = ".version 8.0\n.target sm_90\n.address_size 64\n";

// Thread 0 of each block counts itself in and spins until `n` blocks have; then the block's
// threads pass a barrier and thread 0 writes what it saw to out[ctaid].
const char* kGridBarrier = R"(
.visible .entry gridbar(.param .u64 pcount, .param .u64 pout, .param .u32 pn)
{
  .reg .b32 %r<8>;
  .reg .b64 %rd<8>;
  .reg .pred %p<4>;
  ld.param.u64 %rd1, [pcount];
  ld.param.u64 %rd2, [pout];
  ld.param.u32 %r1, [pn];
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %tid.x;
  setp.ne.u32 %p1, %r3, 0;
  @%p1 bra WAIT;
  atom.global.add.u32 %r4, [%rd1], 1;
SPIN:
  ld.volatile.global.u32 %r5, [%rd1];
  setp.lt.u32 %p2, %r5, %r1;
  @%p2 bra SPIN;
WAIT:
  bar.sync 0;
  @%p1 bra DONE;
  ld.volatile.global.u32 %r6, [%rd1];
  mul.wide.u32 %rd3, %r2, 4;
  add.s64 %rd4, %rd2, %rd3;
  st.global.u32 [%rd4], %r6;
DONE:
  ret;
}
)";

struct Launched {
  LaunchResult result;
  RunState last = RunState::kProgress;
  int pieces = 0;
};

// Runs `kernel` piecewise, `budget` warp instructions at a time, as the node does.
Launched runPiecewise(Program& p, const std::string& kernel, Dim3 grid, Dim3 block, const std::vector<uint64_t>& args,
                      uint64_t residentBlocks, uint64_t budget) {
  LaunchConfig cfg;
  cfg.grid = grid;
  cfg.block = block;
  cfg.residentBlocks = residentBlocks;
  cfg.maxWarpInstructions = 100000000;
  std::vector<const void*> ptrs;
  for (const uint64_t& a : args) ptrs.push_back(&a);
  cfg.params = packParams(*p.module().find(kernel), ptrs.data());
  Executor::RunPtr run = p.executor().start(kernel, cfg);
  Launched l;
  do {
    l.last = Executor::advance(*run, budget);
    ++l.pieces;
  } while (l.last == RunState::kProgress);
  l.result = Executor::result(*run);
  return l;
}

TEST(PtxSchedule, GridBarrierAcrossResidentBlocks) {
  Program p(std::string(kHeader) + kGridBarrier);
  ASSERT_TRUE(p.ok()) << p.error();
  const uint32_t blocks = 12;
  const uint64_t count = p.buffer(4), out = p.buffer(blocks * 4);
  const LaunchResult r = p.launch("gridbar", {blocks, 1, 1}, {96, 1, 1}, {count, out, blocks});
  ASSERT_EQ(r.fault, Fault::kNone) << r.message;
  for (uint32_t v : p.read<uint32_t>(out, blocks)) EXPECT_EQ(v, blocks);
}

TEST(PtxSchedule, GridBarrierRunPiecewiseWithLimitedResidency) {
  // As many blocks as are resident: they all meet; the run comes back in pieces of its budget.
  Program p(std::string(kHeader) + kGridBarrier);
  ASSERT_TRUE(p.ok()) << p.error();
  const uint32_t blocks = 6;
  const uint64_t count = p.buffer(4), out = p.buffer(blocks * 4);
  const Launched l = runPiecewise(p, "gridbar", {blocks, 1, 1}, {64, 1, 1}, {count, out, blocks}, blocks, 1000);
  ASSERT_EQ(l.last, RunState::kFinished) << l.result.message;
  EXPECT_GT(l.pieces, 2);
  for (uint32_t v : p.read<uint32_t>(out, blocks)) EXPECT_EQ(v, blocks);
}

TEST(PtxSchedule, BlocksBeyondResidencyStartAsOthersFinish) {
  // 40 blocks, 4 resident at a time, run in pieces of 100 warp instructions: every block runs.
  Program p(std::string(kHeader) + R"(
.visible .entry k(.param .u64 pout)
{
  .reg .b32 %r<4>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [pout];
  mov.u32 %r1, %ctaid.x;
  mul.wide.u32 %rd2, %r1, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r1;
  ret;
}
)");
  ASSERT_TRUE(p.ok()) << p.error();
  const uint64_t out = p.buffer(40 * 4);
  const Launched l = runPiecewise(p, "k", {40, 1, 1}, {32, 1, 1}, {out}, 4, 100);
  ASSERT_EQ(l.last, RunState::kFinished) << l.result.message;
  const auto v = p.read<uint32_t>(out, 40);
  for (uint32_t b = 0; b < 40; ++b) EXPECT_EQ(v[b], b);
}

TEST(PtxSchedule, GridBarrierLargerThanResidencyHangsWithAReport) {
  // 8 blocks of which 4 fit: the 4 resident ones wait for blocks that can never start.
  Program p(std::string(kHeader) + kGridBarrier, "gridbar.ptx");
  ASSERT_TRUE(p.ok()) << p.error();
  const uint64_t count = p.buffer(4), out = p.buffer(8 * 4);
  const Launched l = runPiecewise(p, "gridbar", {8, 1, 1}, {64, 1, 1}, {count, out, 8}, 4, ~uint64_t{0});
  ASSERT_EQ(l.last, RunState::kWaiting);
  EXPECT_EQ(l.result.fault, Fault::kNone);
  // And the whole launch fails so, naming the word, its value and what the warp expects.
  LaunchConfig cfg;
  cfg.grid = {8, 1, 1};
  cfg.block = {64, 1, 1};
  cfg.residentBlocks = 4;
  const uint64_t c2 = p.buffer(4), n = 8;
  const void* args[] = {&c2, &out, &n};
  cfg.params = packParams(*p.module().find("gridbar"), args);
  const LaunchResult r = p.executor().launch("gridbar", cfg);
  ASSERT_EQ(r.fault, Fault::kTimeout);
  EXPECT_NE(r.message.find("kernel 'gridbar' block (0,0,0) thread (0,0,0) waits on the global word at"), std::string::npos)
      << r.message;
  EXPECT_NE(r.message.find("it holds 0x4, the warp compares it with 0x8"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("block (3,0,0)"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("gridbar.ptx:"), std::string::npos) << r.message;
  EXPECT_EQ(p.read<uint32_t>(c2, 1)[0], 4u);
}

TEST(PtxSchedule, CasSpinLockExcludesAcrossBlocks) {
  // Lane 0 of each block takes a lock with atom.cas, increments a counter non-atomically after a
  // delay (so that a block's turn can end inside the critical section) and releases it.
  Program p(std::string(kHeader) + R"(
.visible .entry lock(.param .u64 plock, .param .u64 pcounter)
{
  .reg .b32 %r<12>;
  .reg .b64 %rd<4>;
  .reg .pred %p<6>;
  ld.param.u64 %rd1, [plock];
  ld.param.u64 %rd2, [pcounter];
  mov.u32 %r1, %tid.x;
  setp.ne.u32 %p1, %r1, 0;
  @%p1 bra DONE;
  mov.u32 %r9, 0;
LOCK:
  atom.global.cas.b32 %r5, [%rd1], 0, 1;
  setp.ne.u32 %p2, %r5, 0;
  @%p2 bra LOCK;
  ld.volatile.global.u32 %r6, [%rd2];
  mov.u32 %r7, 0;
DELAY:
  add.u32 %r7, %r7, 1;
  setp.lt.u32 %p3, %r7, 300;
  @%p3 bra DELAY;
  add.u32 %r6, %r6, 1;
  st.volatile.global.u32 [%rd2], %r6;
  atom.global.exch.b32 %r8, [%rd1], 0;
  add.u32 %r9, %r9, 1;
  setp.lt.u32 %p4, %r9, 200;
  @%p4 bra LOCK;
DONE:
  ret;
}
)");
  ASSERT_TRUE(p.ok()) << p.error();
  const uint64_t lock = p.buffer(4), counter = p.buffer(4);
  const LaunchResult r = p.launch("lock", {16, 1, 1}, {32, 1, 1}, {lock, counter});
  ASSERT_EQ(r.fault, Fault::kNone) << r.message;
  EXPECT_EQ(p.read<uint32_t>(counter, 1)[0], 16u * 200u);
  EXPECT_EQ(p.read<uint32_t>(lock, 1)[0], 0u);
}

TEST(PtxSchedule, SpinningWarpIsParkedNotRun) {
  // A block spins on a word nobody writes: the run stops at once as waiting, having run a few
  // quanta, not the instruction limit.
  Program p(std::string(kHeader) + kGridBarrier);
  ASSERT_TRUE(p.ok()) << p.error();
  const uint64_t count = p.buffer(4), out = p.buffer(4);
  const Launched l = runPiecewise(p, "gridbar", {1, 1, 1}, {32, 1, 1}, {count, out, 2}, 1, ~uint64_t{0});
  ASSERT_EQ(l.last, RunState::kWaiting);
  EXPECT_LT(l.result.warpInstructions, 20000u);
}

TEST(PtxSchedule, WakeResumesAParkedRun) {
  // What another agent (kernel, copy, host) does to memory releases a parked run.
  Program p(std::string(kHeader) + kGridBarrier);
  ASSERT_TRUE(p.ok()) << p.error();
  const uint64_t count = p.buffer(4), out = p.buffer(4);
  LaunchConfig cfg;
  cfg.grid = {1, 1, 1};
  cfg.block = {32, 1, 1};
  const uint64_t n = 2;
  const void* args[] = {&count, &out, &n};
  cfg.params = packParams(*p.module().find("gridbar"), args);
  Executor::RunPtr run = p.executor().start("gridbar", cfg);
  ASSERT_EQ(Executor::advance(*run, ~uint64_t{0}), RunState::kWaiting);
  EXPECT_TRUE(Executor::wroteGlobal(*run));  // the count's increment, before the spin
  EXPECT_NE(Executor::describeWait(*run).find("it holds 0x1, the warp compares it with 0x2"), std::string::npos)
      << Executor::describeWait(*run);
  // Still waiting when woken without a change; done once the word has the value.
  Executor::wake(*run);
  ASSERT_EQ(Executor::advance(*run, ~uint64_t{0}), RunState::kWaiting);
  EXPECT_FALSE(Executor::wroteGlobal(*run));
  const uint32_t two = 2;
  std::memcpy(p.memory().host(count), &two, 4);
  Executor::wake(*run);
  ASSERT_EQ(Executor::advance(*run, ~uint64_t{0}), RunState::kFinished) << Executor::result(*run).message;
  EXPECT_EQ(p.read<uint32_t>(out, 1)[0], 2u);
}

// A warp parked on a 16-byte load watches all 16 bytes: LL128's flag is the second 8 bytes of
// its lane's `ld.volatile.global.v2.u64`, and a write of the flag alone (the data in the first 8
// bytes unchanged) must release the warp. (The watch kept only the first 8 bytes of an access
// before 2026-11-29, so such a warp stayed parked for ever.)
TEST(PtxSchedule, WakeSeesAChangeInTheSecondHalfOfA16ByteLoad) {
  Program p(std::string(kHeader) + R"(
.visible .entry flag16(.param .u64 pline, .param .u64 pout)
{
  .reg .b64 %rd<8>;
  .reg .pred %p<2>;
  ld.param.u64 %rd1, [pline];
  ld.param.u64 %rd2, [pout];
SPIN:
  ld.volatile.global.v2.u64 {%rd3, %rd4}, [%rd1];
  setp.ne.u64 %p1, %rd4, 7;
  @%p1 bra SPIN;
  st.global.u64 [%rd2], %rd3;
  ret;
}
)");
  ASSERT_TRUE(p.ok()) << p.error();
  const uint64_t line = p.buffer(std::vector<uint64_t>{42, 0}), out = p.buffer(8);
  LaunchConfig cfg;
  cfg.grid = {1, 1, 1};
  cfg.block = {1, 1, 1};
  const void* args[] = {&line, &out};
  cfg.params = packParams(*p.module().find("flag16"), args);
  Executor::RunPtr run = p.executor().start("flag16", cfg);
  ASSERT_EQ(Executor::advance(*run, ~uint64_t{0}), RunState::kWaiting);
  // The report names the element the setp compares: the flag, 8 bytes into the line.
  char where[64];
  std::snprintf(where, sizeof where, "word at 0x%llx: it holds 0x0, the warp compares it with 0x7",
                static_cast<unsigned long long>(line + 8));
  EXPECT_NE(Executor::describeWait(*run).find(where), std::string::npos) << Executor::describeWait(*run);
  // The flag (the second 8 bytes) arrives; the data (the first 8) stays as it was.
  const uint64_t flag = 7;
  std::memcpy(p.memory().host(line) + 8, &flag, 8);
  Executor::wake(*run);
  ASSERT_EQ(Executor::advance(*run, ~uint64_t{0}), RunState::kFinished) << Executor::describeWait(*run);
  EXPECT_EQ(p.read<uint64_t>(out, 1)[0], 42u);
}

TEST(PtxSchedule, RefusedLaunchFaultsOnFirstAdvance) {
  Program p(std::string(kHeader) + kGridBarrier);
  ASSERT_TRUE(p.ok()) << p.error();
  LaunchConfig cfg;
  Executor::RunPtr run = p.executor().start("nosuch", cfg);
  EXPECT_EQ(Executor::advance(*run, 100), RunState::kFaulted);
  EXPECT_EQ(Executor::result(*run).fault, Fault::kInvalidLaunch);
}

// Blocks beyond residency that finish at different times, the first in its first round without
// writing anything (it used to read as "every warp waits", and a node would wait for ever): every
// block runs exactly once, whatever the residency and the slice size.
TEST(PtxSchedule, EveryBlockRunsOnceWhenBlocksFinishAtDifferentTimes) {
  Program p(std::string(kHeader) + R"(
.visible .entry uneven(.param .u64 pcount)
{
  .reg .pred %p<3>;
  .reg .b32 %r<8>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [pcount];
  mov.u32 %r1, %ctaid.x;
  setp.eq.u32 %p1, %r1, 0;
  @%p1 bra $L_done;
  mul.lo.u32 %r2, %r1, 37;
  rem.u32 %r2, %r2, 11;
  mul.lo.u32 %r2, %r2, 50;
  mov.u32 %r3, 0;
$L_loop:
  add.u32 %r3, %r3, 1;
  setp.lt.u32 %p2, %r3, %r2;
  @%p2 bra $L_loop;
  mul.wide.u32 %rd2, %r1, 4;
  add.s64 %rd3, %rd1, %rd2;
  atom.global.add.u32 %r4, [%rd3], 1;
$L_done:
  ret;
}
)");
  ASSERT_TRUE(p.ok()) << p.error();
  const uint32_t blocks = 23;
  for (const uint64_t resident : {1, 2, 5}) {
    for (const uint64_t budget : {7, 1000, 1000000}) {
      const uint64_t count = p.buffer(blocks * 4);
      const Launched l = runPiecewise(p, "uneven", {blocks, 1, 1}, {64, 1, 1}, {count}, resident, budget);
      ASSERT_EQ(l.last, RunState::kFinished) << "resident " << resident << " budget " << budget;
      ASSERT_EQ(l.result.fault, Fault::kNone) << l.result.message;
      const auto c = p.read<uint32_t>(count, blocks);
      for (uint32_t b = 0; b < blocks; ++b) EXPECT_EQ(c[b], b == 0 ? 0u : 64u) << "block " << b << " resident " << resident;
    }
  }
  // A grid that writes nothing at all.
  const uint64_t none = p.buffer(blocks * 4);
  const Launched l = runPiecewise(p, "uneven", {1, 1, 1}, {64, 1, 1}, {none}, 1, 1000);
  EXPECT_EQ(l.last, RunState::kFinished);
}

// A kernel run alone (Executor::launch) that spins while it writes (an iteration counter: never
// parked) on a word nothing else can change fails as a kernel that only waits does: kTimeout with
// a report of the word, the value and the PTX line, long before its instruction limit. Before,
// it ran until maxWarpInstructions (or for ever without one).
TEST(PtxSchedule, AKernelAloneThatSpinsWhileItWritesFailsWithAReport) {
  Program p(cutest::unparkedSpinPtx("spin", "release"), "spin.ptx");
  ASSERT_TRUE(p.ok()) << p.error();
  const uint64_t buf = p.buffer(16), out = p.buffer(16);
  const uint64_t limit = 200000000;
  const LaunchResult r = p.launch("spin", {}, {1, 1, 1}, {buf, out, 7}, 0, limit);
  ASSERT_EQ(r.fault, Fault::kTimeout) << r.message;
  EXPECT_LT(r.warpInstructions, limit / 2);
  EXPECT_NE(r.message.find("spins"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("it holds 0x0, the warp compares it with 0x7"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("spin.ptx:"), std::string::npos) << r.message;
  // The same kernel finds its flag already set: it finishes and copies the payload.
  const uint64_t set = p.buffer(std::vector<uint64_t>{7, cutest::kUnparkedSpinPayload});
  const LaunchResult done = p.launch("spin", {}, {1, 1, 1}, {set, out, 7}, 0, limit);
  ASSERT_EQ(done.fault, Fault::kNone) << done.message;
  EXPECT_EQ(p.read<uint64_t>(out, 1)[0], cutest::kUnparkedSpinPayload);
}

// A memory that times fences (the node's does: fabric/node_ptx.cpp): each fence it is offered
// gets a ticket, recorded with its scope, and completes when the test says.
class FencingMemory : public FlatMemory {
 public:
  uint64_t fence(bool system) override {
    scopes.push_back(system);
    return scopes.size();
  }
  bool fenceDone(uint64_t ticket) override { return ticket <= completed; }
  std::vector<bool> scopes;  // the fences offered, .sys true, in order
  uint64_t completed = 0;    // tickets up to this one have completed
};

// A warp that makes a fence at .gpu or .sys scope after writing global memory waits for it to
// complete when the memory times fences, and the piece ends after that round, so that its caller
// times the traffic before the fence and the fence before the warps run on. A fence with no
// write of the warp's own since its last one is not offered (a loop that polls with a fence in
// it still parks as a spin), nor is a CTA-scoped one. The other warps run on meanwhile.
TEST(PtxSchedule, AWarpWaitsOnAFenceTheMemoryTimes) {
  const std::string text = std::string(kHeader) + R"(
.visible .entry k(.param .u64 out) {
  .reg .u64 %rd<3>;
  .reg .u32 %r<2>;
  .reg .pred %p<2>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  setp.ne.u32 %p1, %r1, 0;
  @%p1 bra OTHER;
  st.global.u32 [%rd1], 1;
  fence.cta;
  fence.sc.sys;
  fence.sc.sys;
  st.global.u32 [%rd1+4], 2;
  fence.acq_rel.gpu;
  st.global.u32 [%rd1+12], 4;
  ret;
OTHER:
  setp.ne.u32 %p1, %r1, 32;
  @%p1 bra DONE;
  fence.sc.gpu;
  st.global.u32 [%rd1+8], 3;
DONE:
  ret;
}
)";
  FencingMemory mem;
  Program p(text, "fence.ptx", &mem);
  ASSERT_TRUE(p.ok()) << p.error();
  const uint64_t out = mem.allocate(16);
  LaunchConfig cfg;
  cfg.block = {64, 1, 1};
  const void* args[] = {&out};
  cfg.params = packParams(*p.module().find("k"), args);
  Executor::RunPtr run = p.executor().start("k", cfg);
  const auto word = [&](int i) {
    uint32_t v = 0;
    std::memcpy(&v, mem.host(out) + 4 * i, 4);
    return v;
  };
  // Warp 0 stores and waits on its .sys fence; warp 1's fence follows no write of its own.
  ASSERT_EQ(Executor::advance(*run, ~uint64_t{0}), RunState::kProgress);
  EXPECT_EQ(mem.scopes, std::vector<bool>{true});
  EXPECT_EQ(word(0), 1u);
  EXPECT_EQ(word(1), 0u);
  EXPECT_EQ(word(2), 3u);
  // Until the fence completes, nothing can run.
  ASSERT_EQ(Executor::advance(*run, ~uint64_t{0}), RunState::kWaiting);
  EXPECT_EQ(word(1), 0u);
  EXPECT_TRUE(Executor::describeWait(*run).empty()) << Executor::describeWait(*run);  // not a spin
  mem.completed = 1;
  // The second .sys fence has nothing new to order; the .gpu one after the next store has.
  ASSERT_EQ(Executor::advance(*run, ~uint64_t{0}), RunState::kProgress);
  EXPECT_EQ(mem.scopes, (std::vector<bool>{true, false}));
  EXPECT_EQ(word(1), 2u);
  EXPECT_EQ(word(3), 0u);
  mem.completed = 2;
  ASSERT_EQ(Executor::advance(*run, ~uint64_t{0}), RunState::kFinished) << Executor::result(*run).message;
  EXPECT_EQ(word(3), 4u);
}

// %globaltimer on a caller's clock (LaunchConfig::warpInstructionPs, Executor::setClock): the
// clock at the piece's start, plus the issue time of the kernel's instructions since, plus the
// warp's sleeps. Without a rate it is the launch's time plus the warp's instructions, as before.
TEST(PtxSchedule, GlobalTimerReadsTheCallersClock) {
  const std::string text = std::string(kHeader) + R"(
.visible .entry k(.param .u64 out) {
  .reg .u64 %rd<6>;
  ld.param.u64 %rd1, [out];
  mov.u64 %rd2, %globaltimer;
  nanosleep.u32 1000;
  mov.u64 %rd3, %globaltimer;
  st.global.u64 [%rd1], %rd2;
  st.global.u64 [%rd1+8], %rd3;
  ret;
}
)";
  Program p(text, "timer.ptx");
  ASSERT_TRUE(p.ok()) << p.error();
  const uint64_t out = p.buffer(16);
  LaunchConfig cfg;
  cfg.globalTimerNs = 5000;
  cfg.warpInstructionPs = 2000;  // 2 ns an instruction
  const void* args[] = {&out};
  cfg.params = packParams(*p.module().find("k"), args);
  Executor::RunPtr run = p.executor().start("k", cfg);
  Executor::setClock(*run, 100000);
  ASSERT_EQ(Executor::advance(*run, ~uint64_t{0}), RunState::kFinished) << Executor::result(*run).message;
  // The first read is the piece's second instruction, the second its fourth, after the sleep.
  EXPECT_EQ(p.read<uint64_t>(out, 2), (std::vector<uint64_t>{100000 + 2 * 2, 100000 + 4 * 2 + 1000}));

  cfg.warpInstructionPs = 0;
  const LaunchResult r = p.launch("k", {}, {1, 1, 1}, {out});
  ASSERT_EQ(r.fault, Fault::kNone) << r.message;
  EXPECT_EQ(p.read<uint64_t>(out, 2), (std::vector<uint64_t>{2, 4 + 1000}));  // launch() starts at 0
}

}  // namespace
}  // namespace mcsim::ptx::test
