// Linking relocatable PTX (ptx/linker.h, docs/ptx.md "Linking relocatable PTX"): extern functions,
// globals and shared variables resolved across objects, .weak yielding to .visible, each object's
// own symbols renamed apart, function tables declared but not defined, and the errors for a
// symbol defined nowhere or twice. The linked text runs on the executor.
#include "ptx/linker.h"

#include <algorithm>

#include "tests/ptx/harness.h"

namespace mcsim::ptx::test {
namespace {

const char* kHeader = ".version 8.0\n.target sm_90\n.address_size 64\n";

// Object a: the kernel. It calls `scale` (object b) directly, reads `bias` (object b) and the
// table `ops` (object c), and has a string of its own named as one in b.
const std::string kA = std::string(kHeader) + R"(
.extern .func (.param .b32 func_retval0) scale(.param .b32 scale_param_0);
.extern .global .align 4 .u32 bias;
.extern .global .align 8 .b8 ops[];
.extern .shared .align 4 .b8 common[64];
.extern .shared .align 16 .b8 dyn[];
.global .align 1 .b8 $str[2] = {65, 0};
.visible .entry k(.param .u64 pout)
{
  .reg .b32 %r<8>;
  .reg .b64 %rd<8>;
  .reg .pred %p<2>;
  ld.param.u64 %rd1, [pout];
  mov.u32 %r1, %tid.x;
  .param .b32 param0;
  .param .b32 retval0;
  st.param.b32 [param0+0], %r1;
  call.uni (retval0), scale, (param0);
  ld.param.b32 %r2, [retval0+0];
  ld.global.u32 %r3, [bias];
  add.s32 %r2, %r2, %r3;
  ld.global.u8 %r4, [$str];
  add.s32 %r2, %r2, %r4;
  st.shared.u32 [common], %r2;
  mov.u64 %rd2, ops;
  ld.global.u64 %rd3, [%rd2];
  setp.eq.u64 %p1, %rd3, 0;
  mul.wide.u32 %rd4, %r1, 4;
  add.s64 %rd5, %rd1, %rd4;
  st.global.u32 [%rd5], %r2;
  ret;
}
)";

// Object b: scale (calls its own helper), bias (weak here, visible in c), and its own $str.
const std::string kB = std::string(kHeader) + R"(
.global .align 1 .b8 $str[2] = {66, 0};
.weak .global .align 4 .u32 bias = 5;
.func (.param .b32 func_retval0) helper(.param .b32 helper_param_0)
{
  .reg .b32 %r<3>;
  ld.param.u32 %r1, [helper_param_0];
  ld.global.u8 %r2, [$str];
  add.s32 %r1, %r1, %r2;
  st.param.b32 [func_retval0+0], %r1;
  ret;
}
.visible .func (.param .b32 func_retval0) scale(.param .b32 scale_param_0)
{
  .reg .b32 %r<3>;
  ld.param.u32 %r1, [scale_param_0];
  mul.lo.s32 %r1, %r1, 10;
  { .param .b32 param0;
  .param .b32 retval0;
  st.param.b32 [param0+0], %r1;
  call.uni (retval0), helper, (param0);
  ld.param.b32 %r2, [retval0+0]; }
  st.param.b32 [func_retval0+0], %r2;
  ret;
}
)";

// Object c: a table of functions (no code names them: the link defines them while they are
// small, declares them otherwise), the visible bias, the shared variable, and a function nothing
// reaches with something the parser refuses (so the link must not have parsed it).
const std::string kC = std::string(kHeader) + R"(
.extern .func (.param .b32 func_retval0) scale(.param .b32 scale_param_0);
.visible .func never_called()
{
  ret;
}
.visible .func orphan()
{
  frobnicate.wobbly %r1;
}
.visible .global .align 4 .u32 bias = 7;
.visible .shared .align 4 .b8 common[64];
.visible .global .align 8 .u64 ops[2] = {scale, never_called};
)";

