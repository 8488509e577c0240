// Virtual memory management: granularity, create/release, reserve/free, map/unmap, access,
// properties, retain, address ranges, POSIX-fd export/import, and what the copy engines may do
// with VMM memory. G is the minimum granularity (2 MiB on an H100).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>

#include "tests/conformance/conformance.h"

namespace {

class Vmm : public conformance::DriverTest {
 protected:
  CUmemGenericAllocationHandle create(size_t size, unsigned handleTypes = 0) {
    CUmemAllocationProp p = devicePinned(0, handleTypes);
    CUmemGenericAllocationHandle h = 0;
    EXPECT_CU(CUDA_SUCCESS, cuMemCreate(&h, size, &p, 0)) << "create " << size;
    return h;
  }
  CUresult tryCreate(const CUmemAllocationProp& p, size_t size, CUmemGenericAllocationHandle* h) {
    *h = 0;
    CUresult r = cuMemCreate(h, size, &p, 0);
    if (r == CUDA_SUCCESS) {
      EXPECT_CU(CUDA_SUCCESS, cuMemRelease(*h));
    }
    return r;
  }
  CUdeviceptr reserve(size_t size, CUdeviceptr hint = 0) {
    CUdeviceptr p = 0;
    EXPECT_CU(CUDA_SUCCESS, cuMemAddressReserve(&p, size, 0, hint, 0)) << "reserve " << size;
    return p;
  }
  // A VA range that was reserved and freed again: unreserved, and likely to stay so.
  CUdeviceptr freedVa(size_t size) {
    CUdeviceptr p = reserve(size);
    EXPECT_CU(CUDA_SUCCESS, cuMemAddressFree(p, size));
    return p;
  }
  static CUresult setAccess(CUdeviceptr p, size_t size, CUmemAccess_flags f = CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
                            int dev = 0) {
    CUmemAccessDesc d;
    std::memset(&d, 0, sizeof d);
    d.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    d.location.id = dev;
    d.flags = f;
    return cuMemSetAccess(p, size, &d, 1);
  }
  static CUresult getAccess(CUdeviceptr p, unsigned long long* flags, int dev = 0) {
    CUmemLocation loc;
    loc.type = CU_MEM_LOCATION_TYPE_DEVICE;
    loc.id = dev;
    *flags = 0xAAAA;
    return cuMemGetAccess(flags, &loc, p);
  }
  // The access flags of device 0 at `p` (asserting the query succeeds).
  static unsigned long long access(CUdeviceptr p) {
    unsigned long long f = 0;
    EXPECT_CU(CUDA_SUCCESS, getAccess(p, &f));
    return f;
  }
  static CUmemAllocationProp props(CUmemGenericAllocationHandle h, CUresult* r) {
    CUmemAllocationProp p;
    std::memset(&p, 0xAA, sizeof p);
    *r = cuMemGetAllocationPropertiesFromHandle(&p, h);
    return p;
  }
  // The properties every plain device allocation on device 0 reports, but for handle types.
  static void expectDeviceProps(CUmemGenericAllocationHandle h, unsigned handleTypes, unsigned rdma = 0) {
    CUresult r;
    CUmemAllocationProp p = props(h, &r);
    ASSERT_CU(CUDA_SUCCESS, r);
    EXPECT_EQ(CU_MEM_ALLOCATION_TYPE_PINNED, p.type);
    EXPECT_EQ(handleTypes, static_cast<unsigned>(p.requestedHandleTypes));
    EXPECT_EQ(CU_MEM_LOCATION_TYPE_DEVICE, p.location.type);
    EXPECT_EQ(0, p.location.id);
    EXPECT_EQ(nullptr, p.win32HandleMetaData);
    EXPECT_EQ(0u, static_cast<unsigned>(p.allocFlags.compressionType));
    EXPECT_EQ(rdma, static_cast<unsigned>(p.allocFlags.gpuDirectRDMACapable));
    EXPECT_EQ(0u, static_cast<unsigned>(p.allocFlags.usage));
    for (unsigned char b : p.allocFlags.reserved) EXPECT_EQ(0u, b);
  }
  // Four bytes read back from device memory, or the sentinel 0xeeeeeeee when the read fails.
  static CUresult read4(CUdeviceptr p, unsigned char out[4]) {
    std::memset(out, 0xEE, 4);
    return cuMemcpyDtoH(out, p, 4);
  }
};

bool bytesAre(const unsigned char* p, std::initializer_list<unsigned> want) {
  size_t i = 0;
  for (unsigned w : want) {
    if (p[i++] != w) return false;
  }
  return true;
}

// ---------------------------------------------------------------------------------------------
// granularity

// probe: vmm.G, vmm.gran.device.min, vmm.gran.device.rec, vmm.gran.posix_fd.*, vmm.gran.fabric.*,
// vmm.gran.posix_fd_fabric.*, vmm.gran.win32.*, vmm.gran.handletype_0x10.*, vmm.gran.host_numa0.*,
// vmm.gran.host_numa99.*, vmm.gran.host.*, vmm.gran.host_numa_current.*, vmm.gran.loctype_0_invalid.*,
// vmm.gran.loctype_99.*, vmm.gran.dev_count.*, vmm.gran.dev_neg1.*, vmm.gran.alloctype_0_invalid.*,
// vmm.gran.alloctype_7.*, vmm.gran.compression_generic.*, vmm.gran.gpudirect_rdma.*,
// vmm.gran.usage_tile_pool.*
TEST_F(Vmm, GranularityIsTwoMiBWhateverThePropertiesSay) {
  EXPECT_EQ(size_t{2097152}, gran);
  std::vector<CUmemAllocationProp> cases;
  cases.push_back(devicePinned(0));
  cases.push_back(devicePinned(0, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
  cases.push_back(devicePinned(0, CU_MEM_HANDLE_TYPE_FABRIC));
  cases.push_back(devicePinned(0, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR | CU_MEM_HANDLE_TYPE_FABRIC));
  cases.push_back(devicePinned(0, CU_MEM_HANDLE_TYPE_WIN32));
  cases.push_back(devicePinned(0, 0x10));
  const std::vector<std::pair<int, int>> locations = {
      {CU_MEM_LOCATION_TYPE_HOST_NUMA, 0}, {CU_MEM_LOCATION_TYPE_HOST_NUMA, 99}, {CU_MEM_LOCATION_TYPE_HOST, 0},
      {CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT, 0}, {CU_MEM_LOCATION_TYPE_INVALID, 0}, {99, 0},
      {CU_MEM_LOCATION_TYPE_DEVICE, deviceCount}, {CU_MEM_LOCATION_TYPE_DEVICE, -1}};
  for (const auto& [type, id] : locations) {
    CUmemAllocationProp p = devicePinned(0);
    p.location.type = static_cast<CUmemLocationType>(type);
    p.location.id = id;
    cases.push_back(p);
  }
  for (int t : {static_cast<int>(CU_MEM_ALLOCATION_TYPE_INVALID), 7}) {
    CUmemAllocationProp p = devicePinned(0);
    p.type = static_cast<CUmemAllocationType>(t);
    cases.push_back(p);
  }
  CUmemAllocationProp p = devicePinned(0);
  p.allocFlags.compressionType = CU_MEM_ALLOCATION_COMP_GENERIC;
  cases.push_back(p);
  p = devicePinned(0);
  p.allocFlags.gpuDirectRDMACapable = 1;
  cases.push_back(p);
  p = devicePinned(0);
  p.allocFlags.usage = CU_MEM_CREATE_USAGE_TILE_POOL;
  cases.push_back(p);
  for (size_t i = 0; i < cases.size(); ++i) {
    for (auto option : {CU_MEM_ALLOC_GRANULARITY_MINIMUM, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED}) {
      size_t g = 0xAAAA;
      EXPECT_CU(CUDA_SUCCESS, cuMemGetAllocationGranularity(&g, &cases[i], option)) << "case " << i;
      EXPECT_EQ(size_t{2097152}, g) << "case " << i;
    }
  }
}

// probe: vmm.gran.option7, vmm.gran.option2, null.gran_out, null.gran_prop
TEST_F(Vmm, GranularityArgumentChecks) {
  for (int option : {7, 2}) {
    size_t g = 0xAAAA;
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE,
              cuMemGetAllocationGranularity(&g, &prop, static_cast<CUmemAllocationGranularity_flags>(option)));
    EXPECT_EQ(size_t{0xAAAA}, g);
  }
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemGetAllocationGranularity(nullptr, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  size_t g = 0xAAAA;
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemGetAllocationGranularity(&g, nullptr, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  EXPECT_EQ(size_t{0xAAAA}, g);
}

// ---------------------------------------------------------------------------------------------
// create / release

// probe: vmm.create.size0, vmm.create.size_1MiB, vmm.create.size_G_plus_4KiB,
// vmm.create.size_G_minus_4KiB, vmm.create.size_G, vmm.create.size_2G, vmm.create.size_1GiB (+ .release)
TEST_F(Vmm, CreateSizeMustBeAMultipleOfTheGranularity) {
  CUmemGenericAllocationHandle h = 0;
  for (size_t size : {size_t{0}, size_t{1} << 20, gran + 4096, gran - 4096}) {
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, tryCreate(prop, size, &h)) << size;
    EXPECT_EQ(0u, h) << size;
  }
  for (size_t size : {gran, 2 * gran, size_t{1} << 30}) {
    EXPECT_CU(CUDA_SUCCESS, tryCreate(prop, size, &h)) << size;
    EXPECT_NE(0u, h) << size;
  }
}

// probe: vmm.create.flags1, vmm.create.flags_hi, vmm.create.dev_count, vmm.create.dev_neg1,
// vmm.create.win32, vmm.create.host_numa99, vmm.create.host_numa_current, vmm.create.loctype_0_invalid,
// vmm.create.alloctype_0_invalid, null.create_handle, null.create_prop
TEST_F(Vmm, CreateArgumentChecks) {
  CUmemGenericAllocationHandle h = 0;
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemCreate(&h, gran, &prop, 1));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemCreate(&h, gran, &prop, 1ull << 40));
  EXPECT_EQ(0u, h);
  EXPECT_CU(CUDA_ERROR_INVALID_DEVICE, tryCreate(devicePinned(deviceCount), gran, &h));
  EXPECT_CU(CUDA_ERROR_INVALID_DEVICE, tryCreate(devicePinned(-1), gran, &h));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, tryCreate(devicePinned(0, CU_MEM_HANDLE_TYPE_WIN32), gran, &h));
  CUmemAllocationProp p = devicePinned(0);
  p.location.type = CU_MEM_LOCATION_TYPE_HOST_NUMA;
  p.location.id = 99;
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, tryCreate(p, gran, &h));
  p = devicePinned(0);
  p.location.type = CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT;
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, tryCreate(p, gran, &h));
  p = devicePinned(0);
  p.location.type = CU_MEM_LOCATION_TYPE_INVALID;
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, tryCreate(p, gran, &h));
  p = devicePinned(0);
  p.type = CU_MEM_ALLOCATION_TYPE_INVALID;
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, tryCreate(p, gran, &h));
  EXPECT_EQ(0u, h);
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemCreate(nullptr, gran, &prop, 0));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemCreate(&h, gran, nullptr, 0));
}

