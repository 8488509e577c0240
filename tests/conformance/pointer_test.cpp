// cuPointerGetAttribute(s) on each kind of memory. Only what is not run-dependent is asserted:
// results, types, sizes written, flags, NULL-ness and relations between addresses (never raw
// addresses, buffer ids or handle values).
#include <cstdlib>
#include <cstring>

#include "tests/conformance/conformance.h"

namespace {

constexpr size_t kMiB = size_t{1} << 20;

// One attribute's answer, read into a buffer pre-filled with 0xAA.
struct Answer {
  CUresult r = CUDA_SUCCESS;
  alignas(16) unsigned char buf[64];
  uint64_t u64() const {
    uint64_t v;
    std::memcpy(&v, buf, 8);
    return v;
  }
  uint32_t u32() const {
    uint32_t v;
    std::memcpy(&v, buf, 4);
    return v;
  }
  // Whether nothing at or past byte `width` was written.
  bool widthAtMost(size_t width) const {
    for (size_t i = width; i < sizeof buf; ++i) {
      if (buf[i] != 0xAA) return false;
    }
    return true;
  }
};

Answer ask(CUpointer_attribute a, CUdeviceptr p) {
  Answer x;
  std::memset(x.buf, 0xAA, sizeof x.buf);
  x.r = cuPointerGetAttribute(x.buf, a, p);
  return x;
}

// The bytes each attribute's value takes (CUDA_POINTER_ATTRIBUTE_P2P_TOKENS: two 8- and 4-byte
// fields, 12 bytes written).
size_t width(CUpointer_attribute a) {
  switch (a) {
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
    case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
    case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
    case CU_POINTER_ATTRIBUTE_MAPPED:
    case CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE:
    case CU_POINTER_ATTRIBUTE_ACCESS_FLAGS: return 4;
    case CU_POINTER_ATTRIBUTE_P2P_TOKENS: return 12;
    default: return 8;
  }
}

const CUpointer_attribute kAll[] = {
    CU_POINTER_ATTRIBUTE_CONTEXT,          CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
    CU_POINTER_ATTRIBUTE_DEVICE_POINTER,   CU_POINTER_ATTRIBUTE_HOST_POINTER,
    CU_POINTER_ATTRIBUTE_P2P_TOKENS,       CU_POINTER_ATTRIBUTE_SYNC_MEMOPS,
    CU_POINTER_ATTRIBUTE_BUFFER_ID,        CU_POINTER_ATTRIBUTE_IS_MANAGED,
    CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,   CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE,
    CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, CU_POINTER_ATTRIBUTE_RANGE_SIZE,
    CU_POINTER_ATTRIBUTE_MAPPED,           CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES,
    CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE, CU_POINTER_ATTRIBUTE_ACCESS_FLAGS,
    CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE,   CU_POINTER_ATTRIBUTE_MAPPING_SIZE,
    CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR, CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID,
};

// Expected answers for one pointer: kSkip = attribute answered but value not asserted.
constexpr uint64_t kSkip = ~uint64_t{0} - 1;
constexpr uint64_t kRefused = ~uint64_t{0};

struct Expect {
  CUpointer_attribute a;
  uint64_t value;  // kRefused: CUDA_ERROR_INVALID_VALUE
};

void check(const char* what, CUdeviceptr p, std::initializer_list<Expect> want) {
  for (const Expect& e : want) {
    const Answer x = ask(e.a, p);
    if (e.value == kRefused) {
      EXPECT_CU(CUDA_ERROR_INVALID_VALUE, x.r) << what << " attribute " << e.a;
      continue;
    }
    EXPECT_CU(CUDA_SUCCESS, x.r) << what << " attribute " << e.a;
    EXPECT_TRUE(x.widthAtMost(width(e.a))) << what << " attribute " << e.a << " wrote more than " << width(e.a);
    if (e.value == kSkip) continue;
    const uint64_t got = width(e.a) == 4 ? x.u32() : x.u64();
    EXPECT_EQ(e.value, got) << what << " attribute " << e.a;
  }
  for (int bad : {999, 0}) {
    const Answer x = ask(static_cast<CUpointer_attribute>(bad), p);
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, x.r) << what << " attribute " << bad;
  }
}

