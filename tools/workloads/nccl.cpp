// mcsim_workload_nccl: NCCL's NVLS setup and teardown, one thread per device (8 ranks), written
// after the description in shared/reference/clients.md.
//
// Rank 0 probes FABRIC handles (create, export; dropped on failure), creates the multicast object
// and exports a POSIX descriptor; every other rank imports it. Every rank adds its device, makes,
// maps and grants its own memory (to itself and to the previous rank, which copies into it), and
// fills it. A barrier (which, as in NCCL, carries no word of who failed), then every rank binds,
// maps the multicast range, and copies the start of its buffer into the next rank's (a ring).
// Each rank checks its buffer. Then, with --allreduce (the sample trace of traces/samples), when
// all eight ranks are bound and mapped, a multimem all-reduce over the multicast mapping: every
// rank loads mcsim's kernel library (even ranks with cuModuleLoadData, odd ranks with
// cuLibraryLoadData), and once every rank has its kernels, each launches mcsim_barrier and then
// mcsim_allreduce_oneshot (even ranks with cuLaunchKernel and a CUfunction, odd ranks with
// cuLaunchKernelEx and the library's CUkernel), waits for them, and checks the sums. Then
// everything is torn down.
//
// The all-reduce is off by default, so `mcsim campaign` runs the setup alone: a rank whose launch
// fails (a fault plan's switch going down between two ranks' launches) leaves the kernels the
// others launched waiting at their barrier, and mcsim's hang detection does not cover stream
// waits on kernels, so such a run would never end (docs/traces.md, "Sample traces").
//
// Failures: a rank whose call fails before the bind cleans up and leaves without a word (a peer
// that never joins: the others' binds then block until mcsim reports the hang). A rank whose call
// fails from the bind on cleans up and raises the abort flag; the others see it before their next
// call and clean up too (NCCL's abort flag).
#include <unistd.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "harness.h"
#include "mcsim/kernels.h"