// probe: vmm.create.posix_fd, vmm.create.handletype_0x10, vmm.create.host_numa0_sizeG, vmm.create.host,
// vmm.create.host_numa0_posix_fd, vmm.create.compression_generic, vmm.create.gpudirect_rdma,
// vmm.create.fabric, vmm.create.posix_fd_fabric
TEST_F(Vmm, CreateHandleTypesAndLocations) {
  CUmemGenericAllocationHandle h = 0;
  EXPECT_CU(CUDA_SUCCESS, tryCreate(devicePinned(0, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR), gran, &h));
  EXPECT_CU(CUDA_SUCCESS, tryCreate(devicePinned(0, 0x10), gran, &h));
  CUmemAllocationProp p = devicePinned(0);
  p.location.type = CU_MEM_LOCATION_TYPE_HOST_NUMA;
  p.location.id = 0;
  EXPECT_CU(CUDA_SUCCESS, tryCreate(p, gran, &h));
  p.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  EXPECT_CU(CUDA_SUCCESS, tryCreate(p, gran, &h));
  p = devicePinned(0);
  p.location.type = CU_MEM_LOCATION_TYPE_HOST;
  p.location.id = 0;
  EXPECT_CU(CUDA_SUCCESS, tryCreate(p, gran, &h));
  p = devicePinned(0);
  p.allocFlags.compressionType = CU_MEM_ALLOCATION_COMP_GENERIC;
  EXPECT_CU(CUDA_SUCCESS, tryCreate(p, gran, &h));
  p = devicePinned(0);
  p.allocFlags.gpuDirectRDMACapable = 1;
  EXPECT_CU(CUDA_SUCCESS, tryCreate(p, gran, &h));
  // FABRIC handles need an IMEX channel, which neither machine has.
  EXPECT_CU(CUDA_ERROR_NOT_PERMITTED, tryCreate(devicePinned(0, CU_MEM_HANDLE_TYPE_FABRIC), gran, &h));
  EXPECT_CU(CUDA_ERROR_NOT_PERMITTED,
            tryCreate(devicePinned(0, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR | CU_MEM_HANDLE_TYPE_FABRIC), gran, &h));
  EXPECT_EQ(0u, h);
}

// probe: vmm.create.larger_than_total, vmm.create.size_2pow50
TEST_F(Vmm, CreateLargerThanDeviceMemoryIsOutOfMemory) {
  size_t total = 0;
  ASSERT_OK(cuDeviceTotalMem(&total, 0));
  CUmemGenericAllocationHandle h = 0;
  EXPECT_CU(CUDA_ERROR_OUT_OF_MEMORY, tryCreate(prop, ((total + gran - 1) / gran + 1) * gran, &h));
  EXPECT_CU(CUDA_ERROR_OUT_OF_MEMORY, tryCreate(prop, size_t{1} << 50, &h));
  EXPECT_EQ(0u, h);
}

// probe: vmm.create.seq.*, vmm.release.seq.*, vmm.release.double, vmm.release.zero,
// null.release_released_handle.first, null.release_released_handle.second
TEST_F(Vmm, ReleaseRules) {
  CUmemGenericAllocationHandle hs[4];
  for (auto& h : hs) h = create(gran);
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < i; ++j) EXPECT_NE(hs[i], hs[j]);
  }
  for (auto h : hs) EXPECT_CU(CUDA_SUCCESS, cuMemRelease(h));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemRelease(hs[0]));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemRelease(0));
}

// ---------------------------------------------------------------------------------------------
// reserve / free

// probe: vmm.reserve.size0, vmm.reserve.size_1MiB, vmm.reserve.size_G_plus_4KiB,
// vmm.reserve.size_G_align0, vmm.reserve.size_G_align0_again, vmm.reserve.size_G_alignG,
// vmm.reserve.align3, vmm.reserve.align_3G, vmm.reserve.align_halfG, vmm.reserve.align_4KiB,
// vmm.reserve.align_1GiB, vmm.reserve.size_1GiB, vmm.reserve.size_1TiB, vmm.reserve.size_2pow50,
// vmm.reserve.flags1, null.reserve_out
TEST_F(Vmm, ReserveSizeAlignmentAndFlags) {
  for (size_t size : {size_t{0}, size_t{1} << 20, gran + 4096}) {
    CUdeviceptr a = 0;
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemAddressReserve(&a, size, 0, 0, 0)) << size;
    EXPECT_EQ(0u, a);
  }
  CUdeviceptr a = 0;
  EXPECT_CU(CUDA_SUCCESS, cuMemAddressReserve(&a, gran, 0, 0, 0));
  EXPECT_EQ(0u, a % gran);
  ASSERT_OK(cuMemAddressFree(a, gran));
  CUdeviceptr again = 0;
  EXPECT_CU(CUDA_SUCCESS, cuMemAddressReserve(&again, gran, 0, 0, 0));
  EXPECT_EQ(a, again);  // the freed range is handed out again
  ASSERT_OK(cuMemAddressFree(again, gran));
  struct Case {
    size_t size, alignment;
    CUresult want;
  };
  for (Case c : {Case{gran, gran, CUDA_SUCCESS}, Case{4 * gran, 3, CUDA_ERROR_INVALID_VALUE},
                 Case{4 * gran, 3 * gran, CUDA_ERROR_INVALID_VALUE}, Case{gran, gran / 2, CUDA_SUCCESS},
                 Case{gran, 4096, CUDA_SUCCESS}, Case{gran, size_t{1} << 30, CUDA_SUCCESS},
                 Case{size_t{1} << 30, 0, CUDA_SUCCESS}, Case{size_t{1} << 40, 0, CUDA_SUCCESS},
                 Case{size_t{1} << 50, 0, CUDA_ERROR_OUT_OF_MEMORY}}) {
    CUdeviceptr p = 0;
    EXPECT_CU(c.want, cuMemAddressReserve(&p, c.size, c.alignment, 0, 0)) << c.size << " " << c.alignment;
    if (c.want == CUDA_SUCCESS) {
      EXPECT_EQ(0u, p % gran);
      if (c.alignment > gran) {
        EXPECT_EQ(0u, p % c.alignment);
      }
      EXPECT_CU(CUDA_SUCCESS, cuMemAddressFree(p, c.size));
    } else {
      EXPECT_EQ(0u, p);
    }
  }
  a = 0;
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemAddressReserve(&a, gran, 0, 0, 1));
  EXPECT_EQ(0u, a);
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemAddressReserve(nullptr, gran, 0, 0, 0));
}

// probe: vmm.reserve.hint_freed_addr, vmm.reserve.hint_inside_existing, vmm.reserve.hint_unaligned,
// vmm.reserve.hint_low_0x10000
TEST_F(Vmm, ReserveHints) {
  const CUdeviceptr A = freedVa(8 * gran);
  CUdeviceptr B = 0;
  EXPECT_CU(CUDA_SUCCESS, cuMemAddressReserve(&B, 8 * gran, 0, A, 0));
  EXPECT_EQ(A, B);  // a free hint is honoured
  // A hint inside an existing reservation is only a hint: another address comes back.
  CUdeviceptr C = 0;
  EXPECT_CU(CUDA_SUCCESS, cuMemAddressReserve(&C, 2 * gran, 0, B + 2 * gran, 0));
  EXPECT_NE(B + 2 * gran, C);
  EXPECT_TRUE(C + 2 * gran <= B || C >= B + 8 * gran) << "overlaps the existing reservation";
  EXPECT_CU(CUDA_SUCCESS, cuMemAddressFree(C, 2 * gran));
  EXPECT_CU(CUDA_SUCCESS, cuMemAddressFree(B, 8 * gran));
  // A hint that is not a multiple of the granularity is refused.
  C = 0;
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemAddressReserve(&C, 2 * gran, 0, A + 4096, 0));
  EXPECT_EQ(0u, C);
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemAddressReserve(&C, 2 * gran, 0, 0x10000, 0));
  EXPECT_EQ(0u, C);
}

