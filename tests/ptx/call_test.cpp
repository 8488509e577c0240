// Device functions: .func with and without return values, call/call.uni with argument and
// return lists as nvcc writes them, nested and recursive calls, calls from divergent lanes, and
// what is refused at load (docs/ptx.md, "Device functions").
#include "tests/ptx/harness.h"

namespace mcsim::ptx::test {
namespace {

const char* kHeader = ".version 8.0\n.target sm_90\n.address_size 64\n";

// out[tid] = twice(tid) + 1 through a function with a return value, which calls one without
// (store through a pointer) before returning.
TEST(PtxCall, ReturnValuesAndNestedCalls) {
  Program p(std::string(kHeader) + R"(
.func store_word(.param .b64 store_word_param_0, .param .b32 store_word_param_1)
{
  .reg .b64 %rd<2>;
  .reg .b32 %r<2>;
  ld.param.u64 %rd1, [store_word_param_0];
  ld.param.u32 %r1, [store_word_param_1];
  st.global.u32 [%rd1], %r1;
  ret;
}
.func (.param .b32 func_retval0) twice_plus(.param .b32 twice_plus_param_0, .param .b64 twice_plus_param_1)
{
  .reg .b32 %r<4>;
  .reg .b64 %rd<2>;
  ld.param.u32 %r1, [twice_plus_param_0];
  ld.param.u64 %rd1, [twice_plus_param_1];
  shl.b32 %r2, %r1, 1;
  { // callseq 0, 0
  .param .b64 param0;
  st.param.b64 [param0+0], %rd1;
  .param .b32 param1;
  st.param.b32 [param1+0], %r1;
  call.uni
  store_word,
  (
  param0,
  param1
  );
  } // callseq 0
  add.s32 %r3, %r2, 1;
  st.param.b32 [func_retval0+0], %r3;
  ret;
}
.visible .entry k(.param .u64 pout, .param .u64 pside)
{
  .reg .b32 %r<4>;
  .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [pout];
  ld.param.u64 %rd2, [pside];
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd3, %r1, 4;
  add.s64 %rd4, %rd1, %rd3;
  add.s64 %rd5, %rd2, %rd3;
  { // callseq 1, 0
  .reg .b32 temp_param_reg;
  .param .b32 param0;
  st.param.b32 [param0+0], %r1;
  .param .b64 param1;
  st.param.b64 [param1+0], %rd5;
  .param .b32 retval0;
  call.uni (retval0), twice_plus, (param0, param1);
  ld.param.b32 %r2, [retval0+0];
  } // callseq 1
  st.global.u32 [%rd4], %r2;
  ret;
}
)");
  ASSERT_TRUE(p.ok()) << p.error();
  const uint64_t out = p.buffer(64 * 4), side = p.buffer(64 * 4);
  const LaunchResult r = p.launch("k", {}, {64, 1, 1}, {out, side});
  ASSERT_EQ(r.fault, Fault::kNone) << r.message;
  const auto v = p.read<uint32_t>(out, 64);
  const auto s = p.read<uint32_t>(side, 64);
  for (uint32_t t = 0; t < 64; ++t) {
    EXPECT_EQ(v[t], 2 * t + 1) << t;
    EXPECT_EQ(s[t], t) << t;
  }
}

// A recursive factorial, each lane to its own depth (the lanes of a warp diverge inside the
// recursion and reconverge as they return), with a local variable live across the recursive call.
const char* kFactorial = R"(
.func (.param .b64 func_retval0) fact(.param .b32 fact_param_0)
{
  .local .align 8 .b8 __local_depot0[8];
  .reg .pred %p<2>;
  .reg .b32 %r<4>;
  .reg .b64 %rd<6>;
  .reg .b64 %SPL;
  mov.u64 %SPL, __local_depot0;
  ld.param.u32 %r1, [fact_param_0];
  cvt.u64.u32 %rd1, %r1;
  st.local.u64 [%SPL], %rd1;
  setp.gt.u32 %p1, %r1, 1;
  mov.u64 %rd5, 1;
  @!%p1 bra $L_done;
  add.s32 %r2, %r1, -1;
  { // callseq 0, 0
  .param .b32 param0;
  st.param.b32 [param0+0], %r2;
  .param .b64 retval0;
  call (retval0), fact, (param0);
  ld.param.b64 %rd2, [retval0+0];
  } // callseq 0
  ld.local.u64 %rd3, [%SPL];
  cvt.u64.u32 %rd4, %r1;
  mul.lo.s64 %rd5, %rd2, %rd3;
$L_done:
  st.param.b64 [func_retval0+0], %rd5;
  ret;
}
.visible .entry k(.param .u64 pout)
{
  .reg .b32 %r<4>;
  .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [pout];
  mov.u32 %r1, %tid.x;
  rem.u32 %r2, %r1, 21;
  { // callseq 1, 0
  .param .b32 param0;
  st.param.b32 [param0+0], %r2;
  .param .b64 retval0;
  call.uni (retval0), fact, (param0);
  ld.param.b64 %rd2, [retval0+0];
  } // callseq 1
  mul.wide.u32 %rd3, %r1, 8;
  add.s64 %rd4, %rd1, %rd3;
  st.global.u64 [%rd4], %rd2;
  ret;
}
)";

TEST(PtxCall, RecursiveFactorial) {
  Program p(std::string(kHeader) + kFactorial);
  ASSERT_TRUE(p.ok()) << p.error();
  ASSERT_EQ(p.module().find("k")->callees.size(), 2u);
  EXPECT_TRUE(p.module().find("k")->callees[1].recursive);
  const uint64_t out = p.buffer(64 * 8);
  const LaunchResult r = p.launch("k", {2, 1, 1}, {64, 1, 1}, {out});
  ASSERT_EQ(r.fault, Fault::kNone) << r.message;
  const auto v = p.read<uint64_t>(out, 64);
  for (uint32_t t = 0; t < 64; ++t) {
    uint64_t f = 1;
    for (uint32_t i = 2; i <= t % 21; ++i) f *= i;
    EXPECT_EQ(v[t], f) << t;
  }
}

// Lanes of one warp call different functions (and some none), under a guard and in branches.
TEST(PtxCall, DivergentCalls) {
  Program p(std::string(kHeader) + R"(
.func (.param .b32 func_retval0) add100(.param .b32 add100_param_0)
{
  .reg .b32 %r<3>;
  ld.param.u32 %r1, [add100_param_0];
  add.s32 %r2, %r1, 100;
  st.param.b32 [func_retval0+0], %r2;
  ret;
}
.func (.param .b32 func_retval0) mul3(.param .b32 mul3_param_0)
{
  .reg .b32 %r<3>;
  .reg .pred %p<2>;
  ld.param.u32 %r1, [mul3_param_0];
  mul.lo.s32 %r2, %r1, 3;
  setp.lt.u32 %p1, %r1, 8;
  @%p1 bra $L_small;
  st.param.b32 [func_retval0+0], %r2;
  ret;
$L_small:
  add.s32 %r2, %r2, 1000;
  st.param.b32 [func_retval0+0], %r2;
  ret;
}
.visible .entry k(.param .u64 pout)
{
  .reg .b32 %r<6>;
  .reg .b64 %rd<5>;
  .reg .pred %p<3>;
  ld.param.u64 %rd1, [pout];
  mov.u32 %r1, %tid.x;
  mov.u32 %r3, 7;
  and.b32 %r2, %r1, 1;
  setp.eq.u32 %p1, %r2, 0;
  setp.lt.u32 %p2, %r1, 24;
  .param .b32 param0;
  .param .b32 retval0;
  st.param.b32 [param0+0], %r1;
  @%p1 bra $L_even;
  @%p2 call (retval0), mul3, (param0);
  @%p2 ld.param.b32 %r3, [retval0+0];
  bra.uni $L_join;
$L_even:
  call (retval0), add100, (param0);
  ld.param.b32 %r3, [retval0+0];
$L_join:
  mul.wide.u32 %rd3, %r1, 4;
  add.s64 %rd4, %rd1, %rd3;
  st.global.u32 [%rd4], %r3;
  ret;
}
)");
  ASSERT_TRUE(p.ok()) << p.error();
  const uint64_t out = p.buffer(40 * 4);
  const LaunchResult r = p.launch("k", {}, {40, 1, 1}, {out});
  ASSERT_EQ(r.fault, Fault::kNone) << r.message;
  const auto v = p.read<uint32_t>(out, 40);
  for (uint32_t t = 0; t < 40; ++t) {
    const uint32_t want = t % 2 == 0 ? t + 100 : t < 24 ? 3 * t + (t < 8 ? 1000 : 0) : 7;
    EXPECT_EQ(v[t], want) << t;
  }
}

TEST(PtxCall, RunawayRecursionIsAStackOverflow) {
  Program p(std::string(kHeader) + R"(
.func forever(.param .b32 forever_param_0)
{
  .reg .b32 %r<2>;
  ld.param.u32 %r1, [forever_param_0];
  { .param .b32 param0;
  st.param.b32 [param0+0], %r1;
  call.uni forever, (param0); }
  ret;
}
.visible .entry k()
{
  .param .b32 param0;
  st.param.b32 [param0+0], 1;
  call.uni forever, (param0);
  ret;
}
)");
  ASSERT_TRUE(p.ok()) << p.error();
  const LaunchResult r = p.launch("k", {}, {32, 1, 1}, {});
  EXPECT_EQ(r.fault, Fault::kIllegalAddress);
  EXPECT_NE(r.message.find("call stack overflow"), std::string::npos) << r.message;
}

std::string refusal(const std::string& body, bool lenient = false) {
  Module m;
  std::string error;
  if (parseModule(std::string(kHeader) + body, "calls.ptx", &m, &error, lenient)) {
    if (lenient && m.refused.count("k") != 0) return m.refused.at("k");
    return "(accepted)";
  }
  return error;
}

TEST(PtxCall, RefusedAtLoad) {
  // A function declared (.extern) but defined nowhere, named with the call's line.
  EXPECT_EQ(refusal(R"(
.extern .func (.param .b32 func_retval0) elsewhere(.param .b32 p);
.visible .entry k()
{
  .param .b32 param0;
  .param .b32 retval0;
  call.uni (retval0), elsewhere, (param0);
  ret;
}
)"),
            "calls.ptx:10: call to 'elsewhere', which is declared but not defined in this module");
  // The same in a lenient parse: the kernel is refused, the module loads.
  EXPECT_EQ(refusal(R"(
.extern .func elsewhere();
.visible .entry k()
{
  call.uni elsewhere;
  ret;
}
)", true),
            "calls.ptx:8: call to 'elsewhere', which is declared but not defined in this module");
  // Never declared.
  EXPECT_EQ(refusal(R"(
.visible .entry k()
{
  call.uni nowhere;
  ret;
}
)"),
            "calls.ptx:7: call to undeclared function 'nowhere'");
  // An indirect call needs a prototype or a list of targets, matching its arguments.
  EXPECT_EQ(refusal(R"(
.visible .entry k(.param .u64 f)
{
  .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [f];
  call %rd1;
  ret;
}
)"),
            "calls.ptx:9: an indirect call needs a .callprototype or .calltargets label after its arguments");
  EXPECT_EQ(refusal(R"(
.visible .entry k(.param .u64 f)
{
  .reg .b64 %rd<2>;
  .param .b32 param0;
  ld.param.u64 %rd1, [f];
  prototype_0 : .callprototype ()_ ();
  call %rd1, (param0), prototype_0;
  ret;
}
)"),
            "calls.ptx:11: the call passes 1 arguments and takes 0 return values, but prototype 'prototype_0' has 0 and 0");
  EXPECT_EQ(refusal(R"(
.visible .entry k(.param .u64 f)
{
  .reg .b32 %r<2>;
  prototype_0 : .callprototype ()_ ();
  call %r1, prototype_0;
  ret;
}
)"),
            "calls.ptx:9: an indirect call's address '%r1' must be a 64-bit register");
  EXPECT_EQ(refusal(R"(
.visible .entry k(.param .u64 f)
{
  .reg .b64 %rd<2>;
  call %rd1, nothing;
  ret;
}
)"),
            "calls.ptx:8: 'nothing' is not a .callprototype or .calltargets label of this function, nor a call table");
}

// Indirect calls (PTX ISA, "Control Flow Instructions: call", its indirect forms): a table of
// function addresses as a .global initialiser, an address taken with mov, a .callprototype and a
// .calltargets list; the lanes of one warp call different functions, and some none.
const char* kIndirect = R"(
.func (.param .b32 func_retval0) add100(.param .b32 add100_param_0)
{
  .reg .b32 %r<3>;
  ld.param.u32 %r1, [add100_param_0];
  add.s32 %r2, %r1, 100;
  st.param.b32 [func_retval0+0], %r2;
  ret;
}
.func (.param .b32 func_retval0) mul3(.param .b32 mul3_param_0)
{
  .reg .b32 %r<3>;
  ld.param.u32 %r1, [mul3_param_0];
  mul.lo.s32 %r2, %r1, 3;
  st.param.b32 [func_retval0+0], %r2;
  ret;
}
.func (.param .b32 func_retval0) square(.param .b32 square_param_0)
{
  .reg .b32 %r<3>;
  ld.param.u32 %r1, [square_param_0];
  mul.lo.s32 %r2, %r1, %r1;
  st.param.b32 [func_retval0+0], %r2;
  ret;
}
.func (.param .b32 func_retval0) unused(.param .b32 unused_param_0)
{
  st.param.b32 [func_retval0+0], 0;
  ret;
}
.extern .func (.param .b32 func_retval0) elsewhere(.param .b32 elsewhere_param_0);
.global .align 8 .u64 table[3] = {add100, mul3, elsewhere};
// out[t] = table[t % 2](t) for t < 20, square(t) through .calltargets for 20 <= t < 28, t above.
.visible .entry k(.param .u64 pout)
{
  .reg .b32 %r<8>;
  .reg .b64 %rd<8>;
  .reg .pred %p<3>;
  ld.param.u64 %rd1, [pout];
  mov.u32 %r1, %tid.x;
  mov.u32 %r3, %r1;
  setp.ge.u32 %p1, %r1, 20;
  setp.ge.u32 %p2, %r1, 28;
  .param .b32 param0;
  .param .b32 retval0;
  st.param.b32 [param0+0], %r1;
  @%p2 bra $L_join;
  @%p1 bra $L_targets;
  and.b32 %r2, %r1, 1;
  mul.wide.u32 %rd2, %r2, 8;
  mov.u64 %rd3, table;
  add.s64 %rd4, %rd3, %rd2;
  ld.global.u64 %rd5, [%rd4];
  prototype_0 : .callprototype (.param .b32 _) _ (.param .b32 _);
  call (retval0), %rd5, (param0), prototype_0;
  ld.param.b32 %r3, [retval0+0];
  bra.uni $L_join;
$L_targets:
  mov.u64 %rd6, square;
  targets_0 : .calltargets square;
  call.uni (retval0), %rd6, (param0), targets_0;
  ld.param.b32 %r3, [retval0+0];
$L_join:
  mul.wide.u32 %rd2, %r1, 4;
  add.s64 %rd4, %rd1, %rd2;
  st.global.u32 [%rd4], %r3;
  ret;
}
// Calls the address in `f`: whatever the host passes.
.visible .entry call_address(.param .u64 f)
{
  .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [f];
  prototype_0 : .callprototype ()_ ();
  call %rd1, prototype_0;
  ret;
}
// The same, the call table as the list of targets.
.visible .entry call_address_table(.param .u64 f)
{
  .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [f];
  call %rd1, table;
  ret;
}
// Calls table[2], the address of a function declared but defined nowhere.
.visible .entry call_elsewhere()
{
  .reg .b64 %rd<3>;
  .reg .b32 %r<2>;
  .param .b32 param0;
  .param .b32 retval0;
  st.param.b32 [param0+0], 1;
  mov.u64 %rd1, table;
  ld.global.u64 %rd2, [%rd1+16];
  prototype_0 : .callprototype (.param .b32 _) _ (.param .b32 _);
  call (retval0), %rd2, (param0), prototype_0;
  ret;
}
)";

