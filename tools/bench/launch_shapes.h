// Launch shapes and work splits of the all-reduce algorithms (algorithms.h). Launch shape is an
// input to the timing model, on real GPUs and in mcsim alike, so each algorithm takes its shape
// from the library it comes from. Pure arithmetic: no driver calls.
#pragma once

#include <cstdint>

namespace mcsim::bench {

struct LaunchShape {
  unsigned blocks = 1, threads = 1;
};

// PyTorch's init_elementwise_launch_config (torch/csrc/distributed/c10d/symm_mem/
// CUDASymmetricMemoryOps.cu) for its multimem all-reduces: 128-bit accesses where the size
// allows, the work split `splits` ways (1 for one-shot, the world size for two-shot), one block
// sized to the work when it fits in 1024 threads, else up to 8 blocks of 1024.
LaunchShape pytorchMultimemShape(uint64_t count, uint32_t dtype, uint64_t splits);

// NCCL's NVLS all-reduce: NVLS_NCHANNELS_SM90 = 16 channels on Hopper, NVLS_NCHANNELS_SM100_NVL
// = 24 from Blackwell on (one node), each a block of NCCL_MAX_NTHREADS = 640 threads
// (nccl src/transport/nvls.cc, src/include/device.h).
LaunchShape ncclNvlsShape(int computeCapabilityMajor);

// NCCL's ring on an 8-GPU NVSwitch Hopper node: 24 channels of NCCL_SIMPLE_MAX_NTHREADS = 512.
constexpr LaunchShape kRingShape{24, 512};

// The ring's launches per GPU and all-reduce: n-1 reduce-scatter steps, the last sum, n-1
// all-gather steps (algorithms.cpp).
constexpr int ringSteps(int n) { return 2 * n - 1; }

// The ring's chunk c of n: ceil(count / n) elements rounded up to 4 (as the twoshot kernel cuts
// its shares, so that packed and vector accesses stay aligned), the last chunks taking what is
// left (possibly nothing).
struct Chunk {
  uint64_t first = 0, count = 0;
};
Chunk ringChunk(uint64_t count, uint64_t n, uint64_t c);

}  // namespace mcsim::bench
