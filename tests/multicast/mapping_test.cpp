// Mapping multicast objects (cuMemMap, cuMemSetAccess), their lifetime and sharing
// (cuMemRelease, export / import), and the fabric manager's states.
#include <thread>

#include "tests/multicast/multicast_test.h"

namespace {

using namespace mctest;

class Mapping : public McTest {};
class Lifetime : public McTest {};
class FabricManager : public McTest {};

void* fdArg(int fd) { return reinterpret_cast<void*>(static_cast<intptr_t>(fd)); }

// ---- mapping -----------------------------------------------------------------------------------

TEST_F(Mapping, OnlyAtOffsetZero) {
  INIT();
  CUmemGenericAllocationHandle mc = makeTeam({0, 1}, 4 * kMin);
  CUdeviceptr va = 0;
  ASSERT_OK(cuMemAddressReserve(&va, 4 * kMin, 0, 0, 0));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_NOT_SUPPORTED, cuMemMap(va, 2 * kMin, kMin, mc, 0));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_NOT_SUPPORTED, cuMemMap(va, 2 * kMin, 2 * kMin, mc, 0));
  EXPECT_OK(cuMemMap(va, 2 * kMin, 0, mc, 0));
  EXPECT_OK(cuMemUnmap(va, 2 * kMin));
  EXPECT_OK(cuMemAddressFree(va, 4 * kMin));
  EXPECT_OK(cuMemRelease(mc));
  expectCountsEqual(baseline, Counts::now());
}

TEST_F(Mapping, SizeAtMostTheObjectAndAligned) {
  INIT();
  CUmemGenericAllocationHandle mc = makeTeam({0, 1}, 2 * kMin);
  CUdeviceptr va = 0;
  ASSERT_OK(cuMemAddressReserve(&va, 8 * kMin, 0, 0, 0));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMemMap(va, 3 * kMin, 0, mc, 0));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMemMap(va, kMiB, 0, mc, 0));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMemMap(va, kMin + kMiB, 0, mc, 0));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMemMap(va, 0, 0, mc, 0));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMemMap(va + kMiB, kMin, 0, mc, 0));  // misaligned VA
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMemMap(va, kMin, 0, mc, 1));        // flags
  // Smaller than the object, and the whole object.
  EXPECT_OK(cuMemMap(va, kMin, 0, mc, 0));
  EXPECT_OK(cuMemMap(va + 4 * kMin, 2 * kMin, 0, mc, 0));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMemMap(va, kMin, 0, mc, 0));  // already mapped there
  EXPECT_OK(cuMemUnmap(va, kMin));
  EXPECT_OK(cuMemUnmap(va + 4 * kMin, 2 * kMin));
  EXPECT_OK(cuMemAddressFree(va, 8 * kMin));
  EXPECT_OK(cuMemRelease(mc));
  expectCountsEqual(baseline, Counts::now());
}

TEST_F(Mapping, OutsideAnyReservationRefused) {
  INIT();
  CUmemGenericAllocationHandle mc = makeTeam({0}, kMin);
  CUdeviceptr va = 0;
  ASSERT_OK(cuMemAddressReserve(&va, kMin, 0, 0, 0));
  ASSERT_OK(cuMemAddressFree(va, kMin));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMemMap(va, kMin, 0, mc, 0));
  EXPECT_OK(cuMemRelease(mc));
}

