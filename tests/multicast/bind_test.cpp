// cuMulticastBindMem, cuMulticastBindAddr and their _v2 forms; cuMulticastUnbind; multicast
// slots; how cuGetProcAddress finds the _v2 forms.
#include <dlfcn.h>

#include "tests/multicast/multicast_test.h"

namespace {

using namespace mctest;

class BindMem : public McTest {};
class BindAddr : public McTest {};
class BindV2 : public McTest {};
class Slots : public McTest {};
class Unbind : public McTest {};
class ProcAddress : public McTest {};

// ---- cuMulticastBindMem ----------------------------------------------------------------------

TEST_F(BindMem, BindsAndUnbindsOnEveryMember) {
  INIT();
  CUmemGenericAllocationHandle mc = makeTeam({0, 1, 2, 3}, 4 * kMin);
  std::vector<CUmemGenericAllocationHandle> mem;
  for (int d = 0; d < 4; ++d) {
    mem.push_back(makeMem(d, 4 * kMin));
    ASSERT_OK(cuMulticastBindMem(mc, 0, mem.back(), 0, 4 * kMin, 0)) << d;
  }
  for (int d = 0; d < 4; ++d) EXPECT_OK(cuMulticastUnbind(mc, d, 0, 4 * kMin));
  for (auto m : mem) EXPECT_OK(cuMemRelease(m));
  EXPECT_OK(cuMemRelease(mc));
  expectCountsEqual(baseline, Counts::now());
}

TEST_F(BindMem, OffsetsAndSizeMustBeMultiplesOfMinimum) {
  INIT();
  CUmemGenericAllocationHandle mc = makeTeam({0, 1}, 4 * kMin);
  CUmemGenericAllocationHandle mem = makeMem(0, 4 * kMin);
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastBindMem(mc, kMiB, mem, 0, kMin, 0));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastBindMem(mc, 4096, mem, 0, kMin, 0));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastBindMem(mc, 0, mem, kMiB, kMin, 0));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastBindMem(mc, 0, mem, 0, kMiB, 0));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastBindMem(mc, 0, mem, 0, kMin + kMiB, 0));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastBindMem(mc, 0, mem, 0, 0, 0));
  // Aligned offsets into both work.
  EXPECT_OK(cuMulticastBindMem(mc, 2 * kMin, mem, kMin, 2 * kMin, 0));
  EXPECT_OK(cuMulticastUnbind(mc, 0, 2 * kMin, 2 * kMin));
  EXPECT_OK(cuMemRelease(mem));
  EXPECT_OK(cuMemRelease(mc));
}

TEST_F(BindMem, SizePlusMemOffsetWithinAllocation) {
  INIT();
  CUmemGenericAllocationHandle mc = makeTeam({0, 1}, 8 * kMin);
  CUmemGenericAllocationHandle mem = makeMem(0, 2 * kMin);
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastBindMem(mc, 0, mem, 0, 3 * kMin, 0));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastBindMem(mc, 0, mem, kMin, 2 * kMin, 0));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastBindMem(mc, 0, mem, 2 * kMin, kMin, 0));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastBindMem(mc, 0, mem, ~size_t{0} - kMin + 1, 2 * kMin, 0));
  EXPECT_OK(cuMulticastBindMem(mc, 0, mem, kMin, kMin, 0));  // exactly to the end
  EXPECT_OK(cuMulticastUnbind(mc, 0, 0, kMin));
  EXPECT_OK(cuMemRelease(mem));
  EXPECT_OK(cuMemRelease(mc));
}

TEST_F(BindMem, SizePlusMcOffsetWithinObject) {
  INIT();
  CUmemGenericAllocationHandle mc = makeTeam({0, 1}, 2 * kMin);
  CUmemGenericAllocationHandle mem = makeMem(0, 4 * kMin);
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastBindMem(mc, 0, mem, 0, 3 * kMin, 0));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastBindMem(mc, kMin, mem, 0, 2 * kMin, 0));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastBindMem(mc, 2 * kMin, mem, 0, kMin, 0));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastBindMem(mc, ~size_t{0} - kMin + 1, mem, 0, 2 * kMin, 0));
  EXPECT_OK(cuMulticastBindMem(mc, kMin, mem, 0, kMin, 0));
  EXPECT_OK(cuMulticastUnbind(mc, 0, kMin, kMin));
  EXPECT_OK(cuMemRelease(mem));
  EXPECT_OK(cuMemRelease(mc));
}

TEST_F(BindMem, MemoryMustBeOnATeamDevice) {
  INIT();
  CUmemGenericAllocationHandle mc = makeTeam({0, 1}, kMin);
  CUmemGenericAllocationHandle other = makeMem(5, kMin);
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_DEVICE, cuMulticastBindMem(mc, 0, other, 0, kMin, 0));
  // Host memory is on no device: the first form cannot tell which device it is for.
  CUmemGenericAllocationHandle host = 0;
  CUmemAllocationProp hp = hostNumaProp(0);
  ASSERT_OK(cuMemCreate(&host, kMin, &hp, 0));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_DEVICE, cuMulticastBindMem(mc, 0, host, 0, kMin, 0));
  EXPECT_OK(cuMemRelease(host));
  EXPECT_OK(cuMemRelease(other));
  EXPECT_OK(cuMemRelease(mc));
}

