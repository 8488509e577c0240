#include "harness.h"

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <sstream>
#include <thread>
#include <utility>

#include "descriptors.h"

namespace mcsim::workload {

namespace {

// Points whose rules change the fabric by themselves when they fire (whatever call they fire at).
bool isFabricLevelPoint(const std::string& point) {
  return point == "fabric-manager" || point == "imex" || point == "link" || point == "switch";
}

std::string pointOf(const std::string& ruleText) {
  std::istringstream in(ruleText);
  std::string first;
  in >> first;
  return first;
}

class Fnv {
 public:
  void bytes(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    for (size_t i = 0; i < n; ++i) {
      h_ ^= b[i];
      h_ *= 0x100000001b3ull;
    }
  }
  void u32(uint32_t v) {
    uint8_t b[4] = {uint8_t(v), uint8_t(v >> 8), uint8_t(v >> 16), uint8_t(v >> 24)};
    bytes(b, 4);
  }
  uint64_t value() const { return h_; }

 private:
  uint64_t h_ = 0xcbf29ce484222325ull;
};

}  // namespace

std::string resultName(CUresult r) {
  const char* s = nullptr;
  if (cuGetErrorName(r, &s) != CUDA_SUCCESS || s == nullptr) return "CUresult(" + std::to_string(int(r)) + ")";
  return s;
}

CUmemAllocationProp deviceProp(int dev, unsigned long long handleTypes) {
  CUmemAllocationProp p;
  std::memset(&p, 0, sizeof p);
  p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  p.location.id = dev;
  p.requestedHandleTypes = static_cast<CUmemAllocationHandleType>(handleTypes);
  return p;
}

CUmemAccessDesc readWrite(int dev) {
  CUmemAccessDesc d;
  std::memset(&d, 0, sizeof d);
  d.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  d.location.id = dev;
  d.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  return d;
}

CUmulticastObjectProp multicastProp(unsigned numDevices, size_t size, unsigned long long handleTypes) {
  CUmulticastObjectProp p;
  std::memset(&p, 0, sizeof p);
  p.numDevices = numDevices;
  p.size = size;
  p.handleTypes = handleTypes;
  return p;
}

bool wantsPoints(int argc, char** argv) { return argc > 1 && std::strcmp(argv[1], "--points") == 0; }

int printPoints(const std::vector<const char*>& points) {
  for (const char* p : points) std::printf("%s\n", p);
  return 0;
}

Harness::Harness(int threads)
    : state_(static_cast<size_t>(threads), ThreadState::kRunnable), trace_(static_cast<size_t>(threads)) {}

bool Harness::plantLeak() {
  const char* env = std::getenv("MCSIM_WORKLOAD_LEAK");
  return env != nullptr && std::strcmp(env, "1") == 0;
}

bool Harness::begin() {
  const CUresult r = cuInit(0);
  if (r != CUDA_SUCCESS) {
    violation("cuInit returned " + resultName(r) + " (a fault plan that does not load?)");
    return false;
  }
  startStats_ = mcsim::api::nodeStats();
  startFds_ = openDescriptors();
  return true;
}

void Harness::waitTurn(std::unique_lock<std::mutex>& lock, int t) {
  cv_.wait(lock, [&] { return current_ == t && state_[size_t(t)] == ThreadState::kRunnable; });
}

// The next thread to run after `t`: the next runnable one in cyclic order; when none is runnable,
// the barrier opens (every waiting thread becomes runnable) and the lowest-numbered one goes first.
void Harness::passTurn(int t) {
  const int n = static_cast<int>(state_.size());
  current_ = -1;
  for (int k = 1; k <= n; ++k) {
    const int j = (t + k) % n;
    if (state_[size_t(j)] == ThreadState::kRunnable) {
      current_ = j;
      break;
    }
  }
  if (current_ < 0) {
    for (int j = 0; j < n; ++j) {
      if (state_[size_t(j)] != ThreadState::kAtBarrier) continue;
      state_[size_t(j)] = ThreadState::kRunnable;
      if (current_ < 0) current_ = j;
    }
  }
  cv_.notify_all();
}

uint64_t Harness::fabricFired() {
  uint64_t n = 0;
  for (const auto& r : mcsim::api::faultReport()) {
    if (isFabricLevelPoint(pointOf(r.rule))) n += r.fired;
  }
  return n;
}

int Harness::openDescriptors() { return openDescriptorCount(); }

void Harness::start(int t) {
  std::unique_lock<std::mutex> lock(mu_);
  waitTurn(lock, t);
}

CUresult Harness::call(int t, const char* name, const std::function<CUresult()>& fn) {
  const uint64_t before = mcsim::api::stateDigest();
  const uint64_t firedBefore = fabricFired();
  const CUresult r = fn();
  if (r != CUDA_SUCCESS) {
    const uint64_t after = mcsim::api::stateDigest();
    if (after != before && fabricFired() == firedBefore) {
      violation(std::string(name) + " (thread " + std::to_string(t) + ", call " +
                std::to_string(trace_[size_t(t)].size() + 1) + ") returned " + resultName(r) +
                " but changed the node's state");
    }
  }
  std::unique_lock<std::mutex> lock(mu_);
  trace_[size_t(t)].emplace_back(name, r);
  ++calls_;
  failed_ += r != CUDA_SUCCESS;
  passTurn(t);
  waitTurn(lock, t);
  return r;
}

CUresult Harness::teardown(int t, const char* name, const std::function<CUresult()>& fn) {
  CUresult r = CUDA_SUCCESS;
  for (int i = 0; i < kTeardownTries; ++i) {
    r = call(t, name, fn);
    if (r == CUDA_SUCCESS) break;
  }
  return r;
}

void Harness::barrier(int t) {
  std::unique_lock<std::mutex> lock(mu_);
  state_[size_t(t)] = ThreadState::kAtBarrier;
  passTurn(t);
  waitTurn(lock, t);
}

void Harness::finish(int t) {
  std::unique_lock<std::mutex> lock(mu_);
  state_[size_t(t)] = ThreadState::kDone;
  passTurn(t);
}

void Harness::runThreads(const std::function<void(int)>& body) {
  std::vector<std::thread> threads;
  for (size_t t = 0; t < state_.size(); ++t) threads.emplace_back(body, static_cast<int>(t));
  for (auto& th : threads) th.join();
}

Rank::Rank(Harness& h, int rank, bool* abortFlag, std::function<void()> cleanup)
    : h_(h), r_(rank), abort_(abortFlag), cleanup_(std::move(cleanup)) {
  h_.start(r_);
}

bool Rank::enterContext() {
  CUcontext ctx = nullptr;
  if (!ok(h_.call(r_, "cuDevicePrimaryCtxRetain", [&] { return cuDevicePrimaryCtxRetain(&ctx, r_); }))) return false;
  ctxRetained_ = true;
  if (!ok(h_.call(r_, "cuCtxSetCurrent", [&] { return cuCtxSetCurrent(ctx); }))) return false;
  ctxCurrent_ = true;
  return true;
}

CUresult Rank::team(const char* name, const std::function<CUresult()>& fn) {
  return h_.call(r_, name, [&] {
    const CUresult res = fn();
    if (res != CUDA_SUCCESS) *abort_ = true;
    return res;
  });
}

CUresult Rank::importPosix(int fd, CUmemGenericAllocationHandle* mc) {
  void* arg = reinterpret_cast<void*>(static_cast<intptr_t>(fd));  // the descriptor travels in the pointer
  return h_.call(r_, "cuMemImportFromShareableHandle",
                 [&] { return cuMemImportFromShareableHandle(mc, arg, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR); });
}

void Rank::leave(bool raiseAbort) {
  if (raiseAbort) *abort_ = true;
  cleanup_();
  if (ctxCurrent_) h_.teardown(r_, "cuCtxSetCurrent", [&] { return cuCtxSetCurrent(nullptr); });
  if (ctxRetained_) h_.teardown(r_, "cuDevicePrimaryCtxRelease", [&] { return cuDevicePrimaryCtxRelease(r_); });
  ctxCurrent_ = ctxRetained_ = false;
  h_.finish(r_);
}

void Harness::violation(const std::string& what) {
  std::lock_guard<std::mutex> lock(violationsMu_);
  violations_.push_back(what);
}

bool Harness::verify(int t, CUdeviceptr src, const std::vector<uint32_t>& expected, const std::string& what) {
  std::vector<uint32_t> got(expected.size(), 0);
  const CUresult r = teardown(t, "cuMemcpyDtoH", [&] { return cuMemcpyDtoH(got.data(), src, got.size() * 4); });
  if (r != CUDA_SUCCESS) return false;
  for (size_t i = 0; i < expected.size(); ++i) {
    if (got[i] != expected[i]) {
      char buf[160];
      std::snprintf(buf, sizeof buf, " holds 0x%08x at word %zu, expected 0x%08x (memory no failing call touched lost its data)",
                    got[i], i, expected[i]);
      violation(what + buf);
      return true;
    }
  }
  return true;
}

int Harness::end() {
  if (mcsim::api::initialized()) {
    const mcsim::api::NodeStats s = mcsim::api::nodeStats();
    const mcsim::api::NodeStats& b = startStats_;
    auto check = [&](const char* what, uint64_t was, uint64_t now) {
      if (was != now) {
        violation(std::string("leak: ") + what + " " + std::to_string(was) + " at the start, " +
                  std::to_string(now) + " at the end");
      }
    };
    check("allocations", b.allocations, s.allocations);
    check("handles", b.handles, s.handles);
    check("reservations", b.reservations, s.reservations);
    check("mappings", b.mappings, s.mappings);
    check("exported descriptors", b.exportedFds, s.exportedFds);
    check("host allocations", b.hostAllocations, s.hostAllocations);
    check("multicast objects", b.multicastObjects, s.multicastObjects);
    check("free multicast slots", uint64_t(b.freeMulticastSlots), uint64_t(s.freeMulticastSlots));
    check("resident bytes", b.residentBytes, s.residentBytes);
    check("open descriptors", uint64_t(startFds_), uint64_t(openDescriptors()));
  }

  Fnv digest;
  for (size_t t = 0; t < trace_.size(); ++t) {
    digest.u32(uint32_t(t));
    digest.u32(uint32_t(trace_[t].size()));
    for (const auto& [name, r] : trace_[t]) {
      digest.bytes(name.data(), name.size() + 1);
      digest.u32(uint32_t(r));
    }
  }
  std::printf("mcsim-digest: %016" PRIx64 "\n", digest.value());
  if (mcsim::api::initialized()) {
    std::map<std::string, uint64_t> fired;
    for (const auto& r : mcsim::api::faultReport()) fired[pointOf(r.rule)] += r.fired;
    for (const auto& [point, n] : fired) std::printf("mcsim-fired: %s %" PRIu64 "\n", point.c_str(), n);
  }
  std::printf("mcsim-calls: %" PRIu64 " %" PRIu64 "\n", calls_, failed_);
  std::lock_guard<std::mutex> lock(violationsMu_);
  if (violations_.empty()) std::printf("mcsim-invariants: ok\n");
  for (const std::string& v : violations_) std::printf("mcsim-invariants: violation %s\n", v.c_str());
  std::fflush(stdout);
  return violations_.empty() ? 0 : 1;
}

}  // namespace mcsim::workload
