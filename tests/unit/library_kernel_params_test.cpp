// The kernel library's behavioural models (driver/library_kernels.cpp) read a launch's parameters
// with the layout they register (KernelModel::paramBytes); the binary carries its own, in each
// kernel's PTX .param list. They must agree, kernel by kernel, or a launch through the runtime
// would read its arguments wrongly (docs/runtime.md, "Kernels"). The PTX is the checked-in
// kernels/mcsim_kernels.ptx, which kernels_checked_in_ptx_is_current keeps equal to nvcc's.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "driver/kernel_registry.h"

#ifndef MCSIM_TEST_SOURCE_DIR
#error "MCSIM_TEST_SOURCE_DIR must name the project's source directory"
#endif

namespace {

// Each .entry's parameter sizes in bytes, in order.
std::map<std::string, std::vector<size_t>> ptxLayouts(const std::string& text) {
  std::map<std::string, std::vector<size_t>> out;
  const std::regex entry(R"(\.entry\s+(\w+)\s*\(([^)]*)\))");
  const std::regex param(R"(\.param\s+(?:\.align\s+\d+\s+)?\.([a-z]+)(\d+)\s+\w+(?:\[(\d+)\])?)");
  for (auto e = std::sregex_iterator(text.begin(), text.end(), entry); e != std::sregex_iterator(); ++e) {
    const std::string list = (*e)[2];
    std::vector<size_t>& sizes = out[(*e)[1]];
    for (auto p = std::sregex_iterator(list.begin(), list.end(), param); p != std::sregex_iterator(); ++p) {
      const size_t bits = std::stoul((*p)[2]);
      const size_t count = (*p)[3].matched ? std::stoul((*p)[3]) : 1;
      sizes.push_back(bits / 8 * count);
    }
  }
  return out;
}

TEST(LibraryKernelParams, EveryModelReadsTheLayoutItsPtxDeclares) {
  std::ifstream in(std::string(MCSIM_TEST_SOURCE_DIR) + "/kernels/mcsim_kernels.ptx");
  ASSERT_TRUE(in.good());
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto ptx = ptxLayouts(text);
  std::map<std::string, std::vector<size_t>> models;
  mcsim::driver::registerLibraryKernels(
      [&](const std::string& name, mcsim::KernelModel m) { models[name] = m.paramBytes; });
  ASSERT_GE(models.size(), 9u);
  for (const auto& [name, sizes] : models) {
    auto it = ptx.find(name);
    ASSERT_NE(it, ptx.end()) << name << " has a model but no .entry in the PTX";
    EXPECT_EQ(it->second, sizes) << name;
  }
  for (const auto& [name, sizes] : ptx) EXPECT_EQ(1u, models.count(name)) << name << " has no model";
}

}  // namespace