TEST_F(BindMem, FlagsMustBeZero) {
  INIT();
  CUmemGenericAllocationHandle mc = makeTeam({0}, kMin);
  CUmemGenericAllocationHandle mem = makeMem(0, kMin);
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastBindMem(mc, 0, mem, 0, kMin, 1));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastBindMem(mc, 0, mem, 0, kMin, 1ull << 40));
  EXPECT_OK(cuMemRelease(mem));
  EXPECT_OK(cuMemRelease(mc));
}

TEST_F(BindMem, BadHandlesRefused) {
  INIT();
  CUmemGenericAllocationHandle mc = makeTeam({0}, kMin);
  CUmemGenericAllocationHandle mc2 = makeTeam({0}, kMin);
  CUmemGenericAllocationHandle mem = makeMem(0, kMin);
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastBindMem(0, 0, mem, 0, kMin, 0));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastBindMem(0xbad00, 0, mem, 0, kMin, 0));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastBindMem(mem, 0, mem, 0, kMin, 0));  // no mc object
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastBindMem(mc, 0, mc2, 0, kMin, 0));   // no memory
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastBindMem(mc, 0, 0xbad00, 0, kMin, 0));
  EXPECT_OK(cuMemRelease(mem));
  EXPECT_OK(cuMemRelease(mc2));
  EXPECT_OK(cuMemRelease(mc));
}

// "Externally shareable as well as imported multicast objects can be bound only to externally
// shareable memory."
TEST_F(BindMem, ExportableObjectNeedsShareableMemory) {
  INIT();
  CUmemGenericAllocationHandle mc = makeTeam({0}, 2 * kMin, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  CUmemGenericAllocationHandle plain = makeMem(0, kMin);
  CUmemGenericAllocationHandle shareable = makeMem(0, kMin, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastBindMem(mc, 0, plain, 0, kMin, 0));
  EXPECT_OK(cuMulticastBindMem(mc, 0, shareable, 0, kMin, 0));
  // A non-exportable object takes either kind.
  CUmemGenericAllocationHandle local = makeTeam({0}, 2 * kMin);
  EXPECT_OK(cuMulticastBindMem(local, 0, plain, 0, kMin, 0));
  EXPECT_OK(cuMulticastBindMem(local, kMin, shareable, 0, kMin, 0));
  EXPECT_OK(cuMemRelease(local));  // releasing the object drops its bindings
  EXPECT_OK(cuMemRelease(mc));
  EXPECT_OK(cuMemRelease(plain));
  EXPECT_OK(cuMemRelease(shareable));
  expectCountsEqual(baseline, Counts::now());
}

// The same for an imported multicast object (a new handle from a POSIX descriptor).
TEST_F(BindMem, ImportedObjectNeedsShareableMemory) {
  INIT();
  CUmemGenericAllocationHandle mc = makeTeam({}, kMin, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 1);
  int fd = -1;
  ASSERT_OK(cuMemExportToShareableHandle(&fd, mc, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
  CUmemGenericAllocationHandle imported = 0;
  ASSERT_OK(cuMemImportFromShareableHandle(&imported, reinterpret_cast<void*>(static_cast<intptr_t>(fd)),
                                           CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
  ::close(fd);
  ASSERT_OK(cuMemRelease(mc));
  ASSERT_OK(cuMulticastAddDevice(imported, 0));
  CUmemGenericAllocationHandle plain = makeMem(0, kMin);
  CUmemGenericAllocationHandle shareable = makeMem(0, kMin, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastBindMem(imported, 0, plain, 0, kMin, 0));
  EXPECT_OK(cuMulticastBindMem(imported, 0, shareable, 0, kMin, 0));
  EXPECT_OK(cuMulticastUnbind(imported, 0, 0, kMin));
  EXPECT_OK(cuMemRelease(imported));
  EXPECT_OK(cuMemRelease(plain));
  EXPECT_OK(cuMemRelease(shareable));
  expectCountsEqual(baseline, Counts::now());
}

TEST_F(BindMem, SeveralBindsAtDifferentOffsets) {
  INIT();
  CUmemGenericAllocationHandle mc = makeTeam({0, 1}, 8 * kMin);
  CUmemGenericAllocationHandle a = makeMem(0, 4 * kMin);
  CUmemGenericAllocationHandle b = makeMem(1, 2 * kMin);
  EXPECT_OK(cuMulticastBindMem(mc, 0, a, 0, kMin, 0));
  EXPECT_OK(cuMulticastBindMem(mc, 2 * kMin, a, kMin, kMin, 0));
  EXPECT_OK(cuMulticastBindMem(mc, 6 * kMin, a, 2 * kMin, 2 * kMin, 0));
  // Another device may use the same offsets.
  EXPECT_OK(cuMulticastBindMem(mc, 0, b, 0, 2 * kMin, 0));
  EXPECT_OK(cuMulticastUnbind(mc, 0, 0, kMin));
  EXPECT_OK(cuMulticastUnbind(mc, 0, 2 * kMin, kMin));
  EXPECT_OK(cuMulticastUnbind(mc, 0, 6 * kMin, 2 * kMin));
  EXPECT_OK(cuMulticastUnbind(mc, 1, 0, 2 * kMin));
  EXPECT_OK(cuMemRelease(a));
  EXPECT_OK(cuMemRelease(b));
  EXPECT_OK(cuMemRelease(mc));
  expectCountsEqual(baseline, Counts::now());
}

TEST_F(BindMem, OverlappingBindOnSameDeviceRefused) {
  INIT();
  CUmemGenericAllocationHandle mc = makeTeam({0, 1}, 8 * kMin);
  CUmemGenericAllocationHandle a = makeMem(0, 8 * kMin);
  ASSERT_OK(cuMulticastBindMem(mc, 2 * kMin, a, 0, 2 * kMin, 0));  // [2, 4)
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastBindMem(mc, 2 * kMin, a, 4 * kMin, 2 * kMin, 0));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastBindMem(mc, 3 * kMin, a, 4 * kMin, kMin, 0));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastBindMem(mc, kMin, a, 4 * kMin, 2 * kMin, 0));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastBindMem(mc, 0, a, 4 * kMin, 8 * kMin, 0));
  // Adjacent ranges do not overlap.
  EXPECT_OK(cuMulticastBindMem(mc, 0, a, 4 * kMin, 2 * kMin, 0));
  EXPECT_OK(cuMulticastBindMem(mc, 4 * kMin, a, 6 * kMin, 2 * kMin, 0));
  EXPECT_OK(cuMemRelease(mc));
  EXPECT_OK(cuMemRelease(a));
  expectCountsEqual(baseline, Counts::now());
}

// A binding keeps the bound memory alive after the program releases its handle.
TEST_F(BindMem, BindingKeepsMemoryAlive) {
  INIT();
  CUmemGenericAllocationHandle mc = makeTeam({0}, kMin);
  CUmemGenericAllocationHandle a = makeMem(0, kMin);
  ASSERT_OK(cuMulticastBindMem(mc, 0, a, 0, kMin, 0));
  ASSERT_OK(cuMemRelease(a));
  EXPECT_EQ(baseline.allocations + 1, Counts::now().allocations);
  ASSERT_OK(cuMulticastUnbind(mc, 0, 0, kMin));
  EXPECT_EQ(baseline.allocations, Counts::now().allocations);
  EXPECT_OK(cuMemRelease(mc));
  expectCountsEqual(baseline, Counts::now());
}

// ---- cuMulticastBindAddr ---------------------------------------------------------------------

TEST_F(BindAddr, BindsMappedCuMemCreateMemory) {
  INIT();
  CUmemGenericAllocationHandle mc = makeTeam({0, 1}, 4 * kMin);
  CUmemGenericAllocationHandle a = makeMem(1, 4 * kMin);
  CUdeviceptr va = mapRange(a, 4 * kMin, {1});
  EXPECT_OK(cuMulticastBindAddr(mc, 0, va, kMin, 0));
  EXPECT_OK(cuMulticastBindAddr(mc, kMin, va + 2 * kMin, 2 * kMin, 0));  // a range inside the mapping
  EXPECT_OK(cuMulticastUnbind(mc, 1, 0, kMin));
  EXPECT_OK(cuMulticastUnbind(mc, 1, kMin, 2 * kMin));
  unmapRange(va, 4 * kMin);
  EXPECT_OK(cuMemRelease(a));
  EXPECT_OK(cuMemRelease(mc));
  expectCountsEqual(baseline, Counts::now());
}

TEST_F(BindAddr, AlignmentOfMcOffsetMemptrAndSize) {
  INIT();
  CUmemGenericAllocationHandle mc = makeTeam({0}, 4 * kMin);
  CUmemGenericAllocationHandle a = makeMem(0, 4 * kMin);
  CUdeviceptr va = mapRange(a, 4 * kMin, {0});
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastBindAddr(mc, kMiB, va, kMin, 0));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastBindAddr(mc, 0, va + kMiB, kMin, 0));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastBindAddr(mc, 0, va + 512, kMin, 0));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastBindAddr(mc, 0, va, kMiB, 0));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastBindAddr(mc, 0, va, 0, 0));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastBindAddr(mc, 0, va, kMin, 2));  // flags
  unmapRange(va, 4 * kMin);
  EXPECT_OK(cuMemRelease(a));
  EXPECT_OK(cuMemRelease(mc));
}