// probe: vmm.free.smaller_size, vmm.free.larger_size, vmm.free.offset_ptr, vmm.free.unaligned_size,
// vmm.free.exact, vmm.free.twice, vmm.free.zero, vmm.free.zero_size0, vmm.free.with_mapping.map,
// vmm.free.with_mapping_inside, vmm.free.with_mapping_inside.unmap_after,
// vmm.free.with_mapping_inside.free_after_unmap, vmm.free.with_mapping_inside.release
TEST_F(Vmm, AddressFreeTakesExactlyOneWholeUnmappedReservation) {
  const CUdeviceptr P = reserve(4 * gran);
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemAddressFree(P, 2 * gran));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemAddressFree(P, 8 * gran));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemAddressFree(P + gran, 3 * gran));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemAddressFree(P, 4 * gran - 4096));
  EXPECT_CU(CUDA_SUCCESS, cuMemAddressFree(P, 4 * gran));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemAddressFree(P, 4 * gran));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemAddressFree(0, gran));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemAddressFree(0, 0));
  const CUdeviceptr Q = reserve(2 * gran);
  const CUmemGenericAllocationHandle h = create(gran);
  EXPECT_CU(CUDA_SUCCESS, cuMemMap(Q, gran, 0, h, 0));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemAddressFree(Q, 2 * gran));
  EXPECT_CU(CUDA_SUCCESS, cuMemUnmap(Q, gran));
  EXPECT_CU(CUDA_SUCCESS, cuMemAddressFree(Q, 2 * gran));
  EXPECT_CU(CUDA_SUCCESS, cuMemRelease(h));
}

// ---------------------------------------------------------------------------------------------
// map

// probe: vmm.map.offset_G_into_2G, vmm.map.offset_plus_size_past_end, vmm.map.offset_unaligned_4KiB,
// vmm.map.size_half_G, vmm.map.size_G_of_2G_handle_offset0, vmm.map.size_larger_than_handle
TEST_F(Vmm, MapTakesTheWholeHandleAtOffsetZeroOnly) {
  const CUmemGenericAllocationHandle h2 = create(2 * gran);
  const CUdeviceptr R = reserve(8 * gran);
  EXPECT_CU(CUDA_ERROR_NOT_SUPPORTED, cuMemMap(R, gran, gran, h2, 0));
  EXPECT_CU(CUDA_ERROR_NOT_SUPPORTED, cuMemMap(R, 2 * gran, gran, h2, 0));
  EXPECT_CU(CUDA_ERROR_NOT_SUPPORTED, cuMemMap(R, gran, 4096, h2, 0));
  EXPECT_CU(CUDA_ERROR_NOT_SUPPORTED, cuMemMap(R, gran / 2, 0, h2, 0));
  EXPECT_CU(CUDA_ERROR_NOT_SUPPORTED, cuMemMap(R, gran, 0, h2, 0));
  EXPECT_CU(CUDA_ERROR_NOT_SUPPORTED, cuMemMap(R, 4 * gran, 0, h2, 0));
  EXPECT_CU(CUDA_SUCCESS, cuMemMap(R, 2 * gran, 0, h2, 0));  // the whole handle works
  EXPECT_CU(CUDA_SUCCESS, cuMemUnmap(R, 2 * gran));
  EXPECT_CU(CUDA_SUCCESS, cuMemRelease(h2));
  EXPECT_CU(CUDA_SUCCESS, cuMemAddressFree(R, 8 * gran));
}

// probe: vmm.map.size0, vmm.map.flags1, vmm.map.ptr_unaligned_4KiB, vmm.map.unreserved_freed_va,
// vmm.map.addr0, vmm.map.handle0
TEST_F(Vmm, MapArgumentChecks) {
  const CUmemGenericAllocationHandle h1 = create(gran);
  const CUmemGenericAllocationHandle h2 = create(2 * gran);
  const CUdeviceptr R = reserve(8 * gran);
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemMap(R, 0, 0, h2, 0));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemMap(R, gran, 0, h1, 1));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemMap(R + 4096, gran, 0, h1, 0));
  const CUdeviceptr S = freedVa(2 * gran);
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemMap(S, gran, 0, h1, 0));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemMap(0, gran, 0, h1, 0));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemMap(R, gran, 0, 0, 0));
  EXPECT_CU(CUDA_SUCCESS, cuMemRelease(h1));
  EXPECT_CU(CUDA_SUCCESS, cuMemRelease(h2));
  EXPECT_CU(CUDA_SUCCESS, cuMemAddressFree(R, 8 * gran));
}

// probe: vmm.map.past_end_of_reservation, vmm.map.past_end_of_reservation.addrrange,
// vmm.map.past_end_of_reservation.unmap, vmm.map.neighbor_behind_R,
// vmm.map.past_end_into_neighbor_reservation, vmm.map.past_end_into_neighbor_reservation.unmap
TEST_F(Vmm, MapMayRunPastTheEndOfItsReservation) {
  const CUmemGenericAllocationHandle h2 = create(2 * gran);
  const CUdeviceptr R = reserve(8 * gran);
  EXPECT_CU(CUDA_SUCCESS, cuMemMap(R + 7 * gran, 2 * gran, 0, h2, 0));
  CUdeviceptr base = 0xAAAA;
  size_t size = 0xAAAA;
  EXPECT_CU(CUDA_ERROR_NOT_FOUND, cuMemGetAddressRange(&base, &size, R + 7 * gran));
  EXPECT_EQ(0u, base);
  EXPECT_EQ(0u, size);
  EXPECT_CU(CUDA_SUCCESS, cuMemUnmap(R + 7 * gran, 2 * gran));
  CUdeviceptr T = 0;
  ASSERT_OK(cuMemAddressReserve(&T, 2 * gran, 0, R + 8 * gran, 0));
  if (T == R + 8 * gran) {
    EXPECT_CU(CUDA_SUCCESS, cuMemMap(R + 7 * gran, 2 * gran, 0, h2, 0));
    EXPECT_CU(CUDA_SUCCESS, cuMemUnmap(R + 7 * gran, 2 * gran));
  } else {
    ADD_FAILURE() << "the VA right behind a fresh reservation was not free";
  }
  EXPECT_CU(CUDA_SUCCESS, cuMemAddressFree(T, 2 * gran));
  EXPECT_CU(CUDA_SUCCESS, cuMemRelease(h2));
  EXPECT_CU(CUDA_SUCCESS, cuMemAddressFree(R, 8 * gran));
}

// probe: vmm.map.starting_before_reservation
TEST_F(Vmm, MapMustStartInsideAReservation) {
  const CUmemGenericAllocationHandle h2 = create(2 * gran);
  const CUdeviceptr A = freedVa(10 * gran);
  CUdeviceptr R = 0;
  ASSERT_OK(cuMemAddressReserve(&R, 8 * gran, 0, A + 2 * gran, 0));
  ASSERT_EQ(A + 2 * gran, R) << "a free hint was not honoured";
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemMap(R - gran, 2 * gran, 0, h2, 0));
  EXPECT_CU(CUDA_SUCCESS, cuMemRelease(h2));
  EXPECT_CU(CUDA_SUCCESS, cuMemAddressFree(R, 8 * gran));
}

// probe: vmm.map.first, vmm.map.same_range_same_handle_again, vmm.map.same_range_other_handle,
// vmm.map.partial_overlap_2G, vmm.map.same_handle_second_va, vmm.map.first.unmap
TEST_F(Vmm, MapOverlapRules) {
  const CUmemGenericAllocationHandle h1 = create(gran), h1b = create(gran), h2 = create(2 * gran);
  const CUdeviceptr R = reserve(8 * gran);
  EXPECT_CU(CUDA_SUCCESS, cuMemMap(R, gran, 0, h1, 0));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemMap(R, gran, 0, h1, 0));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemMap(R, gran, 0, h1b, 0));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemMap(R, 2 * gran, 0, h2, 0));
  EXPECT_CU(CUDA_SUCCESS, cuMemMap(R + 2 * gran, gran, 0, h1, 0));  // one handle, two places
  EXPECT_CU(CUDA_SUCCESS, cuMemUnmap(R + 2 * gran, gran));
  EXPECT_CU(CUDA_SUCCESS, cuMemUnmap(R, gran));
  for (auto h : {h1, h1b, h2}) EXPECT_CU(CUDA_SUCCESS, cuMemRelease(h));
  EXPECT_CU(CUDA_SUCCESS, cuMemAddressFree(R, 8 * gran));
}

// probe: vmm.map.adjacent_reservations, vmm.map.spanning_two_reservations,
// vmm.map.spanning_two_reservations.unmap, vmm.map.straddling_two_reservations,
// vmm.free.spanning_two_reservations
TEST_F(Vmm, MapAcrossAdjacentReservations) {
  const CUmemGenericAllocationHandle h2 = create(2 * gran), h4 = create(4 * gran);
  const CUdeviceptr A1 = reserve(2 * gran);
  CUdeviceptr A2 = 0;
  ASSERT_OK(cuMemAddressReserve(&A2, 2 * gran, 0, A1 + 2 * gran, 0));
  ASSERT_EQ(A1 + 2 * gran, A2) << "the VA right behind a fresh reservation was not free";
  EXPECT_CU(CUDA_SUCCESS, cuMemMap(A1, 4 * gran, 0, h4, 0));
  EXPECT_CU(CUDA_SUCCESS, cuMemUnmap(A1, 4 * gran));
  EXPECT_CU(CUDA_SUCCESS, cuMemMap(A1 + gran, 2 * gran, 0, h2, 0));
  EXPECT_CU(CUDA_SUCCESS, cuMemUnmap(A1 + gran, 2 * gran));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemAddressFree(A1, 4 * gran));
  EXPECT_CU(CUDA_SUCCESS, cuMemAddressFree(A1, 2 * gran));
  EXPECT_CU(CUDA_SUCCESS, cuMemAddressFree(A2, 2 * gran));
  EXPECT_CU(CUDA_SUCCESS, cuMemRelease(h2));
  EXPECT_CU(CUDA_SUCCESS, cuMemRelease(h4));
}

