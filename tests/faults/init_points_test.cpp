// cuInit, cuDriverGetVersion, cuGetProcAddress(_v2), cuGetErrorName and cuGetErrorString as fault
// points. The plan is loaded by the first cuInit, so these calls can fail by a plan from then on
// (before it there is no plan). A cuInit that a rule fails leaves the process uninitialized, and a
// later cuInit that the plan lets through initializes it; a failing cuInit after a successful one
// changes nothing. Fabric-level rules do not fire at these calls: they do not touch the node.
#include "tests/faults/fault_test.h"

namespace {

using namespace faulttest;

TEST(InitPoints, AFailedCuInitCanBeRetried) {
  // Blackwell without the subnet manager: the first cuInit says the system is not ready.
  ::setenv("MCSIM_FAULTS", "cuInit : nth=1 -> return CUDA_ERROR_SYSTEM_NOT_READY", 1);
  EXPECT_CU(CUDA_ERROR_SYSTEM_NOT_READY, cuInit(0));
  EXPECT_FALSE(mcsim::api::initialized());
  int n = 0;
  EXPECT_CU(CUDA_ERROR_NOT_INITIALIZED, cuDeviceGetCount(&n));
  CUdevice d = 0;
  EXPECT_CU(CUDA_ERROR_NOT_INITIALIZED, cuDeviceGet(&d, 0));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuInit(1));  // flags are checked first, as before
  EXPECT_CU(CUDA_SUCCESS, cuInit(0));              // the rule fired once: the retry goes through
  EXPECT_TRUE(mcsim::api::initialized());
  EXPECT_OK(cuDeviceGetCount(&n));
  EXPECT_EQ(8, n);
  const auto report = mcsim::api::faultReport();
  ASSERT_EQ(1u, report.size());
  EXPECT_EQ(2u, report[0].matched);
  EXPECT_EQ(1u, report[0].fired);
}

TEST(InitPoints, ACuInitThatAlwaysFailsNeverInitializes) {
  ::setenv("MCSIM_FAULTS", "cuInit : always -> return CUDA_ERROR_NO_DEVICE", 1);
  for (int i = 0; i < 3; ++i) EXPECT_CU(CUDA_ERROR_NO_DEVICE, cuInit(0));
  EXPECT_FALSE(mcsim::api::initialized());
  EXPECT_EQ(0u, mcsim::api::stateDigest());
  int n = 0;
  EXPECT_CU(CUDA_ERROR_NOT_INITIALIZED, cuDeviceGetCount(&n));
}

// `return CUDA_SUCCESS` at cuInit is a lie like any other: cuInit says yes and does nothing, so
// the process is still uninitialized; the next cuInit initializes it.
TEST(InitPoints, ReturnSuccessAtCuInitDoesNothing) {
  ::setenv("MCSIM_FAULTS", "cuInit : nth=1 -> return CUDA_SUCCESS", 1);
  EXPECT_CU(CUDA_SUCCESS, cuInit(0));
  EXPECT_FALSE(mcsim::api::initialized());
  int n = 0;
  EXPECT_CU(CUDA_ERROR_NOT_INITIALIZED, cuDeviceGetCount(&n));
  EXPECT_CU(CUDA_SUCCESS, cuInit(0));
  EXPECT_OK(cuDeviceGetCount(&n));
}

// A delay at cuInit: initialization takes simulated time.
TEST(InitPoints, DelayAtCuInit) {
  ::setenv("MCSIM_FAULTS", "cuInit : nth=1 -> delay 2s", 1);
  EXPECT_CU(CUDA_SUCCESS, cuInit(0));
  EXPECT_EQ(2'000'000'000'000ull, mcsim::api::simulatedTimePs());
}

class InitPointsAfterInit : public McTest {};

// Once initialized, a cuInit that fails changes nothing: the process stays initialized.
TEST_F(InitPointsAfterInit, AFailingCuInitAfterSuccessChangesNothing) {
  INIT();
  const uint64_t before = mcsim::api::stateDigest();
  ASSERT_EQ("", mcsim::api::installFaultPlan("cuInit : always -> return CUDA_ERROR_UNKNOWN"));
  EXPECT_CU(CUDA_ERROR_UNKNOWN, cuInit(0));
  EXPECT_TRUE(mcsim::api::initialized());
  EXPECT_EQ(before, mcsim::api::stateDigest());
  int n = 0;
  EXPECT_OK(cuDeviceGetCount(&n));
}

// cuDriverGetVersion answers before cuInit; a plan cannot touch it until cuInit has loaded one.
TEST(InitPoints, DriverGetVersionIsAFaultPointOnceThePlanIsLoaded) {
  ::setenv("MCSIM_FAULTS", "cuDriverGetVersion : always -> return CUDA_ERROR_SYSTEM_DRIVER_MISMATCH", 1);
  int v = -1;
  EXPECT_CU(CUDA_SUCCESS, cuDriverGetVersion(&v));  // no plan yet
  EXPECT_GE(v, 12000);
  ASSERT_CU(CUDA_SUCCESS, cuInit(0));
  int w = -1;
  EXPECT_CU(CUDA_ERROR_SYSTEM_DRIVER_MISMATCH, cuDriverGetVersion(&w));
  EXPECT_EQ(-1, w);  // a failing call writes nothing
  EXPECT_EQ(1u, mcsim::api::faultReport()[0].fired);
}

