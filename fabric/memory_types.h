// The vocabulary of memory shared by the node and the fabric manager: where memory lives, which
// shareable handle types it allows, and access rights.
#pragma once

#include <cstdint>

#include "model/address_space.h"

namespace mcsim::fabric {

using model::Access;

// How a stream memory operation's wait compares its word with its value (cuStreamWaitValue32/64):
// GEQ is cyclic, (int32_t)(word - value) >= 0 (int64_t for 64-bit words); AND waits for
// (word & value) != 0, NOR for ~(word | value) != 0.
enum class WaitCompare : uint32_t { kGeq, kEq, kAnd, kNor };

// Where physical memory lives, numbered as the driver's CUmemLocationType.
enum class LocationKind : int { kDevice = 1, kHost = 2, kHostNuma = 3, kHostNumaCurrent = 4 };

struct Location {
  LocationKind kind = LocationKind::kDevice;
  int id = 0;
};

// Shareable handle types, as bits numbered like CUmemAllocationHandleType.
enum HandleTypeBits : uint32_t {
  kHandlePosixFd = 0x1,
  kHandleWin32 = 0x2,
  kHandleWin32Kmt = 0x4,
  kHandleFabric = 0x8,
};

}  // namespace mcsim::fabric