// ---------------------------------------------------------------------------------------------
// unmap

// probe: vmm.unmap.setup_map2G, vmm.unmap.partial_first_half, vmm.unmap.partial_second_half,
// vmm.unmap.whole_after_partials, vmm.unmap.two_adjacent.map1, vmm.unmap.two_adjacent.map2,
// vmm.unmap.two_adjacent_one_call, vmm.unmap.repeat.map, vmm.unmap.repeat.first,
// vmm.unmap.repeat.second, vmm.unmap.unmapped_reserved
TEST_F(Vmm, UnmapRemovesWholeMappingsAndToleratesHoles) {
  const CUmemGenericAllocationHandle h1 = create(gran), h1b = create(gran), h2 = create(2 * gran);
  const CUdeviceptr R = reserve(8 * gran);
  EXPECT_CU(CUDA_SUCCESS, cuMemMap(R, 2 * gran, 0, h2, 0));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemUnmap(R, gran));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemUnmap(R + gran, gran));
  EXPECT_CU(CUDA_SUCCESS, cuMemUnmap(R, 2 * gran));
  EXPECT_CU(CUDA_SUCCESS, cuMemMap(R, gran, 0, h1, 0));
  EXPECT_CU(CUDA_SUCCESS, cuMemMap(R + gran, gran, 0, h1b, 0));
  EXPECT_CU(CUDA_SUCCESS, cuMemUnmap(R, 2 * gran));
  EXPECT_CU(CUDA_SUCCESS, cuMemMap(R, gran, 0, h1, 0));  // both were unmapped: R is free again
  EXPECT_CU(CUDA_SUCCESS, cuMemUnmap(R, gran));
  EXPECT_CU(CUDA_SUCCESS, cuMemUnmap(R, gran));
  EXPECT_CU(CUDA_SUCCESS, cuMemUnmap(R + 4 * gran, gran));
  for (auto h : {h1, h1b, h2}) EXPECT_CU(CUDA_SUCCESS, cuMemRelease(h));
  EXPECT_CU(CUDA_SUCCESS, cuMemAddressFree(R, 8 * gran));
}

// probe: vmm.unmap.unaligned.map, vmm.unmap.size_4KiB, vmm.unmap.size_G_minus_4KiB,
// vmm.unmap.ptr_unaligned, vmm.unmap.size0, vmm.unmap.mapping_plus_unmapped_tail,
// vmm.unmap.after_tail_attempt, vmm.unmap.unreserved_va, vmm.unmap.addr0
TEST_F(Vmm, UnmapArgumentChecks) {
  const CUmemGenericAllocationHandle h1 = create(gran);
  const CUdeviceptr R = reserve(8 * gran);
  EXPECT_CU(CUDA_SUCCESS, cuMemMap(R, gran, 0, h1, 0));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemUnmap(R, 4096));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemUnmap(R, gran - 4096));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemUnmap(R + 4096, gran - 4096));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemUnmap(R, 0));
  EXPECT_CU(CUDA_SUCCESS, cuMemUnmap(R, 2 * gran));
  EXPECT_CU(CUDA_SUCCESS, cuMemUnmap(R, gran));
  const CUdeviceptr S = freedVa(2 * gran);
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemUnmap(S, gran));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemUnmap(0, gran));
  EXPECT_CU(CUDA_SUCCESS, cuMemRelease(h1));
  EXPECT_CU(CUDA_SUCCESS, cuMemAddressFree(R, 8 * gran));
}

// ---------------------------------------------------------------------------------------------
// access

// probe: vmm.setaccess.before_map, vmm.setaccess.map2G, vmm.getaccess.mapped_never_set,
// vmm.setaccess.first_half_of_mapping, vmm.getaccess.first_half_after_set,
// vmm.getaccess.second_half_not_set, vmm.getaccess.interior_4KiB, vmm.setaccess.map_adjacent_G,
// vmm.setaccess.span_two_mappings, vmm.getaccess.second_mapping_after_span,
// vmm.setaccess.mapping_plus_unmapped
TEST_F(Vmm, SetAccessMustCoverWholeMappings) {
  const CUmemGenericAllocationHandle h1 = create(gran), h2 = create(2 * gran);
  const CUdeviceptr R = reserve(8 * gran);
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, setAccess(R, gran));
  EXPECT_CU(CUDA_SUCCESS, cuMemMap(R, 2 * gran, 0, h2, 0));
  EXPECT_EQ(0u, access(R));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, setAccess(R, gran));
  EXPECT_EQ(0u, access(R));
  EXPECT_EQ(0u, access(R + gran));
  EXPECT_EQ(0u, access(R + 4096));
  EXPECT_CU(CUDA_SUCCESS, cuMemMap(R + 2 * gran, gran, 0, h1, 0));
  EXPECT_CU(CUDA_SUCCESS, setAccess(R, 3 * gran));
  EXPECT_EQ(3u, access(R + 2 * gran));
  EXPECT_EQ(3u, access(R + gran + 4096));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, setAccess(R + 2 * gran, 2 * gran));
  EXPECT_CU(CUDA_SUCCESS, cuMemUnmap(R, 3 * gran));
  EXPECT_CU(CUDA_SUCCESS, cuMemRelease(h1));
  EXPECT_CU(CUDA_SUCCESS, cuMemRelease(h2));
  EXPECT_CU(CUDA_SUCCESS, cuMemAddressFree(R, 8 * gran));
}

// probe: vmm.setaccess.prot_read, vmm.getaccess.after_prot_read, vmm.setaccess.prot_none,
// vmm.getaccess.after_prot_none, vmm.setaccess.flags2_writeonly, vmm.setaccess.flags7,
// vmm.setaccess.dev_count, vmm.setaccess.dev_neg1, vmm.setaccess.unaligned_size,
// vmm.setaccess.unaligned_ptr, vmm.setaccess.size0, vmm.setaccess.count0,
// vmm.setaccess.duplicate_desc, vmm.setaccess.loc_host, vmm.setaccess.loc_host_numa0,
// vmm.setaccess.loc_invalid, vmm.setaccess.unreserved, vmm.setaccess.rw_restore,
// vmm.getaccess.after_rw, null.setaccess_desc, null.setaccess_desc.count0
TEST_F(Vmm, SetAccessFlagsAndDescriptors) {
  const CUmemGenericAllocationHandle h2 = create(2 * gran);
  const CUdeviceptr R = reserve(8 * gran);
  ASSERT_OK(cuMemMap(R, 2 * gran, 0, h2, 0));
  EXPECT_CU(CUDA_SUCCESS, setAccess(R, 2 * gran, CU_MEM_ACCESS_FLAGS_PROT_READ));
  EXPECT_EQ(1u, access(R));
  EXPECT_CU(CUDA_SUCCESS, setAccess(R, 2 * gran, CU_MEM_ACCESS_FLAGS_PROT_NONE));
  EXPECT_EQ(0u, access(R));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, setAccess(R, 2 * gran, static_cast<CUmemAccess_flags>(2)));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, setAccess(R, 2 * gran, static_cast<CUmemAccess_flags>(7)));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, setAccess(R, 2 * gran, CU_MEM_ACCESS_FLAGS_PROT_READWRITE, deviceCount));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, setAccess(R, 2 * gran, CU_MEM_ACCESS_FLAGS_PROT_READWRITE, -1));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, setAccess(R, gran - 4096));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, setAccess(R + 4096, gran - 4096));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, setAccess(R, 0));
  CUmemAccessDesc ds[2];
  std::memset(ds, 0, sizeof ds);
  for (auto& d : ds) {
    d.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    d.location.id = 0;
    d.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  }
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemSetAccess(R, 2 * gran, ds, 0));
  EXPECT_CU(CUDA_SUCCESS, cuMemSetAccess(R, 2 * gran, ds, 2));
  EXPECT_EQ(3u, access(R));
  ASSERT_OK(setAccess(R, 2 * gran, CU_MEM_ACCESS_FLAGS_PROT_NONE));
  ds[0].location.type = CU_MEM_LOCATION_TYPE_HOST;
  EXPECT_CU(CUDA_ERROR_NOT_SUPPORTED, cuMemSetAccess(R, 2 * gran, ds, 1));
  ds[0].location.type = CU_MEM_LOCATION_TYPE_HOST_NUMA;
  EXPECT_CU(CUDA_ERROR_NOT_SUPPORTED, cuMemSetAccess(R, 2 * gran, ds, 1));
  ds[0].location.type = CU_MEM_LOCATION_TYPE_INVALID;
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemSetAccess(R, 2 * gran, ds, 1));
  EXPECT_EQ(0u, access(R));  // none of the refused calls changed anything
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, setAccess(freedVa(2 * gran), gran));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemSetAccess(R, 2 * gran, nullptr, 1));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemSetAccess(R, 2 * gran, nullptr, 0));
  EXPECT_CU(CUDA_SUCCESS, setAccess(R, 2 * gran));
  EXPECT_EQ(3u, access(R));
  EXPECT_CU(CUDA_SUCCESS, cuMemUnmap(R, 2 * gran));
  EXPECT_CU(CUDA_SUCCESS, cuMemRelease(h2));
  EXPECT_CU(CUDA_SUCCESS, cuMemAddressFree(R, 8 * gran));
}

