// Contexts: primary contexts, created contexts, the per-thread stack, flags, release and reset.
#include "tests/conformance/conformance.h"

namespace {

// cuInit only; the tests manage contexts themselves.
class Context : public conformance::InitTest {
 protected:
  void TearDown() override {
    cuCtxSetCurrent(nullptr);
    while (cuCtxPopCurrent(nullptr) == CUDA_SUCCESS) {
    }
  }
  // cuDevicePrimaryCtxGetState of `dev`.
  static void primaryState(unsigned* flags, int* active, int dev = 0) {
    *flags = 0xAAAA;
    *active = -7;
    EXPECT_CU(CUDA_SUCCESS, cuDevicePrimaryCtxGetState(dev, flags, active));
  }
  static CUcontext current() {
    CUcontext c = reinterpret_cast<CUcontext>(uintptr_t{1});
    EXPECT_CU(CUDA_SUCCESS, cuCtxGetCurrent(&c));
    return c;
  }
  static unsigned ctxFlags() {
    unsigned f = 0xAAAA;
    EXPECT_CU(CUDA_SUCCESS, cuCtxGetFlags(&f));
    return f;
  }
};

const CUcontext kSentinel = reinterpret_cast<CUcontext>(uintptr_t{1});

// probe: ctx.getcurrent.after_init, ctx.primary.state.before_retain, ctx.getdevice.no_ctx,
// ctx.synchronize.no_ctx, ctx.pop.empty_stack_initial, ctx.getflags.no_ctx,
// ctx.getapiversion.null_no_ctx, ctx.setflags.no_ctx, ctx.memalloc.no_ctx
TEST_F(Context, WithoutACurrentContext) {
  EXPECT_EQ(nullptr, current());
  unsigned flags;
  int active;
  primaryState(&flags, &active);
  EXPECT_EQ(0u, flags);
  EXPECT_EQ(0, active);
  CUdevice d = -5;
  EXPECT_CU(CUDA_ERROR_INVALID_CONTEXT, cuCtxGetDevice(&d));
  EXPECT_EQ(-5, d);
  EXPECT_CU(CUDA_ERROR_INVALID_CONTEXT, cuCtxSynchronize());
  CUcontext popped = kSentinel;
  EXPECT_CU(CUDA_ERROR_INVALID_CONTEXT, cuCtxPopCurrent(&popped));
  EXPECT_EQ(kSentinel, popped);
  unsigned f = 0xAAAA;
  EXPECT_CU(CUDA_ERROR_INVALID_CONTEXT, cuCtxGetFlags(&f));
  EXPECT_EQ(0xAAAAu, f);
  unsigned v = 0xAAAA;
  EXPECT_CU(CUDA_ERROR_INVALID_CONTEXT, cuCtxGetApiVersion(nullptr, &v));
  EXPECT_EQ(0xAAAAu, v);
  EXPECT_CU(CUDA_ERROR_INVALID_CONTEXT, cuCtxSetFlags(0));
  CUdeviceptr dp = 0;
  EXPECT_CU(CUDA_ERROR_INVALID_CONTEXT, cuMemAlloc(&dp, 1024));
  EXPECT_EQ(0u, dp);
}

// probe: ctx.primary.retain, ctx.primary.state.after_retain, ctx.getcurrent.after_retain,
// ctx.primary.retain_again, ctx.primary.release_extra_retain
TEST_F(Context, PrimaryRetainActivatesButDoesNotMakeCurrent) {
  CUcontext p = nullptr;
  EXPECT_CU(CUDA_SUCCESS, cuDevicePrimaryCtxRetain(&p, 0));
  EXPECT_NE(nullptr, p);
  unsigned flags;
  int active;
  primaryState(&flags, &active);
  EXPECT_EQ(0u, flags);
  EXPECT_EQ(1, active);
  EXPECT_EQ(nullptr, current());
  CUcontext again = nullptr;
  EXPECT_CU(CUDA_SUCCESS, cuDevicePrimaryCtxRetain(&again, 0));
  EXPECT_EQ(p, again);
  EXPECT_CU(CUDA_SUCCESS, cuDevicePrimaryCtxRelease(0));
  EXPECT_CU(CUDA_SUCCESS, cuDevicePrimaryCtxRelease(0));
}

// probe: ctx.setcurrent.primary, ctx.getcurrent.after_setcurrent, ctx.getdevice.primary,
// ctx.getapiversion.primary, ctx.getapiversion.null_with_current, ctx.getflags.primary_initial,
// ctx.synchronize.primary
TEST_F(Context, PrimaryContextQueries) {
  CUcontext p = nullptr;
  ASSERT_OK(cuDevicePrimaryCtxRetain(&p, 0));
  EXPECT_CU(CUDA_SUCCESS, cuCtxSetCurrent(p));
  EXPECT_EQ(p, current());
  CUdevice d = -5;
  EXPECT_CU(CUDA_SUCCESS, cuCtxGetDevice(&d));
  EXPECT_EQ(0, d);
  unsigned v = 0xAAAA;
  EXPECT_CU(CUDA_SUCCESS, cuCtxGetApiVersion(p, &v));
  EXPECT_EQ(3020u, v);
  v = 0xAAAA;
  EXPECT_CU(CUDA_SUCCESS, cuCtxGetApiVersion(nullptr, &v));
  EXPECT_EQ(3020u, v);
  EXPECT_EQ(static_cast<unsigned>(CU_CTX_MAP_HOST), ctxFlags());
  EXPECT_CU(CUDA_SUCCESS, cuCtxSynchronize());
  cuCtxSetCurrent(nullptr);
  cuDevicePrimaryCtxRelease(0);
}

// probe: ctx.setflags.blocking_sync, ctx.getflags.after_setflags, ctx.primary.state.after_ctxsetflags,
// ctx.setflags.invalid_0xffff, ctx.setflags.map_host_0x8, ctx.getflags.after_invalid_setflags,
// ctx.setflags.restore
TEST_F(Context, CtxSetFlagsChangesTheContextNotThePrimaryState) {
  CUcontext p = nullptr;
  ASSERT_OK(cuDevicePrimaryCtxRetain(&p, 0));
  ASSERT_OK(cuCtxSetCurrent(p));
  EXPECT_CU(CUDA_SUCCESS, cuCtxSetFlags(CU_CTX_SCHED_BLOCKING_SYNC));
  EXPECT_EQ(0xcu, ctxFlags());
  unsigned flags;
  int active;
  primaryState(&flags, &active);
  EXPECT_EQ(0u, flags);
  EXPECT_EQ(1, active);
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuCtxSetFlags(0xFFFF));
  EXPECT_CU(CUDA_SUCCESS, cuCtxSetFlags(CU_CTX_MAP_HOST));
  EXPECT_EQ(0x8u, ctxFlags());
  EXPECT_CU(CUDA_SUCCESS, cuCtxSetFlags(0));
  cuCtxSetCurrent(nullptr);
  cuDevicePrimaryCtxRelease(0);
}

