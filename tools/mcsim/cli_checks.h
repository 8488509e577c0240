// Checks of option values that say what is wrong in words (CLI11's own PositiveNumber prints the
// largest double in full for a 0).
#pragma once

#include <CLI/CLI.hpp>

#include <cerrno>
#include <cstdlib>
#include <string>

namespace mcsim::tools {

// A whole number no smaller than `minimum`: "must be a whole number of at least 1, not 0".
inline CLI::Validator wholeNumberAtLeast(long long minimum) {
  const std::string what = "a whole number of at least " + std::to_string(minimum);
  return CLI::Validator(
      [minimum, what](std::string& value) -> std::string {
        char* end = nullptr;
        errno = 0;
        const long long v = std::strtoll(value.c_str(), &end, 10);
        if (value.empty() || *end != '\0' || errno == ERANGE || v < minimum) return "must be " + what + ", not '" + value + "'";
        return "";
      },
      "INT>=" + std::to_string(minimum));
}

// A number of seconds above zero: "must be a number of seconds above 0, not '-1'".
inline CLI::Validator secondsAboveZero() {
  return CLI::Validator(
      [](std::string& value) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(value.c_str(), &end);
        if (value.empty() || *end != '\0' || !(v > 0) || v > 1e9) return "must be a number of seconds above 0, not '" + value + "'";
        return "";
      },
      "SECONDS>0");
}

}  // namespace mcsim::tools