TEST_F(BindAddr, SizeWithinAllocationAndObject) {
  INIT();
  CUmemGenericAllocationHandle mc = makeTeam({0}, 2 * kMin);
  CUmemGenericAllocationHandle a = makeMem(0, 2 * kMin);
  CUdeviceptr va = mapRange(a, 2 * kMin, {0});
  // Past the end of the allocation (the mapping).
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastBindAddr(mc, 0, va + kMin, 2 * kMin, 0));
  // size + mcOffset past the end of the object.
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastBindAddr(mc, kMin, va, 2 * kMin, 0));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastBindAddr(mc, 2 * kMin, va, kMin, 0));
  EXPECT_OK(cuMulticastBindAddr(mc, kMin, va + kMin, kMin, 0));
  EXPECT_OK(cuMulticastUnbind(mc, 0, kMin, kMin));
  unmapRange(va, 2 * kMin);
  EXPECT_OK(cuMemRelease(a));
  EXPECT_OK(cuMemRelease(mc));
}

TEST_F(BindAddr, UnmappedAndForeignAddressesRefused) {
  INIT();
  CUmemGenericAllocationHandle mc = makeTeam({0}, 2 * kMin);
  CUdeviceptr reserved = 0;
  ASSERT_OK(cuMemAddressReserve(&reserved, 2 * kMin, 0, 0, 0));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastBindAddr(mc, 0, reserved, kMin, 0));  // nothing mapped
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastBindAddr(mc, 0, 0, kMin, 0));
  static char host[4 * kMin];
  const auto hostVa = (reinterpret_cast<uintptr_t>(host) + kMin - 1) & ~(uintptr_t{kMin} - 1);
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastBindAddr(mc, 0, hostVa, kMin, 0));
  EXPECT_OK(cuMemAddressFree(reserved, 2 * kMin));
  EXPECT_OK(cuMemRelease(mc));
}

