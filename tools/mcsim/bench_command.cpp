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
  std::string algo, sizes, dtype, loader;
  int iters = 0;
  bool check = false;
};

int allReduce(const AllReduceOptions& o) {
  // Timing-only runs move no data, so there would be nothing to check: refuse before starting.
  if (o.driver.timingOnly && o.check) {
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
  return execWithDriver("mcsim bench allreduce", o.driver, command);
}

}  // namespace

Command addBenchCommand(CLI::App& parent) {
  CLI::App* cmd = parent.add_subcommand("bench", "Run a benchmark program on a simulated node");
  cmd->require_subcommand(1);

  auto o = std::make_shared<AllReduceOptions>();
  CLI::App* ar = cmd->add_subcommand(
      "allreduce", "All-reduce bandwidth, nccl-tests style: bytes time_us algbw_GBps busbw_GBps (docs/benchmarks.md)");
  ar->add_option("--topology", o->driver.topology, "Built-in preset name or preset file (MCSIM_TOPOLOGY)");
  ar->add_flag("--timing-only", o->driver.timingOnly, "Time everything but move no data (MCSIM_TIMING_ONLY=1)");
  ar->add_option("--gpus", o->gpus, "GPUs taking part (default: every GPU of the node)")->check(wholeNumberAtLeast(1));
  ar->add_option("--algo", o->algo, "nvls (default), oneshot, twoshot or ring")
      ->check(CLI::IsMember({"nvls", "oneshot", "twoshot", "ring"}));
  ar->add_option("--sizes", o->sizes, "Bytes per GPU, comma separated, binary units: 64K,1M,1G (default 1M)");
  ar->add_option("--dtype", o->dtype, "f32 (default), f16, bf16, f64, u32, s32 or u64");
  ar->add_option("--iters", o->iters, "Timed iterations after one warm-up (default 5)")->check(wholeNumberAtLeast(1));
  ar->add_flag("--check", o->check, "Verify every result against a host-computed reference");
  ar->add_option("--loader", o->loader, "Load the kernels per context (module, default) or once (library)")
      ->check(CLI::IsMember({"module", "library"}));
  return {cmd, [o] { return allReduce(*o); }};
}

}  // namespace mcsim::tools
