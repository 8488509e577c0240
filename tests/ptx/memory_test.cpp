// State spaces, vector accesses, generic addressing, atomics, and memory faults.
#include "model/lazy_region.h"
#include "ptx/address_space_memory.h"
#include "tests/ptx/harness.h"

namespace mcsim::ptx::test {
namespace {

const char* kHeader = ".version 8.0\n.target sm_90\n.address_size 64\n";

// A kernel in which thread i stores i (st) or adds i (atom) to the u32 at p + 4 i.
std::string indexKernel(const char* access) {
  return std::string(kHeader) + R"(.visible .entry k(.param .u64 p)
{
  .reg .b32 %r<2>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [p];
  mov.u32 %r0, %tid.x;
  mul.wide.u32 %rd2, %r0, 4;
  add.s64 %rd3, %rd1, %rd2;
  )" + access + R"(
  ret;
}
)";
}

TEST(PtxMemory, VectorLoadsAndStores) {
  Program p(std::string(kHeader) + R"(
.visible .entry k(.param .u64 pin, .param .u64 pout)
{
  .reg .b32 %r<8>;
  .reg .f32 %f<4>;
  .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [pin];
  ld.param.u64 %rd2, [pout];
  mov.u32 %r0, %tid.x;
  mul.wide.u32 %rd3, %r0, 16;
  add.s64 %rd4, %rd1, %rd3;
  add.s64 %rd5, %rd2, %rd3;
  ld.global.v4.u32 {%r1, %r2, %r3, %r4}, [%rd4];
  st.global.v4.u32 [%rd5], {%r4, %r3, %r2, %r1};
  ld.global.v2.f32 {%f1, _}, [%rd4+8];
  st.global.v2.f32 [%rd5+8], {%f1, %f1};
  ret;
}
)");
  ASSERT_TRUE(p.ok()) << p.error();
  const uint64_t in = p.buffer(std::vector<uint32_t>{1, 2, 3, 4, 5, 6, 7, 8}), out = p.buffer(32);
  const LaunchResult r = p.launch("k", {}, {2, 1, 1}, {in, out});
  ASSERT_EQ(r.fault, Fault::kNone) << r.message;
  EXPECT_EQ(p.read<uint32_t>(out, 8), (std::vector<uint32_t>{4, 3, 3, 3, 8, 7, 7, 7}));
}

TEST(PtxMemory, SharedLocalConstGlobalVariablesAndGenericAddresses) {
  Program p(std::string(kHeader) + R"(
.const .align 4 .b32 table[4] = {10, 20, 30, 40};
.global .align 4 .u32 counter = 100;
.global .align 8 .f64 scale[2] = {0d4000000000000000, 0d4008000000000000};
.extern .shared .align 16 .b8 dyn[];
.visible .entry k(.param .u64 pout)
{
  .reg .b32 %r<12>;
  .reg .b64 %rd<12>;
  .reg .f64 %fd<4>;
  .local .align 4 .b8 depot[16];
  .shared .align 4 .b32 tile[64];
  ld.param.u64 %rd1, [pout];
  mov.u32 %r0, %tid.x;
  // shared through a generic address
  mov.u64 %rd2, tile;
  cvta.shared.u64 %rd3, %rd2;
  mul.wide.u32 %rd4, %r0, 4;
  add.s64 %rd5, %rd3, %rd4;
  st.u32 [%rd5], %r0;
  // local, generic too
  mov.u64 %rd6, depot;
  cvta.local.u64 %rd7, %rd6;
  add.u32 %r1, %r0, 1000;
  st.u32 [%rd7+4], %r1;
  ld.local.u32 %r2, [depot+4];
  // const with an initialiser
  and.b32 %r3, %r0, 3;
  mul.wide.u32 %rd8, %r3, 4;
  mov.u64 %rd9, table;
  add.s64 %rd9, %rd9, %rd8;
  ld.const.u32 %r4, [%rd9];
  // a module .global variable and dynamic shared memory
  ld.global.u32 %r5, [counter];
  ld.global.f64 %fd1, [scale+8];
  cvt.rzi.u32.f64 %r6, %fd1;
  st.shared.u32 [dyn+4], %r6;
  ld.shared.u32 %r7, [dyn+4];
  // results: out[tid] = local + const + counter + dyn + tile[tid] (through a shared address)
  cvta.to.shared.u64 %rd10, %rd5;
  cvt.u32.u64 %r8, %rd10;
  ld.shared.u32 %r9, [%r8];
  add.u32 %r10, %r2, %r4;
  add.u32 %r10, %r10, %r5;
  add.u32 %r10, %r10, %r7;
  add.u32 %r10, %r10, %r9;
  add.s64 %rd11, %rd1, %rd4;
  st.global.u32 [%rd11], %r10;
  ret;
}
)");
  ASSERT_TRUE(p.ok()) << p.error();
  const uint64_t out = p.buffer(4 * 8);
  const LaunchResult r = p.launch("k", {}, {8, 1, 1}, {out}, /*dynamicShared=*/16);
  ASSERT_EQ(r.fault, Fault::kNone) << r.message;
  const auto v = p.read<uint32_t>(out, 8);
  for (uint32_t t = 0; t < 8; ++t) EXPECT_EQ(v[t], (t + 1000) + 10 * ((t & 3) + 1) + 100 + 3 + t) << t;
}

// Placed by a driver (LaunchConfig::moduleGlobalsVa), the constant bank is device memory after the
// .global variables (Module::constOffset): ld.const, at a const address and a generic one, reads
// what is there now, not the initialiser, and is not counted as DRAM traffic; a generic store to
// the const window still faults (docs/ptx.md, "Constant memory").
TEST(PtxMemory, ConstantBankInDeviceMemory) {
  Program p(std::string(kHeader) + R"(
.global .align 4 .u32 g = 5;
.const .align 4 .b32 table[4] = {10, 20, 30, 40};
.const .align 8 .u64 one = 1;
.visible .entry k(.param .u64 pout)
{
  .reg .b32 %r<8>;
  .reg .b64 %rd<12>;
  ld.param.u64 %rd1, [pout];
  mov.u32 %r0, %tid.x;
  and.b32 %r1, %r0, 3;
  mul.wide.u32 %rd2, %r1, 4;
  mov.u64 %rd3, table;
  add.s64 %rd4, %rd3, %rd2;
  ld.const.u32 %r2, [%rd4];
  cvta.const.u64 %rd5, %rd4;
  ld.u32 %r3, [%rd5];
  ld.const.u64 %rd6, [one];
  cvt.u32.u64 %r4, %rd6;
  add.u32 %r5, %r2, %r3;
  add.u32 %r5, %r5, %r4;
  mul.wide.u32 %rd7, %r0, 4;
  add.s64 %rd8, %rd1, %rd7;
  st.global.u32 [%rd8], %r5;
  ret;
}
.visible .entry store_const()
{
  .reg .b32 %r<2>;
  .reg .b64 %rd<4>;
  mov.u64 %rd1, table;
  cvta.const.u64 %rd2, %rd1;
  mov.u32 %r1, 7;
  st.u32 [%rd2], %r1;
  ret;
}
)");
  ASSERT_TRUE(p.ok()) << p.error();
  const Module& m = p.module();
  ASSERT_EQ(m.constOffset(), 256u);
  ASSERT_EQ(m.constInit.size(), 24u);
  // The bank as a driver places it, then changed by the host.
  std::vector<uint8_t> bank(m.constOffset() + m.constInit.size(), 0);
  std::memcpy(bank.data(), m.globalInit.data(), m.globalInit.size());
  std::memcpy(bank.data() + m.constOffset(), m.constInit.data(), m.constInit.size());
  const uint32_t fresh[4] = {1000, 2000, 3000, 4000};
  std::memcpy(bank.data() + m.constOffset(), fresh, sizeof fresh);
  const uint64_t placed = p.buffer(bank), out = p.buffer(4 * 8);
  const LaunchResult r = p.launch("k", {}, {8, 1, 1}, {out}, 0, 100000000, 0, placed);
  ASSERT_EQ(r.fault, Fault::kNone) << r.message;
  const auto v = p.read<uint32_t>(out, 8);
  for (uint32_t t = 0; t < 8; ++t) EXPECT_EQ(v[t], 2 * fresh[t & 3] + 1) << t;
  EXPECT_EQ(r.globalBytesRead, 0u);  // the constant cache's, not DRAM's
  // Not placed: the executor's own copy of the initialisers.
  const LaunchResult own = p.launch("k", {}, {8, 1, 1}, {out}, 0);
  ASSERT_EQ(own.fault, Fault::kNone) << own.message;
  const auto w = p.read<uint32_t>(out, 8);
  for (uint32_t t = 0; t < 8; ++t) EXPECT_EQ(w[t], 2 * 10 * ((t & 3) + 1) + 1) << t;
  const LaunchResult bad = p.launch("store_const", {}, {1, 1, 1}, {}, 0, 100000000, 0, placed);
  EXPECT_EQ(bad.fault, Fault::kIllegalAddress);
  EXPECT_NE(bad.message.find("a write to constant memory"), std::string::npos) << bad.message;
}

TEST(PtxMemory, AtomicsOnGlobalAndSharedMemory) {
  Program p(std::string(kHeader) + R"(
.visible .entry k(.param .u64 pout)
{
  .reg .b32 %r<12>;
  .reg .b64 %rd<4>;
  .reg .f32 %f<2>;
  .reg .pred %p<2>;
  .shared .align 4 .u32 s;
  ld.param.u64 %rd1, [pout];
  mov.u32 %r0, %tid.x;
  setp.ne.u32 %p1, %r0, 0;
  @%p1 bra WAIT;
  st.shared.u32 [s], 0;
WAIT:
  bar.sync 0;
  atom.shared.add.u32 %r1, [s], 1;
  atom.global.add.u32 %r2, [%rd1], 1;
  atom.global.max.s32 %r3, [%rd1+4], %r0;
  atom.global.min.u32 %r4, [%rd1+8], %r0;
  red.global.or.b32 [%rd1+12], %r0;
  atom.global.inc.u32 %r5, [%rd1+16], 9;
  atom.global.cas.b32 %r6, [%rd1+20], %r0, 1000;
  atom.global.exch.b32 %r7, [%rd1+24], %r0;
  cvt.rn.f32.u32 %f1, %r0;
  red.global.add.f32 [%rd1+28], %f1;
  atom.global.dec.u32 %r8, [%rd1+32], 3;
  bar.sync 0;
  @%p1 bra DONE;
  ld.shared.u32 %r9, [s];
  st.global.u32 [%rd1+36], %r9;
DONE:
  ret;
}
)");
  ASSERT_TRUE(p.ok()) << p.error();
  const uint64_t out = p.buffer(std::vector<uint32_t>{0, 0, 0xffffffffu, 0, 0, 0, 0, 0, 0, 0});
  const LaunchResult r = p.launch("k", {}, {100, 1, 1}, {out});
  ASSERT_EQ(r.fault, Fault::kNone) << r.message;
  const auto v = p.read<uint32_t>(out, 10);
  EXPECT_EQ(v[0], 100u);
  EXPECT_EQ(v[1], 99u);
  EXPECT_EQ(v[2], 0u);
  EXPECT_EQ(v[3], 127u);  // 0 | 1 | ... | 99
  EXPECT_EQ(v[4], 100u % 10);  // inc wraps to 0 after 9: 100 increments
  EXPECT_EQ(v[5], 1000u);      // thread 0 swaps 0 for 1000; later compares fail
  EXPECT_EQ(v[6], 99u);        // the last exchange in thread order
  float sum;
  std::memcpy(&sum, &v[7], 4);
  EXPECT_EQ(sum, 4950.0f);
  // dec with bound 3 from 0: 3, 2, 1, 0, 3, ...: after 100 steps 3 - ((100 - 1) % 4) = 0.
  EXPECT_EQ(v[8], 0u);
  EXPECT_EQ(v[9], 100u);
}

TEST(PtxMemory, UnmappedAccessNamesKernelBlockThreadLineAndAddress) {
  Program p(indexKernel("st.global.u32 [%rd3], %r0;"), "oob.ptx");
  ASSERT_TRUE(p.ok()) << p.error();
  const uint64_t out = p.buffer(4 * 40);  // 40 elements; the 2nd block's thread 8 is the 41st
  const LaunchResult r = p.launch("k", {2, 1, 1}, {64, 1, 1}, {out});
  EXPECT_EQ(r.fault, Fault::kIllegalAddress);
  char addr[32];
  std::snprintf(addr, sizeof addr, "0x%llx", static_cast<unsigned long long>(out + 160));
  EXPECT_NE(r.message.find("kernel 'k' block (0,0,0) thread (40,0,0)"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find(addr), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("'st.global.u32' at oob.ptx:12"), std::string::npos) << r.message;
  // The writes before the fault happened; nothing past the buffer did.
  EXPECT_EQ(p.read<uint32_t>(out, 40)[39], 39u);
}

TEST(PtxMemory, MisalignedAndReadOnlyAccessesFault) {
  Program p(std::string(kHeader) + R"(.visible .entry k(.param .u64 pout, .param .u32 which)
{
  .reg .b32 %r<4>;
  .reg .b64 %rd<4>;
  .reg .pred %p<2>;
  ld.param.u64 %rd1, [pout];
  ld.param.u32 %r1, [which];
  setp.eq.u32 %p1, %r1, 0;
  @%p1 ld.global.u32 %r2, [%rd1+2];
  @!%p1 st.shared.u32 [100000], %r1;
  ret;
}
)");
  ASSERT_TRUE(p.ok()) << p.error();
  const uint64_t out = p.buffer(16);
  LaunchResult r = p.launch("k", {}, {1, 1, 1}, {out, 0});
  EXPECT_EQ(r.fault, Fault::kMisalignedAddress);
  EXPECT_NE(r.message.find("4-byte access"), std::string::npos) << r.message;
  r = p.launch("k", {}, {1, 1, 1}, {out, 1});
  EXPECT_EQ(r.fault, Fault::kIllegalAddress);
  EXPECT_NE(r.message.find("outside the block's shared memory"), std::string::npos) << r.message;
}

// GlobalMemory is asked at access time: a window that disappears between launches faults.
class OneWindow : public GlobalMemory {
 public:
  MemoryError resolve(uint64_t va, AccessKind kind, int device, MemoryWindow* out) override {
    ++calls;
    lastDevice = device;
    if (!mapped || va < 0x1000 || va >= 0x1000 + sizeof bytes) return MemoryError::kUnmapped;
    if (kind != AccessKind::kRead && readOnly) return MemoryError::kNoAccess;
    *out = MemoryWindow{0x1000, sizeof bytes, bytes};
    return MemoryError::kNone;
  }
  uint8_t bytes[256] = {};
  bool mapped = true, readOnly = false;
  int calls = 0, lastDevice = -1;
};

TEST(PtxMemory, GlobalMemoryIsResolvedAtAccessTime) {
  OneWindow mem;
  Program p(indexKernel("st.global.u32 [%rd3], %r0;"), "w.ptx", &mem);
  ASSERT_TRUE(p.ok()) << p.error();
  auto run = [&] { return p.launch("k", {}, {32, 1, 1}, {0x1000}, 0, 100000, /*device=*/3); };
  EXPECT_EQ(run().fault, Fault::kNone);
  EXPECT_EQ(mem.lastDevice, 3);
  EXPECT_EQ(mem.calls, 1);  // one window serves the warp's 32 stores
  uint32_t v;
  std::memcpy(&v, mem.bytes + 4 * 31, 4);
  EXPECT_EQ(v, 31u);
  mem.readOnly = true;
  LaunchResult r = run();
  EXPECT_EQ(r.fault, Fault::kIllegalAddress);
  EXPECT_NE(r.message.find("no access"), std::string::npos) << r.message;
  mem.readOnly = false;
  mem.mapped = false;
  r = run();
  EXPECT_EQ(r.fault, Fault::kIllegalAddress);
  EXPECT_NE(r.message.find("unmapped"), std::string::npos) << r.message;
}

// A memory that holds the stores offered as releases (GlobalMemory::deferRelease) and writes the
// others at once, as the node does for another GPU's memory.
class HoldingMemory : public FlatMemory {
 public:
  bool deferRelease(const MemoryWindow& window, uint8_t* p, const uint8_t* bytes, unsigned n, bool release) override {
    (void)window;
    if (!release) return false;
    uint32_t v = 0;
    std::memcpy(&v, bytes, std::min<unsigned>(n, 4));
    held.push_back(v);
    (void)p;
    return true;
  }
  std::vector<uint32_t> held;
};

// Which stores are releases: a st.release (or .acq_rel, .sc) at .gpu or .sys scope, and a warp's
// first store after a membar.gl / membar.sys or a fence at .gpu / .sys scope; not a relaxed or
// CTA-scoped one, nor a store after a CTA fence, nor the second store after a fence. A held
// release is the memory's to write: the executor leaves it out.
TEST(PtxMemory, ReleaseStoresAreOfferedToTheMemoryToHold) {
  const std::string text = R"(
.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 out) {
  .reg .u64 %rd<3>;
  .reg .u32 %r<2>;
  .reg .pred %p<2>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  setp.ne.u32 %p1, %r1, 0;
  @%p1 bra DONE;
  st.relaxed.sys.global.u32 [%rd1], 1;
  st.release.cta.global.u32 [%rd1+4], 2;
  st.release.sys.global.u32 [%rd1+8], 3;
  st.release.gpu.global.u32 [%rd1+12], 4;
  membar.cta;
  st.global.u32 [%rd1+16], 5;
  fence.acq_rel.sys;
  st.volatile.global.u32 [%rd1+20], 6;
  st.global.u32 [%rd1+24], 7;
  membar.gl;
  st.global.u32 [%rd1+28], 8;
  fence.sc.gpu;
  st.global.u32 [%rd1+32], 9;
DONE:
  ret;
}
)";
  HoldingMemory mem;
  Program p(text, "rel.ptx", &mem);
  ASSERT_TRUE(p.ok()) << p.error();
  const uint64_t out = mem.allocate(64);
  ASSERT_EQ(p.launch("k", {}, {32, 1, 1}, {out}).fault, Fault::kNone);
  EXPECT_EQ(mem.held, (std::vector<uint32_t>{3, 4, 6, 8, 9}));
  std::vector<uint32_t> v(9);
  std::memcpy(v.data(), mem.host(out), 36);
  EXPECT_EQ(v, (std::vector<uint32_t>{1, 2, 0, 0, 5, 0, 7, 0, 0}));
}

