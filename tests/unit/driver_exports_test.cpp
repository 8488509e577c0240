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
#include <string>

#ifndef MCSIM_TEST_SOURCE_DIR
#error "MCSIM_TEST_SOURCE_DIR must name the project's source directory"
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