TEST(PtxLinker, ResolvesAcrossObjectsAndRuns) {
  LinkedPtx linked;
  std::string error;
  ASSERT_TRUE(linkPtx({{"a.ptx", &kA}, {"b.ptx", &kB}, {"c.ptx", &kC}}, {"k"}, &linked, &error)) << error;
  EXPECT_EQ(linked.objectsScanned, 3u);
  EXPECT_EQ(linked.functionsDefined, 4u);   // k, scale, helper, never_called (named by the table)
  EXPECT_EQ(linked.functionsDeclared, 1u);  // orphan: every link of a kernel declares every function
  EXPECT_FALSE(linked.tablesDeclaredOnly);
  EXPECT_EQ(linked.variables, 5u);          // both $str, bias (c's), ops, common (not dyn: unused)
  EXPECT_EQ(linked.text.find("frobnicate"), std::string::npos);
  // The two objects' own $str are renamed apart.
  EXPECT_NE(linked.text.find("$str$o0"), std::string::npos) << linked.text;
  EXPECT_NE(linked.text.find("$str$o1"), std::string::npos) << linked.text;
  Program p(linked.text, "linked.ptx");
  ASSERT_TRUE(p.ok()) << linked.translate(p.error()) << "\n" << linked.text;
  // out[t] = (10 t + 'B') + bias (7: c's visible definition wins over b's weak one) + 'A'.
  const uint64_t out = p.buffer(32 * 4);
  const LaunchResult r = p.launch("k", {}, {32, 1, 1}, {out});
  ASSERT_EQ(r.fault, Fault::kNone) << r.message;
  const auto v = p.read<uint32_t>(out, 32);
  for (uint32_t t = 0; t < 32; ++t) EXPECT_EQ(v[t], 10 * t + 66 + 7 + 65) << t;
  // The linked text's lines lead back to the objects.
  const size_t at = linked.text.find("mul.lo.s32 %r1, %r1, 10;");
  ASSERT_NE(at, std::string::npos);
  const uint32_t line = 1 + static_cast<uint32_t>(std::count(linked.text.begin(), linked.text.begin() + static_cast<long>(at), '\n'));
  EXPECT_EQ(linked.where(line), "b.ptx:20");
  EXPECT_EQ(linked.translate("linked.ptx:" + std::to_string(line) + ": oops"), "b.ptx:20: oops");
}

TEST(PtxLinker, ErrorsNameTheSymbolAndTheObjects) {
  LinkedPtx linked;
  std::string error;
  // Without b, nothing defines scale.
  EXPECT_FALSE(linkPtx({{"a.ptx", &kA}, {"c.ptx", &kC}}, {"k"}, &linked, &error));
  EXPECT_EQ(error, "'scale', declared .extern in a.ptx (line 5), is defined in none of the 2 objects");
  const std::string dup = std::string(kHeader) + ".visible .global .align 4 .u32 bias = 9;\n";
  EXPECT_FALSE(linkPtx({{"a.ptx", &kA}, {"b.ptx", &kB}, {"c.ptx", &kC}, {"d.ptx", &dup}}, {"k"}, &linked, &error));
  EXPECT_EQ(error, "'bias' is defined in both c.ptx (line 14) and d.ptx (line 4)");
  EXPECT_FALSE(linkPtx({{"a.ptx", &kA}, {"b.ptx", &kB}, {"c.ptx", &kC}}, {"nothing"}, &linked, &error));
  EXPECT_EQ(error, "no object defines a kernel 'nothing'");
  const std::string open = std::string(kHeader) + ".visible .entry k2()\n{\n  ret;\n";
  EXPECT_FALSE(linkPtx({{"a.ptx", &kA}, {"open.ptx", &open}}, {"k"}, &linked, &error));
  EXPECT_EQ(error, "open.ptx: line 7: a body is not closed");
}

