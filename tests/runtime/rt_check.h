// What the runtime-API test programs share: a check that names the failing call and its error,
// and a table of named cases selected from the command line. The programs run unchanged on mcsim
// and on a real GPU; each prints one line per case ("ok NAME" or "FAIL NAME: why") and exits 1
// when any case failed, so that the two runs can be compared line by line.
#pragma once

#include <cuda_runtime.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace rtcheck {

// Whether the driver under the runtime is mcsim's (it exports mcsim_last_error), once the
// runtime's first call has loaded it. For the few checks that hold on mcsim only, such as
// timing claims a real GPU's launch overhead hides.
inline bool onMcsim() {
  void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  return driver != nullptr && dlsym(driver, "mcsim_last_error") != nullptr;
}

struct Failure {
  std::string what;
};

#define RT_OK(call)                                                                                 \
  do {                                                                                              \
    const cudaError_t e_ = (call);                                                                  \
    if (e_ != cudaSuccess) {                                                                        \
      throw ::rtcheck::Failure{std::string(#call) + " -> " + cudaGetErrorName(e_) + " (" +         \
                               cudaGetErrorString(e_) + ")"};                                       \
    }                                                                                               \
  } while (0)

#define RT_EXPECT(cond, ...)                                                                        \
  do {                                                                                              \
    if (!(cond)) {                                                                                  \
      char b_[512];                                                                                 \
      std::snprintf(b_, sizeof b_, __VA_ARGS__);                                                    \
      throw ::rtcheck::Failure{std::string(#cond) + ": " + b_};                                    \
    }                                                                                               \
  } while (0)

struct Case {
  const char* name;
  void (*run)();
  bool onlyWhenNamed = false;  // long measurements: left out of a run that names no case
};

// Runs the cases named on the command line (all but the onlyWhenNamed ones when none is named), in
// table order.
inline int runCases(const Case* cases, size_t n, int argc, char** argv) {
  int failed = 0, ran = 0;
  for (size_t i = 0; i < n; ++i) {
    bool selected = argc <= 1 && !cases[i].onlyWhenNamed;
    for (int a = 1; a < argc; ++a) selected = selected || std::strcmp(argv[a], cases[i].name) == 0;
    if (!selected) continue;
    ++ran;
    try {
      cases[i].run();
      std::printf("ok %s\n", cases[i].name);
    } catch (const Failure& f) {
      std::printf("FAIL %s: %s\n", cases[i].name, f.what.c_str());
      ++failed;
    }
    std::fflush(stdout);
  }
  if (ran == 0) {
    std::printf("no case named so\n");
    return 2;
  }
  return failed == 0 ? 0 : 1;
}

}  // namespace rtcheck
