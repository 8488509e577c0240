// The recording half of the trace layer, shared by mcsim's libcuda.so.1 and the recording
// libcuda.so.1 for real drivers. Every exported wrapper (trace_wrappers.inc) tests gRecording,
// a flag set once before main from MCSIM_RECORD, and otherwise forwards at once; when it is set,
// a CallScope around the forwarded call writes one JSON Lines record (docs/traces.md).
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "settings/settings.h"
#include "traces/lib/codec.h"

namespace mcsim::trace {

extern bool gRecording;

// A node request's place in a shared node's admission order (fabric/admission.h).
struct NodeAdmission {
  uint64_t number = 0;
  uint64_t finishedBefore = 0;
  uint64_t simRuns = 0;  // runs of the node's simulation before it
};

// What differs between the two libraries that host the wrappers.
struct Target {
  const char* name;                 // "mcsim" or "real": the trace header's target
  uint64_t (*simNowPs)();           // simulated time, or nullptr (a real driver has none)
  void* const* wrappers;            // the exported wrapper of each call-table entry
  void* const* forwards;            // what each one forwards to (nullptr: not available)
  // What a launched function is (name, parameter layout), asked without a state-changing call.
  bool (*describeFunction)(uint64_t f, bool isKernel, const std::string& label, FunctionInfo* out);
  // A shared node's admission order (docs/traces.md): the calling thread's node requests from
  // nodeBegin to nodeEnd, their admission numbers and the traced requests finished before each;
  // `tags` are the numbers a replay wants them to take. nullptr where there is no node to ask.
  void (*nodeBegin)(const std::vector<uint64_t>& tags) = nullptr;
  void (*nodeEnd)(std::vector<NodeAdmission>* out) = nullptr;
  // The shared node's settings (JSON), "" when not attached to one.
  std::string (*nodeSettings)() = nullptr;
  // Kernel times: the kernel the calling thread's current call submitted (an opaque object the
  // recorder keeps; nullptr: none, several, or `keep` false, which only forgets them), and, when the trace ends, when it ran (false:
  // not known to have finished). nullptr where the target cannot tell (a real driver).
  void* (*takeKernel)(bool keep) = nullptr;
  bool (*kernelTimes)(void* kernel, uint64_t launchPs, uint64_t* startPs, uint64_t* endPs) = nullptr;
};

// Called once, before main, by the library that holds the wrappers, with the settings of the
// process as it loads: MCSIM_RECORD, MCSIM_RECORD_DATA, MCSIM_RECORD_OUTPUT_DATA and
// MCSIM_RECORD_IMAGES say what to record; the header keeps the settings a replay needs.
void startRecorder(const Target& t, const settings::Settings& settings);

// One recorded call: admission (sequence number, thread, start time, the arguments) when made,
// the result and outputs when finished.
class CallScope {
 public:
  CallScope(int call, const uint64_t* slots);
  CUresult finish(CUresult r);
  // The record of a call that never returned: the process aborted on a hang while it waited
  // (MCSIM_ON_HANG=abort). Under the recorder's lock.
  Json abortedRecord(bool simulated) const;
  CallScope(const CallScope&) = delete;
  CallScope& operator=(const CallScope&) = delete;

 private:
  int call_;
  const uint64_t* slots_;
  bool active_;
  uint64_t seq_ = 0;
  uint64_t finishedBefore_ = 0;  // calls finished when this one was admitted
  int thread_ = 0;
  uint64_t t0_ = 0;
  std::vector<NodeAdmission> clock0_;  // the t0 clock read's admission on a shared node (0 or 1)
  std::vector<uint64_t> clock1Tag_;    // replay: the number the t1 clock read is to take
  std::string sharedIn_;               // the shareable handle it imports (shareableIdentity)
  void* inputs_ = nullptr;  // the encoded arguments (a Json), owned
};

// cuGetProcAddress hands out the wrapper of the variant it found, so that calls made through
// function pointers are recorded (and, for a real driver, guarded) like direct ones. A pointer
// with no wrapper is left as it is; for a real driver, a cuMulticast* one is withheld.
void wrapProcAddress(const char* symbol, void** pfn);

// The exported symbol a wrapper pointer stands for, or nullptr.
const char* wrappedSymbol(void* fn);

}  // namespace mcsim::trace

// Exported (extern "C", mcsim_trace_*) for the replayer, which loads either library.
extern "C" {
// How many calls have been admitted to the trace so far, and how many of them have finished.
uint64_t mcsim_trace_admitted(void);
uint64_t mcsim_trace_finished(void);
// Writes the end record and closes the trace; later calls are not recorded.
void mcsim_trace_close(void);
// Replaying a shared node's run: the recorded admission numbers of the calling thread's next
// call, for its clock reads (`clock[0]`, `clock[1]`; 0: none) and its own `n` node requests.
void mcsim_trace_node_plan(const uint64_t clock[2], const uint64_t* requests, size_t n);
}
