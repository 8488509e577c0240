// mcsim-node: the process of a shared node. `mcsim node start` runs it (docs/multiprocess.md);
// it is not meant to be started by hand, but can be, in the foreground, for debugging.
#include <CLI/CLI.hpp>

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "driver/cuda_names.h"
#include "fabric/json_source.h"
#include "fabric/node_server.h"
#include "fabric/preset.h"
#include "model/timeline.h"
#include "model/status.h"
#include "settings/settings.h"

int main(int argc, char** argv) {
  mcsim::fabric::NodeServerOptions o;
  o.topology = mcsim::fabric::defaultPresetName();
  std::string faults;
  int readyFd = -1;
  CLI::App app{"mcsim-node: the process of a shared mcsim node (use `mcsim node start`)"};
  app.add_option("--name", o.name, "Node name")->required();
  app.add_option("--topology", o.topology, "Topology preset: a built-in name or a JSON file");
  app.add_option("--seed", o.seed, "Seed of the fault plan's random draws");
  app.add_option("--faults", faults, "Fault plan file (docs/faults.md)");
  app.add_option("--segment", o.segmentBytes, "Size of the shared segment in bytes");
  app.add_option("--ready-fd", readyFd, "Descriptor to report readiness on");
  app.add_option("--exit-with", o.exitWith, "Stop when this process exits");
  app.add_option("--processes", o.processes, "Processes the run will attach (no deadlock is called before they have)");
  std::string follow;
  app.add_option("--follow", follow,
                 "Replay: the recorded admission order to follow, one 'NUMBER FINISHED_BEFORE' per line (mcsim replay writes it)");
  app.add_option("--follow-patience", o.followPatienceSeconds,
                 "Replay: seconds a request may wait for its turn with nothing moving before the order is given up");
  CLI11_PARSE(app, argc, argv);
  // Refusals carry their reason back to the client, whose call log prints it (MCSIM_DEBUG).
  mcsim::gExplainFailures = true;
  // The node's own settings: its hang policy, whether data moves, its timeline (the devices').
  const mcsim::settings::Settings settings = mcsim::settings::fromEnvironment();
  o.settings = mcsim::fabric::NodeSettings::from(settings);
  mcsim::model::Timeline::start(settings.timeline, settings.timelineSummary);

  auto fail = [&](const std::string& problem) {
    if (readyFd >= 0) {
      const std::string line = "error: " + problem + "\n";
      [[maybe_unused]] ssize_t n = write(readyFd, line.data(), line.size());
    }
    std::fprintf(stderr, "mcsim-node: %s\n", problem.c_str());
    return 1;
  };
  if (!faults.empty()) {
    try {
      o.faultsText = mcsim::fabric::readFaultPlanFile(faults);
      o.faults = mcsim::fabric::parseFaultPlan(o.faultsText, faults);
      mcsim::driver::resolveFaultPlanNames(&o.faults);
      mcsim::fabric::checkFaultPlanFor(o.faults, mcsim::fabric::loadPreset(o.topology));
    } catch (const mcsim::fabric::InputError& e) {
      return fail(std::string("cannot load the fault plan: ") + e.what());
    }
  }
  if (!follow.empty()) {
    std::ifstream in(follow);
    if (!in) return fail("cannot read the admission order " + follow);
    std::string line;
    int n = 0;
    uint64_t last = 0;
    uint64_t lastRuns = 0;
    while (std::getline(in, line)) {
      ++n;
      std::istringstream fields(line);
      mcsim::fabric::Admission a;
      std::string extra;
      if (!(fields >> a.number >> a.finishedBefore >> a.simRuns) || (fields >> extra) || a.number <= last ||
          a.finishedBefore >= a.number || a.simRuns < lastRuns) {
        return fail(follow + ":" + std::to_string(n) +
                    ": expected 'NUMBER FINISHED_BEFORE SIM_RUNS', numbers increasing, fewer finished than the "
                    "number, simulation runs never decreasing");
      }
      last = a.number;
      lastRuns = a.simRuns;
      o.follow.push_back(a);
    }
  }
  return mcsim::fabric::runNodeServer(o, readyFd);
}