// The node's path: mappings and rights in a model::AddressSpace, bytes in model::LazyRegions.
TEST(PtxMemory, AddressSpaceMemoryFollowsMappingsAndRights) {
  model::AddressSpace space(0x100000000ull, 1ull << 32, /*deviceCount=*/2);
  auto region = model::LazyRegion::create(1 << 20);
  ASSERT_NE(region, nullptr);
  uint64_t va = 0;
  ASSERT_EQ(space.reserve(4 << 20, 2 << 20, 0, false, &va), mcsim::Status::kOk);
  // The allocation's second half is mapped at va: offsets 512 KiB on.
  ASSERT_EQ(space.map(va, 512 << 10, /*alloc=*/7, /*allocOffset=*/512 << 10), mcsim::Status::kOk);
  ASSERT_EQ(space.setAccess(va, 512 << 10, 0, model::Access::kReadWrite), mcsim::Status::kOk);
  ASSERT_EQ(space.setAccess(va, 512 << 10, 1, model::Access::kRead), mcsim::Status::kOk);
  AddressSpaceMemory memory(space, [&](model::AllocId alloc, uint64_t* size) -> uint8_t* {
    if (alloc != 7) return nullptr;
    *size = region->size();
    return region->data();
  });
  Program p(indexKernel("atom.global.add.u32 %r1, [%rd3], %r0;"), "as.ptx", &memory);
  ASSERT_TRUE(p.ok()) << p.error();
  auto run = [&](uint64_t base, int device) { return p.launch("k", {}, {64, 1, 1}, {base}, 0, 100000, device); };
  ASSERT_EQ(run(va, 0).fault, Fault::kNone);
  uint32_t v;
  std::memcpy(&v, region->data() + (512 << 10) + 4 * 63, 4);
  EXPECT_EQ(v, 63u);  // through the mapping's offset into the allocation
  LaunchResult r = run(va, 1);  // device 1 may only read
  EXPECT_EQ(r.fault, Fault::kIllegalAddress);
  EXPECT_NE(r.message.find("no access"), std::string::npos) << r.message;
  r = run(va + (512 << 10) - 128, 0);  // runs off the mapping's end
  EXPECT_EQ(r.fault, Fault::kIllegalAddress);
  EXPECT_NE(r.message.find("thread (32,0,0)"), std::string::npos) << r.message;
  // Unmapped between launches: the next launch sees it.
  std::vector<model::Mapping> removed;
  ASSERT_EQ(space.unmap(va, 512 << 10, &removed), mcsim::Status::kOk);
  r = run(va, 0);
  EXPECT_EQ(r.fault, Fault::kIllegalAddress);
  EXPECT_NE(r.message.find("unmapped"), std::string::npos) << r.message;
}

