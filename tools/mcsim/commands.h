// The subcommands of the `mcsim` command line. Each one adds itself to the parent app and hands
// back its CLI11 node with what to do when it is the one the user chose. The action's value is
// the exit status (run does not return when it manages to start the program).
#pragma once

#include <functional>

namespace CLI {
class App;
}

namespace mcsim::tools {

struct Command {
  CLI::App* app;
  std::function<int()> action;
};

// Exit statuses shared by the subcommands.
constexpr int kExitOk = 0;
constexpr int kExitFailure = 1;
constexpr int kExitBadInput = 2;       // a usage error, or a preset the loader refuses
constexpr int kExitCannotStart = 127;  // as a shell reports a program it cannot start

Command addRunCommand(CLI::App& parent);
Command addPresetsCommand(CLI::App& parent);
Command addTopoCommand(CLI::App& parent);
Command addCampaignCommand(CLI::App& parent);
Command addReplayCommand(CLI::App& parent);
Command addDiffCommand(CLI::App& parent);
Command addMinimizeCommand(CLI::App& parent);
Command addBenchCommand(CLI::App& parent);
Command addNodeCommand(CLI::App& parent);
Command addSettingsCommand(CLI::App& parent);
Command addSmiCommand(CLI::App& parent);

}  // namespace mcsim::tools
