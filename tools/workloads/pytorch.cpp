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

// What one rank holds besides its context (the harness's Rank).
struct Held {
  CUmemGenericAllocationHandle creation = 0;  // rank 0's own reference from cuMulticastCreate
  CUmemGenericAllocationHandle mc = 0, mem = 0;
  CUdeviceptr mcVa = 0, ucVa = 0;
  bool mcMapped = false, ucMapped = false, bound = false;
};

void cleanup(Shared& s, int r, Held& k) {
  Harness& h = s.h;
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
  k = Held{};
}

void rank(Shared& s, int r) {
  Harness& h = s.h;
  Held k;
  Rank me(h, r, &s.abort, [&] { cleanup(s, r, k); });
  if (!me.enterContext()) return me.leave(false);
  if (r == 0) {
    CUmulticastObjectProp mp = multicastProp(kRanks, kSize, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    if (!ok(h.call(r, "cuMulticastCreate", [&] { return cuMulticastCreate(&k.creation, &mp); }))) return me.leave(false);
    int fd = -1;
    if (!ok(h.call(r, "cuMemExportToShareableHandle", [&] {
          return cuMemExportToShareableHandle(&fd, k.creation, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
        }))) {
      return me.leave(false);
    }
    s.fd = fd;
  }
  h.barrier(r);

  if (s.fd < 0) return me.leave(false);
  if (!ok(me.importPosix(s.fd, &k.mc))) return me.leave(false);
  if (!ok(h.call(r, "cuMulticastAddDevice", [&] { return cuMulticastAddDevice(k.mc, r); }))) return me.leave(false);
  CUmemAllocationProp prop = deviceProp(r, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  if (!ok(h.call(r, "cuMemCreate", [&] { return cuMemCreate(&k.mem, kSize, &prop, 0); }))) return me.leave(false);
  if (s.abort) return me.leave(false);
  if (!ok(me.team("cuMulticastBindMem", [&] { return cuMulticastBindMem(k.mc, 0, k.mem, 0, kSize, 0); }))) {
    return me.leave(true);
  }
  k.bound = true;
  s.bound[size_t(r)] = true;
  h.barrier(r);  // the all-gather of success

  for (bool b : s.bound) {
    if (!b) return me.leave(false);
  }
  if (r == 0) {
    // The creator drops its own reference; the importers' handles keep the object.
    const CUresult res = h.call(r, "cuMemRelease", [&] { return cuMemRelease(k.creation); });
    if (ok(res)) k.creation = 0;
  }
  h.barrier(r);

  if (s.abort) return me.leave(false);
  if (!ok(me.team("cuMemAddressReserve", [&] { return cuMemAddressReserve(&k.mcVa, kSize, 0, 0, 0); }))) {
    return me.leave(true);
  }
  if (s.abort) return me.leave(false);
  if (!ok(me.team("cuMemMap", [&] { return cuMemMap(k.mcVa, kSize, 0, k.mc, 0); }))) return me.leave(true);
  k.mcMapped = true;
  const CUmemAccessDesc self = readWrite(r);
  if (s.abort) return me.leave(false);
  if (!ok(me.team("cuMemSetAccess", [&] { return cuMemSetAccess(k.mcVa, kSize, &self, 1); }))) return me.leave(true);
  // The rank's own view of its memory: mapped, filled, checked at the end.
  if (s.abort) return me.leave(false);
  if (!ok(me.team("cuMemAddressReserve", [&] { return cuMemAddressReserve(&k.ucVa, kSize, 0, 0, 0); }))) {
    return me.leave(true);
  }
  if (!ok(me.team("cuMemMap", [&] { return cuMemMap(k.ucVa, kSize, 0, k.mem, 0); }))) return me.leave(true);
  k.ucMapped = true;
  if (!ok(me.team("cuMemSetAccess", [&] { return cuMemSetAccess(k.ucVa, kSize, &self, 1); }))) return me.leave(true);
  std::vector<uint32_t> expected(kWindowWords, 0);
  const uint32_t fill = 0xF2220000u | uint32_t(r);
  if (ok(h.call(r, "cuMemsetD32", [&] { return cuMemsetD32(k.ucVa, fill, kWindowWords); }))) {
    expected.assign(kWindowWords, fill);
  }
  h.barrier(r);
  h.verify(r, k.ucVa, expected, "rank " + std::to_string(r) + "'s memory");
  h.barrier(r);
  me.leave(false);
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
    s.h.runThreads([&](int r) { rank(s, r); });
    if (s.fd >= 0) ::close(s.fd);
  }
  return s.h.end();
}
