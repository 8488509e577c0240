// Shared helpers of the fault-injection suite (tests/faults): the multicast suite's fixture and
// assertions (tests/multicast/multicast_test.h), plus what every fault test checks at its end:
// nothing leaked (node counts, multicast objects and slots, open descriptors back to where they
// were) and memory that no failing call touched still holding its data.
//
// Every TEST runs in a process of its own (mcsim_add_gtest), so each one chooses its preset, its
// plan (MCSIM_FAULTS_FILE / MCSIM_FAULTS) and its hang policy with INIT(preset, {variables}).
#pragma once

#include <cstdint>
#include <functional>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tests/multicast/multicast_test.h"
#include "tools/workloads/descriptors.h"

namespace faulttest {

using namespace mctest;

// The plans of examples/faults/.
inline std::string planPath(const std::string& name) {
  return std::string(MCSIM_FAULT_PLANS_DIR) + "/" + name + ".plan";
}

// The count the campaign workloads check too (pipes left out: see there).
inline int openFdCount() { return mcsim::workload::openDescriptorCount(); }

// What must come back to where it was once a test has released everything.
struct Snapshot {
  Counts counts{};
  uint64_t multicastObjects = 0;
  int freeMulticastSlots = 0;
  int fds = 0;
  static Snapshot now() {
    const mcsim::api::NodeStats s = mcsim::api::nodeStats();
    Snapshot out;
    out.counts = Counts::now();
    out.multicastObjects = s.multicastObjects;
    out.freeMulticastSlots = s.freeMulticastSlots;
    out.fds = openFdCount();
    return out;
  }
};

inline void expectNothingLeaked(const Snapshot& base) {
  const Snapshot now = Snapshot::now();
  expectCountsEqual(base.counts, now.counts);
  EXPECT_EQ(base.multicastObjects, now.multicastObjects) << "multicast objects leaked";
  EXPECT_EQ(base.freeMulticastSlots, now.freeMulticastSlots) << "multicast slots leaked";
  EXPECT_EQ(base.fds, now.fds) << "file descriptors leaked";
}

// A data pattern, different for every seed.
inline std::vector<uint32_t> pattern(size_t bytes, uint32_t seed) {
  std::vector<uint32_t> v(bytes / 4);
  for (size_t i = 0; i < v.size(); ++i) v[i] = seed * 0x9e3779b9u + static_cast<uint32_t>(i) * 2654435761u;
  return v;
}
inline CUresult writePattern(CUdeviceptr va, size_t bytes, uint32_t seed) {
  const std::vector<uint32_t> v = pattern(bytes, seed);
  return cuMemcpyHtoD(va, v.data(), bytes);
}
// Whether the memory at `va` still holds the pattern of `seed`.
inline bool holdsPattern(CUdeviceptr va, size_t bytes, uint32_t seed) {
  std::vector<uint32_t> got(bytes / 4);
  if (cuMemcpyDtoH(got.data(), va, bytes) != CUDA_SUCCESS) return false;
  return got == pattern(bytes, seed);
}
constexpr size_t kPatternBytes = 64 << 10;

// A rank's context: its device's primary context, current on its thread.
struct RankContext {
  explicit RankContext(int d) : dev(d) {
    EXPECT_OK(cuDevicePrimaryCtxRetain(&ctx, dev));
    EXPECT_OK(cuCtxSetCurrent(ctx));
  }
  ~RankContext() {
    cuCtxSetCurrent(nullptr);
    cuDevicePrimaryCtxRelease(dev);
  }
  RankContext(const RankContext&) = delete;
  RankContext& operator=(const RankContext&) = delete;
  int dev;
  CUcontext ctx = nullptr;
};

// Runs rank(r) for r in [0, n): rank 0 on the calling thread, the others on threads of their
// own, as one process driving one device per thread (NCCL's single-process mode). Rank 0 on the
// test's own thread means that every thread of the process is a rank, so a team that can never
// complete is a deadlock mcsim can prove at once, not a hang it has to wait out.
inline void runRanks(int n, const std::function<void(int)>& rank) {
  std::vector<std::thread> threads;
  for (int r = 1; r < n; ++r) threads.emplace_back(rank, r);
  rank(0);
  for (auto& t : threads) t.join();
}

// A rank's unicast buffer: memory on its device, reserved, mapped and made read-write for it.
struct UcBuffer {
  CUresult make(int device, size_t bytes, unsigned handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) {
    dev = device;
    size = bytes;
    CUmemAllocationProp p = devicePinned(dev, handleTypes);
    CUresult r = cuMemCreate(&mem, size, &p, 0);
    if (r != CUDA_SUCCESS) return r;
    if ((r = cuMemAddressReserve(&va, size, 0, 0, 0)) != CUDA_SUCCESS) return r;
    if ((r = cuMemMap(va, size, 0, mem, 0)) != CUDA_SUCCESS) return r;
    CUmemAccessDesc a = readWrite(dev);
    return cuMemSetAccess(va, size, &a, 1);
  }
  CUresult release() {
    CUresult r = CUDA_SUCCESS;
    auto keep = [&](CUresult x) {
      if (r == CUDA_SUCCESS) r = x;
    };
    if (va != 0) {
      keep(cuMemUnmap(va, size));
      keep(cuMemAddressFree(va, size));
    }
    if (mem != 0) keep(cuMemRelease(mem));
    va = 0;
    mem = 0;
    return r;
  }
  int dev = 0;
  size_t size = 0;
  CUmemGenericAllocationHandle mem = 0;
  CUdeviceptr va = 0;
};

// A multicast mapping: the object's range reserved, mapped and made read-write for a device.
struct McMapping {
  CUresult make(CUmemGenericAllocationHandle mc, int dev, size_t bytes) {
    size = bytes;
    CUresult r = cuMemAddressReserve(&va, size, 0, 0, 0);
    if (r != CUDA_SUCCESS) return r;
    if ((r = cuMemMap(va, size, 0, mc, 0)) != CUDA_SUCCESS) return r;
    mapped = true;
    CUmemAccessDesc a = readWrite(dev);
    return cuMemSetAccess(va, size, &a, 1);
  }
  CUresult release() {
    CUresult r = CUDA_SUCCESS;
    if (mapped) r = cuMemUnmap(va, size);
    if (va != 0) {
      const CUresult f = cuMemAddressFree(va, size);
      if (r == CUDA_SUCCESS) r = f;
    }
    va = 0;
    mapped = false;
    return r;
  }
  size_t size = 0;
  CUdeviceptr va = 0;
  bool mapped = false;
};

// The descriptor rank 0 exports, handed to the others (NCCL passes it over a Unix socket; the
// threads of one process share it). -1 says that rank 0 has none to give (its create failed).
class FdBroadcast {
 public:
  FdBroadcast() : fd_(promise_.get_future().share()) {}
  void publish(int fd) { promise_.set_value(fd); }
  int get() const { return fd_.get(); }
  // Closes the descriptor once every rank has imported (call after the ranks are done).
  void close() {
    const int fd = fd_.valid() ? fd_.get() : -1;
    if (fd >= 0) ::close(fd);
  }