TEST(PtxCall, IndirectCalls) {
  Program p(std::string(kHeader) + kIndirect);
  ASSERT_TRUE(p.ok()) << p.error();
  // The kernel links the functions whose addresses the module takes, not `unused`.
  const Function* k = p.module().find("k");
  ASSERT_NE(k, nullptr);
  std::vector<std::string> callees;
  for (const Callee& c : k->callees) callees.push_back(c.name);
  EXPECT_EQ(callees, (std::vector<std::string>{"k", "add100", "mul3", "square"}));
  EXPECT_EQ(k->indirect.size(), 3u);
  const uint64_t out = p.buffer(40 * 4);
  const LaunchResult r = p.launch("k", {}, {40, 1, 1}, {out});
  ASSERT_EQ(r.fault, Fault::kNone) << r.message;
  const auto v = p.read<uint32_t>(out, 40);
  for (uint32_t t = 0; t < 40; ++t) {
    const uint32_t want = t >= 28 ? t : t >= 20 ? t * t : t % 2 == 0 ? t + 100 : 3 * t;
    EXPECT_EQ(v[t], want) << t;
  }
}

// Calling an address that is not a function's: the PTX ISA leaves it undefined; mcsim stops the
// kernel with an illegal address (CUDA_ERROR_ILLEGAL_ADDRESS on the node) that says which.
TEST(PtxCall, IndirectCallToANonFunctionIsAnIllegalAddress) {
  Program p(std::string(kHeader) + kIndirect);
  ASSERT_TRUE(p.ok()) << p.error();
  const uint64_t data = p.buffer(64);
  for (uint64_t bad : {uint64_t{0}, data, kFunctionWindow + 1, kFunctionWindow + 4096 * kFunctionStride}) {
    const LaunchResult r = p.launch(bad == data ? "call_address_table" : "call_address", {}, {32, 1, 1}, {bad});
    EXPECT_EQ(r.fault, Fault::kIllegalAddress) << bad;
    EXPECT_NE(r.message.find("which is not a function's address"), std::string::npos) << r.message;
    EXPECT_NE(r.message.find("in 'call' at test.ptx:"), std::string::npos) << r.message;
  }
  // The address of a function declared (.extern) but defined nowhere.
  const LaunchResult r = p.launch("call_elsewhere", {}, {1, 1, 1}, {});
  EXPECT_EQ(r.fault, Fault::kIllegalAddress);
  EXPECT_NE(r.message.find("the address of 'elsewhere', which is declared but not defined in this module"), std::string::npos)
      << r.message;
}

