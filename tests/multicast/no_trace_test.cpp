// "A call that fails, injected or not, changes nothing" (DESIGN.md): every error path of the
// multicast calls that this suite can provoke, each checked against the state digest, then a
// teardown back to the baseline counts.
#include <functional>

#include "tests/multicast/multicast_test.h"

namespace {

using namespace mctest;

class NoTrace : public McTest {};

struct Case {
  const char* what;
  CUresult expected;
  std::function<CUresult()> call;
};

TEST_F(NoTrace, EveryFailingMulticastCallLeavesNoTrace) {
  INIT();
  // The world the failing calls meet: a complete team {0, 1} of 4 granules with device 0 bound at
  // [0, 1) and mapped; an exportable team {2}; an incomplete-free team for full-team checks;
  // memory of every kind the rules tell apart.
  CUmemGenericAllocationHandle team = makeTeam({0, 1}, 4 * kMin);
  CUmemGenericAllocationHandle exportable = makeTeam({2}, 2 * kMin, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  CUmemGenericAllocationHandle mem0 = makeMem(0, 4 * kMin);
  CUmemGenericAllocationHandle mem1 = makeMem(1, 2 * kMin);
  CUmemGenericAllocationHandle mem2 = makeMem(2, 2 * kMin);
  CUmemGenericAllocationHandle mem5 = makeMem(5, kMin);
  CUmemGenericAllocationHandle numa0 = 0, numa1 = 0;
  CUmemAllocationProp np0 = hostNumaProp(0), np1 = hostNumaProp(1);
  ASSERT_OK(cuMemCreate(&numa0, kMin, &np0, 0));
  ASSERT_OK(cuMemCreate(&numa1, kMin, &np1, 0));
  ASSERT_OK(cuMulticastBindMem(team, 0, mem0, 0, kMin, 0));
  CUdeviceptr va0 = mapRange(mem0, 4 * kMin, {0});
  CUdeviceptr va5 = mapRange(mem5, kMin, {5});
  CUdeviceptr linear = 0;
  ASSERT_OK(cuMemAlloc(&linear, 2 * kMin));
  CUdeviceptr mcVa = mapRange(team, 2 * kMin, {0, 1});
  CUdeviceptr spare = 0;
  ASSERT_OK(cuMemAddressReserve(&spare, 8 * kMin, 0, 0, 0));
  CUmemGenericAllocationHandle released = makeTeam({0}, kMin);
  ASSERT_OK(cuMemRelease(released));
  ASSERT_FALSE(HasFailure());

  CUmemGenericAllocationHandle out = 0;
  size_t gran = 0;
  int fd = -1;
  CUmemFabricHandle fh;
  std::vector<unsigned char> host(4096);
  const CUmulticastObjectProp good = mcProp(2, kMin);
  auto create = [&](CUmulticastObjectProp p) { return cuMulticastCreate(&out, &p); };
  CUmulticastObjectProp flagged = good;
  flagged.flags = 1;

  const std::vector<Case> cases = {
      // cuMulticastGetGranularity
      {"granularity: null result", CUDA_ERROR_INVALID_VALUE,
       [&] { return cuMulticastGetGranularity(nullptr, &good, CU_MULTICAST_GRANULARITY_MINIMUM); }},
      {"granularity: null prop", CUDA_ERROR_INVALID_VALUE,
       [&] { return cuMulticastGetGranularity(&gran, nullptr, CU_MULTICAST_GRANULARITY_MINIMUM); }},
      {"granularity: unknown option", CUDA_ERROR_INVALID_VALUE,
       [&] { return cuMulticastGetGranularity(&gran, &good, static_cast<CUmulticastGranularity_flags>(5)); }},
      // cuMulticastCreate
      {"create: null handle", CUDA_ERROR_INVALID_VALUE, [&] { return cuMulticastCreate(nullptr, &good); }},
      {"create: null prop", CUDA_ERROR_INVALID_VALUE, [&] { return cuMulticastCreate(&out, nullptr); }},
      {"create: no devices", CUDA_ERROR_INVALID_VALUE, [&] { return create(mcProp(0, kMin)); }},
      {"create: team above max", CUDA_ERROR_INVALID_VALUE, [&] { return create(mcProp(9, kMin)); }},
      {"create: size 0", CUDA_ERROR_INVALID_VALUE, [&] { return create(mcProp(2, 0)); }},
      {"create: size not a multiple", CUDA_ERROR_INVALID_VALUE, [&] { return create(mcProp(2, 3 * kMiB)); }},
      {"create: flags", CUDA_ERROR_INVALID_VALUE, [&] { return cuMulticastCreate(&out, &flagged); }},
      {"create: Windows handle type", CUDA_ERROR_INVALID_VALUE,
       [&] { return create(mcProp(2, kMin, CU_MEM_HANDLE_TYPE_WIN32)); }},
      {"create: FABRIC without IMEX", CUDA_ERROR_NOT_PERMITTED,
       [&] { return create(mcProp(2, kMin, CU_MEM_HANDLE_TYPE_FABRIC)); }},
      // cuMulticastAddDevice
      {"add: device out of range", CUDA_ERROR_INVALID_DEVICE, [&] { return cuMulticastAddDevice(team, 8); }},
      {"add: negative device", CUDA_ERROR_INVALID_DEVICE, [&] { return cuMulticastAddDevice(exportable, -3); }},
      {"add: duplicate", CUDA_ERROR_INVALID_VALUE, [&] { return cuMulticastAddDevice(exportable, 2); }},
      {"add: full team", CUDA_ERROR_INVALID_VALUE, [&] { return cuMulticastAddDevice(team, 2); }},
      {"add: memory handle", CUDA_ERROR_INVALID_VALUE, [&] { return cuMulticastAddDevice(mem0, 0); }},
      {"add: released handle", CUDA_ERROR_INVALID_VALUE, [&] { return cuMulticastAddDevice(released, 0); }},
      // cuMulticastBindMem
      {"bindMem: flags", CUDA_ERROR_INVALID_VALUE, [&] { return cuMulticastBindMem(team, kMin, mem0, 0, kMin, 4); }},
      {"bindMem: mcOffset misaligned", CUDA_ERROR_INVALID_VALUE,
       [&] { return cuMulticastBindMem(team, kMiB, mem0, 0, kMin, 0); }},
      {"bindMem: memOffset misaligned", CUDA_ERROR_INVALID_VALUE,
       [&] { return cuMulticastBindMem(team, kMin, mem0, kMiB, kMin, 0); }},
      {"bindMem: size misaligned", CUDA_ERROR_INVALID_VALUE,
       [&] { return cuMulticastBindMem(team, kMin, mem0, 0, kMiB, 0); }},
      {"bindMem: size 0", CUDA_ERROR_INVALID_VALUE, [&] { return cuMulticastBindMem(team, kMin, mem0, 0, 0, 0); }},
      {"bindMem: size + memOffset past the allocation", CUDA_ERROR_INVALID_VALUE,
       [&] { return cuMulticastBindMem(team, kMin, mem1, kMin, 2 * kMin, 0); }},
      {"bindMem: size + mcOffset past the object", CUDA_ERROR_INVALID_VALUE,
       [&] { return cuMulticastBindMem(team, 3 * kMin, mem1, 0, 2 * kMin, 0); }},
      {"bindMem: memory on a non-member", CUDA_ERROR_INVALID_DEVICE,
       [&] { return cuMulticastBindMem(team, 0, mem5, 0, kMin, 0); }},
      {"bindMem: host memory (first form)", CUDA_ERROR_INVALID_DEVICE,
       [&] { return cuMulticastBindMem(team, kMin, numa0, 0, kMin, 0); }},
      {"bindMem: overlap on the device", CUDA_ERROR_INVALID_VALUE,
       [&] { return cuMulticastBindMem(team, 0, mem0, kMin, kMin, 0); }},
      {"bindMem: garbage multicast handle", CUDA_ERROR_INVALID_VALUE,
       [&] { return cuMulticastBindMem(0xbad0, 0, mem1, 0, kMin, 0); }},
      {"bindMem: memory handle is a multicast object", CUDA_ERROR_INVALID_VALUE,
       [&] { return cuMulticastBindMem(team, kMin, exportable, 0, kMin, 0); }},
      {"bindMem: exportable object, non-shareable memory", CUDA_ERROR_INVALID_VALUE,
       [&] { return cuMulticastBindMem(exportable, 0, mem2, 0, kMin, 0); }},
      // cuMulticastBindMem_v2
      {"bindMem_v2: device memory on another device", CUDA_ERROR_INVALID_DEVICE,
       [&] { return cuMulticastBindMem_v2(team, 1, kMin, mem0, 0, kMin, 0); }},
      {"bindMem_v2: invalid device", CUDA_ERROR_INVALID_DEVICE,
       [&] { return cuMulticastBindMem_v2(team, 42, kMin, mem0, 0, kMin, 0); }},
      {"bindMem_v2: dev not a member", CUDA_ERROR_INVALID_DEVICE,
       [&] { return cuMulticastBindMem_v2(team, 5, 0, mem5, 0, kMin, 0); }},
      {"bindMem_v2: host memory on another NUMA node", CUDA_ERROR_INVALID_VALUE,
       [&] { return cuMulticastBindMem_v2(team, 0, kMin, numa1, 0, kMin, 0); }},
      {"bindMem_v2: flags", CUDA_ERROR_INVALID_VALUE,
       [&] { return cuMulticastBindMem_v2(team, 0, kMin, mem0, 0, kMin, 8); }},
      // cuMulticastBindAddr / _v2
      {"bindAddr: memptr misaligned", CUDA_ERROR_INVALID_VALUE,
       [&] { return cuMulticastBindAddr(team, kMin, va0 + kMiB, kMin, 0); }},
      {"bindAddr: nothing mapped", CUDA_ERROR_INVALID_VALUE,
       [&] { return cuMulticastBindAddr(team, kMin, spare, kMin, 0); }},
      {"bindAddr: cuMemAlloc memory", CUDA_ERROR_INVALID_VALUE,
       [&] { return cuMulticastBindAddr(team, kMin, linear, kMin, 0); }},
      {"bindAddr: past the mapping", CUDA_ERROR_INVALID_VALUE,
       [&] { return cuMulticastBindAddr(team, kMin, va0 + 3 * kMin, 2 * kMin, 0); }},
      {"bindAddr: a multicast range", CUDA_ERROR_INVALID_VALUE,
       [&] { return cuMulticastBindAddr(team, kMin, mcVa, kMin, 0); }},
      {"bindAddr: memory on a non-member", CUDA_ERROR_INVALID_DEVICE,
       [&] { return cuMulticastBindAddr(team, kMin, va5, kMin, 0); }},
      {"bindAddr: flags", CUDA_ERROR_INVALID_VALUE, [&] { return cuMulticastBindAddr(team, kMin, va0, kMin, 1); }},
      {"bindAddr_v2: wrong device", CUDA_ERROR_INVALID_DEVICE,
       [&] { return cuMulticastBindAddr_v2(team, 1, kMin, va0 + kMin, kMin, 0); }},
      // cuMulticastUnbind
      {"unbind: invalid device", CUDA_ERROR_INVALID_DEVICE, [&] { return cuMulticastUnbind(team, 8, 0, kMin); }},
      {"unbind: non-member", CUDA_ERROR_INVALID_DEVICE, [&] { return cuMulticastUnbind(team, 4, 0, kMin); }},
      {"unbind: size differs from the bind", CUDA_ERROR_INVALID_VALUE,
       [&] { return cuMulticastUnbind(team, 0, 0, 2 * kMin); }},
      {"unbind: nothing bound there", CUDA_ERROR_INVALID_VALUE, [&] { return cuMulticastUnbind(team, 1, 0, kMin); }},
      {"unbind: misaligned", CUDA_ERROR_INVALID_VALUE, [&] { return cuMulticastUnbind(team, 0, kMiB, kMin); }},
      {"unbind: past the object", CUDA_ERROR_INVALID_VALUE,
       [&] { return cuMulticastUnbind(team, 0, 3 * kMin, 2 * kMin); }},
      {"unbind: size 0", CUDA_ERROR_INVALID_VALUE, [&] { return cuMulticastUnbind(team, 0, 0, 0); }},
      // mapping, release and sharing of multicast objects
      {"map: offset not 0", CUDA_ERROR_NOT_SUPPORTED, [&] { return cuMemMap(spare, kMin, kMin, team, 0); }},
      {"map: larger than the object", CUDA_ERROR_INVALID_VALUE,
       [&] { return cuMemMap(spare, 8 * kMin, 0, team, 0); }},
      {"map: size misaligned", CUDA_ERROR_INVALID_VALUE, [&] { return cuMemMap(spare, 3 * kMiB, 0, team, 0); }},
      {"map: over a mapping", CUDA_ERROR_INVALID_VALUE, [&] { return cuMemMap(mcVa, 2 * kMin, 0, team, 0); }},
      {"release: twice", CUDA_ERROR_INVALID_VALUE, [&] { return cuMemRelease(released); }},
      {"export: object not exportable", CUDA_ERROR_INVALID_VALUE,
       [&] { return cuMemExportToShareableHandle(&fd, team, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0); }},
      {"export: FABRIC of a POSIX-only object", CUDA_ERROR_INVALID_VALUE,
       [&] { return cuMemExportToShareableHandle(&fh, exportable, CU_MEM_HANDLE_TYPE_FABRIC, 0); }},
      {"copy into a multicast range", CUDA_ERROR_INVALID_VALUE,
       [&] { return cuMemcpyHtoD(mcVa, host.data(), host.size()); }},
      {"memset of a multicast range", CUDA_ERROR_INVALID_VALUE, [&] { return cuMemsetD32(mcVa, 1, 64); }},
  };
  ASSERT_GE(cases.size(), 30u);
  int checked = 0;
  for (const Case& c : cases) {
    StderrCapture cap;  // the unbind diagnostics
    const uint64_t before = mcsim::api::stateDigest();
    const Counts counts = Counts::now();
    EXPECT_CU(c.expected, c.call()) << c.what;
    EXPECT_EQ(before, mcsim::api::stateDigest()) << c.what << " changed the node";
    const Counts after = Counts::now();
    EXPECT_EQ(counts.handles, after.handles) << c.what;
    EXPECT_EQ(counts.mappings, after.mappings) << c.what;
    cap.take();
    ++checked;
  }
  EXPECT_EQ(0u, out);
  EXPECT_EQ(-1, fd);

  // Everything still works after the failures, and tears down to the baseline.
  EXPECT_OK(cuMulticastBindMem(team, kMin, mem0, kMin, kMin, 0));
  EXPECT_OK(cuMulticastBindMem(team, 0, mem1, 0, 2 * kMin, 0));
  EXPECT_OK(cuMulticastUnbind(team, 0, 0, kMin));
  EXPECT_OK(cuMulticastUnbind(team, 0, kMin, kMin));
  EXPECT_OK(cuMulticastUnbind(team, 1, 0, 2 * kMin));
  unmapRange(mcVa, 2 * kMin);
  unmapRange(va0, 4 * kMin);
  unmapRange(va5, kMin);
  EXPECT_OK(cuMemAddressFree(spare, 8 * kMin));
  EXPECT_OK(cuMemFree(linear));
  for (auto h : {team, exportable, mem0, mem1, mem2, mem5, numa0, numa1}) EXPECT_OK(cuMemRelease(h));
  expectCountsEqual(baseline, Counts::now());
  RecordProperty("failing_calls_checked", checked);
}

// The failures that depend on the configuration, each with the digest: no fabric manager,
// an initialising one, and a deadlocked bind (see also Blocking / FabricManager suites).
TEST_F(NoTrace, ConfigurationFailuresLeaveNoTrace) {
  INIT(nullptr, {{"MCSIM_FABRIC_MANAGER", "initialising"}});
  CUmemGenericAllocationHandle team = makeTeam({0, 1}, kMin);
  CUmemGenericAllocationHandle mem = makeMem(0, kMin);
  CUmemGenericAllocationHandle lonely = makeTeam({0}, kMin, 0, 2);
  CUdeviceptr spare = 0;
  ASSERT_OK(cuMemAddressReserve(&spare, kMin, 0, 0, 0));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_SYSTEM_NOT_READY, cuMulticastBindMem(team, 0, mem, 0, kMin, 0));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_SYSTEM_NOT_READY, cuMemMap(spare, kMin, 0, team, 0));
  {
    StderrCapture cap;
    EXPECT_FAILS_CLEANLY(CUDA_ERROR_ILLEGAL_STATE, cuMulticastBindMem(lonely, 0, mem, 0, kMin, 0));
    EXPECT_FAILS_CLEANLY(CUDA_ERROR_ILLEGAL_STATE, cuMemMap(spare, kMin, 0, lonely, 0));
    cap.take();
  }
  EXPECT_OK(cuMemAddressFree(spare, kMin));
  for (auto h : {team, mem, lonely}) EXPECT_OK(cuMemRelease(h));
  expectCountsEqual(baseline, Counts::now());
}

}  // namespace
