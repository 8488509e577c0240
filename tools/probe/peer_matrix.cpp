// The peer-traffic matrix of a node: for every ordered pair of GPUs, peer copies timed with events
// as an application times them, from 4 bytes (latency) to 1 GiB:
//
//   ce_off   cuMemcpyPeerAsync before any peer access is enabled (the driver stages it)
//   ce       cuMemcpyDtoDAsync from GPU i's memory to GPU j's, peer access on, on GPU i's stream
//   bidir    i to j on i's stream and j to i on j's stream at once (i < j; bytes one way)
//   push     the kernel library's copy on GPU i writing GPU j's memory (132 x 1024 threads)
//   pull     the kernel library's copy on GPU j reading GPU i's memory
//   reduce   the kernel library's f32 sum on GPU j of its own buffer and GPU i's (read over NVLink)
//   grid     at one size (64 MiB or MAX_BYTES if smaller): `push` and a copy within GPU i (`local`)
//            with 1 to 132 blocks of 1024 threads, printed as push_g<blocks> and local_g<blocks>:
//            what one SM moves to a peer, against what it moves in its own memory
//   bipush   the kernel library's copy on GPU i writing GPU j's memory and the same on GPU j writing
//            GPU i's at once, each started after i's start event (i < j; bytes one way; 132 blocks,
//            and at 64 MiB also 24 blocks as bipush_g24: NCCL's ring channels on two H200s)
//   xwait    a cross-GPU round trip without work, timed on GPU i's stream: j's stream waits for
//            i's start event, i's stream waits for an event j records then (two waits, i < j;
//            printed with bytes 0)
//
// Output, one line a cell: `pm.<mode>.<i>-<j>.<bytes> = <ms> ms <GB/s>` (median; GB = 1e9 bytes
// one way), then `meta.*` lines for each pair's peer attributes. Plain device memory only: it never
// calls any cuMulticast* function. The same source is built against mcsim (bench/peer_matrix) and
// against the real driver: g++ -std=c++17 -O2 -I/usr/local/cuda/include -Iinclude
// tools/probe/peer_matrix.cpp <build>/kernels/libmcsim_kernels.a -lcuda -o peer_matrix.
//
//   peer_matrix [MAX_BYTES [MODES]]   (default 1 GiB; sizes: 4 B, then 4 KiB x 4^k up to it;
//                                      MODES: a comma list, default ce_off,ce,push,pull,bidir)
#include <cuda.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "mcsim/kernels.h"
#include "probe_timing.h"

namespace {

struct Gpu {
  CUcontext ctx = nullptr;
  CUstream stream = nullptr;
  CUdeviceptr src = 0, dst = 0;
  CUfunction copy = nullptr;
  CUfunction reduce = nullptr;
};

int repeatsFor(size_t bytes) { return bytes >= (size_t{256} << 20) ? 5 : 10; }

void print(const char* mode, int i, int j, size_t bytes, float ms) {
  std::printf("pm.%s.%d-%d.%zu = %.4f ms %.2f GB/s\n", mode, i, j, bytes, ms, bytes / (ms * 1e6));
}

// The kernel library's copy of `bytes` on `g`'s stream: dst <- src, by default a full
// H100/H200's shape.
CUresult launchCopy(Gpu& g, CUdeviceptr dst, CUdeviceptr src, size_t bytes, unsigned blocks = 132) {
  uint64_t n = bytes;
  void* args[] = {&dst, &src, &n};
  return cuLaunchKernel(g.copy, blocks, 1, 1, 1024, 1, 1, 0, g.stream, args, nullptr);
}

// The kernel library's f32 sum dst <- a + b of `bytes` on `g`'s stream, in the copy's shape.
CUresult launchReduce(Gpu& g, CUdeviceptr dst, CUdeviceptr a, CUdeviceptr b, size_t bytes) {
  uint64_t count = bytes / 4;
  uint32_t dtype = MCSIM_DTYPE_F32, op = MCSIM_REDOP_ADD;
  void* args[] = {&dst, &a, &b, &count, &dtype, &op};
  return cuLaunchKernel(g.reduce, 132, 1, 1, 1024, 1, 1, 0, g.stream, args, nullptr);
}

bool wanted(const std::string& modes, const char* mode) {
  return (',' + modes + ',').find(std::string(",") + mode + ',') != std::string::npos;
}

}  // namespace