// Malformed calls and declarations are refused with a message, whatever is cut off where.
TEST(PtxCall, MalformedCallsAreRefused) {
  const std::string decl = ".func (.param .b32 r) f(.param .b32 x)\n{\n  st.param.b32 [r], 1;\n  ret;\n}\n";
  const std::string head = decl + ".visible .entry k()\n{\n  .reg .b32 %r<2>;\n  .param .b32 a;\n  .param .b32 b;\n";
  for (const char* tail : {"call", "call (", "call (b", "call (b)", "call (b), ", "call (b), f", "call (b), f, (",
                                  "call (b), f, (a", "call (b), f, (a,", "call (b), f, (%r0);", "call (b), f, (a), %r1;",
                                  "call.wobbly f;", "call (b) f, (a);", "call (nothing), f, (a);",
                                  "call %rd1, (a), proto;", "proto: .callprototype", "proto: .callprototype (",
                                  "proto: .callprototype (.param", "proto: .callprototype (.param .b32 _) _ (.param .b32 x);",
                                  "proto: .calltargets nothing;", "proto: .calltargets f"}) {
    Module m;
    std::string error;
    EXPECT_FALSE(parseModule(std::string(kHeader) + head + "  " + tail, "cut.ptx", &m, &error)) << tail;
    EXPECT_EQ(error.rfind("cut.ptx:", 0), 0u) << tail << ": " << error;
  }
  for (const char* text : {".func (", ".func (.param .b32 r", ".func (.param .b32 r) ", ".func f(.param .b32 x) {"}) {
    Module m;
    std::string error;
    EXPECT_FALSE(parseModule(std::string(kHeader) + text, "cut.ptx", &m, &error)) << text;
  }
}

