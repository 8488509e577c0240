// Shared helpers of the multicast suite (tests/multicast). The suite runs only against mcsim:
// it calls cuMulticast* functions, which must never run against a real driver from this
// project's tests (docs/spec-coverage.md traces the reference's rules to these tests).
//
// Every TEST runs in a process of its own (mcsim_add_gtest), so a test may set MCSIM_* variables
// with setenv before its first cuInit: each test starts with INIT(preset, {variables}), which
// sets them and then calls cuInit (see McTest::init).
#pragma once

#include <cuda.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "mcsim/api.h"
#include "tests/common/cu_expect.h"
#include "tests/common/vmm_props.h"
#include "mcsim/cuda_multicast_v2.h"


// A call that must fail with `expected` and change nothing in the node or the driver's tables.
#define EXPECT_FAILS_CLEANLY(expected, call)                                   \
  do {                                                                         \
    const uint64_t before_ = mcsim::api::stateDigest();                       \
    EXPECT_CU(expected, call);                                                 \
    EXPECT_EQ(before_, mcsim::api::stateDigest()) << #call " changed state"; \
  } while (0)

// Starts a test: see McTest::init.
#define INIT(...)                                                              \
  do {                                                                         \
    if (!init(__VA_ARGS__)) {                                                  \
      if (skipped_) GTEST_SKIP() << "needs a process of its own (run it through ctest)"; \
      return;                                                                  \
    }                                                                          \
  } while (0)

namespace mctest {

constexpr size_t kMiB = size_t{1} << 20;
constexpr size_t kMin = 2 * kMiB;  // hgx-h100 / gb200-nvl72 CU_MULTICAST_GRANULARITY_MINIMUM

using cutest::devicePinned;  // tests/common/vmm_props.h
using cutest::mcProp;

inline CUmemAllocationProp hostNumaProp(int numaNode, unsigned handleTypes = 0) {
  CUmemAllocationProp p = devicePinned(0, handleTypes);
  p.location.type = CU_MEM_LOCATION_TYPE_HOST_NUMA;
  p.location.id = numaNode;
  return p;
}

using cutest::readWrite;

inline void setEnv(const char* name, const char* value) { ::setenv(name, value, 1); }

// A barrier for the threads of one test (C++17 has no std::barrier).
class Barrier {
 public:
  explicit Barrier(int n) : n_(n) {}
  void arriveAndWait() {
    std::unique_lock<std::mutex> lock(mu_);
    const int gen = generation_;
    if (++arrived_ == n_) {
      arrived_ = 0;
      ++generation_;
      cv_.notify_all();
      return;
    }
    cv_.wait(lock, [&] { return gen != generation_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int n_;
  int arrived_ = 0;
  int generation_ = 0;
};

// Counts that must return to their baseline once a test has released everything.
struct Counts {
  uint64_t allocations, handles, reservations, mappings, exportedFds;
  static Counts now() {
    const mcsim::api::NodeStats s = mcsim::api::nodeStats();
    return {s.allocations, s.handles, s.reservations, s.mappings, s.exportedFds};
  }
};

inline void expectCountsEqual(const Counts& want, const Counts& got) {
  EXPECT_EQ(want.allocations, got.allocations) << "allocations leaked";
  EXPECT_EQ(want.handles, got.handles) << "handles leaked";
  EXPECT_EQ(want.reservations, got.reservations) << "reservations leaked";
  EXPECT_EQ(want.mappings, got.mappings) << "mappings leaked";
  EXPECT_EQ(want.exportedFds, got.exportedFds) << "exported descriptors leaked";
}

// The fixture. Each test starts with INIT(topology, {{"MCSIM_X", "v"}, ...}): the variables are
// set, MCSIM_TOPOLOGY too when a topology is named (else the default, hgx-h100), then cuInit,
// device 0's primary context is made current and the baseline counts are taken.
using Env = std::vector<std::pair<const char*, const char*>>;

class McTest : public ::testing::Test {
 protected:
  // False (with the test failed or skipped) when the test cannot go on.
  bool init(const char* topology = nullptr, const Env& env = {}) {
    if (mcsim::api::initialized()) {
      // Every test of the binary in one process (run by hand): the preset is fixed already.
      const std::string want = topology != nullptr ? topology : "hgx-h100";
      if (mcsim::api::presetName() != want || !env.empty()) {
        skipped_ = true;
        return false;
      }
    }
    if (topology != nullptr) setEnv("MCSIM_TOPOLOGY", topology);
    for (const auto& [k, v] : env) setEnv(k, v);
    const CUresult r = cuInit(0);
    EXPECT_CU(CUDA_SUCCESS, r);
    if (r != CUDA_SUCCESS) return false;
    EXPECT_OK(cuDeviceGetCount(&deviceCount));
    EXPECT_OK(cuDevicePrimaryCtxRetain(&ctx, 0));
    EXPECT_OK(cuCtxSetCurrent(ctx));
    baseline = Counts::now();
    return !::testing::Test::HasFailure();
  }
  void TearDown() override {
    if (ctx != nullptr) {
      cuCtxSetCurrent(nullptr);
      cuDevicePrimaryCtxRelease(0);
    }
  }
  bool skipped_ = false;

  // A multicast object of `numDevices` with the given devices added.
  CUmemGenericAllocationHandle makeTeam(const std::vector<int>& devices, size_t size,
                                        unsigned long long handleTypes = 0, unsigned numDevices = 0) {
    CUmemGenericAllocationHandle mc = 0;
    CUmulticastObjectProp p =
        mcProp(numDevices != 0 ? numDevices : static_cast<unsigned>(devices.size()), size, handleTypes);
    EXPECT_OK(cuMulticastCreate(&mc, &p));
    for (int d : devices) EXPECT_OK(cuMulticastAddDevice(mc, d));
    return mc;
  }

  CUmemGenericAllocationHandle makeMem(int dev, size_t size, unsigned handleTypes = 0) {
    CUmemGenericAllocationHandle h = 0;
    CUmemAllocationProp p = devicePinned(dev, handleTypes);
    EXPECT_OK(cuMemCreate(&h, size, &p, 0));
    return h;
  }

  // Reserves `size`, maps `handle` there (at offset 0), grants read-write to `devices`.
  CUdeviceptr mapRange(CUmemGenericAllocationHandle handle, size_t size, const std::vector<int>& devices) {
    CUdeviceptr va = 0;
    EXPECT_OK(cuMemAddressReserve(&va, size, 0, 0, 0));
    EXPECT_OK(cuMemMap(va, size, 0, handle, 0));
    for (int d : devices) {
      CUmemAccessDesc a = readWrite(d);
      EXPECT_OK(cuMemSetAccess(va, size, &a, 1));
    }
    return va;
  }
  void unmapRange(CUdeviceptr va, size_t size) {
    EXPECT_OK(cuMemUnmap(va, size));
    EXPECT_OK(cuMemAddressFree(va, size));
  }

  int deviceCount = 0;
  CUcontext ctx = nullptr;
  Counts baseline{};
};

// Captures what the driver writes to stderr while a call runs.
class StderrCapture {
 public:
  StderrCapture() { ::testing::internal::CaptureStderr(); }
  std::string take() { return ::testing::internal::GetCapturedStderr(); }
};

}  // namespace mctest