// probe: ctx.primary.setflags_v2.spin_while_active, ctx.primary.state.after_setflags_v2_active,
// ctx.getflags.after_primary_setflags_v2, ctx.primary.setflags_v2.invalid_0xffff,
// ctx.primary.setflags_v2.dev_count, ctx.primary.setflags_v2.restore0
TEST_F(Context, PrimarySetFlagsWhileActive) {
  CUcontext p = nullptr;
  ASSERT_OK(cuDevicePrimaryCtxRetain(&p, 0));
  ASSERT_OK(cuCtxSetCurrent(p));
  EXPECT_CU(CUDA_SUCCESS, cuDevicePrimaryCtxSetFlags(0, CU_CTX_SCHED_SPIN));
  unsigned flags;
  int active;
  primaryState(&flags, &active);
  EXPECT_EQ(0x1u, flags);
  EXPECT_EQ(1, active);
  EXPECT_EQ(0x9u, ctxFlags());
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuDevicePrimaryCtxSetFlags(0, 0xFFFF));
  EXPECT_CU(CUDA_ERROR_INVALID_DEVICE, cuDevicePrimaryCtxSetFlags(deviceCount, 0));
  EXPECT_CU(CUDA_SUCCESS, cuDevicePrimaryCtxSetFlags(0, 0));
  cuCtxSetCurrent(nullptr);
  cuDevicePrimaryCtxRelease(0);
}

