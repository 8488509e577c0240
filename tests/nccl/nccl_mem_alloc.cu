// ncclMemAlloc on each GPU named on the command line (all of the node's by default): NCCL's own
// allocator for buffers its collectives and registration use well (PyTorch's NCCL memory pool
// allocates through it). NCCL asks for a FABRIC handle when the device says it supports them
// (CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED) and, when cuMemCreate refuses FABRIC with
// NOT_PERMITTED or NOT_SUPPORTED (no IMEX channel), allocates again without it
// (docs/faults.md, "Faults through NCCL"). Each buffer is written, read back, checked and freed
// with ncclMemFree: `nccl_mem_alloc [GPUS [BYTES]]`, BYTES 2 MiB by default.
#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

int main(int argc, char** argv) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    std::printf("FAILED: cudaGetDeviceCount\n");
    return 1;
  }
  if (argc > 1) n = std::atoi(argv[1]);
  const size_t bytes = argc > 2 ? std::strtoul(argv[2], nullptr, 10) : (size_t{2} << 20);
  int bad = 0;
  for (int d = 0; d < n; ++d) {
    void* p = nullptr;
    cudaSetDevice(d);
    const ncclResult_t r = ncclMemAlloc(&p, bytes);
    if (r != ncclSuccess) {
      std::printf("FAILED: ncclMemAlloc on GPU %d: %s\n", d, ncclGetErrorString(r));
      ++bad;
      continue;
    }
    std::vector<unsigned> in(bytes / sizeof(unsigned)), out(in.size());
    for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<unsigned>(i * 2654435761u) ^ static_cast<unsigned>(d);
    if (cudaMemcpy(p, in.data(), bytes, cudaMemcpyHostToDevice) != cudaSuccess ||
        cudaMemcpy(out.data(), p, bytes, cudaMemcpyDeviceToHost) != cudaSuccess || in != out) {
      std::printf("FAILED: the buffer of GPU %d does not hold what was written\n", d);
      ++bad;
    }
    if (ncclMemFree(p) != ncclSuccess) {
      std::printf("FAILED: ncclMemFree on GPU %d\n", d);
      ++bad;
    }
  }
  if (bad == 0) std::printf("nccl_mem_alloc: %d buffers of %zu bytes allocated, checked and freed\n", n, bytes);
  return bad == 0 ? 0 : 1;
}
