#include "byte_units.h"

#include <fmt/format.h>

#include <iterator>

namespace mcsim::tools {

std::string formatBytes(uint64_t bytes) {
  static const char* const kUnits[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int unit = 0;
  uint64_t scale = 1;
  while (unit + 1 < static_cast<int>(std::size(kUnits)) && bytes >= scale * 1024) {
    scale *= 1024;
    ++unit;
  }
  if (bytes % scale == 0) return fmt::format("{} {}", bytes / scale, kUnits[unit]);
  return fmt::format("{:.1f} {}", static_cast<double>(bytes) / static_cast<double>(scale), kUnits[unit]);
}

}  // namespace mcsim::tools
