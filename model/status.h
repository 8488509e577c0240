// Outcomes of operations below the driver. The driver maps these to CUresult in one place
// (driver/status_map.cpp); nothing under driver/ knows about CUresult.
#pragma once

#include <string>
#include <utility>

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

// Why the calling thread's current driver call failed, for the call log (MCSIM_DEBUG;
// docs/user-guide.md, "Why a call failed"). A check that refuses a call says why with
// MCSIM_REFUSE(result, text...); the log prints the reason beside the call's result. The first
// reason of a call stands (the innermost check, which refused first, says most), until the log
// clears it as the next call begins. Reasons are built only while the log is on.
extern bool gExplainFailures;  // set once, before the program's first call (traces/lib/call_log.cpp)
void explainFailure(std::string why);
std::string takeFailureReason();
void clearFailureReason();

// A check made only to look (is there a current context?), whose failure the call goes on
// without, leaves no reason behind for the call's real refusal to be mistaken for: it is made
// inside a QuietChecks.
class QuietChecks {
 public:
  QuietChecks();
  ~QuietChecks();
  QuietChecks(const QuietChecks&) = delete;
  QuietChecks& operator=(const QuietChecks&) = delete;
  static bool active();
};

template <typename R, typename Why>
R refuse(R result, Why&& why) {
  if (gExplainFailures && !QuietChecks::active()) explainFailure(why());
  return result;
}

}  // namespace mcsim

// `return MCSIM_REFUSE(Status::kInvalidValue, "size ", std::to_string(size), " is not a multiple of ...");`
// The text's pieces are concatenated only when the log is on.
#define MCSIM_REFUSE(result, ...) ::mcsim::refuse((result), [&] { return ::mcsim::concatReason(__VA_ARGS__); })

namespace mcsim {
inline std::string concatReason() { return {}; }
template <typename First, typename... Rest>
std::string concatReason(First&& first, Rest&&... rest) {
  std::string out(std::forward<First>(first));
  out += concatReason(std::forward<Rest>(rest)...);
  return out;
}
}  // namespace mcsim