// Global memory that keeps what the executor tells it each access run moved (ptx::AccessRun).
class RecordingMemory : public FlatMemory {
 public:
  void accessed(const MemoryWindow& window, AccessKind kind, const AccessRun& run) override {
    (void)window;
    runs.push_back({kind, run});
  }
  std::vector<std::pair<AccessKind, AccessRun>> runs;
};

// One warp loads a u32 (or a v4.u32) at in + stride * lane and stores it to out + 4 * lane: the
// load moves the 32-byte sectors its lanes touch, each once (a warp's accesses coalesced), the
// store four sectors.
TEST(PtxMemory, AWarpsAccessesMoveWholeSectorsEachOnce) {
  const std::string text = std::string(kHeader) + R"(.visible .entry k(.param .u64 pin, .param .u64 pout, .param .u64 stride, .param .u32 wide)
{
  .reg .pred %p<2>;
  .reg .b32 %r<8>;
  .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [pin];
  ld.param.u64 %rd2, [pout];
  ld.param.u64 %rd3, [stride];
  ld.param.u32 %r5, [wide];
  mov.u32 %r0, %tid.x;
  cvt.u64.u32 %rd4, %r0;
  mul.lo.u64 %rd5, %rd4, %rd3;
  add.s64 %rd5, %rd1, %rd5;
  setp.ne.u32 %p1, %r5, 0;
  @%p1 bra WIDE;
  ld.global.u32 %r1, [%rd5];
  bra STORE;
WIDE:
  ld.global.v4.u32 {%r1, %r2, %r3, %r4}, [%rd5];
STORE:
  shl.b64 %rd6, %rd4, 2;
  add.s64 %rd6, %rd2, %rd6;
  st.global.u32 [%rd6], %r1;
  ret;
}
)";
  struct Case {
    uint64_t stride;
    uint32_t wide;
    uint64_t loadSectorBytes;
  };
  // Consecutive words: 128 bytes, 4 sectors; one word from each 128-byte line: 32 sectors; all
  // lanes on one word: 1 sector; consecutive 16-byte vectors: 512 bytes, 16 sectors; words 8 bytes
  // apart: 256 bytes, 8 sectors.
  for (const Case& c : {Case{4, 0, 128}, Case{128, 0, 1024}, Case{0, 0, 32}, Case{16, 1, 512}, Case{8, 0, 256}}) {
    RecordingMemory memory;
    Program p(text, "test.ptx", &memory);
    ASSERT_TRUE(p.ok()) << p.error();
    const uint64_t in = memory.allocate(32 * 128), out = memory.allocate(128);
    const LaunchResult r = p.launch("k", {}, {32, 1, 1}, {in, out, c.stride, c.wide});
    ASSERT_EQ(r.fault, Fault::kNone) << r.message;
    uint64_t loaded = 0, loadedSectors = 0, stored = 0, storedSectors = 0;
    for (const auto& [kind, run] : memory.runs) {
      (kind == AccessKind::kRead ? loaded : stored) += run.bytes;
      (kind == AccessKind::kRead ? loadedSectors : storedSectors) += run.sectorBytes;
      EXPECT_EQ(run.high - run.low <= 32 * 128, true);
    }
    EXPECT_EQ(loaded, c.wide ? 512u : 128u) << "stride " << c.stride;
    EXPECT_EQ(loadedSectors, c.loadSectorBytes) << "stride " << c.stride;
    EXPECT_EQ(stored, 128u);
    EXPECT_EQ(storedSectors, 128u);
  }
}

}  // namespace
}  // namespace mcsim::ptx::test
