// --check: inputs whose sums are exact in every type, and the host's reference for them.
//
// Every input value is a small integer (0 to 3) drawn from a hash of (GPU, element, lane), so a
// sum over up to 72 GPUs stays at most 216: exact in bf16 (8 significant bits), f16, f32 and the
// integer types, whatever order the reduction takes. The hash, rather than a periodic pattern,
// makes an element read from the wrong offset (another chunk or share) show as a wrong sum.
#pragma once

#include <cstdint>
#include <vector>

namespace mcsim::bench {

// GPU g's input: `count` elements of `dtype`, as the bytes to copy to the device.
std::vector<unsigned char> inputBytes(uint32_t dtype, uint64_t count, int g);

// The all-reduce of `world` GPUs' inputs: the sum, element by element, as bytes.
std::vector<unsigned char> expectedBytes(uint32_t dtype, uint64_t count, int world);

// Compares a GPU's result with the expected bytes; prints the first few differences (naming
// `gpu`) and returns how many elements differ.
uint64_t countMismatches(uint32_t dtype, const std::vector<unsigned char>& expected,
                         const std::vector<unsigned char>& got, int gpu);

}  // namespace mcsim::bench
