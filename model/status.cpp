#include "model/status.h"

#include "model/thread_owned.h"

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
// The calling thread's reason, kept where the driver can still reach it as the thread ends and
// the process exits (model/thread_owned.h): the CUDA runtime's exit handlers fail calls there.
struct ReasonTag;
std::string& reason() { return threadOwned<std::string, ReasonTag>(); }
thread_local int tQuietDepth = 0;
}  // namespace

QuietChecks::QuietChecks() { ++tQuietDepth; }
QuietChecks::~QuietChecks() { --tQuietDepth; }
bool QuietChecks::active() { return tQuietDepth != 0; }

void explainFailure(std::string why) {
  std::string& r = reason();
  if (r.empty()) r = std::move(why);
}

std::string takeFailureReason() {
  std::string out;
  out.swap(reason());
  return out;
}

void clearFailureReason() { reason().clear(); }

}  // namespace mcsim
