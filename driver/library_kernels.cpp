// Behavioural models of mcsim's kernel library (include/mcsim/kernels.h, kernels/mcsim_kernels.cu):
// each launch becomes the memory steps its real kernel performs. The checks mirror what the real
// kernels require of their arguments; an argument the real kernel would misbehave on is refused
// with the reason, so that a program finds its mistake here rather than on the GPU.
#include <string>

#include "driver/kernel_registry.h"
#include "mcsim/kernels.h"
#include "model/reduction.h"

namespace mcsim::driver {

namespace {

constexpr size_t kPtr = 8, kU64 = 8, kU32 = 4;
// mcsim_copy and mcsim_reduce keep eight loads in flight per thread (kCopyUnroll in the .cu).
constexpr uint32_t kPlainUnroll = 8;

bool floatVector(uint32_t dtype) {
  return dtype == MCSIM_DTYPE_F32 || dtype == MCSIM_DTYPE_F16X2 || dtype == MCSIM_DTYPE_BF16X2;
}

// The dtype / vec rules every multimem kernel shares.
std::string checkElements(uint32_t dtype, uint32_t vec, uint64_t count) {
  if (mcsim_dtype_bytes(dtype) == 0) return "unknown dtype " + std::to_string(dtype);
  if (vec != 1 && vec != 2 && vec != 4) return "vec must be 1, 2 or 4, not " + std::to_string(vec);
  if (vec != 1 && !floatVector(dtype)) return "vector forms exist only for f32, f16x2 and bf16x2";
  if (count % vec != 0) return "count " + std::to_string(count) + " is not a multiple of vec " + std::to_string(vec);
  return "";
}

// The bytes one access of the kernels' loops moves: `vec` elements, or a .v4 of 32-bit words on
// the all-reduce kernels' vector path.
uint32_t accessBytes(uint32_t dtype, uint64_t vec) { return static_cast<uint32_t>(mcsim_dtype_bytes(dtype) * vec); }

// The all-reduce kernels go four elements at a time (16 bytes) over the 32-bit float types when
// the buffer is 16-byte aligned, one element at a time otherwise.
uint32_t allReduceAccessBytes(uint32_t dtype, uint64_t mc) {
  return accessBytes(dtype, floatVector(dtype) && mc % 16 == 0 ? 4 : 1);
}

// The kernels' grid barrier: every block arrives once (adds 1 to every member's signal word) and
// waits until its own word reaches world * blocks * epoch (kernels/mcsim_kernels.cu).
void barrier(KernelSteps& s, uint64_t mcSignal, uint64_t signal, uint32_t world, uint32_t epoch, uint64_t blocks) {
  const auto b = static_cast<uint32_t>(blocks);
  s.signal(mcSignal, b);
  s.waitAtLeast(signal, world * b * epoch);
}

}  // namespace

void registerLibraryKernels(const std::function<void(const std::string&, KernelModel)>& add) {
  // multimem.st and multimem.red.add take the same arguments and differ only in their step.
  for (const bool reduce : {false, true}) {
    KernelModel m;
    m.paramBytes = {kPtr, kPtr, kU64, kU32, kU32};
    m.expand = [reduce](const KernelLaunch& l, KernelSteps& s) {
      const auto mc = l.param<uint64_t>(0), src = l.param<uint64_t>(1), count = l.param<uint64_t>(2);
      const auto dtype = l.param<uint32_t>(3), vec = l.param<uint32_t>(4);
      std::string why = checkElements(dtype, vec, count);
      s.setBytesInFlightPerThread(accessBytes(dtype, vec));  // the load of src; the multimem op is a store
      if (why.empty() && reduce) s.multimemReduce(mc, src, count, dtype);
      if (why.empty() && !reduce) s.multimemStore(mc, src, count, dtype);
      return why;
    };
    add(reduce ? MCSIM_KERNEL_MM_RED : MCSIM_KERNEL_MM_ST, m);
  }

  KernelModel ld;
  ld.paramBytes = {kPtr, kPtr, kU64, kU32, kU32, kU32};
  ld.expand = [](const KernelLaunch& l, KernelSteps& s) {
    const auto count = l.param<uint64_t>(2);
    const auto dtype = l.param<uint32_t>(3), op = l.param<uint32_t>(4), vec = l.param<uint32_t>(5);
    std::string why = checkElements(dtype, vec, count);
    // PTX's multimem.ld_reduce has min / max for f16x2, bf16x2 and the integers, not for f32
    // (ptxas refuses it; the real kernel traps).
    if (why.empty() && dtype == MCSIM_DTYPE_F32 && op != MCSIM_REDOP_ADD) {
      why = "multimem.ld_reduce has no min / max for f32";
    }
    if (why.empty() && !model::reductionDefined(dtype, op)) {
      why = "multimem.ld_reduce has no operator " + std::to_string(op) + " for dtype " + std::to_string(dtype);
    }
    s.setBytesInFlightPerThread(accessBytes(dtype, vec));
    if (why.empty()) s.multimemLoadReduce(l.param<uint64_t>(0), l.param<uint64_t>(1), count, dtype, op);
    return why;
  };
  add(MCSIM_KERNEL_MM_LD_REDUCE, ld);

  KernelModel bar;
  bar.paramBytes = {kPtr, kPtr, kU32, kU32};
  bar.expand = [](const KernelLaunch& l, KernelSteps& s) {
    const auto world = l.param<uint32_t>(2), epoch = l.param<uint32_t>(3);
    if (world == 0) return std::string("world must be at least 1");
    barrier(s, l.param<uint64_t>(0), l.param<uint64_t>(1), world, epoch, l.grid.count());
    return std::string();
  };
  add(MCSIM_KERNEL_BARRIER, bar);

  KernelModel one;
  one.paramBytes = {kPtr, kPtr, kU64, kU32, kPtr, kPtr, kU32, kU32};
  one.expand = [](const KernelLaunch& l, KernelSteps& s) {
    const auto count = l.param<uint64_t>(2);
    const auto dtype = l.param<uint32_t>(3), world = l.param<uint32_t>(6), epoch = l.param<uint32_t>(7);
    const auto mcSignal = l.param<uint64_t>(4), signal = l.param<uint64_t>(5);
    if (mcsim_dtype_bytes(dtype) == 0) return "unknown dtype " + std::to_string(dtype);
    if (world == 0) return std::string("world must be at least 1");
    const auto mc = l.param<uint64_t>(0), out = l.param<uint64_t>(1);
    s.setBytesInFlightPerThread(allReduceAccessBytes(dtype, mc | out));
    barrier(s, mcSignal, signal, world, epoch, l.grid.count());
    s.multimemLoadReduce(l.param<uint64_t>(1), l.param<uint64_t>(0), count, dtype, MCSIM_REDOP_ADD);
    barrier(s, mcSignal, signal, world, epoch + 1, l.grid.count());
    return std::string();
  };
  add(MCSIM_KERNEL_ALLREDUCE_ONESHOT, one);

  // twoshot and nvls differ in their loop's unroll only (kernels.h).
  for (const uint32_t unroll : {1u, 4u}) {
    KernelModel two;
    two.paramBytes = {kPtr, kU64, kU32, kPtr, kPtr, kU32, kU32, kU32};
    two.expand = [unroll](const KernelLaunch& l, KernelSteps& s) {
      const auto mc = l.param<uint64_t>(0), count = l.param<uint64_t>(1);
      const auto dtype = l.param<uint32_t>(2);
      const auto mcSignal = l.param<uint64_t>(3), signal = l.param<uint64_t>(4);
      const auto rank = l.param<uint32_t>(5), world = l.param<uint32_t>(6), epoch = l.param<uint32_t>(7);
      const uint64_t esz = mcsim_dtype_bytes(dtype);
      if (esz == 0) return "unknown dtype " + std::to_string(dtype);
      if (world == 0 || rank >= world) return "rank " + std::to_string(rank) + " is not below world " + std::to_string(world);
      // Shares as kernels.h defines them: ceil(count / world), rounded up to 4 elements.
      const uint64_t share = ((count + world - 1) / world + 3) / 4 * 4;
      const uint64_t first = std::min<uint64_t>(count, share * rank);
      const uint64_t n = std::min<uint64_t>(share, count - first);
      s.setBytesInFlightPerThread(unroll * allReduceAccessBytes(dtype, mc + first * esz));
      barrier(s, mcSignal, signal, world, epoch, l.grid.count());
      if (n > 0) s.multimemLoadReduceStore(mc + first * esz, n, dtype, MCSIM_REDOP_ADD);
      barrier(s, mcSignal, signal, world, epoch + 1, l.grid.count());
      return std::string();
    };
    add(unroll == 1 ? MCSIM_KERNEL_ALLREDUCE_TWOSHOT : MCSIM_KERNEL_ALLREDUCE_NVLS, two);
  }

  KernelModel copy;
  copy.paramBytes = {kPtr, kPtr, kU64};
  copy.expand = [](const KernelLaunch& l, KernelSteps& s) {
    // Eight loads of the widest of 16, 8, 4 or 1 bytes that both addresses allow (the bulk).
    const uint64_t both = l.param<uint64_t>(0) | l.param<uint64_t>(1);
    s.setBytesInFlightPerThread(kPlainUnroll * (both % 16 == 0 ? 16 : both % 8 == 0 ? 8 : both % 4 == 0 ? 4 : 1));
    s.copy(l.param<uint64_t>(0), l.param<uint64_t>(1), l.param<uint64_t>(2));
    return std::string();
  };
  add(MCSIM_KERNEL_COPY, copy);

  KernelModel reduce;
  reduce.paramBytes = {kPtr, kPtr, kPtr, kU64, kU32, kU32};
  reduce.expand = [](const KernelLaunch& l, KernelSteps& s) {
    const auto dtype = l.param<uint32_t>(4), op = l.param<uint32_t>(5);
    // The kernel takes the operators multimem.ld_reduce takes (no min / max for f32 either).
    if (dtype == MCSIM_DTYPE_F32 && op != MCSIM_REDOP_ADD) return std::string("no min / max for f32");
    if (!model::reductionDefined(dtype, op)) {
      return "no operator " + std::to_string(op) + " for dtype " + std::to_string(dtype);
    }
    // Four 16-byte pairs of a and b in flight per thread on the 4-byte types' aligned path, else one
    // element of each.
    const uint64_t all = l.param<uint64_t>(0) | l.param<uint64_t>(1) | l.param<uint64_t>(2);
    const bool quads = mcsim_dtype_bytes(dtype) == 4 && all % 16 == 0;
    s.setBytesInFlightPerThread(quads ? kPlainUnroll * 16 : 2 * accessBytes(dtype, 1));
    s.reduce(l.param<uint64_t>(0), l.param<uint64_t>(1), l.param<uint64_t>(2), l.param<uint64_t>(3), dtype, op);
    return std::string();
  };
  add(MCSIM_KERNEL_REDUCE, reduce);
}

}  // namespace mcsim::driver
