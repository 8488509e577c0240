// What the host's clock does to event timings (docs/model.md, "What the host costs"), for
// timing_test's HostCost tests, run under each MCSIM_HOST_COST_PERCENT they ask for. One GPU, an
// empty PTX kernel, two streams. Prints one line per figure, `name = picoseconds`, from
// cuEventElapsedTime (rounded to the nanosecond) and the node's clock.
#include <cuda.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "mcsim/api.h"
#include "tests/common/check_or_exit.h"

namespace {

const char kPtx[] = R"(
.version 8.0
.target sm_90
.address_size 64
.visible .entry empty()
{
  ret;
}
)";

CUstream s, other;
CUevent a, b;

long long elapsedNs(CUevent from, CUevent to) {
  CHECK(cuEventSynchronize(to));
  float ms = 0;
  CHECK(cuEventElapsedTime(&ms, from, to));
  return std::llround(static_cast<double>(ms) * 1e6);
}

}  // namespace

int main() {
  constexpr int kN = 10;
  CHECK(cuInit(0));
  CUcontext ctx;
  CHECK(cuDevicePrimaryCtxRetain(&ctx, 0));
  CHECK(cuCtxSetCurrent(ctx));
  CUmodule mod;
  CUfunction empty;
  CHECK(cuModuleLoadData(&mod, kPtx));
  CHECK(cuModuleGetFunction(&empty, mod, "empty"));
  CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CHECK(cuStreamCreate(&other, CU_STREAM_NON_BLOCKING));
  CHECK(cuEventCreate(&a, 0));
  CHECK(cuEventCreate(&b, 0));
  CUevent x;
  CHECK(cuEventCreate(&x, 0));
  CUdeviceptr buf;
  constexpr size_t kBytes = size_t{64} << 20;
  CHECK(cuMemAlloc(&buf, 2 * kBytes));
  const auto launch = [&] { CHECK(cuLaunchKernel(empty, 1, 1, 1, 32, 1, 1, 0, s, nullptr, nullptr)); };
  launch();  // the kernel's first launch (the executor prepares it)
  CHECK(cuCtxSynchronize());

  // Two records back to back on an idle stream.
  CHECK(cuEventRecord(a, s));
  CHECK(cuEventRecord(b, s));
  std::printf("pair = %lld\n", elapsedNs(a, b));

  // A pair around kN records on another stream: host calls and nothing else.
  CHECK(cuEventRecord(a, s));
  for (int i = 0; i < kN; ++i) CHECK(cuEventRecord(x, other));
  CHECK(cuEventRecord(b, s));
  std::printf("records = %lld\n", elapsedNs(a, b));

  // A pair around one launch, and around kN launches, on an idle GPU.
  CHECK(cuEventRecord(a, s));
  launch();
  CHECK(cuEventRecord(b, s));
  std::printf("launch = %lld\n", elapsedNs(a, b));
  CHECK(cuEventRecord(a, s));
  for (int i = 0; i < kN; ++i) launch();
  CHECK(cuEventRecord(b, s));
  std::printf("launches = %lld\n", elapsedNs(a, b));

  // A blocking call: after it, the host's calls follow from the completion it waited for.
  CHECK(cuMemcpyDtoDAsync(buf + kBytes, buf, kBytes, s));
  CHECK(cuStreamSynchronize(s));
  CHECK(cuEventRecord(a, other));
  CHECK(cuEventRecord(b, other));
  std::printf("after_sync = %lld\n", elapsedNs(a, b));

  // A query spins until a copy is done: how many times, and the node's clock then.
  CHECK(cuEventRecord(a, s));
  CHECK(cuMemcpyDtoDAsync(buf + kBytes, buf, kBytes, s));
  CHECK(cuEventRecord(b, s));
  int polls = 0;
  CUresult q;
  while ((q = cuEventQuery(b)) == CUDA_ERROR_NOT_READY) ++polls;
  CHECK(q);
  std::printf("copy = %lld\npolls = %d\n", elapsedNs(a, b), polls);
  std::printf("node_time = %llu\n", static_cast<unsigned long long>(mcsim::api::simulatedTimePs()));
  CHECK(cuMemFree(buf));
  for (CUevent e : {a, b, x}) CHECK(cuEventDestroy(e));
  for (CUstream st : {s, other}) CHECK(cuStreamDestroy(st));
  CHECK(cuModuleUnload(mod));
  CHECK(cuDevicePrimaryCtxRelease(0));
  return 0;
}