// probe: vmm.getaccess.unmapped_reserved, vmm.getaccess.unreserved, vmm.getaccess.addr0,
// vmm.getaccess.loc_host, vmm.getaccess.dev_count, vmm.getaccess.after_unmap_remap,
// null.getaccess_loc, null.getaccess_flags
TEST_F(Vmm, GetAccessRules) {
  const CUmemGenericAllocationHandle h2 = create(2 * gran);
  const CUdeviceptr R = reserve(8 * gran);
  ASSERT_OK(cuMemMap(R, 2 * gran, 0, h2, 0));
  ASSERT_OK(setAccess(R, 2 * gran));
  unsigned long long f = 0;
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, getAccess(R + 6 * gran, &f));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, getAccess(freedVa(2 * gran), &f));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, getAccess(0, &f));
  CUmemLocation loc;
  loc.type = CU_MEM_LOCATION_TYPE_HOST;
  loc.id = 0;
  f = 0xAAAA;
  EXPECT_CU(CUDA_SUCCESS, cuMemGetAccess(&f, &loc, R));
  EXPECT_EQ(3u, f);
  loc.type = CU_MEM_LOCATION_TYPE_DEVICE;
  loc.id = deviceCount;
  f = 0xAAAA;
  EXPECT_CU(CUDA_ERROR_INVALID_DEVICE, cuMemGetAccess(&f, &loc, R));
  EXPECT_EQ(0xAAAAu, f);
  f = 0xAAAA;
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemGetAccess(&f, nullptr, R));
  EXPECT_EQ(0xAAAAu, f);
  loc.id = 0;
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemGetAccess(nullptr, &loc, R));
  // Access belongs to the mapping: a new mapping of the same handle starts with none.
  ASSERT_OK(cuMemUnmap(R, 2 * gran));
  ASSERT_OK(cuMemMap(R, 2 * gran, 0, h2, 0));
  EXPECT_EQ(0u, access(R));
  EXPECT_CU(CUDA_SUCCESS, cuMemUnmap(R, 2 * gran));
  EXPECT_CU(CUDA_SUCCESS, cuMemRelease(h2));
  EXPECT_CU(CUDA_SUCCESS, cuMemAddressFree(R, 8 * gran));
}

// Multi-GPU: access is granted per device; one device's rights say nothing of another's.
TEST_F(Vmm, AccessIsPerDevice) {
  REQUIRE_DEVICES(2);
  Range r;
  makeRange(&r, 1, false);
  EXPECT_CU(CUDA_SUCCESS, setAccess(r.va, r.size, CU_MEM_ACCESS_FLAGS_PROT_READWRITE, 1));
  unsigned long long f = 0;
  EXPECT_CU(CUDA_SUCCESS, getAccess(r.va, &f, 1));
  EXPECT_EQ(3u, f);
  EXPECT_CU(CUDA_SUCCESS, getAccess(r.va, &f, 0));
  EXPECT_EQ(0u, f);
  EXPECT_CU(CUDA_SUCCESS, setAccess(r.va, r.size, CU_MEM_ACCESS_FLAGS_PROT_READ, 0));
  EXPECT_CU(CUDA_SUCCESS, getAccess(r.va, &f, 0));
  EXPECT_EQ(1u, f);
  EXPECT_CU(CUDA_SUCCESS, getAccess(r.va, &f, 1));
  EXPECT_EQ(3u, f);
  dropRange(r);
}

// ---------------------------------------------------------------------------------------------
// properties, retain

// probe: vmm.props.h1, vmm.props.h2, vmm.props.posix_fd, vmm.props.host_numa0,
// vmm.props.rdma_compressible, vmm.props.handle0, null.props_out
TEST_F(Vmm, PropertiesFromHandle) {
  const CUmemGenericAllocationHandle h1 = create(gran), h2 = create(2 * gran);
  expectDeviceProps(h1, 0);
  expectDeviceProps(h2, 0);
  const CUmemGenericAllocationHandle hp = create(gran, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  expectDeviceProps(hp, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  CUmemAllocationProp q = devicePinned(0);
  q.allocFlags.gpuDirectRDMACapable = 1;
  q.allocFlags.compressionType = CU_MEM_ALLOCATION_COMP_GENERIC;
  CUmemGenericAllocationHandle hg = 0;
  ASSERT_OK(cuMemCreate(&hg, gran, &q, 0));
  expectDeviceProps(hg, 0, 1);  // compression is not granted; RDMA is remembered
  q = devicePinned(0);
  q.location.type = CU_MEM_LOCATION_TYPE_HOST_NUMA;
  q.location.id = 0;
  CUmemGenericAllocationHandle hh = 0;
  ASSERT_OK(cuMemCreate(&hh, gran, &q, 0));
  CUresult r;
  CUmemAllocationProp p = props(hh, &r);
  EXPECT_CU(CUDA_SUCCESS, r);
  EXPECT_EQ(CU_MEM_ALLOCATION_TYPE_PINNED, p.type);
  EXPECT_EQ(CU_MEM_LOCATION_TYPE_HOST_NUMA, p.location.type);
  EXPECT_EQ(0, p.location.id);
  EXPECT_EQ(0u, static_cast<unsigned>(p.requestedHandleTypes));
  p = props(0, &r);
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, r);
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemGetAllocationPropertiesFromHandle(nullptr, h1));
  for (auto h : {h1, h2, hp, hg, hh}) EXPECT_CU(CUDA_SUCCESS, cuMemRelease(h));
}

// probe: vmm.retain.setup_map, vmm.retain.base, vmm.retain.interior_offset,
// vmm.retain.release_interior_retained, vmm.retain.last_byte, vmm.retain.release_original_first,
// vmm.retain.props_of_retained_after_original_released, vmm.retain.props_of_original_after_release,
// vmm.retain.release_retained, vmm.retain.props_after_all_released_still_mapped,
// vmm.retain.after_all_handles_released_still_mapped, vmm.retain.unmap
TEST_F(Vmm, RetainReturnsTheOriginalHandleValue) {
  const CUmemGenericAllocationHandle hM = create(2 * gran);
  const CUdeviceptr R = reserve(8 * gran);
  EXPECT_CU(CUDA_SUCCESS, cuMemMap(R, 2 * gran, 0, hM, 0));
  CUmemGenericAllocationHandle rh = 0;
  EXPECT_CU(CUDA_SUCCESS, cuMemRetainAllocationHandle(&rh, reinterpret_cast<void*>(R)));
  EXPECT_EQ(hM, rh);
  CUmemGenericAllocationHandle rh2 = 0;
  EXPECT_CU(CUDA_SUCCESS, cuMemRetainAllocationHandle(&rh2, reinterpret_cast<void*>(R + gran + 4096)));
  EXPECT_EQ(hM, rh2);
  EXPECT_CU(CUDA_SUCCESS, cuMemRelease(rh2));
  CUmemGenericAllocationHandle rh3 = 0;
  EXPECT_CU(CUDA_SUCCESS, cuMemRetainAllocationHandle(&rh3, reinterpret_cast<void*>(R + 2 * gran - 1)));
  EXPECT_EQ(hM, rh3);
  EXPECT_CU(CUDA_SUCCESS, cuMemRelease(rh3));
  // Each retain is one more reference on the same value: release it as often as it was had.
  EXPECT_CU(CUDA_SUCCESS, cuMemRelease(hM));
  expectDeviceProps(rh, 0);
  EXPECT_CU(CUDA_SUCCESS, cuMemRelease(rh));
  // Every reference released, but still mapped: the handle still answers.
  expectDeviceProps(hM, 0);
  CUmemGenericAllocationHandle rh4 = 0;
  EXPECT_CU(CUDA_SUCCESS, cuMemRetainAllocationHandle(&rh4, reinterpret_cast<void*>(R)));
  EXPECT_EQ(hM, rh4);
  EXPECT_CU(CUDA_SUCCESS, cuMemRelease(rh4));
  EXPECT_CU(CUDA_SUCCESS, cuMemUnmap(R, 2 * gran));
  EXPECT_CU(CUDA_SUCCESS, cuMemAddressFree(R, 8 * gran));
}

// probe: vmm.retain.unmapped_reserved, vmm.retain.cuMemAlloc, vmm.retain.malloc_host,
// vmm.retain.cuMemAllocHost, vmm.retain.null_addr, null.retain_out
TEST_F(Vmm, RetainOfAnythingButAVmmMappingIsInvalid) {
  const CUdeviceptr R = reserve(2 * gran);
  CUdeviceptr d = 0;
  ASSERT_OK(cuMemAlloc(&d, 1 << 20));
  void* pinned = nullptr;
  ASSERT_OK(cuMemAllocHost(&pinned, 1 << 20));
  void* m = std::malloc(1 << 20);
  for (void* addr : {reinterpret_cast<void*>(R), reinterpret_cast<void*>(d), m, pinned, static_cast<void*>(nullptr)}) {
    CUmemGenericAllocationHandle h = 0;
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemRetainAllocationHandle(&h, addr)) << addr;
    EXPECT_EQ(0u, h);
  }
  Range r;
  makeRange(&r, 1);
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemRetainAllocationHandle(nullptr, reinterpret_cast<void*>(r.va)));
  dropRange(r);
  std::free(m);
  EXPECT_CU(CUDA_SUCCESS, cuMemFreeHost(pinned));
  EXPECT_CU(CUDA_SUCCESS, cuMemFree(d));
  EXPECT_CU(CUDA_SUCCESS, cuMemAddressFree(R, 2 * gran));
}