int main(int argc, char** argv) {
  const size_t maxBytes = argc > 1 ? std::strtoull(argv[1], nullptr, 0) : size_t{1} << 30;
  const std::string modes = argc > 2 ? argv[2] : "ce_off,ce,push,pull,bidir";
  {  // every mode named must be one of these
    std::string rest = ',' + modes + ',';
    for (const char* m : {"ce_off", "ce", "push", "pull", "bidir", "bipush", "reduce", "grid", "xwait"})
      for (size_t at; (at = rest.find(std::string(",") + m + ',')) != std::string::npos;)
        rest.erase(at, std::strlen(m) + 1);
    if (rest != ",") {
      std::printf("error: unknown mode in '%s'\n", modes.c_str());
      return 2;
    }
  }
  CHECK(cuInit(0));
  int n = 0;
  CHECK(cuDeviceGetCount(&n));
  char name[128];
  CHECK(cuDeviceGetName(name, sizeof name, 0));
  std::printf("meta.devices = %d\nmeta.name = %s\n", n, name);
  if (n < 2) {
    std::printf("meta.skipped = fewer than 2 GPUs\n");
    return 0;
  }
  std::vector<size_t> sizes{4};
  for (size_t s = 4096; s <= maxBytes; s *= 4) sizes.push_back(s);
  if (sizes.back() != maxBytes) sizes.push_back(maxBytes);
  std::vector<Gpu> gpus(static_cast<size_t>(n));
  for (int d = 0; d < n; ++d) {
    Gpu& g = gpus[d];
    CHECK(cuDevicePrimaryCtxRetain(&g.ctx, d));
    CHECK(cuCtxSetCurrent(g.ctx));
    CHECK(cuStreamCreate(&g.stream, CU_STREAM_NON_BLOCKING));
    CHECK(cuMemAlloc(&g.src, maxBytes));
    CHECK(cuMemAlloc(&g.dst, maxBytes));
    CHECK(cuMemsetD8(g.src, static_cast<unsigned char>(d + 1), maxBytes));
    CUmodule mod;
    CHECK(cuModuleLoadData(&mod, mcsim_kernel_image));
    CHECK(cuModuleGetFunction(&g.copy, mod, MCSIM_KERNEL_COPY));
    CHECK(cuModuleGetFunction(&g.reduce, mod, MCSIM_KERNEL_REDUCE));
  }
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      if (i == j) continue;
      int can = 0, rank = 0, atomics = 0;
      CHECK(cuDeviceCanAccessPeer(&can, i, j));
      CHECK(cuDeviceGetP2PAttribute(&rank, CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK, i, j));
      CHECK(cuDeviceGetP2PAttribute(&atomics, CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED, i, j));
      std::printf("meta.pair.%d-%d = can_access %d performance_rank %d native_atomics %d\n", i, j, can, rank, atomics);
    }
  float ms = 0;
  // Peer access off: the driver's own path for a peer copy.
  for (int i = 0; i < n && wanted(modes, "ce_off"); ++i)
    for (int j = 0; j < n; ++j) {
      if (i == j) continue;
      Gpu& a = gpus[i];
      Gpu& b = gpus[j];
      CHECK(cuCtxSetCurrent(a.ctx));
      for (size_t bytes : sizes) {
        if (probe::medianMs(
                a.stream, [&] { return cuMemcpyPeerAsync(b.dst, b.ctx, a.src, a.ctx, bytes, a.stream); }, &ms, 2,
                repeatsFor(bytes)) != 0)
          return 1;
        print("ce_off", i, j, bytes, ms);
      }
    }
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      if (i == j) continue;
      CHECK(cuCtxSetCurrent(gpus[i].ctx));
      CHECK(cuCtxEnablePeerAccess(gpus[j].ctx, 0));
    }
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      if (i == j) continue;
      Gpu& a = gpus[i];
      Gpu& b = gpus[j];
      for (size_t bytes : sizes) {
        CHECK(cuCtxSetCurrent(a.ctx));
        if (wanted(modes, "ce")) {
          if (probe::medianMs(a.stream, [&] { return cuMemcpyDtoDAsync(b.dst, a.src, bytes, a.stream); }, &ms, 2,
                              repeatsFor(bytes)) != 0)
            return 1;
          print("ce", i, j, bytes, ms);
        }
        if (wanted(modes, "push")) {
          if (probe::medianMs(a.stream, [&] { return launchCopy(a, b.dst, a.src, bytes); }, &ms, 2,
                              repeatsFor(bytes)) != 0)
            return 1;
          print("push", i, j, bytes, ms);
        }
        CHECK(cuCtxSetCurrent(b.ctx));
        if (wanted(modes, "pull")) {
          if (probe::medianMs(b.stream, [&] { return launchCopy(b, b.dst, a.src, bytes); }, &ms, 2,
                              repeatsFor(bytes)) != 0)
            return 1;
          print("pull", i, j, bytes, ms);
        }
        if (wanted(modes, "reduce") && bytes >= 16) {
          if (probe::medianMs(b.stream, [&] { return launchReduce(b, b.dst, b.src, a.src, bytes); }, &ms, 2,
                              repeatsFor(bytes)) != 0)
            return 1;
          print("reduce", i, j, bytes, ms);
        }
      }
      if (wanted(modes, "grid")) {
        const size_t bytes = std::min(maxBytes, size_t{64} << 20);
        CHECK(cuCtxSetCurrent(a.ctx));
        for (unsigned blocks : {1u, 2u, 4u, 8u, 16u, 32u, 66u, 132u}) {
          const std::string push = "push_g" + std::to_string(blocks), local = "local_g" + std::to_string(blocks);
          if (probe::medianMs(a.stream, [&] { return launchCopy(a, b.dst, a.src, bytes, blocks); }, &ms, 1, 5) != 0)
            return 1;
          print(push.c_str(), i, j, bytes, ms);
          if (j != (i + 1) % n) continue;  // the local copy once per GPU
          if (probe::medianMs(a.stream, [&] { return launchCopy(a, a.dst, a.src, bytes, blocks); }, &ms, 1, 5) != 0)
            return 1;
          print(local.c_str(), i, i, bytes, ms);
        }
      }
    }
  // Both ways at once, timed on i's stream: j's stream starts after i's start event, and i's end
  // event waits for j's copy.
  for (int i = 0; i < n && (wanted(modes, "bidir") || wanted(modes, "bipush") || wanted(modes, "xwait")); ++i)
    for (int j = i + 1; j < n; ++j) {
      Gpu& a = gpus[i];
      Gpu& b = gpus[j];
      CUevent started, done;
      // Each event belongs to the context whose stream records it.
      CHECK(cuCtxSetCurrent(b.ctx));
      CHECK(cuEventCreate(&done, CU_EVENT_DISABLE_TIMING));
      CHECK(cuCtxSetCurrent(a.ctx));
      CHECK(cuEventCreate(&started, CU_EVENT_DISABLE_TIMING));
      if (wanted(modes, "xwait")) {
        auto roundTrip = [&]() -> CUresult {
          CUresult r = cuEventRecord(started, a.stream);
          if (r == CUDA_SUCCESS) r = cuStreamWaitEvent(b.stream, started, 0);
          if (r == CUDA_SUCCESS) r = cuEventRecord(done, b.stream);
          if (r == CUDA_SUCCESS) r = cuStreamWaitEvent(a.stream, done, 0);
          return r;
        };
        if (probe::medianMs(a.stream, roundTrip, &ms, 2, 10) != 0) return 1;
        print("xwait", i, j, 0, ms);
      }
      // Both GPUs' kernels push to each other at once.
      const auto bothPush = [&](size_t bytes, unsigned blocks) {
        return [&, bytes, blocks]() -> CUresult {
          // Each launch from its own GPU's context.
          CUresult r = cuEventRecord(started, a.stream);
          if (r == CUDA_SUCCESS) r = launchCopy(a, b.dst, a.src, bytes, blocks);
          if (r == CUDA_SUCCESS) r = cuCtxSetCurrent(b.ctx);
          if (r == CUDA_SUCCESS) r = cuStreamWaitEvent(b.stream, started, 0);
          if (r == CUDA_SUCCESS) r = launchCopy(b, a.dst, b.src, bytes, blocks);
          if (r == CUDA_SUCCESS) r = cuEventRecord(done, b.stream);
          if (r == CUDA_SUCCESS) r = cuCtxSetCurrent(a.ctx);
          if (r == CUDA_SUCCESS) r = cuStreamWaitEvent(a.stream, done, 0);
          return r;
        };
      };
      CHECK(cuCtxSetCurrent(a.ctx));
      for (size_t bytes : sizes) {
        if (!wanted(modes, "bipush") || bytes < 4096) continue;
        if (probe::medianMs(a.stream, bothPush(bytes, 132), &ms, 2, repeatsFor(bytes)) != 0) return 1;
        print("bipush", i, j, bytes, ms);
        if (bytes != (size_t{64} << 20)) continue;
        if (probe::medianMs(a.stream, bothPush(bytes, 24), &ms, 2, repeatsFor(bytes)) != 0) return 1;
        print("bipush_g24", i, j, bytes, ms);
        CHECK(cuCtxSetCurrent(a.ctx));
        if (probe::medianMs(a.stream, [&] { return launchCopy(a, b.dst, a.src, bytes, 24); }, &ms, 2, repeatsFor(bytes)) != 0)
          return 1;
        print("push_g24", i, j, bytes, ms);
      }
      for (size_t bytes : sizes) {
        if (!wanted(modes, "bidir")) break;
        auto both = [&]() -> CUresult {
          CUresult r = cuEventRecord(started, a.stream);
          if (r == CUDA_SUCCESS) r = cuStreamWaitEvent(b.stream, started, 0);
          if (r == CUDA_SUCCESS) r = cuMemcpyDtoDAsync(b.dst, a.src, bytes, a.stream);
          if (r == CUDA_SUCCESS) r = cuMemcpyDtoDAsync(a.dst, b.src, bytes, b.stream);
          if (r == CUDA_SUCCESS) r = cuEventRecord(done, b.stream);
          if (r == CUDA_SUCCESS) r = cuStreamWaitEvent(a.stream, done, 0);
          return r;
        };
        if (probe::medianMs(a.stream, both, &ms, 2, repeatsFor(bytes)) != 0) return 1;
        print("bidir", i, j, bytes, ms);
      }
      CHECK(cuEventDestroy(started));
      CHECK(cuEventDestroy(done));
    }
  for (int d = 0; d < n; ++d) {
    CHECK(cuCtxSetCurrent(gpus[d].ctx));
    CHECK(cuCtxSynchronize());
    CHECK(cuMemFree(gpus[d].src));
    CHECK(cuMemFree(gpus[d].dst));
    CHECK(cuStreamDestroy(gpus[d].stream));
    CHECK(cuDevicePrimaryCtxRelease(d));
  }
  return 0;
}
