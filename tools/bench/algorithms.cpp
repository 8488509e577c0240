#include "algorithms.h"

#include <algorithm>

#include "cu_check.h"
#include "mcsim/kernels.h"

namespace mcsim::bench {

namespace {

uint64_t ceilDiv(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

bool launch(const Gpu& gpu, Kernel k, LaunchShape s, void** params) {
  BENCH_CU(cuLaunchKernel(gpu.fn[k], s.blocks, 1, 1, s.threads, 1, 1, 0, gpu.stream, params, nullptr));
  return true;
}

}  // namespace

std::vector<Kernel> kernelsFor(Algo algo) {
  switch (algo) {
    case Algo::kOneshot: return {kKernelOneshot};
    case Algo::kTwoshot:
    case Algo::kNvls: return {kKernelTwoshot};
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
      for (int s = 0; s < 2 * (n - 1); ++s) {
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

uint64_t AllReduce::nvlsSliceBytes() const { return ncclNvlsSliceBytes(nvls_, gpus_.size()); }

LaunchShape AllReduce::shape(uint64_t count) const {
  switch (algo_) {
    case Algo::kOneshot: return pytorchMultimemShape(count, dtype_, 1);
    case Algo::kTwoshot: return pytorchMultimemShape(count, dtype_, static_cast<uint64_t>(gpus_.size()));
    case Algo::kNvls: return nvls_;
    case Algo::kRing: return kRingShape;
  }
  return {};
}

uint64_t AllReduce::epochsFor(uint64_t count) const {
  switch (algo_) {
    case Algo::kOneshot:
    case Algo::kTwoshot: return 2;  // each kernel: a barrier before and one after
    case Algo::kNvls: return 2 * ceilDiv(count * mcsim_dtype_bytes(dtype_), nvlsSliceBytes());
    case Algo::kRing: return 0;
  }
  return 0;
}

bool AllReduce::enqueue(uint64_t count) {
  switch (algo_) {
    case Algo::kOneshot: return enqueueOneshot(count);
    case Algo::kTwoshot: return enqueueTwoshot(0, count, shape(count));
    case Algo::kNvls: {
      const uint64_t elem = mcsim_dtype_bytes(dtype_), slice = nvlsSliceBytes() / elem;
      for (uint64_t first = 0; first < count; first += slice) {
        if (!enqueueTwoshot(first * elem, std::min(slice, count - first), shape(count))) return false;
      }
      return true;
    }
    case Algo::kRing: return enqueueRing(count);
  }
  return false;
}

// A ring step reads its predecessor's buffer and writes its own, which its successor reads: before
// GPU r starts again, its predecessor must have written its last chunk and its successor read
// its last one, i.e. both must have finished their previous all-reduce.
bool AllReduce::enqueueIterationStart() {
  if (algo_ != Algo::kRing || !ringRecorded_) return true;
  const int n = gpus_.size();
  const size_t last = static_cast<size_t>(2 * (n - 1) - 1);
  for (int r = 0; r < n; ++r) {
    if (!gpus_.use(r)) return false;
    const int pred = (r + n - 1) % n, succ = (r + 1) % n;
    BENCH_CU(cuStreamWaitEvent(gpus_[r].stream, steps_[static_cast<size_t>(pred)][last], 0));
    if (succ != pred) BENCH_CU(cuStreamWaitEvent(gpus_[r].stream, steps_[static_cast<size_t>(succ)][last], 0));
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

bool AllReduce::enqueueTwoshot(CUdeviceptr offset, uint64_t count, LaunchShape s) {
  uint32_t world = static_cast<uint32_t>(gpus_.size()), epoch = nextEpoch_, dtype = dtype_;
  for (int g = 0; g < gpus_.size(); ++g) {
    const GpuBuffers& b = buffers_.gpu[static_cast<size_t>(g)];
    CUdeviceptr mcBuf = b.mcBuf + offset, mcSig = b.mcSig, sig = b.sig;
    uint64_t n = count;
    uint32_t rank = static_cast<uint32_t>(g);
    void* params[] = {&mcBuf, &n, &dtype, &mcSig, &sig, &rank, &world, &epoch};
    if (!gpus_.use(g) || !launch(gpus_[g], kKernelTwoshot, s, params)) return false;
  }
  nextEpoch_ += 2;
  return true;
}

// Step s of GPU r: reduce-scatter for s < n-1 (chunk r-1-s of the predecessor added into its own),
// then all-gather (chunk r-(s-(n-1)) copied from the predecessor). Each step reads what the
// predecessor's previous step wrote, so it waits for that step's event. That chain also orders
// every write after the successor's read of the same chunk (the successor's step s reads chunk
// r-s, which this GPU rewrites only in its all-gather step s, after a chain of waits that passes
// through the successor's step s), so no step overwrites what a peer still has to read.
bool AllReduce::enqueueRing(uint64_t count) {
  const int n = gpus_.size();
  const uint64_t elem = mcsim_dtype_bytes(dtype_);
  uint32_t dtype = dtype_, op = MCSIM_REDOP_ADD;
  for (int s = 0; s < 2 * (n - 1); ++s) {
    for (int r = 0; r < n; ++r) {
      const int pred = (r + n - 1) % n;
      const bool reduce = s < n - 1;
      const int c = reduce ? ((r - 1 - s) % n + n) % n : ((r - (s - (n - 1))) % n + n) % n;
      const Chunk chunk = ringChunk(count, static_cast<uint64_t>(n), static_cast<uint64_t>(c));
      const Gpu& gpu = gpus_[r];
      if (!gpus_.use(r)) return false;
      if (s > 0) BENCH_CU(cuStreamWaitEvent(gpu.stream, steps_[static_cast<size_t>(pred)][static_cast<size_t>(s - 1)], 0));
      CUdeviceptr mine = buffers_.gpu[static_cast<size_t>(r)].buf + chunk.first * elem;
      CUdeviceptr theirs = buffers_.gpu[static_cast<size_t>(pred)].buf + chunk.first * elem;
      if (chunk.count > 0) {
        if (reduce) {
          CUdeviceptr dst = mine, a = mine, b = theirs;
          uint64_t n64 = chunk.count;
          void* params[] = {&dst, &a, &b, &n64, &dtype, &op};
          if (!launch(gpu, kKernelReduce, kRingShape, params)) return false;
        } else {
          CUdeviceptr dst = mine, src = theirs;
          uint64_t bytes = chunk.count * elem;
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
