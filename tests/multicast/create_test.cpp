// cuMulticastGetGranularity, cuMulticastCreate, cuMulticastAddDevice; support per preset and
// the calls made before cuInit.
#include <fstream>
#include <sstream>

#include "tests/multicast/multicast_test.h"

namespace {

using namespace mctest;

class Granularity : public McTest {};
class Create : public McTest {};
class AddDevice : public McTest {};
class Support : public McTest {};

// ---- cuMulticastGetGranularity -------------------------------------------------------------

TEST_F(Granularity, MinimumAndRecommendedOnHgxH100) {
  INIT();
  CUmulticastObjectProp p = mcProp(8, 0);  // size 0: clients ask before they know their size
  size_t minimum = 0, recommended = 0;
  ASSERT_OK(cuMulticastGetGranularity(&minimum, &p, CU_MULTICAST_GRANULARITY_MINIMUM));
  ASSERT_OK(cuMulticastGetGranularity(&recommended, &p, CU_MULTICAST_GRANULARITY_RECOMMENDED));
  EXPECT_EQ(2 * kMiB, minimum);
  EXPECT_EQ(512 * kMiB, recommended);
  EXPECT_EQ(0u, recommended % minimum);
}

TEST_F(Granularity, MinimumAndRecommendedOnNvl72) {
  INIT("gb200-nvl72");
  CUmulticastObjectProp p = mcProp(72, 0);
  size_t minimum = 0, recommended = 0;
  ASSERT_OK(cuMulticastGetGranularity(&minimum, &p, CU_MULTICAST_GRANULARITY_MINIMUM));
  ASSERT_OK(cuMulticastGetGranularity(&recommended, &p, CU_MULTICAST_GRANULARITY_RECOMMENDED));
  EXPECT_EQ(2 * kMiB, minimum);
  EXPECT_EQ(512 * kMiB, recommended);
  EXPECT_EQ(0u, recommended % minimum);
}

TEST_F(Granularity, SizeZeroAndAnySizeAccepted) {
  INIT();
  size_t g = 0;
  for (size_t size : {size_t{0}, size_t{1}, 3 * kMiB, 4 * kMiB, size_t{1} << 40}) {
    CUmulticastObjectProp p = mcProp(2, size);
    g = 0;
    EXPECT_OK(cuMulticastGetGranularity(&g, &p, CU_MULTICAST_GRANULARITY_MINIMUM)) << size;
    EXPECT_EQ(2 * kMiB, g) << size;
  }
}

TEST_F(Granularity, NullPointersAndBadOptionRefused) {
  INIT();
  CUmulticastObjectProp p = mcProp(2, 0);
  size_t g = 12345;
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastGetGranularity(nullptr, &p, CU_MULTICAST_GRANULARITY_MINIMUM));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastGetGranularity(&g, nullptr, CU_MULTICAST_GRANULARITY_MINIMUM));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE,
                       cuMulticastGetGranularity(&g, &p, static_cast<CUmulticastGranularity_flags>(2)));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE,
                       cuMulticastGetGranularity(&g, &p, static_cast<CUmulticastGranularity_flags>(-1)));
  EXPECT_EQ(12345u, g);  // untouched by a refused call
}

TEST_F(Granularity, NotSupportedOnSingleGpu) {
  INIT("single-h100");
  int supported = -1;
  ASSERT_OK(cuDeviceGetAttribute(&supported, CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED, 0));
  EXPECT_EQ(0, supported);
  CUmulticastObjectProp p = mcProp(1, 0);
  size_t g = 0;
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_NOT_SUPPORTED, cuMulticastGetGranularity(&g, &p, CU_MULTICAST_GRANULARITY_MINIMUM));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_NOT_SUPPORTED, cuMulticastGetGranularity(&g, &p, CU_MULTICAST_GRANULARITY_RECOMMENDED));
}

// ---- support attribute ----------------------------------------------------------------------

