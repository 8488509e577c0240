// The cost of the cuMulticast* calls as an application pays it: the granularity query, a whole
// 8-GPU multicast setup and teardown (what an NCCL-style library does per NVLS buffer), and how
// the per-operation cost changes when the fabric manager holds many other multicast objects.
//
// Every benchmark uses real (wall) time, as driver_overhead_bench does.
//
// Scaling runs use the default preset (hgx-h100). The objects kept alive in the background have
// a team of one device and are never bound: the fabric manager takes a multicast slot on every
// switch at an object's first binding (fabric/fabric_manager.cpp, FabricManager::bind), so unbound
// objects hold no slot and 1,000 of them fit on a node with 128 slots per switch. This keeps the
// scaling runs on the same machine model as the 8-GPU setup benchmark, instead of switching to
// gb200-nvl72 (1,024 slots) whose 72-GPU tables would also change the per-call costs.
#include <benchmark/benchmark.h>
#include <cuda.h>

#include <cstring>
#include <vector>

#include "driver_session.h"

namespace mcsim::bench {
namespace {

constexpr int kTeam = 8;  // every GPU of the default hgx-h100 node

CUmulticastObjectProp multicastProps(unsigned numDevices, size_t bytes) {
  CUmulticastObjectProp prop;
  std::memset(&prop, 0, sizeof prop);
  prop.numDevices = numDevices;
  prop.size = bytes;
  prop.handleTypes = 0;  // not exportable: no shareable-handle work in the measurement
  prop.flags = 0;
  return prop;
}

CUmemAllocationProp deviceProps(int device) {
  CUmemAllocationProp prop = deviceZeroProps();
  prop.location.id = device;
  return prop;
}

// The minimum multicast granularity of the node (2 MiB on every built-in preset), or 0 with the
// benchmark marked failed.
size_t multicastGranularity(benchmark::State& state) {
  const CUmulticastObjectProp prop = multicastProps(1, 0);
  size_t granularity = 0;
  if (!ok(state, cuMulticastGetGranularity(&granularity, &prop, CU_MULTICAST_GRANULARITY_MINIMUM),
          "cuMulticastGetGranularity")) {
    return 0;
  }
  return granularity;
}

// Multicast objects kept alive around a measurement: each with a team of one (device 0, added)
// and nothing bound, so they hold no switch slot.
class LiveObjects {
 public:
  LiveObjects() = default;
  LiveObjects(const LiveObjects&) = delete;
  LiveObjects& operator=(const LiveObjects&) = delete;
  ~LiveObjects() {
    for (CUmemGenericAllocationHandle h : handles_) cuMemRelease(h);
  }

  CUresult create(int64_t count, size_t bytes) {
    const CUmulticastObjectProp prop = multicastProps(1, bytes);
    handles_.reserve(static_cast<size_t>(count));
    for (int64_t i = 0; i < count; ++i) {
      CUmemGenericAllocationHandle h = 0;
      CUresult r = cuMulticastCreate(&h, &prop);
      if (r != CUDA_SUCCESS) return r;
      handles_.push_back(h);
      r = cuMulticastAddDevice(h, 0);
      if (r != CUDA_SUCCESS) return r;
    }
    return CUDA_SUCCESS;
  }