TEST_F(Mapping, SetAccessPerDevice) {
  INIT();
  CUmemGenericAllocationHandle mc = makeTeam({0, 1, 2}, 2 * kMin);
  CUdeviceptr va = 0;
  ASSERT_OK(cuMemAddressReserve(&va, 2 * kMin, 0, 0, 0));
  ASSERT_OK(cuMemMap(va, 2 * kMin, 0, mc, 0));
  CUmemAccessDesc d1 = readWrite(1);
  ASSERT_OK(cuMemSetAccess(va, 2 * kMin, &d1, 1));
  CUmemAccessDesc both[2] = {readWrite(0), readWrite(2)};
  both[1].flags = CU_MEM_ACCESS_FLAGS_PROT_READ;
  ASSERT_OK(cuMemSetAccess(va, 2 * kMin, both, 2));
  const unsigned long long want[4] = {CU_MEM_ACCESS_FLAGS_PROT_READWRITE, CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
                                      CU_MEM_ACCESS_FLAGS_PROT_READ, CU_MEM_ACCESS_FLAGS_PROT_NONE};
  for (int d = 0; d < 4; ++d) {
    CUmemLocation loc{CU_MEM_LOCATION_TYPE_DEVICE, d};
    unsigned long long flags = 99;
    ASSERT_OK(cuMemGetAccess(&flags, &loc, va));
    EXPECT_EQ(want[d], flags) << "device " << d;
  }
  EXPECT_OK(cuMemUnmap(va, 2 * kMin));
  EXPECT_OK(cuMemAddressFree(va, 2 * kMin));
  EXPECT_OK(cuMemRelease(mc));
  expectCountsEqual(baseline, Counts::now());
}

// TensorRT-LLM maps the multicast range and sets access before it binds any memory.
TEST_F(Mapping, MapAndAccessMayComeBeforeTheBinds) {
  INIT();
  CUmemGenericAllocationHandle mc = makeTeam({0, 1}, 2 * kMin);
  CUdeviceptr va = mapRange(mc, 2 * kMin, {0, 1});
  std::vector<CUmemGenericAllocationHandle> mem;
  for (int d = 0; d < 2; ++d) {
    mem.push_back(makeMem(d, 2 * kMin));
    EXPECT_OK(cuMulticastBindMem(mc, 0, mem.back(), 0, 2 * kMin, 0)) << d;
  }
  for (int d = 0; d < 2; ++d) EXPECT_OK(cuMulticastUnbind(mc, d, 0, 2 * kMin));
  unmapRange(va, 2 * kMin);
  for (auto m : mem) EXPECT_OK(cuMemRelease(m));
  EXPECT_OK(cuMemRelease(mc));
  expectCountsEqual(baseline, Counts::now());
}

// nvbandwidth / multi-gpu-programming-models: the object (and its map) rounded up to RECOMMENDED,
// a MINIMUM-sized buffer bound.
TEST_F(Mapping, MapLargerThanWhatIsBound) {
  INIT();
  size_t rec = 0;
  CUmulticastObjectProp q = mcProp(2, 0);
  ASSERT_OK(cuMulticastGetGranularity(&rec, &q, CU_MULTICAST_GRANULARITY_RECOMMENDED));
  CUmemGenericAllocationHandle mc = makeTeam({0, 1}, rec);
  CUmemGenericAllocationHandle a = makeMem(0, kMin), b = makeMem(1, kMin);
  ASSERT_OK(cuMulticastBindMem(mc, 0, a, 0, kMin, 0));
  ASSERT_OK(cuMulticastBindMem(mc, 0, b, 0, kMin, 0));
  CUdeviceptr va = mapRange(mc, rec, {0, 1});
  EXPECT_NE(0u, va);
  unmapRange(va, rec);
  EXPECT_OK(cuMemRelease(mc));
  EXPECT_OK(cuMemRelease(a));
  EXPECT_OK(cuMemRelease(b));
  expectCountsEqual(baseline, Counts::now());
}

// Multicast ranges are reached by multimem instructions; copies and memsets are refused.
TEST_F(Mapping, CopiesToTheMulticastRangeRefused) {
  INIT();
  CUmemGenericAllocationHandle mc = makeTeam({0, 1}, kMin);
  CUmemGenericAllocationHandle a = makeMem(0, kMin), b = makeMem(1, kMin);
  ASSERT_OK(cuMulticastBindMem(mc, 0, a, 0, kMin, 0));
  ASSERT_OK(cuMulticastBindMem(mc, 0, b, 0, kMin, 0));
  CUdeviceptr va = mapRange(mc, kMin, {0, 1});
  CUdeviceptr plain = 0;
  ASSERT_OK(cuMemAlloc(&plain, 4096));
  std::vector<unsigned char> host(4096, 7);
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMemcpyHtoD(va, host.data(), host.size()));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMemcpyDtoH(host.data(), va, host.size()));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMemcpyDtoD(plain, va, 4096));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMemcpyDtoD(va, plain, 4096));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMemsetD8(va, 1, 4096));
  EXPECT_EQ(7, host[0]);
  EXPECT_OK(cuMemFree(plain));
  unmapRange(va, kMin);
  EXPECT_OK(cuMemRelease(mc));
  EXPECT_OK(cuMemRelease(a));
  EXPECT_OK(cuMemRelease(b));
  expectCountsEqual(baseline, Counts::now());
}

