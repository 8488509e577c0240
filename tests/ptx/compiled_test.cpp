// Kernels compiled by nvcc (kernels.cu, built to PTX by the build) run by the executor and
// checked against the same computation on the host. Skipped when the build found no nvcc.
#include <cmath>
#include <fstream>
#include <sstream>

#include "tests/ptx/harness.h"

namespace mcsim::ptx::test {
namespace {

class PtxCompiled : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string path = MCSIM_PTX_COMPILED;
    if (path.empty()) GTEST_SKIP() << "no nvcc at build time: kernels.cu was not compiled";
    std::ifstream f(path);
    ASSERT_TRUE(f.good()) << path;
    std::stringstream ss;
    ss << f.rdbuf();
    program_ = std::make_unique<Program>(ss.str(), "kernels.ptx");
    ASSERT_TRUE(program_->ok()) << program_->error();
  }
  std::unique_ptr<Program> program_;
};

uint64_t bitsOf(float f) { return f32(f); }

TEST_F(PtxCompiled, VectorAdd) {
  Program& p = *program_;
  const int n = 1000;
  std::vector<float> a(n), b(n);
  for (int i = 0; i < n; ++i) {
    a[i] = 0.1f * static_cast<float>(i);
    b[i] = 1.0f / static_cast<float>(i + 1);
  }
  const uint64_t da = p.buffer(a), db = p.buffer(b), dc = p.buffer(n * 4);
  const LaunchResult r = p.launch("vector_add", {(n + 127) / 128, 1, 1}, {128, 1, 1}, {da, db, dc, static_cast<uint64_t>(n)});
  ASSERT_EQ(r.fault, Fault::kNone) << r.message;
  const auto c = p.read<float>(dc, n);
  for (int i = 0; i < n; ++i) ASSERT_EQ(bitsOf(c[i]), bitsOf(a[i] + b[i])) << i;
}

TEST_F(PtxCompiled, BlockReduceWithBarriers) {
  Program& p = *program_;
  const int n = 1000, blocks = 4;
  std::vector<float> in(n);
  for (int i = 0; i < n; ++i) in[i] = static_cast<float>(i % 17) * 0.25f;
  const uint64_t din = p.buffer(in), dout = p.buffer(blocks * 4);
  const LaunchResult r = p.launch("block_reduce", {blocks, 1, 1}, {256, 1, 1}, {din, dout, static_cast<uint64_t>(n)});
  ASSERT_EQ(r.fault, Fault::kNone) << r.message;
  const auto out = p.read<float>(dout, blocks);
  for (int b = 0; b < blocks; ++b) {
    // The same tree on the host, in the same order.
    std::vector<float> s(256);
    for (int t = 0; t < 256; ++t) s[t] = b * 256 + t < n ? in[b * 256 + t] : 0.0f;
    for (int k = 128; k > 0; k >>= 1)
      for (int t = 0; t < k; ++t) s[t] += s[t + k];
    EXPECT_EQ(bitsOf(out[b]), bitsOf(s[0])) << b;
  }
}

TEST_F(PtxCompiled, WarpShuffleReduce) {
  Program& p = *program_;
  const int n = 5000;
  std::vector<int> in(n);
  long long sum = 0;
  for (int i = 0; i < n; ++i) sum += in[i] = (i * 7919) % 1000 - 500;
  const uint64_t din = p.buffer(in), dt = p.buffer(4);
  const LaunchResult r = p.launch("warp_reduce", {(n + 255) / 256, 1, 1}, {256, 1, 1}, {din, dt, static_cast<uint64_t>(n)});
  ASSERT_EQ(r.fault, Fault::kNone) << r.message;
  EXPECT_EQ(p.read<int>(dt, 1)[0], static_cast<int>(sum));
}

TEST_F(PtxCompiled, AtomicHistogram) {
  Program& p = *program_;
  const int n = 3000;
  std::vector<unsigned> in(n), bins(16, 0);
  unsigned mx = 0;
  for (int i = 0; i < n; ++i) {
    in[i] = static_cast<unsigned>(i * 2654435761u) >> 8;
    ++bins[in[i] % 16];
    mx = std::max(mx, in[i]);
  }
  const uint64_t din = p.buffer(in), dbins = p.buffer(16 * 4), dmax = p.buffer(4);
  const LaunchResult r = p.launch("histogram", {(n + 255) / 256, 1, 1}, {256, 1, 1}, {din, dbins, dmax, static_cast<uint64_t>(n)});
  ASSERT_EQ(r.fault, Fault::kNone) << r.message;
  EXPECT_EQ(p.read<unsigned>(dbins, 16), bins);
  EXPECT_EQ(p.read<unsigned>(dmax, 1)[0], mx);
}

