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
};

struct Difference {
  size_t index;  // call number (0-based, admission order)
  std::string what;
};

struct DurationRow {
  std::string call;
  size_t count = 0;
  double aNs = 0, bNs = 0;  // summed durations (simulated or wall)
};

struct DiffResult {
  size_t compared = 0;
  std::vector<Difference> differences;
  std::vector<Difference> notes;
  std::vector<DurationRow> durations;  // per call name, both traces timed
};

// True when both traces come from mcsim (then the default comparison is exact).
bool bothSimulated(const Trace& a, const Trace& b);

DiffResult diffTraces(const Trace& a, const Trace& b, const DiffOptions& o);

// The human report: "<verb> N calls, D differences" and the first ones explained.
std::string describeDiff(const DiffResult& r, const Trace& a, const Trace& b, const std::string& verb,
                         const DiffOptions& o, bool withDurations);

}  // namespace mcsim::trace
