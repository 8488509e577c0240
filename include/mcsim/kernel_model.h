// Behavioural models of GPU kernels: what mcsim runs when a program launches a kernel.
//
// mcsim runs no GPU code. When a program launches a kernel (cuLaunchKernel, cuLaunchKernelEx),
// the driver looks the kernel's name up among the registered models; the model reads the launch
// (its shape and its parameters) and describes what the kernel does to memory as a list of
// steps: plain copies and element-wise reductions, multimem stores, reductions and
// loads-with-reduction on multicast addresses, and the signal/wait pair of a cross-GPU barrier.
// The node then carries the steps out in simulated time, in order, through the GPU's memory
// system, its NVLinks and the switches (multicast replication, in-switch reduction), moving the
// data exactly (unless MCSIM_TIMING_ONLY=1).
//
// mcsim's own kernel library (include/mcsim/kernels.h) is modelled this way; a program adds
// models for its own kernels with registerKernelModel before it launches them, e.g.
//
//   mcsim::KernelModel scale;
//   scale.paramBytes = {8, 8, 8};                     // (float* dst, const float* src, size_t n)
//   scale.expand = [](const mcsim::KernelLaunch& l, mcsim::KernelSteps& s) {
//     s.reduce(l.param<uint64_t>(0), l.param<uint64_t>(1), l.param<uint64_t>(1),
//              l.param<uint64_t>(2), MCSIM_DTYPE_F32, MCSIM_REDOP_ADD);   // dst = src + src
//     return std::string();                           // "" = the launch is valid
//   };
//   mcsim::registerKernelModel("scale_by_two", scale);
//
// docs/multimem.md has the worked example in full. registerKernelModel goes through the C API of
// mcsim/mcsim.h (mcsim_register_kernel_model), which mcsim's libcuda.so.1 exports; a program that
// wants to run on real GPUs too registers its models through mcsim_load_api there instead (the
// functions exist only under mcsim).
#pragma once

#include <cstdint>
#include <cstring>
#include <exception>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "mcsim/kernels.h"
#include "mcsim/mcsim.h"

namespace mcsim {

struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
  uint64_t count() const { return uint64_t{x} * y * z; }
};

// A launch as the model sees it.
struct KernelLaunch {
  std::string name;
  int device = 0;                 // the launching context's device
  Dim3 grid, block;
  unsigned sharedMemBytes = 0;
  std::vector<std::vector<uint8_t>> params;  // each parameter's bytes, in order

  // Parameter `i` read as a T (its size must be sizeof(T)).
  template <typename T>
  T param(size_t i) const {
    T v{};
    if (i < params.size() && params[i].size() == sizeof(T)) std::memcpy(&v, params[i].data(), sizeof(T));
    return v;
  }
  uint64_t threads() const { return grid.count() * block.count(); }
};

// One thing a kernel does to memory. Addresses are device virtual addresses as the launching
// context sees them; `count` is in elements of `dtype` (mcsim_dtype).
struct KernelStep {
  enum class Kind {
    kCopy,             // dst[0..bytes) = src[0..bytes)           (plain loads and stores)
    kReduce,           // dst[i] = a[i] op b[i]                     (plain loads and stores)
    kMultimemStore,    // every member's mc[i] = src[i]              (multimem.st)
    kMultimemReduce,   // every member's mc[i] += src[i]             (multimem.red.add)
    kMultimemLoadReduce,       // dst[i] = op over the members' mc[i]       (multimem.ld_reduce)
    kMultimemLoadReduceStore,  // every member's mc[i] = op over the members' mc[i]
    kSignal,           // every member's 32-bit word at mc += value  (multimem.red.release.add.u32)
    kWait,             // until the local 32-bit word at dst reaches value, modulo 2^32 (ld.acquire spin)
  };
  Kind kind = Kind::kCopy;
  uint64_t dst = 0, src = 0, src2 = 0, mc = 0;
  uint64_t bytes = 0;   // kCopy
  uint64_t count = 0;   // element-wise steps
  uint32_t dtype = MCSIM_DTYPE_F32;
  uint32_t op = MCSIM_REDOP_ADD;
  uint32_t value = 0;   // kSignal / kWait
};

// What a model fills in.
class KernelSteps {
 public:
  void copy(uint64_t dst, uint64_t src, uint64_t bytes) { add({KernelStep::Kind::kCopy, dst, src, 0, 0, bytes}); }
  void reduce(uint64_t dst, uint64_t a, uint64_t b, uint64_t count, uint32_t dtype, uint32_t op) {
    add({KernelStep::Kind::kReduce, dst, a, b, 0, 0, count, dtype, op});
  }
  void multimemStore(uint64_t mc, uint64_t src, uint64_t count, uint32_t dtype) {
    add({KernelStep::Kind::kMultimemStore, 0, src, 0, mc, 0, count, dtype});
  }
  void multimemReduce(uint64_t mc, uint64_t src, uint64_t count, uint32_t dtype) {
    add({KernelStep::Kind::kMultimemReduce, 0, src, 0, mc, 0, count, dtype, MCSIM_REDOP_ADD});
  }
  void multimemLoadReduce(uint64_t dst, uint64_t mc, uint64_t count, uint32_t dtype, uint32_t op) {
    add({KernelStep::Kind::kMultimemLoadReduce, dst, 0, 0, mc, 0, count, dtype, op});
  }
  void multimemLoadReduceStore(uint64_t mc, uint64_t count, uint32_t dtype, uint32_t op) {
    add({KernelStep::Kind::kMultimemLoadReduceStore, 0, 0, 0, mc, 0, count, dtype, op});
  }
  void signal(uint64_t mc, uint32_t value) { add({KernelStep::Kind::kSignal, 0, 0, 0, mc, 4, 0, 0, 0, value}); }
  void waitAtLeast(uint64_t local, uint32_t value) {
    add({KernelStep::Kind::kWait, local, 0, 0, 0, 4, 0, 0, 0, value});
  }
  // How many bytes of loads each thread keeps outstanding: the access width times the loads a
  // thread issues before it needs the first one's data (its unroll). A kernel whose threads load
  // one 16-byte vector and use it before loading the next keeps 16 in flight; NCCL's NVLS kernels
  // unroll four 16-byte multimem loads (64). 0 (the default): the GPU preset's
  // timing.sm.bytes_in_flight_per_thread. Stores are posted and do not count: a thread does not
  // wait for them.
  void setBytesInFlightPerThread(uint32_t bytes) { bytesInFlightPerThread_ = bytes; }
  uint32_t bytesInFlightPerThread() const { return bytesInFlightPerThread_; }

