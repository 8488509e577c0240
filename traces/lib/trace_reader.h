// Reading a trace file: every line checked, so that the replayer, diff and minimiser only ever
// see well-formed traces. A bad trace is refused with FILE:LINE: reason (docs/traces.md,
// "Rejected traces"): not JSON, no header, a version this mcsim does not read, an unknown call or
// result, an argument of the wrong shape, a name no earlier call produced, a missing end record.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "traces/lib/codec.h"
#include "traces/lib/recorder.h"

namespace mcsim::trace {

struct Record {
  int line = 0;
  uint64_t seq = 0;
  uint64_t fin = 0;  // calls that had finished when this one was admitted
  int thread = 0;
  int call = -1;  // index in the call table
  Json args;
  std::string result;
  Json out;  // null when the call produced no output
  bool hasSimTime = false;
  uint64_t t0Ps = 0, t1Ps = 0;
  bool hasWallTime = false;
  uint64_t durNs = 0;
  // A launch: when its kernel ran in simulated time (the end record's "kernels"), if known.
  bool hasKernelTime = false;
  uint64_t kernelStartPs = 0, kernelEndPs = 0;
  std::vector<int> producers;  // indices (in Trace::records) of the records whose names it uses
  // On a shared node: the node's admissions of the call's own requests, and of the recorder's
  // clock reads at admission and at return (number 0: that read made no request).
  std::vector<NodeAdmission> node;
  NodeAdmission clock[2];
  // The shareable handle the call exported or imported, as every process of the run tells it
  // (shareableIdentity); "" if none.
  std::string shared;
};

struct Trace {
  std::string path;
  Json header;
  std::string target;  // "mcsim" or "real"
  std::vector<Record> records;  // in admission order
  int threads = 0;
  Json nodeSettings;  // the end record's "node": the shared node's settings (null: no shared node)
};

// A record's node admissions in the order its thread made them: clock read, requests, clock read.
std::vector<NodeAdmission> nodeAdmissionsInOrder(const Record& r);

// Parses and checks `text` (named `path` in messages). Returns "" or "PATH:LINE: reason".
std::string parseTrace(const std::string& text, const std::string& path, Trace* out);
std::string readTrace(const std::string& path, Trace* out);

// The inverse, for the minimiser: header, records (renumbered in order), end record.
std::string writeTrace(const Json& header, const std::vector<Record>& records);

// The names ("mem3", "va2") a record uses as inputs, and the ones it produces.
std::vector<std::string> namesUsed(const Record& r);
std::vector<std::string> namesProduced(const Record& r);

}  // namespace mcsim::trace