// The whole program, as cuLinkComplete links it: every kernel and every external variable that
// stands, with what they reach; the kernels alone when asked.
TEST(PtxLinker, AProgramIsLinkedWhole) {
  const std::string other = std::string(kHeader) + R"(
.visible .global .align 4 .u32 unused_by_kernels = 3;
.visible .entry k2()
{
  ret;
}
)";
  PtxLinker linker({{"a.ptx", &kA}, {"b.ptx", &kB}, {"c.ptx", &kC}, {"o.ptx", &other}});
  std::string error;
  ASSERT_TRUE(linker.scan(&error)) << error;
  EXPECT_EQ(linker.kernels(), (std::vector<std::string>{"k", "k2"}));
  LinkedPtx whole;
  ASSERT_TRUE(linker.linkProgram(&whole, &error)) << error;
  EXPECT_EQ(whole.functionsDefined, 5u);  // k, k2, scale, helper, never_called (not orphan: nothing reaches it)
  EXPECT_NE(whole.text.find("unused_by_kernels"), std::string::npos) << whole.text;
  EXPECT_EQ(whole.text.find("frobnicate"), std::string::npos);
  Program p(whole.text, "linked.ptx");
  ASSERT_TRUE(p.ok()) << whole.translate(p.error());
  const uint64_t out = p.buffer(32 * 4);
  const LaunchResult r = p.launch("k", {}, {32, 1, 1}, {out});
  ASSERT_EQ(r.fault, Fault::kNone) << r.message;
  const auto v = p.read<uint32_t>(out, 32);
  for (uint32_t t = 0; t < 32; ++t) EXPECT_EQ(v[t], 10 * t + 66 + 7 + 65) << t;
  LinkedPtx kernels;
  ASSERT_TRUE(linker.linkProgram(&kernels, &error, /*variables=*/false)) << error;
  EXPECT_EQ(kernels.text.find("unused_by_kernels"), std::string::npos);
  EXPECT_EQ(kernels.functionsDefined, 5u);
  // An extern nothing defines, reached from any kernel, fails the link.
  PtxLinker missing({{"a.ptx", &kA}, {"o.ptx", &other}});
  ASSERT_TRUE(missing.scan(&error)) << error;
  EXPECT_FALSE(missing.linkProgram(&whole, &error));
  EXPECT_EQ(error, "'scale', declared .extern in a.ptx (line 5), is defined in none of the 2 objects");
  const std::string nothing = std::string(kHeader) + ".extern .global .align 4 .u32 x;\n";
  PtxLinker empty({{"n.ptx", &nothing}});
  ASSERT_TRUE(empty.scan(&error)) << error;
  EXPECT_FALSE(empty.linkProgram(&whole, &error));
  EXPECT_EQ(error, "the 1 objects define no kernel and no variable");
}