TEST_F(Support, AttributeSaysSupportedOnFabricPresets) {
  INIT();
  for (int d = 0; d < deviceCount; ++d) {
    int v = 0;
    ASSERT_OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED, d));
    EXPECT_EQ(1, v) << "device " << d;
  }
}

// Every multicast call before cuInit: CUDA_ERROR_NOT_INITIALIZED.
TEST_F(Support, CallsBeforeInitAreNotInitialized) {
  if (mcsim::api::initialized()) GTEST_SKIP() << "needs a process of its own (run it through ctest)";
  CUmulticastObjectProp p = mcProp(1, kMin);
  size_t g = 0;
  CUmemGenericAllocationHandle mc = 0;
  EXPECT_CU(CUDA_ERROR_NOT_INITIALIZED, cuMulticastGetGranularity(&g, &p, CU_MULTICAST_GRANULARITY_MINIMUM));
  EXPECT_CU(CUDA_ERROR_NOT_INITIALIZED, cuMulticastCreate(&mc, &p));
  EXPECT_CU(CUDA_ERROR_NOT_INITIALIZED, cuMulticastAddDevice(0x1000, 0));
  EXPECT_CU(CUDA_ERROR_NOT_INITIALIZED, cuMulticastBindMem(0x1000, 0, 0x1010, 0, kMin, 0));
  EXPECT_CU(CUDA_ERROR_NOT_INITIALIZED, cuMulticastBindMem_v2(0x1000, 0, 0, 0x1010, 0, kMin, 0));
  EXPECT_CU(CUDA_ERROR_NOT_INITIALIZED, cuMulticastBindAddr(0x1000, 0, 0x200000000000ull, kMin, 0));
  EXPECT_CU(CUDA_ERROR_NOT_INITIALIZED, cuMulticastBindAddr_v2(0x1000, 0, 0, 0x200000000000ull, kMin, 0));
  EXPECT_CU(CUDA_ERROR_NOT_INITIALIZED, cuMulticastUnbind(0x1000, 0, 0, kMin));
  EXPECT_EQ(0u, mc);
  EXPECT_FALSE(mcsim::api::initialized());
}

// ---- cuMulticastCreate ---------------------------------------------------------------------

TEST_F(Create, EveryTeamSizeFromOneToMax) {
  INIT();
  std::vector<CUmemGenericAllocationHandle> made;
  for (unsigned n = 1; n <= 8; ++n) {
    CUmemGenericAllocationHandle mc = 0;
    CUmulticastObjectProp p = mcProp(n, kMin);
    ASSERT_OK(cuMulticastCreate(&mc, &p)) << n;
    EXPECT_NE(0u, mc);
    for (auto other : made) EXPECT_NE(other, mc);
    made.push_back(mc);
  }
  for (auto mc : made) EXPECT_OK(cuMemRelease(mc));
  expectCountsEqual(baseline, Counts::now());
}

TEST_F(Create, TeamSizeZeroAndAboveMaxRefused) {
  INIT();
  CUmemGenericAllocationHandle mc = 0;
  CUmulticastObjectProp zero = mcProp(0, kMin);
  CUmulticastObjectProp nine = mcProp(9, kMin);
  CUmulticastObjectProp huge = mcProp(~0u, kMin);
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastCreate(&mc, &zero));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastCreate(&mc, &nine));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastCreate(&mc, &huge));
  EXPECT_EQ(0u, mc);
}

TEST_F(Create, MaxTeamOnNvl72Is72) {
  INIT("gb200-nvl72");
  CUmemGenericAllocationHandle mc = 0;
  CUmulticastObjectProp p72 = mcProp(72, kMin);
  CUmulticastObjectProp p73 = mcProp(73, kMin);
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastCreate(&mc, &p73));
  ASSERT_OK(cuMulticastCreate(&mc, &p72));
  for (int d = 0; d < 72; ++d) ASSERT_OK(cuMulticastAddDevice(mc, d)) << d;
  // The team is complete: a bind goes straight through.
  CUmemGenericAllocationHandle mem = makeMem(71, kMin);
  EXPECT_OK(cuMulticastBindMem(mc, 0, mem, 0, kMin, 0));
  EXPECT_OK(cuMulticastUnbind(mc, 71, 0, kMin));
  EXPECT_OK(cuMemRelease(mem));
  EXPECT_OK(cuMemRelease(mc));
  expectCountsEqual(baseline, Counts::now());
}