void checkAllRefused(const char* what, CUdeviceptr p) {
  for (CUpointer_attribute a : kAll) {
    const Answer x = ask(a, p);
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, x.r) << what << " attribute " << a;
  }
}

// The mapping reported for `p` holds [start, start+size).
void expectMappingCovers(const char* what, CUdeviceptr p, CUdeviceptr start, size_t size) {
  const uint64_t base = ask(CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR, p).u64();
  const uint64_t msize = ask(CU_POINTER_ATTRIBUTE_MAPPING_SIZE, p).u64();
  EXPECT_LE(base, start) << what;
  EXPECT_GE(base + msize, start + size) << what;
  EXPECT_EQ(0u, msize % (2 * kMiB)) << what << ": mappings are whole 2 MiB pages";
}

uint64_t ptr(const void* p) { return reinterpret_cast<uint64_t>(p); }

class Pointer : public conformance::DriverTest {};

// probe: ptr.setup.memalloc, ptrattr.memalloc.*, ptrattr.memalloc_interior.*
TEST_F(Pointer, CuMemAllocMemory) {
  CUdeviceptr d = 0;
  ASSERT_OK(cuMemAlloc(&d, kMiB));
  for (CUdeviceptr p : {d, d + 0x100}) {
    check(p == d ? "memalloc" : "memalloc_interior", p,
          {{CU_POINTER_ATTRIBUTE_CONTEXT, ptr(ctx)},
           {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_MEMORYTYPE_DEVICE},
           {CU_POINTER_ATTRIBUTE_DEVICE_POINTER, p},
           {CU_POINTER_ATTRIBUTE_HOST_POINTER, kRefused},
           {CU_POINTER_ATTRIBUTE_P2P_TOKENS, kSkip},
           {CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, 1},
           {CU_POINTER_ATTRIBUTE_BUFFER_ID, kSkip},
           {CU_POINTER_ATTRIBUTE_IS_MANAGED, 0},
           {CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, 0},
           {CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE, 1},
           {CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, d},
           {CU_POINTER_ATTRIBUTE_RANGE_SIZE, kMiB},
           {CU_POINTER_ATTRIBUTE_MAPPED, 1},
           {CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES, 0},
           {CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE, 1},
           {CU_POINTER_ATTRIBUTE_ACCESS_FLAGS, CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE},
           {CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, 0},
           {CU_POINTER_ATTRIBUTE_MAPPING_SIZE, kSkip},
           {CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR, kSkip},
           {CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID, kSkip}});
    expectMappingCovers("memalloc", p, d, kMiB);
  }
  // One allocation: the same buffer and block at its base and inside it.
  EXPECT_EQ(ask(CU_POINTER_ATTRIBUTE_BUFFER_ID, d).u64(), ask(CU_POINTER_ATTRIBUTE_BUFFER_ID, d + 0x100).u64());
  EXPECT_EQ(ask(CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID, d).u64(),
            ask(CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID, d + 0x100).u64());
  EXPECT_CU(CUDA_SUCCESS, cuMemFree(d));
}