// "The memory must have been allocated via cuMemCreate or cudaMallocAsync": cuMemAlloc memory
// is refused.
TEST_F(BindAddr, CuMemAllocMemoryRefused) {
  INIT();
  CUmemGenericAllocationHandle mc = makeTeam({0}, 2 * kMin);
  CUdeviceptr d = 0;
  ASSERT_OK(cuMemAlloc(&d, 2 * kMin));
  ASSERT_EQ(0u, d % kMin);
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastBindAddr(mc, 0, d, kMin, 0));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastBindAddr_v2(mc, 0, 0, d, kMin, 0));
  EXPECT_OK(cuMemFree(d));
  EXPECT_OK(cuMemRelease(mc));
}

// cudaMallocAsync memory (a stream-ordered pool's) is accepted.
TEST_F(BindAddr, PoolMemoryAccepted) {
  INIT();
  CUmemGenericAllocationHandle mc = makeTeam({0}, 2 * kMin);
  CUdeviceptr d = 0;
  ASSERT_OK(cuMemAllocAsync(&d, 2 * kMin, nullptr));
  ASSERT_EQ(0u, d % kMin);
  EXPECT_OK(cuMulticastBindAddr(mc, 0, d, 2 * kMin, 0));
  EXPECT_OK(cuMulticastUnbind(mc, 0, 0, 2 * kMin));
  EXPECT_OK(cuMemFreeAsync(d, nullptr));
  EXPECT_OK(cuStreamSynchronize(nullptr));
  EXPECT_OK(cuMemRelease(mc));
}

TEST_F(BindAddr, MemoryMustBeOnATeamDevice) {
  INIT();
  CUmemGenericAllocationHandle mc = makeTeam({0, 1}, kMin);
  CUmemGenericAllocationHandle a = makeMem(6, kMin);
  CUdeviceptr va = mapRange(a, kMin, {6});
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_DEVICE, cuMulticastBindAddr(mc, 0, va, kMin, 0));
  unmapRange(va, kMin);
  EXPECT_OK(cuMemRelease(a));
  EXPECT_OK(cuMemRelease(mc));
}

TEST_F(BindAddr, ExportableObjectNeedsShareableMemory) {
  INIT();
  CUmemGenericAllocationHandle mc = makeTeam({0}, kMin, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  CUmemGenericAllocationHandle plain = makeMem(0, kMin);
  CUdeviceptr va = mapRange(plain, kMin, {0});
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastBindAddr(mc, 0, va, kMin, 0));
  unmapRange(va, kMin);
  CUmemGenericAllocationHandle shareable = makeMem(0, kMin, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  va = mapRange(shareable, kMin, {0});
  EXPECT_OK(cuMulticastBindAddr(mc, 0, va, kMin, 0));
  EXPECT_OK(cuMulticastUnbind(mc, 0, 0, kMin));
  unmapRange(va, kMin);
  EXPECT_OK(cuMemRelease(plain));
  EXPECT_OK(cuMemRelease(shareable));
  EXPECT_OK(cuMemRelease(mc));
}

TEST_F(BindAddr, OverlappingBindRefused) {
  INIT();
  CUmemGenericAllocationHandle mc = makeTeam({0}, 4 * kMin);
  CUmemGenericAllocationHandle a = makeMem(0, 4 * kMin);
  CUdeviceptr va = mapRange(a, 4 * kMin, {0});
  ASSERT_OK(cuMulticastBindAddr(mc, kMin, va, 2 * kMin, 0));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastBindAddr(mc, 2 * kMin, va + 2 * kMin, 2 * kMin, 0));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastBindAddr(mc, 0, va + 2 * kMin, 2 * kMin, 0));
  EXPECT_OK(cuMulticastBindAddr(mc, 3 * kMin, va + 3 * kMin, kMin, 0));
  EXPECT_OK(cuMulticastUnbind(mc, 0, kMin, 2 * kMin));
  EXPECT_OK(cuMulticastUnbind(mc, 0, 3 * kMin, kMin));
  unmapRange(va, 4 * kMin);
  EXPECT_OK(cuMemRelease(a));
  EXPECT_OK(cuMemRelease(mc));
  expectCountsEqual(baseline, Counts::now());
}

// ---- the _v2 forms ---------------------------------------------------------------------------

TEST_F(BindV2, DeviceMemoryMustBeOnDev) {
  INIT();
  CUmemGenericAllocationHandle mc = makeTeam({0, 1}, 2 * kMin);
  CUmemGenericAllocationHandle on0 = makeMem(0, kMin);
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_DEVICE, cuMulticastBindMem_v2(mc, 1, 0, on0, 0, kMin, 0));
  EXPECT_OK(cuMulticastBindMem_v2(mc, 0, 0, on0, 0, kMin, 0));
  CUdeviceptr va = mapRange(on0, kMin, {0});
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_DEVICE, cuMulticastBindAddr_v2(mc, 1, kMin, va, kMin, 0));
  EXPECT_OK(cuMulticastBindAddr_v2(mc, 0, kMin, va, kMin, 0));
  EXPECT_OK(cuMulticastUnbind(mc, 0, 0, kMin));
  EXPECT_OK(cuMulticastUnbind(mc, 0, kMin, kMin));
  unmapRange(va, kMin);
  EXPECT_OK(cuMemRelease(on0));
  EXPECT_OK(cuMemRelease(mc));
  expectCountsEqual(baseline, Counts::now());
}

