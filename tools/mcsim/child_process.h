// Running a program as a child process with a given environment, its output (stdout and stderr
// together) captured, and a wall-clock limit after which it is killed.
#pragma once

#include <string>
#include <vector>

namespace mcsim::tools {

struct ChildResult {
  bool started = false;   // false: the program could not be started (see `output`)
  bool timedOut = false;  // killed (SIGKILL) after the limit
  int exitStatus = -1;    // when it exited
  int signal = 0;         // when a signal ended it
  std::string output;     // stdout and stderr, interleaved as written
  double seconds = 0;
};

// Starts argv[0] (a path, or a name looked up on PATH) with exactly `env` as its environment, in a process group of its own
// (so that a timeout kills whatever it started too). Thread-safe.
ChildResult runChild(const std::vector<std::string>& argv, const std::vector<std::string>& env, double timeoutSeconds);

}  // namespace mcsim::tools