TEST_F(Mapping, PointerAttributesOfTheMulticastRange) {
  INIT();
  CUmemGenericAllocationHandle mc = makeTeam({0, 1}, 2 * kMin);
  CUdeviceptr va = mapRange(mc, 2 * kMin, {0});
  CUdeviceptr base = 0;
  size_t size = 0;
  ASSERT_OK(cuMemGetAddressRange(&base, &size, va + kMin));
  EXPECT_EQ(va, base);
  EXPECT_EQ(2 * kMin, size);
  unmapRange(va, 2 * kMin);
  EXPECT_OK(cuMemRelease(mc));
}

// ---- lifetime ------------------------------------------------------------------------------------

// "Multicast objects can be released using the virtual memory management API cuMemRelease";
// as for memory, a mapping keeps the object (and its bindings) alive after the release.
TEST_F(Lifetime, MappingKeepsTheObjectAlive) {
  INIT();
  CUmemGenericAllocationHandle mc = makeTeam({0}, kMin);
  CUmemGenericAllocationHandle a = makeMem(0, kMin);
  ASSERT_OK(cuMulticastBindMem(mc, 0, a, 0, kMin, 0));
  ASSERT_OK(cuMemRelease(a));
  CUdeviceptr va = mapRange(mc, kMin, {0});
  ASSERT_OK(cuMemRelease(mc));
  EXPECT_EQ(baseline.handles, Counts::now().handles);
  EXPECT_EQ(baseline.allocations + 1, Counts::now().allocations);  // the bound memory, via the object
  // The mapping still names the object: retaining it gives back the creation handle, and the
  // binding made before the release is still there to unbind.
  CUmemGenericAllocationHandle again = 0;
  ASSERT_OK(cuMemRetainAllocationHandle(&again, reinterpret_cast<void*>(va)));
  EXPECT_EQ(mc, again);
  EXPECT_OK(cuMulticastUnbind(again, 0, 0, kMin));
  EXPECT_EQ(baseline.allocations, Counts::now().allocations);
  EXPECT_OK(cuMemRelease(again));
  unmapRange(va, kMin);
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastAddDevice(mc, 1));  // gone now
  expectCountsEqual(baseline, Counts::now());
}

TEST_F(Lifetime, SecondReleaseRefused) {
  INIT();
  CUmemGenericAllocationHandle mc = makeTeam({0}, kMin);
  ASSERT_OK(cuMemRelease(mc));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMemRelease(mc));
  // With a mapping still holding the object, too.
  CUmemGenericAllocationHandle mc2 = makeTeam({0}, kMin);
  CUdeviceptr va = mapRange(mc2, kMin, {0});
  ASSERT_OK(cuMemRelease(mc2));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMemRelease(mc2));
  unmapRange(va, kMin);
  expectCountsEqual(baseline, Counts::now());
}