TEST_F(Create, SizeMustBeNonZeroMultipleOfMinimum) {
  INIT();
  CUmemGenericAllocationHandle mc = 0;
  for (size_t bad : {size_t{0}, size_t{1}, kMiB, 3 * kMiB, kMin + 4096}) {
    CUmulticastObjectProp p = mcProp(2, bad);
    EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastCreate(&mc, &p));
  }
  EXPECT_EQ(0u, mc);
  for (size_t good : {kMin, 2 * kMin, 512 * kMiB, size_t{64} << 30}) {
    CUmulticastObjectProp p = mcProp(2, good);
    ASSERT_OK(cuMulticastCreate(&mc, &p)) << good;
    EXPECT_OK(cuMemRelease(mc));
  }
  expectCountsEqual(baseline, Counts::now());
}

// Issue 19, item 16: a multicast object of 2^64 - 2 MiB was accepted. Larger than a device's
// memory, no team could bind it: OUT_OF_MEMORY, as cuMemCreate answers such a size.
TEST_F(Create, LargerThanADevicesMemoryIsOutOfMemory) {
  INIT();
  CUmemGenericAllocationHandle mc = 0;
  size_t total = 0;
  ASSERT_OK(cuDeviceTotalMem(&total, 0));
  for (size_t huge : {~size_t{0} - kMin + 1, size_t{1} << 50, (total / kMin + 1) * kMin}) {
    CUmulticastObjectProp p = mcProp(2, huge);
    SCOPED_TRACE(huge);
    EXPECT_FAILS_CLEANLY(CUDA_ERROR_OUT_OF_MEMORY, cuMulticastCreate(&mc, &p));
  }
  EXPECT_EQ(0u, mc);
  expectCountsEqual(baseline, Counts::now());
}

TEST_F(Create, NullPointersRefused) {
  INIT();
  CUmemGenericAllocationHandle mc = 0;
  CUmulticastObjectProp p = mcProp(2, kMin);
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastCreate(nullptr, &p));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastCreate(&mc, nullptr));
}

TEST_F(Create, FlagsMustBeZero) {
  INIT();
  CUmemGenericAllocationHandle mc = 0;
  CUmulticastObjectProp p = mcProp(2, kMin);
  p.flags = 1;
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastCreate(&mc, &p));
  p.flags = 1ull << 63;
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastCreate(&mc, &p));
  EXPECT_EQ(0u, mc);
}

TEST_F(Create, HandleTypesNoneAndPosixFd) {
  INIT();
  CUmemGenericAllocationHandle a = 0, b = 0;
  CUmulticastObjectProp none = mcProp(2, kMin, 0);
  CUmulticastObjectProp fd = mcProp(2, kMin, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  ASSERT_OK(cuMulticastCreate(&a, &none));
  ASSERT_OK(cuMulticastCreate(&b, &fd));
  EXPECT_OK(cuMemRelease(a));
  EXPECT_OK(cuMemRelease(b));
}

TEST_F(Create, HandleTypesOtherThanShareableRefused) {
  INIT();
  CUmemGenericAllocationHandle mc = 0;
  for (unsigned long long t : {static_cast<unsigned long long>(CU_MEM_HANDLE_TYPE_WIN32),
                               static_cast<unsigned long long>(CU_MEM_HANDLE_TYPE_WIN32_KMT),
                               1ull << 20}) {
    CUmulticastObjectProp p = mcProp(2, kMin, t);
    EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastCreate(&mc, &p)) ;
  }
  EXPECT_EQ(0u, mc);
}

