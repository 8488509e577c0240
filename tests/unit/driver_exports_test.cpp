// Every function the real libcuda.so.1 exports (docs/real-driver/libcuda-580.159.04-functions.txt)
// is exported by mcsim's, modelled (entry_points.def) or not (unmodelled.def); the unmodelled
// ones are resolvable through cuGetProcAddress under their real names and versions, return
// CUDA_ERROR_NOT_SUPPORTED and say so once.
#include <cuda.h>
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#ifndef MCSIM_TEST_SOURCE_DIR
#error "MCSIM_TEST_SOURCE_DIR must name the project's source directory"
#endif
#ifndef MCSIM_CUDA_INCLUDE_DIR
#error "MCSIM_CUDA_INCLUDE_DIR must name the CUDA headers' directory"
#endif

namespace {

TEST(DriverExports, EveryFunctionOfTheRealDriverIsExported) {
  std::ifstream in(std::string(MCSIM_TEST_SOURCE_DIR) + "/docs/real-driver/libcuda-580.159.04-functions.txt");
  ASSERT_TRUE(in.good());
  void* self = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(nullptr, self);
  std::string name, missing;
  int count = 0;
  while (std::getline(in, name)) {
    if (name.empty() || name[0] == '#') continue;
    if (name.rfind("cudbg", 0) == 0) continue;  // the debugger's hooks (tools/dev/unmodelled_entries.py)
    ++count;
    if (dlsym(self, name.c_str()) == nullptr) missing += " " + name;
  }
  EXPECT_GT(count, 600);
  EXPECT_EQ("", missing);
}

// Every variant the toolkit's headers type (PFN_<name>_v<version>, with _ptds / _ptsz for the
// per-thread default-stream ones, in cudaTypedefs.h and its GL, EGL, VDPAU and profiler twins) of
// a function the real driver exports is resolvable through cuGetProcAddress at its version, as an
// exported function of that name; a function's variants are distinct functions; below its first
// typed version a function resolves to its older, untyped variant where the driver exports one
// (the pre-3.2 and pre-4.0 forms), and is "version not sufficient" where it does not.
TEST(DriverExports, EveryTypedVariantResolvesAtItsVersion) {
  ASSERT_EQ(CUDA_SUCCESS, cuInit(0));
  std::set<std::string> realExports;
  {
    std::ifstream in(std::string(MCSIM_TEST_SOURCE_DIR) + "/docs/real-driver/libcuda-580.159.04-functions.txt");
    std::string name;
    while (std::getline(in, name)) {
      if (!name.empty() && name[0] != '#') realExports.insert(name);
    }
  }
  ASSERT_GT(realExports.size(), 600u);
  // Typed, but not exported by the Linux driver (WGL is Windows'; EGL sync events): not resolvable.
  auto exportedByTheRealDriver = [&](const std::string& name) {
    auto it = realExports.lower_bound(name);
    return it != realExports.end() && (*it == name || it->rfind(name + "_", 0) == 0);
  };
  const std::regex typedefLine(R"(typedef\s+\w+\s*\(\s*CUDAAPI\s*\*\s*PFN_(cu\w+?)_v(\d+)(_ptds|_ptsz)?\s*\))");
  std::map<std::string, std::set<int>> legacy, perThread;  // name -> versions of its variants
  for (const char* header : {"cudaTypedefs.h", "cudaGLTypedefs.h", "cudaEGLTypedefs.h", "cudaVDPAUTypedefs.h",
                             "cudaProfilerTypedefs.h"}) {
    std::ifstream in(std::string(MCSIM_CUDA_INCLUDE_DIR) + "/" + header);
    ASSERT_TRUE(in.good()) << header;
    std::string line;
    while (std::getline(in, line)) {
      std::smatch m;
      // The indented typedefs are the pre-3.2 variants, declared for NVIDIA's own build only.
      if (line.empty() || line[0] == ' ' || !std::regex_search(line, m, typedefLine)) continue;
      (m[3].matched ? perThread : legacy)[m[1]].insert(std::stoi(m[2]));
    }
  }
  ASSERT_GT(legacy.size(), 400u);
  void* self = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(nullptr, self);
  std::vector<std::string> problems;
  auto resolve = [&](const std::string& name, int version, cuuint64_t flags, void** fn) {
    CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    *fn = nullptr;
    const CUresult r = cuGetProcAddress(name.c_str(), fn, version, flags, &status);
    return r == CUDA_SUCCESS ? status : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  };
  auto exportedName = [](void* fn) {
    Dl_info info{};
    return dladdr(fn, &info) != 0 && info.dli_sname != nullptr ? std::string(info.dli_sname) : std::string();
  };
  int variants = 0, skipped = 0;
  for (const auto& [name, versions] : legacy) {
    if (!exportedByTheRealDriver(name)) {
      ++skipped;
      continue;
    }
    std::set<void*> seen;
    void* first = nullptr;
    for (int v : versions) {
      ++variants;
      void* fn = nullptr;
      if (resolve(name, v, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &fn) != CU_GET_PROC_ADDRESS_SUCCESS || fn == nullptr) {
        problems.push_back(name + " at " + std::to_string(v) + ": not found");
        continue;
      }
      const std::string sym = exportedName(fn);
      if (sym.rfind(name, 0) != 0 || dlsym(self, sym.c_str()) != fn) {
        problems.push_back(name + " at " + std::to_string(v) + ": resolves to '" + sym + "', not an export of its name");
      }
      if (!seen.insert(fn).second) problems.push_back(name + " at " + std::to_string(v) + ": the same function as an older variant");
      if (first == nullptr) first = fn;
    }
    if (first == nullptr || *versions.begin() <= 2000) continue;
    void* below = reinterpret_cast<void*>(1);
    const CUdriverProcAddressQueryResult b = resolve(name, *versions.begin() - 1, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &below);
    if (exportedName(first) == name) {
      // The first typed variant is the function's plain name: nothing older.
      if (b != CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT || below != nullptr) {
        problems.push_back(name + " below " + std::to_string(*versions.begin()) + ": not 'version not sufficient'");
      }
    } else if (b != CU_GET_PROC_ADDRESS_SUCCESS || below == first || exportedName(below).rfind(name, 0) != 0) {
      problems.push_back(name + " below " + std::to_string(*versions.begin()) + ": not its older variant");
    }
  }
  EXPECT_LE(skipped, 2) << "typed functions the real driver does not export";
  for (const auto& [name, versions] : perThread) {
    for (int v : versions) {
      ++variants;
      void* fn = nullptr;
      if (resolve(name, v, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &fn) != CU_GET_PROC_ADDRESS_SUCCESS) {
        problems.push_back(name + " per-thread at " + std::to_string(v) + ": not found");
        continue;
      }
      const std::string sym = exportedName(fn);
      const std::string suffix = sym.size() > 5 ? sym.substr(sym.size() - 5) : "";
      if (sym.rfind(name, 0) != 0 || (suffix != "_ptds" && suffix != "_ptsz")) {
        problems.push_back(name + " per-thread at " + std::to_string(v) + ": resolves to '" + sym + "'");
      }
    }
  }
  EXPECT_GT(variants, 550);
  std::string all;
  for (const std::string& p : problems) all += "\n  " + p;
  EXPECT_TRUE(problems.empty()) << problems.size() << " problems:" << all;
}

// The first call of an unmodelled function prints one line naming it; later calls print nothing.
TEST(DriverExports, UnmodelledFunctionSaysSoOnceAndReturnsNotSupported) {
  ASSERT_EQ(CUDA_SUCCESS, cuInit(0));
  void* fn = nullptr;
  CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  ASSERT_EQ(CUDA_SUCCESS, cuGetProcAddress("cuGraphAddMemAllocNode", &fn, 13000, 0, &status));
  ASSERT_EQ(CU_GET_PROC_ADDRESS_SUCCESS, status);
  void* self = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  ASSERT_EQ(dlsym(self, "cuGraphAddMemAllocNode"), fn) << "cuGetProcAddress gives the exported function";
  fflush(stderr);
  char path[] = "/tmp/mcsim-exports-XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  const int saved = dup(2);
  dup2(fd, 2);
  CUgraphNode node = nullptr;
  CUDA_MEM_ALLOC_NODE_PARAMS params{};
  const CUresult first = reinterpret_cast<CUresult (*)(CUgraphNode*, CUgraph, const CUgraphNode*, size_t,
                                                       CUDA_MEM_ALLOC_NODE_PARAMS*)>(fn)(&node, nullptr, nullptr, 0,
                                                                                         &params);
  const CUresult second = cuGraphAddMemAllocNode(&node, nullptr, nullptr, 0, &params);
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  std::ifstream in(path);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  close(fd);
  unlink(path);
  EXPECT_EQ(CUDA_ERROR_NOT_SUPPORTED, first);
  EXPECT_EQ(CUDA_ERROR_NOT_SUPPORTED, second);
  EXPECT_EQ(nullptr, node) << "nothing written";
  EXPECT_EQ("mcsim: cuGraphAddMemAllocNode is not modelled; it returns CUDA_ERROR_NOT_SUPPORTED\n", text);
}

// Real versions: the 3.2-era variant of a function resolves at its version, the newer at its own.
TEST(DriverExports, UnmodelledVariantsResolveByVersion) {
  ASSERT_EQ(CUDA_SUCCESS, cuInit(0));
  void* self = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  void* fn = nullptr;
  CUdriverProcAddressQueryResult status{};
  ASSERT_EQ(CUDA_SUCCESS, cuGetProcAddress("cuArrayCreate", &fn, 3020, 0, &status));
  EXPECT_EQ(dlsym(self, "cuArrayCreate_v2"), fn);
  ASSERT_EQ(CUDA_SUCCESS, cuGetProcAddress("cuArrayCreate", &fn, 3010, 0, &status));
  EXPECT_EQ(dlsym(self, "cuArrayCreate"), fn);
  // A per-thread variant under the per-thread flag.
  ASSERT_EQ(CUDA_SUCCESS, cuGetProcAddress("cuGraphLaunch", &fn, 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &status));
  EXPECT_EQ(dlsym(self, "cuGraphLaunch_ptsz"), fn);
  // Exported but typed by no header: not resolvable.
  fn = reinterpret_cast<void*>(1);
  ASSERT_EQ(CUDA_SUCCESS, cuGetProcAddress("cuMemGetAttribute", &fn, 13000, 0, &status));
  EXPECT_EQ(nullptr, fn);
  EXPECT_EQ(CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND, status);
}

}  // namespace