// malloc and free as nvcc calls them (docs/ptx.md, "malloc and free"), over a 1 KiB heap in
// global memory: 16-byte aligned blocks, each after a 16-byte header, from offset 64 (the heap's
// header); freed neighbours merge and a block that fits is split; NULL when nothing fits; a free
// of what malloc did not return stops the kernel; no heap placed: NULL.
const char* kHeapKernels = R"(
.extern .func (.param .b64 func_retval0) malloc(.param .b64 malloc_param_0);
.extern .func free(.param .b64 free_param_0);
.visible .entry alloc(.param .u64 pout, .param .u64 psize)
{
  .reg .b64 %rd<8>;
  .reg .b32 %r<2>;
  ld.param.u64 %rd1, [pout];
  ld.param.u64 %rd2, [psize];
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd3, %r1, 8;
  add.s64 %rd4, %rd1, %rd3;
  { .param .b64 param0;
  st.param.b64 [param0+0], %rd2;
  .param .b64 retval0;
  call.uni (retval0), malloc, (param0);
  ld.param.b64 %rd5, [retval0+0]; }
  st.global.u64 [%rd4], %rd5;
  ret;
}
.visible .entry release(.param .u64 pptr)
{
  .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [pptr];
  { .param .b64 param0;
  st.param.b64 [param0+0], %rd1;
  call.uni free, (param0); }
  ret;
}
)";