// Field reports (nvbandwidth 39, mscclpp 467): FABRIC without an IMEX channel is NOT_PERMITTED.
TEST_F(Create, FabricWithoutImexNotPermitted) {
  INIT();
  CUmemGenericAllocationHandle mc = 0;
  CUmulticastObjectProp fab = mcProp(2, kMin, CU_MEM_HANDLE_TYPE_FABRIC);
  CUmulticastObjectProp both = mcProp(2, kMin, CU_MEM_HANDLE_TYPE_FABRIC | CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_NOT_PERMITTED, cuMulticastCreate(&mc, &fab));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_NOT_PERMITTED, cuMulticastCreate(&mc, &both));
  EXPECT_EQ(0u, mc);
}

TEST_F(Create, FabricAndBothAllowedWithImex) {
  INIT("gb200-nvl72");
  CUmemGenericAllocationHandle a = 0, b = 0;
  CUmulticastObjectProp fab = mcProp(4, kMin, CU_MEM_HANDLE_TYPE_FABRIC);
  CUmulticastObjectProp both = mcProp(4, kMin, CU_MEM_HANDLE_TYPE_FABRIC | CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  ASSERT_OK(cuMulticastCreate(&a, &fab));
  ASSERT_OK(cuMulticastCreate(&b, &both));
  EXPECT_OK(cuMemRelease(a));
  EXPECT_OK(cuMemRelease(b));
  expectCountsEqual(baseline, Counts::now());
}

TEST_F(Create, NotSupportedOnSingleGpu) {
  INIT("single-h100");
  CUmemGenericAllocationHandle mc = 0;
  CUmulticastObjectProp p = mcProp(1, kMin);
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_NOT_SUPPORTED, cuMulticastCreate(&mc, &p));
  EXPECT_EQ(0u, mc);
}

// A multicast handle is no allocation: its properties cannot be read as one's.
TEST_F(Create, HandleIsNoAllocation) {
  INIT();
  CUmemGenericAllocationHandle mc = makeTeam({}, kMin, 0, 2);
  CUmemAllocationProp p;
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMemGetAllocationPropertiesFromHandle(&p, mc));
  EXPECT_OK(cuMemRelease(mc));
}

// ---- cuMulticastAddDevice ------------------------------------------------------------------

TEST_F(AddDevice, InvalidDeviceRefused) {
  INIT();
  CUmemGenericAllocationHandle mc = makeTeam({}, kMin, 0, 2);
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_DEVICE, cuMulticastAddDevice(mc, -1));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_DEVICE, cuMulticastAddDevice(mc, 8));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_DEVICE, cuMulticastAddDevice(mc, 1000));
  EXPECT_OK(cuMemRelease(mc));
}

TEST_F(AddDevice, DuplicateRefused) {
  INIT();
  CUmemGenericAllocationHandle mc = makeTeam({3}, kMin, 0, 4);
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastAddDevice(mc, 3));
  EXPECT_OK(cuMulticastAddDevice(mc, 5));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastAddDevice(mc, 5));
  EXPECT_OK(cuMemRelease(mc));
}

TEST_F(AddDevice, FullTeamRefused) {
  INIT();
  CUmemGenericAllocationHandle mc = makeTeam({6, 1}, kMin);
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastAddDevice(mc, 0));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastAddDevice(mc, 7));
  EXPECT_OK(cuMemRelease(mc));
}

TEST_F(AddDevice, HandleThatIsNoMulticastObjectRefused) {
  INIT();
  CUmemGenericAllocationHandle mem = makeMem(0, kMin);
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastAddDevice(mem, 0));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastAddDevice(0, 0));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastAddDevice(0xdead0, 0));
  CUmemGenericAllocationHandle mc = makeTeam({}, kMin, 0, 1);
  EXPECT_OK(cuMemRelease(mc));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastAddDevice(mc, 0));  // released
  EXPECT_OK(cuMemRelease(mem));
}

