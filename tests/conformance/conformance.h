// Shared helpers of the conformance suite. The suite is built twice: against mcsim's libcuda.so.1
// and (MCSIM_CONFORMANCE_REAL) against the real driver, so it uses nothing but cuda.h. Every
// expectation is what the real driver answered (docs/real-driver/); the suite calls no
// cuMulticast* function.
#pragma once

#include <cuda.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include "tests/common/cu_expect.h"
#include "tests/common/vmm_props.h"

#include <cstdint>
#include <cstring>
#include <string>

namespace conformance {

// An exported symbol of the libcuda.so.1 this program runs against (mcsim's or the real one), to
// compare with what cuGetProcAddress hands out; nullptr when the library does not export it.
inline void* libcudaSymbol(const char* name) {
  static void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  return lib != nullptr ? dlsym(lib, name) : nullptr;
}


// cuInit only: no context is current.
class InitTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK(cuInit(0));
    ASSERT_OK(cuDeviceGetCount(&deviceCount));
    ASSERT_GT(deviceCount, 0);
  }
  int deviceCount = 0;
};

// cuInit, device 0's primary context made current; released at the end.
class DriverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK(cuInit(0));
    ASSERT_OK(cuDeviceGetCount(&deviceCount));
    ASSERT_GT(deviceCount, 0);
    ASSERT_OK(cuDevicePrimaryCtxRetain(&ctx, 0));
    ASSERT_OK(cuCtxSetCurrent(ctx));
    prop = devicePinned(0);
    ASSERT_OK(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  }
  void TearDown() override {
    cuCtxSetCurrent(nullptr);
    cuDevicePrimaryCtxRelease(0);
  }

  // The shared builders (tests/common/vmm_props.h), reachable unqualified from the tests.
  static CUmemAllocationProp devicePinned(int dev, unsigned handleTypes = 0) {
    return cutest::devicePinned(dev, handleTypes);
  }
  static CUmemAccessDesc readWrite(int dev) { return cutest::readWrite(dev); }

  // A VMM range: one allocation of `granules` granules, reserved, mapped, read-write on dev 0.
  struct Range {
    CUmemGenericAllocationHandle handle = 0;
    CUdeviceptr va = 0;
    size_t size = 0;
  };
  void makeRange(Range* r, size_t granules, bool access = true) {
    r->size = granules * gran;
    ASSERT_OK(cuMemCreate(&r->handle, r->size, &prop, 0));
    ASSERT_OK(cuMemAddressReserve(&r->va, r->size, 0, 0, 0));
    ASSERT_OK(cuMemMap(r->va, r->size, 0, r->handle, 0));
    if (access) {
      CUmemAccessDesc d = readWrite(0);
      ASSERT_OK(cuMemSetAccess(r->va, r->size, &d, 1));
    }
  }
  void dropRange(const Range& r) {
    EXPECT_CU(CUDA_SUCCESS, cuMemUnmap(r.va, r.size));
    EXPECT_CU(CUDA_SUCCESS, cuMemRelease(r.handle));
    EXPECT_CU(CUDA_SUCCESS, cuMemAddressFree(r.va, r.size));
  }

  int deviceCount = 0;
  CUcontext ctx = nullptr;
  CUmemAllocationProp prop{};
  size_t gran = 0;
};

#define REQUIRE_DEVICES(n)                                                   \
  do {                                                                       \
    if (deviceCount < (n)) GTEST_SKIP() << "needs " << (n) << " devices";    \
  } while (0)

// Tests that assert an H100's own figures (name, memory, SM count): mcsim's default node is 8x
// H100 and every real run so far had H100s; on another GPU (the H200 machines) they say so and skip.
#define REQUIRE_H100()                                                                         \
  do {                                                                                         \
    char h100Name[256] = {};                                                                   \
    ASSERT_EQ(CUDA_SUCCESS, cuDeviceGetName(h100Name, sizeof h100Name, 0));                    \
    if (std::string(h100Name) != "NVIDIA H100 80GB HBM3")                                      \
      GTEST_SKIP() << "asserts an H100 80GB HBM3's figures; device 0 is " << h100Name;          \
  } while (0)

}  // namespace conformance