// PyTorch: the creator exports, imports like every rank, then drops its creation reference; the
// imported handle keeps working.
TEST_F(Lifetime, CreatorReleasesAfterExport) {
  INIT();
  CUmemGenericAllocationHandle mc = makeTeam({}, kMin, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 2);
  int fd = -1;
  ASSERT_OK(cuMemExportToShareableHandle(&fd, mc, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
  CUmemGenericAllocationHandle imp = 0;
  ASSERT_OK(cuMemImportFromShareableHandle(&imp, fdArg(fd), CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
  ASSERT_OK(cuMemRelease(mc));
  ::close(fd);
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastAddDevice(mc, 0));  // that handle is gone
  ASSERT_OK(cuMulticastAddDevice(imp, 0));
  ASSERT_OK(cuMulticastAddDevice(imp, 1));
  CUmemGenericAllocationHandle a = makeMem(0, kMin, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  EXPECT_OK(cuMulticastBindMem(imp, 0, a, 0, kMin, 0));
  CUdeviceptr va = mapRange(imp, kMin, {0, 1});
  unmapRange(va, kMin);
  EXPECT_OK(cuMulticastUnbind(imp, 0, 0, kMin));
  EXPECT_OK(cuMemRelease(imp));
  EXPECT_OK(cuMemRelease(a));
  expectCountsEqual(baseline, Counts::now());
}

// An import in the same process is a new handle to the same object: what is done through one is
// seen through the other.
TEST_F(Lifetime, PosixImportIsANewHandleToTheSameObject) {
  INIT();
  CUmemGenericAllocationHandle mc = makeTeam({}, kMin, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 2);
  int fd = -1;
  ASSERT_OK(cuMemExportToShareableHandle(&fd, mc, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
  ASSERT_GE(fd, 0);
  CUmemGenericAllocationHandle imp = 0;
  ASSERT_OK(cuMemImportFromShareableHandle(&imp, fdArg(fd), CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
  ::close(fd);
  EXPECT_NE(mc, imp);
  EXPECT_EQ(baseline.handles + 2, Counts::now().handles);
  ASSERT_OK(cuMulticastAddDevice(mc, 3));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastAddDevice(imp, 3));  // already a member
  ASSERT_OK(cuMulticastAddDevice(imp, 4));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastAddDevice(mc, 5));   // team full
  // The team is complete through both handles: a bind through either goes straight through, and
  // overlaps what the other made.
  CUmemGenericAllocationHandle a = makeMem(3, kMin, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  ASSERT_OK(cuMulticastBindMem(imp, 0, a, 0, kMin, 0));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastBindMem(mc, 0, a, 0, kMin, 0));
  EXPECT_OK(cuMulticastUnbind(mc, 3, 0, kMin));
  EXPECT_OK(cuMemRelease(mc));
  EXPECT_OK(cuMemRelease(imp));
  EXPECT_OK(cuMemRelease(a));
  expectCountsEqual(baseline, Counts::now());
}

// An exported descriptor keeps the object alive while it is open, as for memory.
TEST_F(Lifetime, OpenDescriptorKeepsTheObject) {
  INIT();
  CUmemGenericAllocationHandle mc = makeTeam({1}, kMin, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 2);
  int fd = -1;
  ASSERT_OK(cuMemExportToShareableHandle(&fd, mc, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
  ASSERT_OK(cuMemRelease(mc));
  CUmemGenericAllocationHandle imp = 0;
  ASSERT_OK(cuMemImportFromShareableHandle(&imp, fdArg(fd), CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
  ::close(fd);
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastAddDevice(imp, 1));  // device 1 was added
  EXPECT_OK(cuMulticastAddDevice(imp, 2));
  EXPECT_OK(cuMemRelease(imp));
  expectCountsEqual(baseline, Counts::now());
}

TEST_F(Lifetime, FabricExportImportWithImex) {
  INIT("gb200-nvl72");
  CUmemGenericAllocationHandle mc = makeTeam({10}, kMin, CU_MEM_HANDLE_TYPE_FABRIC, 2);
  CUmemFabricHandle fh;
  std::memset(&fh, 0, sizeof fh);
  ASSERT_OK(cuMemExportToShareableHandle(&fh, mc, CU_MEM_HANDLE_TYPE_FABRIC, 0));
  CUmemGenericAllocationHandle imp = 0;
  ASSERT_OK(cuMemImportFromShareableHandle(&imp, &fh, CU_MEM_HANDLE_TYPE_FABRIC));
  EXPECT_NE(mc, imp);
  ASSERT_OK(cuMemRelease(mc));
  ASSERT_OK(cuMulticastAddDevice(imp, 50));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastAddDevice(imp, 10));  // added by the creator
  CUmemGenericAllocationHandle a = makeMem(50, kMin, CU_MEM_HANDLE_TYPE_FABRIC);
  CUmemGenericAllocationHandle plain = makeMem(50, kMin);
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastBindMem(imp, 0, plain, 0, kMin, 0));
  EXPECT_OK(cuMulticastBindMem(imp, 0, a, 0, kMin, 0));
  EXPECT_OK(cuMulticastUnbind(imp, 50, 0, kMin));
  // A corrupted fabric handle is refused.
  CUmemFabricHandle bad = fh;
  bad.data[20] ^= 0x5a;
  CUmemGenericAllocationHandle none = 0;
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMemImportFromShareableHandle(&none, &bad, CU_MEM_HANDLE_TYPE_FABRIC));
  EXPECT_OK(cuMemRelease(imp));
  EXPECT_OK(cuMemRelease(a));
  EXPECT_OK(cuMemRelease(plain));
  // Once released everywhere, the fabric handle names nothing.
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMemImportFromShareableHandle(&none, &fh, CU_MEM_HANDLE_TYPE_FABRIC));
  expectCountsEqual(baseline, Counts::now());
}

TEST_F(Lifetime, ExportOfANonExportableObjectRefused) {
  INIT();
  CUmemGenericAllocationHandle local = makeTeam({0}, kMin);
  CUmemGenericAllocationHandle fdOnly = makeTeam({0}, kMin, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  int fd = -7;
  CUmemFabricHandle fh;
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE,
                       cuMemExportToShareableHandle(&fd, local, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMemExportToShareableHandle(&fh, local, CU_MEM_HANDLE_TYPE_FABRIC, 0));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMemExportToShareableHandle(&fh, fdOnly, CU_MEM_HANDLE_TYPE_FABRIC, 0));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE,
                       cuMemExportToShareableHandle(&fd, fdOnly, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 1));
  EXPECT_EQ(-7, fd);
  EXPECT_OK(cuMemRelease(local));
  EXPECT_OK(cuMemRelease(fdOnly));
  expectCountsEqual(baseline, Counts::now());
}

TEST_F(Lifetime, FabricExportOnNvl72NeedsTheFabricType) {
  INIT("gb200-nvl72");
  CUmemGenericAllocationHandle fdOnly = makeTeam({0}, kMin, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  CUmemFabricHandle fh;
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMemExportToShareableHandle(&fh, fdOnly, CU_MEM_HANDLE_TYPE_FABRIC, 0));
  EXPECT_OK(cuMemRelease(fdOnly));
}

// Releasing an object drops its bindings and the memory they held.
TEST_F(Lifetime, ReleaseDropsTheBindings) {
  INIT();
  CUmemGenericAllocationHandle mc = makeTeam({0, 1}, 2 * kMin);
  CUmemGenericAllocationHandle a = makeMem(0, 2 * kMin), b = makeMem(1, 2 * kMin);
  ASSERT_OK(cuMulticastBindMem(mc, 0, a, 0, 2 * kMin, 0));
  ASSERT_OK(cuMulticastBindMem(mc, 0, b, 0, 2 * kMin, 0));
  ASSERT_OK(cuMemRelease(a));
  ASSERT_OK(cuMemRelease(b));
  EXPECT_EQ(baseline.allocations + 2, Counts::now().allocations);
  ASSERT_OK(cuMemRelease(mc));
  expectCountsEqual(baseline, Counts::now());
}

// ---- the fabric manager ------------------------------------------------------------------------

// Field reports (pytorch ci-infra 541, nccl 1788): no fabric manager, binds are ILLEGAL_STATE.
TEST_F(FabricManager, NotStartedBindsAndMapsAreIllegalState) {
  INIT(nullptr, {{"MCSIM_FABRIC_MANAGER", "not-started"}});
  CUmemGenericAllocationHandle mc = makeTeam({0, 1}, kMin);
  CUmemGenericAllocationHandle a = makeMem(0, kMin);
  CUdeviceptr memVa = mapRange(a, kMin, {0});
  CUdeviceptr va = 0;
  ASSERT_OK(cuMemAddressReserve(&va, kMin, 0, 0, 0));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_ILLEGAL_STATE, cuMulticastBindMem(mc, 0, a, 0, kMin, 0));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_ILLEGAL_STATE, cuMulticastBindMem_v2(mc, 0, 0, a, 0, kMin, 0));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_ILLEGAL_STATE, cuMulticastBindAddr(mc, 0, memVa, kMin, 0));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_ILLEGAL_STATE, cuMulticastBindAddr_v2(mc, 0, 0, memVa, kMin, 0));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_ILLEGAL_STATE, cuMemMap(va, kMin, 0, mc, 0));
  EXPECT_EQ(baseline.mappings + 1, Counts::now().mappings);  // only the memory's own mapping
  EXPECT_OK(cuMemAddressFree(va, kMin));
  unmapRange(memVa, kMin);
  EXPECT_OK(cuMemRelease(a));
  EXPECT_OK(cuMemRelease(mc));
  expectCountsEqual(baseline, Counts::now());
}

