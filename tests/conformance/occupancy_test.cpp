// Occupancy of a kernel of mcsim's kernel library (cuOccupancy*), from the device's SM limits and
// the kernel's attributes, by the calculator's rules (docs/runtime.md, "Occupancy"). The expected
// figures are those of a compute capability 9.0 SM (2048 threads, 32 blocks, 64 Ki registers,
// 228 KiB of shared memory, 1 KiB reserved per block) for a kernel of at most 32 registers and no
// static shared memory, which the test checks first; they hold on a real H100.
#include <cuda.h>

#include "mcsim/kernels.h"
#include "tests/conformance/conformance.h"

namespace {

class Occupancy : public conformance::DriverTest {
 protected:
  void SetUp() override {
    DriverTest::SetUp();
    ASSERT_OK(cuModuleLoadData(&mod, mcsim_kernel_image));
    ASSERT_OK(cuModuleGetFunction(&fn, mod, MCSIM_KERNEL_COPY));
    int regs = 0, shared = 0;
    ASSERT_OK(cuFuncGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, fn));
    ASSERT_OK(cuFuncGetAttribute(&shared, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, fn));
    int major = 0;
    ASSERT_OK(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 0));
    if (regs > 32 || shared != 0 || major != 9) GTEST_SKIP() << "the figures are for a light kernel on sm_90";
    ASSERT_OK(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0));
  }
  void TearDown() override {
    if (mod != nullptr) cuModuleUnload(mod);
    DriverTest::TearDown();
  }
  int blocks(int blockSize, size_t dynamicShared) {
    int n = -1;
    EXPECT_OK(cuOccupancyMaxActiveBlocksPerMultiprocessor(&n, fn, blockSize, dynamicShared));
    return n;
  }
  CUmodule mod = nullptr;
  CUfunction fn = nullptr;
  int sms = 0;
};

TEST_F(Occupancy, WarpsBlocksAndSharedMemoryBound) {
  EXPECT_EQ(2, blocks(1024, 0));  // 64 warps an SM
  EXPECT_EQ(8, blocks(256, 0));
  EXPECT_EQ(32, blocks(32, 0));   // 32 blocks an SM
  EXPECT_EQ(32, blocks(1, 0));
  EXPECT_EQ(0, blocks(1025, 0));  // more threads than a block may have
  // Past 48 KiB of dynamic shared memory only once the kernel opts in.
  ASSERT_OK(cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 200 * 1024));
  EXPECT_EQ(2, blocks(256, 100 * 1024));  // 101 KiB a block in 228 KiB
  EXPECT_EQ(1, blocks(256, 120 * 1024));
  EXPECT_EQ(7, blocks(256, 31 * 1024));   // 32 KiB a block
  EXPECT_EQ(0, blocks(256, 210 * 1024));  // over the kernel's own limit
  int n = -1;
  EXPECT_OK(cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(&n, fn, 256, 0, CU_OCCUPANCY_DISABLE_CACHING_OVERRIDE));
  EXPECT_EQ(8, n);
}

TEST_F(Occupancy, PotentialBlockSizeFillsTheSm) {
  int grid = 0, block = 0;
  ASSERT_OK(cuOccupancyMaxPotentialBlockSize(&grid, &block, fn, nullptr, 0, 0));
  EXPECT_EQ(1024, block);
  EXPECT_EQ(2 * sms, grid);
  // Under a limit of 100 threads, 64 fills the SM's 2048 threads first (going down from 100).
  ASSERT_OK(cuOccupancyMaxPotentialBlockSizeWithFlags(&grid, &block, fn, nullptr, 0, 100, CU_OCCUPANCY_DEFAULT));
  EXPECT_EQ(64, block);
  EXPECT_EQ(32 * sms, grid);
}

TEST_F(Occupancy, AvailableDynamicSharedMemory) {
  size_t bytes = 0;
  ASSERT_OK(cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 48 * 1024));
  ASSERT_OK(cuOccupancyAvailableDynamicSMemPerBlock(&bytes, fn, 1, 256));
  EXPECT_EQ(48u * 1024, bytes);  // the kernel's limit
  // Opted in, one block alone may have all a block may (227 KiB); four share the SM's 228 KiB.
  ASSERT_OK(cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 227 * 1024));
  ASSERT_OK(cuOccupancyAvailableDynamicSMemPerBlock(&bytes, fn, 1, 256));
  EXPECT_EQ(227u * 1024, bytes);
  ASSERT_OK(cuOccupancyAvailableDynamicSMemPerBlock(&bytes, fn, 4, 256));
  EXPECT_EQ(57u * 1024, bytes);
  // More blocks than the SM holds.
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuOccupancyAvailableDynamicSMemPerBlock(&bytes, fn, 9, 256));
}

TEST_F(Occupancy, BadArgumentsAreRefused) {
  int n = 0, grid = 0, block = 0;
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuOccupancyMaxActiveBlocksPerMultiprocessor(nullptr, fn, 256, 0));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(&n, fn, 256, 0, 0x10));
  EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuOccupancyMaxActiveBlocksPerMultiprocessor(&n, nullptr, 256, 0));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuOccupancyMaxPotentialBlockSize(nullptr, &block, fn, nullptr, 0, 0));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuOccupancyMaxPotentialBlockSize(&grid, nullptr, fn, nullptr, 0, 0));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuOccupancyAvailableDynamicSMemPerBlock(nullptr, fn, 1, 256));
}

}  // namespace
