// Lets GoogleTest print a Status by name ("already mapped"), not as a number.
#pragma once

#include <ostream>

#include "model/status.h"

namespace mcsim {
inline void PrintTo(Status s, std::ostream* os) { *os << statusName(s); }
}  // namespace mcsim
