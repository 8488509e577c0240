// How many descriptors the process has open, for the "nothing leaked" checks of the campaign
// workloads (harness.cpp) and of the fault test suite (tests/faults/fault_test.h).
#pragma once

#include <dirent.h>
#include <unistd.h>

#include <cstring>
#include <string>

namespace mcsim::workload {

// Open descriptors other than pipes. The sanitizer runtimes open and close pipes on a thread as
// it starts (mcsim's engine thread may be starting while a baseline is taken after cuInit), and
// mcsim itself makes none, so pipes would only add noise to a leak check.
inline int openDescriptorCount() {
  int n = 0;
  if (DIR* d = opendir("/proc/self/fd")) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] == '.') continue;
      char target[64] = {};
      const std::string link = std::string("/proc/self/fd/") + e->d_name;
      const ssize_t len = readlink(link.c_str(), target, sizeof target - 1);
      n += !(len > 5 && std::strncmp(target, "pipe:", 5) == 0);
    }
    closedir(d);
  }
  return n;
}

}  // namespace mcsim::workload
