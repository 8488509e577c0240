// `mcsim`: the command line of the simulator. Parsing is CLI11's; the subcommands live in one
// file each.
#include <CLI/CLI.hpp>

#include <vector>

#include "commands.h"
#include "tool_settings.h"

int main(int argc, char** argv) {
  using namespace mcsim::tools;
  CLI::App app{"mcsim: a deterministic simulator of multi-GPU nodes behind a drop-in libcuda.so.1"};
  app.name("mcsim");
  app.require_subcommand(1);

  const std::vector<Command> commands = {
      addRunCommand(app),
      addPresetsCommand(app),
      addTopoCommand(app),
      addCampaignCommand(app),
      addReplayCommand(app),
      addDiffCommand(app),
      addMinimizeCommand(app),
      addBenchCommand(app),
      addNodeCommand(app),
      addSettingsCommand(app),
  };

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // CLI11 prints the message (or the help); its own codes are not the convention for usage
    // errors, which is 2.
    const int code = app.exit(e);
    return code == 0 ? kExitOk : kExitBadInput;
  }
  for (const Command& c : commands) {
    if (!c.app->parsed()) continue;
    // The environment is checked as the command starts; `mcsim settings` reports on it itself.
    if (c.app->get_name() != "settings") toolSettings();
    return c.action();
  }
  return kExitBadInput;  // unreachable: require_subcommand(1) guarantees one was parsed
}