// probe: ptr.setup.vmm_map, ptrattr.vmm.*, ptrattr.vmm_interior.*
TEST_F(Pointer, VmmMemoryWithAccess) {
  CUmemAllocationProp p = devicePinned(0, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  CUmemGenericAllocationHandle h = 0;
  ASSERT_OK(cuMemCreate(&h, 2 * gran, &p, 0));
  CUdeviceptr R = 0;
  ASSERT_OK(cuMemAddressReserve(&R, 4 * gran, 0, 0, 0));
  ASSERT_OK(cuMemMap(R, 2 * gran, 0, h, 0));
  CUmemAccessDesc d = readWrite(0);
  ASSERT_OK(cuMemSetAccess(R, 2 * gran, &d, 1));
  for (CUdeviceptr q : {R, R + gran + 0x1000}) {
    check(q == R ? "vmm" : "vmm_interior", q,
          {{CU_POINTER_ATTRIBUTE_CONTEXT, 0},  // VMM memory belongs to no context
           {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_MEMORYTYPE_DEVICE},
           {CU_POINTER_ATTRIBUTE_DEVICE_POINTER, q},
           {CU_POINTER_ATTRIBUTE_HOST_POINTER, kRefused},
           {CU_POINTER_ATTRIBUTE_P2P_TOKENS, kSkip},
           {CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, 1},
           {CU_POINTER_ATTRIBUTE_BUFFER_ID, kSkip},
           {CU_POINTER_ATTRIBUTE_IS_MANAGED, 0},
           {CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, 0},
           {CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE, 0},
           {CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, R},  // the reservation
           {CU_POINTER_ATTRIBUTE_RANGE_SIZE, 4 * gran},
           {CU_POINTER_ATTRIBUTE_MAPPED, 1},
           {CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR},
           {CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE, 0},
           {CU_POINTER_ATTRIBUTE_ACCESS_FLAGS, CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE},
           {CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, 0},
           {CU_POINTER_ATTRIBUTE_MAPPING_SIZE, 2 * gran},  // the mapping
           {CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR, R},
           {CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID, kSkip}});
  }
  EXPECT_EQ(ask(CU_POINTER_ATTRIBUTE_BUFFER_ID, R).u64(), ask(CU_POINTER_ATTRIBUTE_BUFFER_ID, R + gran + 0x1000).u64());
  // probe: ptrattr.vmm_reserved_unmapped.*
  checkAllRefused("vmm_reserved_unmapped", R + 2 * gran);
  EXPECT_CU(CUDA_SUCCESS, cuMemUnmap(R, 2 * gran));
  EXPECT_CU(CUDA_SUCCESS, cuMemAddressFree(R, 4 * gran));
  EXPECT_CU(CUDA_SUCCESS, cuMemRelease(h));
}

// probe: ptrattr.vmm_mapped_noaccess.*
TEST_F(Pointer, VmmMemoryWithoutAccess) {
  Range r;
  makeRange(&r, 1, false);
  check("vmm_mapped_noaccess", r.va,
        {{CU_POINTER_ATTRIBUTE_CONTEXT, 0},
         {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_MEMORYTYPE_DEVICE},
         {CU_POINTER_ATTRIBUTE_DEVICE_POINTER, kRefused},  // the device may not use it
         {CU_POINTER_ATTRIBUTE_HOST_POINTER, kRefused},
         {CU_POINTER_ATTRIBUTE_P2P_TOKENS, kSkip},
         {CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, 1},
         {CU_POINTER_ATTRIBUTE_BUFFER_ID, kSkip},
         {CU_POINTER_ATTRIBUTE_IS_MANAGED, 0},
         {CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, 0},
         {CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE, 0},
         {CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, r.va},
         {CU_POINTER_ATTRIBUTE_RANGE_SIZE, r.size},
         {CU_POINTER_ATTRIBUTE_MAPPED, 1},
         {CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES, 0},
         {CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE, 0},
         {CU_POINTER_ATTRIBUTE_ACCESS_FLAGS, 0},
         {CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, 0},
         {CU_POINTER_ATTRIBUTE_MAPPING_SIZE, r.size},
         {CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR, r.va},
         {CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID, kSkip}});
  dropRange(r);
}

// probe: ptr.setup.memallochost, ptr.setup.memhostalloc_devicemap, ptrattr.memallochost.*,
// ptrattr.memallochost_interior.*, ptrattr.memhostalloc_devicemap.*
TEST_F(Pointer, PinnedHostMemory) {
  void* hp = nullptr;
  ASSERT_OK(cuMemAllocHost(&hp, kMiB));
  void* hdm = nullptr;
  ASSERT_OK(cuMemHostAlloc(&hdm, kMiB, CU_MEMHOSTALLOC_DEVICEMAP));
  struct Kind {
    const char* name;
    void* base;
    size_t offset;
  };
  for (Kind k : {Kind{"memallochost", hp, 0}, Kind{"memallochost_interior", hp, 0x100},
                 Kind{"memhostalloc_devicemap", hdm, 0}}) {
    const CUdeviceptr p = ptr(k.base) + k.offset;
    check(k.name, p,
          {{CU_POINTER_ATTRIBUTE_CONTEXT, ptr(ctx)},
           {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_MEMORYTYPE_HOST},
           {CU_POINTER_ATTRIBUTE_DEVICE_POINTER, p},
           {CU_POINTER_ATTRIBUTE_HOST_POINTER, p},
           {CU_POINTER_ATTRIBUTE_P2P_TOKENS, kRefused},
           {CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, 0},
           {CU_POINTER_ATTRIBUTE_BUFFER_ID, kSkip},
           {CU_POINTER_ATTRIBUTE_IS_MANAGED, 0},
           {CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, 0},
           {CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE, 0},
           {CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, ptr(k.base)},
           {CU_POINTER_ATTRIBUTE_RANGE_SIZE, kMiB},
           {CU_POINTER_ATTRIBUTE_MAPPED, 1},
           {CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES, 0},
           {CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE, 0},
           {CU_POINTER_ATTRIBUTE_ACCESS_FLAGS, CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE},
           {CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, 0},
           {CU_POINTER_ATTRIBUTE_MAPPING_SIZE, kSkip},
           {CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR, kSkip},
           {CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID, kSkip}});
    expectMappingCovers(k.name, p, ptr(k.base), kMiB);
  }
  EXPECT_CU(CUDA_SUCCESS, cuMemFreeHost(hdm));
  EXPECT_CU(CUDA_SUCCESS, cuMemFreeHost(hp));
}

// probe: ptrattr.malloc.*, ptrattr.zero.*
TEST_F(Pointer, MemoryTheDriverDoesNotKnow) {
  void* m = std::calloc(1, kMiB);  // calloc: GCC would take a pointer to unwritten malloc memory for a read
  checkAllRefused("malloc", ptr(m));
  checkAllRefused("zero", 0);
  std::free(m);
}

// probe: null.ptrattr_data
TEST_F(Pointer, NullData) {
  CUdeviceptr d = 0;
  ASSERT_OK(cuMemAlloc(&d, kMiB));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuPointerGetAttribute(nullptr, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, d));
  EXPECT_CU(CUDA_SUCCESS, cuMemFree(d));
}

