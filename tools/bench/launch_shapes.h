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

// NCCL's NVLS all-reduce on one node without registered buffers (nccl src/device/all_reduce.h,
// src/enqueue.cc): each channel's warps are split into scatter warps (copy the input, one chunk
// per head, into NCCL's staging buffers), reduce warps (multimem.ld_reduce and multimem.st of
// this rank's head's chunk) and gather warps (copy the results out of the staging buffers), the
// three pipelined through NCCL_STEPS slots. One iteration moves channels x heads x chunk bytes of
// each rank's input. The reduction of the first iteration cannot end before every rank has
// staged it, and the last iteration's results are gathered after its reduction: the pipeline's
// fill and drain, which the steady state does not hide.
struct NvlsPipeline {
  uint64_t chunkBytes = 0;      // NCCL's chunk for this size (128 KiB, shrunk for small sizes)
  uint64_t iterationBytes = 0;  // channels x heads x chunk
  uint64_t fillBytes = 0;       // the first iteration (at most the size)
  uint64_t drainBytes = 0;      // the last iteration (what is left after the whole ones)
  LaunchShape scatter, gather;  // the channels' scatter and gather warps
};
// NCCL's chunk choice for NVLS: NCCL_NVLS_CHUNKSIZE (128 KiB) halved to 64, 32 and 16 KiB while the
// size is under 64, 8 and 2 times channels x heads x chunk. Warps: of NCCL_MAX_NTHREADS / 32 = 20,
// 7 reduce when n <= 6, else 5; the scatter warps take half the rest rounded up, the gather warps
// the remainder.
NvlsPipeline ncclNvlsPipeline(uint64_t bytes, uint64_t ranks, LaunchShape channels);

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