TEST_F(FabricManager, DegradedIsIllegalState) {
  INIT(nullptr, {{"MCSIM_FABRIC_MANAGER", "degraded"}});
  CUmemGenericAllocationHandle mc = makeTeam({0, 1}, kMin);
  CUmemGenericAllocationHandle a = makeMem(0, kMin);
  CUdeviceptr va = 0;
  ASSERT_OK(cuMemAddressReserve(&va, kMin, 0, 0, 0));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_ILLEGAL_STATE, cuMulticastBindMem(mc, 0, a, 0, kMin, 0));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_ILLEGAL_STATE, cuMemMap(va, kMin, 0, mc, 0));
  EXPECT_OK(cuMemAddressFree(va, kMin));
  EXPECT_OK(cuMemRelease(a));
  EXPECT_OK(cuMemRelease(mc));
}

// nccl-tests 264: the fabric not yet initialised is SYSTEM_NOT_READY.
TEST_F(FabricManager, InitialisingIsSystemNotReady) {
  INIT(nullptr, {{"MCSIM_FABRIC_MANAGER", "initialising"}});
  CUmemGenericAllocationHandle mc = makeTeam({0, 1}, kMin);
  CUmemGenericAllocationHandle a = makeMem(0, kMin);
  CUdeviceptr memVa = mapRange(a, kMin, {0});
  CUdeviceptr va = 0;
  ASSERT_OK(cuMemAddressReserve(&va, kMin, 0, 0, 0));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_SYSTEM_NOT_READY, cuMulticastBindMem(mc, 0, a, 0, kMin, 0));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_SYSTEM_NOT_READY, cuMulticastBindMem_v2(mc, 0, 0, a, 0, kMin, 0));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_SYSTEM_NOT_READY, cuMulticastBindAddr(mc, 0, memVa, kMin, 0));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_SYSTEM_NOT_READY, cuMulticastBindAddr_v2(mc, 0, 0, memVa, kMin, 0));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_SYSTEM_NOT_READY, cuMemMap(va, kMin, 0, mc, 0));
  EXPECT_OK(cuMemAddressFree(va, kMin));
  unmapRange(memVa, kMin);
  EXPECT_OK(cuMemRelease(a));
  EXPECT_OK(cuMemRelease(mc));
  expectCountsEqual(baseline, Counts::now());
}

// The argument checks come first: a bad bind is still INVALID_VALUE when the manager is down.
TEST_F(FabricManager, ArgumentErrorsComeFirst) {
  INIT(nullptr, {{"MCSIM_FABRIC_MANAGER", "not-started"}});
  CUmemGenericAllocationHandle mc = makeTeam({0, 1}, kMin);
  CUmemGenericAllocationHandle a = makeMem(0, kMin);
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastBindMem(mc, kMiB, a, 0, kMin, 0));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastBindMem(mc, 0, a, 0, kMin, 1));
  EXPECT_OK(cuMemRelease(a));
  EXPECT_OK(cuMemRelease(mc));
}

}  // namespace
