// cuGetProcAddress_v2 and the CUDA 11.3 four-argument cuGetProcAddress: which ABI variant a
// (symbol, version, flags) query gets, and how "not found" is told by each form. Pointers are
// compared with the symbols the library exports; none of them is called (cuMulticastCreate is
// only looked up).
#include <string>

#include "tests/conformance/conformance.h"

namespace {

using conformance::libcudaSymbol;

void* const kUntouched = reinterpret_cast<void*>(uintptr_t{1});
constexpr int kStatusUntouched = 77;

typedef CUresult (*GetProcAddressV1)(const char*, void**, int, cuuint64_t);

struct Lookup {
  CUresult r;
  int status;  // v2 only
  void* pfn;
};

Lookup v2(const char* symbol, int version, cuuint64_t flags = 0) {
  Lookup l{CUDA_SUCCESS, kStatusUntouched, kUntouched};
  // Held as an int: an untouched sentinel is no valid enum value, and loading it as one is UB.
  int st = kStatusUntouched;
  l.r = cuGetProcAddress_v2(symbol, &l.pfn, version, flags, reinterpret_cast<CUdriverProcAddressQueryResult*>(&st));
  l.status = st;
  return l;
}

Lookup v1(const char* symbol, int version, cuuint64_t flags = 0) {
  Lookup l{CUDA_SUCCESS, kStatusUntouched, kUntouched};
  auto old = reinterpret_cast<GetProcAddressV1>(libcudaSymbol("cuGetProcAddress"));
  EXPECT_NE(nullptr, reinterpret_cast<void*>(old)) << "libcuda.so.1 exports no cuGetProcAddress";
  if (old != nullptr) l.r = old(symbol, &l.pfn, version, flags);
  return l;
}

// Both forms find `symbol` at `version` and hand out the exported `expected`.
void expectFound(const char* symbol, int version, cuuint64_t flags, const char* expected) {
  void* want = libcudaSymbol(expected);
  ASSERT_NE(nullptr, want) << "libcuda.so.1 exports no " << expected;
  const std::string what = std::string(symbol) + "@" + std::to_string(version) + " flags " + std::to_string(flags);
  const Lookup a = v2(symbol, version, flags);
  EXPECT_CU(CUDA_SUCCESS, a.r) << what;
  EXPECT_EQ(CU_GET_PROC_ADDRESS_SUCCESS, a.status) << what;
  EXPECT_EQ(want, a.pfn) << what << " should be " << expected;
  const Lookup b = v1(symbol, version, flags);
  EXPECT_CU(CUDA_SUCCESS, b.r) << what;
  EXPECT_EQ(want, b.pfn) << what << " should be " << expected;
}

// v2 succeeds with a NULL pointer and `status`; the old form answers CUDA_ERROR_NOT_FOUND and
// leaves the pointer alone.
void expectNotFound(const char* symbol, int version, int status) {
  const std::string what = std::string("'") + symbol + "'@" + std::to_string(version);
  const Lookup a = v2(symbol, version);
  EXPECT_CU(CUDA_SUCCESS, a.r) << what;
  EXPECT_EQ(status, a.status) << what;
  EXPECT_EQ(nullptr, a.pfn) << what;
  const Lookup b = v1(symbol, version);
  EXPECT_CU(CUDA_ERROR_NOT_FOUND, b.r) << what;
  EXPECT_EQ(kUntouched, b.pfn) << what;
}

// Both forms refuse the query and touch nothing.
void expectRefused(const char* symbol, int version, cuuint64_t flags) {
  const std::string what = std::string(symbol) + "@" + std::to_string(version) + " flags " + std::to_string(flags);
  const Lookup a = v2(symbol, version, flags);
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, a.r) << what;
  EXPECT_EQ(kStatusUntouched, a.status) << what;
  EXPECT_EQ(kUntouched, a.pfn) << what;
  const Lookup b = v1(symbol, version, flags);
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, b.r) << what;
  EXPECT_EQ(kUntouched, b.pfn) << what;
}

class ProcAddress : public conformance::InitTest {};

