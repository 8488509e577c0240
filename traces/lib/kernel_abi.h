// The parameters of mcsim's kernel library (include/mcsim/kernels.h) as the trace layer needs
// them: each parameter's size and whether it is a device address. The recorder uses this to name
// addresses exactly (rather than by guessing which 8-byte values fall inside a known region), and,
// on a driver that cannot report a kernel's parameter layout, as the layout of these kernels.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mcsim::trace {

struct AbiParam {
  uint32_t size;
  bool address;
};

// The library kernel `name`'s parameters in order, or nullptr when `name` is none of them.
const std::vector<AbiParam>* libraryKernelAbi(const std::string& name);

// Offsets of parameters of these sizes packed as nvcc packs them (each at the next multiple of
// its size, which for the library's 4- and 8-byte parameters is their alignment).
std::vector<uint64_t> packedOffsets(const std::vector<uint64_t>& sizes);

}  // namespace mcsim::trace
