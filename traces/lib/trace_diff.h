// Comparing two traces call by call (mcsim diff, and the check at the end of a replay).
#pragma once

#include <string>
#include <vector>

#include "traces/lib/trace_reader.h"

namespace mcsim::trace {

struct DiffOptions {
  // Exact: arguments, outputs and simulated timestamps must match too (a replay in mcsim of an
  // mcsim trace is bit-exact). Otherwise only results and data digests count as differences;
  // other outputs that differ (a device name, free memory) are notes.
  bool exact = false;
  // Launches: the kernel's name and its parameters' values (addresses as names) must match, also
  // across targets. Off with --results-only.
  bool compareLaunches = true;
  size_t explain = 5;  // differences explained in the report
  // From this call on (0-based, admission order) data digests are not compared: the call read
  // host data that trace A holds by digest only, so a replay filled it with a pattern and the
  // device data it wrote, and all that was copied from it, differ (unrecordedHostData).
  size_t dataFrom = static_cast<size_t>(-1);
};

struct Difference {
  size_t index;  // call number (0-based, admission order)
  std::string what;
};

// A call name's (or a kernel's) durations in the two traces. A launch counts under its kernel
// ("cuLaunchKernel mcsim_copy") in each trace, with the kernel's simulated time where the trace
// has it (the end record's kernel times), else the call's.
struct DurationRow {
  std::string call;
  size_t count = 0, countB = 0;  // calls in A and in B
  double aNs = 0, bNs = 0;  // summed durations (simulated or wall)
};

struct DiffResult {
  size_t compared = 0;
  std::vector<Difference> differences;
  std::vector<Difference> notes;
  size_t uncomparedDigests = 0;  // data digests that differ from dataFrom on, not counted
  std::vector<DurationRow> durations;  // per call name, both traces timed
};

// A call whose host input data the trace holds by digest only (larger than the recording's
// MCSIM_RECORD_DATA): a replay cannot reproduce what it copied.
struct UnrecordedData {
  size_t index;      // the call (0-based, admission order)
  std::string what;  // "FILE:LINE cuMemcpyHtoD_v2 (1048576 bytes of 'srcHost')"
};
std::vector<UnrecordedData> unrecordedHostData(const Trace& t);

// The line a replay prints before it starts when the trace holds such calls ("" when none):
// which calls, why, what is not compared, and how to record them in full.
std::string describeUnrecordedData(const Trace& t, const std::vector<UnrecordedData>& calls);

// True when both traces come from mcsim (then the default comparison is exact).
bool bothSimulated(const Trace& a, const Trace& b);

DiffResult diffTraces(const Trace& a, const Trace& b, const DiffOptions& o);

// The human report: "<verb> N calls, D differences" and the first ones explained.
std::string describeDiff(const DiffResult& r, const Trace& a, const Trace& b, const std::string& verb,
                         const DiffOptions& o, bool withDurations);

}  // namespace mcsim::trace