TEST_F(PtxCompiled, DivergentLoop) {
  Program& p = *program_;
  const int n = 2 * 96;
  const uint64_t dout = p.buffer(n * 4);
  const LaunchResult r = p.launch("divergent_loop", {2, 1, 1}, {96, 1, 1}, {dout});
  ASSERT_EQ(r.fault, Fault::kNone) << r.message;
  const auto out = p.read<int>(dout, n);
  for (int t = 0; t < n; ++t) {
    int s = 0;
    for (int i = 0; i < t % 37; ++i) {
      if (i & 1) s += i * t;
      else s ^= i + 3;
    }
    ASSERT_EQ(out[t], s) << t;
  }
}

TEST_F(PtxCompiled, DynamicSharedMemoryAndDoubles) {
  Program& p = *program_;
  const int n = 64;
  std::vector<double> in(n);
  for (int i = 0; i < n; ++i) in[i] = 0.37 * i - 3.0;
  const uint64_t din = p.buffer(in), dout = p.buffer(n * 8);
  const LaunchResult r = p.launch("dynamic_shared", {}, {n, 1, 1}, {din, dout}, n * 8);
  ASSERT_EQ(r.fault, Fault::kNone) << r.message;
  const auto out = p.read<unsigned long long>(dout, n);
  for (int t = 0; t < n; ++t) {
    const double v = std::fma(in[n - 1 - t], 3.0, 0.5);  // nvcc contracts in * 3 + 0.5 into an fma
    const double w = v * 1000.0;
    const unsigned long long expect = (w <= 0 ? 0ull : static_cast<unsigned long long>(w)) ^ (static_cast<unsigned long long>(t) << 40);
    ASSERT_EQ(out[t], expect) << t;
  }
}

TEST_F(PtxCompiled, MultimemInlineAssembly) {
  // kernels.cu's multimem_allreduce over four members: every thread's four sums, and every
  // member's counter counting every thread's multimem.red.
  Program& p = *program_;
  const int n4 = 16, members = 4;
  std::vector<uint64_t> data, counters;
  std::vector<float> want(n4 * 4, 0.0f);
  for (int m = 0; m < members; ++m) {
    std::vector<float> v(n4 * 4);
    for (int i = 0; i < n4 * 4; ++i) v[i] = static_cast<float>(i) * 0.25f + static_cast<float>(m) * 1e-3f;
    for (int i = 0; i < n4 * 4; ++i) want[i] = m == 0 ? v[i] : want[i] + v[i];
    data.push_back(p.buffer(v));
    counters.push_back(p.buffer(std::vector<uint32_t>{100u * static_cast<uint32_t>(m)}));
  }
  const uint64_t mc = p.memory().allocateMulticast(data, n4 * 16), mcCounter = p.memory().allocateMulticast(counters, 4);
  const uint64_t out = p.buffer(n4 * 16);
  const LaunchResult r = p.launch("multimem_allreduce", {1, 1, 1}, {32, 1, 1}, {mc, out, mcCounter, static_cast<uint64_t>(n4)});
  ASSERT_EQ(r.fault, Fault::kNone) << r.message;
  const auto got = p.read<float>(out, n4 * 4);
  for (int i = 0; i < n4 * 4; ++i) ASSERT_EQ(bitsOf(got[i]), bitsOf(want[i])) << i;
  for (int m = 0; m < members; ++m) EXPECT_EQ(p.read<uint32_t>(counters[static_cast<size_t>(m)], 1)[0], 100u * static_cast<uint32_t>(m) + n4);
}

int fibonacci(int n) { return n < 2 ? n : fibonacci(n - 1) + fibonacci(n - 2); }

void checkDeviceCalls(Program& p) {
  const int n = 48;
  std::vector<unsigned> in(n);
  for (int i = 0; i < n; ++i) in[i] = 0x10001u * static_cast<unsigned>(i) + 0x30000u * static_cast<unsigned>(i % 5);
  const uint64_t din = p.buffer(in), dout = p.buffer(n * 4);
  const LaunchResult r = p.launch("device_calls", {}, {n, 1, 1}, {din, dout});
  ASSERT_EQ(r.fault, Fault::kNone) << r.message;
  const auto out = p.read<int>(dout, n);
  for (int t = 0; t < n; ++t)
    ASSERT_EQ(out[t], static_cast<int>(in[t] & 0xffff) - static_cast<int>(in[t] >> 16) + fibonacci(t % 12)) << t;
}

