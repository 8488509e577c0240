// The driver's JIT linker (cuLinkCreate, cuLinkAddData, cuLinkAddFile, cuLinkComplete,
// cuLinkDestroy): two PTX objects, one calling a function and reading a variable the other
// defines, linked, loaded with cuModuleLoadData and launched; the results checked on the host.
// The parts that assert mcsim's own answers (its log messages, what it cannot run, the code for
// an unresolved symbol, which no real GPU was asked for) are left out of the real-driver build.
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "tests/conformance/conformance.h"

namespace {

// out[i] = scale(i) + offset, for i < n: `scale` and `offset` are another object's.
const char* const kCaller = R"(
.version 8.0
.target sm_90
.address_size 64

.extern .func (.param .b32 func_retval0) scale(.param .b32 x);
.extern .global .align 4 .u32 offset;

.visible .entry apply(.param .u64 out, .param .u32 n)
{
  .reg .pred %p<2>;
  .reg .b32 %r<9>;
  .reg .b64 %rd<4>;
  mov.u32 %r1, %ctaid.x;
  mov.u32 %r2, %ntid.x;
  mov.u32 %r3, %tid.x;
  mad.lo.s32 %r4, %r1, %r2, %r3;
  ld.param.u32 %r5, [n];
  setp.ge.s32 %p1, %r4, %r5;
  @%p1 bra DONE;
  {
  .param .b32 param0;
  st.param.b32 [param0], %r4;
  .param .b32 retval0;
  call.uni (retval0), scale, (param0);
  ld.param.b32 %r6, [retval0];
  }
  ld.global.u32 %r7, [offset];
  add.s32 %r8, %r6, %r7;
  ld.param.u64 %rd1, [out];
  mul.wide.s32 %rd2, %r4, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r8;
DONE:
  ret;
}
)";

// scale(x) = x * factor; offset = 7, factor = 3.
const char* const kCallee = R"(
.version 8.0
.target sm_90
.address_size 64

.visible .global .align 4 .u32 offset = 7;
.visible .global .align 4 .u32 factor = 3;

.visible .func (.param .b32 func_retval0) scale(.param .b32 x)
{
  .reg .b32 %r<4>;
  ld.param.b32 %r1, [x];
  ld.global.u32 %r2, [factor];
  mul.lo.s32 %r3, %r1, %r2;
  st.param.b32 [func_retval0], %r3;
  ret;
}
)";

// Line 7 holds an instruction PTX does not have.
const char* const kBadPtx = R"(
.version 8.0
.target sm_90
.address_size 64
.visible .entry broken()
{
  frobnicate.u32 %r1;
  ret;
}
)";

size_t textBytes(const char* ptx) { return std::strlen(ptx) + 1; }

class Link : public conformance::DriverTest {
 protected:
  void SetUp() override {
    DriverTest::SetUp();
    if (HasFatalFailure()) return;
    ASSERT_OK(cuMemAlloc(&out, kN * 4));
  }
  void TearDown() override {
    if (out != 0) cuMemFree(out);
    DriverTest::TearDown();
  }
  // A link state with both logs.
  CUlinkState create() {
    CUjit_option options[] = {CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES, CU_JIT_ERROR_LOG_BUFFER,
                              CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, CU_JIT_LOG_VERBOSE};
    values[0] = info;
    values[1] = reinterpret_cast<void*>(static_cast<uintptr_t>(sizeof info));
    values[2] = error;
    values[3] = reinterpret_cast<void*>(static_cast<uintptr_t>(sizeof error));
    values[4] = reinterpret_cast<void*>(static_cast<uintptr_t>(1));
    CUlinkState state = nullptr;
    EXPECT_OK(cuLinkCreate(5, options, values, &state));
    return state;
  }
  // Launches `apply` of `mod` and checks out[i] = 3 i + offset.
  void apply(CUmodule mod, unsigned offset) {
    CUfunction f = nullptr;
    ASSERT_OK(cuModuleGetFunction(&f, mod, "apply"));
    int n = kN;
    void* args[] = {&out, &n};
    ASSERT_OK(cuLaunchKernel(f, (kN + 127) / 128, 1, 1, 128, 1, 1, 0, nullptr, args, nullptr));
    ASSERT_OK(cuCtxSynchronize());
    std::vector<unsigned> back(kN);
    ASSERT_OK(cuMemcpyDtoH(back.data(), out, kN * 4));
    for (int i = 0; i < kN; ++i) ASSERT_EQ(3u * static_cast<unsigned>(i) + offset, back[i]) << "element " << i;
  }
  static constexpr int kN = 300;
  CUdeviceptr out = 0;
  char info[4096] = {};
  char error[4096] = {};
  void* values[5] = {};
};