// probe: gpa.cuInit, gpa.dlsym.cuGetProcAddress, gpa.v2.cuGetProcAddress.*, gpa.old.cuGetProcAddress.*
TEST_F(ProcAddress, GetProcAddressItself) {
  EXPECT_NE(nullptr, libcudaSymbol("cuGetProcAddress"));
  expectFound("cuGetProcAddress", 11030, 0, "cuGetProcAddress");
  expectFound("cuGetProcAddress", 12000, 0, "cuGetProcAddress_v2");
  expectFound("cuGetProcAddress", 13000, 0, "cuGetProcAddress_v2");
}

// probe: gpa.v2.cuMemAlloc.2000.flags0, gpa.v2.cuMemAlloc.3010.flags0, gpa.v2.cuMemAlloc.3020.flags0,
// gpa.v2.cuMemAlloc.13000.flags0 (and gpa.old.*)
TEST_F(ProcAddress, TheNewestVariantNotNewerThanTheRequestedVersion) {
  expectFound("cuMemAlloc", 2000, 0, "cuMemAlloc");
  expectFound("cuMemAlloc", 3010, 0, "cuMemAlloc");
  expectFound("cuMemAlloc", 3020, 0, "cuMemAlloc_v2");
  expectFound("cuMemAlloc", 13000, 0, "cuMemAlloc_v2");
}

// probe: gpa.v2.cuCtxCreate.*, gpa.v2.cuDeviceGetUuid.*, gpa.v2.cuCtxGetDevice.13000.flags0,
// gpa.v2.cuDevicePrimaryCtxRelease.*, gpa.v2.cuMemCreate.10020.flags0, gpa.v2.cuInit.* (and gpa.old.*)
TEST_F(ProcAddress, VersionedVariantsOfOtherFunctions) {
  expectFound("cuCtxCreate", 3020, 0, "cuCtxCreate_v2");
  expectFound("cuCtxCreate", 11040, 0, "cuCtxCreate_v3");
  expectFound("cuCtxCreate", 12050, 0, "cuCtxCreate_v4");
  expectFound("cuCtxCreate", 13000, 0, "cuCtxCreate_v4");
  expectFound("cuDeviceGetUuid", 11030, 0, "cuDeviceGetUuid");
  expectFound("cuDeviceGetUuid", 11040, 0, "cuDeviceGetUuid_v2");
  expectFound("cuCtxGetDevice", 13000, 0, "cuCtxGetDevice_v2");
  expectFound("cuDevicePrimaryCtxRelease", 10000, 0, "cuDevicePrimaryCtxRelease");
  expectFound("cuDevicePrimaryCtxRelease", 11000, 0, "cuDevicePrimaryCtxRelease_v2");
  expectFound("cuMemCreate", 10020, 0, "cuMemCreate");
  expectFound("cuInit", 13000, 0, "cuInit");
  expectFound("cuInit", 2000, 0, "cuInit");
}

// probe: gpa.v2.cuEventElapsedTime.12080.flags0, gpa.v2.cuEventElapsedTime.12090.flags0,
// gpa.v2.cuEventElapsedTime.13000.flags0 (and gpa.old.*)
TEST_F(ProcAddress, EventElapsedTime) {
#ifndef MCSIM_CONFORMANCE_REAL
  if (libcudaSymbol("cuEventElapsedTime_v2") == nullptr) GTEST_SKIP() << "mcsim has no events yet";
#endif
  expectFound("cuEventElapsedTime", 12080, 0, "cuEventElapsedTime_v2");
  expectFound("cuEventElapsedTime", 12090, 0, "cuEventElapsedTime_v2");
  expectFound("cuEventElapsedTime", 13000, 0, "cuEventElapsedTime_v2");
}

