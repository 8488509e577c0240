// What the toolkit's libnccl.so.2 carries as device code, read with mcsim's own module-image reader
// (driver/module_image.cpp) and PTX parser, and what of it mcsim can run (docs/nccl.md). The
// library's path comes from the build (MCSIM_NCCL_LIBRARY); the test is built only where it exists.
//
// The facts asserted here are those docs/nccl.md states; when NCCL or mcsim changes them, the
// printed listing and survey say what changed, and the page and this test change together.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "driver/module_image.h"
#include "ptx/parser.h"

namespace {

using mcsim::driver::ModuleImage;
using mcsim::driver::readModuleImage;

// The library, mapped read-only for the test's lifetime.
class MappedFile {
 public:
  explicit MappedFile(const char* path) {
    const int fd = ::open(path, O_RDONLY);
    if (fd < 0) return;
    struct stat st {};
    if (::fstat(fd, &st) == 0 && st.st_size > 0) {
      void* p = ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
      if (p != MAP_FAILED) {
        data_ = static_cast<const uint8_t*>(p);
        size_ = static_cast<size_t>(st.st_size);
      }
    }
    ::close(fd);
  }
  ~MappedFile() {
    if (data_) ::munmap(const_cast<uint8_t*>(data_), size_);
  }
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

template <class T>
T get(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

struct Section {
  uint64_t offset = 0, size = 0;
};

// The named section of a host ELF64 file (its file extent), or an empty one.
Section findSection(const MappedFile& f, const std::string& name) {
  const uint8_t* p = f.data();
  if (f.size() < 64 || std::memcmp(p, "\x7f" "ELF", 4) != 0 || p[4] != 2) return {};
  const uint64_t shoff = get<uint64_t>(p + 40);
  const uint16_t shnum = get<uint16_t>(p + 60), shstrndx = get<uint16_t>(p + 62);
  if (shoff > f.size() || uint64_t{shnum} * 64 > f.size() - shoff || shstrndx >= shnum) return {};
  const uint8_t* strtab = p + shoff + uint64_t{shstrndx} * 64;
  const uint64_t strOff = get<uint64_t>(strtab + 24), strSize = get<uint64_t>(strtab + 32);
  if (strOff > f.size() || strSize > f.size() - strOff) return {};
  for (uint16_t i = 0; i < shnum; ++i) {
    const uint8_t* s = p + shoff + uint64_t{i} * 64;
    const uint32_t n = get<uint32_t>(s);
    if (n >= strSize) continue;
    const char* sname = reinterpret_cast<const char*>(p + strOff + n);
    if (strnlen(sname, strSize - n) == strSize - n || name != sname) continue;
    Section r{get<uint64_t>(s + 24), get<uint64_t>(s + 32)};
    if (r.offset > f.size() || r.size > f.size() - r.offset) return {};
    return r;
  }
  return {};
}

// Every fatbin of a section: they lie back to back, each at an 8-byte boundary.
std::vector<ModuleImage> fatbinsIn(const MappedFile& f, const Section& s) {
  std::vector<ModuleImage> out;
  for (uint64_t off = 0; off + 16 <= s.size;) {
    const uint8_t* p = f.data() + s.offset + off;
    if (get<uint32_t>(p) != 0xBA55ED50u) {
      off += 8;  // padding between fatbins
      continue;
    }
    ModuleImage m = readModuleImage(p, s.size - off);
    EXPECT_TRUE(m.ok) << "fatbin at section offset " << off << ": " << m.error;
    if (!m.ok || m.bytes == 0) break;
    off += m.bytes;
    out.push_back(std::move(m));
  }
  return out;
}

std::string directiveValue(const std::string& text, const std::string& directive) {
  const size_t at = text.find(directive + " ");
  if (at == std::string::npos) return "";
  const size_t from = at + directive.size() + 1;
  return text.substr(from, text.find_first_of("\r\n", from) - from);
}

// One line per fatbin: its entries in image order (kind and architecture, "z" where compressed),
// the PTX's ISA version and target, and how many kernels it names.
std::string describe(const ModuleImage& m) {
  std::string line;
  for (const auto& v : m.variants) {
    line += (v.kind == 1 ? " compute_" : v.kind == 2 ? " sm_" : " kind?_") + std::to_string(v.arch) +
            (v.compressed ? "(z)" : "");
  }
  for (const auto& p : m.ptx) {
    line += "  [PTX " + directiveValue(p.text, ".version") + " .target " + directiveValue(p.text, ".target") + "]";
  }
  line += "  " + std::to_string(m.entries.size()) + " kernels";
  return line;
}

// The parser's reason without the module name and line: "device functions (.func 'x') ..." with
// the function's name replaced, so that reasons of one kind count together.
std::string reasonKind(const std::string& why) {
  std::string r = why;
  const size_t colon = r.find(": ");
  if (colon != std::string::npos) r = r.substr(colon + 2);
  for (const char* quoted : {"(.func '", "function '", "kernel '", "register '"}) {
    const size_t q = r.find(quoted);
    if (q == std::string::npos) continue;
    const size_t from = q + std::strlen(quoted), to = r.find('\'', from);
    if (to != std::string::npos) r.replace(from, to - from, "...");
  }
  return r;
}

class NcclImage : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    file_ = new MappedFile(MCSIM_NCCL_LIBRARY);
    ASSERT_NE(file_->data(), nullptr) << "cannot map " << MCSIM_NCCL_LIBRARY;
    linked_ = new std::vector<ModuleImage>(fatbinsIn(*file_, findSection(*file_, ".nv_fatbin")));
    relocatable_ = new std::vector<ModuleImage>(fatbinsIn(*file_, findSection(*file_, "__nv_relfatbin")));
  }
  static void TearDownTestSuite() {
    delete relocatable_;
    delete linked_;
    delete file_;
  }
  static MappedFile* file_;
  static std::vector<ModuleImage>* linked_;
  static std::vector<ModuleImage>* relocatable_;
};
MappedFile* NcclImage::file_ = nullptr;
std::vector<ModuleImage>* NcclImage::linked_ = nullptr;
std::vector<ModuleImage>* NcclImage::relocatable_ = nullptr;

// .nv_fatbin: the fatbins the runtime registers (cuLibraryLoadData). The one that holds NCCL's
// kernels (ncclDevKernel_*) is the device-linked image of the -rdc build: SASS only.
TEST_F(NcclImage, TheLinkedImageOfTheKernelsCarriesSassOnly) {
  std::printf("%s: .nv_fatbin holds %zu fatbins\n", MCSIM_NCCL_LIBRARY, linked_->size());
  const ModuleImage* kernels = nullptr;
  size_t withPtx = 0;
  for (size_t i = 0; i < linked_->size(); ++i) {
    const ModuleImage& m = (*linked_)[i];
    std::printf("  .nv_fatbin #%zu:%s\n", i, describe(m).c_str());
    if (!m.ptx.empty()) ++withPtx;
    for (const std::string& e : m.entries) {
      if (e.find("ncclDevKernel_AllReduce_Sum_f32_RING_LL") != std::string::npos) kernels = &m;
    }
  }
  EXPECT_EQ(linked_->size(), 16u);
  EXPECT_EQ(withPtx, 11u);
  ASSERT_NE(kernels, nullptr) << "no fatbin names ncclDevKernel_AllReduce_Sum_f32_RING_LL";
  EXPECT_TRUE(kernels->ptx.empty()) << "the kernels' linked image now carries PTX: docs/nccl.md is out of date";
  std::set<uint32_t> sass;
  for (const auto& v : kernels->variants) {
    EXPECT_EQ(v.kind, 2) << "an entry of kind " << v.kind;
    EXPECT_TRUE(v.compressed);
    sass.insert(v.arch);
  }
  EXPECT_EQ(sass, (std::set<uint32_t>{75, 80, 90, 100, 110, 120}));
  std::printf("  the kernels' image: %zu kernels, SASS for sm_75 80 90 100 110 120, no PTX\n", kernels->entries.size());
}

// __nv_relfatbin: the relocatable objects the kernels' image was linked from (a version-2
// __fatBinC_Wrapper_t lists them at run time: crt/link.stub). Each carries PTX for compute_120.
TEST_F(NcclImage, TheRelocatableObjectsCarryPtxForCompute120) {
  std::printf("%s: __nv_relfatbin holds %zu fatbins\n", MCSIM_NCCL_LIBRARY, relocatable_->size());
  std::map<std::string, size_t> kinds;
  size_t kernels = 0;
  for (const ModuleImage& m : *relocatable_) {
    ++kinds[describe(m).substr(0, describe(m).find("  "))];
    ASSERT_EQ(m.ptx.size(), 1u);
    EXPECT_EQ(m.ptx[0].arch, 120u);
    EXPECT_EQ(directiveValue(m.ptx[0].text, ".version"), "9.0");
    EXPECT_EQ(directiveValue(m.ptx[0].text, ".target"), "sm_120");
    kernels += m.entries.size();
  }
  for (const auto& [k, n] : kinds) std::printf("  %zu fatbins:%s\n", n, k.c_str());
  std::printf("  %zu kernels in all\n", kernels);
  EXPECT_EQ(relocatable_->size(), 127u);
  EXPECT_EQ(kinds.size(), 1u);
  EXPECT_EQ(kinds.begin()->first, " sm_75(z) sm_80(z) sm_90(z) sm_100(z) compute_120(z) sm_120(z) sm_110(z)");
}

// NCCL's PTX through mcsim's parser, as a survey (ptx::surveyModule): every refusal, the parse
// going on past each. The refusals, counted by kind, are docs/nccl.md's list.
TEST_F(NcclImage, WhatTheParserRefusesOfNcclsPtx) {
  std::map<std::string, size_t> reasons, firstReasons;
  size_t functions = 0, accepted = 0, modules = 0, failedModules = 0, kernels = 0, kernelsAccepted = 0;
  for (size_t i = 0; i < relocatable_->size(); ++i) {
    for (const auto& p : (*relocatable_)[i].ptx) {
      ++modules;
      mcsim::ptx::Module m;
      std::string error;
      std::vector<std::string> refusals;
      const std::string name = "nccl_rel" + std::to_string(i) + ".ptx";
      if (!mcsim::ptx::surveyModule(p.text, name, &m, &error, &refusals)) {
        ++failedModules;
        ++reasons["(module) " + reasonKind(error)];
        continue;
      }
      for (const std::string& r : refusals) ++reasons[reasonKind(r)];
      accepted += m.functions.size();
      functions += m.functions.size() + m.refused.size();
      for (const auto& f : m.functions) kernelsAccepted += f.isEntry ? 1 : 0;
      for (const auto& [fn, why] : m.refused) ++firstReasons[reasonKind(why)];
      for (size_t at = p.text.find(".entry "); at != std::string::npos; at = p.text.find(".entry ", at + 1)) ++kernels;
    }
  }
  std::printf("NCCL's PTX: %zu modules (%zu refused whole), %zu functions (%zu kernels), %zu accepted (%zu kernels)\n",
              modules, failedModules, functions, kernels, accepted, kernelsAccepted);
  std::printf("every refusal, by kind:\n");
  for (const auto& [why, n] : reasons) std::printf("  %6zu  %s\n", n, why.c_str());
  std::printf("each refused function's first refusal, by kind:\n");
  for (const auto& [why, n] : firstReasons) std::printf("  %6zu  %s\n", n, why.c_str());

  // docs/nccl.md, "What mcsim's parser refuses of NCCL's PTX".
  EXPECT_EQ(modules, 127u);
  EXPECT_EQ(failedModules, 0u);
  EXPECT_EQ(functions, 724u);
  EXPECT_EQ(kernels, 52u);
  EXPECT_EQ(kernelsAccepted, 12u);
  EXPECT_EQ(accepted, 684u);  // every device function; the kernels that reach the table, not
  const std::map<std::string, size_t> expected = {
      {"'ncclDevFuncTable' has no size", 31},
      {"undefined symbol 'ncclDevFuncTable'", 40},
  };
  EXPECT_EQ(reasons, expected) << "the refusals changed: update docs/nccl.md and this list";
  const std::map<std::string, size_t> expectedFirst = {
      {"undefined symbol 'ncclDevFuncTable'", 40},
  };
  EXPECT_EQ(firstReasons, expectedFirst);
}

// The symmetric-memory kernels' images (ncclSymkDevKernel_*, the other 15 of .nv_fatbin; 11 with
// compute_120 PTX, which mcsim takes on a compute-9.0 GPU: driver::bestPtx) through the survey.
TEST_F(NcclImage, WhatTheParserRefusesOfTheSymmetricKernelsPtx) {
  std::map<std::string, size_t> reasons;
  std::vector<std::string> acceptedNames;
  size_t modules = 0, kernels = 0, accepted = 0;
  for (size_t i = 0; i < linked_->size(); ++i) {
    for (const auto& p : (*linked_)[i].ptx) {
      ++modules;
      mcsim::ptx::Module m;
      std::string error;
      std::vector<std::string> refusals;
      ASSERT_TRUE(mcsim::ptx::surveyModule(p.text, "nccl_linked" + std::to_string(i) + ".ptx", &m, &error, &refusals))
          << error;
      for (const std::string& r : refusals) ++reasons[reasonKind(r)];
      kernels += m.functions.size() + m.refused.size();
      accepted += m.functions.size();
      for (const auto& f : m.functions) acceptedNames.push_back(f.name);
    }
  }
  std::printf("the symmetric kernels' PTX: %zu modules, %zu functions, %zu accepted\n", modules, kernels, accepted);
  for (const auto& [why, n] : reasons) std::printf("  %6zu  %s\n", n, why.c_str());
  std::printf("accepted:");
  for (const std::string& k : acceptedNames) std::printf(" %s", k.c_str());
  std::printf("\n");
  // docs/nccl.md, "The symmetric kernels".
  EXPECT_EQ(modules, 11u);
  EXPECT_EQ(kernels, 35u);
  EXPECT_EQ(accepted, 35u);
  EXPECT_TRUE(reasons.empty()) << "the refusals changed: update docs/nccl.md and this test";
}

}  // namespace
