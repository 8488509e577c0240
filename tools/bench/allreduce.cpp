// mcsim_bench_allreduce: an all-reduce benchmark written against the CUDA driver API only, in the
// manner of nccl-tests' all_reduce_perf. The same binary runs on mcsim (`mcsim bench allreduce`,
// or `mcsim run -- mcsim_bench_allreduce ...`) and on a real multicast-capable node.
//
// For each size it runs -w warm-up all-reduces and --iters timed ones, back to back, and prints
// nccl-tests' table (report.h), or with --format plain
//   bytes time_us algbw_GBps busbw_GBps
// with nccl-tests' definitions: algbw = bytes / time, busbw = algbw * 2(n-1)/n (GB = 1e9 bytes).
// time is the mean over the timed iterations of the span from the earliest start to the latest
// end across the GPUs. Each GPU records an event before its launches of the iteration and one
// after them, on its own stream. Real drivers time only events of one context
// (cuEventElapsedTime), so the span is taken as the longest of the GPUs' own spans: every
// algorithm's first act is a cross-GPU synchronisation (the kernels' barrier; the ring's steps
// wait for each other), so the GPU that starts first waits for the others inside its own span,
// which therefore runs from the earliest start to the common end. Events waited for across GPUs
// would cost a cross-GPU synchronisation each (about 5 us on a real H200, and in mcsim's model)
// inside the span; none is there. What an iteration needs before it may start (the ring's
// waits for its successor's previous iteration) comes before the start events.
//
// With --check, after the timed iterations of a size, every GPU's input is set to small whole
// numbers (reference.h), one more all-reduce runs, and every GPU's result must equal the host's
// sum exactly. Exit status: 0 when everything succeeded (and the check passed), 1 on a failure,
// 2 on a usage error.
#include <cuda.h>

#include <algorithm>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "algorithms.h"
#include "buffers.h"
#include "cu_check.h"
#include "gpu_set.h"
#include "mcsim/kernels.h"
#include "options.h"
#include "report.h"
#include "reference.h"

namespace mcsim::bench {

namespace {

class Benchmark {
 public:
  Benchmark(const Options& o, GpuSet& gpus, AllReduce& algo) : o_(o), gpus_(gpus), algo_(algo) {}

  bool createEvents() {
    const size_t iterations = static_cast<size_t>(o_.warmups + o_.iters);
    starts_.assign(iterations, std::vector<CUevent>(static_cast<size_t>(gpus_.size()), nullptr));
    ends_ = starts_;
    for (size_t i = 0; i < iterations; ++i) {
      for (int g = 0; g < gpus_.size(); ++g) {
        if (!gpus_.use(g)) return false;
        BENCH_CU(cuEventCreate(&starts_[i][static_cast<size_t>(g)], CU_EVENT_DEFAULT));
        BENCH_CU(cuEventCreate(&ends_[i][static_cast<size_t>(g)], CU_EVENT_DEFAULT));
      }
    }
    return true;
  }

  // Whether work may still be queued or running: after a failure in the middle of an
  // all-reduce, some GPUs can wait in a barrier for launches that never came.
  bool busy() const { return queued_; }

  bool destroyEvents() {
    bool ok = true;
    for (const auto* events : {&starts_, &ends_}) {
      for (const std::vector<CUevent>& iteration : *events) {
        for (size_t g = 0; g < iteration.size(); ++g) {
          if (iteration[g] == nullptr) continue;
          ok = gpus_.use(static_cast<int>(g)) && ok;
          BENCH_CU_TEARDOWN(ok, cuEventDestroy(iteration[g]));
        }
      }
    }
    starts_.clear();
    ends_.clear();
    return ok;
  }

  // The warm-up and the timed iterations of one size; `ms` gets the mean time.
  bool time(uint64_t count, double* ms) {
    for (size_t i = 0; i < starts_.size(); ++i) {
      if (!enqueueIteration(count, i)) return false;
      // A ring iteration is n(2n-1) launches and as many events (10,296 each on 72 GPUs), and a
      // simulator holds a process for each until it has run: let each iteration finish before
      // the next is queued. (Ring iterations cannot overlap anyway: each waits for its
      // successor's previous one.) The other algorithms are queued back to back, as nccl-tests
      // does, so that on a real node the GPUs need not wait for the host between iterations.
      if (o_.algo == Algo::kRing && !synchronize()) return false;
    }
    if (!synchronize()) return false;
    double total = 0;
    for (size_t i = static_cast<size_t>(o_.warmups); i < starts_.size(); ++i) {
      float longest = 0;
      for (size_t g = 0; g < starts_[i].size(); ++g) {
        if (!gpus_.use(static_cast<int>(g))) return false;
        float t = 0;
        BENCH_CU(cuEventElapsedTime(&t, starts_[i][g], ends_[i][g]));
        longest = std::max(longest, t);
      }
      total += longest;
    }
    *ms = total / o_.iters;
    return true;
  }