namespace {

using namespace mcsim::workload;

constexpr int kRanks = 8;
constexpr size_t kWindowWords = 8192;  // the part of each buffer that is checked (32 KiB)
constexpr size_t kCopyWords = 1024;    // the ring copy: the first 4 KiB of a rank's buffer ...
constexpr size_t kInboxWord = 4096;    // ... to this word of the next rank's
constexpr size_t kMemsetWord = 6144;   // a memset covers words [6144, 7168)
constexpr size_t kMemsetWords = 1024;
// The all-reduce: words [0, kReduceWords) of every rank's buffer (its own pattern), summed (u32)
// into words [kSumWord, +kReduceWords) of each; the two kernels' signal words, zero until then.
constexpr size_t kReduceWords = 2048;
constexpr size_t kSumWord = 16384;
constexpr size_t kBarrierSignalWord = 32768;  // mcsim_barrier's (one block)
constexpr size_t kReduceSignalWord = 32772;   // mcsim_allreduce_oneshot's (kReduceBlocks blocks)
constexpr unsigned kReduceBlocks = 2;

struct Shared {
  Harness h{kRanks};
  int fd = -1;          // rank 0's exported descriptor, closed by main after every rank is done
  bool abort = false;   // raised by a rank that failed from the bind on
  size_t size = 0;      // the multicast object's size, and every rank's buffer's
  std::array<CUdeviceptr, kRanks> buffer{};  // each rank's buffer while it is mapped and granted
  std::array<std::vector<uint32_t>, kRanks> expected;  // what each buffer's window must hold
  bool allreduce = false;  // --allreduce
  int mapped = 0;        // ranks bound and mapped to the multicast range
  int withKernels = 0;   // ranks holding both kernels of the all-reduce
  // Decisions every rank must share, taken by the first rank to pass the barrier before them.
  bool reduceDecided = false, reduceGo = false;
  bool launchDecided = false, launchGo = false;
};

// What one rank holds besides its context (the harness's Rank), so that it can clean up from any point.
struct Held {
  CUmemGenericAllocationHandle mc = 0, mem = 0;
  CUdeviceptr ucVa = 0, mcVa = 0;
  bool ucMapped = false, mcMapped = false, bound = false;
  CUmodule module = nullptr;    // even ranks: the kernel library as a module
  CUlibrary library = nullptr;  // odd ranks: the kernel library as a library
};

void cleanup(Shared& s, int r, Held& k) {
  Harness& h = s.h;
  s.buffer[size_t(r)] = 0;
  if (k.module != nullptr) h.teardown(r, "cuModuleUnload", [&] { return cuModuleUnload(k.module); });
  if (k.library != nullptr) h.teardown(r, "cuLibraryUnload", [&] { return cuLibraryUnload(k.library); });
  if (k.bound) h.teardown(r, "cuMulticastUnbind", [&] { return cuMulticastUnbind(k.mc, r, 0, s.size); });
  if (k.mc != 0) h.teardown(r, "cuMemRelease", [&] { return cuMemRelease(k.mc); });
  if (k.mcMapped) h.teardown(r, "cuMemUnmap", [&] { return cuMemUnmap(k.mcVa, s.size); });
  if (k.mcVa != 0) h.teardown(r, "cuMemAddressFree", [&] { return cuMemAddressFree(k.mcVa, s.size); });
  if (k.ucMapped) h.teardown(r, "cuMemUnmap", [&] { return cuMemUnmap(k.ucVa, s.size); });
  // MCSIM_WORKLOAD_LEAK=1: rank 3 "forgets" its memory (the campaign must catch it).
  if (k.mem != 0 && !(Harness::plantLeak() && r == 3)) {
    h.teardown(r, "cuMemRelease", [&] { return cuMemRelease(k.mem); });
  }
  if (k.ucVa != 0) h.teardown(r, "cuMemAddressFree", [&] { return cuMemAddressFree(k.ucVa, s.size); });
  k = Held{};
}

// NCCL probes FABRIC handles first and drops them on failure (no IMEX channel: NOT_PERMITTED).
void probeFabric(Harness& h, int r, size_t size) {
  CUmemAllocationProp prop = deviceProp(r, CU_MEM_HANDLE_TYPE_FABRIC);
  CUmemGenericAllocationHandle probe = 0;
  if (h.call(r, "cuMemCreate", [&] { return cuMemCreate(&probe, size, &prop, 0); }) != CUDA_SUCCESS) return;
  CUmemFabricHandle fh;
  h.call(r, "cuMemExportToShareableHandle",
         [&] { return cuMemExportToShareableHandle(&fh, probe, CU_MEM_HANDLE_TYPE_FABRIC, 0); });
  h.teardown(r, "cuMemRelease", [&] { return cuMemRelease(probe); });
}

// The multimem all-reduce (NCCL's NVLS all-reduce, one-shot form) over the multicast mapping;
// every rank still here is bound and mapped. False when the rank must leave with the abort flag.
bool allReduce(Shared& s, Rank& me, int r, Held& k) {
  Harness& h = s.h;
  if (!s.reduceDecided) {
    s.reduceDecided = true;
    s.reduceGo = s.allreduce && s.mapped == kRanks && !s.abort;
  }
  if (!s.reduceGo) return true;
  // The kernels: a module of the library image on even ranks, a library on odd ones.
  void* barrier = nullptr;
  void* oneshot = nullptr;
  bool loaded = false;
  if (r % 2 == 0) {
    CUfunction fb = nullptr, fo = nullptr;
    loaded = ok(h.call(r, "cuModuleLoadData", [&] { return cuModuleLoadData(&k.module, mcsim_kernel_image); })) &&
             ok(h.call(r, "cuModuleGetFunction", [&] { return cuModuleGetFunction(&fb, k.module, MCSIM_KERNEL_BARRIER); })) &&
             ok(h.call(r, "cuModuleGetFunction",
                       [&] { return cuModuleGetFunction(&fo, k.module, MCSIM_KERNEL_ALLREDUCE_ONESHOT); }));
    barrier = fb;
    oneshot = fo;
  } else {
    CUkernel kb = nullptr, ko = nullptr;
    loaded = ok(h.call(r, "cuLibraryLoadData", [&] {
               return cuLibraryLoadData(&k.library, mcsim_kernel_image, nullptr, nullptr, 0, nullptr, nullptr, 0);
             })) &&
             ok(h.call(r, "cuLibraryGetKernel", [&] { return cuLibraryGetKernel(&kb, k.library, MCSIM_KERNEL_BARRIER); })) &&
             ok(h.call(r, "cuLibraryGetKernel",
                       [&] { return cuLibraryGetKernel(&ko, k.library, MCSIM_KERNEL_ALLREDUCE_ONESHOT); }));
    barrier = kb;
    oneshot = ko;
  }
  if (loaded) ++s.withKernels;
  h.barrier(r);  // every rank has its kernels, or the all-reduce is off for all
  if (!s.launchDecided) {
    s.launchDecided = true;
    s.launchGo = s.withKernels == kRanks && !s.abort;
  }
  if (!s.launchGo) return true;

  CUdeviceptr mcSig = k.mcVa + kBarrierSignalWord * 4, sig = k.ucVa + kBarrierSignalWord * 4;
  CUdeviceptr mcBuf = k.mcVa, out = k.ucVa + kSumWord * 4;
  CUdeviceptr mcReduceSig = k.mcVa + kReduceSignalWord * 4, reduceSig = k.ucVa + kReduceSignalWord * 4;
  uint32_t world = kRanks, epoch = 1, dtype = MCSIM_DTYPE_U32;
  uint64_t count = kReduceWords;
  void* barrierParams[] = {&mcSig, &sig, &world, &epoch};
  void* reduceParams[] = {&mcBuf, &out, &count, &dtype, &mcReduceSig, &reduceSig, &world, &epoch};
  // Once a rank has launched, its kernels wait at the barrier for every other rank's: a rank whose
  // launch fails leaves the others' kernels waiting until mcsim reports the hang.
  if (r % 2 == 0) {
    if (!ok(me.team("cuLaunchKernel", [&] {
          return cuLaunchKernel(static_cast<CUfunction>(barrier), 1, 1, 1, 32, 1, 1, 0, nullptr, barrierParams, nullptr);
        })) ||
        !ok(me.team("cuLaunchKernel", [&] {
          return cuLaunchKernel(static_cast<CUfunction>(oneshot), kReduceBlocks, 1, 1, 256, 1, 1, 0, nullptr, reduceParams,
                                nullptr);
        }))) {
      return false;
    }
  } else {
    CUlaunchConfig config{};
    config.gridDimX = config.gridDimY = config.gridDimZ = 1;
    config.blockDimX = 32;
    config.blockDimY = config.blockDimZ = 1;
    if (!ok(me.team("cuLaunchKernelEx",
                    [&] { return cuLaunchKernelEx(&config, static_cast<CUfunction>(barrier), barrierParams, nullptr); }))) {
      return false;
    }
    config.gridDimX = kReduceBlocks;
    config.blockDimX = 256;
    if (!ok(me.team("cuLaunchKernelEx",
                    [&] { return cuLaunchKernelEx(&config, static_cast<CUfunction>(oneshot), reduceParams, nullptr); }))) {
      return false;
    }
  }
  if (!ok(me.team("cuCtxSynchronize", [&] { return cuCtxSynchronize(); }))) return false;
  std::vector<uint32_t> sums(kReduceWords, 0);
  for (size_t i = 0; i < kReduceWords; ++i) {
    for (int q = 0; q < kRanks; ++q) sums[i] += s.expected[size_t(q)][i];
  }
  h.verify(r, out, sums, "rank " + std::to_string(r) + "'s all-reduce result");
  return true;
}

void rank(Shared& s, int r) {
  Harness& h = s.h;
  Held k;
  Rank me(h, r, &s.abort, [&] { cleanup(s, r, k); });
  if (!me.enterContext()) return me.leave(false);
  int supported = 0;
  if (!ok(h.call(r, "cuDeviceGetAttribute",
                 [&] { return cuDeviceGetAttribute(&supported, CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED, r); })) ||
      supported == 0) {
    return me.leave(false);
  }
  CUmulticastObjectProp mp = multicastProp(kRanks, 0, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  size_t gran = 0;
  if (!ok(h.call(r, "cuMulticastGetGranularity",
                 [&] { return cuMulticastGetGranularity(&gran, &mp, CU_MULTICAST_GRANULARITY_RECOMMENDED); }))) {
    return me.leave(false);
  }
  mp.size = gran;
  if (r == 0) {
    s.size = gran;
    probeFabric(h, r, gran);
    if (!ok(h.call(r, "cuMulticastCreate", [&] { return cuMulticastCreate(&k.mc, &mp); }))) return me.leave(false);
    int fd = -1;
    if (!ok(h.call(r, "cuMemExportToShareableHandle", [&] {
          return cuMemExportToShareableHandle(&fd, k.mc, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
        }))) {
      return me.leave(false);
    }
    s.fd = fd;
  }
  h.barrier(r);  // the descriptor is out (or rank 0 is gone)

  if (r != 0) {
    if (s.fd < 0 || s.size != gran) return me.leave(false);
    if (!ok(me.importPosix(s.fd, &k.mc))) return me.leave(false);
  }
  if (!ok(h.call(r, "cuMulticastAddDevice", [&] { return cuMulticastAddDevice(k.mc, r); }))) return me.leave(false);
  CUmemAllocationProp prop = deviceProp(r, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  size_t memGran = 0;
  if (!ok(h.call(r, "cuMemGetAllocationGranularity", [&] {
        return cuMemGetAllocationGranularity(&memGran, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED);
      }))) {
    return me.leave(false);
  }
  if (!ok(h.call(r, "cuMemAddressReserve", [&] { return cuMemAddressReserve(&k.ucVa, s.size, memGran, 0, 0); }))) {
    return me.leave(false);
  }
  if (!ok(h.call(r, "cuMemCreate", [&] { return cuMemCreate(&k.mem, s.size, &prop, 0); }))) return me.leave(false);
  if (!ok(h.call(r, "cuMemMap", [&] { return cuMemMap(k.ucVa, s.size, 0, k.mem, 0); }))) return me.leave(false);
  k.ucMapped = true;
  // Granted to this rank and to the previous one, which copies into it.
  const CUmemAccessDesc access[2] = {readWrite(r), readWrite((r + kRanks - 1) % kRanks)};
  if (!ok(h.call(r, "cuMemSetAccess", [&] { return cuMemSetAccess(k.ucVa, s.size, access, 2); }))) return me.leave(false);
  std::vector<uint32_t>& mine = s.expected[size_t(r)];
  mine.assign(kWindowWords, 0);  // memory nobody wrote reads as zeros
  std::vector<uint32_t> pattern(kWindowWords);
  for (size_t i = 0; i < kWindowWords; ++i) pattern[i] = patternWord(r, i);
  if (ok(h.call(r, "cuMemcpyHtoD", [&] { return cuMemcpyHtoD(k.ucVa, pattern.data(), pattern.size() * 4); }))) {
    mine = pattern;
  }
  const uint32_t fill = 0xF1110000u | uint32_t(r);
  if (ok(h.call(r, "cuMemsetD32",
                [&] { return cuMemsetD32(k.ucVa + kMemsetWord * 4, fill, kMemsetWords); }))) {
    for (size_t i = 0; i < kMemsetWords; ++i) mine[kMemsetWord + i] = fill;
  }
  s.buffer[size_t(r)] = k.ucVa;
  h.barrier(r);  // NCCL's barrier before the bind

  if (s.abort) return me.leave(false);
  if (!ok(me.team("cuMulticastBindMem", [&] { return cuMulticastBindMem(k.mc, 0, k.mem, 0, s.size, 0); }))) {
    return me.leave(true);
  }
  k.bound = true;
  if (s.abort) return me.leave(false);
  if (!ok(me.team("cuMemAddressReserve", [&] { return cuMemAddressReserve(&k.mcVa, s.size, gran, 0, 0); }))) {
    return me.leave(true);
  }
  if (s.abort) return me.leave(false);
  if (!ok(me.team("cuMemMap", [&] { return cuMemMap(k.mcVa, s.size, 0, k.mc, 0); }))) return me.leave(true);
  k.mcMapped = true;
  if (s.abort) return me.leave(false);
  const CUmemAccessDesc self = readWrite(r);
  if (!ok(me.team("cuMemSetAccess", [&] { return cuMemSetAccess(k.mcVa, s.size, &self, 1); }))) return me.leave(true);
  ++s.mapped;
  h.barrier(r);  // everyone still here is bound and mapped; the buffers stay until the next barrier

  // The ring: the start of this rank's buffer into the next rank's inbox (over NVLink: a fault
  // plan that takes a link down fails it, and then nothing may have been written).
  const int next = (r + 1) % kRanks;
  if (!s.abort && s.buffer[size_t(next)] != 0) {
    const CUdeviceptr to = s.buffer[size_t(next)] + kInboxWord * 4;
    if (ok(h.call(r, "cuMemcpyDtoD", [&] { return cuMemcpyDtoD(to, k.ucVa, kCopyWords * 4); }))) {
      for (size_t i = 0; i < kCopyWords; ++i) s.expected[size_t(next)][kInboxWord + i] = mine[i];
    }
  }
  h.barrier(r);
  h.verify(r, k.ucVa, mine, "rank " + std::to_string(r) + "'s buffer");
  h.barrier(r);
  if (!allReduce(s, me, r, k)) return me.leave(true);
  h.barrier(r);  // nobody tears down before every rank has checked
  me.leave(false);
}

}  // namespace

int main(int argc, char** argv) {
  if (wantsPoints(argc, argv)) {
    return printPoints({"cuDevicePrimaryCtxRetain", "cuCtxSetCurrent", "cuDeviceGetAttribute",
                        "cuMulticastGetGranularity", "cuMemCreate", "cuMemExportToShareableHandle",
                        "cuMulticastCreate", "cuMemImportFromShareableHandle", "cuMulticastAddDevice",
                        "cuMemGetAllocationGranularity", "cuMemAddressReserve", "cuMemMap", "cuMemSetAccess",
                        "cuMemcpyHtoD", "cuMemsetD32", "cuMulticastBindMem", "cuMemcpyDtoD", "cuMemcpyDtoH",
                        "cuMulticastUnbind", "cuMemRelease", "cuMemUnmap", "cuMemAddressFree",
                        "cuDevicePrimaryCtxRelease"});
  }
  Shared s;
  s.allreduce = argc > 1 && std::string(argv[1]) == "--allreduce";
  if (s.h.begin()) {
    s.h.runThreads([&](int r) { rank(s, r); });
    if (s.fd >= 0) ::close(s.fd);
  }
  return s.h.end();
}
