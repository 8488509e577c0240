// The driver call log (MCSIM_DEBUG; docs/user-guide.md, "Why a call failed"): with `WARN`, one
// line on stderr per failing call, with its arguments, its result and the reason the check that
// refused it gave (model/status.h, MCSIM_REFUSE); with `INFO`, a line per call. MCSIM_DEBUG_SUBSYS
// chooses the calls by subsystem, as NCCL_DEBUG_SUBSYS does for NCCL's log.
//
// Every exported wrapper (trace_wrappers.inc) tests gLogging beside gRecording, and keeps a
// CallLog across the call when it is set.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <string>

#include "settings/settings.h"

namespace mcsim::trace {

extern bool gLogging;

// Reads MCSIM_DEBUG and MCSIM_DEBUG_SUBSYS, before the program's first call (startRecorder).
void startCallLog(const settings::Settings& settings);

class CallLog {
 public:
  CallLog(int call, const uint64_t* slots);
  ~CallLog();
  CUresult finish(CUresult r);
  CallLog(const CallLog&) = delete;
  CallLog& operator=(const CallLog&) = delete;

 private:
  int call_;
  const uint64_t* slots_;
  bool outermost_;  // a call the driver makes of its own entry points inside another is not logged
};

// The subsystem of an entry point, by its API name ("cuMulticastBindMem" -> "MULTICAST").
const char* subsystemOf(const std::string& base);
// Whether MCSIM_DEBUG_SUBSYS=`spec` selects `subsystem`; false with a message for a bad spec.
bool subsystemSelected(const std::string& spec, const std::string& subsystem);

}  // namespace mcsim::trace
