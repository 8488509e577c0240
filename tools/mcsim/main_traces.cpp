// `mcsim` with the trace commands alone, for machines that have a real GPU and none of mcsim's
// simulator dependencies (SystemC, Boost): built with -DMCSIM_TRACES_REAL=ON beside the recording
// libcuda.so.1 (docs/traces.md, "Validation on a real GPU").
#include <CLI/CLI.hpp>

#include <vector>

#include "commands.h"
#include "tool_settings.h"

int main(int argc, char** argv) {
  using namespace mcsim::tools;
  CLI::App app{"mcsim (trace commands only): replay, diff and minimize driver-call traces"};
  app.name("mcsim");
  app.require_subcommand(1);
  const std::vector<Command> commands = {addReplayCommand(app), addDiffCommand(app), addMinimizeCommand(app)};
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? kExitOk : kExitBadInput;
  }
  for (const Command& c : commands) {
    if (!c.app->parsed()) continue;
    toolSettings();  // the environment is checked as the command starts
    return c.action();
  }
  return kExitBadInput;
}
