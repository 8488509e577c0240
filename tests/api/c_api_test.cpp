// mcsim's C API (include/mcsim/mcsim.h): what each function answers before and after cuInit,
// fault plans installed, refused and cleared, the node's leak counters, simulated time, and kernel
// models registered through C function pointers and launched.
#include "mcsim/mcsim.h"

#include <cuda.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "tests/common/cu_expect.h"

namespace {

uint64_t digest() {
  uint64_t d = 0;
  EXPECT_EQ(MCSIM_SUCCESS, mcsim_get_state_digest(&d));
  return d;
}

mcsim_node_stats stats() {
  mcsim_node_stats s{};
  EXPECT_EQ(MCSIM_SUCCESS, mcsim_get_node_stats(&s));
  return s;
}

// A context on device 0, current.
class CApi : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK(cuInit(0));
    ASSERT_OK(cuDevicePrimaryCtxRetain(&ctx_, 0));
    ASSERT_OK(cuCtxSetCurrent(ctx_));
  }
  void TearDown() override {
    if (ctx_ != nullptr) cuDevicePrimaryCtxRelease(0);
  }
  CUcontext ctx_ = nullptr;
};

void expandNothing(void*, const mcsim_kernel_launch*, mcsim_kernel_steps*) {}

TEST(CApiBeforeInit, VersionsAnswerAndNodeQueriesAreRefused) {
  EXPECT_EQ(static_cast<uint32_t>(MCSIM_API_VERSION), mcsim_api_version());
  EXPECT_STREQ(MCSIM_TEST_PROJECT_VERSION, mcsim_version());
  EXPECT_EQ(0, mcsim_initialized());
  EXPECT_STREQ("", mcsim_preset_name());
  uint64_t d = 7;
  EXPECT_EQ(MCSIM_ERROR_NOT_INITIALIZED, mcsim_get_state_digest(&d));
  EXPECT_EQ(0u, d);
  EXPECT_STREQ("cuInit has not succeeded", mcsim_last_error());
  mcsim_node_stats s;
  std::memset(&s, 0xff, sizeof s);
  EXPECT_EQ(MCSIM_ERROR_NOT_INITIALIZED, mcsim_get_node_stats(&s));
  EXPECT_EQ(0u, s.allocations);
  mcsim_driver_stats ds;
  std::memset(&ds, 0xff, sizeof ds);
  EXPECT_EQ(MCSIM_ERROR_NOT_INITIALIZED, mcsim_get_driver_stats(&ds));
  EXPECT_EQ(0u, ds.streams);
  mcsim_node_module_stats ms;
  std::memset(&ms, 0xff, sizeof ms);
  EXPECT_EQ(MCSIM_ERROR_NOT_INITIALIZED, mcsim_get_node_module_stats(&ms));
  EXPECT_EQ(0u, ms.ptx_modules);
  EXPECT_EQ(MCSIM_ERROR_NOT_INITIALIZED, mcsim_install_fault_plan("cuMemAlloc : always -> return CUDA_ERROR_UNKNOWN", 0));
  EXPECT_EQ(MCSIM_ERROR_NOT_INITIALIZED, mcsim_clear_fault_plan());
  EXPECT_EQ(MCSIM_ERROR_NOT_INITIALIZED, mcsim_advance_simulated_time(1000, nullptr));
  uint64_t ps = 7;
  EXPECT_EQ(MCSIM_ERROR_NOT_INITIALIZED, mcsim_get_simulated_time_ps(&ps));
  EXPECT_EQ(0u, ps);
  // Kernel models need no cuInit; a call that succeeds clears the thread's last error.
  ASSERT_EQ(MCSIM_SUCCESS, mcsim_register_kernel_model("before_init", nullptr, 0, &expandNothing, nullptr, nullptr));
  EXPECT_STREQ("", mcsim_last_error());
  EXPECT_EQ(1, mcsim_has_kernel_model("before_init"));
}

