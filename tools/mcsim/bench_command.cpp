// `mcsim bench allreduce`: runs the all-reduce benchmark (bin/mcsim_bench_allreduce, a plain
// driver-API program: tools/bench) against mcsim's driver on a chosen node, as `mcsim run` would
// run it. The benchmark's own options pass through; the node and timing-only mode are mcsim's.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cli_checks.h"
#include "commands.h"
#include "driver_library.h"
#include "exec_with_driver.h"

namespace mcsim::tools {

namespace {

constexpr const char* kAllReduceProgram = "mcsim_bench_allreduce";

struct AllReduceOptions {
  DriverSettings driver;
  int gpus = 0;
  std::string algo, sizes, dtype, loader, format, op;
  std::string minBytes, maxBytes, stepBytes;  // nccl-tests' -b, -e, -i
  int iters = 0, warmups = -1, stepFactor = 0, checkValue = -1;
  bool check = false;
};

int allReduce(const AllReduceOptions& o) {
  // Timing-only runs move no data, so there would be nothing to check: refuse before starting.
  if (o.driver.timingOnly && (o.check || o.checkValue == 1)) {
    std::fprintf(stderr,
                 "mcsim bench allreduce: --check needs the data to move, and --timing-only moves none "
                 "(MCSIM_TIMING_ONLY=1): drop one of them\n");
    return kExitBadInput;
  }
  const CompanionProgram bench = findCompanionProgram(kAllReduceProgram);
  if (bench.path.empty()) {
    std::fprintf(stderr, "mcsim bench allreduce: %s (it is built with the kernel library, kernels/)\n",
                 bench.problem.c_str());
    return kExitCannotStart;
  }
  // Only what was given: the benchmark's defaults are its own (every GPU, nvls, 1M, f32, 5).
  std::vector<std::string> command{bench.path};
  if (o.gpus > 0) command.insert(command.end(), {"--gpus", std::to_string(o.gpus)});
  if (!o.algo.empty()) command.insert(command.end(), {"--algo", o.algo});
  if (!o.sizes.empty()) command.insert(command.end(), {"--sizes", o.sizes});
  if (!o.dtype.empty()) command.insert(command.end(), {"--dtype", o.dtype});
  if (o.iters > 0) command.insert(command.end(), {"--iters", std::to_string(o.iters)});
  if (!o.loader.empty()) command.insert(command.end(), {"--loader", o.loader});
  if (o.check) command.emplace_back("--check");
  if (o.checkValue >= 0) command.insert(command.end(), {"-c", std::to_string(o.checkValue)});
  if (o.warmups >= 0) command.insert(command.end(), {"-w", std::to_string(o.warmups)});
  if (!o.minBytes.empty()) command.insert(command.end(), {"-b", o.minBytes});
  if (!o.maxBytes.empty()) command.insert(command.end(), {"-e", o.maxBytes});
  if (!o.stepBytes.empty()) command.insert(command.end(), {"-i", o.stepBytes});
  if (o.stepFactor > 0) command.insert(command.end(), {"-f", std::to_string(o.stepFactor)});
  if (!o.op.empty()) command.insert(command.end(), {"-o", o.op});
  if (!o.format.empty()) command.insert(command.end(), {"--format", o.format});
  return execWithDriver("mcsim bench allreduce", o.driver, command);
}

}  // namespace

Command addBenchCommand(CLI::App& parent) {
  CLI::App* cmd = parent.add_subcommand("bench", "Run a benchmark program on a simulated node");
  cmd->require_subcommand(1);

  auto o = std::make_shared<AllReduceOptions>();
  CLI::App* ar = cmd->add_subcommand(
      "allreduce", "All-reduce bandwidth, as nccl-tests' all_reduce_perf measures and prints it (docs/benchmarks.md)");
  ar->add_option("--topology", o->driver.topology, "Built-in preset name or preset file (MCSIM_TOPOLOGY)");
  ar->add_flag("--timing-only", o->driver.timingOnly, "Time everything but move no data (MCSIM_TIMING_ONLY=1)");
  ar->add_option("-g,--gpus", o->gpus, "GPUs taking part (default: every GPU of the node)")->check(wholeNumberAtLeast(1));
  ar->add_option("--algo", o->algo, "nvls (default), oneshot, twoshot or ring")
      ->check(CLI::IsMember({"nvls", "oneshot", "twoshot", "ring"}));
  ar->add_option("--sizes", o->sizes, "Bytes per GPU, comma separated, binary units: 64K,1M,1G (default 1M)");
  ar->add_option("-b,--minbytes", o->minBytes, "As nccl-tests: the smallest size (binary units: 8, 64K, 1G)");
  ar->add_option("-e,--maxbytes", o->maxBytes, "As nccl-tests: the largest size (default: -b)");
  ar->add_option("-f,--stepfactor", o->stepFactor, "As nccl-tests: each size this many times the last")
      ->check(wholeNumberAtLeast(1));
  ar->add_option("-i,--stepbytes", o->stepBytes, "As nccl-tests: each size this many bytes more than the last (default 1M)");
  ar->add_option("-d,--dtype,--datatype", o->dtype,
                 "f32 (default), f16, bf16, f64, u32, s32 or u64; or nccl-tests' float, half, bfloat16, double, "
                 "uint32, int32, uint64");
  ar->add_option("-o,--op", o->op, "The reduction: sum (the benchmark's kernels reduce with sum only)");
  ar->add_option("-n,--iters", o->iters, "Timed iterations (default 5)")->check(wholeNumberAtLeast(1));
  ar->add_option("-w,--warmup_iters", o->warmups, "Untimed iterations before them (default 1)")
      ->check(wholeNumberAtLeast(0));
  ar->add_flag("--check", o->check, "Verify every result against a host-computed reference (#wrong)");
  ar->add_option("-c", o->checkValue, "As nccl-tests: 1 verifies every result (as --check), 0 does not")
      ->check(CLI::IsMember({0, 1}));
  ar->add_option("--loader", o->loader, "Load the kernels per context (module, default) or once (library)")
      ->check(CLI::IsMember({"module", "library"}));
  ar->add_option("--format", o->format,
                 "nccl-tests (default): nccl-tests' table, to diff with all_reduce_perf; plain: `bytes time_us "
                 "algbw_GBps busbw_GBps`")
      ->check(CLI::IsMember({"nccl-tests", "plain"}));
  return {cmd, [o] { return allReduce(*o); }};
}

}  // namespace mcsim::tools
