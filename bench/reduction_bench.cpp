// reduceInto's speed: the host-side arithmetic of every simulated multicast reduction (an 8-GPU
// all-reduce of 256 MiB reduces 2 GiB of input). Each iteration reduces a 64 MiB input buffer
// into a 64 MiB accumulator; GB/s counts input bytes (10^9 per second), so the memory traffic is
// three times that (read acc, read in, write acc). The host memcpy of 64 MiB is the yardstick
// for the machine's memory bandwidth in the same run.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "mcsim/kernels.h"
#include "model/reduction.h"

namespace {

constexpr size_t kBytes = size_t{64} << 20;

// Finite values of moderate size, as a model's data would be: accumulating them over many
// iterations neither overflows nor reaches the subnormals.
std::vector<uint8_t> values(uint32_t dtype, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> real(-1.0f, 1.0f);
  std::vector<uint8_t> out(kBytes);
  for (size_t i = 0; i < kBytes; i += 8) {
    uint64_t v = rng();
    switch (dtype) {
      case MCSIM_DTYPE_F32: {
        const float f[2] = {real(rng), real(rng)};
        std::memcpy(&v, f, 8);
        break;
      }
      case MCSIM_DTYPE_F64: {
        const double d = real(rng);
        std::memcpy(&v, &d, 8);
        break;
      }
      case MCSIM_DTYPE_F16X2:  // exponents 12..16: magnitudes 2^-3 .. 4
        v = (v & 0x83ff83ff83ff83ffull) | 0x3000300030003000ull;
        break;
      case MCSIM_DTYPE_BF16X2:  // exponents 124..127
        v = (v & 0x807f807f807f807full) | 0x3e003e003e003e00ull;
        break;
      default:
        break;
    }
    std::memcpy(&out[i], &v, 8);
  }
  return out;
}

void BM_ReduceInto(benchmark::State& state, uint32_t dtype, uint32_t op) {
  std::vector<uint8_t> acc = values(dtype, 1);
  const std::vector<uint8_t> in = values(dtype, 2);
  const uint64_t count = kBytes / mcsim_dtype_bytes(dtype);
  for (auto _ : state) {
    if (!mcsim::model::reduceInto(dtype, op, acc.data(), in.data(), count)) {
      state.SkipWithError("reduction not defined");
      break;
    }
    benchmark::ClobberMemory();
  }
  state.counters["GB/s"] = benchmark::Counter(static_cast<double>(kBytes),
                                              benchmark::Counter::kIsIterationInvariantRate,
                                              benchmark::Counter::OneK::kIs1000);
}

void BM_HostMemcpy(benchmark::State& state) {
  std::vector<uint8_t> src(kBytes, 1), dst(kBytes, 0);
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), kBytes);
    benchmark::ClobberMemory();
  }
  state.counters["GB/s"] = benchmark::Counter(static_cast<double>(kBytes),
                                              benchmark::Counter::kIsIterationInvariantRate,
                                              benchmark::Counter::OneK::kIs1000);
}

}  // namespace

BENCHMARK(BM_HostMemcpy)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_ReduceInto, f32_add, MCSIM_DTYPE_F32, MCSIM_REDOP_ADD)
    ->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_ReduceInto, bf16x2_add, MCSIM_DTYPE_BF16X2, MCSIM_REDOP_ADD)
    ->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_ReduceInto, f16x2_add, MCSIM_DTYPE_F16X2, MCSIM_REDOP_ADD)
    ->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_ReduceInto, u64_add, MCSIM_DTYPE_U64, MCSIM_REDOP_ADD)
    ->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_ReduceInto, f32_min, MCSIM_DTYPE_F32, MCSIM_REDOP_MIN)
    ->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_ReduceInto, f64_add, MCSIM_DTYPE_F64, MCSIM_REDOP_ADD)
    ->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_ReduceInto, bf16x2_max, MCSIM_DTYPE_BF16X2, MCSIM_REDOP_MAX)
    ->Unit(benchmark::kMillisecond)->UseRealTime();
