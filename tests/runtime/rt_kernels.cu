// Kernels through the CUDA runtime: the program carries its kernels in the fat binary nvcc
// embeds, and the runtime loads it with cuLibraryLoadData and launches with a CUkernel. The
// kernel library's kernels (kernels/mcsim_kernels.cu, compiled into this program) run on mcsim by
// their behavioural models and on a real GPU as compiled; a kernel of the program's own runs on a
// real GPU and, on mcsim, in the PTX executor (docs/ptx.md).
#include "kernels/mcsim_kernels.cu"

#include <algorithm>
#include <vector>

#include "tests/runtime/rt_check.h"

__global__ void rt_scale(float* x, float a, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= a;
}

namespace {

std::vector<uint8_t> pattern(size_t n) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(i * 29 + 3);
  return v;
}

// Device memory for a copy kernel: `src` holds pattern(bytes), which it returns; `dst` is uninitialised.
std::vector<uint8_t> copyOperands(size_t bytes, void** src, void** dst) {
  RT_OK(cudaMalloc(src, bytes));
  RT_OK(cudaMalloc(dst, bytes));
  std::vector<uint8_t> h = pattern(bytes);
  RT_OK(cudaMemcpy(*src, h.data(), bytes, cudaMemcpyHostToDevice));
  return h;
}

void libraryKernelTripleChevron() {
  const size_t bytes = 1 << 20;
  void *src = nullptr, *dst = nullptr;
  const std::vector<uint8_t> h = copyOperands(bytes, &src, &dst);
  RT_OK(cudaMemset(dst, 0, bytes));
  mcsim_copy<<<64, 256>>>(reinterpret_cast<uint64_t>(dst), reinterpret_cast<uint64_t>(src), bytes);
  RT_OK(cudaGetLastError());
  RT_OK(cudaDeviceSynchronize());
  std::vector<uint8_t> back(bytes);
  RT_OK(cudaMemcpy(back.data(), dst, bytes, cudaMemcpyDeviceToHost));
  RT_EXPECT(back == h, "mcsim_copy did not copy");
  RT_OK(cudaFree(src));
  RT_OK(cudaFree(dst));
}

void libraryKernelLaunchApi() {
  const size_t bytes = 4096;
  void *src = nullptr, *dst = nullptr;
  const std::vector<uint8_t> h = copyOperands(bytes, &src, &dst);
  cudaStream_t s;
  RT_OK(cudaStreamCreate(&s));
  uint64_t d = reinterpret_cast<uint64_t>(dst), sr = reinterpret_cast<uint64_t>(src), n = bytes;
  void* args[] = {&d, &sr, &n};
  RT_OK(cudaLaunchKernel(reinterpret_cast<const void*>(&mcsim_copy), dim3(4), dim3(128), args, 0, s));
  RT_OK(cudaStreamSynchronize(s));
  std::vector<uint8_t> back(bytes);
  RT_OK(cudaMemcpy(back.data(), dst, bytes, cudaMemcpyDeviceToHost));
  RT_EXPECT(back == h, "cudaLaunchKernel(mcsim_copy) did not copy");
  RT_OK(cudaStreamDestroy(s));
  RT_OK(cudaFree(src));
  RT_OK(cudaFree(dst));
}

// cudaLaunchKernelExC (and the C++ cudaLaunchKernelEx over it) with no attribute, with a
// priority, and cooperative: each copies.
void launchKernelEx() {
  const size_t bytes = 64 * 1024;
  void *src = nullptr, *dst = nullptr;
  const std::vector<uint8_t> h = copyOperands(bytes, &src, &dst);
  cudaStream_t s;
  RT_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  uint64_t d = reinterpret_cast<uint64_t>(dst), sr = reinterpret_cast<uint64_t>(src), n = bytes;
  void* args[] = {&d, &sr, &n};
  cudaLaunchAttribute attr = {};
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(8);
  cfg.blockDim = dim3(128);
  cfg.stream = s;
  std::vector<uint8_t> back(bytes);
  for (int form = 0; form < 4; ++form) {
    RT_OK(cudaMemsetAsync(dst, 0, bytes, s));
    cfg.attrs = nullptr;
    cfg.numAttrs = 0;
    if (form == 1) {
      attr.id = cudaLaunchAttributePriority;
      attr.val.priority = 0;
      cfg.attrs = &attr;
      cfg.numAttrs = 1;
    } else if (form == 2) {
      attr.id = cudaLaunchAttributeCooperative;
      attr.val.cooperative = 1;
      cfg.attrs = &attr;
      cfg.numAttrs = 1;
    }
    if (form == 3) {
      RT_OK(cudaLaunchKernelEx(&cfg, mcsim_copy, d, sr, n));  // the C++ template
    } else {
      RT_OK(cudaLaunchKernelExC(&cfg, reinterpret_cast<const void*>(&mcsim_copy), args));
    }
    RT_OK(cudaMemcpyAsync(back.data(), dst, bytes, cudaMemcpyDeviceToHost, s));
    RT_OK(cudaStreamSynchronize(s));
    RT_EXPECT(back == h, "form %d did not copy", form);
  }
  // A cooperative launch through its own call.
  RT_OK(cudaMemset(dst, 0, bytes));
  RT_OK(cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(&mcsim_copy), dim3(8), dim3(128), args, 0, s));
  RT_OK(cudaStreamSynchronize(s));
  RT_OK(cudaMemcpy(back.data(), dst, bytes, cudaMemcpyDeviceToHost));
  RT_EXPECT(back == h, "cudaLaunchCooperativeKernel did not copy");
  RT_OK(cudaStreamDestroy(s));
  RT_OK(cudaFree(src));
  RT_OK(cudaFree(dst));
}