TEST_F(Link, TwoPtxObjectsLinkLoadAndRun) {
  CUlinkState state = create();
  ASSERT_NE(nullptr, state);
  ASSERT_OK(cuLinkAddData(state, CU_JIT_INPUT_PTX, const_cast<char*>(kCaller), textBytes(kCaller), "caller.ptx", 0,
                          nullptr, nullptr));
  ASSERT_OK(cuLinkAddData(state, CU_JIT_INPUT_PTX, const_cast<char*>(kCallee), textBytes(kCallee), "callee.ptx", 0,
                          nullptr, nullptr));
  void* image = nullptr;
  size_t bytes = 0;
  ASSERT_OK(cuLinkComplete(state, &image, &bytes));
  ASSERT_NE(nullptr, image);
  EXPECT_GT(bytes, 0u);
  CUmodule mod = nullptr;
  ASSERT_OK(cuModuleLoadData(&mod, image));
  // The image belongs to the state; the module does not need it once loaded.
  ASSERT_OK(cuLinkDestroy(state));
  apply(mod, 7);
  // The other object's variable, through the linked module.
  CUdeviceptr offset = 0;
  size_t offsetBytes = 0;
  ASSERT_OK(cuModuleGetGlobal(&offset, &offsetBytes, mod, "offset"));
  EXPECT_EQ(4u, offsetBytes);
  const unsigned changed = 1000;
  ASSERT_OK(cuMemcpyHtoD(offset, &changed, 4));
  apply(mod, changed);
  EXPECT_OK(cuModuleUnload(mod));
}

TEST_F(Link, ObjectOrderDoesNotMatter) {
  CUlinkState state = create();
  ASSERT_OK(cuLinkAddData(state, CU_JIT_INPUT_PTX, const_cast<char*>(kCallee), textBytes(kCallee), "callee.ptx", 0,
                          nullptr, nullptr));
  ASSERT_OK(cuLinkAddData(state, CU_JIT_INPUT_PTX, const_cast<char*>(kCaller), textBytes(kCaller), "caller.ptx", 0,
                          nullptr, nullptr));
  void* image = nullptr;
  ASSERT_OK(cuLinkComplete(state, &image, nullptr));
  CUmodule mod = nullptr;
  ASSERT_OK(cuModuleLoadData(&mod, image));
  apply(mod, 7);
  EXPECT_OK(cuModuleUnload(mod));
  EXPECT_OK(cuLinkDestroy(state));
}

TEST_F(Link, FilesThroughLinkAddFile) {
  char dir[] = "/tmp/mcsim-link-XXXXXX";
  ASSERT_NE(nullptr, mkdtemp(dir));
  const std::string caller = std::string(dir) + "/caller.ptx", callee = std::string(dir) + "/callee.ptx";
  std::ofstream(caller) << kCaller;
  std::ofstream(callee) << kCallee;
  CUlinkState state = create();
  ASSERT_OK(cuLinkAddFile(state, CU_JIT_INPUT_PTX, caller.c_str(), 0, nullptr, nullptr));
  ASSERT_OK(cuLinkAddFile(state, CU_JIT_INPUT_PTX, callee.c_str(), 0, nullptr, nullptr));
  EXPECT_CU(CUDA_ERROR_FILE_NOT_FOUND,
            cuLinkAddFile(state, CU_JIT_INPUT_PTX, (std::string(dir) + "/none.ptx").c_str(), 0, nullptr, nullptr));
  void* image = nullptr;
  size_t bytes = 0;
  ASSERT_OK(cuLinkComplete(state, &image, &bytes));
  CUmodule mod = nullptr;
  ASSERT_OK(cuModuleLoadData(&mod, image));
  apply(mod, 7);
  EXPECT_OK(cuModuleUnload(mod));
  EXPECT_OK(cuLinkDestroy(state));
  std::remove(caller.c_str());
  std::remove(callee.c_str());
  rmdir(dir);
}

