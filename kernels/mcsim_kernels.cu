// mcsim's kernel library: the real CUDA kernels behind include/mcsim/kernels.h.
//
// On a real GPU (sm_90 or newer) these run as compiled; under mcsim the driver recognises them by
// name and runs its behavioural models instead, so what a kernel does here is the specification
// the models follow. Every memory access the ABI talks about is written as inline PTX, so the
// instruction (and its type and vector form) is exactly the one named, not whatever the compiler
// would pick.
//
// Shared rules:
//  - Each kernel is an extern "C" __global__ function with the name and parameters of kernels.h;
//    dtype / op / vec are dispatched at run time (a switch), so the library has exactly the nine
//    names.
//  - Every kernel is correct for any launch shape: 1-, 2- or 3-D grids and blocks, one grid-stride
//    loop over the flattened thread index.
//  - An argument combination the ABI or PTX does not define (unknown dtype or op, a vec the type
//    has no form for, a count that is not a multiple of vec, world 0, rank >= world, an op
//    multimem.ld_reduce does not take on that type) executes `trap`: the launch fails instead of
//    computing something else. The combinations ptxas takes are listed at each switch.
//  - Values are carried as raw 32- or 64-bit words (uint32_t / uint2 / uint4 / uint64_t): PTX lets
//    a .b32 / .b64 register stand for any type of its size, so one set of loops serves all types.

#include <stdint.h>

#include "mcsim/kernels.h"

