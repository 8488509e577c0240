#include "algorithms.h"

#include <algorithm>

#include "cu_check.h"
#include "mcsim/kernels.h"

namespace mcsim::bench {

namespace {

bool launch(const Gpu& gpu, Kernel k, LaunchShape s, void** params) {
  BENCH_CU(cuLaunchKernel(gpu.fn[k], s.blocks, 1, 1, s.threads, 1, 1, 0, gpu.stream, params, nullptr));
  return true;
}

}  // namespace

std::vector<Kernel> kernelsFor(Algo algo) {
  switch (algo) {
    case Algo::kOneshot: return {kKernelOneshot};
    case Algo::kTwoshot: return {kKernelTwoshot};
    case Algo::kNvls: return {kKernelNvls, kKernelCopy};
    case Algo::kRing: return {kKernelReduce, kKernelCopy};
  }
  return {};
}

bool AllReduce::prepare() {
  if (algo_ == Algo::kNvls) {
    int major = 0;
    BENCH_CU(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, gpus_[0].dev));
    nvls_ = ncclNvlsShape(major);
  }
  if (algo_ == Algo::kRing) {
    const int n = gpus_.size();
    steps_.assign(static_cast<size_t>(n), {});
    for (int g = 0; g < n; ++g) {
      if (!gpus_.use(g)) return false;
      for (int s = 0; s < ringSteps(n); ++s) {
        CUevent e = nullptr;
        BENCH_CU(cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
        steps_[static_cast<size_t>(g)].push_back(e);
      }
    }
  }
  return true;
}

bool AllReduce::release() {
  bool ok = true;
  for (size_t g = 0; g < steps_.size(); ++g) {
    ok = gpus_.use(static_cast<int>(g)) && ok;
    for (CUevent e : steps_[g]) BENCH_CU_TEARDOWN(ok, cuEventDestroy(e));
  }
  steps_.clear();
  return ok;
}

CUdeviceptr AllReduce::result(int g) const {
  const GpuBuffers& b = buffers_.gpu[static_cast<size_t>(g)];
  return algo_ == Algo::kOneshot ? b.out : b.buf;
}

LaunchShape AllReduce::shape(uint64_t count) const {
  switch (algo_) {
    case Algo::kOneshot: return pytorchMultimemShape(count, dtype_, 1);
    case Algo::kTwoshot: return pytorchMultimemShape(count, dtype_, static_cast<uint64_t>(gpus_.size()));
    case Algo::kNvls: return nvls_;
    case Algo::kRing: return kRingShape;
  }
  return {};
}

uint64_t AllReduce::epochsPerAllReduce() const {
  switch (algo_) {
    case Algo::kOneshot:
    case Algo::kTwoshot:
    case Algo::kNvls: return 2;  // each kernel: a barrier before and one after
    case Algo::kRing: return 0;
  }
  return 0;
}

bool AllReduce::enqueue(uint64_t count) {
  switch (algo_) {
    case Algo::kOneshot: return enqueueOneshot(count);
    case Algo::kTwoshot: return enqueueTwoshot(kKernelTwoshot, 0, count, shape(count));
    case Algo::kNvls: return enqueueNvls(count);
    case Algo::kRing: return enqueueRing(count);
  }
  return false;
}

// NCCL's NVLS pipeline (launch_shapes.h, ncclNvlsPipeline): the reduction of the whole buffer
// (mcsim_allreduce_nvls, in place) between the pipeline's fill, the first iteration staged by the
// scatter warps, and its drain, the last iteration gathered by the gather warps. Both are local
// copies of that many bytes with the warps' thread count; the steady state's staging copies
// overlap the reduction and are not launched. The copies write into the scratch output buffer, so
// the result stays in buf.
bool AllReduce::enqueueNvls(uint64_t count) {
  const uint64_t elem = mcsim_dtype_bytes(dtype_);
  const NvlsPipeline p = ncclNvlsPipeline(count * elem, static_cast<uint64_t>(gpus_.size()), nvls_);
  auto stage = [&](uint64_t at, uint64_t bytes, LaunchShape s) {
    for (int g = 0; g < gpus_.size(); ++g) {
      const GpuBuffers& b = buffers_.gpu[static_cast<size_t>(g)];
      CUdeviceptr dst = b.out + at, src = b.buf + at;
      uint64_t n = bytes;
      void* params[] = {&dst, &src, &n};
      if (!gpus_.use(g) || !launch(gpus_[g], kKernelCopy, s, params)) return false;
    }
    return true;
  };
  if (p.fillBytes > 0 && !stage(0, p.fillBytes, p.scatter)) return false;
  if (!enqueueTwoshot(kKernelNvls, 0, count, shape(count))) return false;
  return p.drainBytes == 0 || stage(count * elem - p.drainBytes, p.drainBytes, p.gather);
}

// Ring steps write into the successor's buffers (recv in the reduce-scatter, buf in the
// all-gather), so before GPU r starts again its successor must have finished its previous
// all-reduce (it reads both until its last step).
bool AllReduce::enqueueIterationStart() {
  if (algo_ != Algo::kRing || !ringRecorded_) return true;
  const int n = gpus_.size();
  const size_t last = static_cast<size_t>(ringSteps(n) - 1);
  for (int r = 0; r < n; ++r) {
    if (!gpus_.use(r)) return false;
    const int succ = (r + 1) % n;
    BENCH_CU(cuStreamWaitEvent(gpus_[r].stream, steps_[static_cast<size_t>(succ)][last], 0));
  }
  return true;
}

bool AllReduce::restartBarriers() {
  if (algo_ == Algo::kRing) return true;
  for (int g = 0; g < gpus_.size(); ++g) {
    if (!gpus_.use(g)) return false;
    BENCH_CU(cuCtxSynchronize());
    BENCH_CU(cuMemsetD32(buffers_.gpu[static_cast<size_t>(g)].sig, 0, buffers_.sigSize / 4));
  }
  nextEpoch_ = 1;
  return true;
}

bool AllReduce::enqueueOneshot(uint64_t count) {
  const LaunchShape s = shape(count);
  uint32_t world = static_cast<uint32_t>(gpus_.size()), epoch = nextEpoch_, dtype = dtype_;
  for (int g = 0; g < gpus_.size(); ++g) {
    const GpuBuffers& b = buffers_.gpu[static_cast<size_t>(g)];
    CUdeviceptr mcBuf = b.mcBuf, out = b.out, mcSig = b.mcSig, sig = b.sig;
    uint64_t n = count;
    void* params[] = {&mcBuf, &out, &n, &dtype, &mcSig, &sig, &world, &epoch};
    if (!gpus_.use(g) || !launch(gpus_[g], kKernelOneshot, s, params)) return false;
  }
  nextEpoch_ += 2;
  return true;
}

bool AllReduce::enqueueTwoshot(Kernel kernel, CUdeviceptr offset, uint64_t count, LaunchShape s) {
  uint32_t world = static_cast<uint32_t>(gpus_.size()), epoch = nextEpoch_, dtype = dtype_;
  for (int g = 0; g < gpus_.size(); ++g) {
    const GpuBuffers& b = buffers_.gpu[static_cast<size_t>(g)];
    CUdeviceptr mcBuf = b.mcBuf + offset, mcSig = b.mcSig, sig = b.sig;
    uint64_t n = count;
    uint32_t rank = static_cast<uint32_t>(g);
    void* params[] = {&mcBuf, &n, &dtype, &mcSig, &sig, &rank, &world, &epoch};
    if (!gpus_.use(g) || !launch(gpus_[g], kernel, s, params)) return false;
  }
  nextEpoch_ += 2;
  return true;
}

// NCCL's ring, pushed with stores as NCCL's Simple protocol does (a step's loads are local, its
// stores go to the successor), one launch per step. GPU r's steps:
//   reduce-scatter s = 0 .. n-2, chunk c = r - s:  succ.recv[c] = buf[c] (+ recv[c] for s > 0)
//   step n-1, chunk c = r + 1:                      buf[c] += recv[c]  (the sum of chunk r + 1)
//   all-gather s = 0 .. n-2, chunk c = r + 1 - s:   succ.buf[c] = buf[c]
// A step that reads what the predecessor's previous step wrote waits for that step's event
// (every step but the first of each phase). Writes never overtake the successor's reads of the
// same chunk: all-gather step s overwrites succ.buf[r + 1 - s], which the successor reads in its
// reduce-scatter step s, and the chain of waits behind this GPU's all-gather step s (back through
// the predecessors' all-gather steps, their step n-1 and their reduce-scatter steps) passes
// through the successor's reduce-scatter step s. Each recv chunk is written once an iteration.
bool AllReduce::enqueueRing(uint64_t count) {
  const int n = gpus_.size();
  const uint64_t elem = mcsim_dtype_bytes(dtype_);
  uint32_t dtype = dtype_, op = MCSIM_REDOP_ADD;
  auto mod = [n](int v) { return ((v % n) + n) % n; };
  for (int s = 0; s < ringSteps(n); ++s) {
    for (int r = 0; r < n; ++r) {
      const int pred = mod(r - 1), succ = mod(r + 1);
      const bool scatter = s < n - 1, sum = s == n - 1;
      const int agStep = s - n;  // all-gather step, for s >= n
      const int c = scatter ? mod(r - s) : sum ? mod(r + 1) : mod(r + 1 - agStep);
      const Chunk chunk = ringChunk(count, static_cast<uint64_t>(n), static_cast<uint64_t>(c));
      const Gpu& gpu = gpus_[r];
      if (!gpus_.use(r)) return false;
      // What this step reads came from the predecessor's previous step (not so for the first
      // step of each phase, which reads this GPU's own data).
      if (s > 0 && s != n) {
        BENCH_CU(cuStreamWaitEvent(gpu.stream, steps_[static_cast<size_t>(pred)][static_cast<size_t>(s - 1)], 0));
      }
      const GpuBuffers& mine = buffers_.gpu[static_cast<size_t>(r)];
      const GpuBuffers& next = buffers_.gpu[static_cast<size_t>(succ)];
      const uint64_t at = chunk.first * elem;
      if (chunk.count > 0) {
        uint64_t n64 = chunk.count, bytes = chunk.count * elem;
        if (scatter && s == 0) {
          CUdeviceptr dst = next.recv + at, src = mine.buf + at;
          void* params[] = {&dst, &src, &bytes};
          if (!launch(gpu, kKernelCopy, kRingShape, params)) return false;
        } else if (scatter || sum) {
          CUdeviceptr dst = (sum ? mine.buf : next.recv) + at, a = mine.buf + at, b = mine.recv + at;
          void* params[] = {&dst, &a, &b, &n64, &dtype, &op};
          if (!launch(gpu, kKernelReduce, kRingShape, params)) return false;
        } else {
          CUdeviceptr dst = next.buf + at, src = mine.buf + at;
          void* params[] = {&dst, &src, &bytes};
          if (!launch(gpu, kKernelCopy, kRingShape, params)) return false;
        }
      }
      BENCH_CU(cuEventRecord(steps_[static_cast<size_t>(r)][static_cast<size_t>(s)], gpu.stream));
    }
  }
  ringRecorded_ = true;
  return true;
}

}  // namespace mcsim::bench