// Two kernels of one image, linked one by one, and the image's variables linked alone: every link
// lays out every .global and .const variable in the same places, under the same names, with the
// same initial bytes (a table's function addresses included), so that one placement of them serves
// every kernel (docs/ptx.md, "Linking relocatable PTX").
TEST(PtxLinker, KernelsLinkedOneByOneLayOutTheImagesVariablesAlike) {
  const std::string box = std::string(kHeader) + R"(
.visible .global .align 4 .u32 box = 3;
.const .align 4 .u32 coeff[2] = {1, 2};
.global .align 1 .b8 $str[3] = {120, 121, 0};
.visible .func (.param .b32 func_retval0) plus_one(.param .b32 p)
{
  .reg .b32 %r<3>;
  ld.param.u32 %r1, [p];
  add.s32 %r2, %r1, 1;
  st.param.b32 [func_retval0+0], %r2;
  ret;
}
.visible .global .align 8 .u64 box_ops[1] = {plus_one};
.visible .entry writer(.param .u32 v)
{
  .reg .b32 %r<2>;
  ld.param.u32 %r1, [v];
  st.global.u32 [box], %r1;
  ret;
}
.visible .entry reader(.param .u64 out)
{
  .reg .b32 %r<3>;
  .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [out];
  ld.global.u32 %r1, [box];
  ld.const.u32 %r2, [coeff+4];
  add.s32 %r1, %r1, %r2;
  st.global.u32 [%rd1], %r1;
  ret;
}
)";
  PtxLinker linker({{"a.ptx", &kA}, {"b.ptx", &kB}, {"c.ptx", &kC}, {"box.ptx", &box}});
  std::string error;
  ASSERT_TRUE(linker.scan(&error)) << error;
  LinkedPtx writer, reader, k, variables;
  ASSERT_TRUE(linker.link({"writer"}, &writer, &error)) << error;
  ASSERT_TRUE(linker.link({"reader"}, &reader, &error)) << error;
  ASSERT_TRUE(linker.link({"k"}, &k, &error)) << error;
  ASSERT_TRUE(linker.linkVariables(&variables, &error)) << error;
  EXPECT_EQ(variables.functionsDefined, 0u);
  EXPECT_EQ(variables.text.find("frobnicate"), std::string::npos);
  Module image;
  ASSERT_TRUE(parseModule(variables.text, "variables.ptx", &image, &error)) << variables.translate(error);
  // Every variable that stands: box, coeff, the three $str, c's bias, ops, box_ops.
  size_t placed = 0;
  for (const ModuleVariable& v : image.variables) placed += v.space == Space::kGlobal || v.space == Space::kConst;
  EXPECT_EQ(placed, 8u);
  for (const LinkedPtx* l : {&writer, &reader, &k}) {
    Module m;
    ASSERT_TRUE(parseModule(l->text, "linked.ptx", &m, &error)) << l->translate(error);
    EXPECT_EQ(m.globalInit, image.globalInit);
    EXPECT_EQ(m.constInit, image.constInit);
    for (const ModuleVariable& v : m.variables) {
      if (v.space != Space::kGlobal && v.space != Space::kConst) continue;
      auto same = std::find_if(image.variables.begin(), image.variables.end(),
                               [&](const ModuleVariable& w) { return w.name == v.name; });
      ASSERT_NE(same, image.variables.end()) << v.name;
      EXPECT_EQ(same->space, v.space) << v.name;
      EXPECT_EQ(same->offset, v.offset) << v.name;
      EXPECT_EQ(same->size, v.size) << v.name;
    }
    // The functions at the same addresses: the image's declarations come first, in one order.
    ASSERT_GE(m.functionNames.size(), image.functionNames.size());
    EXPECT_TRUE(std::equal(image.functionNames.begin(), image.functionNames.end(), m.functionNames.begin()));
  }
  // (runtime.rdc.kernel_by_kernel runs two such kernels on one placement of the variables.)
}

// An indirect call to a function the table names but no code does: linked while the table's
// functions are small; beyond the limit declared only, and the kernel stops with an illegal
// address that names it.
TEST(PtxLinker, TableFunctionsAreLinkedUpToALimit) {
  const std::string k = std::string(kHeader) + R"(
.extern .global .align 8 .b8 ops[];
.visible .entry call_second()
{
  .reg .b64 %rd<3>;
  mov.u64 %rd1, ops;
  ld.global.u64 %rd2, [%rd1+8];
  prototype_0 : .callprototype ()_ ();
  call %rd2, prototype_0;
  ret;
}
)";
  PtxLinker linker({{"k.ptx", &k}, {"b.ptx", &kB}, {"c.ptx", &kC}});
  std::string error;
  ASSERT_TRUE(linker.scan(&error)) << error;
  LinkedPtx small;
  ASSERT_TRUE(linker.link({"call_second"}, &small, &error)) << error;
  EXPECT_EQ(small.functionsDefined, 4u);  // call_second, scale, helper, never_called
  Program ok(small.text, "linked.ptx");
  ASSERT_TRUE(ok.ok()) << ok.error();
  const LaunchResult fine = ok.launch("call_second", {}, {1, 1, 1}, {});
  EXPECT_EQ(fine.fault, Fault::kNone) << fine.message;
  LinkedPtx linked;
  ASSERT_TRUE(linker.link({"call_second"}, &linked, &error, /*tableBytes=*/100)) << error;
  EXPECT_TRUE(linked.tablesDeclaredOnly);
  EXPECT_EQ(linked.functionsDefined, 1u);
  // Every function of the objects, so that a link at a first call gives each the same address:
  // scale, helper, never_called, orphan.
  EXPECT_EQ(linked.functionsDeclared, 4u);
  Program p(linked.text, "linked.ptx");
  ASSERT_TRUE(p.ok()) << p.error();
  const LaunchResult r = p.launch("call_second", {}, {1, 1, 1}, {});
  EXPECT_EQ(r.fault, Fault::kIllegalAddress);
  EXPECT_NE(r.message.find("the address of 'never_called', which is declared but not defined in this module"), std::string::npos)
      << r.message;
}

