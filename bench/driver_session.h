// What every driver benchmark needs before its timed loop: an initialised driver with device 0's
// primary context current, and a way to turn a failed call into a skipped benchmark.
#pragma once

#include <benchmark/benchmark.h>
#include <cuda.h>

#include <cstddef>
#include <string>

namespace mcsim::bench {

// cuInit and device 0's primary context, once per process. False (with the reason in `why`) when
// the driver cannot be brought up.
bool openDriverSession(std::string* why);

// openDriverSession for one benchmark: false, with the benchmark marked failed, when it fails.
bool requireDriver(benchmark::State& state);

// Marks the benchmark as failed, naming the call and its error; returns false so callers can
// write `if (!ok(state, r, "cuX")) return;`.
bool ok(benchmark::State& state, CUresult result, const char* call);

// Device memory on device 0 made with the VMM calls, readable and writable by device 0.
class VmmMapping {
 public:
  VmmMapping() = default;
  VmmMapping(const VmmMapping&) = delete;
  VmmMapping& operator=(const VmmMapping&) = delete;
  ~VmmMapping();

  CUresult create(size_t bytes);
  CUdeviceptr address() const { return va_; }

 private:
  CUmemGenericAllocationHandle handle_ = 0;
  CUdeviceptr va_ = 0;
  size_t size_ = 0;
  bool mapped_ = false;
};

// The properties of a pinned allocation on device 0.
CUmemAllocationProp deviceZeroProps();
// The access descriptor that gives device 0 read and write rights.
CUmemAccessDesc deviceZeroReadWrite();

}  // namespace mcsim::bench