  // One more all-reduce of `count` elements on known inputs; `wrong` counts the elements, over
  // every GPU, that are not the exact sum.
  bool check(uint64_t count, uint64_t* wrongOut) {
    const uint64_t bytes = count * mcsim_dtype_bytes(o_.dtype);
    // Nothing may still read the buffers (a ring's last steps read the peers') when they change.
    if (!synchronize()) return false;
    std::vector<std::vector<unsigned char>> inputs;
    for (int g = 0; g < gpus_.size(); ++g) {
      inputs.push_back(inputBytes(o_.dtype, count, g));
      if (!gpus_.use(g)) return false;
      BENCH_CU(cuMemcpyHtoDAsync(algo_.input(g), inputs.back().data(), bytes, gpus_[g].stream));
    }
    if (!enqueueIteration(count, 0)) return false;
    std::vector<std::vector<unsigned char>> results(static_cast<size_t>(gpus_.size()), std::vector<unsigned char>(bytes));
    for (int g = 0; g < gpus_.size(); ++g) {
      if (!gpus_.use(g)) return false;
      BENCH_CU(cuMemcpyDtoHAsync(results[static_cast<size_t>(g)].data(), algo_.result(g), bytes, gpus_[g].stream));
    }
    if (!synchronize()) return false;
    const std::vector<unsigned char> expected = expectedBytes(o_.dtype, count, gpus_.size());
    uint64_t wrong = 0;
    for (int g = 0; g < gpus_.size(); ++g) {
      wrong += countMismatches(o_.dtype, expected, results[static_cast<size_t>(g)], g);
    }
    *wrongOut = wrong;
    if (wrong != 0) {
      std::fprintf(stderr,
                   "mcsim_bench_allreduce: check FAILED for %" PRIu64 " bytes: %" PRIu64
                   " wrong elements over %d GPUs (in mcsim, data moves only when MCSIM_TIMING_ONLY is unset)\n",
                   bytes, wrong, gpus_.size());
    }
    return true;
  }

 private:
  // Iteration i: what must come first (outside the timed span), then on each GPU a start event,
  // the algorithm's launches and an end event.
  bool enqueueIteration(uint64_t count, size_t i) {
    queued_ = true;
    if (!algo_.enqueueIterationStart()) return false;
    for (int g = 0; g < gpus_.size(); ++g) {
      if (!gpus_.use(g)) return false;
      BENCH_CU(cuEventRecord(starts_[i][static_cast<size_t>(g)], gpus_[g].stream));
    }
    if (!algo_.enqueue(count)) return false;
    for (int g = 0; g < gpus_.size(); ++g) {
      if (!gpus_.use(g)) return false;
      BENCH_CU(cuEventRecord(ends_[i][static_cast<size_t>(g)], gpus_[g].stream));
    }
    return true;
  }

  bool synchronize() {
    for (int g = 0; g < gpus_.size(); ++g) {
      if (!gpus_.use(g)) return false;
      BENCH_CU(cuStreamSynchronize(gpus_[g].stream));
    }
    queued_ = false;
    return true;
  }

