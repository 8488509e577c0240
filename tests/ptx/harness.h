// Shared by the PTX executor's tests: a module parsed from text, global memory of host buffers,
// and launches with arguments given as 64-bit words.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "ptx/executor.h"
#include "ptx/parser.h"

namespace mcsim::ptx::test {

class Program {
 public:
  // Global memory is `memory` if given, else host buffers of the program's own (buffer()).
  explicit Program(const std::string& text, const std::string& name = "test.ptx", GlobalMemory* memory = nullptr) {
    ok_ = parseModule(text, name, &module_, &error_);
    if (ok_) executor_ = std::make_unique<Executor>(module_, memory != nullptr ? *memory : memory_);
  }
  bool ok() const { return ok_; }
  const std::string& error() const { return error_; }
  const Module& module() const { return module_; }
  Module& module() { return module_; }  // its owner's: Module::linkOnCall, say
  FlatMemory& memory() { return memory_; }
  Executor& executor() { return *executor_; }

  // A zeroed buffer of `bytes`, or one holding `init`.
  uint64_t buffer(size_t bytes) { return memory_.allocate(bytes); }
  template <typename T>
  uint64_t buffer(const std::vector<T>& init) {
    const uint64_t va = memory_.allocate(init.size() * sizeof(T));
    if (!init.empty()) std::memcpy(memory_.host(va), init.data(), init.size() * sizeof(T));
    return va;
  }
  template <typename T>
  std::vector<T> read(uint64_t va, size_t n) {
    std::vector<T> out(n);
    std::memcpy(out.data(), memory_.host(va), n * sizeof(T));
    return out;
  }

  // Launches `kernel`; each of `args` fills one parameter (its low bytes, little-endian).
  LaunchResult launch(const std::string& kernel, Dim3 grid, Dim3 block, const std::vector<uint64_t>& args,
                      uint32_t dynamicShared = 0, uint64_t maxWarpInstructions = 100000000, int device = 0,
                      uint64_t moduleGlobalsVa = 0) {
    LaunchConfig cfg;
    cfg.device = device;
    cfg.moduleGlobalsVa = moduleGlobalsVa;
    cfg.grid = grid;
    cfg.block = block;
    cfg.dynamicShared = dynamicShared;
    cfg.maxWarpInstructions = maxWarpInstructions;
    const Function* fn = module_.find(kernel);
    if (fn != nullptr && args.size() == fn->params.size()) {
      std::vector<const void*> ptrs;
      for (const uint64_t& a : args) ptrs.push_back(&a);
      cfg.params = packParams(*fn, ptrs.data());
    }
    return executor_->launch(kernel, cfg);
  }

 private:
  Module module_;
  FlatMemory memory_;
  std::unique_ptr<Executor> executor_;
  bool ok_ = false;
  std::string error_;
};

// A kernel in which thread i loads the 64-bit word in[i] into %rd6, runs `body` and stores
// %rd7 to out[i]. Registers for the body: %r<16> (b32), %rd<16> (b64; 6 and 7 as said),
// %f<16> (f32), %fd<16> (f64), %h<8> (b16), %p<8> (pred).
inline std::string wordKernel(const std::string& body) {
  return R"(
.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 pin, .param .u64 pout)
{
  .reg .b32 %r<16>;
  .reg .b64 %rd<16>;
  .reg .f32 %f<16>;
  .reg .f64 %fd<16>;
  .reg .b16 %h<8>;
  .reg .pred %p<8>;
  ld.param.u64 %rd1, [pin];
  ld.param.u64 %rd2, [pout];
  mov.u32 %r0, %tid.x;
  mul.wide.u32 %rd3, %r0, 8;
  add.s64 %rd4, %rd1, %rd3;
  add.s64 %rd5, %rd2, %rd3;
  ld.global.u64 %rd6, [%rd4];
  mov.u64 %rd7, 0;
)" + body + R"(
  st.global.u64 [%rd5], %rd7;
  ret;
}
)";
}

// Runs `body` (see wordKernel) on each input, one thread each; returns the outputs.
inline std::vector<uint64_t> runWords(const std::string& body, const std::vector<uint64_t>& in) {
  Program p(wordKernel(body));
  EXPECT_TRUE(p.ok()) << p.error();
  if (!p.ok()) return {};
  const uint64_t a = p.buffer(in), out = p.buffer(in.size() * 8);
  const LaunchResult r = p.launch("k", {}, {static_cast<uint32_t>(in.size()), 1, 1}, {a, out});
  EXPECT_EQ(r.fault, Fault::kNone) << r.message;
  return p.read<uint64_t>(out, in.size());
}

inline uint64_t f32(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline uint64_t f64(double d) {
  uint64_t u;
  std::memcpy(&u, &d, 8);
  return u;
}
// Two 32-bit words in one 64-bit input (a in the low half).
inline uint64_t pair(uint32_t a, uint32_t b) { return a | (uint64_t{b} << 32); }

}  // namespace mcsim::ptx::test
