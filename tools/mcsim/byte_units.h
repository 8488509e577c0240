// Sizes for people: 2 MiB, 79.6 GiB, 1 TiB.
#pragma once

#include <cstdint>
#include <string>

namespace mcsim::tools {

// Binary units; whole numbers print without decimals, others with one.
std::string formatBytes(uint64_t bytes);

}  // namespace mcsim::tools