TEST_F(Link, ArgumentsAreChecked) {
  CUlinkState state = nullptr;
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuLinkCreate(0, nullptr, nullptr, nullptr));
  CUjit_option opt = CU_JIT_LOG_VERBOSE;
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuLinkCreate(1, &opt, nullptr, &state));
  ASSERT_OK(cuLinkCreate(0, nullptr, nullptr, &state));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE,
            cuLinkAddData(state, CU_JIT_INPUT_PTX, nullptr, 10, "none", 0, nullptr, nullptr));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuLinkAddFile(state, CU_JIT_INPUT_PTX, nullptr, 0, nullptr, nullptr));
  // Input options are the compiler's only: the logs and the target belong to cuLinkCreate.
  CUjit_option target = CU_JIT_TARGET;
  void* targetValue = reinterpret_cast<void*>(static_cast<uintptr_t>(CU_TARGET_COMPUTE_90));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuLinkAddData(state, CU_JIT_INPUT_PTX, const_cast<char*>(kCallee),
                                                    textBytes(kCallee), "callee.ptx", 1, &target, &targetValue));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuLinkComplete(state, nullptr, nullptr));
  EXPECT_OK(cuLinkDestroy(state));
}

TEST_F(Link, BadPtxIsRefusedWhenAdded) {
  CUlinkState state = create();
  EXPECT_CU(CUDA_ERROR_INVALID_PTX,
            cuLinkAddData(state, CU_JIT_INPUT_PTX, const_cast<char*>(kBadPtx), textBytes(kBadPtx), "bad.ptx", 0, nullptr, nullptr));
  EXPECT_NE('\0', error[0]) << "the error log says why";
  // The state goes on without it.
  ASSERT_OK(cuLinkAddData(state, CU_JIT_INPUT_PTX, const_cast<char*>(kCaller), textBytes(kCaller), "caller.ptx", 0,
                          nullptr, nullptr));
  ASSERT_OK(cuLinkAddData(state, CU_JIT_INPUT_PTX, const_cast<char*>(kCallee), textBytes(kCallee), "callee.ptx", 0,
                          nullptr, nullptr));
  void* image = nullptr;
  ASSERT_OK(cuLinkComplete(state, &image, nullptr));
  CUmodule mod = nullptr;
  ASSERT_OK(cuModuleLoadData(&mod, image));
  CUfunction f = nullptr;
  EXPECT_CU(CUDA_ERROR_NOT_FOUND, cuModuleGetFunction(&f, mod, "broken"));
  apply(mod, 7);
  EXPECT_OK(cuModuleUnload(mod));
  EXPECT_OK(cuLinkDestroy(state));
}