// cudaFuncGetAttributes and cudaFuncSetAttribute reach the kernel through cuKernelGetAttribute /
// cuKernelSetAttribute.
void kernelAttributes() {
  cudaFuncAttributes fa{};
  RT_OK(cudaFuncGetAttributes(&fa, mcsim_copy));
  RT_EXPECT(fa.maxThreadsPerBlock > 0 && fa.maxThreadsPerBlock <= 1024, "max threads %d", fa.maxThreadsPerBlock);
  RT_EXPECT(fa.binaryVersion == 90, "binary version %d", fa.binaryVersion);
  RT_OK(cudaFuncSetAttribute(mcsim_copy, cudaFuncAttributeMaxDynamicSharedMemorySize, 1024));
  RT_OK(cudaFuncGetAttributes(&fa, mcsim_copy));
  RT_EXPECT(fa.maxDynamicSharedSizeBytes == 1024, "dynamic shared memory %d after setting 1024", fa.maxDynamicSharedSizeBytes);
}

// Occupancy through the runtime: the driver's answer from the SM's limits and the kernel's
// attributes (docs/runtime.md, "Occupancy"), here for a kernel that registers do not bind.
void occupancy() {
  cudaFuncAttributes fa;
  RT_OK(cudaFuncGetAttributes(&fa, mcsim_copy));
  cudaDeviceProp p;
  RT_OK(cudaGetDeviceProperties(&p, 0));
  int blocks = 0;
  RT_OK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, mcsim_copy, 256, 0));
  const int byThreads = p.maxThreadsPerMultiProcessor / 256;
  RT_EXPECT(fa.numRegs > 32 || blocks == std::min(byThreads, p.maxBlocksPerMultiProcessor), "%d blocks of 256 (%d registers)",
            blocks, fa.numRegs);
  int grid = 0, block = 0;
  RT_OK(cudaOccupancyMaxPotentialBlockSize(&grid, &block, mcsim_copy, 0, 0));
  RT_EXPECT(block > 0 && block <= 1024 && block % 32 == 0, "block %d", block);
  int perSm = 0;
  RT_OK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perSm, mcsim_copy, block, 0));
  RT_EXPECT(grid == perSm * p.multiProcessorCount, "grid %d for %d blocks an SM of %d SMs", grid, perSm, p.multiProcessorCount);
}

void userKernel() {
  const int n = 1000;
  float* x = nullptr;
  RT_OK(cudaMalloc(&x, n * sizeof(float)));
  std::vector<float> h(n, 3.0f);
  RT_OK(cudaMemcpy(x, h.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  rt_scale<<<(n + 255) / 256, 256>>>(x, 2.0f, n);
  const cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess) {
    RT_OK(cudaDeviceSynchronize());
    RT_OK(cudaMemcpy(h.data(), x, n * sizeof(float), cudaMemcpyDeviceToHost));
    RT_EXPECT(h[0] == 6.0f && h[n - 1] == 6.0f, "rt_scale computed %f", h[0]);
    std::printf("  rt_scale ran\n");
  } else {
    RT_EXPECT(e == cudaErrorSymbolNotFound, "launch failed with %s", cudaGetErrorName(e));
    std::printf("  rt_scale not run: %s\n", cudaGetErrorName(e));
  }
  RT_OK(cudaFree(x));
}

const rtcheck::Case kCases[] = {
    {"library_kernel_chevrons", libraryKernelTripleChevron},
    {"library_kernel_launch_api", libraryKernelLaunchApi},
    {"launch_kernel_ex", launchKernelEx},
    {"kernel_attributes", kernelAttributes},
    {"occupancy", occupancy},
    {"user_kernel", userKernel},
};

}  // namespace

int main(int argc, char** argv) { return rtcheck::runCases(kCases, sizeof kCases / sizeof kCases[0], argc, argv); }