// "The association of the device to the multicast object is permanent during the life time of
// the multicast object": after its bindings come and go, the device is still a member.
TEST_F(AddDevice, AssociationIsPermanent) {
  INIT();
  CUmemGenericAllocationHandle mc = makeTeam({2, 4}, 2 * kMin);
  CUmemGenericAllocationHandle mem = makeMem(2, kMin);
  ASSERT_OK(cuMulticastBindMem(mc, 0, mem, 0, kMin, 0));
  ASSERT_OK(cuMulticastUnbind(mc, 2, 0, kMin));
  // Still a member: adding it again is refused as a duplicate, unbinding nothing is a bad value
  // (not a bad device, as for a non-member), and it can bind again.
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastAddDevice(mc, 2));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_DEVICE, cuMulticastUnbind(mc, 3, 0, kMin));
  {
    StderrCapture cap;
    EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastUnbind(mc, 2, 0, kMin));
    cap.take();
  }
  EXPECT_OK(cuMulticastBindMem(mc, kMin, mem, 0, kMin, 0));
  EXPECT_OK(cuMulticastUnbind(mc, 2, kMin, kMin));
  EXPECT_OK(cuMemRelease(mem));
  EXPECT_OK(cuMemRelease(mc));
  expectCountsEqual(baseline, Counts::now());
}

// max_team_size bounds how many devices a team has, not which devices: on a node whose teams are
// smaller than the node (a user's preset), every device may join a team.
TEST_F(AddDevice, AnyDeviceJoinsWhenTeamsAreSmallerThanTheNode) {
  std::ifstream in(std::string(MCSIM_TEST_SOURCE_DIR) + "/fabric/presets/nodes/hgx-h100.json");
  ASSERT_TRUE(in.good());
  std::stringstream text;
  text << in.rdbuf();
  std::string preset = text.str();
  const std::string from = "\"max_team_size\": 8", to = "\"max_team_size\": 4";
  ASSERT_NE(std::string::npos, preset.find(from));
  preset.replace(preset.find(from), from.size(), to);
  const std::string name = "\"name\": \"hgx-h100\"";
  ASSERT_NE(std::string::npos, preset.find(name));
  preset.replace(preset.find(name), name.size(), "\"name\": \"hgx-h100-team4\"");
  char path[] = "/tmp/mcsim-team4-XXXXXX.json";
  const int fd = mkstemps(path, 5);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(static_cast<ssize_t>(preset.size()), ::write(fd, preset.data(), preset.size()));
  ::close(fd);
  const bool ok = init(path);
  ::unlink(path);
  if (!ok) {
    if (skipped_) GTEST_SKIP() << "needs a process of its own (run it through ctest)";
    return;
  }
  CUmemGenericAllocationHandle mc = 0;
  CUmulticastObjectProp five = mcProp(5, kMin);
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastCreate(&mc, &five));
  mc = makeTeam({4, 5, 6, 7}, kMin);
  CUmemGenericAllocationHandle mem = makeMem(7, kMin);
  EXPECT_OK(cuMulticastBindMem(mc, 0, mem, 0, kMin, 0));
  EXPECT_OK(cuMemRelease(mc));
  EXPECT_OK(cuMemRelease(mem));
  expectCountsEqual(baseline, Counts::now());
}

TEST_F(AddDevice, NvlTeamOfDistantDevices) {
  INIT("gb200-nvl72");
  CUmemGenericAllocationHandle mc = makeTeam({0, 35, 71}, kMin);
  CUmemGenericAllocationHandle mem = makeMem(71, kMin);
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_DEVICE, cuMulticastAddDevice(mc, 72));
  EXPECT_OK(cuMulticastBindMem(mc, 0, mem, 0, kMin, 0));
  EXPECT_OK(cuMulticastUnbind(mc, 71, 0, kMin));
  EXPECT_OK(cuMemRelease(mem));
  EXPECT_OK(cuMemRelease(mc));
}

}  // namespace