std::vector<char> readAll(const char* path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<char>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

#ifdef MCSIM_LINK_OBJECT
// The callee from nvcc: a host object and a static library of relocatable device code (PTX only).
TEST_F(Link, AHostObjectAndALibraryFromNvcc) {
  if (std::string(MCSIM_LINK_OBJECT).empty()) GTEST_SKIP() << "built without nvcc";
  for (const auto& [type, path] : {std::pair<CUjitInputType, const char*>{CU_JIT_INPUT_OBJECT, MCSIM_LINK_OBJECT},
                                   std::pair<CUjitInputType, const char*>{CU_JIT_INPUT_LIBRARY, MCSIM_LINK_LIBRARY}}) {
    SCOPED_TRACE(path);
    CUlinkState state = create();
    ASSERT_OK(cuLinkAddData(state, CU_JIT_INPUT_PTX, const_cast<char*>(kCaller), textBytes(kCaller), "caller.ptx", 0,
                            nullptr, nullptr));
    std::vector<char> bytes = readAll(path);
    ASSERT_FALSE(bytes.empty());
    ASSERT_OK(cuLinkAddData(state, type, bytes.data(), bytes.size(), path, 0, nullptr, nullptr)) << error;
    void* image = nullptr;
    ASSERT_OK(cuLinkComplete(state, &image, nullptr)) << error;
    CUmodule mod = nullptr;
    ASSERT_OK(cuModuleLoadData(&mod, image));
    apply(mod, 7);
    EXPECT_OK(cuModuleUnload(mod));
    EXPECT_OK(cuLinkDestroy(state));
    // From the file, the same.
    state = create();
    ASSERT_OK(cuLinkAddData(state, CU_JIT_INPUT_PTX, const_cast<char*>(kCaller), textBytes(kCaller), "caller.ptx", 0,
                            nullptr, nullptr));
    ASSERT_OK(cuLinkAddFile(state, type, path, 0, nullptr, nullptr)) << error;
    ASSERT_OK(cuLinkComplete(state, &image, nullptr)) << error;
    EXPECT_OK(cuLinkDestroy(state));
  }
}
#endif

#ifndef MCSIM_CONFORMANCE_REAL
// mcsim's messages, and answers no real GPU was asked for (docs/ptx.md, "Linking with cuLink*").

TEST_F(Link, TheErrorLogNamesTheLineAndTheProblem) {
  CUlinkState state = create();
  EXPECT_CU(CUDA_ERROR_INVALID_PTX,
            cuLinkAddData(state, CU_JIT_INPUT_PTX, const_cast<char*>(kBadPtx), textBytes(kBadPtx), "bad.ptx", 0, nullptr, nullptr));
  const std::string log = error;
  EXPECT_NE(std::string::npos, log.find("bad.ptx:7")) << log;
  EXPECT_NE(std::string::npos, log.find("frobnicate")) << log;
  EXPECT_EQ(log.size(), reinterpret_cast<uintptr_t>(values[3])) << "the error log's length comes back in its size option";
  EXPECT_OK(cuLinkDestroy(state));
}

TEST_F(Link, AnUnresolvedExternIsNamed) {
  CUlinkState state = create();
  ASSERT_OK(cuLinkAddData(state, CU_JIT_INPUT_PTX, const_cast<char*>(kCaller), textBytes(kCaller), "caller.ptx", 0,
                          nullptr, nullptr));
  void* image = nullptr;
  EXPECT_CU(CUDA_ERROR_INVALID_SOURCE, cuLinkComplete(state, &image, nullptr));
  EXPECT_EQ(nullptr, image);
  const std::string log = error;
  EXPECT_TRUE(log.find("'scale'") != std::string::npos || log.find("'offset'") != std::string::npos) << log;
  EXPECT_NE(std::string::npos, log.find("caller.ptx")) << log;
  // Adding the definitions completes the link.
  ASSERT_OK(cuLinkAddData(state, CU_JIT_INPUT_PTX, const_cast<char*>(kCallee), textBytes(kCallee), "callee.ptx", 0,
                          nullptr, nullptr));
  ASSERT_OK(cuLinkComplete(state, &image, nullptr));
  CUmodule mod = nullptr;
  ASSERT_OK(cuModuleLoadData(&mod, image));
  apply(mod, 7);
  EXPECT_OK(cuModuleUnload(mod));
  EXPECT_OK(cuLinkDestroy(state));
}

// mcsim's images are PTX text: one goes back into a link, as a cubin or a fatbin input is taken by
// what its bytes are.
TEST_F(Link, AnImageGoesBackIntoALink) {
  CUlinkState first = create();
  ASSERT_OK(cuLinkAddData(first, CU_JIT_INPUT_PTX, const_cast<char*>(kCaller), textBytes(kCaller), "caller.ptx", 0,
                          nullptr, nullptr));
  ASSERT_OK(cuLinkAddData(first, CU_JIT_INPUT_PTX, const_cast<char*>(kCallee), textBytes(kCallee), "callee.ptx", 0,
                          nullptr, nullptr));
  void* image = nullptr;
  size_t bytes = 0;
  ASSERT_OK(cuLinkComplete(first, &image, &bytes));
  CUlinkState second = create();
  ASSERT_OK(cuLinkAddData(second, CU_JIT_INPUT_CUBIN, image, bytes, "linked.image", 0, nullptr, nullptr)) << error;
  ASSERT_OK(cuLinkDestroy(first));
  ASSERT_OK(cuLinkComplete(second, &image, nullptr));
  CUmodule mod = nullptr;
  ASSERT_OK(cuModuleLoadData(&mod, image));
  apply(mod, 7);
  EXPECT_OK(cuModuleUnload(mod));
  EXPECT_OK(cuLinkDestroy(second));
}

TEST_F(Link, DestroyedOrUnknownStatesAreInvalidHandles) {
  CUlinkState state = create();
  ASSERT_OK(cuLinkDestroy(state));
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuLinkDestroy(state));
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuLinkAddData(state, CU_JIT_INPUT_PTX, const_cast<char*>(kCallee),
                                                     textBytes(kCallee), "callee.ptx", 0, nullptr, nullptr));
  void* image = nullptr;
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuLinkComplete(state, &image, nullptr));
  int notAState = 0;
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuLinkDestroy(reinterpret_cast<CUlinkState>(&notAState)));
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuLinkDestroy(nullptr));
}

TEST_F(Link, NothingToLinkIsRefused) {
  CUlinkState state = create();
  void* image = nullptr;
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuLinkComplete(state, &image, nullptr));
  EXPECT_NE(std::string::npos, std::string(error).find("no input")) << error;
  EXPECT_OK(cuLinkDestroy(state));
}

