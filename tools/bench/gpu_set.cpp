#include "gpu_set.h"

#include <cstdio>

#include "cu_check.h"
#include "mcsim/kernels.h"

namespace mcsim::bench {

namespace {

const char* kernelName(Kernel k) {
  switch (k) {
    case kKernelOneshot: return MCSIM_KERNEL_ALLREDUCE_ONESHOT;
    case kKernelTwoshot: return MCSIM_KERNEL_ALLREDUCE_TWOSHOT;
    case kKernelNvls: return MCSIM_KERNEL_ALLREDUCE_NVLS;
    case kKernelCopy: return MCSIM_KERNEL_COPY;
    case kKernelReduce: return MCSIM_KERNEL_REDUCE;
    case kKernelCount: break;
  }
  return "?";
}

}  // namespace

bool GpuSet::open(int count) {
  BENCH_CU(cuInit(0));
  int devices = 0;
  BENCH_CU(cuDeviceGetCount(&devices));
  if (count == 0) count = devices;
  if (count < 1 || count > devices) {
    std::fprintf(stderr, "mcsim_bench_allreduce: --gpus %d, but the node has %d device(s)\n", count, devices);
    return false;
  }
  gpus_.resize(static_cast<size_t>(count));
  for (int g = 0; g < count; ++g) {
    Gpu& gpu = gpus_[static_cast<size_t>(g)];
    BENCH_CU(cuDeviceGet(&gpu.dev, g));
    BENCH_CU(cuDevicePrimaryCtxRetain(&gpu.ctx, gpu.dev));
    BENCH_CU(cuCtxSetCurrent(gpu.ctx));
    // Non-blocking: the legacy default stream must not order one GPU's work after another's.
    BENCH_CU(cuStreamCreate(&gpu.stream, CU_STREAM_NON_BLOCKING));
  }
  char name[256] = {};
  BENCH_CU(cuDeviceGetName(name, sizeof(name), gpus_[0].dev));
  name_ = name;
  return true;
}

bool GpuSet::loadKernels(Loader loader, const std::vector<Kernel>& kernels) {
  if (loader == Loader::kLibrary) {
    // One library for every context; cuKernelGetFunction gives each context its function.
    BENCH_CU(cuLibraryLoadData(&library_, mcsim_kernel_image, nullptr, nullptr, 0, nullptr, nullptr, 0));
  }
  for (int g = 0; g < size(); ++g) {
    Gpu& gpu = gpus_[static_cast<size_t>(g)];
    if (!use(g)) return false;
    if (loader == Loader::kModule) BENCH_CU(cuModuleLoadData(&gpu.module, mcsim_kernel_image));
    for (Kernel k : kernels) {
      if (loader == Loader::kModule) {
        BENCH_CU(cuModuleGetFunction(&gpu.fn[k], gpu.module, kernelName(k)));
      } else {
        CUkernel kernel = nullptr;
        BENCH_CU(cuLibraryGetKernel(&kernel, library_, kernelName(k)));
        BENCH_CU(cuKernelGetFunction(&gpu.fn[k], kernel));
      }
    }
  }
  return true;
}

bool GpuSet::close() {
  bool ok = true;
  for (Gpu& gpu : gpus_) {
    if (gpu.ctx == nullptr) continue;
    BENCH_CU_TEARDOWN(ok, cuCtxSetCurrent(gpu.ctx));
    if (gpu.module != nullptr) BENCH_CU_TEARDOWN(ok, cuModuleUnload(gpu.module));
    if (gpu.stream != nullptr) BENCH_CU_TEARDOWN(ok, cuStreamDestroy(gpu.stream));
  }
  if (library_ != nullptr) BENCH_CU_TEARDOWN(ok, cuLibraryUnload(library_));
  library_ = nullptr;
  BENCH_CU_TEARDOWN(ok, cuCtxSetCurrent(nullptr));
  for (Gpu& gpu : gpus_) {
    if (gpu.ctx != nullptr) BENCH_CU_TEARDOWN(ok, cuDevicePrimaryCtxRelease(gpu.dev));
  }
  gpus_.clear();
  return ok;
}

bool GpuSet::use(int g) const {
  BENCH_CU(cuCtxSetCurrent(gpus_[static_cast<size_t>(g)].ctx));
  return true;
}

std::vector<CUdevice> GpuSet::devices() const {
  std::vector<CUdevice> d;
  for (const Gpu& gpu : gpus_) d.push_back(gpu.dev);
  return d;
}

}  // namespace mcsim::bench
