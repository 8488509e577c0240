// Devices: identity, attributes, argument checks, peer queries. Only values intrinsic to the H100
// are asserted (equal on a real H100 and on mcsim's default 8x H100 preset); what the machine
// decides (multicast, PCI ids, NUMA) is not.
#include <cstring>
#include <string>

#include "tests/conformance/conformance.h"

namespace {

class Device : public conformance::InitTest {};

int attr(CUdevice_attribute a, CUdevice dev = 0) {
  int v = -12345;
  EXPECT_CU(CUDA_SUCCESS, cuDeviceGetAttribute(&v, a, dev)) << "attribute " << a;
  return v;
}

// probe: attr.* (every attribute 1..MAX-1 answered)
TEST_F(Device, EveryAttributeBelowMaxSucceedsOnEveryDevice) {
  for (int d = 0; d < deviceCount; ++d) {
    for (int a = 1; a < static_cast<int>(CU_DEVICE_ATTRIBUTE_MAX); ++a) {
      int v = -12345;
      EXPECT_CU(CUDA_SUCCESS, cuDeviceGetAttribute(&v, static_cast<CUdevice_attribute>(a), d))
          << "device " << d << " attribute " << a;
    }
  }
}

// probe: attr.COMPUTE_CAPABILITY_MAJOR, attr.COMPUTE_CAPABILITY_MINOR, attr.MULTIPROCESSOR_COUNT,
// attr.WARP_SIZE, attr.MAX_THREADS_PER_BLOCK, attr.MAX_THREADS_PER_MULTIPROCESSOR,
// attr.L2_CACHE_SIZE, attr.MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, attr.UNIFIED_ADDRESSING,
// attr.VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, attr.HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED,
// attr.HANDLE_TYPE_FABRIC_SUPPORTED, attr.HANDLE_TYPE_WIN32_HANDLE_SUPPORTED,
// attr.GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED, attr.CAN_MAP_HOST_MEMORY, attr.INTEGRATED,
// attr.ASYNC_ENGINE_COUNT, attr.GLOBAL_MEMORY_BUS_WIDTH, attr.MEMORY_POOLS_SUPPORTED
TEST_F(Device, H100IntrinsicAttributes) {
  REQUIRE_H100();
  EXPECT_EQ(9, attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR));
  EXPECT_EQ(0, attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR));
  EXPECT_EQ(132, attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT));
  EXPECT_EQ(32, attr(CU_DEVICE_ATTRIBUTE_WARP_SIZE));
  EXPECT_EQ(1024, attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK));
  EXPECT_EQ(2048, attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR));
  EXPECT_EQ(52428800, attr(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE));
  EXPECT_EQ(232448, attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN));
  EXPECT_EQ(5120, attr(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH));
  EXPECT_EQ(3, attr(CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT));
  EXPECT_EQ(1, attr(CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING));
  EXPECT_EQ(1, attr(CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED));
  EXPECT_EQ(1, attr(CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED));
  EXPECT_EQ(1, attr(CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED));
  EXPECT_EQ(0, attr(CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_WIN32_HANDLE_SUPPORTED));
  EXPECT_EQ(1, attr(CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED));
  EXPECT_EQ(1, attr(CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY));
  EXPECT_EQ(0, attr(CU_DEVICE_ATTRIBUTE_INTEGRATED));
  EXPECT_EQ(1, attr(CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED));
}

// probe: attr.call.attr_MAX, attr.call.attr_0, attr.call.attr_MAX_plus1, attr.call.dev_count,
// attr.call.dev_neg1, null.devattr_pi
TEST_F(Device, AttributeArgumentChecks) {
  for (int a : {static_cast<int>(CU_DEVICE_ATTRIBUTE_MAX), 0, static_cast<int>(CU_DEVICE_ATTRIBUTE_MAX) + 1}) {
    int v = -12345;
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuDeviceGetAttribute(&v, static_cast<CUdevice_attribute>(a), 0)) << a;
    EXPECT_EQ(-12345, v);
  }
  for (int d : {deviceCount, -1}) {
    int v = -12345;
    EXPECT_CU(CUDA_ERROR_INVALID_DEVICE, cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, d)) << d;
    EXPECT_EQ(-12345, v);
  }
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuDeviceGetAttribute(nullptr, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0));
}

// probe: dev.0.name, dev.0.totalmem, dev.0.uuid
TEST_F(Device, IdentityOfEveryDevice) {
  REQUIRE_H100();
  for (int d = 0; d < deviceCount; ++d) {
    char name[256];
    std::memset(name, 0, sizeof name);
    EXPECT_CU(CUDA_SUCCESS, cuDeviceGetName(name, sizeof name, d));
    EXPECT_EQ(std::string("NVIDIA H100 80GB HBM3"), name);
    size_t total = 0;
    EXPECT_CU(CUDA_SUCCESS, cuDeviceTotalMem(&total, d));
    EXPECT_EQ(size_t{85017493504ull}, total);
    CUuuid u;
    std::memset(&u, 0, sizeof u);
    EXPECT_CU(CUDA_SUCCESS, cuDeviceGetUuid(&u, d));
    CUuuid zero;
    std::memset(&zero, 0, sizeof zero);
    EXPECT_NE(0, std::memcmp(&u, &zero, sizeof u)) << "device " << d << " has an all-zero UUID";
  }
}

