// How fast the model simulates copies: wall time, simulated bytes per wall second, SystemC timed
// waits per second, and host memory, for one scenario per process (the preset is fixed per
// process). bench/sim_speed.sh runs the scenarios and prints the table of docs/model.md.
//
//   sim_speed peer BYTES        one peer copy GPU 0 -> 1
//   sim_speed alltoall BYTES    every GPU sends BYTES/N to every other GPU (N = device count)
//   sim_speed memcpy BYTES      a plain host memcpy of BYTES, the yardstick for functional runs
//
// MCSIM_TOPOLOGY picks the node, MCSIM_TIMING_ONLY=1 skips the data. Prints one line:
//   scenario gpus bytes wall_s simulated_us sim_GBps_per_wall_s timed_waits waits_per_s rss_MiB
#include <cuda.h>
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "mcsim/api.h"

#define CHECK(x)                                                         \
  do {                                                                   \
    CUresult r_ = (x);                                                   \
    if (r_ != CUDA_SUCCESS) {                                            \
      std::fprintf(stderr, "error: %s -> %d (line %d)\n", #x, r_, __LINE__); \
      std::exit(1);                                                      \
    }                                                                    \
  } while (0)

namespace {

double rssMiB() {
  struct rusage u {};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;
}

double seconds(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: sim_speed peer|alltoall|memcpy BYTES\n");
    return 2;
  }
  const std::string scenario = argv[1];
  const size_t bytes = std::strtoull(argv[2], nullptr, 10);
  if (scenario == "memcpy") {
    // Into fresh memory (first touch, as a simulated destination's first copy), then again.
    std::vector<char> a(bytes, 1);
    std::unique_ptr<char[]> b(new char[bytes]);
    for (const char* pass : {"first", "again"}) {
      const auto t0 = std::chrono::steady_clock::now();
      std::memcpy(b.get(), a.data(), bytes);
      const auto t1 = std::chrono::steady_clock::now();
      std::printf("memcpy/%s 0 %zu %.4f - %.1f - - %.0f\n", pass, bytes, seconds(t0, t1), bytes / seconds(t0, t1) / 1e9,
                  rssMiB());
    }
    return b[bytes / 2] == 1 ? 0 : 1;
  }
  CHECK(cuInit(0));
  int n = 0;
  CHECK(cuDeviceGetCount(&n));
  const int gpus = scenario == "peer" ? 2 : n;
  std::vector<CUcontext> ctx(gpus);
  std::vector<CUdeviceptr> src(gpus), dst(gpus);
  std::vector<CUstream> stream(gpus);
  for (int d = 0; d < gpus; ++d) {
    CHECK(cuDevicePrimaryCtxRetain(&ctx[d], d));
    CHECK(cuCtxSetCurrent(ctx[d]));
    CHECK(cuMemAlloc(&src[d], bytes));
    CHECK(cuMemAlloc(&dst[d], bytes));
    CHECK(cuStreamCreate(&stream[d], CU_STREAM_NON_BLOCKING));
    // Touch the source once, so that a functional run copies real data.
    CHECK(cuMemsetD8(src[d], static_cast<unsigned char>(d + 1), bytes));
  }
  // Twice: the first run also pays for the host backing the destination on first touch (a page
  // fault per 4 KiB); the second is the steady state.
  for (const char* pass : {"first", "again"}) {
    const mcsim::api::SimulationStats before = mcsim::api::simulationStats();
    const auto t0 = std::chrono::steady_clock::now();
    size_t moved = 0;
    if (scenario == "peer") {
      CHECK(cuCtxSetCurrent(ctx[0]));
      CHECK(cuMemcpyPeerAsync(dst[1], ctx[1], src[0], ctx[0], bytes, stream[0]));
      moved = bytes;
    } else {
      const size_t part = bytes / static_cast<size_t>(gpus);
      for (int d = 0; d < gpus; ++d) {
        CHECK(cuCtxSetCurrent(ctx[d]));
        for (int k = 1; k < gpus; ++k) {
          const int to = (d + k) % gpus;
          CHECK(cuMemcpyPeerAsync(dst[to] + static_cast<size_t>(d) * part, ctx[to],
                                  src[d] + static_cast<size_t>(to) * part, ctx[d], part, stream[d]));
          moved += part;
        }
      }
    }
    for (int d = 0; d < gpus; ++d) {
      CHECK(cuCtxSetCurrent(ctx[d]));
      CHECK(cuStreamSynchronize(stream[d]));
    }
    const auto t1 = std::chrono::steady_clock::now();
    const mcsim::api::SimulationStats after = mcsim::api::simulationStats();
    const double wall = seconds(t0, t1);
    const uint64_t waits = after.timedWaits - before.timedWaits;
    std::printf("%s/%s %d %zu %.4f %.1f %.1f %llu %.0f %.0f\n", scenario.c_str(), pass, gpus, moved, wall,
                static_cast<double>(after.simulatedPs - before.simulatedPs) / 1e6, moved / wall / 1e9,
                static_cast<unsigned long long>(waits), waits / wall, rssMiB());
  }
  return 0;
}
