// Stream memory operations (cuStreamWaitValue32/64, cuStreamWriteValue32/64, cuStreamBatchMemOp):
// a write of a 32- or 64-bit word, or a wait until a word satisfies a comparison, in stream order
// on the stream's device, in simulated time. The bodies the entry points share
// (stream_memops_entries.inc is compiled for both stream ABIs; the CUDA 8 and 9 symbols are the
// "v1" API, `v1` below).
#pragma once

#include <cuda.h>

#include <cstdint>

namespace mcsim::driver {

CUresult streamWaitValueEntry(CUstream s, CUdeviceptr addr, uint64_t value, unsigned width, unsigned flags, bool v1,
                              bool perThreadDefault);
CUresult streamWriteValueEntry(CUstream s, CUdeviceptr addr, uint64_t value, unsigned width, unsigned flags, bool v1,
                               bool perThreadDefault);
CUresult streamBatchMemOpEntry(CUstream s, unsigned count, CUstreamBatchMemOpParams* ops, unsigned flags, bool v1,
                               bool perThreadDefault);

}  // namespace mcsim::driver
