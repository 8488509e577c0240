#include "traces/lib/kernel_abi.h"

#include <map>

#include "mcsim/kernels.h"

namespace mcsim::trace {

namespace {

constexpr AbiParam kAddr{8, true};
constexpr AbiParam kU64{8, false};
constexpr AbiParam kU32{4, false};

}  // namespace

const std::vector<AbiParam>* libraryKernelAbi(const std::string& name) {
  // Transcribed from the comment block of include/mcsim/kernels.h.
  static const std::map<std::string, std::vector<AbiParam>> table = {
      {MCSIM_KERNEL_MM_ST, {kAddr, kAddr, kU64, kU32, kU32}},
      {MCSIM_KERNEL_MM_RED, {kAddr, kAddr, kU64, kU32, kU32}},
      {MCSIM_KERNEL_MM_LD_REDUCE, {kAddr, kAddr, kU64, kU32, kU32, kU32}},
      {MCSIM_KERNEL_BARRIER, {kAddr, kAddr, kU32, kU32}},
      {MCSIM_KERNEL_ALLREDUCE_ONESHOT, {kAddr, kAddr, kU64, kU32, kAddr, kAddr, kU32, kU32}},
      {MCSIM_KERNEL_ALLREDUCE_TWOSHOT, {kAddr, kU64, kU32, kAddr, kAddr, kU32, kU32, kU32}},
      {MCSIM_KERNEL_ALLREDUCE_NVLS, {kAddr, kU64, kU32, kAddr, kAddr, kU32, kU32, kU32}},
      {MCSIM_KERNEL_COPY, {kAddr, kAddr, kU64}},
      {MCSIM_KERNEL_REDUCE, {kAddr, kAddr, kAddr, kU64, kU32, kU32}},
  };
  auto it = table.find(name);
  return it == table.end() ? nullptr : &it->second;
}

std::vector<uint64_t> packedOffsets(const std::vector<uint64_t>& sizes) {
  std::vector<uint64_t> out;
  uint64_t offset = 0;
  for (uint64_t size : sizes) {
    if (size > 0) offset = (offset + size - 1) / size * size;
    out.push_back(offset);
    offset += size;
  }
  return out;
}

}  // namespace mcsim::trace
