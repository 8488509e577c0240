#include "preset_errors.h"

#include <cstdio>

namespace mcsim::tools {

void reportPresetError(const char* command, const fabric::InputError& e) {
  if (e.line() > 0) {
    std::fprintf(stderr, "%s: %s\n", command, e.what());
  } else {
    std::fprintf(stderr, "%s: %s\n", command, e.problem().c_str());
  }
}

}  // namespace mcsim::tools