// function_pointers: out[t] = f(f(t)) with f = op_table[t % 3], plus op_table[1](t) for even t.
void checkFunctionPointers(Program& p) {
  const int n = 40;
  const uint64_t dout = p.buffer(n * 4);
  const LaunchResult r = p.launch("function_pointers", {}, {n, 1, 1}, {dout});
  ASSERT_EQ(r.fault, Fault::kNone) << r.message;
  const auto out = p.read<int>(dout, n);
  for (int t = 0; t < n; ++t) {
    auto f = [&](int x) { return t % 3 == 0 ? x + 7 : t % 3 == 1 ? 2 * x : fibonacci(x % 12); };
    ASSERT_EQ(out[t], f(f(t)) + (t % 2 == 0 ? 2 * t : 0)) << t;
  }
}

void checkStructCalls(Program& p) {
  const int n = 40;
  const uint64_t dout = p.buffer(n * 8);
  const LaunchResult r = p.launch("struct_calls", {}, {n, 1, 1}, {dout});
  ASSERT_EQ(r.fault, Fault::kNone) << r.message;
  const auto out = p.read<double>(dout, n);
  for (int t = 0; t < n; ++t) {
    double s = t * 0.5;
    for (int i = 0; i < 6; ++i) s += (t + i) + t * i;
    ASSERT_EQ(out[t], s) << t;
  }
}

// The host's version of kernels.cu's local_chain/recursive_locals.
int localChain(int* parent, int n) {
  int mine[4];
  for (int i = 0; i < 4; ++i) mine[i] = n * 10 + i;
  if (parent != nullptr) parent[n & 3] += 1000 * (n + 1);
  const int below = n > 0 ? localChain(mine, n - 1) : 0;
  int s = 0;
  for (int i = 0; i < 4; ++i) s += mine[i] * (i + 1);
  return s + 7 * below;
}

void checkRecursiveLocals(Program& p) {
  const int n = 40;
  const uint64_t dout = p.buffer(n * 4);
  const LaunchResult r = p.launch("recursive_locals", {}, {n, 1, 1}, {dout});
  ASSERT_EQ(r.fault, Fault::kNone) << r.message;
  const auto out = p.read<int>(dout, n);
  for (int t = 0; t < n; ++t) {
    int top[4] = {1, 2, 3, 4};
    const int want = localChain(top, t % 9) + top[0] + top[1] + top[2] + top[3];
    ASSERT_EQ(out[t], want) << t;
  }
}

TEST_F(PtxCompiled, DeviceFunctionsAndRecursion) {
  checkStructCalls(*program_);
  ASSERT_GE(program_->module().find("device_calls")->callees.size(), 3u);
  checkDeviceCalls(*program_);
  checkFunctionPointers(*program_);
  checkRecursiveLocals(*program_);
}

// What printf_kernel prints with base 10, formatted by the host's printf.
std::string printfKernelOutput() {
  std::string want;
  char line[512];
  for (int t = 0; t < 3; ++t) {
    std::snprintf(line, sizeof line,
                  "t=%d u=%u x=%x X=%#X o=%o c=%c s=%s|%5s|%-4s| f=%.3f e=%e g=%g %% ld=%ld lld=%lld lu=%lu w=%6.2f %*d\n",
                  t + 10, static_cast<unsigned>(t) + 4000000000u, 255 + t, 0xabcu, 8, 'A' + t, "str", "ab", "cd",
                  static_cast<double>(1.5f + static_cast<float>(t)), 12345.678, 0.0001, -(1L << 40) - t, 1LL << 50,
                  18446744073709551615ul, 3.14159, 4, t);
    want += line;
  }
  want += "no arguments\n";
  return want;
}

// The same kernels built with -G (debug: no inlining, every function a call, locals on the stack).
TEST_F(PtxCompiled, CudaBarrierAndMemcpyAsync) {
  // libcu++'s cuda::barrier: mbarrier.init / arrive / try_wait, cp.async and
  // cp.async.mbarrier.arrive as nvcc emits them. The waiting warps are parked, not spinning.
  Program& p = *program_;
  const int blocks = 2, phases = 4;
  std::vector<int> in(blocks * 256);
  for (int i = 0; i < blocks * 256; ++i) in[i] = i * 10;
  const uint64_t din = p.buffer(in), dout = p.buffer(in.size() * 4);
  const LaunchResult r = p.launch("barrier_phases", {blocks, 1, 1}, {256, 1, 1}, {din, dout, static_cast<uint64_t>(phases)});
  ASSERT_EQ(r.fault, Fault::kNone) << r.message;
  const auto out = p.read<int>(dout, in.size());
  for (int b = 0; b < blocks; ++b)
    for (int t = 0; t < 256; ++t) ASSERT_EQ(out[b * 256 + t], in[b * 256 + (t + phases) % 256] + phases) << b << " " << t;
  EXPECT_EQ(r.pollingInstructions, 0u);
  // A warp that spun would take a quantum (4096 instructions) a wait; parked, a whole block's
  // nine waits take a few thousand.
  EXPECT_LT(r.warpInstructions, 20000u);
}