TEST_F(BindV2, InvalidDeviceRefused) {
  INIT();
  CUmemGenericAllocationHandle mc = makeTeam({0}, kMin);
  CUmemGenericAllocationHandle on0 = makeMem(0, kMin);
  CUdeviceptr va = mapRange(on0, kMin, {0});
  for (CUdevice bad : {-1, 8, 99}) {
    EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_DEVICE, cuMulticastBindMem_v2(mc, bad, 0, on0, 0, kMin, 0));
    EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_DEVICE, cuMulticastBindAddr_v2(mc, bad, 0, va, kMin, 0));
  }
  unmapRange(va, kMin);
  EXPECT_OK(cuMemRelease(on0));
  EXPECT_OK(cuMemRelease(mc));
}

// "In both cases, the device named by dev must have been added to the multicast team."
TEST_F(BindV2, DevMustBeAMember) {
  INIT();
  CUmemGenericAllocationHandle mc = makeTeam({0, 1}, kMin);
  CUmemGenericAllocationHandle on2 = makeMem(2, kMin);
  CUmemGenericAllocationHandle host = 0;
  CUmemAllocationProp hp = hostNumaProp(0);
  ASSERT_OK(cuMemCreate(&host, kMin, &hp, 0));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_DEVICE, cuMulticastBindMem_v2(mc, 2, 0, on2, 0, kMin, 0));
  // Host memory on device 2's NUMA node, for device 2 that is no member.
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_DEVICE, cuMulticastBindMem_v2(mc, 2, 0, host, 0, kMin, 0));
  EXPECT_OK(cuMemRelease(host));
  EXPECT_OK(cuMemRelease(on2));
  EXPECT_OK(cuMemRelease(mc));
}

// Host NUMA memory binds for `dev` when it lies on the node CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID
// names for dev; another node is CUDA_ERROR_INVALID_VALUE.
TEST_F(BindV2, HostNumaMemoryOnTheDevicesNode) {
  INIT();
  int numa0 = -1, numa5 = -1;
  ASSERT_OK(cuDeviceGetAttribute(&numa0, CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID, 0));
  ASSERT_OK(cuDeviceGetAttribute(&numa5, CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID, 5));
  ASSERT_NE(numa0, numa5);  // hgx-h100: devices 0-3 on node 0, 4-7 on node 1
  CUmemGenericAllocationHandle mc = makeTeam({0, 5}, 2 * kMin);
  CUmemGenericAllocationHandle h0 = 0, h5 = 0;
  CUmemAllocationProp p0 = hostNumaProp(numa0), p5 = hostNumaProp(numa5);
  ASSERT_OK(cuMemCreate(&h0, kMin, &p0, 0));
  ASSERT_OK(cuMemCreate(&h5, kMin, &p5, 0));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastBindMem_v2(mc, 0, 0, h5, 0, kMin, 0));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastBindMem_v2(mc, 5, 0, h0, 0, kMin, 0));
  EXPECT_OK(cuMulticastBindMem_v2(mc, 0, 0, h0, 0, kMin, 0));
  EXPECT_OK(cuMulticastBindMem_v2(mc, 5, 0, h5, 0, kMin, 0));
  // Through a mapping too.
  CUdeviceptr va0 = mapRange(h0, kMin, {0});
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastBindAddr_v2(mc, 5, kMin, va0, kMin, 0));
  EXPECT_OK(cuMulticastBindAddr_v2(mc, 0, kMin, va0, kMin, 0));
  EXPECT_OK(cuMulticastUnbind(mc, 0, 0, kMin));
  EXPECT_OK(cuMulticastUnbind(mc, 0, kMin, kMin));
  EXPECT_OK(cuMulticastUnbind(mc, 5, 0, kMin));
  unmapRange(va0, kMin);
  EXPECT_OK(cuMemRelease(h0));
  EXPECT_OK(cuMemRelease(h5));
  EXPECT_OK(cuMemRelease(mc));
  expectCountsEqual(baseline, Counts::now());
}

TEST_F(BindV2, HostNumaOnNvl72) {
  INIT("gb200-nvl72");
  int numa = -1;
  ASSERT_OK(cuDeviceGetAttribute(&numa, CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID, 70));
  EXPECT_EQ(35, numa);  // two GPUs per Grace CPU
  CUmemGenericAllocationHandle mc = makeTeam({70, 71}, kMin);
  CUmemGenericAllocationHandle right = 0, right2 = 0, wrong = 0;
  CUmemAllocationProp pr = hostNumaProp(numa), pw = hostNumaProp(0);
  ASSERT_OK(cuMemCreate(&right, kMin, &pr, 0));
  ASSERT_OK(cuMemCreate(&right2, kMin, &pr, 0));
  ASSERT_OK(cuMemCreate(&wrong, kMin, &pw, 0));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastBindMem_v2(mc, 70, 0, wrong, 0, kMin, 0));
  EXPECT_OK(cuMulticastBindMem_v2(mc, 70, 0, right, 0, kMin, 0));
  EXPECT_OK(cuMulticastBindMem_v2(mc, 71, 0, right2, 0, kMin, 0));  // 71 shares node 35
  EXPECT_OK(cuMemRelease(mc));
  EXPECT_OK(cuMemRelease(right));
  EXPECT_OK(cuMemRelease(right2));
  EXPECT_OK(cuMemRelease(wrong));
  expectCountsEqual(baseline, Counts::now());
}