namespace {

// ---------------------------------------------------------------------------------------------
// Launch shape.

__device__ __forceinline__ uint64_t threadsPerBlock() {
  return uint64_t(blockDim.x) * blockDim.y * blockDim.z;
}

__device__ __forceinline__ uint64_t blocksInGrid() {
  return uint64_t(gridDim.x) * gridDim.y * gridDim.z;
}

__device__ __forceinline__ uint64_t globalThread() {
  const uint64_t block = blockIdx.x + uint64_t(gridDim.x) * (blockIdx.y + uint64_t(gridDim.y) * blockIdx.z);
  const uint64_t thread = threadIdx.x + uint64_t(blockDim.x) * (threadIdx.y + uint64_t(blockDim.y) * threadIdx.z);
  return block * threadsPerBlock() + thread;
}

__device__ __forceinline__ uint64_t threadsInGrid() { return blocksInGrid() * threadsPerBlock(); }

__device__ __forceinline__ bool blockLeader() {
  return threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0;
}

// Invalid arguments: stop the grid with an error rather than guess (see the rules above).
__device__ __forceinline__ void refuse() { asm volatile("trap;"); }

// ---------------------------------------------------------------------------------------------
// multimem instructions, one functor per (instruction, type, vector form) that ptxas accepts.
// T is the register shape: uint32_t (one 32-bit word), uint2 / uint4 (.v2 / .v4 of 32-bit words),
// uint64_t (one 64-bit word). All are .relaxed.sys: ordering comes from the barrier, not from
// the data accesses.

#define MCSIM_ST_W1(Name, Type)                                                                  \
  struct Name {                                                                                  \
    using T = uint32_t;                                                                          \
    static __device__ __forceinline__ void apply(uint64_t a, T v) {                              \
      asm volatile("multimem.st.relaxed.sys.global." Type " [%0], %1;" ::"l"(a), "r"(v)          \
                   : "memory");                                                                  \
    }                                                                                            \
  };
#define MCSIM_ST_W2(Name, Type)                                                                  \
  struct Name {                                                                                  \
    using T = uint2;                                                                             \
    static __device__ __forceinline__ void apply(uint64_t a, T v) {                              \
      asm volatile("multimem.st.relaxed.sys.global.v2." Type " [%0], {%1, %2};" ::"l"(a),        \
                   "r"(v.x), "r"(v.y)                                                            \
                   : "memory");                                                                  \
    }                                                                                            \
  };
#define MCSIM_ST_W4(Name, Type)                                                                  \
  struct Name {                                                                                  \
    using T = uint4;                                                                             \
    static __device__ __forceinline__ void apply(uint64_t a, T v) {                              \
      asm volatile("multimem.st.relaxed.sys.global.v4." Type " [%0], {%1, %2, %3, %4};" ::"l"(a), \
                   "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)                                        \
                   : "memory");                                                                  \
    }                                                                                            \
  };
#define MCSIM_ST_D1(Name, Type)                                                                  \
  struct Name {                                                                                  \
    using T = uint64_t;                                                                          \
    static __device__ __forceinline__ void apply(uint64_t a, T v) {                              \
      asm volatile("multimem.st.relaxed.sys.global." Type " [%0], %1;" ::"l"(a), "l"(v)          \
                   : "memory");                                                                  \
    }                                                                                            \
  };

#define MCSIM_RED_W1(Name, Type)                                                                 \
  struct Name {                                                                                  \
    using T = uint32_t;                                                                          \
    static __device__ __forceinline__ void apply(uint64_t a, T v) {                              \
      asm volatile("multimem.red.relaxed.sys.global.add." Type " [%0], %1;" ::"l"(a), "r"(v)     \
                   : "memory");                                                                  \
    }                                                                                            \
  };
#define MCSIM_RED_W2(Name, Type)                                                                 \
  struct Name {                                                                                  \
    using T = uint2;                                                                             \
    static __device__ __forceinline__ void apply(uint64_t a, T v) {                              \
      asm volatile("multimem.red.relaxed.sys.global.add.v2." Type " [%0], {%1, %2};" ::"l"(a),   \
                   "r"(v.x), "r"(v.y)                                                            \
                   : "memory");                                                                  \
    }                                                                                            \
  };
#define MCSIM_RED_W4(Name, Type)                                                                 \
  struct Name {                                                                                  \
    using T = uint4;                                                                             \
    static __device__ __forceinline__ void apply(uint64_t a, T v) {                              \
      asm volatile("multimem.red.relaxed.sys.global.add.v4." Type                                \
                   " [%0], {%1, %2, %3, %4};" ::"l"(a),                                          \
                   "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)                                        \
                   : "memory");                                                                  \
    }                                                                                            \
  };
#define MCSIM_RED_D1(Name, Type)                                                                 \
  struct Name {                                                                                  \
    using T = uint64_t;                                                                          \
    static __device__ __forceinline__ void apply(uint64_t a, T v) {                              \
      asm volatile("multimem.red.relaxed.sys.global.add." Type " [%0], %1;" ::"l"(a), "l"(v)     \
                   : "memory");                                                                  \
    }                                                                                            \
  };

#define MCSIM_LDR_W1(Name, Op, Type)                                                             \
  struct Name {                                                                                  \
    using T = uint32_t;                                                                          \
    static __device__ __forceinline__ T apply(uint64_t a) {                                      \
      T d;                                                                                       \
      asm volatile("multimem.ld_reduce.relaxed.sys.global." Op "." Type " %0, [%1];"             \
                   : "=r"(d)                                                                     \
                   : "l"(a)                                                                      \
                   : "memory");                                                                  \
      return d;                                                                                  \
    }                                                                                            \
  };
#define MCSIM_LDR_W2(Name, Op, Type)                                                             \
  struct Name {                                                                                  \
    using T = uint2;                                                                             \
    static __device__ __forceinline__ T apply(uint64_t a) {                                      \
      T d;                                                                                       \
      asm volatile("multimem.ld_reduce.relaxed.sys.global." Op ".v2." Type " {%0, %1}, [%2];"    \
                   : "=r"(d.x), "=r"(d.y)                                                        \
                   : "l"(a)                                                                      \
                   : "memory");                                                                  \
      return d;                                                                                  \
    }                                                                                            \
  };
#define MCSIM_LDR_W4(Name, Op, Type)                                                             \
  struct Name {                                                                                  \
    using T = uint4;                                                                             \
    static __device__ __forceinline__ T apply(uint64_t a) {                                      \
      T d;                                                                                       \
      asm volatile("multimem.ld_reduce.relaxed.sys.global." Op ".v4." Type                       \
                   " {%0, %1, %2, %3}, [%4];"                                                    \
                   : "=r"(d.x), "=r"(d.y), "=r"(d.z), "=r"(d.w)                                  \
                   : "l"(a)                                                                      \
                   : "memory");                                                                  \
      return d;                                                                                  \
    }                                                                                            \
  };
#define MCSIM_LDR_D1(Name, Op, Type)                                                             \
  struct Name {                                                                                  \
    using T = uint64_t;                                                                          \
    static __device__ __forceinline__ T apply(uint64_t a) {                                      \
      T d;                                                                                       \
      asm volatile("multimem.ld_reduce.relaxed.sys.global." Op "." Type " %0, [%1];"             \
                   : "=l"(d)                                                                     \
                   : "l"(a)                                                                      \
                   : "memory");                                                                  \
      return d;                                                                                  \
    }                                                                                            \
  };

// multimem.st: integer types use the untyped .b32 / .b64 forms (a store does no arithmetic);
// PTX has vector forms only for the floating-point types.
MCSIM_ST_W1(StB32, "b32")
MCSIM_ST_D1(StB64, "b64")
MCSIM_ST_D1(StF64, "f64")
MCSIM_ST_W1(StF32, "f32")
MCSIM_ST_W2(StF32x2, "f32")
MCSIM_ST_W4(StF32x4, "f32")
MCSIM_ST_W1(StH2, "f16x2")
MCSIM_ST_W2(StH2x2, "f16x2")
MCSIM_ST_W4(StH2x4, "f16x2")
MCSIM_ST_W1(StBh2, "bf16x2")
MCSIM_ST_W2(StBh2x2, "bf16x2")
MCSIM_ST_W4(StBh2x4, "bf16x2")

// multimem.red.add: every ABI type; vector forms for the 32-bit floating-point types only.
MCSIM_RED_W1(RedF32, "f32")
MCSIM_RED_W2(RedF32x2, "f32")
MCSIM_RED_W4(RedF32x4, "f32")
MCSIM_RED_W1(RedH2, "f16x2")
MCSIM_RED_W2(RedH2x2, "f16x2")
MCSIM_RED_W4(RedH2x4, "f16x2")
MCSIM_RED_W1(RedBh2, "bf16x2")
MCSIM_RED_W2(RedBh2x2, "bf16x2")
MCSIM_RED_W4(RedBh2x4, "bf16x2")
MCSIM_RED_D1(RedF64, "f64")
MCSIM_RED_W1(RedU32, "u32")
MCSIM_RED_W1(RedS32, "s32")
MCSIM_RED_D1(RedU64, "u64")

// multimem.ld_reduce.add: every ABI type; vector forms for the 32-bit floating-point types.
MCSIM_LDR_W1(AddF32, "add", "f32")
MCSIM_LDR_W2(AddF32x2, "add", "f32")
MCSIM_LDR_W4(AddF32x4, "add", "f32")
MCSIM_LDR_W1(AddH2, "add", "f16x2")
MCSIM_LDR_W2(AddH2x2, "add", "f16x2")
MCSIM_LDR_W4(AddH2x4, "add", "f16x2")
MCSIM_LDR_W1(AddBh2, "add", "bf16x2")
MCSIM_LDR_W2(AddBh2x2, "add", "bf16x2")
MCSIM_LDR_W4(AddBh2x4, "add", "bf16x2")
MCSIM_LDR_D1(AddF64, "add", "f64")
MCSIM_LDR_W1(AddU32, "add", "u32")
MCSIM_LDR_W1(AddS32, "add", "s32")
MCSIM_LDR_D1(AddU64, "add", "u64")

// multimem.ld_reduce.min / .max: ptxas (CUDA 13.0, sm_90 and sm_100) rejects them on .f32 and
// .f64 ("Incorrect type '.f32' for operation '.min'"); it takes the packed halves (all vector
// forms) and the integer types.
MCSIM_LDR_W1(MinH2, "min", "f16x2")
MCSIM_LDR_W2(MinH2x2, "min", "f16x2")
MCSIM_LDR_W4(MinH2x4, "min", "f16x2")
MCSIM_LDR_W1(MinBh2, "min", "bf16x2")
MCSIM_LDR_W2(MinBh2x2, "min", "bf16x2")
MCSIM_LDR_W4(MinBh2x4, "min", "bf16x2")
MCSIM_LDR_W1(MinU32, "min", "u32")
MCSIM_LDR_W1(MinS32, "min", "s32")
MCSIM_LDR_D1(MinU64, "min", "u64")
MCSIM_LDR_W1(MaxH2, "max", "f16x2")
MCSIM_LDR_W2(MaxH2x2, "max", "f16x2")
MCSIM_LDR_W4(MaxH2x4, "max", "f16x2")
MCSIM_LDR_W1(MaxBh2, "max", "bf16x2")
MCSIM_LDR_W2(MaxBh2x2, "max", "bf16x2")
MCSIM_LDR_W4(MaxBh2x4, "max", "bf16x2")
MCSIM_LDR_W1(MaxU32, "max", "u32")
MCSIM_LDR_W1(MaxS32, "max", "s32")
MCSIM_LDR_D1(MaxU64, "max", "u64")

// ---------------------------------------------------------------------------------------------
// Plain element-wise arithmetic for mcsim_reduce, in PTX so that rounding and NaN handling are
// PTX's: add.rn (round to nearest even, no .ftz, so subnormals are kept), min / max (a NaN
// operand yields the other operand).

#define MCSIM_ARITH_W(Name, Insn)                                                                \
  struct Name {                                                                                  \
    using T = uint32_t;                                                                          \
    static __device__ __forceinline__ T apply(T x, T y) {                                        \
      T d;                                                                                       \
      asm(Insn " %0, %1, %2;" : "=r"(d) : "r"(x), "r"(y));                                       \
      return d;                                                                                  \
    }                                                                                            \
  };
#define MCSIM_ARITH_D(Name, Insn)                                                                \
  struct Name {                                                                                  \
    using T = uint64_t;                                                                          \
    static __device__ __forceinline__ T apply(T x, T y) {                                        \
      T d;                                                                                       \
      asm(Insn " %0, %1, %2;" : "=l"(d) : "l"(x), "l"(y));                                       \
      return d;                                                                                  \
    }                                                                                            \
  };

MCSIM_ARITH_W(PlainAddF32, "add.rn.f32")
MCSIM_ARITH_W(PlainAddH2, "add.rn.f16x2")
MCSIM_ARITH_W(PlainMinH2, "min.f16x2")
MCSIM_ARITH_W(PlainMaxH2, "max.f16x2")
MCSIM_ARITH_W(PlainAddBh2, "add.rn.bf16x2")
MCSIM_ARITH_W(PlainMinBh2, "min.bf16x2")
MCSIM_ARITH_W(PlainMaxBh2, "max.bf16x2")
MCSIM_ARITH_D(PlainAddF64, "add.rn.f64")
MCSIM_ARITH_W(PlainAddU32, "add.u32")
MCSIM_ARITH_W(PlainMinU32, "min.u32")
MCSIM_ARITH_W(PlainMaxU32, "max.u32")
MCSIM_ARITH_W(PlainAddS32, "add.s32")
MCSIM_ARITH_W(PlainMinS32, "min.s32")
MCSIM_ARITH_W(PlainMaxS32, "max.s32")
MCSIM_ARITH_D(PlainAddU64, "add.u64")
MCSIM_ARITH_D(PlainMinU64, "min.u64")
MCSIM_ARITH_D(PlainMaxU64, "max.u64")

// ---------------------------------------------------------------------------------------------
// Grid-stride loops. `n` counts units of Op::T (count / vec elements).

template <class Op>
__device__ __forceinline__ void storeLoop(uint64_t mcDst, uint64_t src, uint64_t n) {
  using T = typename Op::T;
  const T* in = reinterpret_cast<const T*>(src);
  for (uint64_t i = globalThread(), step = threadsInGrid(); i < n; i += step) {
    Op::apply(mcDst + i * sizeof(T), in[i]);
  }
}

template <class Op>
__device__ __forceinline__ void loadReduceLoop(uint64_t dst, uint64_t mcSrc, uint64_t n) {
  using T = typename Op::T;
  T* out = reinterpret_cast<T*>(dst);
  for (uint64_t i = globalThread(), step = threadsInGrid(); i < n; i += step) {
    out[i] = Op::apply(mcSrc + i * sizeof(T));
  }
}

// In place: reduce over the members, then store the result to every member (two-shot's step),
// with U loads in flight per thread: a thread issues its U ld_reduce (U grid strides apart, so a
// warp's accesses stay coalesced) before it stores any sum.
template <class Ldr, class St, int U>
__device__ __forceinline__ void reduceBroadcastLoop(uint64_t mc, uint64_t n) {
  using T = typename Ldr::T;
  const uint64_t step = threadsInGrid();
  for (uint64_t i = globalThread(); i < n; i += U * step) {
    T v[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      if (i + u * step < n) v[u] = Ldr::apply(mc + (i + u * step) * sizeof(T));
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      if (i + u * step < n) St::apply(mc + (i + u * step) * sizeof(T), v[u]);
    }
  }
}

// The plain kernels keep kCopyUnroll loads in flight per thread (NCCL's ncclCollUnroll for sm_80
// and newer is 8): a thread loads its kCopyUnroll units (grid strides apart) before it stores.
constexpr int kCopyUnroll = 8;

template <class T>
__device__ __forceinline__ void copyLoop(uint64_t dst, uint64_t src, uint64_t n) {
  T* out = reinterpret_cast<T*>(dst);
  const T* in = reinterpret_cast<const T*>(src);
  const uint64_t step = threadsInGrid();
  for (uint64_t i = globalThread(); i < n; i += kCopyUnroll * step) {
    T v[kCopyUnroll];
#pragma unroll
    for (int u = 0; u < kCopyUnroll; ++u) {
      if (i + u * step < n) v[u] = in[i + u * step];
    }
#pragma unroll
    for (int u = 0; u < kCopyUnroll; ++u) {
      if (i + u * step < n) out[i + u * step] = v[u];
    }
  }
}

// dst[i] = a[i] op b[i]. Four-byte types go four words at a time when all three buffers are
// 16-byte aligned, kCopyUnroll / 2 such pairs of loads in flight per thread (the same bytes as
// copyLoop's); the rest one word at a time. The result is the same either way.
template <class Op>
__device__ __forceinline__ void plainReduce(uint64_t dst, uint64_t a, uint64_t b, uint64_t count) {
  using T = typename Op::T;
  uint64_t done = 0;
  if constexpr (sizeof(T) == 4) {
    if (((dst | a | b) & 15) == 0) {
      uint4* out = reinterpret_cast<uint4*>(dst);
      const uint4* x = reinterpret_cast<const uint4*>(a);
      const uint4* y = reinterpret_cast<const uint4*>(b);
      const uint64_t quads = count / 4, step = threadsInGrid();
      constexpr int kPairs = kCopyUnroll / 2;
      for (uint64_t i = globalThread(); i < quads; i += kPairs * step) {
        uint4 u[kPairs], v[kPairs];
#pragma unroll
        for (int k = 0; k < kPairs; ++k) {
          if (i + k * step < quads) {
            u[k] = x[i + k * step];
            v[k] = y[i + k * step];
          }
        }
#pragma unroll
        for (int k = 0; k < kPairs; ++k) {
          if (i + k * step < quads) {
            out[i + k * step] = make_uint4(Op::apply(u[k].x, v[k].x), Op::apply(u[k].y, v[k].y),
                                           Op::apply(u[k].z, v[k].z), Op::apply(u[k].w, v[k].w));
          }
        }
      }
      done = quads * 4;
    }
  }
  T* out = reinterpret_cast<T*>(dst);
  const T* x = reinterpret_cast<const T*>(a);
  const T* y = reinterpret_cast<const T*>(b);
  for (uint64_t i = done + globalThread(), step = threadsInGrid(); i < count; i += step) {
    out[i] = Op::apply(x[i], y[i]);
  }
}

// ---------------------------------------------------------------------------------------------
// The barrier.
//
// Every block of the grid is one arrival: after __syncthreads (so the whole block's earlier
// accesses come first), its first thread adds 1 to every member's signal word with
// multimem.red.release.sys, then spins with ld.acquire.sys on this GPU's own word until it
// reaches world * blocks * epoch, where blocks is the number of blocks in the grid; the block
// then leaves through a second __syncthreads. So a barrier of a whole grid completes when all
// blocks of all members have arrived, for any grid size, and with one block this is kernels.h's
// world * epoch. The comparison is modulo 2^32 ((int32_t)(word - target) >= 0), so a word that
// wraps after 2^32 arrivals keeps working.
//
// What this asks of the caller (it is a spin barrier): every member launches the same number of
// blocks; all the blocks of a grid are resident at once (a block that spins holds its SM, so a
// grid larger than the GPU can hold never completes); and a signal word is used by barriers of one
// grid size only (the target assumes every earlier epoch had the same number of arrivals).

__device__ __forceinline__ void gridBarrier(uint64_t mcSignal, uint64_t signal, uint32_t world,
                                            uint32_t epoch) {
  __syncthreads();
  if (blockLeader()) {
    const uint32_t one = 1;
    asm volatile("multimem.red.release.sys.global.add.u32 [%0], %1;" ::"l"(mcSignal), "r"(one)
                 : "memory");
    const uint32_t target = world * uint32_t(blocksInGrid()) * epoch;
    uint32_t seen;
    do {
      asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(seen) : "l"(signal) : "memory");
    } while (int32_t(seen - target) < 0);
  }
  __syncthreads();
}

// ---------------------------------------------------------------------------------------------
// The all-reduce bodies (sum). They pick the vector form themselves: .v4 for the 32-bit
// floating-point types over the largest multiple of 4 elements when the buffers are 16-byte
// aligned, one element at a time for the rest and for the other types.

template <class Ldr1, class Ldr4>
__device__ __forceinline__ void oneshotWords(uint64_t mc, uint64_t out, uint64_t count) {
  uint64_t done = 0;
  if (((mc | out) & 15) == 0) {
    done = count / 4 * 4;
    loadReduceLoop<Ldr4>(out, mc, done / 4);
  }
  loadReduceLoop<Ldr1>(out + done * 4, mc + done * 4, count - done);
}

__device__ void oneshotBody(uint64_t mc, uint64_t out, uint64_t count, uint32_t dtype) {
  switch (dtype) {
    case MCSIM_DTYPE_F32: oneshotWords<AddF32, AddF32x4>(mc, out, count); return;
    case MCSIM_DTYPE_F16X2: oneshotWords<AddH2, AddH2x4>(mc, out, count); return;
    case MCSIM_DTYPE_BF16X2: oneshotWords<AddBh2, AddBh2x4>(mc, out, count); return;
    case MCSIM_DTYPE_F64: loadReduceLoop<AddF64>(out, mc, count); return;
    case MCSIM_DTYPE_U32: loadReduceLoop<AddU32>(out, mc, count); return;
    case MCSIM_DTYPE_S32: loadReduceLoop<AddS32>(out, mc, count); return;
    case MCSIM_DTYPE_U64: loadReduceLoop<AddU64>(out, mc, count); return;
    default: return;  // checked by the caller
  }
}

template <class Ldr1, class St1, class Ldr4, class St4, int U>
__device__ __forceinline__ void twoshotWords(uint64_t mc, uint64_t count) {
  uint64_t done = 0;
  if ((mc & 15) == 0) {
    done = count / 4 * 4;
    reduceBroadcastLoop<Ldr4, St4, U>(mc, done / 4);
  }
  reduceBroadcastLoop<Ldr1, St1, U>(mc + done * 4, count - done);
}

// `mc` is the start of this rank's share, `count` its length in elements; U loads in flight per
// thread (1: mcsim_allreduce_twoshot, 4: mcsim_allreduce_nvls).
template <int U>
__device__ void twoshotBody(uint64_t mc, uint64_t count, uint32_t dtype) {
  switch (dtype) {
    case MCSIM_DTYPE_F32: twoshotWords<AddF32, StF32, AddF32x4, StF32x4, U>(mc, count); return;
    case MCSIM_DTYPE_F16X2: twoshotWords<AddH2, StH2, AddH2x4, StH2x4, U>(mc, count); return;
    case MCSIM_DTYPE_BF16X2: twoshotWords<AddBh2, StBh2, AddBh2x4, StBh2x4, U>(mc, count); return;
    case MCSIM_DTYPE_F64: reduceBroadcastLoop<AddF64, StF64, U>(mc, count); return;
    case MCSIM_DTYPE_U32: reduceBroadcastLoop<AddU32, StB32, U>(mc, count); return;
    case MCSIM_DTYPE_S32: reduceBroadcastLoop<AddS32, StB32, U>(mc, count); return;
    case MCSIM_DTYPE_U64: reduceBroadcastLoop<AddU64, StB64, U>(mc, count); return;
    default: return;  // checked by the caller
  }
}

// kernels.h's mcsim_dtype_bytes is host code; the same rule for the device.
__device__ __forceinline__ uint64_t elementBytes(uint32_t dtype) {
  return dtype == MCSIM_DTYPE_F64 || dtype == MCSIM_DTYPE_U64 ? 8 : dtype <= MCSIM_DTYPE_U64 ? 4 : 0;
}

}  // namespace

// Dispatch helper: run Loop<A1|A2|A4>(args...) for vec 1, 2 or 4, else refuse.
#define MCSIM_BY_VEC(Loop, A1, A2, A4, ...)                                                      \
  switch (vec) {                                                                                 \
    case 1: Loop<A1>(__VA_ARGS__); return;                                                       \
    case 2: Loop<A2>(__VA_ARGS__); return;                                                       \
    case 4: Loop<A4>(__VA_ARGS__); return;                                                       \
    default: refuse(); return;                                                                   \
  }
// Types without vector forms: vec must be 1.
#define MCSIM_SCALAR(Loop, A1, ...)                                                              \
  if (vec != 1) {                                                                                \
    refuse();                                                                                    \
    return;                                                                                      \
  }                                                                                              \
  Loop<A1>(__VA_ARGS__);                                                                         \
  return;

extern "C" __global__ void mcsim_mm_st(uint64_t mc_dst, uint64_t src, uint64_t count,
                                       uint32_t dtype, uint32_t vec) {
  if (vec == 0 || count % vec != 0) {
    refuse();
    return;
  }
  const uint64_t n = count / vec;
  switch (dtype) {
    case MCSIM_DTYPE_F32: MCSIM_BY_VEC(storeLoop, StF32, StF32x2, StF32x4, mc_dst, src, n)
    case MCSIM_DTYPE_F16X2: MCSIM_BY_VEC(storeLoop, StH2, StH2x2, StH2x4, mc_dst, src, n)
    case MCSIM_DTYPE_BF16X2: MCSIM_BY_VEC(storeLoop, StBh2, StBh2x2, StBh2x4, mc_dst, src, n)
    case MCSIM_DTYPE_F64: MCSIM_SCALAR(storeLoop, StF64, mc_dst, src, n)
    case MCSIM_DTYPE_U32:
    case MCSIM_DTYPE_S32: MCSIM_SCALAR(storeLoop, StB32, mc_dst, src, n)
    case MCSIM_DTYPE_U64: MCSIM_SCALAR(storeLoop, StB64, mc_dst, src, n)
    default: refuse(); return;
  }
}

extern "C" __global__ void mcsim_mm_red(uint64_t mc_dst, uint64_t src, uint64_t count,
                                        uint32_t dtype, uint32_t vec) {
  if (vec == 0 || count % vec != 0) {
    refuse();
    return;
  }
  const uint64_t n = count / vec;
  switch (dtype) {
    case MCSIM_DTYPE_F32: MCSIM_BY_VEC(storeLoop, RedF32, RedF32x2, RedF32x4, mc_dst, src, n)
    case MCSIM_DTYPE_F16X2: MCSIM_BY_VEC(storeLoop, RedH2, RedH2x2, RedH2x4, mc_dst, src, n)
    case MCSIM_DTYPE_BF16X2: MCSIM_BY_VEC(storeLoop, RedBh2, RedBh2x2, RedBh2x4, mc_dst, src, n)
    case MCSIM_DTYPE_F64: MCSIM_SCALAR(storeLoop, RedF64, mc_dst, src, n)
    case MCSIM_DTYPE_U32: MCSIM_SCALAR(storeLoop, RedU32, mc_dst, src, n)
    case MCSIM_DTYPE_S32: MCSIM_SCALAR(storeLoop, RedS32, mc_dst, src, n)
    case MCSIM_DTYPE_U64: MCSIM_SCALAR(storeLoop, RedU64, mc_dst, src, n)
    default: refuse(); return;
  }
}

// Takes: add on every type (vector forms on f32 / f16x2 / bf16x2); min and max on f16x2 and
// bf16x2 (vector forms too), u32, s32 and u64. Refuses min / max on f32 and f64 (PTX has none).
extern "C" __global__ void mcsim_mm_ld_reduce(uint64_t dst, uint64_t mc_src, uint64_t count,
                                              uint32_t dtype, uint32_t op, uint32_t vec) {
  if (vec == 0 || count % vec != 0) {
    refuse();
    return;
  }
  const uint64_t n = count / vec;
  switch (op) {
    case MCSIM_REDOP_ADD:
      switch (dtype) {
        case MCSIM_DTYPE_F32: MCSIM_BY_VEC(loadReduceLoop, AddF32, AddF32x2, AddF32x4, dst, mc_src, n)
        case MCSIM_DTYPE_F16X2: MCSIM_BY_VEC(loadReduceLoop, AddH2, AddH2x2, AddH2x4, dst, mc_src, n)
        case MCSIM_DTYPE_BF16X2:
          MCSIM_BY_VEC(loadReduceLoop, AddBh2, AddBh2x2, AddBh2x4, dst, mc_src, n)
        case MCSIM_DTYPE_F64: MCSIM_SCALAR(loadReduceLoop, AddF64, dst, mc_src, n)
        case MCSIM_DTYPE_U32: MCSIM_SCALAR(loadReduceLoop, AddU32, dst, mc_src, n)
        case MCSIM_DTYPE_S32: MCSIM_SCALAR(loadReduceLoop, AddS32, dst, mc_src, n)
        case MCSIM_DTYPE_U64: MCSIM_SCALAR(loadReduceLoop, AddU64, dst, mc_src, n)
        default: refuse(); return;
      }
    case MCSIM_REDOP_MIN:
      switch (dtype) {
        case MCSIM_DTYPE_F16X2: MCSIM_BY_VEC(loadReduceLoop, MinH2, MinH2x2, MinH2x4, dst, mc_src, n)
        case MCSIM_DTYPE_BF16X2:
          MCSIM_BY_VEC(loadReduceLoop, MinBh2, MinBh2x2, MinBh2x4, dst, mc_src, n)
        case MCSIM_DTYPE_U32: MCSIM_SCALAR(loadReduceLoop, MinU32, dst, mc_src, n)
        case MCSIM_DTYPE_S32: MCSIM_SCALAR(loadReduceLoop, MinS32, dst, mc_src, n)
        case MCSIM_DTYPE_U64: MCSIM_SCALAR(loadReduceLoop, MinU64, dst, mc_src, n)
        default: refuse(); return;
      }
    case MCSIM_REDOP_MAX:
      switch (dtype) {
        case MCSIM_DTYPE_F16X2: MCSIM_BY_VEC(loadReduceLoop, MaxH2, MaxH2x2, MaxH2x4, dst, mc_src, n)
        case MCSIM_DTYPE_BF16X2:
          MCSIM_BY_VEC(loadReduceLoop, MaxBh2, MaxBh2x2, MaxBh2x4, dst, mc_src, n)
        case MCSIM_DTYPE_U32: MCSIM_SCALAR(loadReduceLoop, MaxU32, dst, mc_src, n)
        case MCSIM_DTYPE_S32: MCSIM_SCALAR(loadReduceLoop, MaxS32, dst, mc_src, n)
        case MCSIM_DTYPE_U64: MCSIM_SCALAR(loadReduceLoop, MaxU64, dst, mc_src, n)
        default: refuse(); return;
      }
    default: refuse(); return;
  }
}

extern "C" __global__ void mcsim_barrier(uint64_t mc_signal, uint64_t signal, uint32_t world,
                                         uint32_t epoch) {
  if (world == 0) {
    refuse();
    return;
  }
  gridBarrier(mc_signal, signal, world, epoch);
}

extern "C" __global__ void mcsim_allreduce_oneshot(uint64_t mc_buf, uint64_t out, uint64_t count,
                                                   uint32_t dtype, uint64_t mc_signal,
                                                   uint64_t signal, uint32_t world,
                                                   uint32_t epoch) {
  if (world == 0 || elementBytes(dtype) == 0) {
    refuse();
    return;
  }
  // Every member's buffer is complete before anyone reads it ...
  gridBarrier(mc_signal, signal, world, epoch);
  oneshotBody(mc_buf, out, count, dtype);
  // ... and nobody returns (and lets its stream overwrite its buffer) while others still read.
  gridBarrier(mc_signal, signal, world, epoch + 1);
}

namespace {

template <int U>
__device__ void twoshotAllReduce(uint64_t mc_buf, uint64_t count, uint32_t dtype, uint64_t mc_signal,
                                 uint64_t signal, uint32_t rank, uint32_t world, uint32_t epoch) {
  if (world == 0 || rank >= world || elementBytes(dtype) == 0) {
    refuse();
    return;
  }
  // The share rule of kernels.h: ceil(count / world) rounded up to a multiple of 4 elements (so
  // every share starts 16-byte aligned for the .v4 forms when the buffer does), the last share
  // taking what is left. rank * share cannot overflow: share <= count / world + 4.
  const uint64_t perRank = count / world + (count % world != 0 ? 1 : 0);
  const uint64_t share = (perRank + 3) / 4 * 4;
  const uint64_t begin = rank * share < count ? rank * share : count;
  const uint64_t end = count - begin > share ? begin + share : count;
  const uint64_t elemBytes = elementBytes(dtype);

  gridBarrier(mc_signal, signal, world, epoch);
  twoshotBody<U>(mc_buf + begin * elemBytes, end - begin, dtype);
  // The sums are in every member's buffer before anyone returns.
  gridBarrier(mc_signal, signal, world, epoch + 1);
}

}  // namespace

extern "C" __global__ void mcsim_allreduce_twoshot(uint64_t mc_buf, uint64_t count,
                                                   uint32_t dtype, uint64_t mc_signal,
                                                   uint64_t signal, uint32_t rank, uint32_t world,
                                                   uint32_t epoch) {
  twoshotAllReduce<1>(mc_buf, count, dtype, mc_signal, signal, rank, world, epoch);
}

extern "C" __global__ void mcsim_allreduce_nvls(uint64_t mc_buf, uint64_t count, uint32_t dtype,
                                                uint64_t mc_signal, uint64_t signal, uint32_t rank,
                                                uint32_t world, uint32_t epoch) {
  twoshotAllReduce<4>(mc_buf, count, dtype, mc_signal, signal, rank, world, epoch);
}

extern "C" __global__ void mcsim_copy(uint64_t dst, uint64_t src, uint64_t bytes) {
  // The widest access both addresses allow for the bulk, bytes for the tail.
  const uint64_t both = dst | src;
  uint64_t done = 0;
  if ((both & 15) == 0) {
    copyLoop<uint4>(dst, src, bytes / 16);
    done = bytes / 16 * 16;
  } else if ((both & 7) == 0) {
    copyLoop<uint2>(dst, src, bytes / 8);
    done = bytes / 8 * 8;
  } else if ((both & 3) == 0) {
    copyLoop<uint32_t>(dst, src, bytes / 4);
    done = bytes / 4 * 4;
  }
  copyLoop<uint8_t>(dst + done, src + done, bytes - done);
}

// Takes the combinations mcsim_mm_ld_reduce takes (the same domain, so one arithmetic model
// serves both): add on every type, min / max on f16x2, bf16x2, u32, s32, u64.
extern "C" __global__ void mcsim_reduce(uint64_t dst, uint64_t a, uint64_t b, uint64_t count,
                                        uint32_t dtype, uint32_t op) {
  switch (op) {
    case MCSIM_REDOP_ADD:
      switch (dtype) {
        case MCSIM_DTYPE_F32: plainReduce<PlainAddF32>(dst, a, b, count); return;
        case MCSIM_DTYPE_F16X2: plainReduce<PlainAddH2>(dst, a, b, count); return;
        case MCSIM_DTYPE_BF16X2: plainReduce<PlainAddBh2>(dst, a, b, count); return;
        case MCSIM_DTYPE_F64: plainReduce<PlainAddF64>(dst, a, b, count); return;
        case MCSIM_DTYPE_U32: plainReduce<PlainAddU32>(dst, a, b, count); return;
        case MCSIM_DTYPE_S32: plainReduce<PlainAddS32>(dst, a, b, count); return;
        case MCSIM_DTYPE_U64: plainReduce<PlainAddU64>(dst, a, b, count); return;
        default: refuse(); return;
      }
    case MCSIM_REDOP_MIN:
      switch (dtype) {
        case MCSIM_DTYPE_F16X2: plainReduce<PlainMinH2>(dst, a, b, count); return;
        case MCSIM_DTYPE_BF16X2: plainReduce<PlainMinBh2>(dst, a, b, count); return;
        case MCSIM_DTYPE_U32: plainReduce<PlainMinU32>(dst, a, b, count); return;
        case MCSIM_DTYPE_S32: plainReduce<PlainMinS32>(dst, a, b, count); return;
        case MCSIM_DTYPE_U64: plainReduce<PlainMinU64>(dst, a, b, count); return;
        default: refuse(); return;
      }
    case MCSIM_REDOP_MAX:
      switch (dtype) {
        case MCSIM_DTYPE_F16X2: plainReduce<PlainMaxH2>(dst, a, b, count); return;
        case MCSIM_DTYPE_BF16X2: plainReduce<PlainMaxBh2>(dst, a, b, count); return;
        case MCSIM_DTYPE_U32: plainReduce<PlainMaxU32>(dst, a, b, count); return;
        case MCSIM_DTYPE_S32: plainReduce<PlainMaxS32>(dst, a, b, count); return;
        case MCSIM_DTYPE_U64: plainReduce<PlainMaxU64>(dst, a, b, count); return;
        default: refuse(); return;
      }
    default: refuse(); return;
  }
}
