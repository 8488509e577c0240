// mcsim_workload_vmm: one thread drives four devices through the virtual memory management calls
// and copies, then sets up and tears down a multicast team over them the way ThunderKittens does
// (one process, every device).
//
//   - per device: cuMemCreate (POSIX descriptor shareable), reserve, map, grant every device;
//   - fill from the host, memset, peer copies around the ring (cuMemcpyPeer) and across it
//     (cuMemcpyDtoD); a legacy cuMemAlloc buffer and a pinned host buffer as copy partners; a
//     stream-ordered allocation;
//   - export one allocation as a descriptor, import it, map it at a second address and read it
//     there; probe FABRIC handles (dropped on failure, as NCCL does);
//   - a multicast object of the four devices: add each, bind each buffer (BindMem and BindAddr
//     in turn), map the multicast range, unbind, unmap, release;
//   - check every buffer against what the successful calls wrote, and tear everything down.
// A step whose call fails is skipped (with what depends on it); nothing else stops the program.
#include <unistd.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "harness.h"

namespace {

using namespace mcsim::workload;

constexpr int kDevices = 4;
constexpr size_t kWindowWords = 12288;  // the checked part of each buffer (48 KiB)
constexpr size_t kStripe = 1024;       // copies move 4 KiB stripes
constexpr int T = 0;                   // the only thread

struct Buffer {
  CUmemGenericAllocationHandle handle = 0;
  CUdeviceptr va = 0;
  bool mapped = false, granted = false;
  std::vector<uint32_t> expected = std::vector<uint32_t>(kWindowWords, 0);
};

struct Workload {
  Harness h{1};
  std::array<CUcontext, kDevices> ctx{};
  std::array<bool, kDevices> retained{};
  bool current = false;
  size_t size = 0;
  std::array<Buffer, kDevices> buf;

  bool ok(CUresult r) const { return r == CUDA_SUCCESS; }
  CUresult call(const char* name, const std::function<CUresult()>& fn) { return h.call(T, name, fn); }
  CUresult teardown(const char* name, const std::function<CUresult()>& fn) { return h.teardown(T, name, fn); }

  bool usable(int d) const { return buf[size_t(d)].granted; }