// probe: ctx.enablepeer.self, ctx.enablepeer.self_flags1, ctx.disablepeer.self_not_enabled
TEST_F(Context, PeerAccessWithItself) {
  CUcontext p = nullptr;
  ASSERT_OK(cuDevicePrimaryCtxRetain(&p, 0));
  ASSERT_OK(cuCtxSetCurrent(p));
  EXPECT_CU(CUDA_ERROR_PEER_ACCESS_UNSUPPORTED, cuCtxEnablePeerAccess(p, 0));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuCtxEnablePeerAccess(p, 1));
  EXPECT_CU(CUDA_ERROR_PEER_ACCESS_NOT_ENABLED, cuCtxDisablePeerAccess(p));
  cuCtxSetCurrent(nullptr);
  cuDevicePrimaryCtxRelease(0);
}

// Multi-GPU: peer access between two devices' primary contexts, enabled once.
TEST_F(Context, PeerAccessBetweenTwoDevices) {
  REQUIRE_DEVICES(2);
  int can = 0;
  ASSERT_OK(cuDeviceCanAccessPeer(&can, 0, 1));
  if (can == 0) GTEST_SKIP() << "devices 0 and 1 are not peers";
  CUcontext p0 = nullptr, p1 = nullptr;
  ASSERT_OK(cuDevicePrimaryCtxRetain(&p0, 0));
  ASSERT_OK(cuDevicePrimaryCtxRetain(&p1, 1));
  ASSERT_OK(cuCtxSetCurrent(p0));
  EXPECT_CU(CUDA_SUCCESS, cuCtxEnablePeerAccess(p1, 0));
  EXPECT_CU(CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED, cuCtxEnablePeerAccess(p1, 0));
  EXPECT_CU(CUDA_SUCCESS, cuCtxDisablePeerAccess(p1));
  EXPECT_CU(CUDA_ERROR_PEER_ACCESS_NOT_ENABLED, cuCtxDisablePeerAccess(p1));
  cuCtxSetCurrent(nullptr);
  cuDevicePrimaryCtxRelease(1);
  cuDevicePrimaryCtxRelease(0);
}

// probe: ctx.pop.one_on_stack, ctx.getcurrent.after_pop, ctx.pop.empty_stack, ctx.push.null,
// ctx.getcurrent.after_push_null, ctx.push.primary, ctx.push.primary_twice,
// ctx.getcurrent.after_push2, ctx.pop.after_push2.0, ctx.pop.after_push2.1, ctx.pop.after_push2.2,
// ctx.pop.null_out_empty, ctx.setcurrent.null_empty, ctx.getcurrent.after_setcurrent_null,
// ctx.setcurrent.null_with_stack1, ctx.pop.after_setcurrent_null_with_stack1,
// ctx.pop.null_out_when_nonempty_or_empty
TEST_F(Context, StackOperations) {
  CUcontext p = nullptr;
  ASSERT_OK(cuDevicePrimaryCtxRetain(&p, 0));
  ASSERT_OK(cuCtxSetCurrent(p));
  CUcontext popped = kSentinel;
  EXPECT_CU(CUDA_SUCCESS, cuCtxPopCurrent(&popped));
  EXPECT_EQ(p, popped);
  EXPECT_EQ(nullptr, current());
  popped = kSentinel;
  EXPECT_CU(CUDA_ERROR_INVALID_CONTEXT, cuCtxPopCurrent(&popped));
  EXPECT_EQ(kSentinel, popped);
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuCtxPushCurrent(nullptr));
  EXPECT_EQ(nullptr, current());
  EXPECT_CU(CUDA_SUCCESS, cuCtxPushCurrent(p));
  EXPECT_CU(CUDA_SUCCESS, cuCtxPushCurrent(p));
  EXPECT_EQ(p, current());
  for (int i = 0; i < 2; ++i) {
    popped = kSentinel;
    EXPECT_CU(CUDA_SUCCESS, cuCtxPopCurrent(&popped)) << i;
    EXPECT_EQ(p, popped) << i;
  }
  popped = kSentinel;
  EXPECT_CU(CUDA_ERROR_INVALID_CONTEXT, cuCtxPopCurrent(&popped));
  EXPECT_EQ(kSentinel, popped);
  EXPECT_CU(CUDA_ERROR_INVALID_CONTEXT, cuCtxPopCurrent(nullptr));
  EXPECT_CU(CUDA_SUCCESS, cuCtxSetCurrent(nullptr));
  EXPECT_EQ(nullptr, current());
  // cuCtxSetCurrent(NULL) replaces the top of the stack: a stack of one becomes empty.
  ASSERT_OK(cuCtxPushCurrent(p));
  EXPECT_CU(CUDA_SUCCESS, cuCtxSetCurrent(nullptr));
  popped = kSentinel;
  EXPECT_CU(CUDA_ERROR_INVALID_CONTEXT, cuCtxPopCurrent(&popped));
  EXPECT_EQ(kSentinel, popped);
  EXPECT_CU(CUDA_ERROR_INVALID_CONTEXT, cuCtxPopCurrent(nullptr));
  cuDevicePrimaryCtxRelease(0);
}

