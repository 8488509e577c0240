// Threads of one process, each on a device of its own, each checking what it wrote: on a shared
// node, eight such threads read back a wrong value (0, or the previous round's) 7 to 9 times in
// 2,400 rounds (issue 19, item 2), while one or two threads, eight single-threaded processes and
// the embedded node were right. Runs against the embedded node (races.ThreadsOnDevices.*) and a
// shared node of its own (races.shared.ThreadsOnDevices.*, on_shared_node.cmake).
#include <cuda.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tests/common/cu_expect.h"
#include "tests/common/vmm_props.h"

namespace {

constexpr int kRounds = 300;

// One thread's rounds on device `dev`: make memory, map it, grant access, memset, read back,
// check, take it down. The first failure is kept in `problem`.
void rounds(int dev, std::string* problem) {
  auto fail = [&](const std::string& what) {
    if (problem->empty()) *problem = "device " + std::to_string(dev) + ": " + what;
  };
  CUcontext ctx = nullptr;
  if (cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS || cuCtxSetCurrent(ctx) != CUDA_SUCCESS) {
    fail("no context");
    return;
  }
  constexpr size_t kSize = 2u << 20;
  const CUmemAllocationProp prop = cutest::devicePinned(dev);
  const CUmemAccessDesc rw = cutest::readWrite(dev);
  for (int round = 0; round < kRounds && problem->empty(); ++round) {
    CUmemGenericAllocationHandle h = 0;
    CUdeviceptr va = 0;
    const uint32_t value = 0x1000u * static_cast<uint32_t>(dev + 1) + static_cast<uint32_t>(round) + 1;
    uint32_t got[4] = {};
    CUresult r = cuMemCreate(&h, kSize, &prop, 0);
    if (r == CUDA_SUCCESS) r = cuMemAddressReserve(&va, kSize, 0, 0, 0);
    if (r == CUDA_SUCCESS) r = cuMemMap(va, kSize, 0, h, 0);
    if (r == CUDA_SUCCESS) r = cuMemSetAccess(va, kSize, &rw, 1);
    if (r == CUDA_SUCCESS) r = cuMemsetD32(va, value, 4);
    if (r == CUDA_SUCCESS) r = cuMemcpyDtoH(got, va, sizeof got);
    if (r != CUDA_SUCCESS) {
      fail("round " + std::to_string(round) + ": " + cutest::resultName(r));
    } else {
      for (uint32_t w : got) {
        if (w != value) {
          fail("round " + std::to_string(round) + " read " + std::to_string(w) + ", not " + std::to_string(value));
          break;
        }
      }
    }
    if (va != 0) {
      cuMemUnmap(va, kSize);
      cuMemAddressFree(va, kSize);
    }
    if (h != 0) cuMemRelease(h);
  }
  cuDevicePrimaryCtxRelease(dev);
}

TEST(ThreadsOnDevices, EachThreadReadsWhatItWroteOnItsOwnDevice) {
  ASSERT_OK(cuInit(0));
  int devices = 0;
  ASSERT_OK(cuDeviceGetCount(&devices));
  ASSERT_GE(devices, 2);
  const int threads = std::min(devices, 8);
  std::vector<std::string> problems(static_cast<size_t>(threads));
  std::vector<std::thread> pool;
  for (int d = 0; d < threads; ++d) pool.emplace_back(rounds, d, &problems[static_cast<size_t>(d)]);
  for (auto& t : pool) t.join();
  for (const std::string& p : problems) EXPECT_TRUE(p.empty()) << p;
}

}  // namespace
