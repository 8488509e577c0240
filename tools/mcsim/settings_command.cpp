// `mcsim settings`: every environment variable mcsim reads (settings/settings.def), as the
// Markdown table README.md carries; with --check, what the current environment sets and what of it
// is refused.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "settings/settings.h"

extern char** environ;

namespace mcsim::tools {

namespace {

// The settings this environment gives, each with the value taken; then the warnings a program
// started here would print. Exit 1 when there is any.
int checkEnvironment() {
  std::vector<std::string> warnings;
  const settings::Settings s = settings::parse(environ, &warnings);
  for (const auto& [name, value] : s.given) std::printf("%s=%s\n", name.c_str(), value.c_str());
  for (const std::string& w : warnings) std::printf("mcsim: %s\n", w.c_str());
  return warnings.empty() ? kExitOk : kExitFailure;
}

}  // namespace

Command addSettingsCommand(CLI::App& parent) {
  CLI::App* cmd = parent.add_subcommand("settings", "The environment variables mcsim reads (README.md's table)");
  auto check = std::make_shared<bool>(false);
  cmd->add_flag("--check", *check, "Print the settings this environment gives and what it gets wrong (exit 1 if anything)");
  return {cmd, [check] {
            if (*check) return checkEnvironment();
            std::fputs(settings::markdownTable().c_str(), stdout);
            return kExitOk;
          }};
}

}  // namespace mcsim::tools