TEST_F(CApi, NullOutputsAreRefused) {
  EXPECT_EQ(MCSIM_ERROR_INVALID_VALUE, mcsim_get_state_digest(nullptr));
  EXPECT_STREQ("digest is NULL", mcsim_last_error());
  EXPECT_EQ(MCSIM_ERROR_INVALID_VALUE, mcsim_get_node_stats(nullptr));
  EXPECT_EQ(MCSIM_ERROR_INVALID_VALUE, mcsim_get_driver_stats(nullptr));
  EXPECT_EQ(MCSIM_ERROR_INVALID_VALUE, mcsim_get_node_module_stats(nullptr));
  EXPECT_EQ(MCSIM_ERROR_INVALID_VALUE, mcsim_get_simulated_time_ps(nullptr));
  EXPECT_EQ(MCSIM_ERROR_INVALID_VALUE, mcsim_get_simulation_stats(nullptr));
  EXPECT_EQ(MCSIM_ERROR_INVALID_VALUE, mcsim_install_fault_plan(nullptr, 0));
  EXPECT_EQ(MCSIM_ERROR_INVALID_VALUE, mcsim_release_fault(nullptr));
  size_t n = 0;
  EXPECT_EQ(MCSIM_ERROR_INVALID_VALUE, mcsim_get_fault_report(nullptr, &n));
  EXPECT_EQ(MCSIM_ERROR_INVALID_VALUE, mcsim_kernel_steps_add(nullptr, nullptr));
}

TEST_F(CApi, NodeQueriesAfterInit) {
  EXPECT_EQ(1, mcsim_initialized());
  EXPECT_STREQ("hgx-h100", mcsim_preset_name());
  EXPECT_EQ(digest(), digest());  // reading changes nothing
}

TEST_F(CApi, DriverStatsCountEachKindOfHandle) {
  mcsim_driver_stats before{}, with{}, after{};
  ASSERT_EQ(MCSIM_SUCCESS, mcsim_get_driver_stats(&before));
  CUstream s = nullptr;
  CUevent e = nullptr;
  CUgraph g = nullptr;
  ASSERT_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  ASSERT_OK(cuEventCreate(&e, 0));
  ASSERT_OK(cuGraphCreate(&g, 0));
  ASSERT_EQ(MCSIM_SUCCESS, mcsim_get_driver_stats(&with));
  EXPECT_EQ(before.streams + 1, with.streams);
  EXPECT_EQ(before.events + 1, with.events);
  EXPECT_EQ(before.graphs + 1, with.graphs);
  EXPECT_EQ(before.modules, with.modules);
  ASSERT_OK(cuGraphDestroy(g));
  ASSERT_OK(cuEventDestroy(e));
  ASSERT_OK(cuStreamDestroy(s));
  ASSERT_EQ(MCSIM_SUCCESS, mcsim_get_driver_stats(&after));
  EXPECT_EQ(0, std::memcmp(&before, &after, sizeof before));
}

TEST_F(CApi, AFaultPlanFailsACallThatChangesNothingUntilCleared) {
  ASSERT_EQ(MCSIM_SUCCESS, mcsim_install_fault_plan("cuMemAlloc : always -> return CUDA_ERROR_OUT_OF_MEMORY", 0));
  const uint64_t before = digest();
  const mcsim_node_stats empty = stats();
  CUdeviceptr p = 0;
  EXPECT_CU(CUDA_ERROR_OUT_OF_MEMORY, cuMemAlloc(&p, 1 << 20));
  EXPECT_EQ(before, digest());
  EXPECT_EQ(empty.allocations, stats().allocations);

  const mcsim_fault_rule_report* rules = nullptr;
  size_t count = 0;
  ASSERT_EQ(MCSIM_SUCCESS, mcsim_get_fault_report(&rules, &count));
  ASSERT_EQ(1u, count);
  EXPECT_STREQ("cuMemAlloc : always -> return CUDA_ERROR_OUT_OF_MEMORY", rules[0].rule);
  EXPECT_STREQ("MCSIM_API:1", rules[0].where);
  EXPECT_EQ(1u, rules[0].matched);
  EXPECT_EQ(1u, rules[0].fired);

  ASSERT_EQ(MCSIM_SUCCESS, mcsim_clear_fault_plan());
  ASSERT_EQ(MCSIM_SUCCESS, mcsim_get_fault_report(&rules, &count));
  EXPECT_EQ(0u, count);
  ASSERT_OK(cuMemAlloc(&p, 1 << 20));
  EXPECT_NE(before, digest());
  EXPECT_EQ(empty.allocations + 1, stats().allocations);
  ASSERT_OK(cuMemFree(p));
  EXPECT_EQ(empty.allocations, stats().allocations);
  EXPECT_EQ(empty.reservations, stats().reservations);
}

