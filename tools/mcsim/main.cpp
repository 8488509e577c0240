// `mcsim`: the command line of the simulator. Parsing is CLI11's; the subcommands live in one
// file each.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <string>
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
      addSmiCommand(app),
  };

  std::string names;
  for (const Command& c : commands) names += (names.empty() ? "" : ", ") + c.app->get_name();
  // `mcsim help [command]`, as git and go have it.
  if (argc >= 2 && std::string(argv[1]) == "help") {
    if (argc == 2) {
      std::printf("%s", app.help().c_str());
      return kExitOk;
    }
    for (const Command& c : commands) {
      if (c.app->get_name() == argv[2]) {
        std::printf("%s", c.app->help().c_str());
        return kExitOk;
      }
    }
    std::fprintf(stderr, "mcsim help: there is no command '%s' (the commands: %s)\n", argv[2], names.c_str());
    return kExitBadInput;
  }
  // CLI11 says only "A subcommand is required" for a misspelt or missing command.
  if (argc < 2) {
    std::fprintf(stderr, "mcsim: say which command to run: %s (mcsim help COMMAND describes one)\n", names.c_str());
    return kExitBadInput;
  }
  bool known = false;
  for (const Command& c : commands) known = known || c.app->get_name() == argv[1];
  if (argv[1][0] != '-' && !known) {
    std::fprintf(stderr, "mcsim: there is no command '%s' (the commands: %s; mcsim help COMMAND describes one)\n",
                 argv[1], names.c_str());
    return kExitBadInput;
  }

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
