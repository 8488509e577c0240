// Stream-ordered memory pools: the default pool, created pools, async allocation and free,
// access and attributes. These run on a real GPU too (no multicast involved); the expectations
// follow the reference and were checked there (docs/real-driver.md).
#include <cstring>

#include "tests/conformance/conformance.h"

namespace {

class Pool : public conformance::DriverTest {
 protected:
  static CUmemPoolProps deviceProps(int dev, unsigned handleTypes = 0) {
    CUmemPoolProps p;
    std::memset(&p, 0, sizeof p);
    p.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    p.location.id = dev;
    p.handleTypes = static_cast<CUmemAllocationHandleType>(handleTypes);
    return p;
  }
};

TEST_F(Pool, EveryDeviceHasADefaultPoolThatIsItsCurrentPool) {
  CUmemoryPool def = nullptr, cur = nullptr;
  ASSERT_OK(cuDeviceGetDefaultMemPool(&def, 0));
  ASSERT_OK(cuDeviceGetMemPool(&cur, 0));
  EXPECT_NE(nullptr, def);
  EXPECT_EQ(def, cur);
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuDeviceGetDefaultMemPool(nullptr, 0));
  EXPECT_CU(CUDA_ERROR_INVALID_DEVICE, cuDeviceGetDefaultMemPool(&def, deviceCount));
  // The default pool cannot be destroyed.
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemPoolDestroy(def));
}

TEST_F(Pool, AsyncAllocationHoldsDataAndIsFreedAsync) {
  CUdeviceptr d = 0;
  ASSERT_OK(cuMemAllocAsync(&d, 3 << 20, nullptr));
  EXPECT_NE(0u, d);
  ASSERT_OK(cuMemsetD32Async(d, 0x5a5a1234u, (3 << 20) / 4, nullptr));
  ASSERT_OK(cuStreamSynchronize(nullptr));
  unsigned word = 0;
  ASSERT_OK(cuMemcpyDtoH(&word, d + (2 << 20) + 4, 4));
  EXPECT_EQ(0x5a5a1234u, word);
  CUmemoryPool owner = nullptr, def = nullptr;
  ASSERT_OK(cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, d));
  ASSERT_OK(cuDeviceGetDefaultMemPool(&def, 0));
  EXPECT_EQ(def, owner);
  ASSERT_OK(cuMemFreeAsync(d, nullptr));
  ASSERT_OK(cuStreamSynchronize(nullptr));
}

TEST_F(Pool, AsyncAllocationArgumentsAreChecked) {
  CUdeviceptr d = 0;
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemAllocAsync(nullptr, 1 << 20, nullptr));
  // A 0-byte request succeeds on the real driver (H100, driver 580.159.04).
  EXPECT_CU(CUDA_SUCCESS, cuMemAllocAsync(&d, 0, nullptr));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemAllocFromPoolAsync(&d, 1 << 20, nullptr, nullptr));
}

TEST_F(Pool, CreatedPoolAllocatesAndReportsUse) {
  CUmemPoolProps props = deviceProps(0);
  CUmemoryPool pool = nullptr;
  ASSERT_OK(cuMemPoolCreate(&pool, &props));
  CUdeviceptr d = 0;
  ASSERT_OK(cuMemAllocFromPoolAsync(&d, 4 << 20, pool, nullptr));
  ASSERT_OK(cuStreamSynchronize(nullptr));
  cuuint64_t used = 0;
  ASSERT_OK(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used));
  EXPECT_GE(used, cuuint64_t{4 << 20});
  CUmemoryPool owner = nullptr;
  ASSERT_OK(cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, d));
  EXPECT_EQ(pool, owner);
  ASSERT_OK(cuMemFreeAsync(d, nullptr));
  ASSERT_OK(cuStreamSynchronize(nullptr));
  ASSERT_OK(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used));
  EXPECT_EQ(cuuint64_t{0}, used);
  EXPECT_CU(CUDA_SUCCESS, cuMemPoolDestroy(pool));
}

TEST_F(Pool, CreateChecksItsProperties) {
  CUmemoryPool pool = nullptr;
  CUmemPoolProps props = deviceProps(0);
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemPoolCreate(nullptr, &props));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemPoolCreate(&pool, nullptr));
  CUmemPoolProps bad = props;
  bad.allocType = CU_MEM_ALLOCATION_TYPE_INVALID;
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemPoolCreate(&pool, &bad));
  bad = props;
  bad.location.type = CU_MEM_LOCATION_TYPE_INVALID;
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemPoolCreate(&pool, &bad));
}

TEST_F(Pool, ExportablePoolMemoryAllowsItsHandleTypes) {
  CUmemPoolProps props = deviceProps(0, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  CUmemoryPool pool = nullptr;
  ASSERT_OK(cuMemPoolCreate(&pool, &props));
  CUdeviceptr d = 0;
  ASSERT_OK(cuMemAllocFromPoolAsync(&d, 2 << 20, pool, nullptr));
  ASSERT_OK(cuStreamSynchronize(nullptr));
  unsigned long long types = 0;
  ASSERT_OK(cuPointerGetAttribute(&types, CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES, d));
  EXPECT_EQ(static_cast<unsigned long long>(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR), types);
  ASSERT_OK(cuMemFreeAsync(d, nullptr));
  ASSERT_OK(cuStreamSynchronize(nullptr));
  EXPECT_CU(CUDA_SUCCESS, cuMemPoolDestroy(pool));
}

TEST_F(Pool, OwnerKeepsReadWriteAccess) {
  CUmemoryPool def = nullptr;
  ASSERT_OK(cuDeviceGetDefaultMemPool(&def, 0));
  CUmemLocation loc;
  std::memset(&loc, 0, sizeof loc);
  loc.type = CU_MEM_LOCATION_TYPE_DEVICE;
  loc.id = 0;
  CUmemAccess_flags flags = CU_MEM_ACCESS_FLAGS_PROT_NONE;
  ASSERT_OK(cuMemPoolGetAccess(&flags, def, &loc));
  EXPECT_EQ(CU_MEM_ACCESS_FLAGS_PROT_READWRITE, flags);
}

TEST_F(Pool, ReleaseThresholdRoundTrips) {
  CUmemoryPool def = nullptr;
  ASSERT_OK(cuDeviceGetDefaultMemPool(&def, 0));
  cuuint64_t threshold = 64 << 20, back = 0;
  ASSERT_OK(cuMemPoolSetAttribute(def, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold));
  ASSERT_OK(cuMemPoolGetAttribute(def, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &back));
  EXPECT_EQ(threshold, back);
  cuuint64_t zero = 0;
  ASSERT_OK(cuMemPoolSetAttribute(def, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &zero));
  // The high-water marks may only be reset to zero.
  cuuint64_t one = 1;
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemPoolSetAttribute(def, CU_MEMPOOL_ATTR_USED_MEM_HIGH, &one));
  EXPECT_CU(CUDA_SUCCESS, cuMemPoolSetAttribute(def, CU_MEMPOOL_ATTR_USED_MEM_HIGH, &zero));
}

}  // namespace