TEST(PtxCall, MallocAndFreeKeepTheHeapInDeviceMemory) {
  Program p(std::string(kHeader) + kHeapKernels, "heap.ptx");
  ASSERT_TRUE(p.ok()) << p.error();
  ASSERT_GE(p.module().heapVariable, 0);
  const uint64_t out = p.buffer(32 * 8);
  // No heap placed yet: NULL.
  ASSERT_EQ(p.launch("alloc", {}, {1, 1, 1}, {out, 8}).fault, Fault::kNone);
  EXPECT_EQ(p.read<uint64_t>(out, 1)[0], 0u);
  const uint64_t heap = p.buffer(1024);
  const uint64_t where[2] = {heap, 1024};
  std::memcpy(p.executor().moduleGlobals().data() + p.module().heapVariable, where, sizeof where);
  // Four blocks of 100 bytes (112 with the rounding), lanes in ascending order.
  ASSERT_EQ(p.launch("alloc", {}, {4, 1, 1}, {out, 100}).fault, Fault::kNone);
  auto v = p.read<uint64_t>(out, 4);
  for (uint64_t i = 0; i < 4; ++i) EXPECT_EQ(v[i], heap + 80 + 128 * i) << i;
  // Freeing the middle two: a block of 200 takes their merged room (240 bytes), and leaves 16.
  ASSERT_EQ(p.launch("release", {}, {1, 1, 1}, {heap + 208}).fault, Fault::kNone);
  ASSERT_EQ(p.launch("release", {}, {1, 1, 1}, {heap + 336}).fault, Fault::kNone);
  ASSERT_EQ(p.launch("alloc", {}, {1, 1, 1}, {out, 200}).fault, Fault::kNone);
  EXPECT_EQ(p.read<uint64_t>(out, 1)[0], heap + 208);
  // 600 bytes fit nowhere (above the last block 432 are left): NULL; 16 take the rest of the merge.
  ASSERT_EQ(p.launch("alloc", {}, {1, 1, 1}, {out, 600}).fault, Fault::kNone);
  EXPECT_EQ(p.read<uint64_t>(out, 1)[0], 0u);
  ASSERT_EQ(p.launch("alloc", {}, {1, 1, 1}, {out, 16}).fault, Fault::kNone);
  EXPECT_EQ(p.read<uint64_t>(out, 1)[0], heap + 432);
  // Freeing the last block gives its room back above the others: now 500 fit.
  ASSERT_EQ(p.launch("release", {}, {1, 1, 1}, {heap + 464}).fault, Fault::kNone);
  ASSERT_EQ(p.launch("alloc", {}, {1, 1, 1}, {out, 500}).fault, Fault::kNone);
  EXPECT_EQ(p.read<uint64_t>(out, 1)[0], heap + 464);
  // free(NULL) is nothing; a pointer malloc did not return, or one freed already, is an illegal address.
  EXPECT_EQ(p.launch("release", {}, {1, 1, 1}, {0}).fault, Fault::kNone);
  LaunchResult r = p.launch("release", {}, {1, 1, 1}, {heap + 100});
  EXPECT_EQ(r.fault, Fault::kIllegalAddress);
  EXPECT_NE(r.message.find("not an allocation of the device heap's that is live"), std::string::npos) << r.message;
  ASSERT_EQ(p.launch("release", {}, {1, 1, 1}, {heap + 80}).fault, Fault::kNone);
  r = p.launch("release", {}, {1, 1, 1}, {heap + 80});
  EXPECT_EQ(r.fault, Fault::kIllegalAddress) << r.message;
  // A program that writes over a block's header: malloc says so rather than hand out garbage.
  const uint64_t junk = 0x1234;
  std::memcpy(p.memory().host(heap + 72), &junk, 8);  // the header of the (free) block at heap + 64
  r = p.launch("alloc", {}, {1, 1, 1}, {out, 8});
  EXPECT_EQ(r.fault, Fault::kIllegalAddress);
  EXPECT_NE(r.message.find("is overwritten"), std::string::npos) << r.message;
}

}  // namespace
}  // namespace mcsim::ptx::test