TEST_F(CApi, AMalformedPlanIsRefusedAndThePlanInForceStays) {
  ASSERT_EQ(MCSIM_SUCCESS, mcsim_install_fault_plan("cuMemAlloc : always -> return CUDA_ERROR_OUT_OF_MEMORY", 0));
  EXPECT_EQ(MCSIM_ERROR_INVALID_PLAN, mcsim_install_fault_plan("# fine\ncuMemAlloc : nht=2 -> block\n", 0));
  EXPECT_EQ(0, std::strncmp("MCSIM_API:2: unknown trigger 'nht'", mcsim_last_error(), 34)) << mcsim_last_error();
  EXPECT_EQ(MCSIM_ERROR_INVALID_PLAN, mcsim_install_fault_plan("cuMemAlloc : always -> return CUDA_ERROR_NO_SUCH", 0));
  EXPECT_NE(std::string::npos, std::string(mcsim_last_error()).find("CUDA_ERROR_NO_SUCH")) << mcsim_last_error();
  CUdeviceptr p = 0;
  EXPECT_CU(CUDA_ERROR_OUT_OF_MEMORY, cuMemAlloc(&p, 1 << 20));
}

TEST_F(CApi, AdvancingTimeMovesTheClockByExactlyThatMuch) {
  uint64_t start = 0;
  ASSERT_EQ(MCSIM_SUCCESS, mcsim_get_simulated_time_ps(&start));
  uint64_t reached = 0;
  ASSERT_EQ(MCSIM_SUCCESS, mcsim_advance_simulated_time(5000000, &reached));
  EXPECT_EQ(start + 5000000, reached);
  uint64_t now = 0;
  ASSERT_EQ(MCSIM_SUCCESS, mcsim_get_simulated_time_ps(&now));
  EXPECT_EQ(reached, now);
  mcsim_simulation_stats sim{};
  ASSERT_EQ(MCSIM_SUCCESS, mcsim_get_simulation_stats(&sim));
  EXPECT_EQ(now, sim.simulated_ps);
  EXPECT_EQ(MCSIM_SUCCESS, mcsim_advance_simulated_time(0, nullptr));
}

// --- Kernel models through C function pointers ---

const char* const kUserPtx =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry c_scale(.param .u64 a, .param .u64 b, .param .u64 c) { ret; }\n";

struct ScaleModel {
  int launches = 0;
  int released = 0;
  std::vector<uint32_t> grids;
};

// c_scale(dst, src, n): dst = src + src over n f32; n == 0 traps.
void expandScale(void* user, const mcsim_kernel_launch* l, mcsim_kernel_steps* steps) {
  auto* m = static_cast<ScaleModel*>(user);
  ++m->launches;
  m->grids.push_back(l->grid.x);
  uint64_t dst = 0, src = 0, n = 0;
  std::memcpy(&dst, l->params[0], 8);
  std::memcpy(&src, l->params[1], 8);
  std::memcpy(&n, l->params[2], 8);
  if (n == 0) {
    mcsim_kernel_steps_reject(steps, "n is 0");
    return;
  }
  const mcsim_kernel_step s = mcsim_step_reduce(dst, src, src, n, MCSIM_DTYPE_F32, MCSIM_REDOP_ADD);
  mcsim_kernel_steps_add(steps, &s);
}

void releaseScale(void* user) { ++static_cast<ScaleModel*>(user)->released; }