TEST_F(BindV2, FlagsAlignmentAndBoundsAsTheFirstForms) {
  INIT();
  CUmemGenericAllocationHandle mc = makeTeam({0}, 2 * kMin);
  CUmemGenericAllocationHandle a = makeMem(0, 2 * kMin);
  CUdeviceptr va = mapRange(a, 2 * kMin, {0});
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastBindMem_v2(mc, 0, 0, a, 0, kMin, 1));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastBindAddr_v2(mc, 0, 0, va, kMin, 1));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastBindMem_v2(mc, 0, kMiB, a, 0, kMin, 0));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastBindMem_v2(mc, 0, 0, a, kMiB, kMin, 0));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastBindMem_v2(mc, 0, 0, a, 0, kMiB, 0));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastBindAddr_v2(mc, 0, 0, va + kMiB, kMin, 0));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastBindMem_v2(mc, 0, 0, a, kMin, 2 * kMin, 0));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastBindMem_v2(mc, 0, kMin, a, 0, 2 * kMin, 0));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastBindAddr_v2(mc, 0, kMin, va, 2 * kMin, 0));
  ASSERT_OK(cuMulticastBindMem_v2(mc, 0, 0, a, 0, kMin, 0));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastBindAddr_v2(mc, 0, 0, va + kMin, kMin, 0));  // overlap
  unmapRange(va, 2 * kMin);
  EXPECT_OK(cuMemRelease(a));
  EXPECT_OK(cuMemRelease(mc));
  expectCountsEqual(baseline, Counts::now());
}

TEST_F(BindV2, ExportableObjectNeedsShareableMemory) {
  INIT();
  CUmemGenericAllocationHandle mc = makeTeam({0}, kMin, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  CUmemGenericAllocationHandle plain = makeMem(0, kMin);
  CUmemGenericAllocationHandle host = 0;
  CUmemAllocationProp hp = hostNumaProp(0);
  ASSERT_OK(cuMemCreate(&host, kMin, &hp, 0));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastBindMem_v2(mc, 0, 0, plain, 0, kMin, 0));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastBindMem_v2(mc, 0, 0, host, 0, kMin, 0));
  EXPECT_OK(cuMemRelease(host));
  EXPECT_OK(cuMemRelease(plain));
  EXPECT_OK(cuMemRelease(mc));
}

// ---- multicast slots -------------------------------------------------------------------------

// nccl issue 2077: 128 multicast groups per NVSwitch; the 129th bind is CUDA_ERROR_OUT_OF_MEMORY.
TEST_F(Slots, ExhaustedBindIsOutOfMemoryAndReleaseFreesASlot) {
  INIT();
  constexpr int kSlots = 128;
  CUmemGenericAllocationHandle mem = makeMem(0, (kSlots + 1) * kMin);
  std::vector<CUmemGenericAllocationHandle> mc;
  for (int i = 0; i <= kSlots; ++i) mc.push_back(makeTeam({0}, kMin));
  for (int i = 0; i < kSlots; ++i) {
    ASSERT_OK(cuMulticastBindMem(mc[i], 0, mem, i * kMin, kMin, 0)) << i;
  }
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_OUT_OF_MEMORY, cuMulticastBindMem(mc[kSlots], 0, mem, kSlots * kMin, kMin, 0));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_OUT_OF_MEMORY, cuMulticastBindMem_v2(mc[kSlots], 0, 0, mem, kSlots * kMin, kMin, 0));
  CUdeviceptr va = mapRange(mem, (kSlots + 1) * kMin, {0});
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_OUT_OF_MEMORY, cuMulticastBindAddr(mc[kSlots], 0, va + kSlots * kMin, kMin, 0));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_OUT_OF_MEMORY, cuMulticastBindAddr_v2(mc[kSlots], 0, 0, va + kSlots * kMin, kMin, 0));
  unmapRange(va, (kSlots + 1) * kMin);
  // An object that holds a slot binds more without another one.
  CUmemGenericAllocationHandle more = makeMem(0, kMin);
  CUmemGenericAllocationHandle big = makeTeam({0}, 2 * kMin);
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_OUT_OF_MEMORY, cuMulticastBindMem(big, 0, more, 0, kMin, 0));
  // Unbinding does not give the slot back; releasing the object does.
  ASSERT_OK(cuMulticastUnbind(mc[7], 0, 0, kMin));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_OUT_OF_MEMORY, cuMulticastBindMem(mc[kSlots], 0, mem, kSlots * kMin, kMin, 0));
  ASSERT_OK(cuMemRelease(mc[7]));
  EXPECT_OK(cuMulticastBindMem(mc[kSlots], 0, mem, kSlots * kMin, kMin, 0));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_OUT_OF_MEMORY, cuMulticastBindMem(big, 0, more, 0, kMin, 0));
  ASSERT_OK(cuMemRelease(mc[8]));
  EXPECT_OK(cuMulticastBindMem(big, 0, more, 0, kMin, 0));
  for (int i = 0; i <= kSlots; ++i) {
    if (i != 7 && i != 8) {
      EXPECT_OK(cuMemRelease(mc[i]));
    }
  }
  EXPECT_OK(cuMemRelease(big));
  EXPECT_OK(cuMemRelease(more));
  EXPECT_OK(cuMemRelease(mem));
  expectCountsEqual(baseline, Counts::now());
}