// cuPointerGetAttributes: five slots, an unknown attribute in the fourth; then three valid ones.
struct Slots {
  alignas(16) unsigned char bufs[5][32];
  void* data[5];
  Slots() {
    for (int i = 0; i < 5; ++i) {
      std::memset(bufs[i], 0xAA, sizeof bufs[i]);
      data[i] = bufs[i];
    }
  }
  uint64_t u64(int i) const {
    uint64_t v;
    std::memcpy(&v, bufs[i], 8);
    return v;
  }
  uint32_t u32(int i) const {
    uint32_t v;
    std::memcpy(&v, bufs[i], 4);
    return v;
  }
  bool from(int i, size_t byte) const {  // nothing written in slot i at or past `byte`
    for (size_t k = byte; k < sizeof bufs[i]; ++k) {
      if (bufs[i][k] != 0xAA) return false;
    }
    return true;
  }
};

CUpointer_attribute kWithInvalid[5] = {CU_POINTER_ATTRIBUTE_CONTEXT, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                       CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, static_cast<CUpointer_attribute>(999),
                                       CU_POINTER_ATTRIBUTE_RANGE_SIZE};
CUpointer_attribute kValid3[3] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_IS_MANAGED,
                                  CU_POINTER_ATTRIBUTE_MAPPED};