// Object d: a table whose function reads a string of its own (named as others' are), uses local
// memory and calls a helper of its object; a kernel that calls it through the table.
const std::string kD = std::string(kHeader) + R"(
.global .align 1 .b8 $str[2] = {7, 0};
.func (.param .b32 func_retval0) twice(.param .b32 twice_param_0)
{
  .reg .b32 %r<3>;
  ld.param.u32 %r1, [twice_param_0];
  add.s32 %r2, %r1, %r1;
  st.param.b32 [func_retval0+0], %r2;
  ret;
}
.func add_str(.param .b64 add_str_param_0)
{
  .local .align 4 .b8 buf[8];
  .reg .b32 %r<4>;
  .reg .b64 %rd<3>;
  ld.param.u64 %rd1, [add_str_param_0];
  ld.global.u8 %r1, [$str];
  st.local.u32 [buf+4], %r1;
  ld.local.u32 %r2, [buf+4];
  { .param .b32 param0;
  .param .b32 retval0;
  st.param.b32 [param0+0], %r2;
  call.uni (retval0), twice, (param0);
  ld.param.b32 %r3, [retval0+0]; }
  atom.global.add.u32 %r1, [%rd1], %r3;
  ret;
}
.visible .global .align 8 .u64 table2[2] = {add_str, scale};
.extern .func (.param .b32 func_retval0) scale(.param .b32 scale_param_0);
// Warp 0 keeps a value in local memory and a register while it loops past its turn; warp 1 makes
// the first call meanwhile, which grows the kernel under warp 0.
.visible .entry keep_local(.param .u64 keep_local_param_0)
{
  .local .align 4 .b8 mine[4];
  .reg .pred %p<2>;
  .reg .b32 %r<6>;
  .reg .b64 %rd<6>;
  ld.param.u64 %rd1, [keep_local_param_0];
  mov.u32 %r1, %tid.x;
  add.s32 %r2, %r1, 1000;
  st.local.u32 [mine], %r2;
  setp.ge.u32 %p1, %r1, 32;
  @%p1 bra CALL;
  mov.u32 %r3, 0;
LOOP:
  add.s32 %r3, %r3, 1;
  setp.lt.u32 %p1, %r3, 5000;
  @%p1 bra LOOP;
CALL:
  mov.u64 %rd2, table2;
  ld.global.u64 %rd3, [%rd2];
  { .param .b64 param0;
  st.param.b64 [param0+0], %rd1;
  prototype_2 : .callprototype ()_ (.param .b64 _);
  call %rd3, (param0), prototype_2; }
  ld.local.u32 %r4, [mine];
  add.s32 %r5, %r4, %r2;
  mul.wide.u32 %rd4, %r1, 4;
  add.s64 %rd5, %rd1, %rd4;
  st.global.u32 [%rd5+4], %r5;
  ret;
}
.visible .entry call_table(.param .u64 call_table_param_0)
{
  .reg .b32 %r<3>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [call_table_param_0];
  mov.u64 %rd2, table2;
  ld.global.u64 %rd3, [%rd2];
  { .param .b64 param0;
  st.param.b64 [param0+0], %rd1;
  prototype_1 : .callprototype ()_ (.param .b64 _);
  call %rd3, (param0), prototype_1; }
  ret;
}
)";