 private:
  std::promise<int> promise_;
  std::shared_future<int> fd_;
};

inline void* fdArg(int fd) { return reinterpret_cast<void*>(static_cast<intptr_t>(fd)); }

// Rank 0 creates the object and exports it as a POSIX descriptor; the others import it.
inline CUresult joinObject(int r, const CUmulticastObjectProp& prop, FdBroadcast& fds,
                           CUmemGenericAllocationHandle* mc) {
  if (r == 0) {
    CUresult res = cuMulticastCreate(mc, &prop);
    int fd = -1;
    if (res == CUDA_SUCCESS) res = cuMemExportToShareableHandle(&fd, *mc, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
    fds.publish(fd);
    return res;
  }
  const int fd = fds.get();
  if (fd < 0) return CUDA_ERROR_NOT_SUPPORTED;  // rank 0 had nothing to share
  return cuMemImportFromShareableHandle(mc, fdArg(fd), CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
}

// Failing calls checked from several ranks at once: each rank makes its failing calls inside
// this lock, in a phase (between two barriers) where no rank makes any other driver call, so
// that the digest before and after shows what the call itself changed.
#define EXPECT_FAILS_CLEANLY_LOCKED(mutex, expected, call) \
  do {                                                     \
    std::lock_guard<std::mutex> serial_(mutex);            \
    EXPECT_FAILS_CLEANLY(expected, call);                  \
  } while (0)

// The rule of the plan in force whose text contains `fragment`.
inline mcsim::api::FaultRuleReport ruleReport(const std::string& fragment) {
  for (const auto& r : mcsim::api::faultReport()) {
    if (r.rule.find(fragment) != std::string::npos) return r;
  }
  ADD_FAILURE() << "no rule of the plan in force contains '" << fragment << "'";
  return {};
}

}  // namespace faulttest