// The slots before the unknown attribute are answered; it and those after are left alone.
void checkWithInvalid(const char* what, CUdeviceptr p, uint64_t context, unsigned type, int ordinal) {
  Slots s;
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuPointerGetAttributes(5, kWithInvalid, s.data, p)) << what;
  EXPECT_EQ(context, s.u64(0)) << what;
  EXPECT_TRUE(s.from(0, 8)) << what;
  EXPECT_EQ(type, s.u32(1)) << what;
  EXPECT_TRUE(s.from(1, 4)) << what;
  EXPECT_EQ(static_cast<uint32_t>(ordinal), s.u32(2)) << what;
  EXPECT_TRUE(s.from(2, 4)) << what;
  EXPECT_TRUE(s.from(3, 0)) << what;
  EXPECT_TRUE(s.from(4, 0)) << what;
}

void checkValid3(const char* what, CUdeviceptr p, unsigned type, unsigned mapped) {
  Slots s;
  EXPECT_CU(CUDA_SUCCESS, cuPointerGetAttributes(3, kValid3, s.data, p)) << what;
  EXPECT_EQ(type, s.u32(0)) << what;
  EXPECT_EQ(0u, s.u32(1)) << what;
  EXPECT_EQ(mapped, s.u32(2)) << what;
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(s.from(i, 4)) << what << " slot " << i;
}

// probe: ptrattrs.memalloc.with_invalid, ptrattrs.memalloc.valid3, ptrattrs.vmm.with_invalid,
// ptrattrs.vmm.valid3, ptrattrs.count0
TEST_F(Pointer, GetAttributesOnDeviceMemory) {
  CUdeviceptr d = 0;
  ASSERT_OK(cuMemAlloc(&d, kMiB));
  checkWithInvalid("memalloc", d, ptr(ctx), CU_MEMORYTYPE_DEVICE, 0);
  checkValid3("memalloc", d, CU_MEMORYTYPE_DEVICE, 1);
  Range r;
  makeRange(&r, 2);
  checkWithInvalid("vmm", r.va, 0, CU_MEMORYTYPE_DEVICE, 0);
  checkValid3("vmm", r.va, CU_MEMORYTYPE_DEVICE, 1);
  dropRange(r);
  Slots s;
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuPointerGetAttributes(0, kValid3, s.data, d));
  EXPECT_CU(CUDA_SUCCESS, cuMemFree(d));
}

// probe: ptrattrs.malloc.with_invalid, ptrattrs.malloc.valid3, ptrattrs.zero.with_invalid,
// ptrattrs.zero.valid3
TEST_F(Pointer, GetAttributesOnUnknownMemoryFillsWhatItCan) {
  void* m = std::calloc(1, kMiB);  // calloc: GCC would take a pointer to unwritten malloc memory for a read
  checkWithInvalid("malloc", ptr(m), 0, 0, -2);
  checkValid3("malloc", ptr(m), 0, 0);
  checkWithInvalid("zero", 0, 0, 0, -2);
  checkValid3("zero", 0, 0, 0);
  std::free(m);
}

// Multi-GPU: memory of device 1 names device 1 and the context that made it.
TEST_F(Pointer, MemoryOfTheSecondDevice) {
  REQUIRE_DEVICES(2);
  CUcontext c1 = nullptr;
  ASSERT_OK(cuDevicePrimaryCtxRetain(&c1, 1));
  ASSERT_OK(cuCtxPushCurrent(c1));
  CUdeviceptr d = 0;
  ASSERT_OK(cuMemAlloc(&d, kMiB));
  ASSERT_OK(cuCtxPopCurrent(nullptr));
  EXPECT_EQ(ptr(c1), ask(CU_POINTER_ATTRIBUTE_CONTEXT, d).u64());
  EXPECT_EQ(1u, ask(CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, d).u32());
  EXPECT_CU(CUDA_SUCCESS, cuMemFree(d));
  cuDevicePrimaryCtxRelease(1);
}

}  // namespace