TEST_F(Slots, Nvl72Has1024) {
  INIT("gb200-nvl72");
  constexpr int kSlots = 1024;
  CUmemGenericAllocationHandle mem = makeMem(3, (kSlots + 1) * kMin);
  std::vector<CUmemGenericAllocationHandle> mc;
  for (int i = 0; i <= kSlots; ++i) mc.push_back(makeTeam({3}, kMin));
  for (int i = 0; i < kSlots; ++i) ASSERT_OK(cuMulticastBindMem(mc[i], 0, mem, i * kMin, kMin, 0)) << i;
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_OUT_OF_MEMORY, cuMulticastBindMem(mc[kSlots], 0, mem, kSlots * kMin, kMin, 0));
  for (auto h : mc) EXPECT_OK(cuMemRelease(h));
  EXPECT_OK(cuMemRelease(mem));
  expectCountsEqual(baseline, Counts::now());
}

// An object that only an exported descriptor kept (released while the descriptor was open) is
// gone once the descriptor is closed, and its slot with it, even when nothing else happens in
// between (a loop of create / export / bind / release / close, as a client that sets up
// multicast buffers repeatedly runs it).
TEST_F(Slots, ClosingTheLastDescriptorFreesTheSlot) {
  INIT();
  CUmemGenericAllocationHandle mem = makeMem(0, kMin, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  for (int i = 0; i < 140; ++i) {
    CUmemGenericAllocationHandle mc = 0;
    CUmulticastObjectProp p = mcProp(1, kMin, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    ASSERT_OK(cuMulticastCreate(&mc, &p)) << i;
    int fd = -1;
    ASSERT_OK(cuMemExportToShareableHandle(&fd, mc, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0)) << i;
    ASSERT_OK(cuMulticastAddDevice(mc, 0)) << i;
    ASSERT_OK(cuMulticastBindMem(mc, 0, mem, 0, kMin, 0)) << "iteration " << i;
    ASSERT_OK(cuMemRelease(mc)) << i;  // the open descriptor still holds the object
    ::close(fd);
  }
  EXPECT_OK(cuMemRelease(mem));
  expectCountsEqual(baseline, Counts::now());
}

// ---- cuMulticastUnbind -----------------------------------------------------------------------

TEST_F(Unbind, MustMatchABindExactly) {
  INIT();
  CUmemGenericAllocationHandle mc = makeTeam({0, 1}, 8 * kMin);
  CUmemGenericAllocationHandle a = makeMem(0, 4 * kMin);
  ASSERT_OK(cuMulticastBindMem(mc, 2 * kMin, a, 0, 4 * kMin, 0));  // [2, 6)
  for (auto [off, size] : {std::pair<size_t, size_t>{2 * kMin, 2 * kMin}, {4 * kMin, 2 * kMin},
                           {0, 8 * kMin}, {2 * kMin, 6 * kMin}, {0, 2 * kMin}}) {
    StderrCapture cap;
    EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastUnbind(mc, 0, off, size));
    const std::string err = cap.take();
    EXPECT_NE(std::string::npos, err.find("cuMulticastUnbind")) << err;
    EXPECT_NE(std::string::npos, err.find("matches no binding")) << err;
  }
  {
    // Device 1 is a member with nothing bound at that range.
    StderrCapture cap;
    EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastUnbind(mc, 1, 2 * kMin, 4 * kMin));
    EXPECT_NE(std::string::npos, cap.take().find("matches no binding"));
  }
  EXPECT_OK(cuMulticastUnbind(mc, 0, 2 * kMin, 4 * kMin));
  {
    StderrCapture cap;  // twice is once too many
    EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastUnbind(mc, 0, 2 * kMin, 4 * kMin));
    cap.take();
  }
  EXPECT_OK(cuMemRelease(a));
  EXPECT_OK(cuMemRelease(mc));
  expectCountsEqual(baseline, Counts::now());
}

TEST_F(Unbind, AlignmentAndBounds) {
  INIT();
  CUmemGenericAllocationHandle mc = makeTeam({0}, 4 * kMin);
  CUmemGenericAllocationHandle a = makeMem(0, kMin);
  ASSERT_OK(cuMulticastBindMem(mc, 3 * kMin, a, 0, kMin, 0));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastUnbind(mc, 0, 3 * kMin + kMiB, kMin));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastUnbind(mc, 0, 3 * kMin, kMiB));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastUnbind(mc, 0, 3 * kMin, 0));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastUnbind(mc, 0, 3 * kMin, 2 * kMin));  // past the end
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastUnbind(mc, 0, 4 * kMin, kMin));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastUnbind(mc, 0, ~size_t{0} - kMin + 1, 2 * kMin));
  EXPECT_OK(cuMulticastUnbind(mc, 0, 3 * kMin, kMin));
  EXPECT_OK(cuMemRelease(a));
  EXPECT_OK(cuMemRelease(mc));
}

TEST_F(Unbind, NonMemberAndInvalidDevice) {
  INIT();
  CUmemGenericAllocationHandle mc = makeTeam({0, 1}, kMin);
  CUmemGenericAllocationHandle a = makeMem(0, kMin);
  ASSERT_OK(cuMulticastBindMem(mc, 0, a, 0, kMin, 0));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_DEVICE, cuMulticastUnbind(mc, 2, 0, kMin));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_DEVICE, cuMulticastUnbind(mc, 7, 0, kMin));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_DEVICE, cuMulticastUnbind(mc, 8, 0, kMin));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_DEVICE, cuMulticastUnbind(mc, -1, 0, kMin));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastUnbind(0xbad00, 0, 0, kMin));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastUnbind(a, 0, 0, kMin));
  EXPECT_OK(cuMulticastUnbind(mc, 0, 0, kMin));
  EXPECT_OK(cuMemRelease(a));
  EXPECT_OK(cuMemRelease(mc));
}