// probe: gpa.v2.cuMulticastCreate.12000.flags0, gpa.old.cuMulticastCreate.12000.flags0,
// gpa.v2.cuMulticastCreate.12010.flags0, gpa.old.cuMulticastCreate.12010.flags0
// (looked up, never called)
TEST_F(ProcAddress, MulticastCreateIsLookedUpOnly) {
#ifndef MCSIM_CONFORMANCE_REAL
  if (libcudaSymbol("cuMulticastCreate") == nullptr) GTEST_SKIP() << "mcsim's libcuda has no multicast entry points yet";
#endif
  expectNotFound("cuMulticastCreate", 12000, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
  expectFound("cuMulticastCreate", 12010, 0, "cuMulticastCreate");
}

// probe: gpa.v2.cuMemcpyHtoD.13000.flags0, gpa.v2.cuMemcpyHtoD.13000.flags2,
// gpa.v2.cuMemcpyHtoD.13000.flags1, gpa.v2.cuMemcpyHtoD.13000.flags3,
// gpa.v2.cuMemcpyHtoDAsync.13000.flags2, gpa.v2.cuMemcpy.13000.flags2 (and gpa.old.*)
TEST_F(ProcAddress, PerThreadDefaultStreamFlag) {
  const cuuint64_t PT = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, LG = CU_GET_PROC_ADDRESS_LEGACY_STREAM;
  expectFound("cuMemcpyHtoD", 13000, 0, "cuMemcpyHtoD_v2");
  expectFound("cuMemcpyHtoD", 13000, PT, "cuMemcpyHtoD_v2_ptds");
  expectFound("cuMemcpyHtoD", 13000, LG, "cuMemcpyHtoD_v2");
  expectFound("cuMemcpyHtoD", 13000, PT | LG, "cuMemcpyHtoD_v2_ptds");
  expectFound("cuMemcpyHtoDAsync", 13000, PT, "cuMemcpyHtoDAsync_v2_ptsz");
  expectFound("cuMemcpy", 13000, PT, "cuMemcpy_ptds");
}

// probe: gpa.v2.cuMemAlloc_v2.13000.flags0, gpa.v2.cuMemAlloc_v2.3020.flags0,
// gpa.v2.cuNotAThing.13000.flags0, gpa.v2..13000.flags0, gpa.v2.cuMemCreate.10000.flags0
// (and gpa.old.*)
TEST_F(ProcAddress, NotFoundIsAStatusInV2AndAnErrorInTheOldForm) {
  // Suffixed names are not base names: not found, whatever the version.
  expectNotFound("cuMemAlloc_v2", 13000, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
  expectNotFound("cuMemAlloc_v2", 3020, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
  expectNotFound("cuNotAThing", 13000, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
  expectNotFound("", 13000, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
  // The function exists, but not yet at the requested version.
  expectNotFound("cuMemCreate", 10000, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
}

// probe: gpa.v2.cuMemAlloc.99000.flags0, gpa.v2.cuMemAlloc.0.flags0, gpa.v2.cuMemAlloc.-1.flags0
// (and gpa.old.*)
TEST_F(ProcAddress, VersionAboveTheDriverZeroAndNegative) {
  expectRefused("cuMemAlloc", 99000, 0);
  expectNotFound("cuMemAlloc", 0, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
  expectFound("cuMemAlloc", -1, 0, "cuMemAlloc_v2");  // a negative version asks for the newest
}

// probe: gpa.v2.cuMemAlloc.13000.flags8, gpa.v2.cuMemAlloc.13000.flags4 (and gpa.old.*)
TEST_F(ProcAddress, UnknownFlagsAreRefused) {
  expectRefused("cuMemAlloc", 13000, 8);
  expectRefused("cuMemAlloc", 13000, 4);
}

// probe: null.gpa_status, null.gpa_status.notathing
TEST_F(ProcAddress, StatusPointerMayBeNull) {
  void* pfn = nullptr;
  EXPECT_CU(CUDA_SUCCESS, cuGetProcAddress_v2("cuInit", &pfn, 13000, 0, nullptr));
  EXPECT_EQ(libcudaSymbol("cuInit"), pfn);
  pfn = kUntouched;
  EXPECT_CU(CUDA_SUCCESS, cuGetProcAddress_v2("cuNotAThing", &pfn, 13000, 0, nullptr));
  EXPECT_EQ(nullptr, pfn);
}

}  // namespace