// An older driver that lacks the multicast entry points: lookups of cuMulticast* fail, others work,
// through both forms of cuGetProcAddress (one base name).
TEST_F(InitPointsAfterInit, GetProcAddressFiltersBySymbol) {
  INIT();
  ASSERT_EQ("", mcsim::api::installFaultPlan("cuGetProcAddress symbol=cuMulticast* : always -> return CUDA_ERROR_NOT_FOUND\n"
                                             "cuGetProcAddress cudaVersion<11000 : always -> return CUDA_ERROR_NOT_SUPPORTED"));
  void* pfn = reinterpret_cast<void*>(0x1);
  CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SUCCESS;
  EXPECT_CU(CUDA_ERROR_NOT_FOUND, cuGetProcAddress_v2("cuMulticastCreate", &pfn, 12080, 0, &st));
  EXPECT_EQ(reinterpret_cast<void*>(0x1), pfn);  // untouched
  EXPECT_CU(CUDA_ERROR_NOT_FOUND, cuGetProcAddress_v2("cuMulticastBindMem", &pfn, 13000, 0, nullptr));
  EXPECT_OK(cuGetProcAddress_v2("cuMemCreate", &pfn, 12080, 0, &st));
  EXPECT_NE(nullptr, pfn);
  EXPECT_EQ(CU_GET_PROC_ADDRESS_SUCCESS, st);
  EXPECT_CU(CUDA_ERROR_NOT_SUPPORTED, cuGetProcAddress_v2("cuMemCreate", &pfn, 10020, 0, &st));
  // The 4-argument form, found through the table as NVSHMEM finds it.
  using Gpa4 = CUresult (*)(const char*, void**, int, cuuint64_t);
  void* raw = nullptr;
  ASSERT_OK(cuGetProcAddress_v2("cuGetProcAddress", &raw, 11030, 0, &st));
  ASSERT_NE(nullptr, raw);
  EXPECT_CU(CUDA_ERROR_NOT_FOUND, reinterpret_cast<Gpa4>(raw)("cuMulticastUnbind", &pfn, 12080, 0));
  EXPECT_EQ(3u, mcsim::api::faultReport()[0].fired);
}

TEST_F(InitPointsAfterInit, ErrorStringCallsAreFaultPoints) {
  INIT();
  ASSERT_EQ("", mcsim::api::installFaultPlan("cuGetErrorName error=CUDA_ERROR_ILLEGAL_STATE : always -> return CUDA_ERROR_INVALID_VALUE\n"
                                             "cuGetErrorString : nth=2 -> return CUDA_ERROR_UNKNOWN"));
  const char* s = "untouched";
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuGetErrorName(CUDA_ERROR_ILLEGAL_STATE, &s));
  EXPECT_STREQ("untouched", s);
  EXPECT_OK(cuGetErrorName(CUDA_ERROR_SYSTEM_NOT_READY, &s));
  EXPECT_STREQ("CUDA_ERROR_SYSTEM_NOT_READY", s);
  EXPECT_OK(cuGetErrorString(CUDA_ERROR_OUT_OF_MEMORY, &s));
  s = "untouched";
  EXPECT_CU(CUDA_ERROR_UNKNOWN, cuGetErrorString(CUDA_ERROR_OUT_OF_MEMORY, &s));
  EXPECT_STREQ("untouched", s);
}

// Fabric-level rules count driver calls that act on the node; a program's error-name lookups,
// version queries and symbol lookups do not move them.
TEST_F(InitPointsAfterInit, FabricRulesDoNotCountTheseCalls) {
  INIT();
  ASSERT_EQ("", mcsim::api::installFaultPlan("fabric-manager : nth=2 -> state degraded"));
  const char* s = nullptr;
  int v = 0;
  void* pfn = nullptr;
  for (int i = 0; i < 5; ++i) {
    EXPECT_OK(cuGetErrorName(CUDA_ERROR_UNKNOWN, &s));
    EXPECT_OK(cuGetErrorString(CUDA_ERROR_UNKNOWN, &s));
    EXPECT_OK(cuDriverGetVersion(&v));
    EXPECT_OK(cuGetProcAddress_v2("cuMemCreate", &pfn, 12080, 0, nullptr));
    EXPECT_OK(cuInit(0));
  }
  EXPECT_EQ(0u, mcsim::api::faultReport()[0].matched);
  EXPECT_OK(cuDeviceGetCount(&v));
  EXPECT_OK(cuDeviceGetCount(&v));
  EXPECT_EQ(2u, mcsim::api::faultReport()[0].matched);
  EXPECT_EQ(1u, mcsim::api::faultReport()[0].fired);
}

}  // namespace
