#include "buffers.h"

#include <cstdio>
#include <numeric>

#include "cu_check.h"

namespace mcsim::bench {

namespace {

uint64_t roundUp(uint64_t v, uint64_t to) { return (v + to - 1) / to * to; }

CUmemAllocationProp deviceMemory(CUdevice dev) {
  CUmemAllocationProp p = {};
  p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  p.location.id = dev;
  p.requestedHandleTypes = CU_MEM_HANDLE_TYPE_NONE;  // one process: nothing to export
  return p;
}

// Reserves `size` bytes aligned to `align`, maps `handle` there and grants read-write access to
// `devices`. `mapped` records the map for the teardown.
bool mapFor(CUmemGenericAllocationHandle handle, size_t size, size_t align, const std::vector<CUdevice>& devices,
            CUdeviceptr* va, bool* mapped) {
  BENCH_CU(cuMemAddressReserve(va, size, align, 0, 0));
  BENCH_CU(cuMemMap(*va, size, 0, handle, 0));
  *mapped = true;
  std::vector<CUmemAccessDesc> access(devices.size());
  for (size_t i = 0; i < devices.size(); ++i) {
    access[i].location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    access[i].location.id = devices[i];
    access[i].flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  }
  BENCH_CU(cuMemSetAccess(*va, size, access.data(), access.size()));
  return true;
}

bool checkMulticastSupport(const GpuSet& gpus) {
  for (int g = 0; g < gpus.size(); ++g) {
    int supported = 0;
    BENCH_CU(cuDeviceGetAttribute(&supported, CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED, gpus[g].dev));
    if (supported == 0) {
      std::fprintf(stderr,
                   "mcsim_bench_allreduce: device %d does not support multicast "
                   "(CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED = 0); the nvls, oneshot and twoshot algorithms "
                   "need an NVSwitch fabric (--algo ring does not)\n",
                   static_cast<int>(gpus[g].dev));
      return false;
    }
  }
  return true;
}

// A multicast object of `size` bytes with every GPU in its team, each GPU's memory bound to it and
// both views mapped. `gran` is the multicast granularity `size` is a multiple of.
bool multicastObject(const GpuSet& gpus, size_t size, size_t gran, CUmemGenericAllocationHandle* mc, bool signal,
                     Buffers* b) {
  CUmulticastObjectProp mp = {};
  mp.numDevices = static_cast<unsigned>(gpus.size());
  mp.size = size;
  mp.handleTypes = 0;  // one process: nothing to export
  BENCH_CU(cuMulticastCreate(mc, &mp));
  // Every device joins before any bind: a bind (and a map of the object) waits for the whole team,
  // and this one thread is the whole team.
  for (int g = 0; g < gpus.size(); ++g) BENCH_CU(cuMulticastAddDevice(*mc, gpus[g].dev));
  for (int g = 0; g < gpus.size(); ++g) {
    GpuBuffers& gb = b->gpu[static_cast<size_t>(g)];
    CUmemGenericAllocationHandle& mem = signal ? gb.sigMem : gb.mem;
    const CUmemAllocationProp prop = deviceMemory(gpus[g].dev);
    if (!gpus.use(g)) return false;
    BENCH_CU(cuMemCreate(&mem, size, &prop, 0));
    BENCH_CU(cuMulticastBindMem(*mc, 0, mem, 0, size, 0));
    (signal ? gb.sigBound : gb.bound) = true;
    const std::vector<CUdevice> self{gpus[g].dev};
    if (!mapFor(mem, size, gran, self, signal ? &gb.sig : &gb.buf, signal ? &gb.sigMapped : &gb.bufMapped)) {
      return false;
    }
    // One mapping of the multicast object per GPU, with access for that GPU only.
    if (!mapFor(*mc, size, gran, self, signal ? &gb.mcSig : &gb.mcBuf, signal ? &gb.mcSigMapped : &gb.mcBufMapped)) {
      return false;
    }
  }
  return true;
}

}  // namespace

bool setUpMulticast(const GpuSet& gpus, uint64_t bytes, bool output, Buffers* b) {
  if (!checkMulticastSupport(gpus)) return false;
  b->gpu.assign(static_cast<size_t>(gpus.size()), GpuBuffers{});
  CUmulticastObjectProp mp = {};
  mp.numDevices = static_cast<unsigned>(gpus.size());
  mp.handleTypes = 0;
  size_t recommended = 0, minimum = 0, memGran = 0;
  BENCH_CU(cuMulticastGetGranularity(&recommended, &mp, CU_MULTICAST_GRANULARITY_RECOMMENDED));
  BENCH_CU(cuMulticastGetGranularity(&minimum, &mp, CU_MULTICAST_GRANULARITY_MINIMUM));
  const CUmemAllocationProp prop = deviceMemory(gpus[0].dev);
  BENCH_CU(cuMemGetAllocationGranularity(&memGran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  // Sizes that are whole multicast granules and whole allocation granules.
  const size_t dataGran = std::lcm(recommended, memGran), sigGran = std::lcm(minimum, memGran);
  b->bufSize = roundUp(bytes, dataGran);
  b->sigSize = sigGran;  // one granule holds the signal word (the smallest the object takes)
  if (!multicastObject(gpus, b->bufSize, dataGran, &b->mc, false, b)) return false;
  if (!multicastObject(gpus, b->sigSize, sigGran, &b->mcSig, true, b)) return false;
  for (int g = 0; g < gpus.size(); ++g) {
    GpuBuffers& gb = b->gpu[static_cast<size_t>(g)];
    if (!gpus.use(g)) return false;
    // The barrier's words start at zero, once for the whole run (through the unicast view:
    // memsets through a multicast mapping are refused).
    BENCH_CU(cuMemsetD32(gb.sig, 0, b->sigSize / 4));
    if (output) BENCH_CU(cuMemAlloc(&gb.out, b->bufSize));
  }
  return true;
}

bool setUpPeer(const GpuSet& gpus, uint64_t bytes, Buffers* b) {
  b->gpu.assign(static_cast<size_t>(gpus.size()), GpuBuffers{});
  const CUmemAllocationProp prop0 = deviceMemory(gpus[0].dev);
  size_t memGran = 0;
  BENCH_CU(cuMemGetAllocationGranularity(&memGran, &prop0, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
  // The data, then the ring's receive area of the same size (16-byte aligned, for the kernels'
  // vector path).
  const uint64_t recvOffset = roundUp(bytes, 256);
  b->bufSize = roundUp(recvOffset + bytes, memGran);
  const std::vector<CUdevice> everyone = gpus.devices();
  for (int g = 0; g < gpus.size(); ++g) {
    GpuBuffers& gb = b->gpu[static_cast<size_t>(g)];
    const CUmemAllocationProp prop = deviceMemory(gpus[g].dev);
    if (!gpus.use(g)) return false;
    BENCH_CU(cuMemCreate(&gb.mem, b->bufSize, &prop, 0));
    if (!mapFor(gb.mem, b->bufSize, memGran, everyone, &gb.buf, &gb.bufMapped)) return false;
    gb.recv = gb.buf + recvOffset;
  }
  return true;
}

bool tearDown(const GpuSet& gpus, Buffers* b) {
  bool ok = true;
  for (size_t g = 0; g < b->gpu.size(); ++g) {
    GpuBuffers& gb = b->gpu[g];
    ok = gpus.use(static_cast<int>(g)) && ok;  // cuMemFree wants the owner's context
    if (gb.out != 0) BENCH_CU_TEARDOWN(ok, cuMemFree(gb.out));
    // Views first (multicast, then unicast), then the reservations.
    if (gb.mcBufMapped) BENCH_CU_TEARDOWN(ok, cuMemUnmap(gb.mcBuf, b->bufSize));
    if (gb.mcSigMapped) BENCH_CU_TEARDOWN(ok, cuMemUnmap(gb.mcSig, b->sigSize));
    if (gb.bufMapped) BENCH_CU_TEARDOWN(ok, cuMemUnmap(gb.buf, b->bufSize));
    if (gb.sigMapped) BENCH_CU_TEARDOWN(ok, cuMemUnmap(gb.sig, b->sigSize));
    for (auto [va, size] : {std::pair{gb.mcBuf, b->bufSize}, {gb.mcSig, b->sigSize}, {gb.buf, b->bufSize},
                            {gb.sig, b->sigSize}}) {
      if (va != 0) BENCH_CU_TEARDOWN(ok, cuMemAddressFree(va, size));
    }
    // Then the memory leaves its object, and goes.
    if (gb.bound) BENCH_CU_TEARDOWN(ok, cuMulticastUnbind(b->mc, gpus[static_cast<int>(g)].dev, 0, b->bufSize));
    if (gb.sigBound) BENCH_CU_TEARDOWN(ok, cuMulticastUnbind(b->mcSig, gpus[static_cast<int>(g)].dev, 0, b->sigSize));
    if (gb.mem != 0) BENCH_CU_TEARDOWN(ok, cuMemRelease(gb.mem));
    if (gb.sigMem != 0) BENCH_CU_TEARDOWN(ok, cuMemRelease(gb.sigMem));
    gb = GpuBuffers{};
  }
  if (b->mc != 0) BENCH_CU_TEARDOWN(ok, cuMemRelease(b->mc));
  if (b->mcSig != 0) BENCH_CU_TEARDOWN(ok, cuMemRelease(b->mcSig));
  b->mc = b->mcSig = 0;
  return ok;
}

}  // namespace mcsim::bench