// probe: ctx.create.null_params_flags0, ctx.getcurrent.after_create, ctx.getapiversion.created,
// ctx.getflags.created_flags0, ctx.pop.created, ctx.getcurrent.after_pop_created, ctx.push.created,
// ctx.destroy.current_created, ctx.getcurrent.after_destroy_current, ctx.destroy.twice,
// ctx.pop.after_destroy, ctx.destroy.null
TEST_F(Context, CreatedContextLifecycle) {
  CUcontext p = nullptr;
  ASSERT_OK(cuDevicePrimaryCtxRetain(&p, 0));
  ASSERT_OK(cuCtxSetCurrent(p));
  CUcontext c = nullptr;
  EXPECT_CU(CUDA_SUCCESS, cuCtxCreate(&c, nullptr, 0, 0));
  ASSERT_NE(nullptr, c);
  EXPECT_NE(p, c);
  EXPECT_EQ(c, current());  // created contexts are pushed
  unsigned v = 0xAAAA;
  EXPECT_CU(CUDA_SUCCESS, cuCtxGetApiVersion(c, &v));
  EXPECT_EQ(3020u, v);
  EXPECT_EQ(0x0u, ctxFlags());  // no MAP_HOST on a created context
  CUcontext popped = nullptr;
  EXPECT_CU(CUDA_SUCCESS, cuCtxPopCurrent(&popped));
  EXPECT_EQ(c, popped);
  EXPECT_EQ(p, current());
  EXPECT_CU(CUDA_SUCCESS, cuCtxPushCurrent(c));
  EXPECT_CU(CUDA_SUCCESS, cuCtxDestroy(c));
  EXPECT_EQ(p, current());  // destroying the current context pops it
  // A second destroy is refused. The real driver has answered both CONTEXT_IS_DESTROYED (probe)
  // and INVALID_CONTEXT (conformance run of 2026-11-20) for it; mcsim answers the former.
  const CUresult twice = cuCtxDestroy(c);
  EXPECT_TRUE(twice == CUDA_ERROR_CONTEXT_IS_DESTROYED || twice == CUDA_ERROR_INVALID_CONTEXT)
      << cutest::resultName(twice);
  popped = kSentinel;
  EXPECT_CU(CUDA_SUCCESS, cuCtxPopCurrent(&popped));
  EXPECT_EQ(p, popped);
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuCtxDestroy(nullptr));
  cuDevicePrimaryCtxRelease(0);
}

// probe: ctx.create.dev_count, ctx.create.dev_neg1, ctx.create.flags_ffffffff,
// ctx.create.flags_blocking_maphost, ctx.getflags.created_blocking_maphost,
// ctx.getcurrent.after_pop_c3, ctx.destroy.not_current, ctx.getcurrent.after_destroy_not_current,
// ctx.create.zeroed_params, null.ctxcreate_out
TEST_F(Context, CreateArgumentsAndFlags) {
  CUcontext p = nullptr;
  ASSERT_OK(cuDevicePrimaryCtxRetain(&p, 0));
  ASSERT_OK(cuCtxSetCurrent(p));
  CUcontext c = nullptr;
  EXPECT_CU(CUDA_ERROR_INVALID_DEVICE, cuCtxCreate(&c, nullptr, 0, deviceCount));
  EXPECT_EQ(nullptr, c);
  EXPECT_CU(CUDA_ERROR_INVALID_DEVICE, cuCtxCreate(&c, nullptr, 0, -1));
  EXPECT_EQ(nullptr, c);
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuCtxCreate(&c, nullptr, 0xFFFFFFFFu, 0));
  EXPECT_EQ(nullptr, c);
  EXPECT_EQ(p, current());
  EXPECT_CU(CUDA_SUCCESS, cuCtxCreate(&c, nullptr, CU_CTX_SCHED_BLOCKING_SYNC | CU_CTX_MAP_HOST, 0));
  ASSERT_NE(nullptr, c);
  EXPECT_EQ(0xcu, ctxFlags());
  CUcontext popped = nullptr;
  ASSERT_OK(cuCtxPopCurrent(&popped));
  EXPECT_EQ(p, current());
  EXPECT_CU(CUDA_SUCCESS, cuCtxDestroy(c));
  EXPECT_EQ(p, current());
  CUctxCreateParams params;
  std::memset(&params, 0, sizeof params);
  CUcontext c4 = nullptr;
  EXPECT_CU(CUDA_SUCCESS, cuCtxCreate(&c4, &params, 0, 0));
  EXPECT_NE(nullptr, c4);
  if (c4 != nullptr) cuCtxDestroy(c4);
  // Issue 19, item 16: a count of affinity parameters without their array was accepted; the real
  // H100 answers INVALID_VALUE (docs/real-driver/edge-probe-h100-2026-11-25.txt).
  params.numExecAffinityParams = 5;
  c4 = nullptr;
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuCtxCreate(&c4, &params, 0, 0));
  EXPECT_EQ(nullptr, c4);
  params.numExecAffinityParams = 0;
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuCtxCreate(nullptr, nullptr, 0, 0));
  cuCtxSetCurrent(nullptr);
  cuDevicePrimaryCtxRelease(0);
}

