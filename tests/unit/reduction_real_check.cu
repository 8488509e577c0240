// The reduction arithmetic on a real GPU, for checking model/reduction.cpp bit for bit.
//
// For every (dtype, op) that reduceInto defines, this program computes d[i] = a[i] op b[i] on the
// GPU with the plain PTX instruction (add.rn.f32, add.rn.f16x2, add.rn.bf16x2, add.rn.f64,
// min / max .f32 .f16x2 .bf16x2, add / min / max .u32 .s32 .u64) over a fixed pseudo-random
// input set (NaNs of every kind and sign, signed zeros, subnormals, huge values, ties, near
// cancellations), and writes operands and results to a file (tests/unit/reduction_real_format.h).
// reduction_real_compare then recomputes every element with reduceInto and reports each
// difference. The inputs depend only on the fixed seed, never on the machine.
//
// Only the CUDA runtime API on one GPU's own memory: cudaSetDevice, cudaGetDeviceProperties,
// cudaMalloc, cudaMemcpy, kernel launches, cudaDeviceSynchronize, cudaFree. No multicast object,
// no cuMulticast* call, no peer access.
//
// Build, from the repository root, on any machine with the CUDA toolkit (no GPU needed):
//   nvcc -arch=sm_90 -O2 -std=c++17 -I. -Iinclude -o reduction_real_check tests/unit/reduction_real_check.cu
// (`cmake --build build --target reduction_real_check` runs the same command when CMake finds
// nvcc; the binary lands in build/tests/unit/real/.)
// Run, on a machine with an sm_90 or newer GPU (an H100):
//   ./reduction_real_check reduction_real.bin [device ordinal, default 0]
// Compare, on a machine with an mcsim build (the file is portable):
//   build/tests/unit/reduction_real_compare reduction_real.bin
// It prints one line per (dtype, op) and the first differences of each, and exits 0 only if
// every element matched.
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "mcsim/kernels.h"
#include "tests/unit/reduction_real_format.h"

namespace {

using mcsim::realcheck::Record;

#define CHECK_CUDA(call)                                                                   \
  do {                                                                                     \
    cudaError_t err_ = (call);                                                             \
    if (err_ != cudaSuccess) {                                                             \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,                   \
                   cudaGetErrorString(err_));                                              \
      std::exit(2);                                                                        \
    }                                                                                      \
  } while (0)

// ---- The instructions. `a` is always the first source operand. -----------------------------

struct F32Add {
  __device__ static uint32_t apply(uint32_t a, uint32_t b) {
    float r;
    asm volatile("add.rn.f32 %0, %1, %2;" : "=f"(r) : "f"(__uint_as_float(a)), "f"(__uint_as_float(b)));
    return __float_as_uint(r);
  }
};
struct F32Min {
  __device__ static uint32_t apply(uint32_t a, uint32_t b) {
    float r;
    asm volatile("min.f32 %0, %1, %2;" : "=f"(r) : "f"(__uint_as_float(a)), "f"(__uint_as_float(b)));
    return __float_as_uint(r);
  }
};
struct F32Max {
  __device__ static uint32_t apply(uint32_t a, uint32_t b) {
    float r;
    asm volatile("max.f32 %0, %1, %2;" : "=f"(r) : "f"(__uint_as_float(a)), "f"(__uint_as_float(b)));
    return __float_as_uint(r);
  }
};
struct F64Add {
  __device__ static uint64_t apply(uint64_t a, uint64_t b) {
    double r;
    asm volatile("add.rn.f64 %0, %1, %2;"
                 : "=d"(r)
                 : "d"(__longlong_as_double(static_cast<long long>(a))),
                   "d"(__longlong_as_double(static_cast<long long>(b))));
    return static_cast<uint64_t>(__double_as_longlong(r));
  }
};