TEST_F(Unbind, OnlyTheNamedDevicesBinding) {
  INIT();
  CUmemGenericAllocationHandle mc = makeTeam({0, 1}, kMin);
  CUmemGenericAllocationHandle a = makeMem(0, kMin);
  CUmemGenericAllocationHandle b = makeMem(1, kMin);
  ASSERT_OK(cuMulticastBindMem(mc, 0, a, 0, kMin, 0));
  ASSERT_OK(cuMulticastBindMem(mc, 0, b, 0, kMin, 0));
  ASSERT_OK(cuMemRelease(a));
  ASSERT_OK(cuMemRelease(b));
  const uint64_t allocs = Counts::now().allocations;
  EXPECT_OK(cuMulticastUnbind(mc, 1, 0, kMin));
  EXPECT_EQ(allocs - 1, Counts::now().allocations);  // b's memory went with its binding
  // Device 0's binding is still there: binding over it again is an overlap.
  CUmemGenericAllocationHandle c = makeMem(0, kMin);
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastBindMem(mc, 0, c, 0, kMin, 0));
  EXPECT_OK(cuMulticastUnbind(mc, 0, 0, kMin));
  EXPECT_OK(cuMulticastBindMem(mc, 0, c, 0, kMin, 0));
  EXPECT_OK(cuMemRelease(c));
  EXPECT_OK(cuMemRelease(mc));
  expectCountsEqual(baseline, Counts::now());
}

// ---- cuGetProcAddress and the _v2 forms -------------------------------------------------------

void* exported(const char* name) {
  static void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  return lib != nullptr ? dlsym(lib, name) : nullptr;
}

TEST_F(ProcAddress, V2FormsFoundAtDriverVersion13010) {
  INIT(nullptr, {{"MCSIM_DRIVER_VERSION", "13010"}});
  int v = 0;
  ASSERT_OK(cuDriverGetVersion(&v));
  ASSERT_EQ(13010, v);
  ASSERT_NE(nullptr, exported("cuMulticastBindMem_v2"));
  void* fn = nullptr;
  CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  ASSERT_OK(cuGetProcAddress("cuMulticastBindMem", &fn, 13010, 0, &st));
  EXPECT_EQ(CU_GET_PROC_ADDRESS_SUCCESS, st);
  EXPECT_EQ(exported("cuMulticastBindMem_v2"), fn);
  ASSERT_OK(cuGetProcAddress("cuMulticastBindAddr", &fn, 13010, 0, &st));
  EXPECT_EQ(exported("cuMulticastBindAddr_v2"), fn);
  // Asked for at the version NCCL uses, the first forms.
  ASSERT_OK(cuGetProcAddress("cuMulticastBindMem", &fn, 12010, 0, &st));
  EXPECT_EQ(exported("cuMulticastBindMem"), fn);
  ASSERT_OK(cuGetProcAddress("cuMulticastBindAddr", &fn, 12030, 0, &st));
  EXPECT_EQ(exported("cuMulticastBindAddr"), fn);
  // The pointer works as the _v2 form.
  ASSERT_OK(cuGetProcAddress("cuMulticastBindMem", &fn, -1, 0, &st));
  auto bindMemV2 = reinterpret_cast<PFN_cuMulticastBindMem_v13010>(fn);
  CUmemGenericAllocationHandle mc = makeTeam({0, 1}, kMin);
  CUmemGenericAllocationHandle a = makeMem(0, kMin);
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_DEVICE, bindMemV2(mc, 1, 0, a, 0, kMin, 0));
  EXPECT_OK(bindMemV2(mc, 0, 0, a, 0, kMin, 0));
  EXPECT_OK(cuMemRelease(mc));
  EXPECT_OK(cuMemRelease(a));
}

TEST_F(ProcAddress, V2FormsAbsentAtDefaultDriverVersion) {
  INIT();
  int v = 0;
  ASSERT_OK(cuDriverGetVersion(&v));
  ASSERT_EQ(13000, v);
  void* fn = nullptr;
  CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  ASSERT_OK(cuGetProcAddress("cuMulticastBindMem", &fn, 13000, 0, &st));
  EXPECT_EQ(CU_GET_PROC_ADDRESS_SUCCESS, st);
  EXPECT_EQ(exported("cuMulticastBindMem"), fn);
  EXPECT_NE(exported("cuMulticastBindMem_v2"), fn);
  ASSERT_OK(cuGetProcAddress("cuMulticastBindAddr", &fn, -1, 0, &st));
  EXPECT_EQ(exported("cuMulticastBindAddr"), fn);
  EXPECT_NE(exported("cuMulticastBindAddr_v2"), fn);
  // A CUDA version above the driver's is refused, as on a real driver older than the toolkit.
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuGetProcAddress("cuMulticastBindMem", &fn, 13010, 0, &st));
  // Every other multicast entry point is there from 12.1.
  for (const char* name : {"cuMulticastCreate", "cuMulticastAddDevice", "cuMulticastUnbind",
                           "cuMulticastGetGranularity"}) {
    fn = nullptr;
    ASSERT_OK(cuGetProcAddress(name, &fn, 12010, 0, &st)) << name;
    EXPECT_EQ(exported(name), fn) << name;
    EXPECT_OK(cuGetProcAddress(name, &fn, 12000, 0, &st));
    EXPECT_EQ(CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT, st) << name;
  }
}

}  // namespace