// Multi-GPU: every device has its own UUID.
TEST_F(Device, UuidsDifferBetweenDevices) {
  REQUIRE_DEVICES(2);
  CUuuid a, b;
  ASSERT_OK(cuDeviceGetUuid(&a, 0));
  ASSERT_OK(cuDeviceGetUuid(&b, 1));
  EXPECT_NE(0, std::memcmp(&a, &b, sizeof a));
}

// probe: dev.cuDeviceGet.ordinal_count, dev.cuDeviceGet.ordinal_neg1, null.deviceget
TEST_F(Device, DeviceGetOrdinalChecks) {
  CUdevice d = -5;
  EXPECT_CU(CUDA_SUCCESS, cuDeviceGet(&d, 0));
  EXPECT_EQ(0, d);
  d = -5;
  EXPECT_CU(CUDA_ERROR_INVALID_DEVICE, cuDeviceGet(&d, deviceCount));
  EXPECT_EQ(-5, d);
  d = -5;
  EXPECT_CU(CUDA_ERROR_INVALID_DEVICE, cuDeviceGet(&d, -1));
  EXPECT_EQ(-5, d);
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuDeviceGet(nullptr, 0));
}

// probe: null.devcount, dev.cuDeviceGetCount
TEST_F(Device, DeviceCountNullOut) { EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuDeviceGetCount(nullptr)); }

// probe: dev.name.len5
TEST_F(Device, NameIsTruncatedToTheBufferWithATerminator) {
  char name[8];
  std::memset(name, 'Z', sizeof name);
  EXPECT_CU(CUDA_SUCCESS, cuDeviceGetName(name, 5, 0));
  EXPECT_EQ(0, std::memcmp(name, "NVID", 4));
  EXPECT_EQ('\0', name[4]);
}

// probe: dev.name.dev_count, null.devname_out, null.devname_len_neg1
TEST_F(Device, NameArgumentChecks) {
  char name[256];
  EXPECT_CU(CUDA_ERROR_INVALID_DEVICE, cuDeviceGetName(name, sizeof name, deviceCount));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuDeviceGetName(nullptr, 64, 0));
  EXPECT_CU(CUDA_SUCCESS, cuDeviceGetName(name, -1, 0));
}

// probe: dev.totalmem.dev_count, dev.uuid.dev_count, null.uuid_out, null.totalmem_out
TEST_F(Device, TotalMemAndUuidArgumentChecks) {
  size_t total = 0;
  EXPECT_CU(CUDA_ERROR_INVALID_DEVICE, cuDeviceTotalMem(&total, deviceCount));
  CUuuid u;
  EXPECT_CU(CUDA_ERROR_INVALID_DEVICE, cuDeviceGetUuid(&u, deviceCount));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuDeviceGetUuid(nullptr, 0));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuDeviceTotalMem(nullptr, 0));
}

// probe: p2p.canaccess.0_0, p2p.canaccess.0_count
TEST_F(Device, CanAccessPeerSameDeviceIsZero) {
  int can = -1;
  EXPECT_CU(CUDA_SUCCESS, cuDeviceCanAccessPeer(&can, 0, 0));
  EXPECT_EQ(0, can);
  can = -1;
  EXPECT_CU(CUDA_ERROR_INVALID_DEVICE, cuDeviceCanAccessPeer(&can, 0, deviceCount));
  EXPECT_EQ(-1, can);
}

// probe: p2p.attr.0_0.PERFORMANCE_RANK, p2p.attr.0_0.ACCESS_SUPPORTED,
// p2p.attr.0_0.NATIVE_ATOMIC_SUPPORTED, p2p.attr.0_0.CUDA_ARRAY_ACCESS_SUPPORTED,
// p2p.attr.0_0.ONLY_PARTIAL_NATIVE_ATOMIC_SUPPORTED, p2p.attr.0_0.attr0, p2p.attr.0_0.attr99,
// p2p.attr.0_count.ACCESS_SUPPORTED
TEST_F(Device, P2PAttributeOfADeviceWithItselfIsInvalidDevice) {
  for (int a : {1, 2, 3, 4, 5, 0, 99}) {
    int v = -12345;
    EXPECT_CU(CUDA_ERROR_INVALID_DEVICE, cuDeviceGetP2PAttribute(&v, static_cast<CUdevice_P2PAttribute>(a), 0, 0))
        << "attribute " << a;
    EXPECT_EQ(-12345, v);
  }
  int v = -12345;
  EXPECT_CU(CUDA_ERROR_INVALID_DEVICE,
            cuDeviceGetP2PAttribute(&v, CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED, 0, deviceCount));
  EXPECT_EQ(-12345, v);
}

// Multi-GPU: peer queries between two devices agree with each other.
TEST_F(Device, P2PBetweenTwoDevicesAgreesWithCanAccessPeer) {
  REQUIRE_DEVICES(2);
  int can = -1;
  ASSERT_OK(cuDeviceCanAccessPeer(&can, 0, 1));
  EXPECT_TRUE(can == 0 || can == 1);
  int access = -1;
  EXPECT_CU(CUDA_SUCCESS, cuDeviceGetP2PAttribute(&access, CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED, 0, 1));
  EXPECT_EQ(can, access);
  int v = -12345;
  EXPECT_CU(CUDA_SUCCESS, cuDeviceGetP2PAttribute(&v, CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK, 0, 1));
  EXPECT_NE(-12345, v);
}

}  // namespace
