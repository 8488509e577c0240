#include "reference.h"

#include <cstdio>
#include <cstring>
#include <string>

#include "mcsim/kernels.h"

namespace mcsim::bench {

namespace {

constexpr uint64_t kMaxReported = 5;

bool packed(uint32_t dtype) { return dtype == MCSIM_DTYPE_F16X2 || dtype == MCSIM_DTYPE_BF16X2; }

// 0..3 from a hash of (GPU, element, lane) (splitmix64's finaliser).
uint32_t inputValue(int g, uint64_t i, int lane) {
  uint64_t x = (i << 8) ^ (uint64_t(g) << 1) ^ uint64_t(lane);
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  x ^= x >> 31;
  return static_cast<uint32_t>(x & 3);
}

uint32_t floatBits(float f) {
  uint32_t b = 0;
  std::memcpy(&b, &f, 4);
  return b;
}

// IEEE half of a whole number below 2048 (exact).
uint16_t halfBits(uint32_t k) {
  if (k == 0) return 0;
  int e = 0;
  while ((k >> (e + 1)) != 0) ++e;
  return static_cast<uint16_t>(((e + 15) << 10) | (((k - (1u << e)) << (10 - e)) & 0x3ff));
}

// bfloat16 of a whole number below 256: the top half of the float, exact.
uint16_t bf16Bits(uint32_t k) { return static_cast<uint16_t>(floatBits(static_cast<float>(k)) >> 16); }

// Writes one element whose lanes hold the whole numbers lane[0] (and lane[1] for packed types).
void encode(uint32_t dtype, const uint32_t lane[2], unsigned char* out) {
  switch (dtype) {
    case MCSIM_DTYPE_F32: {
      const uint32_t b = floatBits(static_cast<float>(lane[0]));
      std::memcpy(out, &b, 4);
      return;
    }
    case MCSIM_DTYPE_F16X2:
    case MCSIM_DTYPE_BF16X2: {
      const bool half = dtype == MCSIM_DTYPE_F16X2;
      const uint32_t b = uint32_t(half ? halfBits(lane[0]) : bf16Bits(lane[0])) |
                         uint32_t(half ? halfBits(lane[1]) : bf16Bits(lane[1])) << 16;  // low half first
      std::memcpy(out, &b, 4);
      return;
    }
    case MCSIM_DTYPE_F64: {
      const double d = lane[0];
      std::memcpy(out, &d, 8);
      return;
    }
    case MCSIM_DTYPE_U32:
    case MCSIM_DTYPE_S32: std::memcpy(out, &lane[0], 4); return;
    case MCSIM_DTYPE_U64: {
      const uint64_t v = lane[0];
      std::memcpy(out, &v, 8);
      return;
    }
    default: return;
  }
}

std::string hexOf(const unsigned char* p, size_t n) {
  std::string s = "0x";
  char digits[3];
  for (size_t i = n; i-- > 0;) {  // little-endian bytes, printed as one number
    std::snprintf(digits, sizeof(digits), "%02x", p[i]);
    s += digits;
  }
  return s;
}

}  // namespace

std::vector<unsigned char> inputBytes(uint32_t dtype, uint64_t count, int g) {
  const size_t elem = mcsim_dtype_bytes(dtype);
  std::vector<unsigned char> bytes(count * elem);
  for (uint64_t i = 0; i < count; ++i) {
    const uint32_t lane[2] = {inputValue(g, i, 0), packed(dtype) ? inputValue(g, i, 1) : 0};
    encode(dtype, lane, &bytes[i * elem]);
  }
  return bytes;
}

std::vector<unsigned char> expectedBytes(uint32_t dtype, uint64_t count, int world) {
  const size_t elem = mcsim_dtype_bytes(dtype);
  std::vector<unsigned char> bytes(count * elem);
  for (uint64_t i = 0; i < count; ++i) {
    uint32_t lane[2] = {0, 0};
    for (int g = 0; g < world; ++g) {
      lane[0] += inputValue(g, i, 0);
      if (packed(dtype)) lane[1] += inputValue(g, i, 1);
    }
    encode(dtype, lane, &bytes[i * elem]);
  }
  return bytes;
}

uint64_t countMismatches(uint32_t dtype, const std::vector<unsigned char>& expected,
                         const std::vector<unsigned char>& got, int gpu) {
  const size_t elem = mcsim_dtype_bytes(dtype);
  uint64_t wrong = 0;
  for (size_t off = 0; off < expected.size(); off += elem) {
    if (std::memcmp(&expected[off], &got[off], elem) == 0) continue;
    if (wrong++ < kMaxReported) {
      std::fprintf(stderr, "mcsim_bench_allreduce: check: GPU %d element %zu is %s, expected %s\n", gpu, off / elem,
                   hexOf(&got[off], elem).c_str(), hexOf(&expected[off], elem).c_str());
    }
  }
  return wrong;
}

}  // namespace mcsim::bench
