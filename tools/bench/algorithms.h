// The four all-reduce algorithms, as sequences of kernel launches on the GPUs' streams (launch
// shapes and their sources: launch_shapes.h):
//
//  oneshot  mcsim_allreduce_oneshot, one launch per GPU, the result in a separate output buffer;
//           PyTorch symmetric memory's multimem one-shot shape.
//  twoshot  mcsim_allreduce_twoshot, one launch per GPU, in place; PyTorch's two-shot shape.
//  nvls     NCCL's NVLS all-reduce on one node: twoshot's data movement with NCCL's loop
//           (mcsim_allreduce_nvls: four loads in flight per thread) and NCCL's NVLS shape (16
//           blocks of 640 threads on Hopper, 24 from Blackwell on), one launch per GPU. NCCL
//           pipelines its steps inside one persistent kernel; so does this one launch (it has no
//           barrier between parts of the buffer). Before it, the pipeline's fill (the first
//           iteration staged by NCCL's scatter warps), after it the drain (the last iteration
//           gathered by its gather warps): mcsim_copy launches of those sizes and shapes
//           (ncclNvlsPipeline), into a scratch buffer.
//  ring     the classic ring without multicast, over peer mappings, pushed with stores as NCCL's
//           Simple protocol does: reduce-scatter in n-1 steps (mcsim_copy, then mcsim_reduce:
//           the successor's receive area = own chunk + what the predecessor sent), the last sum,
//           then all-gather in n-1 steps (mcsim_copy into the successor's buffer); each step
//           that reads what the predecessor sent waits for that step (cuEventRecord /
//           cuStreamWaitEvent across contexts). NCCL's ring shape. Unlike NCCL's ring, which
//           pipelines the steps inside one kernel, each step here is a launch of its own: the
//           launches and cross-GPU waits cost about 8 us a step.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <vector>

#include "buffers.h"
#include "gpu_set.h"
#include "launch_shapes.h"
#include "options.h"

namespace mcsim::bench {

// The kernels an algorithm launches.
std::vector<Kernel> kernelsFor(Algo algo);

class AllReduce {
 public:
  AllReduce(Algo algo, uint32_t dtype, GpuSet& gpus, const Buffers& buffers)
      : algo_(algo), dtype_(dtype), gpus_(gpus), buffers_(buffers) {}
  // Queries the device for the NVLS channel count and makes the ring's events.
  bool prepare();
  // Enqueues what an all-reduce must wait for before it starts, outside its timed span: for the
  // ring, that its neighbours are done with the previous one (the kernels' barriers see to that
  // for the others).
  bool enqueueIterationStart();
  // Zeroes the barrier words and starts the epochs again (between sizes: the kernels' barrier
  // target assumes every earlier epoch had as many blocks as this one, and launch shapes change
  // with the size). Waits for the GPUs first.
  bool restartBarriers();
  // Enqueues one all-reduce of `count` elements on every GPU's stream (host does not wait).
  bool enqueue(uint64_t count);
  // Barrier epochs one all-reduce uses (0 for the ring).
  uint64_t epochsPerAllReduce() const;
  // Barrier epochs the run has used so far (the signal words stand at world * that).
  uint64_t epochsUsed() const { return nextEpoch_ - 1; }
  // Where GPU g's input lies, and where its result appears.
  CUdeviceptr input(int g) const { return buffers_.gpu[static_cast<size_t>(g)].buf; }
  CUdeviceptr result(int g) const;
  bool release();  // the ring's events

  // The launch shapes, for the report.
  LaunchShape shape(uint64_t count) const;

 private:
  bool enqueueOneshot(uint64_t count);
  // The twoshot or nvls kernel (same arguments) over `count` elements from `offset` bytes in.
  bool enqueueTwoshot(Kernel kernel, CUdeviceptr offset, uint64_t count, LaunchShape shape);
  bool enqueueRing(uint64_t count);
  bool enqueueNvls(uint64_t count);

  Algo algo_;
  uint32_t dtype_;
  GpuSet& gpus_;
  const Buffers& buffers_;
  uint32_t nextEpoch_ = 1;  // the signal words were zeroed: the first barrier waits for world * 1
  LaunchShape nvls_ = ncclNvlsShape(9);  // from the device's compute capability in prepare()
  std::vector<std::vector<CUevent>> steps_;  // ring: steps_[g][s], GPU g's step s done
  bool ringRecorded_ = false;                // steps_ hold a previous all-reduce's steps
};

}  // namespace mcsim::bench