TEST(PtxCompiledDebug, DeviceFunctionsAndRecursion) {
  const std::string path = MCSIM_PTX_COMPILED_DEBUG;
  if (path.empty()) GTEST_SKIP() << "no nvcc at build time: kernels.cu was not compiled";
  std::ifstream f(path);
  ASSERT_TRUE(f.good()) << path;
  std::stringstream ss;
  ss << f.rdbuf();
  Program p(ss.str(), "kernels_debug.ptx");
  ASSERT_TRUE(p.ok()) << p.error();
  checkDeviceCalls(p);
  checkStructCalls(p);
  checkFunctionPointers(p);
  checkRecursiveLocals(p);
  const LaunchResult r = p.launch("printf_kernel", {}, {64, 1, 1}, {10});
  ASSERT_EQ(r.fault, Fault::kNone) << r.message;
  EXPECT_EQ(r.printfOutput, printfKernelOutput());
  std::vector<int> in(64, 1);
  in[7] = -1;
  const LaunchResult a = p.launch("assert_kernel", {}, {64, 1, 1}, {p.buffer(in)});
  ASSERT_EQ(a.fault, Fault::kAssert) << a.message;
  EXPECT_NE(a.assertOutput.find("thread: [7,0,0] Assertion `in[t] >= 0` failed.\n"), std::string::npos) << a.assertOutput;
}

TEST_F(PtxCompiled, PrintfFormatsLikeTheHost) {
  Program& p = *program_;
  const LaunchResult r = p.launch("printf_kernel", {}, {64, 1, 1}, {10});
  ASSERT_EQ(r.fault, Fault::kNone) << r.message;
  EXPECT_EQ(r.printfOutput, printfKernelOutput());
}

TEST_F(PtxCompiled, PrintfTakesAtMost32Arguments) {
  const LaunchResult r = program_->launch("printf_many", {}, {1, 1, 1}, {});
  ASSERT_EQ(r.fault, Fault::kNone) << r.message;
  std::string want;
  for (int i = 1; i <= 32; ++i) want += std::to_string(i) + " ";
  EXPECT_EQ(r.printfOutput, want + "%d %d|\n");
}

TEST_F(PtxCompiled, PrintfFifoKeepsTheNewestRecords) {
  Program& p = *program_;
  LaunchConfig cfg;
  cfg.block = {64, 1, 1};
  const int base = 0;
  const void* args[] = {&base};
  cfg.params = packParams(*p.module().find("printf_kernel"), args);
  // Each record of the first three costs 16 + 8 * 18 bytes: a FIFO of 200 holds one, and the
  // argument-less record after it.
  cfg.printfFifoBytes = 200;
  const LaunchResult r = p.executor().launch("printf_kernel", cfg);
  ASSERT_EQ(r.fault, Fault::kNone) << r.message;
  EXPECT_EQ(r.printfOutput.substr(0, 4), "t=2 ") << r.printfOutput;
  EXPECT_NE(r.printfOutput.find("\nno arguments\n"), std::string::npos) << r.printfOutput;
}

TEST_F(PtxCompiled, AssertStopsTheKernelAndSaysWhere) {
  Program& p = *program_;
  std::vector<int> in(64, 1);
  in[5] = -1;
  in[40] = -2;
  const uint64_t din = p.buffer(in);
  const LaunchResult r = p.launch("assert_kernel", {}, {64, 1, 1}, {din});
  ASSERT_EQ(r.fault, Fault::kAssert) << r.message;
  // The file as __FILE__ gives it (the path nvcc was given); the first failing warp stops the kernel.
  const std::string out = r.assertOutput.substr(r.assertOutput.rfind('/') + 1);
  EXPECT_EQ(out,
            "kernels.cu:88: void assert_kernel(const int *): block: [0,0,0], thread: [5,0,0] Assertion `in[t] >= 0` failed.\n");
  const LaunchResult ok = p.launch("assert_kernel", {}, {4, 1, 1}, {din});
  EXPECT_EQ(ok.fault, Fault::kNone) << ok.message;
}

}  // namespace
}  // namespace mcsim::ptx::test
