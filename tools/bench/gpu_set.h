// The GPUs of a benchmark run: each one's primary context, its stream, and the kernels of the
// kernel library (include/mcsim/kernels.h) looked up in that context. One host thread drives every
// GPU, making each one's context current before its calls (use()).
#pragma once

#include <cuda.h>

#include <string>
#include <vector>

#include "options.h"

namespace mcsim::bench {

// The kernels the algorithms launch.
enum Kernel { kKernelOneshot, kKernelTwoshot, kKernelNvls, kKernelCopy, kKernelReduce, kKernelCount };

struct Gpu {
  CUdevice dev = 0;
  CUcontext ctx = nullptr;  // the primary context, retained
  CUstream stream = nullptr;
  CUmodule module = nullptr;  // Loader::kModule
  CUfunction fn[kKernelCount] = {};
};

class GpuSet {
 public:
  // cuInit, then `count` GPUs (0: every device): contexts and streams. False after reporting why.
  bool open(int count);
  // Loads the kernel image (once per context, or once as a library) and looks up `kernels`.
  bool loadKernels(Loader loader, const std::vector<Kernel>& kernels);
  // Everything open() and loadKernels() made, released. False when a call failed.
  bool close();

  // Makes GPU g's context current. False after reporting a failure.
  bool use(int g) const;
  int size() const { return static_cast<int>(gpus_.size()); }
  Gpu& operator[](int g) { return gpus_[static_cast<size_t>(g)]; }
  const Gpu& operator[](int g) const { return gpus_[static_cast<size_t>(g)]; }
  std::vector<CUdevice> devices() const;
  const std::string& name() const { return name_; }  // device 0's name, for the report

 private:
  std::vector<Gpu> gpus_;
  CUlibrary library_ = nullptr;  // Loader::kLibrary
  std::string name_;
};

}  // namespace mcsim::bench