// ---------------------------------------------------------------------------------------------
// address range

// probe: vmm.addrrange.vmm_mapping_base, vmm.addrrange.vmm_mapping_offset,
// vmm.addrrange.vmm_reservation_base_unmapped, vmm.addrrange.vmm_unmapped_in_reservation,
// vmm.addrrange.cuMemAlloc_interior, vmm.addrrange.cuMemAlloc_one_past_end,
// vmm.addrrange.malloc_host, vmm.addrrange.cuMemAllocHost_interior, vmm.addrrange.zero
TEST_F(Vmm, AddressRange) {
  const CUdeviceptr R = reserve(8 * gran);
  const CUmemGenericAllocationHandle hA = create(2 * gran);
  ASSERT_OK(cuMemMap(R + 2 * gran, 2 * gran, 0, hA, 0));
  ASSERT_OK(setAccess(R + 2 * gran, 2 * gran));
  CUdeviceptr d = 0;
  ASSERT_OK(cuMemAlloc(&d, 1 << 20));
  void* pinned = nullptr;
  ASSERT_OK(cuMemAllocHost(&pinned, 1 << 20));
  void* m = std::malloc(1 << 20);
  struct Case {
    CUdeviceptr p;
    CUresult want;
    CUdeviceptr base;
    size_t size;
  };
  const CUdeviceptr hp = reinterpret_cast<CUdeviceptr>(pinned);
  for (Case c : {Case{R + 2 * gran, CUDA_SUCCESS, R + 2 * gran, 2 * gran},  // the mapping, not the reservation
                 Case{R + 3 * gran + 123, CUDA_SUCCESS, R + 2 * gran, 2 * gran},
                 Case{R, CUDA_ERROR_NOT_FOUND, 0, 0}, Case{R + 6 * gran, CUDA_ERROR_NOT_FOUND, 0, 0},
                 Case{d + 100, CUDA_SUCCESS, d, size_t{1} << 20},  // what cuMemAlloc was asked for
                 Case{d + (1 << 20), CUDA_ERROR_NOT_FOUND, 0, 0},
                 Case{reinterpret_cast<CUdeviceptr>(m), CUDA_ERROR_NOT_FOUND, 0, 0},
                 Case{hp + 100, CUDA_SUCCESS, hp, size_t{1} << 20}, Case{0, CUDA_ERROR_NOT_FOUND, 0, 0}}) {
    CUdeviceptr base = 0xAAAA;
    size_t size = 0xAAAA;
    EXPECT_CU(c.want, cuMemGetAddressRange(&base, &size, c.p)) << std::hex << c.p;
    EXPECT_EQ(c.base, base) << std::hex << c.p;  // a failure writes zeros
    EXPECT_EQ(c.size, size) << std::hex << c.p;
  }
  std::free(m);
  EXPECT_CU(CUDA_SUCCESS, cuMemFreeHost(pinned));
  EXPECT_CU(CUDA_SUCCESS, cuMemFree(d));
  EXPECT_CU(CUDA_SUCCESS, cuMemUnmap(R + 2 * gran, 2 * gran));
  EXPECT_CU(CUDA_SUCCESS, cuMemRelease(hA));
  EXPECT_CU(CUDA_SUCCESS, cuMemAddressFree(R, 8 * gran));
}

// probe: null.addrrange_base, null.addrrange_size, null.addrrange_both
TEST_F(Vmm, AddressRangeOutputsMayBeNull) {
  CUdeviceptr d = 0;
  ASSERT_OK(cuMemAlloc(&d, 1 << 20));
  size_t size = 0xAAAA;
  EXPECT_CU(CUDA_SUCCESS, cuMemGetAddressRange(nullptr, &size, d + 8));
  EXPECT_EQ(size_t{1} << 20, size);
  CUdeviceptr base = 0xAAAA;
  EXPECT_CU(CUDA_SUCCESS, cuMemGetAddressRange(&base, nullptr, d + 8));
  EXPECT_EQ(d, base);
  EXPECT_CU(CUDA_SUCCESS, cuMemGetAddressRange(nullptr, nullptr, d + 8));
  EXPECT_CU(CUDA_SUCCESS, cuMemFree(d));
}

// ---------------------------------------------------------------------------------------------
// POSIX-fd export / import

