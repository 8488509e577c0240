#include "launch_shapes.h"

#include <algorithm>

#include "mcsim/kernels.h"

namespace mcsim::bench {

namespace {

uint64_t ceilDiv(uint64_t a, uint64_t b) { return (a + b - 1) / b; }
uint64_t roundUp(uint64_t v, uint64_t to) { return ceilDiv(v, to) * to; }

}  // namespace

LaunchShape pytorchMultimemShape(uint64_t count, uint32_t dtype, uint64_t splits) {
  constexpr uint64_t kMaxBlocks = 8, kMaxThreads = 1024, kWarp = 32;
  const uint64_t elem = mcsim_dtype_bytes(dtype);
  // The widest access (16, 8 or 4 bytes) the size allows (PyTorch also asks it of the pointer;
  // our buffers start on granule boundaries).
  uint64_t alignment = 16;
  while (alignment > elem && (count * elem) % alignment != 0) alignment /= 2;
  // As PyTorch does: the element count rounded to alignment * splits (alignment in bytes).
  const uint64_t perSplit = roundUp(count, alignment * splits) / splits;
  const uint64_t perThread = alignment / elem;
  if (perSplit <= kMaxThreads * perThread) {
    return {1, static_cast<unsigned>(roundUp(ceilDiv(perSplit, perThread), kWarp))};
  }
  return {static_cast<unsigned>(std::min(ceilDiv(perSplit, kMaxThreads * perThread), kMaxBlocks)),
          static_cast<unsigned>(kMaxThreads)};
}

LaunchShape ncclNvlsShape(int computeCapabilityMajor) { return {computeCapabilityMajor >= 10 ? 24u : 16u, 640}; }

NvlsPipeline ncclNvlsPipeline(uint64_t bytes, uint64_t ranks, LaunchShape channels) {
  constexpr uint64_t kWarp = 32, kWarps = 640 / kWarp;
  NvlsPipeline p;
  const uint64_t concurrent = channels.blocks * ranks;  // NCCL's concurrentOps
  p.chunkBytes = 128 * 1024;
  if (bytes < 64 * concurrent * p.chunkBytes && p.chunkBytes > 65536) p.chunkBytes = 65536;
  if (bytes < 8 * concurrent * p.chunkBytes && p.chunkBytes > 32768) p.chunkBytes = 32768;
  if (bytes < 2 * concurrent * p.chunkBytes && p.chunkBytes > 16384) p.chunkBytes = 16384;
  p.iterationBytes = concurrent * p.chunkBytes;
  p.fillBytes = std::min(bytes, p.iterationBytes);
  p.drainBytes = bytes == 0 ? 0 : bytes - (bytes - 1) / p.iterationBytes * p.iterationBytes;
  const uint64_t reduceWarps = ranks <= 6 ? 7 : 5;
  p.scatter = {channels.blocks, static_cast<unsigned>((kWarps - reduceWarps + 1) / 2 * kWarp)};
  p.gather = {channels.blocks, static_cast<unsigned>((kWarps - reduceWarps) / 2 * kWarp)};
  return p;
}

Chunk ringChunk(uint64_t count, uint64_t n, uint64_t c) {
  const uint64_t size = roundUp(ceilDiv(count, n), 4);
  const uint64_t first = std::min(count, c * size);
  return {first, std::min(count - first, size)};
}

}  // namespace mcsim::bench
