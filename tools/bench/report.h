// What the all-reduce benchmark prints on stdout: nccl-tests' table, so that a run on mcsim can be
// diffed against all_reduce_perf on a real node, or the plain table scripts read (Format).
//
// nccl-tests' layout, from its src/common.cu (NVIDIA/nccl-tests): a first line of the run's
// parameters ("# nThread 1 nGpus N minBytes ... validation: V graph: 0"), "# Using devices" and a
// line per rank, three lines of column heads, then per size `size count type redop root` and, for
// out-of-place and then in-place, `time algbw busbw #wrong` (time with 2 decimals below 100 us, 1
// below 10 ms, none above), and at the end "# Out of bounds values : E OK|FAILED" (E: the cells
// with wrong elements) and "# Avg bus bandwidth    : B" (the mean busbw of every cell). Each of
// this benchmark's algorithms works either in place (nvls, twoshot, ring) or out of place
// (oneshot), so only that half of a row is measured; the other half reads N/A, and the average is
// over the cells measured. #wrong is N/A without a check (-c 0, nccl-tests' -c 1 is its default).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gpu_set.h"
#include "options.h"

namespace mcsim::bench {

class Report {
 public:
  enum class Place { kOutOfPlace, kInPlace };
  Report(const Options& o, const GpuSet& gpus, Place place) : o_(o), gpus_(gpus), place_(place) {}
  // The lines before the first row.
  void begin();
  // One size: its mean time in microseconds, and its wrong elements (-1: not checked).
  void row(uint64_t bytes, double us, int64_t wrong);
  // The lines after the last row.
  void end();

 private:
  const Options& o_;
  const GpuSet& gpus_;
  Place place_;
  double busbwSum_ = 0;
  int cells_ = 0, failedCells_ = 0;
};

// nccl-tests' time column: "%7.2f" below 100 us, "%7.1f" below 10 ms, "%7.0f" from there on.
std::string ncclTestsTime(double us);
// The bytes of one element of the type nccl-tests names (half: 2, double: 8 ...).
uint64_t ncclTestsWordBytes(const std::string& type);

}  // namespace mcsim::bench
