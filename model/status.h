// Outcomes of operations below the driver. The driver maps these to CUresult in one place
// (driver/status_map.cpp); nothing under driver/ knows about CUresult.
#pragma once

namespace mcsim {

enum class Status {
  kOk,
  kInvalidValue,      // an argument is out of range, misaligned, or names nothing
  kInvalidDevice,     // a device ordinal or location that the node does not have
  kInvalidHandle,     // an object handle that is unknown or already destroyed
  kOutOfMemory,       // device memory, host memory, or a modelled resource ran out
  kNotSupported,      // the preset's hardware cannot do this
  kNotPermitted,      // the operation is refused by policy (e.g. no IMEX channel)
  kNotFound,          // a lookup found nothing
  kAlreadyMapped,     // a VA range already holds a mapping
  kNotMapped,         // a VA range holds no mapping
  kIllegalAddress,    // an access touched memory that is not mapped or not accessible
  kIllegalState,      // the system configuration forbids the operation now
  kSystemNotReady,    // system software (the fabric manager) is not ready
  kNotShareable,      // a descriptor or handle that is no shareable handle of this node
  kHang,              // a blocked call was given up: it waited for what can never happen
  kLinkDown,          // the NVLink path the operation needs is down
  kMisaligned,        // a kernel's access is not aligned to its element size
  kNodeLost,          // the shared node this process attached to is gone
  kOwnProcess,        // an IPC handle opened in the process that made it
};

const char* statusName(Status s);

}  // namespace mcsim