// Packed halves and integers: b32 / b64 registers straight through.
#define MCSIM_PTX_OP32(Name, instruction)                                        \
  struct Name {                                                                  \
    __device__ static uint32_t apply(uint32_t a, uint32_t b) {                   \
      uint32_t r;                                                                \
      asm volatile(instruction " %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));       \
      return r;                                                                  \
    }                                                                            \
  };
#define MCSIM_PTX_OP64(Name, instruction)                                        \
  struct Name {                                                                  \
    __device__ static uint64_t apply(uint64_t a, uint64_t b) {                   \
      uint64_t r;                                                                \
      asm volatile(instruction " %0, %1, %2;" : "=l"(r) : "l"(a), "l"(b));       \
      return r;                                                                  \
    }                                                                            \
  };

MCSIM_PTX_OP32(F16x2Add, "add.rn.f16x2")
MCSIM_PTX_OP32(F16x2Min, "min.f16x2")
MCSIM_PTX_OP32(F16x2Max, "max.f16x2")
MCSIM_PTX_OP32(Bf16x2Add, "add.rn.bf16x2")
MCSIM_PTX_OP32(Bf16x2Min, "min.bf16x2")
MCSIM_PTX_OP32(Bf16x2Max, "max.bf16x2")
MCSIM_PTX_OP32(U32Add, "add.u32")
MCSIM_PTX_OP32(U32Min, "min.u32")
MCSIM_PTX_OP32(U32Max, "max.u32")
MCSIM_PTX_OP32(S32Add, "add.s32")
MCSIM_PTX_OP32(S32Min, "min.s32")
MCSIM_PTX_OP32(S32Max, "max.s32")
MCSIM_PTX_OP64(U64Add, "add.u64")
MCSIM_PTX_OP64(U64Min, "min.u64")
MCSIM_PTX_OP64(U64Max, "max.u64")

template <typename Op, typename T>
__global__ void reduceKernel(const T* a, const T* b, T* d, uint64_t n) {
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  for (uint64_t i = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    d[i] = Op::apply(a[i], b[i]);
  }
}

template <typename Op, typename T>
void runOnGpu(Record& r) {
  const size_t bytes = r.a.size();
  T *a = nullptr, *b = nullptr, *d = nullptr;
  CHECK_CUDA(cudaMalloc(&a, bytes));
  CHECK_CUDA(cudaMalloc(&b, bytes));
  CHECK_CUDA(cudaMalloc(&d, bytes));
  CHECK_CUDA(cudaMemcpy(a, r.a.data(), bytes, cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(b, r.b.data(), bytes, cudaMemcpyHostToDevice));
  reduceKernel<Op, T><<<256, 256>>>(a, b, d, r.count);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaDeviceSynchronize());
  r.d.resize(bytes);
  CHECK_CUDA(cudaMemcpy(r.d.data(), d, bytes, cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaFree(a));
  CHECK_CUDA(cudaFree(b));
  CHECK_CUDA(cudaFree(d));
}

// ---- Inputs ----------------------------------------------------------------------------------

struct SplitMix64 {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
};

struct FloatFormat {
  int expBits, fracBits;
  uint64_t sign() const { return uint64_t{1} << (expBits + fracBits); }
  uint64_t expMax() const { return (uint64_t{1} << expBits) - 1; }
  uint64_t fracMask() const { return (uint64_t{1} << fracBits) - 1; }
  uint64_t all() const { return sign() | (sign() - 1); }
  uint64_t exp(uint64_t v) const { return (v >> fracBits) & expMax(); }
  uint64_t withExp(uint64_t v, uint64_t e) const {
    return (v & (sign() | fracMask())) | ((e < expMax() ? e : expMax()) << fracBits);
  }
};

// Zeros, subnormal and normal edges, 1 and its neighbours, half an ulp of 1, the largest values,
// infinities, quiet / signaling / all-ones NaNs; each with both signs.
std::vector<uint64_t> floatSpecials(const FloatFormat& f) {
  const uint64_t e = static_cast<uint64_t>(f.fracBits), one = f.expMax() >> 1, inf = f.expMax() << e;
  std::vector<uint64_t> v = {0, 1, 2, 3, f.fracMask(), f.fracMask() - 1, uint64_t{1} << e,
                             (uint64_t{1} << e) | 1, one << e, (one << e) | 1, (one << e) | f.fracMask(),
                             (one + 1) << e, (one - 1) << e, (one - e - 1) << e, (one - e) << e,
                             (one + e + 1) << e, inf - 1, inf - 2, inf - (uint64_t{1} << e),
                             (f.expMax() - e - 2) << e, inf, inf | (uint64_t{1} << (e - 1)), inf | 1,
                             inf | f.fracMask(), inf | (uint64_t{1} << (e - 1)) | 0x5};
  const size_t n = v.size();
  for (size_t i = 0; i < n; ++i) v.push_back(v[i] | f.sign());
  return v;
}

// Every pair of specials, then random pairs of the kinds that reach every rounding case.
std::vector<std::pair<uint64_t, uint64_t>> floatPairs(const FloatFormat& f, size_t n, uint64_t seed) {
  std::vector<std::pair<uint64_t, uint64_t>> pairs;
  const std::vector<uint64_t> s = floatSpecials(f);
  for (uint64_t x : s) {
    for (uint64_t y : s) pairs.emplace_back(x, y);
  }
  SplitMix64 rng{seed};
  const uint64_t emax = f.expMax();
  while (pairs.size() < n) {
    const uint64_t r1 = rng.next() & f.all(), r2 = rng.next() & f.all();
    const uint64_t ea = f.exp(r1) < emax ? f.exp(r1) : emax - 1;
    uint64_t a = r1, b = r2;
    switch (rng.next() % 8) {
      case 0:  // uniform patterns
        break;
      case 1: {  // exponents within a few binades
        const uint64_t eb = ea + rng.next() % 5;
        a = f.withExp(r1, ea);
        b = f.withExp(r2, eb > 2 ? (eb - 2 < emax ? eb - 2 : emax - 1) : 0);
        break;
      }
      case 2:  // near-cancellation
        b = (r1 ^ f.sign()) ^ (r2 & 0xff);
        break;
      case 3:  // subnormals and the smallest normals
        a = f.withExp(r1, rng.next() % 3);
        b = f.withExp(r2, rng.next() % 3);
        break;
      case 4:  // the top of the range
        a = f.withExp(r1, emax - 1 - rng.next() % 2);
        b = f.withExp(r2, emax - 1 - rng.next() % 3);
        break;
      case 5: {  // about half an ulp: ties and near-ties
        const uint64_t shift = static_cast<uint64_t>(f.fracBits) + 1 + rng.next() % 2;
        a = f.withExp(r1, ea);
        b = f.withExp(rng.next() % 2 ? r2 : (r2 & f.sign()), ea > shift ? ea - shift : 0);
        break;
      }
      case 6: {  // far below: sticky bits only
        const uint64_t shift = static_cast<uint64_t>(f.fracBits) + 2 + rng.next() % 40;
        a = f.withExp(r1, ea);
        b = f.withExp(r2, ea > shift ? ea - shift : 0);
        break;
      }
      default:  // same binade, opposite signs
        a = f.withExp(r1, ea);
        b = f.withExp(r2, ea) ^ f.sign();
        break;
    }
    if (rng.next() % 2) std::swap(a, b);
    pairs.emplace_back(a, b);
  }
  pairs.resize(n);
  return pairs;
}

std::vector<std::pair<uint64_t, uint64_t>> integerPairs(int bits, size_t n, uint64_t seed) {
  const uint64_t all = bits == 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
  const uint64_t top = uint64_t{1} << (bits - 1);
  const std::vector<uint64_t> s = {0, 1, 2, all, all - 1, top, top + 1, top - 1, 0x5555555555555555ull & all};
  std::vector<std::pair<uint64_t, uint64_t>> pairs;
  for (uint64_t x : s) {
    for (uint64_t y : s) pairs.emplace_back(x, y);
  }
  SplitMix64 rng{seed};
  while (pairs.size() < n) pairs.emplace_back(rng.next() & all, rng.next() & all);
  return pairs;
}

// Lays pairs out as elements of `bytes` each (halves: two lanes per 32-bit element, lane 0 low).
Record makeRecord(uint32_t dtype, uint32_t op, const std::vector<std::pair<uint64_t, uint64_t>>& lanes,
                  size_t laneBytes) {
  Record r;
  r.dtype = dtype;
  r.op = op;
  r.count = lanes.size() * laneBytes / mcsim_dtype_bytes(dtype);
  r.a.resize(lanes.size() * laneBytes);
  r.b.resize(lanes.size() * laneBytes);
  for (size_t i = 0; i < lanes.size(); ++i) {
    std::memcpy(&r.a[i * laneBytes], &lanes[i].first, laneBytes);  // little-endian: low bytes
    std::memcpy(&r.b[i * laneBytes], &lanes[i].second, laneBytes);
  }
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s OUTPUT.bin [device]\n", argv[0]);
    return 2;
  }
  const int device = argc > 2 ? std::atoi(argv[2]) : 0;
  CHECK_CUDA(cudaSetDevice(device));
  cudaDeviceProp prop;
  CHECK_CUDA(cudaGetDeviceProperties(&prop, device));
  int driver = 0, runtime = 0;
  CHECK_CUDA(cudaDriverGetVersion(&driver));
  CHECK_CUDA(cudaRuntimeGetVersion(&runtime));
  char description[512];
  std::snprintf(description, sizeof description, "%s, sm_%d%d, driver %d, runtime %d", prop.name,
                prop.major, prop.minor, driver, runtime);
  if (prop.major < 9) {
    std::fprintf(stderr, "%s: add.bf16x2 needs sm_90 or newer\n", description);
    return 2;
  }

  constexpr size_t kLanes = size_t{1} << 17;  // per record
  const FloatFormat f16{5, 10}, bf16{8, 7}, f32{8, 23}, f64{11, 52};
  const auto f16Lanes = floatPairs(f16, kLanes, 1);
  const auto bf16Lanes = floatPairs(bf16, kLanes, 2);
  const auto f32Lanes = floatPairs(f32, kLanes / 2, 3);
  const auto f64Lanes = floatPairs(f64, kLanes / 4, 4);
  const auto i32Lanes = integerPairs(32, kLanes / 2, 5);
  const auto i64Lanes = integerPairs(64, kLanes / 4, 6);

  std::vector<Record> records;
  auto add = [&](Record r, void (*run)(Record&)) {
    run(r);
    records.push_back(std::move(r));
  };
  add(makeRecord(MCSIM_DTYPE_F32, MCSIM_REDOP_ADD, f32Lanes, 4), runOnGpu<F32Add, uint32_t>);
  add(makeRecord(MCSIM_DTYPE_F32, MCSIM_REDOP_MIN, f32Lanes, 4), runOnGpu<F32Min, uint32_t>);
  add(makeRecord(MCSIM_DTYPE_F32, MCSIM_REDOP_MAX, f32Lanes, 4), runOnGpu<F32Max, uint32_t>);
  add(makeRecord(MCSIM_DTYPE_F16X2, MCSIM_REDOP_ADD, f16Lanes, 2), runOnGpu<F16x2Add, uint32_t>);
  add(makeRecord(MCSIM_DTYPE_F16X2, MCSIM_REDOP_MIN, f16Lanes, 2), runOnGpu<F16x2Min, uint32_t>);
  add(makeRecord(MCSIM_DTYPE_F16X2, MCSIM_REDOP_MAX, f16Lanes, 2), runOnGpu<F16x2Max, uint32_t>);
  add(makeRecord(MCSIM_DTYPE_BF16X2, MCSIM_REDOP_ADD, bf16Lanes, 2), runOnGpu<Bf16x2Add, uint32_t>);
  add(makeRecord(MCSIM_DTYPE_BF16X2, MCSIM_REDOP_MIN, bf16Lanes, 2), runOnGpu<Bf16x2Min, uint32_t>);
  add(makeRecord(MCSIM_DTYPE_BF16X2, MCSIM_REDOP_MAX, bf16Lanes, 2), runOnGpu<Bf16x2Max, uint32_t>);
  add(makeRecord(MCSIM_DTYPE_F64, MCSIM_REDOP_ADD, f64Lanes, 8), runOnGpu<F64Add, uint64_t>);
  add(makeRecord(MCSIM_DTYPE_U32, MCSIM_REDOP_ADD, i32Lanes, 4), runOnGpu<U32Add, uint32_t>);
  add(makeRecord(MCSIM_DTYPE_U32, MCSIM_REDOP_MIN, i32Lanes, 4), runOnGpu<U32Min, uint32_t>);
  add(makeRecord(MCSIM_DTYPE_U32, MCSIM_REDOP_MAX, i32Lanes, 4), runOnGpu<U32Max, uint32_t>);
  add(makeRecord(MCSIM_DTYPE_S32, MCSIM_REDOP_ADD, i32Lanes, 4), runOnGpu<S32Add, uint32_t>);
  add(makeRecord(MCSIM_DTYPE_S32, MCSIM_REDOP_MIN, i32Lanes, 4), runOnGpu<S32Min, uint32_t>);
  add(makeRecord(MCSIM_DTYPE_S32, MCSIM_REDOP_MAX, i32Lanes, 4), runOnGpu<S32Max, uint32_t>);
  add(makeRecord(MCSIM_DTYPE_U64, MCSIM_REDOP_ADD, i64Lanes, 8), runOnGpu<U64Add, uint64_t>);
  add(makeRecord(MCSIM_DTYPE_U64, MCSIM_REDOP_MIN, i64Lanes, 8), runOnGpu<U64Min, uint64_t>);
  add(makeRecord(MCSIM_DTYPE_U64, MCSIM_REDOP_MAX, i64Lanes, 8), runOnGpu<U64Max, uint64_t>);

  if (!mcsim::realcheck::writeFile(argv[1], description, records)) {
    std::fprintf(stderr, "cannot write %s\n", argv[1]);
    return 2;
  }
  std::printf("%s: %zu records written to %s\n", description, records.size(), argv[1]);
  return 0;
}