 private:
  std::vector<CUmemGenericAllocationHandle> handles_;
};

// state.range(0) is the number of multicast objects alive while an iteration runs, counting the
// one the iteration works on; the others are kept in the background.
bool keepBackground(benchmark::State& state, LiveObjects& background, size_t granularity) {
  const int64_t others = state.range(0) - 1;
  return ok(state, background.create(others, granularity), "background multicast objects");
}

// ---- Queries -------------------------------------------------------------------------------

void BM_MulticastGetGranularity(benchmark::State& state) {
  if (!requireDriver(state)) return;
  const CUmulticastObjectProp prop = multicastProps(kTeam, 0);
  size_t granularity = 0;
  for (auto _ : state) {
    const CUresult r = cuMulticastGetGranularity(&granularity, &prop, CU_MULTICAST_GRANULARITY_MINIMUM);
    if (!ok(state, r, "cuMulticastGetGranularity")) break;
    benchmark::DoNotOptimize(granularity);
  }
}

// ---- A whole 8-GPU setup and teardown ------------------------------------------------------

// One iteration: cuMulticastCreate (team of 8, one minimum granule), 8 cuMulticastAddDevice,
// 8 cuMemCreate (one granule on each GPU), 8 cuMulticastBindMem, cuMemAddressReserve, cuMemMap of
// the multicast handle, one cuMemSetAccess with 8 descriptors, 8 cuMulticastUnbind, cuMemUnmap,
// cuMemAddressFree, 9 cuMemRelease: 46 calls from one thread.
void BM_MulticastSetupTeardown8(benchmark::State& state) {
  if (!requireDriver(state)) return;
  int devices = 0;
  if (!ok(state, cuDeviceGetCount(&devices), "cuDeviceGetCount")) return;
  if (devices < kTeam) {
    state.SkipWithError("needs a node of 8 GPUs (MCSIM_TOPOLOGY=hgx-h100, the default)");
    return;
  }
  const size_t gran = multicastGranularity(state);
  if (gran == 0) return;
  LiveObjects background;
  if (!keepBackground(state, background, gran)) return;

  const CUmulticastObjectProp mcProp = multicastProps(kTeam, gran);
  CUmemAllocationProp memProps[kTeam];
  CUmemAccessDesc access[kTeam];
  for (int d = 0; d < kTeam; ++d) {
    memProps[d] = deviceProps(d);
    access[d] = deviceZeroReadWrite();
    access[d].location.id = d;
  }

  for (auto _ : state) {
    CUmemGenericAllocationHandle mc = 0;
    CUmemGenericAllocationHandle mem[kTeam] = {};
    CUdeviceptr va = 0;
    if (!ok(state, cuMulticastCreate(&mc, &mcProp), "cuMulticastCreate")) break;
    bool good = true;
    for (int d = 0; good && d < kTeam; ++d) good = ok(state, cuMulticastAddDevice(mc, d), "cuMulticastAddDevice");
    for (int d = 0; good && d < kTeam; ++d) good = ok(state, cuMemCreate(&mem[d], gran, &memProps[d], 0), "cuMemCreate");
    for (int d = 0; good && d < kTeam; ++d) {
      good = ok(state, cuMulticastBindMem(mc, 0, mem[d], 0, gran, 0), "cuMulticastBindMem");
    }
    good = good && ok(state, cuMemAddressReserve(&va, gran, gran, 0, 0), "cuMemAddressReserve");
    good = good && ok(state, cuMemMap(va, gran, 0, mc, 0), "cuMemMap");
    good = good && ok(state, cuMemSetAccess(va, gran, access, kTeam), "cuMemSetAccess");
    for (int d = 0; good && d < kTeam; ++d) good = ok(state, cuMulticastUnbind(mc, d, 0, gran), "cuMulticastUnbind");
    good = good && ok(state, cuMemUnmap(va, gran), "cuMemUnmap");
    good = good && ok(state, cuMemAddressFree(va, gran), "cuMemAddressFree");
    for (int d = 0; good && d < kTeam; ++d) good = ok(state, cuMemRelease(mem[d]), "cuMemRelease");
    good = good && ok(state, cuMemRelease(mc), "cuMemRelease (multicast)");
    if (!good) break;  // the benchmark is marked failed; what is left leaks with the process
  }
}

// ---- Per-operation cost against the number of live objects ---------------------------------

// cuMulticastCreate (team of 1) + cuMulticastAddDevice + cuMemRelease: an object's whole life
// when it is never bound.
void BM_MulticastCreateAddRelease(benchmark::State& state) {
  if (!requireDriver(state)) return;
  const size_t gran = multicastGranularity(state);
  if (gran == 0) return;
  LiveObjects background;
  if (!keepBackground(state, background, gran)) return;
  const CUmulticastObjectProp prop = multicastProps(1, gran);
  for (auto _ : state) {
    CUmemGenericAllocationHandle mc = 0;
    if (!ok(state, cuMulticastCreate(&mc, &prop), "cuMulticastCreate")) break;
    if (!ok(state, cuMulticastAddDevice(mc, 0), "cuMulticastAddDevice")) break;
    if (!ok(state, cuMemRelease(mc), "cuMemRelease")) break;
  }
}

// cuMulticastBindMem + cuMulticastUnbind of one granule of device 0's memory on an existing
// object (team of 1, complete). The object takes its switch slot at the first bind, before
// timing, and keeps it.
void BM_MulticastBindUnbind(benchmark::State& state) {
  if (!requireDriver(state)) return;
  const size_t gran = multicastGranularity(state);
  if (gran == 0) return;
  LiveObjects background;
  if (!keepBackground(state, background, gran)) return;
  const CUmulticastObjectProp prop = multicastProps(1, gran);
  const CUmemAllocationProp memProp = deviceZeroProps();
  CUmemGenericAllocationHandle mc = 0, mem = 0;
  if (ok(state, cuMulticastCreate(&mc, &prop), "cuMulticastCreate") &&
      ok(state, cuMulticastAddDevice(mc, 0), "cuMulticastAddDevice") &&
      ok(state, cuMemCreate(&mem, gran, &memProp, 0), "cuMemCreate") &&
      ok(state, cuMulticastBindMem(mc, 0, mem, 0, gran, 0), "cuMulticastBindMem (warm-up)") &&
      ok(state, cuMulticastUnbind(mc, 0, 0, gran), "cuMulticastUnbind (warm-up)")) {
    for (auto _ : state) {
      if (!ok(state, cuMulticastBindMem(mc, 0, mem, 0, gran, 0), "cuMulticastBindMem")) break;
      if (!ok(state, cuMulticastUnbind(mc, 0, 0, gran), "cuMulticastUnbind")) break;
    }
  }
  if (mem != 0) cuMemRelease(mem);
  if (mc != 0) cuMemRelease(mc);
}

// Live-object counts for the scaling runs: the ratio of the two medians is the check.
void LiveCounts(benchmark::internal::Benchmark* b) { b->ArgName("live")->Arg(1)->Arg(1000); }

BENCHMARK(BM_MulticastGetGranularity)->UseRealTime();
BENCHMARK(BM_MulticastSetupTeardown8)->Apply(LiveCounts)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_MulticastCreateAddRelease)->Apply(LiveCounts)->UseRealTime();
BENCHMARK(BM_MulticastBindUnbind)->Apply(LiveCounts)->UseRealTime();

}  // namespace
}  // namespace mcsim::bench