// Functions a link declares only are linked into the kernel at their first call (linkOnCall,
// extendKernel): same addresses, same variables, the code grown in place, kept for later launches.
TEST(PtxLinker, TableFunctionsAreLinkedAtTheirFirstCall) {
  PtxLinker linker({{"a.ptx", &kA}, {"b.ptx", &kB}, {"c.ptx", &kC}, {"d.ptx", &kD}});
  std::string error;
  ASSERT_TRUE(linker.scan(&error)) << error;
  LinkedPtx linked;
  ASSERT_TRUE(linker.link({"call_table"}, &linked, &error, /*tableBytes=*/100)) << error;
  ASSERT_TRUE(linked.tablesDeclaredOnly);
  EXPECT_EQ(linked.functionsDefined, 1u);
  Program p(linked.text, "linked.ptx");
  ASSERT_TRUE(p.ok()) << p.error();
  const size_t codeBefore = p.module().find("call_table")->code.size();
  int links = 0;
  p.module().linkOnCall = [&](const std::string& function, Module* extra, std::string* why) {
    ++links;
    LinkedPtx l;
    return linker.linkOnCall("call_table", function, &l, why) && parseModule(l.text, "linked.ptx", extra, why);
  };
  const uint64_t out = p.buffer(4);
  for (int launch = 1; launch <= 2; ++launch) {
    const LaunchResult r = p.launch("call_table", {2, 1, 1}, {64, 1, 1}, {out});
    ASSERT_EQ(r.fault, Fault::kNone) << r.message;
    EXPECT_EQ(p.read<uint32_t>(out, 1)[0], 128u * 14u * static_cast<uint32_t>(launch));
  }
  EXPECT_EQ(links, 1);  // the second launch found it linked
  const Function& k = *p.module().find("call_table");
  EXPECT_GT(k.code.size(), codeBefore);
  ASSERT_EQ(k.callees.size(), 3u);  // call_table, add_str, twice
  EXPECT_EQ(k.callees[1].name, "add_str");
  EXPECT_EQ(k.callees[2].name, "twice");
  // A link that cannot be made: the call stops the kernel, saying why.
  Program q(linked.text, "linked.ptx");
  ASSERT_TRUE(q.ok()) << q.error();
  q.module().linkOnCall = [](const std::string&, Module*, std::string* why) {
    *why = "no objects here";
    return false;
  };
  const LaunchResult r = q.launch("call_table", {1, 1, 1}, {1, 1, 1}, {q.buffer(4)});
  EXPECT_EQ(r.fault, Fault::kIllegalAddress);
  EXPECT_NE(r.message.find("the address of 'add_str', which could not be linked at its first call: no objects here"),
            std::string::npos)
      << r.message;
  // A kernel grown while a warp holds values in its registers and local memory: they stay.
  {
    LinkedPtx keep;
    ASSERT_TRUE(linker.link({"keep_local"}, &keep, &error, /*tableBytes=*/100)) << error;
    Program g(keep.text, "linked.ptx");
    ASSERT_TRUE(g.ok()) << g.error();
    g.module().linkOnCall = [&](const std::string& function, Module* extra, std::string* why) {
      LinkedPtx l;
      return linker.linkOnCall("keep_local", function, &l, why) && parseModule(l.text, "linked.ptx", extra, why);
    };
    const uint64_t o = g.buffer(4 * 65);
    const LaunchResult kr = g.launch("keep_local", {1, 1, 1}, {64, 1, 1}, {o});
    ASSERT_EQ(kr.fault, Fault::kNone) << kr.message;
    const std::vector<uint32_t> got = g.read<uint32_t>(o, 65);
    EXPECT_EQ(got[0], 64u * 14u);
    for (uint32_t t = 0; t < 64; ++t) EXPECT_EQ(got[1 + t], 2 * (t + 1000)) << t;
  }
  // A function no object defines.
  LinkedPtx none;
  EXPECT_FALSE(linker.linkOnCall("call_table", "nowhere", &none, &error));
  EXPECT_EQ(error, "no object defines a function 'nowhere'");
}

}  // namespace
}  // namespace mcsim::ptx::test
