// The memory of a benchmark run, made with the virtual memory management API.
//
// Multicast (nvls, oneshot, twoshot): a data multicast object and a signal multicast object, each
// with a team of every GPU. Each GPU makes its own physical memory for both (cuMemCreate), binds
// it, maps it once for itself (its unicast view: buf, sig) and maps the multicast object once for
// itself (its multicast view: mcBuf, mcSig). The signal words are zeroed once; the barrier epochs
// then count up for the whole run (mcsim_barrier in include/mcsim/kernels.h).
//
// Peer (ring): each GPU's physical buffer mapped once, with access granted to every GPU, so that
// the one address serves its owner and its peers alike (the driver's address space is the
// process's, as with NCCL's cuMem-based peer buffers within one process). The mapping holds the
// data (buf) and, after it, an area of the same size that the ring's predecessor writes into
// (recv).
#pragma once

#include <cuda.h>

#include <cstdint>
#include <vector>

#include "gpu_set.h"

namespace mcsim::bench {

struct GpuBuffers {
  CUmemGenericAllocationHandle mem = 0, sigMem = 0;  // this GPU's physical memory
  CUdeviceptr buf = 0, mcBuf = 0;                    // data: unicast and multicast views
  CUdeviceptr sig = 0, mcSig = 0;                    // signal words: unicast and multicast views
  CUdeviceptr out = 0;                               // oneshot's output (cuMemAlloc)
  CUdeviceptr recv = 0;                              // the ring's receive area (inside buf's mapping)
  bool bufMapped = false, mcBufMapped = false, sigMapped = false, mcSigMapped = false;
  bool bound = false, sigBound = false;
};

struct Buffers {
  size_t bufSize = 0, sigSize = 0;  // bytes of each GPU's data and signal memory
  CUmemGenericAllocationHandle mc = 0, mcSig = 0;
  std::vector<GpuBuffers> gpu;
};

// Multicast buffers of at least `bytes` per GPU; with `output`, a plain output buffer per GPU too.
bool setUpMulticast(const GpuSet& gpus, uint64_t bytes, bool output, Buffers* b);
// Peer-mapped buffers of at least `bytes` per GPU.
bool setUpPeer(const GpuSet& gpus, uint64_t bytes, Buffers* b);
// Unmaps, unbinds, frees and releases whatever the set-up made. False when a call failed.
bool tearDown(const GpuSet& gpus, Buffers* b);

}  // namespace mcsim::bench