  void setUp() {
    for (int d = 0; d < kDevices; ++d) {
      if (ok(call("cuDevicePrimaryCtxRetain", [&] { return cuDevicePrimaryCtxRetain(&ctx[size_t(d)], d); }))) {
        retained[size_t(d)] = true;
      }
    }
    if (!retained[0]) return;
    if (!ok(call("cuCtxSetCurrent", [&] { return cuCtxSetCurrent(ctx[0]); }))) return;
    current = true;
    CUmemAllocationProp prop = deviceProp(0, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    if (!ok(call("cuMemGetAllocationGranularity", [&] {
          return cuMemGetAllocationGranularity(&size, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
        }))) {
      return;
    }
    CUmemAccessDesc all[kDevices];
    for (int d = 0; d < kDevices; ++d) all[d] = readWrite(d);
    for (int d = 0; d < kDevices; ++d) {
      Buffer& b = buf[size_t(d)];
      prop = deviceProp(d, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
      if (!ok(call("cuMemCreate", [&] { return cuMemCreate(&b.handle, size, &prop, 0); }))) continue;
      if (!ok(call("cuMemAddressReserve", [&] { return cuMemAddressReserve(&b.va, size, 0, 0, 0); }))) continue;
      if (!ok(call("cuMemMap", [&] { return cuMemMap(b.va, size, 0, b.handle, 0); }))) continue;
      b.mapped = true;
      b.granted = ok(call("cuMemSetAccess", [&] { return cuMemSetAccess(b.va, size, all, kDevices); }));
    }
  }

  void fill() {
    for (int d = 0; d < kDevices; ++d) {
      if (!usable(d)) continue;
      Buffer& b = buf[size_t(d)];
      std::vector<uint32_t> pattern(kWindowWords);
      for (size_t i = 0; i < kWindowWords; ++i) pattern[i] = patternWord(d, i);
      if (ok(call("cuMemcpyHtoD", [&] { return cuMemcpyHtoD(b.va, pattern.data(), pattern.size() * 4); }))) {
        b.expected = pattern;
      }
      const uint32_t v = 0xF3330000u | uint32_t(d);
      if (ok(call("cuMemsetD32", [&] { return cuMemsetD32(b.va + 7 * kStripe * 4, v, kStripe); }))) {
        for (size_t i = 0; i < kStripe; ++i) b.expected[7 * kStripe + i] = v;
      }
    }
  }

  void copyStripe(int from, size_t fromStripe, int to, size_t toStripe) {
    for (size_t i = 0; i < kStripe; ++i) {
      buf[size_t(to)].expected[toStripe * kStripe + i] = buf[size_t(from)].expected[fromStripe * kStripe + i];
    }
  }

  // Ring peer copies (each device's stripe 0 into the next one's stripe 1) and copies across the
  // ring (stripe 2 into the device two on's stripe 3). Over NVLink: a link fault fails them.
  void peerCopies() {
    for (int d = 0; d < kDevices; ++d) {
      const int next = (d + 1) % kDevices;
      if (!usable(d) || !usable(next) || !retained[size_t(next)]) continue;
      const CUdeviceptr dst = buf[size_t(next)].va + 1 * kStripe * 4, src = buf[size_t(d)].va;
      if (ok(call("cuMemcpyPeer", [&] {
            return cuMemcpyPeer(dst, ctx[size_t(next)], src, ctx[size_t(d)], kStripe * 4);
          }))) {
        copyStripe(d, 0, next, 1);
      }
    }
    for (int d = 0; d < kDevices; ++d) {
      const int across = (d + 2) % kDevices;
      if (!usable(d) || !usable(across)) continue;
      const CUdeviceptr dst = buf[size_t(across)].va + 3 * kStripe * 4, src = buf[size_t(d)].va + 2 * kStripe * 4;
      if (ok(call("cuMemcpyDtoD", [&] { return cuMemcpyDtoD(dst, src, kStripe * 4); }))) copyStripe(d, 2, across, 3);
    }
  }

  // Legacy allocations and pinned host buffers as copy partners (twice each, so that rules on
  // these calls have more than one call to fire at).
  void legacyAndHost() {
    for (size_t round = 0; round < 2; ++round) {
      CUdeviceptr legacy = 0;
      if (ok(call("cuMemAlloc", [&] { return cuMemAlloc(&legacy, kStripe * 4); }))) {
        const CUdeviceptr back = buf[0].va + (4 + round) * kStripe * 4;
        if (usable(0) && ok(call("cuMemcpyDtoD", [&] { return cuMemcpyDtoD(legacy, buf[0].va, kStripe * 4); })) &&
            ok(call("cuMemcpyDtoD", [&] { return cuMemcpyDtoD(back, legacy, kStripe * 4); }))) {
          copyStripe(0, 0, 0, 4 + round);
        }
        teardown("cuMemFree", [&] { return cuMemFree(legacy); });
      }
      void* host = nullptr;
      if (ok(call("cuMemAllocHost", [&] { return cuMemAllocHost(&host, kStripe * 4); }))) {
        const CUdeviceptr back = buf[0].va + (8 + round) * kStripe * 4;
        if (usable(0) &&
            ok(call("cuMemcpyDtoH", [&] { return cuMemcpyDtoH(host, buf[0].va + 2 * kStripe * 4, kStripe * 4); })) &&
            ok(call("cuMemcpyHtoD", [&] { return cuMemcpyHtoD(back, host, kStripe * 4); }))) {
          copyStripe(0, 2, 0, 8 + round);
        }
        teardown("cuMemFreeHost", [&] { return cuMemFreeHost(host); });
      }
      CUdeviceptr async = 0;
      if (ok(call("cuMemAllocAsync", [&] { return cuMemAllocAsync(&async, kStripe * 4, nullptr); }))) {
        teardown("cuMemFreeAsync", [&] { return cuMemFreeAsync(async, nullptr); });
        teardown("cuStreamSynchronize", [&] { return cuStreamSynchronize(nullptr); });
      }
    }
  }

  // Export device 1's allocation, import it, map it at a second address and read it there.
  void shareAndAlias() {
    if (!usable(1)) return;
    int fd = -1;
    if (!ok(call("cuMemExportToShareableHandle", [&] {
          return cuMemExportToShareableHandle(&fd, buf[1].handle, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
        }))) {
      return;
    }
    CUmemGenericAllocationHandle imported = 0;
    void* arg = reinterpret_cast<void*>(static_cast<intptr_t>(fd));
    if (ok(call("cuMemImportFromShareableHandle", [&] {
          return cuMemImportFromShareableHandle(&imported, arg, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
        }))) {
      CUdeviceptr alias = 0;
      if (ok(call("cuMemAddressReserve", [&] { return cuMemAddressReserve(&alias, size, 0, 0, 0); }))) {
        if (ok(call("cuMemMap", [&] { return cuMemMap(alias, size, 0, imported, 0); }))) {
          const CUmemAccessDesc a = readWrite(0);
          if (ok(call("cuMemSetAccess", [&] { return cuMemSetAccess(alias, size, &a, 1); }))) {
            h.verify(T, alias, buf[1].expected, "device 1's buffer read through an imported handle");
          }
          teardown("cuMemUnmap", [&] { return cuMemUnmap(alias, size); });
        }
        teardown("cuMemAddressFree", [&] { return cuMemAddressFree(alias, size); });
      }
      teardown("cuMemRelease", [&] { return cuMemRelease(imported); });
    }
    ::close(fd);
  }

  // FABRIC handles work only with an IMEX channel (an `imex` fault rule can bring one).
  void probeFabric() {
    if (!current) return;
    CUmemAllocationProp prop = deviceProp(0, CU_MEM_HANDLE_TYPE_FABRIC);
    CUmemGenericAllocationHandle h0 = 0;
    if (!ok(call("cuMemCreate", [&] { return cuMemCreate(&h0, size, &prop, 0); }))) return;
    CUmemFabricHandle fh;
    if (ok(call("cuMemExportToShareableHandle",
                [&] { return cuMemExportToShareableHandle(&fh, h0, CU_MEM_HANDLE_TYPE_FABRIC, 0); }))) {
      CUmemGenericAllocationHandle h1 = 0;
      if (ok(call("cuMemImportFromShareableHandle",
                  [&] { return cuMemImportFromShareableHandle(&h1, &fh, CU_MEM_HANDLE_TYPE_FABRIC); }))) {
        teardown("cuMemRelease", [&] { return cuMemRelease(h1); });
      }
    }
    teardown("cuMemRelease", [&] { return cuMemRelease(h0); });
  }

  // ThunderKittens: one thread, every device. The buffers that are usable are bound; a device
  // whose buffer is not still joins the team.
  void multicast() {
    // The buffers' shareable handle types, as mscclpp checks before it binds.
    for (int d = 0; d < kDevices; ++d) {
      unsigned long long allowed = 0;
      if (usable(d)) {
        call("cuPointerGetAttribute", [&] {
          return cuPointerGetAttribute(&allowed, CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES, buf[size_t(d)].va);
        });
      }
    }
    CUmulticastObjectProp mp = multicastProp(kDevices, 0, 0);
    size_t gran = 0;
    if (!ok(call("cuMulticastGetGranularity",
                 [&] { return cuMulticastGetGranularity(&gran, &mp, CU_MULTICAST_GRANULARITY_MINIMUM); })) ||
        gran == 0 || size % gran != 0) {
      return;
    }
    mp.size = size;
    CUmemGenericAllocationHandle mc = 0;
    if (!ok(call("cuMulticastCreate", [&] { return cuMulticastCreate(&mc, &mp); }))) {
      // ThunderKittens does not check cuMulticastCreate's result: it goes on with the handle it
      // has (0), which every later call must refuse, changing nothing.
      call("cuMulticastAddDevice", [&] { return cuMulticastAddDevice(mc, 0); });
      return;
    }
    bool team = true;
    for (int d = 0; d < kDevices && team; ++d) {
      team = ok(call("cuMulticastAddDevice", [&] { return cuMulticastAddDevice(mc, d); }));
    }
    std::array<bool, kDevices> bound{};
    if (team) {
      for (int d = 0; d < kDevices; ++d) {
        if (!usable(d)) continue;
        if (d % 2 == 0) {
          bound[size_t(d)] = ok(call("cuMulticastBindMem", [&] { return cuMulticastBindMem(mc, 0, buf[size_t(d)].handle, 0, size, 0); }));
        } else {
          bound[size_t(d)] = ok(call("cuMulticastBindAddr", [&] { return cuMulticastBindAddr(mc, 0, buf[size_t(d)].va, size, 0); }));
        }
      }
      CUdeviceptr mcVa = 0;
      if (ok(call("cuMemAddressReserve", [&] { return cuMemAddressReserve(&mcVa, size, gran, 0, 0); }))) {
        if (ok(call("cuMemMap", [&] { return cuMemMap(mcVa, size, 0, mc, 0); }))) {
          CUmemAccessDesc all[kDevices];
          for (int d = 0; d < kDevices; ++d) all[d] = readWrite(d);
          call("cuMemSetAccess", [&] { return cuMemSetAccess(mcVa, size, all, kDevices); });
          teardown("cuMemUnmap", [&] { return cuMemUnmap(mcVa, size); });
        }
        teardown("cuMemAddressFree", [&] { return cuMemAddressFree(mcVa, size); });
      }
      for (int d = 0; d < kDevices; ++d) {
        if (bound[size_t(d)]) teardown("cuMulticastUnbind", [&] { return cuMulticastUnbind(mc, d, 0, size); });
      }
    }
    teardown("cuMemRelease", [&] { return cuMemRelease(mc); });
  }

  void checkAndTearDown() {
    for (int d = 0; d < kDevices; ++d) {
      Buffer& b = buf[size_t(d)];
      if (b.granted) h.verify(T, b.va, b.expected, "device " + std::to_string(d) + "'s buffer");
      if (b.mapped) teardown("cuMemUnmap", [&] { return cuMemUnmap(b.va, size); });
      if (b.va != 0) teardown("cuMemAddressFree", [&] { return cuMemAddressFree(b.va, size); });
      // MCSIM_WORKLOAD_LEAK=1: device 2's memory is "forgotten" (the campaign must catch it).
      if (b.handle != 0 && !(Harness::plantLeak() && d == 2)) {
        teardown("cuMemRelease", [&] { return cuMemRelease(b.handle); });
      }
    }
    // A careless program releases twice and frees twice: refused, and nothing changes.
    if (buf[0].handle != 0) call("cuMemRelease", [&] { return cuMemRelease(buf[0].handle); });
    if (buf[0].va != 0) call("cuMemAddressFree", [&] { return cuMemAddressFree(buf[0].va, size); });
    if (current) teardown("cuCtxSetCurrent", [&] { return cuCtxSetCurrent(nullptr); });
    for (int d = 0; d < kDevices; ++d) {
      if (retained[size_t(d)]) teardown("cuDevicePrimaryCtxRelease", [&] { return cuDevicePrimaryCtxRelease(d); });
    }
  }

  void run() {
    h.start(T);
    setUp();
    if (current && size != 0) {
      fill();
      peerCopies();
      legacyAndHost();
      shareAndAlias();
      probeFabric();
      multicast();
    }
    checkAndTearDown();
    h.finish(T);
  }
};

}  // namespace

int main(int argc, char** argv) {
  if (wantsPoints(argc, argv)) {
    return printPoints({"cuDevicePrimaryCtxRetain", "cuCtxSetCurrent", "cuMemGetAllocationGranularity",
                        "cuMemCreate", "cuMemAddressReserve", "cuMemMap", "cuMemSetAccess", "cuMemcpyHtoD",
                        "cuMemsetD32", "cuMemcpyPeer", "cuMemcpyDtoD", "cuMemAlloc", "cuMemFree", "cuMemAllocHost",
                        "cuMemcpyDtoH", "cuMemFreeHost", "cuMemAllocAsync", "cuMemFreeAsync", "cuStreamSynchronize",
                        "cuMemExportToShareableHandle", "cuMemImportFromShareableHandle", "cuMemRelease",
                        "cuMemUnmap", "cuMemAddressFree", "cuPointerGetAttribute", "cuMulticastGetGranularity",
                        "cuMulticastCreate", "cuMulticastAddDevice", "cuMulticastBindMem", "cuMulticastBindAddr",
                        "cuMulticastUnbind", "cuDevicePrimaryCtxRelease"});
  }
  Workload w;
  if (w.h.begin()) w.run();
  return w.h.end();
}
