#include "model/status.h"

#include <algorithm>
#include <cstring>

namespace mcsim {

const char* statusName(Status s) {
  switch (s) {
    case Status::kOk: return "ok";
    case Status::kInvalidValue: return "invalid value";
    case Status::kInvalidDevice: return "invalid device";
    case Status::kInvalidHandle: return "invalid handle";
    case Status::kOutOfMemory: return "out of memory";
    case Status::kNotSupported: return "not supported";
    case Status::kNotPermitted: return "not permitted";
    case Status::kNotFound: return "not found";
    case Status::kAlreadyMapped: return "already mapped";
    case Status::kNotMapped: return "not mapped";
    case Status::kIllegalAddress: return "illegal address";
    case Status::kIllegalState: return "illegal state";
    case Status::kSystemNotReady: return "system not ready";
    case Status::kNotShareable: return "not a shareable handle";
    case Status::kHang: return "deadlock or hang";
    case Status::kLinkDown: return "link down";
    case Status::kMisaligned: return "misaligned address";
    case Status::kNodeLost: return "node lost";
    case Status::kOwnProcess: return "opened in its own process";
  }
  return "unknown status";
}

bool gExplainFailures = false;

namespace {
// A plain buffer, not a std::string: the driver is called on threads whose thread-local objects
// were already destroyed (the CUDA runtime's exit handlers, NCCL's proxy threads as they end), and
// a trivially destructible thread-local stays usable for the thread's whole life.
constexpr size_t kReasonCapacity = 480;
thread_local char tReason[kReasonCapacity];
thread_local size_t tReasonLength = 0;
thread_local int tQuietDepth = 0;
}  // namespace

QuietChecks::QuietChecks() { ++tQuietDepth; }
QuietChecks::~QuietChecks() { --tQuietDepth; }
bool QuietChecks::active() { return tQuietDepth != 0; }

void explainFailure(std::string why) {
  if (tReasonLength != 0 || why.empty()) return;
  tReasonLength = std::min(why.size(), kReasonCapacity);
  std::memcpy(tReason, why.data(), tReasonLength);
}

std::string takeFailureReason() {
  std::string out(tReason, tReasonLength);
  tReasonLength = 0;
  return out;
}

void clearFailureReason() { tReasonLength = 0; }

}  // namespace mcsim