  const Options& o_;
  GpuSet& gpus_;
  AllReduce& algo_;
  std::vector<std::vector<CUevent>> starts_, ends_;  // [iteration][GPU], the warm-up first
  bool queued_ = false;                              // work queued since the last synchronize()
};

std::string sizeText(uint64_t bytes) {
  static const char* const kUnits[] = {"", "K", "M", "G", "T"};
  int u = 0;
  while (u < 4 && bytes % 1024 == 0 && bytes >= 1024) {
    bytes /= 1024;
    ++u;
  }
  return std::to_string(bytes) + kUnits[u];
}

// What runs, on stderr (stdout holds only the table).
void describe(const Options& o, const GpuSet& gpus, const AllReduce& algo) {
  std::string shapes;
  if (o.algo == Algo::kOneshot || o.algo == Algo::kTwoshot) {
    shapes = "one launch per GPU of (blocks x threads)";
    for (uint64_t bytes : o.sizes) {
      const LaunchShape s = algo.shape(bytes / mcsim_dtype_bytes(o.dtype));
      shapes += " " + sizeText(bytes) + ": " + std::to_string(s.blocks) + "x" + std::to_string(s.threads);
    }
  } else {
    const LaunchShape s = algo.shape(0);
    shapes = std::to_string(s.blocks) + " blocks x " + std::to_string(s.threads) + " threads per launch";
    if (o.algo == Algo::kNvls) shapes += ", one launch per GPU between the pipeline's fill and drain (mcsim_copy)";
    if (o.algo == Algo::kRing) shapes += ", 2n-1 launches per GPU";
  }
  std::fprintf(stderr, "# all-reduce %s on %d x %s, %s, %d iterations after %d warm-up; %s\n", algoName(o.algo),
               gpus.size(), gpus.name().c_str(), o.dtypeName.c_str(), o.iters, o.warmups, shapes.c_str());
}

// The barrier words are 32-bit and must reach world * epoch: refuse a run that would wrap them.
bool epochsFit(const Options& o, const AllReduce& algo, int world) {
  uint64_t epochs = 0;
  const uint64_t runsPerSize = static_cast<uint64_t>(o.warmups + o.iters + (o.check ? 1 : 0));
  for (size_t i = 0; i < o.sizes.size(); ++i) epochs += runsPerSize * algo.epochsPerAllReduce();
  if (epochs * static_cast<uint64_t>(world) <= UINT32_MAX) return true;
  std::fprintf(stderr, "mcsim_bench_allreduce: this run needs %" PRIu64
               " barrier epochs, more than 32-bit signal words hold for %d GPUs: use fewer sizes or iterations\n",
               epochs, world);
  return false;
}

int run(const Options& o) {
  GpuSet gpus;
  Buffers buffers;
  AllReduce algo(o.algo, o.dtype, gpus, buffers);
  Benchmark bench(o, gpus, algo);
  uint64_t largest = 0;
  for (uint64_t bytes : o.sizes) largest = std::max(largest, bytes);

  bool ok = gpus.open(o.gpus);
  if (ok && o.algo == Algo::kRing && gpus.size() < 2) {
    std::fprintf(stderr, "mcsim_bench_allreduce: the ring needs 2 GPUs or more\n");
    ok = false;
  }
  if (ok) {
    ok = o.algo == Algo::kRing ? setUpPeer(gpus, largest, &buffers)
                               : setUpMulticast(gpus, largest, o.algo == Algo::kOneshot || o.algo == Algo::kNvls, &buffers);
  }
  ok = ok && gpus.loadKernels(o.loader, kernelsFor(o.algo)) && algo.prepare() &&
       epochsFit(o, algo, gpus.size()) && bench.createEvents();
  bool passed = true;
  if (ok) {
    describe(o, gpus, algo);
    Report report(o, gpus, o.algo == Algo::kOneshot ? Report::Place::kOutOfPlace : Report::Place::kInPlace);
    report.begin();
    for (uint64_t bytes : o.sizes) {
      const uint64_t count = bytes / mcsim_dtype_bytes(o.dtype);
      double ms = 0;
      if (!(ok = algo.restartBarriers() && bench.time(count, &ms))) break;
      uint64_t wrong = 0;
      if (o.check && !(ok = bench.check(count, &wrong))) break;
      report.row(bytes, ms * 1e3, o.check ? static_cast<int64_t>(wrong) : -1);
      passed = passed && wrong == 0;
    }
    if (ok) report.end();
    if (ok && o.check && passed) std::fprintf(stderr, "# check: every result exact\n");
  }
  if (!ok && bench.busy()) {
    // Tearing down would wait for the GPUs (destroying a context does), and some may wait for
    // ever in a barrier that a failed launch left short of a member.
    std::fprintf(stderr, "mcsim_bench_allreduce: leaving without teardown: work may still be pending on the GPUs\n");
    return 1;
  }
  // Teardown runs whatever happened before, and its own failures count.
  ok = bench.destroyEvents() && ok;
  ok = algo.release() && ok;
  ok = tearDown(gpus, &buffers) && ok;
  ok = gpus.close() && ok;
  return ok && passed ? 0 : 1;
}

}  // namespace

}  // namespace mcsim::bench

int main(int argc, char** argv) {
  using namespace mcsim::bench;
  // One thread drives every GPU here, where the published runs this bench is calibrated against
  // (docs/multimem.md) had a process per GPU, whose host work ran beside the others' and behind
  // the GPUs' back-to-back iterations. Serialised on one thread, the host's cost of eight GPUs'
  // launches and records (mcsim's host clock, docs/model.md "What the host costs") would bound
  // the small sizes instead. So the host's clock is off here unless the environment sets it.
  setenv("MCSIM_HOST_COST_PERCENT", "0", 0);
  Options o;
  std::string error;
  bool help = false;
  if (!parseOptions(argc, argv, &o, &error, &help)) {
    std::fprintf(stderr, "mcsim_bench_allreduce: %s (--help lists the options)\n", error.c_str());
    return 2;
  }
  if (help) {
    std::printf("%s", usage());
    return 0;
  }
  return run(o);
}