// Multi-GPU: a context on device 1 reports device 1.
TEST_F(Context, CreatedContextOnSecondDevice) {
  REQUIRE_DEVICES(2);
  CUcontext c = nullptr;
  ASSERT_OK(cuCtxCreate(&c, nullptr, 0, 1));
  CUdevice d = -5;
  EXPECT_CU(CUDA_SUCCESS, cuCtxGetDevice(&d));
  EXPECT_EQ(1, d);
  EXPECT_CU(CUDA_SUCCESS, cuCtxDestroy(c));
}

// probe: ctx.primary.release.1_of_1, ctx.primary.state.after_release_to_0,
// ctx.getcurrent.after_primary_release_to_0, ctx.primary.release.extra,
// ctx.primary.state.after_release_extra, ctx.primary.release.dev_count,
// ctx.primary.setflags_v2.blocking_inactive, ctx.primary.state.after_setflags_inactive,
// ctx.primary.reset.inactive, ctx.primary.state.after_reset_inactive, ctx.primary.reset.dev_count,
// ctx.primary.retain_after_release, ctx.primary.state.after_reretain
TEST_F(Context, PrimaryReleaseToZeroAndResetWhileInactive) {
  CUcontext p = nullptr;
  ASSERT_OK(cuDevicePrimaryCtxRetain(&p, 0));
  ASSERT_OK(cuCtxSetCurrent(p));
  EXPECT_CU(CUDA_SUCCESS, cuDevicePrimaryCtxRelease(0));
  unsigned flags;
  int active;
  primaryState(&flags, &active);
  EXPECT_EQ(0u, flags);
  EXPECT_EQ(0, active);
  EXPECT_EQ(p, current());  // still current, though released
  EXPECT_CU(CUDA_ERROR_INVALID_CONTEXT, cuDevicePrimaryCtxRelease(0));
  primaryState(&flags, &active);
  EXPECT_EQ(0, active);
  EXPECT_CU(CUDA_ERROR_INVALID_DEVICE, cuDevicePrimaryCtxRelease(deviceCount));
  EXPECT_CU(CUDA_SUCCESS, cuDevicePrimaryCtxSetFlags(0, CU_CTX_SCHED_BLOCKING_SYNC));
  primaryState(&flags, &active);
  EXPECT_EQ(0x4u, flags);
  EXPECT_EQ(0, active);
  EXPECT_CU(CUDA_SUCCESS, cuDevicePrimaryCtxReset(0));
  primaryState(&flags, &active);
  EXPECT_EQ(0x0u, flags);
  EXPECT_EQ(0, active);
  EXPECT_CU(CUDA_ERROR_INVALID_DEVICE, cuDevicePrimaryCtxReset(deviceCount));
  CUcontext p2 = nullptr;
  EXPECT_CU(CUDA_SUCCESS, cuDevicePrimaryCtxRetain(&p2, 0));
  EXPECT_EQ(p, p2);  // the same handle after release to zero
  primaryState(&flags, &active);
  EXPECT_EQ(0u, flags);
  EXPECT_EQ(1, active);
  cuCtxSetCurrent(nullptr);
  cuDevicePrimaryCtxRelease(0);
}