TEST_F(CApi, AKernelModelRegisteredFromCRunsItsSteps) {
  ScaleModel model;
  const size_t params[] = {8, 8, 8};
  EXPECT_EQ(0, mcsim_has_kernel_model("c_scale"));
  ASSERT_EQ(MCSIM_SUCCESS, mcsim_register_kernel_model("c_scale", params, 3, &expandScale, &model, &releaseScale));
  EXPECT_EQ(1, mcsim_has_kernel_model("c_scale"));
  EXPECT_EQ(1, mcsim_has_kernel_model(MCSIM_KERNEL_COPY));  // the kernel library's

  CUmodule mod;
  ASSERT_OK(cuModuleLoadData(&mod, kUserPtx));
  CUfunction f;
  ASSERT_OK(cuModuleGetFunction(&f, mod, "c_scale"));
  CUdeviceptr buf = 0;
  ASSERT_OK(cuMemAlloc(&buf, 1 << 20));
  const float in[4] = {1.5f, -2, 3, 0.25f};
  ASSERT_OK(cuMemcpyHtoD(buf, in, sizeof in));
  CUdeviceptr dst = buf + 4096, src = buf;
  uint64_t n = 4;
  void* args[] = {&dst, &src, &n};
  ASSERT_OK(cuLaunchKernel(f, 3, 1, 1, 32, 1, 1, 0, nullptr, args, nullptr));
  ASSERT_OK(cuCtxSynchronize());
  float out[4] = {};
  ASSERT_OK(cuMemcpyDtoH(out, dst, sizeof out));
  EXPECT_EQ(3.0f, out[0]);
  EXPECT_EQ(-4.0f, out[1]);
  EXPECT_EQ(6.0f, out[2]);
  EXPECT_EQ(0.5f, out[3]);
  EXPECT_EQ(1, model.launches);
  EXPECT_EQ(std::vector<uint32_t>{3}, model.grids);

  // A rejected launch succeeds and poisons the context, as a trapping kernel does.
  n = 0;
  ASSERT_OK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, nullptr, args, nullptr));
  EXPECT_CU(CUDA_ERROR_LAUNCH_FAILED, cuCtxSynchronize());
  EXPECT_EQ(2, model.launches);

  // Replacing the model releases the old one's user data, once.
  EXPECT_EQ(0, model.released);
  ScaleModel second;
  ASSERT_EQ(MCSIM_SUCCESS, mcsim_register_kernel_model("c_scale", params, 3, &expandScale, &second, &releaseScale));
  EXPECT_EQ(1, model.released);
  EXPECT_EQ(0, second.released);
}

void addUnknownStep(void* user, const mcsim_kernel_launch*, mcsim_kernel_steps* steps) {
  mcsim_kernel_step s = mcsim_step_copy(0, 0, 4);
  s.kind = 99;
  *static_cast<mcsim_status*>(user) = mcsim_kernel_steps_add(steps, &s);
}

TEST_F(CApi, BadRegistrationsAndStepsAreRefused) {
  const size_t zero[] = {8, 0};
  EXPECT_EQ(MCSIM_ERROR_INVALID_VALUE, mcsim_register_kernel_model("k", zero, 2, &expandScale, nullptr, nullptr));
  EXPECT_STREQ("parameter 1 has 0 bytes", mcsim_last_error());
  EXPECT_EQ(MCSIM_ERROR_INVALID_VALUE, mcsim_register_kernel_model("", nullptr, 0, &expandScale, nullptr, nullptr));
  EXPECT_EQ(MCSIM_ERROR_INVALID_VALUE, mcsim_register_kernel_model("k", nullptr, 0, nullptr, nullptr, nullptr));
  EXPECT_EQ(MCSIM_ERROR_INVALID_VALUE, mcsim_register_kernel_model("k", nullptr, 1, &expandScale, nullptr, nullptr));
  EXPECT_EQ(0, mcsim_has_kernel_model("k"));
  EXPECT_EQ(0, mcsim_has_kernel_model(nullptr));

  // An unknown step kind is refused and adds nothing: the kernel runs with no steps.
  mcsim_status added = MCSIM_SUCCESS;
  ASSERT_EQ(MCSIM_SUCCESS, mcsim_register_kernel_model("c_scale", nullptr, 0, &addUnknownStep, &added, nullptr));
  CUmodule mod;
  ASSERT_OK(cuModuleLoadData(&mod, kUserPtx));
  CUfunction f;
  ASSERT_OK(cuModuleGetFunction(&f, mod, "c_scale"));
  ASSERT_OK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, nullptr, nullptr, nullptr));
  EXPECT_EQ(MCSIM_ERROR_INVALID_VALUE, added);
  EXPECT_OK(cuCtxSynchronize());
}

}  // namespace