TEST_F(Link, NvvmInputIsNotModelled) {
  CUlinkState state = create();
  char ir[] = "BC not really";
  EXPECT_CU(CUDA_ERROR_JIT_COMPILER_NOT_FOUND, cuLinkAddData(state, CU_JIT_INPUT_NVVM, ir, sizeof ir, "k.ltoir", 0, nullptr, nullptr));
  EXPECT_NE(std::string::npos, std::string(error).find("k.ltoir")) << error;
  EXPECT_OK(cuLinkDestroy(state));
}

#ifdef MCSIM_SASS_CUBIN
// nvcc's cubin for sm_90 (tests/conformance/ptx_kernels.cu): SASS only, which mcsim cannot run.
TEST_F(Link, SassOnlyInputIsRefusedWithWhatToRebuildWith) {
  if (std::string(MCSIM_SASS_CUBIN).empty()) GTEST_SKIP() << "built without nvcc";
  std::vector<char> cubin = readAll(MCSIM_SASS_CUBIN);
  ASSERT_FALSE(cubin.empty()) << MCSIM_SASS_CUBIN;
  CUlinkState state = create();
  EXPECT_CU(CUDA_ERROR_NO_BINARY_FOR_GPU,
            cuLinkAddData(state, CU_JIT_INPUT_CUBIN, cubin.data(), cubin.size(), "kernels.cubin", 0, nullptr, nullptr));
  const std::string log = error;
  EXPECT_NE(std::string::npos, log.find("kernels.cubin")) << log;
  EXPECT_NE(std::string::npos, log.find("fatbin_vadd")) << log;
  EXPECT_NE(std::string::npos, log.find("-gencode arch=compute_90,code=[sm_90,compute_90]")) << log;
  // From the file, the same.
  EXPECT_CU(CUDA_ERROR_NO_BINARY_FOR_GPU, cuLinkAddFile(state, CU_JIT_INPUT_CUBIN, MCSIM_SASS_CUBIN, 0, nullptr, nullptr));
  void* image = nullptr;
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuLinkComplete(state, &image, nullptr)) << "nothing was added";
  EXPECT_OK(cuLinkDestroy(state));
}
#endif

#ifdef MCSIM_PTX_FATBIN
// A fatbin of SASS and PTX: its PTX is linked.
TEST_F(Link, AFatbinsPtxIsLinked) {
  if (std::string(MCSIM_PTX_FATBIN).empty()) GTEST_SKIP() << "built without nvcc";
  std::vector<char> fatbin = readAll(MCSIM_PTX_FATBIN);
  CUlinkState state = create();
  ASSERT_OK(cuLinkAddData(state, CU_JIT_INPUT_FATBINARY, fatbin.data(), fatbin.size(), "kernels.fatbin", 0, nullptr, nullptr));
  ASSERT_OK(cuLinkAddData(state, CU_JIT_INPUT_PTX, const_cast<char*>(kCaller), textBytes(kCaller), "caller.ptx", 0,
                          nullptr, nullptr));
  ASSERT_OK(cuLinkAddData(state, CU_JIT_INPUT_PTX, const_cast<char*>(kCallee), textBytes(kCallee), "callee.ptx", 0,
                          nullptr, nullptr));
  void* image = nullptr;
  ASSERT_OK(cuLinkComplete(state, &image, nullptr));
  CUmodule mod = nullptr;
  ASSERT_OK(cuModuleLoadData(&mod, image));
  CUfunction f = nullptr;
  EXPECT_OK(cuModuleGetFunction(&f, mod, "fatbin_vadd"));
  apply(mod, 7);
  EXPECT_OK(cuModuleUnload(mod));
  EXPECT_OK(cuLinkDestroy(state));
}
#endif

TEST_F(Link, EntryPointsResolve) {
  for (const char* name : {"cuLinkCreate", "cuLinkAddData", "cuLinkAddFile", "cuLinkComplete", "cuLinkDestroy"}) {
    void* fn = nullptr;
    CUdriverProcAddressQueryResult found{};
    ASSERT_OK(cuGetProcAddress(name, &fn, 13000, CU_GET_PROC_ADDRESS_DEFAULT, &found)) << name;
    EXPECT_EQ(CU_GET_PROC_ADDRESS_SUCCESS, found) << name;
    EXPECT_NE(nullptr, fn) << name;
  }
  void* v2 = nullptr;
  ASSERT_OK(cuGetProcAddress("cuLinkCreate", &v2, 13000, CU_GET_PROC_ADDRESS_DEFAULT, nullptr));
  EXPECT_EQ(conformance::libcudaSymbol("cuLinkCreate_v2"), v2);
}
#endif

}  // namespace
