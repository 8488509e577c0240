// mcsim_workload_pytorch: PyTorch symmetric memory's multicast setup, one thread per device
// (8 ranks), written after the description in shared/reference/clients.md.
//
// Rank 0 creates the object and exports a POSIX descriptor; every rank, rank 0 included, imports
// it, adds its device, makes its memory and binds it (binds block until the last device is
// added); an all-gather of success; rank 0 then releases its creation reference (the object lives
// on in the importers' handles); every rank maps the multicast range, and maps, fills and checks
// its own memory; teardown.
//
// Failures: a rank whose call fails before its bind cleans up and leaves without a word (the
// others' binds then block until mcsim reports the hang); from the bind on, a failing rank raises
// the abort flag, which the others check before each call; the all-gather tells everyone whether
// all ranks bound.
#include <unistd.h>

#include <array>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "harness.h"

namespace {

using namespace mcsim::workload;

constexpr int kRanks = 8;
constexpr size_t kSize = 4u << 20;     // two minimum granules of the H100 presets
constexpr size_t kWindowWords = 4096;  // the part of each buffer that is checked

struct Shared {
  Harness h{kRanks};
  int fd = -1;  // closed by main after every rank is done
  bool abort = false;
  std::array<bool, kRanks> bound{};  // the all-gather of success
};

struct Rank {
  int r = 0;
  bool ctxRetained = false, ctxCurrent = false;
  CUmemGenericAllocationHandle creation = 0;  // rank 0's own reference from cuMulticastCreate
  CUmemGenericAllocationHandle mc = 0, mem = 0;
  CUdeviceptr mcVa = 0, ucVa = 0;
  bool mcMapped = false, ucMapped = false, bound = false;
};

void cleanup(Shared& s, Rank& k) {
  Harness& h = s.h;
  const int r = k.r;
  if (k.mcMapped) h.teardown(r, "cuMemUnmap", [&] { return cuMemUnmap(k.mcVa, kSize); });
  if (k.mcVa != 0) h.teardown(r, "cuMemAddressFree", [&] { return cuMemAddressFree(k.mcVa, kSize); });
  if (k.bound) h.teardown(r, "cuMulticastUnbind", [&] { return cuMulticastUnbind(k.mc, r, 0, kSize); });
  if (k.mc != 0) h.teardown(r, "cuMemRelease", [&] { return cuMemRelease(k.mc); });
  if (k.creation != 0) h.teardown(r, "cuMemRelease", [&] { return cuMemRelease(k.creation); });
  if (k.ucMapped) h.teardown(r, "cuMemUnmap", [&] { return cuMemUnmap(k.ucVa, kSize); });
  if (k.ucVa != 0) h.teardown(r, "cuMemAddressFree", [&] { return cuMemAddressFree(k.ucVa, kSize); });
  // MCSIM_WORKLOAD_LEAK=1: rank 5 "forgets" its memory (the campaign must catch it).
  if (k.mem != 0 && !(Harness::plantLeak() && r == 5)) {
    h.teardown(r, "cuMemRelease", [&] { return cuMemRelease(k.mem); });
  }
  if (k.ctxCurrent) h.teardown(r, "cuCtxSetCurrent", [&] { return cuCtxSetCurrent(nullptr); });
  if (k.ctxRetained) h.teardown(r, "cuDevicePrimaryCtxRelease", [&] { return cuDevicePrimaryCtxRelease(r); });
  k = Rank{r};
}

void rank(Shared& s, int r) {
  Harness& h = s.h;
  h.start(r);
  Rank k;
  k.r = r;
  auto ok = [](CUresult res) { return res == CUDA_SUCCESS; };
  auto leave = [&](bool raiseAbort) {
    if (raiseAbort) s.abort = true;
    cleanup(s, k);
    h.finish(r);
  };
  // From the bind on, a failing call raises the abort flag at once, in the rank's turn, so that
  // the ranks after it see the flag before their own next call.
  auto team = [&](const char* name, const std::function<CUresult()>& fn) {
    return h.call(r, name, [&] {
      const CUresult res = fn();
      if (res != CUDA_SUCCESS) s.abort = true;
      return res;
    });
  };

  CUcontext ctx = nullptr;
  if (!ok(h.call(r, "cuDevicePrimaryCtxRetain", [&] { return cuDevicePrimaryCtxRetain(&ctx, r); }))) return leave(false);
  k.ctxRetained = true;
  if (!ok(h.call(r, "cuCtxSetCurrent", [&] { return cuCtxSetCurrent(ctx); }))) return leave(false);
  k.ctxCurrent = true;
  if (r == 0) {
    CUmulticastObjectProp mp = multicastProp(kRanks, kSize, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    if (!ok(h.call(r, "cuMulticastCreate", [&] { return cuMulticastCreate(&k.creation, &mp); }))) return leave(false);
    int fd = -1;
    if (!ok(h.call(r, "cuMemExportToShareableHandle", [&] {
          return cuMemExportToShareableHandle(&fd, k.creation, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
        }))) {
      return leave(false);
    }
    s.fd = fd;
  }
  h.barrier(r);

  if (s.fd < 0) return leave(false);
  void* arg = reinterpret_cast<void*>(static_cast<intptr_t>(s.fd));
  if (!ok(h.call(r, "cuMemImportFromShareableHandle", [&] {
        return cuMemImportFromShareableHandle(&k.mc, arg, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
      }))) {
    return leave(false);
  }
  if (!ok(h.call(r, "cuMulticastAddDevice", [&] { return cuMulticastAddDevice(k.mc, r); }))) return leave(false);
  CUmemAllocationProp prop = deviceProp(r, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  if (!ok(h.call(r, "cuMemCreate", [&] { return cuMemCreate(&k.mem, kSize, &prop, 0); }))) return leave(false);
  if (s.abort) return leave(false);
  if (!ok(team("cuMulticastBindMem", [&] { return cuMulticastBindMem(k.mc, 0, k.mem, 0, kSize, 0); }))) {
    return leave(true);
  }
  k.bound = true;
  s.bound[size_t(r)] = true;
  h.barrier(r);  // the all-gather of success

  for (bool b : s.bound) {
    if (!b) return leave(false);
  }
  if (r == 0) {
    // The creator drops its own reference; the importers' handles keep the object.
    const CUresult res = h.call(r, "cuMemRelease", [&] { return cuMemRelease(k.creation); });
    if (ok(res)) k.creation = 0;
  }
  h.barrier(r);

  if (s.abort) return leave(false);
  if (!ok(team("cuMemAddressReserve", [&] { return cuMemAddressReserve(&k.mcVa, kSize, 0, 0, 0); }))) {
    return leave(true);
  }
  if (s.abort) return leave(false);
  if (!ok(team("cuMemMap", [&] { return cuMemMap(k.mcVa, kSize, 0, k.mc, 0); }))) return leave(true);
  k.mcMapped = true;
  const CUmemAccessDesc self = readWrite(r);
  if (s.abort) return leave(false);
  if (!ok(team("cuMemSetAccess", [&] { return cuMemSetAccess(k.mcVa, kSize, &self, 1); }))) return leave(true);
  // The rank's own view of its memory: mapped, filled, checked at the end.
  if (s.abort) return leave(false);
  if (!ok(team("cuMemAddressReserve", [&] { return cuMemAddressReserve(&k.ucVa, kSize, 0, 0, 0); }))) {
    return leave(true);
  }
  if (!ok(team("cuMemMap", [&] { return cuMemMap(k.ucVa, kSize, 0, k.mem, 0); }))) return leave(true);
  k.ucMapped = true;
  if (!ok(team("cuMemSetAccess", [&] { return cuMemSetAccess(k.ucVa, kSize, &self, 1); }))) return leave(true);
  std::vector<uint32_t> expected(kWindowWords, 0);
  const uint32_t fill = 0xF2220000u | uint32_t(r);
  if (ok(h.call(r, "cuMemsetD32", [&] { return cuMemsetD32(k.ucVa, fill, kWindowWords); }))) {
    expected.assign(kWindowWords, fill);
  }
  h.barrier(r);
  h.verify(r, k.ucVa, expected, "rank " + std::to_string(r) + "'s memory");
  h.barrier(r);
  leave(false);
}

}  // namespace

int main(int argc, char** argv) {
  if (wantsPoints(argc, argv)) {
    return printPoints({"cuDevicePrimaryCtxRetain", "cuCtxSetCurrent", "cuMulticastCreate",
                        "cuMemExportToShareableHandle", "cuMemImportFromShareableHandle", "cuMulticastAddDevice",
                        "cuMemCreate", "cuMulticastBindMem", "cuMemRelease", "cuMemAddressReserve", "cuMemMap",
                        "cuMemSetAccess", "cuMemsetD32", "cuMemcpyDtoH", "cuMemUnmap", "cuMemAddressFree",
                        "cuMulticastUnbind", "cuDevicePrimaryCtxRelease"});
  }
  Shared s;
  if (s.h.begin()) {
    std::vector<std::thread> threads;
    for (int r = 0; r < kRanks; ++r) threads.emplace_back(rank, std::ref(s), r);
    for (auto& t : threads) t.join();
    if (s.fd >= 0) ::close(s.fd);
  }
  return s.h.end();
}