  const std::vector<KernelStep>& steps() const { return steps_; }

 private:
  void add(KernelStep s) { steps_.push_back(s); }
  std::vector<KernelStep> steps_;
  uint32_t bytesInFlightPerThread_ = 0;
};

struct KernelModel {
  // The size in bytes of each parameter, in order (how cuLaunchKernel's kernelParams are read).
  std::vector<size_t> paramBytes;
  // Describes the launch's effect; returns "" if the launch is valid, else why not. An invalid
  // launch behaves like a kernel that traps: cuLaunchKernel succeeds, the reason is printed, and
  // the context's sticky error becomes CUDA_ERROR_LAUNCH_FAILED.
  std::function<std::string(const KernelLaunch&, KernelSteps&)> expand;
};

namespace detail {

// The C API's expand function for a C++ model (`user` is the KernelModel): the launch in C++
// terms, the model's steps handed back one by one.
inline void expandCppModel(void* user, const mcsim_kernel_launch* c, mcsim_kernel_steps* out) {
  const KernelModel& model = *static_cast<const KernelModel*>(user);
  KernelLaunch l;
  l.name = c->name;
  l.device = c->device;
  l.grid = Dim3{c->grid.x, c->grid.y, c->grid.z};
  l.block = Dim3{c->block.x, c->block.y, c->block.z};
  l.sharedMemBytes = c->shared_mem_bytes;
  for (size_t i = 0; i < c->param_count; ++i) {
    const auto* p = static_cast<const uint8_t*>(c->params[i]);
    l.params.emplace_back(p, p + c->param_bytes[i]);
  }
  KernelSteps steps;
  std::string why;
  try {
    why = model.expand ? model.expand(l, steps) : std::string("the model has no expand function");
  } catch (const std::exception& e) {
    why = std::string("the model threw: ") + e.what();
  } catch (...) {
    why = "the model threw";
  }
  if (!why.empty()) {
    mcsim_kernel_steps_reject(out, why.c_str());
    return;
  }
  for (const KernelStep& s : steps.steps()) {
    const mcsim_kernel_step step = {static_cast<uint32_t>(s.kind), s.dst, s.src, s.src2, s.mc, s.bytes,
                                    s.count, s.dtype, s.op, s.value};
    mcsim_kernel_steps_add(out, &step);
  }
  mcsim_kernel_steps_set_bytes_in_flight_per_thread(out, steps.bytesInFlightPerThread());
}

inline void releaseCppModel(void* user) { delete static_cast<KernelModel*>(user); }

// KernelStep::Kind and mcsim_step_kind number the kinds alike (the cast above relies on it).
static_assert(static_cast<uint32_t>(KernelStep::Kind::kCopy) == MCSIM_STEP_COPY &&
                  static_cast<uint32_t>(KernelStep::Kind::kReduce) == MCSIM_STEP_REDUCE &&
                  static_cast<uint32_t>(KernelStep::Kind::kMultimemStore) == MCSIM_STEP_MULTIMEM_STORE &&
                  static_cast<uint32_t>(KernelStep::Kind::kMultimemReduce) == MCSIM_STEP_MULTIMEM_REDUCE &&
                  static_cast<uint32_t>(KernelStep::Kind::kMultimemLoadReduce) == MCSIM_STEP_MULTIMEM_LOAD_REDUCE &&
                  static_cast<uint32_t>(KernelStep::Kind::kMultimemLoadReduceStore) ==
                      MCSIM_STEP_MULTIMEM_LOAD_REDUCE_STORE &&
                  static_cast<uint32_t>(KernelStep::Kind::kSignal) == MCSIM_STEP_SIGNAL &&
                  static_cast<uint32_t>(KernelStep::Kind::kWait) == MCSIM_STEP_WAIT,
              "KernelStep::Kind and mcsim_step_kind differ");

}  // namespace detail

// Registers (or replaces) the model of kernels named `name`, through the C API
// (mcsim_register_kernel_model). Thread-safe; takes effect for launches made after it returns.
// Throws std::invalid_argument for an empty name or a parameter of 0 bytes.
inline void registerKernelModel(const std::string& name, KernelModel model) {
  const std::vector<size_t> paramBytes = model.paramBytes;
  auto* held = new KernelModel(std::move(model));
  if (mcsim_register_kernel_model(name.c_str(), paramBytes.data(), paramBytes.size(), &detail::expandCppModel, held,
                                  &detail::releaseCppModel) != MCSIM_SUCCESS) {
    delete held;  // not registered: still ours
    throw std::invalid_argument(mcsim_last_error());
  }
}
// Whether a model is registered under `name`.
inline bool hasKernelModel(const std::string& name) { return mcsim_has_kernel_model(name.c_str()) != 0; }

}  // namespace mcsim