// probe: vmm.share.create_posix, vmm.export.non_exportable, vmm.export.posix_fd,
// vmm.export.posix_fd.fdinfo, vmm.export.posix_fd_again, vmm.export.flags1,
// vmm.export.type_fabric_on_posix_handle, vmm.export.type_win32, vmm.export.type_none,
// vmm.export.handle0, null.export_out
TEST_F(Vmm, ExportRules) {
  const CUmemGenericAllocationHandle hN = create(gran);
  const CUmemGenericAllocationHandle hP = create(gran, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  int fd = -7;
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemExportToShareableHandle(&fd, hN, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
  EXPECT_EQ(-7, fd);
  EXPECT_CU(CUDA_SUCCESS, cuMemExportToShareableHandle(&fd, hP, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
  ASSERT_GE(fd, 0);
  const int fdFlags = fcntl(fd, F_GETFD);
  ASSERT_GE(fdFlags, 0);
  EXPECT_NE(0, fdFlags & FD_CLOEXEC);
  EXPECT_EQ(O_RDWR, fcntl(fd, F_GETFL) & O_ACCMODE);
  int fd2 = -7;
  EXPECT_CU(CUDA_SUCCESS, cuMemExportToShareableHandle(&fd2, hP, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
  EXPECT_GE(fd2, 0);
  EXPECT_NE(fd, fd2);  // a new descriptor per export
  int fd3 = -7;
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemExportToShareableHandle(&fd3, hP, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 1));
  EXPECT_EQ(-7, fd3);
  unsigned char fabric[64];
  std::memset(fabric, 0xAA, sizeof fabric);
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemExportToShareableHandle(fabric, hP, CU_MEM_HANDLE_TYPE_FABRIC, 0));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemExportToShareableHandle(&fd3, hP, CU_MEM_HANDLE_TYPE_WIN32, 0));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemExportToShareableHandle(&fd3, hP, CU_MEM_HANDLE_TYPE_NONE, 0));
  EXPECT_EQ(-7, fd3);
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemExportToShareableHandle(&fd3, 0, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
  EXPECT_EQ(-7, fd3);
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemExportToShareableHandle(nullptr, hP, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
  close(fd);
  close(fd2);
  EXPECT_CU(CUDA_SUCCESS, cuMemRelease(hN));
  EXPECT_CU(CUDA_SUCCESS, cuMemRelease(hP));
}

CUresult importFd(int fd, CUmemGenericAllocationHandle* h) {
  *h = 0;
  return cuMemImportFromShareableHandle(h, reinterpret_cast<void*>(static_cast<intptr_t>(fd)),
                                        CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
}

// probe: vmm.import.fd_neg1, vmm.import.dev_null_fd, vmm.import.regular_file_fd, vmm.import.pipe_fd,
// vmm.import.fd_100000_unopened, vmm.import.closed_fd
TEST_F(Vmm, ImportOfForeignDescriptorsIsUnknown) {
  CUmemGenericAllocationHandle h = 0;
  EXPECT_CU(CUDA_ERROR_UNKNOWN, importFd(-1, &h));
  EXPECT_EQ(0u, h);
  const int dn = open("/dev/null", O_RDWR);
  ASSERT_GE(dn, 0);
  EXPECT_CU(CUDA_ERROR_UNKNOWN, importFd(dn, &h));
  EXPECT_EQ(0u, h);
  close(dn);
  FILE* tf = tmpfile();
  ASSERT_NE(nullptr, tf);
  std::fputs("not a cuda handle", tf);
  std::fflush(tf);
  EXPECT_CU(CUDA_ERROR_UNKNOWN, importFd(fileno(tf), &h));
  EXPECT_EQ(0u, h);
  std::fclose(tf);
  int pfd[2];
  ASSERT_EQ(0, pipe(pfd));
  EXPECT_CU(CUDA_ERROR_UNKNOWN, importFd(pfd[0], &h));
  close(pfd[0]);
  close(pfd[1]);
  EXPECT_CU(CUDA_ERROR_UNKNOWN, importFd(100000, &h));
  const CUmemGenericAllocationHandle hP = create(gran, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  int fd = -1;
  ASSERT_OK(cuMemExportToShareableHandle(&fd, hP, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
  close(fd);
  EXPECT_CU(CUDA_ERROR_UNKNOWN, importFd(fd, &h));
  EXPECT_EQ(0u, h);
  EXPECT_CU(CUDA_SUCCESS, cuMemRelease(hP));
}

// probe: vmm.import.posix_fd, vmm.import.posix_fd_twice_same_fd, vmm.import.second_exported_fd,
// vmm.import.props_imported, vmm.import.fd_after_import, vmm.import.wrong_type_win32,
// vmm.import.wrong_type_none, vmm.import.release_imported,
// vmm.import.props_original_after_import_release, vmm.import.release_imported2,
// vmm.import.release_imported3, vmm.import.release_original,
// vmm.import.after_all_handles_released_fd_open, vmm.import.after_all_released.props, null.import_out
TEST_F(Vmm, ImportGivesNewHandlesAndWorksWhileTheDescriptorIsOpen) {
  const CUmemGenericAllocationHandle hP = create(gran, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  int fd = -1, fd2 = -1;
  ASSERT_OK(cuMemExportToShareableHandle(&fd, hP, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
  ASSERT_OK(cuMemExportToShareableHandle(&fd2, hP, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
  CUmemGenericAllocationHandle hi = 0, hi2 = 0, hi3 = 0;
  EXPECT_CU(CUDA_SUCCESS, importFd(fd, &hi));
  EXPECT_NE(0u, hi);
  EXPECT_NE(hP, hi);
  EXPECT_CU(CUDA_SUCCESS, importFd(fd, &hi2));
  EXPECT_NE(hi, hi2);
  EXPECT_NE(hP, hi2);
  EXPECT_CU(CUDA_SUCCESS, importFd(fd2, &hi3));
  EXPECT_NE(hi, hi3);
  EXPECT_NE(hP, hi3);
  expectDeviceProps(hi, 0);  // an imported handle cannot be exported again
  EXPECT_GE(fcntl(fd, F_GETFD), 0) << "import closed the descriptor";
  CUmemGenericAllocationHandle hw = 0;
  EXPECT_CU(CUDA_ERROR_NOT_SUPPORTED,
            cuMemImportFromShareableHandle(&hw, reinterpret_cast<void*>(static_cast<intptr_t>(fd)), CU_MEM_HANDLE_TYPE_WIN32));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE,
            cuMemImportFromShareableHandle(&hw, reinterpret_cast<void*>(static_cast<intptr_t>(fd)), CU_MEM_HANDLE_TYPE_NONE));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE,
            cuMemImportFromShareableHandle(nullptr, reinterpret_cast<void*>(static_cast<intptr_t>(fd)),
                                           CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
  EXPECT_CU(CUDA_SUCCESS, cuMemRelease(hi));
  expectDeviceProps(hP, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  EXPECT_CU(CUDA_SUCCESS, cuMemRelease(hi2));
  EXPECT_CU(CUDA_SUCCESS, cuMemRelease(hi3));
  EXPECT_CU(CUDA_SUCCESS, cuMemRelease(hP));
  // Every handle is gone, but the open descriptor still holds the allocation.
  CUmemGenericAllocationHandle h4 = 0;
  EXPECT_CU(CUDA_SUCCESS, importFd(fd, &h4));
  expectDeviceProps(h4, 0);
  EXPECT_CU(CUDA_SUCCESS, cuMemRelease(h4));
  close(fd);
  close(fd2);
}

// ---------------------------------------------------------------------------------------------
// data through VMM mappings

// probe: vmm.data.offset.map_full, vmm.data.offset.map_alias_second_half, vmm.data.offset.setaccess,
// vmm.data.offset.memset_all_11, vmm.data.offset.memset_second_half_22, vmm.data.offset.sync,
// vmm.data.offset.read_alias, vmm.data.offset.read_first_half
TEST_F(Vmm, AnAliasAtAnOffsetIsRefusedAndItsRangeHasNoAccess) {
  const CUmemGenericAllocationHandle h2 = create(2 * gran);
  const CUdeviceptr R = reserve(4 * gran);
  EXPECT_CU(CUDA_SUCCESS, cuMemMap(R, 2 * gran, 0, h2, 0));
  EXPECT_CU(CUDA_ERROR_NOT_SUPPORTED, cuMemMap(R + 2 * gran, gran, gran, h2, 0));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, setAccess(R, 3 * gran));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemsetD8(R, 0x11, 2 * gran));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemsetD8(R + gran, 0x22, gran));
  EXPECT_CU(CUDA_SUCCESS, cuCtxSynchronize());
  unsigned char b[4];
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, read4(R + 2 * gran, b));
  EXPECT_TRUE(bytesAre(b, {0xee, 0xee, 0xee, 0xee}));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, read4(R, b));
  EXPECT_TRUE(bytesAre(b, {0xee, 0xee, 0xee, 0xee}));
  EXPECT_CU(CUDA_SUCCESS, cuMemUnmap(R, 2 * gran));
  EXPECT_CU(CUDA_SUCCESS, cuMemRelease(h2));
  EXPECT_CU(CUDA_SUCCESS, cuMemAddressFree(R, 4 * gran));
}

// probe: vmm.data.span.setaccess_both_one_call, vmm.data.span.memset_across_boundary,
// vmm.data.span.htod_across_boundary, vmm.data.span.sync, vmm.data.span.read_across_boundary,
// vmm.data.span.dtod_across_boundary, vmm.data.span.sync2, vmm.data.span.read_dtod_dst
TEST_F(Vmm, CopiesAndMemsetsCrossFromOneMappingIntoTheNext) {
  const CUmemGenericAllocationHandle a = create(gran), b = create(gran);
  const CUdeviceptr R = reserve(2 * gran);
  ASSERT_OK(cuMemMap(R, gran, 0, a, 0));
  ASSERT_OK(cuMemMap(R + gran, gran, 0, b, 0));
  EXPECT_CU(CUDA_SUCCESS, setAccess(R, 2 * gran));
  EXPECT_CU(CUDA_SUCCESS, cuMemsetD8(R + gran - 8, 0x44, 16));
  unsigned char src[16];
  std::memset(src, 0x66, sizeof src);
  EXPECT_CU(CUDA_SUCCESS, cuMemcpyHtoD(R + gran - 4, src, 8));
  EXPECT_CU(CUDA_SUCCESS, cuCtxSynchronize());
  const unsigned char want[16] = {0x44, 0x44, 0x44, 0x44, 0x66, 0x66, 0x66, 0x66,
                                  0x66, 0x66, 0x66, 0x66, 0x44, 0x44, 0x44, 0x44};
  unsigned char got[16];
  std::memset(got, 0xEE, sizeof got);
  EXPECT_CU(CUDA_SUCCESS, cuMemcpyDtoH(got, R + gran - 8, 16));
  EXPECT_EQ(0, std::memcmp(want, got, 16));
  EXPECT_CU(CUDA_SUCCESS, cuMemcpyDtoD(R, R + gran - 8, 16));
  EXPECT_CU(CUDA_SUCCESS, cuCtxSynchronize());
  std::memset(got, 0xEE, sizeof got);
  EXPECT_CU(CUDA_SUCCESS, cuMemcpyDtoH(got, R, 16));
  EXPECT_EQ(0, std::memcmp(want, got, 16));
  EXPECT_CU(CUDA_SUCCESS, cuMemUnmap(R, 2 * gran));
  EXPECT_CU(CUDA_SUCCESS, cuMemAddressFree(R, 2 * gran));
  EXPECT_CU(CUDA_SUCCESS, cuMemRelease(a));
  EXPECT_CU(CUDA_SUCCESS, cuMemRelease(b));
}

// probe: vmm.data.release_mapped.map, vmm.data.release_mapped.release,
// vmm.data.release_mapped.setaccess_after_release, vmm.data.release_mapped.memsetD8,
// vmm.data.release_mapped.htod, vmm.data.release_mapped.dtoh, vmm.data.release_mapped.read_memset_area,
// vmm.data.release_mapped.sync, vmm.data.release_mapped.props_of_released_handle,
// vmm.data.release_mapped.retain_from_va, vmm.data.release_mapped.unmap, vmm.data.release_mapped.free
TEST_F(Vmm, ReleaseWhileMappedKeepsTheMemoryAndItsData) {
  const CUmemGenericAllocationHandle h = create(gran);
  const CUdeviceptr R = reserve(gran);
  EXPECT_CU(CUDA_SUCCESS, cuMemMap(R, gran, 0, h, 0));
  EXPECT_CU(CUDA_SUCCESS, cuMemRelease(h));
  EXPECT_CU(CUDA_SUCCESS, setAccess(R, gran));
  EXPECT_CU(CUDA_SUCCESS, cuMemsetD8(R, 0x5a, gran));
  unsigned char src[16], dst[16];
  for (int i = 0; i < 16; ++i) src[i] = static_cast<unsigned char>(0xA0 + i);
  EXPECT_CU(CUDA_SUCCESS, cuMemcpyHtoD(R + 64, src, 16));
  std::memset(dst, 0, sizeof dst);
  EXPECT_CU(CUDA_SUCCESS, cuMemcpyDtoH(dst, R + 64, 16));
  EXPECT_EQ(0, std::memcmp(src, dst, 16));
  unsigned char b[4];
  EXPECT_CU(CUDA_SUCCESS, read4(R, b));
  EXPECT_TRUE(bytesAre(b, {0x5a, 0x5a, 0x5a, 0x5a}));
  EXPECT_CU(CUDA_SUCCESS, cuCtxSynchronize());
  expectDeviceProps(h, 0);  // the released value still names the mapped allocation
  CUmemGenericAllocationHandle rh = 0;
  EXPECT_CU(CUDA_SUCCESS, cuMemRetainAllocationHandle(&rh, reinterpret_cast<void*>(R)));
  EXPECT_EQ(h, rh);
  EXPECT_CU(CUDA_SUCCESS, cuMemRelease(rh));
  EXPECT_CU(CUDA_SUCCESS, cuMemUnmap(R, gran));
  EXPECT_CU(CUDA_SUCCESS, cuMemAddressFree(R, gran));
}

// probe: vmm.data.import.import, vmm.data.import.map_original, vmm.data.import.map_imported,
// vmm.data.import.getaccess_imported_before_set, vmm.data.import.read_via_imported
TEST_F(Vmm, AnImportedHandleSharesTheMemory) {
  const CUmemGenericAllocationHandle hP = create(gran, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  int fd = -1;
  ASSERT_OK(cuMemExportToShareableHandle(&fd, hP, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
  CUmemGenericAllocationHandle hi = 0;
  EXPECT_CU(CUDA_SUCCESS, importFd(fd, &hi));
  const CUdeviceptr A = reserve(gran), B = reserve(gran);
  EXPECT_CU(CUDA_SUCCESS, cuMemMap(A, gran, 0, hP, 0));
  EXPECT_CU(CUDA_SUCCESS, cuMemMap(B, gran, 0, hi, 0));
  ASSERT_OK(setAccess(A, gran));
  EXPECT_EQ(0u, access(B));
  ASSERT_OK(setAccess(B, gran));
  ASSERT_OK(cuMemsetD8(A, 0x5c, 16));
  ASSERT_OK(cuCtxSynchronize());
  unsigned char b[4];
  EXPECT_CU(CUDA_SUCCESS, read4(B, b));
  EXPECT_TRUE(bytesAre(b, {0x5c, 0x5c, 0x5c, 0x5c}));
  EXPECT_CU(CUDA_SUCCESS, cuMemUnmap(A, gran));
  EXPECT_CU(CUDA_SUCCESS, cuMemUnmap(B, gran));
  EXPECT_CU(CUDA_SUCCESS, cuMemAddressFree(A, gran));
  EXPECT_CU(CUDA_SUCCESS, cuMemAddressFree(B, gran));
  EXPECT_CU(CUDA_SUCCESS, cuMemRelease(hi));
  EXPECT_CU(CUDA_SUCCESS, cuMemRelease(hP));
  close(fd);
}

// probe: vmm.data.partial_access.set_first_half, vmm.data.partial_access.memset_first_half,
// vmm.data.partial_access.sync, vmm.data.full_access.set, vmm.data.full_access.memset,
// vmm.data.full_access.memset_interior_unaligned, vmm.data.full_access.sync,
// vmm.data.full_access.read_interior, vmm.data.full_access.memset_past_mapping_end,
// vmm.data.full_access.htod_past_mapping_end, vmm.data.full_access.sync2, vmm.data.memsetD16,
// vmm.data.memsetD32, vmm.data.memsetD16.read, vmm.data.memsetD32.read,
// vmm.data.dtod_vmm_to_memalloc, vmm.data.dtod_memalloc_to_vmm, vmm.data.sync2
TEST_F(Vmm, MemsetsAndCopiesOnAFullyAccessibleMapping) {
  const CUmemGenericAllocationHandle h2 = create(2 * gran);
  const CUdeviceptr R = reserve(2 * gran);
  ASSERT_OK(cuMemMap(R, 2 * gran, 0, h2, 0));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, setAccess(R, gran));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemsetD8(R, 0x01, gran));
  EXPECT_CU(CUDA_SUCCESS, cuCtxSynchronize());
  EXPECT_CU(CUDA_SUCCESS, setAccess(R, 2 * gran));
  EXPECT_CU(CUDA_SUCCESS, cuMemsetD8(R, 0x01, 2 * gran));
  EXPECT_CU(CUDA_SUCCESS, cuMemsetD8(R + 12345, 0x02, 777));
  EXPECT_CU(CUDA_SUCCESS, cuCtxSynchronize());
  unsigned char b[4];
  EXPECT_CU(CUDA_SUCCESS, read4(R + 12344, b));
  EXPECT_TRUE(bytesAre(b, {0x01, 0x02, 0x02, 0x02}));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemsetD8(R + 2 * gran - 512, 0x03, 1024));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemcpyHtoD(R + 2 * gran - 8, "0123456789abcdef", 16));
  EXPECT_CU(CUDA_SUCCESS, cuCtxSynchronize());
  EXPECT_CU(CUDA_SUCCESS, read4(R + 2 * gran - 4, b));
  EXPECT_TRUE(bytesAre(b, {0x01, 0x01, 0x01, 0x01})) << "a refused memset wrote";
  EXPECT_CU(CUDA_SUCCESS, cuMemsetD16(R, 0x1234, 8));
  EXPECT_CU(CUDA_SUCCESS, cuMemsetD32(R + 16, 0xdeadbeef, 4));
  EXPECT_CU(CUDA_SUCCESS, cuCtxSynchronize());
  EXPECT_CU(CUDA_SUCCESS, read4(R, b));
  EXPECT_TRUE(bytesAre(b, {0x34, 0x12, 0x34, 0x12}));
  EXPECT_CU(CUDA_SUCCESS, read4(R + 16, b));
  EXPECT_TRUE(bytesAre(b, {0xef, 0xbe, 0xad, 0xde}));
  CUdeviceptr d = 0;
  ASSERT_OK(cuMemAlloc(&d, 1 << 20));
  EXPECT_CU(CUDA_SUCCESS, cuMemcpyDtoD(d, R, 4096));
  EXPECT_CU(CUDA_SUCCESS, cuMemcpyDtoD(R + 4096, d, 4096));
  EXPECT_CU(CUDA_SUCCESS, cuCtxSynchronize());
  EXPECT_CU(CUDA_SUCCESS, read4(R + 4096, b));
  EXPECT_TRUE(bytesAre(b, {0x34, 0x12, 0x34, 0x12}));
  EXPECT_CU(CUDA_SUCCESS, cuMemFree(d));
  EXPECT_CU(CUDA_SUCCESS, cuMemUnmap(R, 2 * gran));
  EXPECT_CU(CUDA_SUCCESS, cuMemAddressFree(R, 2 * gran));
  EXPECT_CU(CUDA_SUCCESS, cuMemRelease(h2));
}

// After a refused operation the context is healthy: synchronize, allocate and memset still work.
void expectHealthyAfterRefusal() {
  EXPECT_CU(CUDA_SUCCESS, cuCtxSynchronize());
  EXPECT_CU(CUDA_SUCCESS, cuCtxSynchronize());
  CUdeviceptr d = 0;
  EXPECT_CU(CUDA_SUCCESS, cuMemAlloc(&d, 1 << 20));
  EXPECT_CU(CUDA_SUCCESS, cuMemsetD8(d, 0, 1 << 20));
  EXPECT_CU(CUDA_SUCCESS, cuCtxSynchronize());
  EXPECT_CU(CUDA_SUCCESS, cuMemFree(d));
}

// probe: fault.vmm_noaccess_memset.*, fault.vmm_noaccess_htod.*, fault.vmm_noaccess_dtoh.*
TEST_F(Vmm, GpuOperationsOnMemoryWithoutAccessAreInvalidValue) {
  Range r;
  makeRange(&r, 1, false);
  static unsigned char hb[4096];
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemsetD8(r.va, 1, 4096));
  expectHealthyAfterRefusal();
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemcpyHtoD(r.va, hb, 4096));
  expectHealthyAfterRefusal();
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemcpyDtoH(hb, r.va, 4096));
  expectHealthyAfterRefusal();
  dropRange(r);
}

// probe: fault.vmm_readonly_dtoh.*, fault.vmm_readonly_memset.*, fault.vmm_readonly_htod.*,
// fault.vmm_protnone_memset.*
TEST_F(Vmm, ReadOnlyMemoryCanBeReadButNotWritten) {
  Range r;
  makeRange(&r, 1, false);
  static unsigned char hb[4096];
  EXPECT_CU(CUDA_SUCCESS, setAccess(r.va, r.size, CU_MEM_ACCESS_FLAGS_PROT_READ));
  EXPECT_CU(CUDA_SUCCESS, cuMemcpyDtoH(hb, r.va, 4096));
  expectHealthyAfterRefusal();
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemsetD8(r.va, 1, 4096));
  expectHealthyAfterRefusal();
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemcpyHtoD(r.va, hb, 4096));
  expectHealthyAfterRefusal();
  EXPECT_CU(CUDA_SUCCESS, setAccess(r.va, r.size));
  EXPECT_CU(CUDA_SUCCESS, setAccess(r.va, r.size, CU_MEM_ACCESS_FLAGS_PROT_NONE));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemsetD8(r.va, 1, 4096));
  expectHealthyAfterRefusal();
  dropRange(r);
}

// probe: fault.vmm_second_half_noaccess_memset.*, fault.vmm_unmapped_memset.*,
// fault.vmm_unmapped_htod.*, fault.vmm_after_unmap_memset.*, fault.memset_freed_va.*
TEST_F(Vmm, GpuOperationsOnUnmappedOrUnreservedVaAreInvalidValue) {
  static unsigned char hb[4096];
  const CUmemGenericAllocationHandle h2 = create(2 * gran);
  const CUdeviceptr R = reserve(2 * gran);
  ASSERT_OK(cuMemMap(R, 2 * gran, 0, h2, 0));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, setAccess(R, gran));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemsetD8(R + gran, 1, 4096));
  expectHealthyAfterRefusal();
  ASSERT_OK(setAccess(R, 2 * gran));
  ASSERT_OK(cuMemsetD8(R, 1, 4096));
  EXPECT_CU(CUDA_SUCCESS, cuCtxSynchronize());
  EXPECT_CU(CUDA_SUCCESS, cuMemUnmap(R, 2 * gran));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemsetD8(R, 1, 4096));  // after unmap
  expectHealthyAfterRefusal();
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemcpyHtoD(R, hb, 4096));  // reserved, unmapped
  expectHealthyAfterRefusal();
  EXPECT_CU(CUDA_SUCCESS, cuMemAddressFree(R, 2 * gran));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemsetD8(R, 1, 4096));  // freed VA
  expectHealthyAfterRefusal();
  EXPECT_CU(CUDA_SUCCESS, cuMemRelease(h2));
}

}  // namespace