// probe: ctx.memalloc.before_reset, ctx.primary.reset.active_retained_current,
// ctx.primary.state.after_reset_active, ctx.getcurrent.after_reset, ctx.memalloc.after_reset,
// ctx.primary.state.after_memalloc_after_reset, ctx.memfree.pre_reset_alloc_after_reset,
// ctx.primary.retain_after_reset, ctx.primary.state.after_retain_after_reset,
// ctx.primary.release.after_retain_after_reset, ctx.primary.state.final,
// ctx.primary.release.p2_after_reset, ctx.primary.state.final2, ctx.getcurrent.final,
// ctx.synchronize.current_released_primary, ctx.getdevice.current_released_primary
TEST_F(Context, ResetOfAnActivePrimaryKeepsItsRetainCount) {
  CUcontext p = nullptr;
  ASSERT_OK(cuDevicePrimaryCtxRetain(&p, 0));
  ASSERT_OK(cuCtxSetCurrent(p));
  CUdeviceptr dp = 0;
  EXPECT_CU(CUDA_SUCCESS, cuMemAlloc(&dp, 1 << 20));
  EXPECT_CU(CUDA_SUCCESS, cuDevicePrimaryCtxReset(0));
  unsigned flags;
  int active;
  primaryState(&flags, &active);
  EXPECT_EQ(0u, flags);
  EXPECT_EQ(0, active);
  EXPECT_EQ(p, current());
  CUdeviceptr dp2 = 0;
  EXPECT_CU(CUDA_ERROR_CONTEXT_IS_DESTROYED, cuMemAlloc(&dp2, 1 << 20));
  primaryState(&flags, &active);
  EXPECT_EQ(0, active);  // a failed call does not bring the context back
  EXPECT_CU(CUDA_ERROR_CONTEXT_IS_DESTROYED, cuMemFree(dp));
  CUcontext p3 = nullptr;
  EXPECT_CU(CUDA_SUCCESS, cuDevicePrimaryCtxRetain(&p3, 0));
  EXPECT_EQ(p, p3);
  primaryState(&flags, &active);
  EXPECT_EQ(1, active);
  // Reset destroyed the context but kept the first retain: two releases are needed now.
  EXPECT_CU(CUDA_SUCCESS, cuDevicePrimaryCtxRelease(0));
  primaryState(&flags, &active);
  EXPECT_EQ(0u, flags);
  EXPECT_EQ(1, active);
  EXPECT_CU(CUDA_SUCCESS, cuDevicePrimaryCtxRelease(0));
  primaryState(&flags, &active);
  EXPECT_EQ(0, active);
  EXPECT_EQ(p, current());
  EXPECT_CU(CUDA_ERROR_CONTEXT_IS_DESTROYED, cuCtxSynchronize());
  CUdevice d = -5;
  EXPECT_CU(CUDA_SUCCESS, cuCtxGetDevice(&d));
  EXPECT_EQ(0, d);
}

// probe: null.ctx_getcurrent, null.ctx_getdevice, null.ctx_getflags, null.ctx_getapiversion,
// null.primary_state_flags_out, null.primary_state_active_out, null.primary_retain_out
TEST_F(Context, NullOutPointers) {
  CUcontext p = nullptr;
  ASSERT_OK(cuDevicePrimaryCtxRetain(&p, 0));
  ASSERT_OK(cuCtxSetCurrent(p));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuCtxGetCurrent(nullptr));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuCtxGetDevice(nullptr));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuCtxGetFlags(nullptr));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuCtxGetApiVersion(p, nullptr));
  unsigned f = 0;
  int a = 0;
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuDevicePrimaryCtxGetState(0, nullptr, &a));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuDevicePrimaryCtxGetState(0, &f, nullptr));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuDevicePrimaryCtxRetain(nullptr, 0));
  cuCtxSetCurrent(nullptr);
  cuDevicePrimaryCtxRelease(0);
}

// probe: null.ctx_destroyed_use.destroy, null.ctx_destroyed_use.getapiversion,
// null.ctx_destroyed_use.setcurrent, null.ctx_destroyed_use.getcurrent,
// null.ctx_destroyed_use.memalloc, null.ctx_destroyed_use.synchronize, null.ctx_destroyed_use.push
}  // namespace
