// Driver-call checking for mcsim_bench_allreduce: a failed call is reported with its name, the
// result's name and where it was made, and the caller returns false (then tears down what it made).
#pragma once

#include <cuda.h>

namespace mcsim::bench {

// Prints "mcsim_bench_allreduce: <what> failed: <CUDA_ERROR_...> (<file>:<line>)"; returns false.
bool reportFailure(CUresult r, const char* what, const char* file, int line);

}  // namespace mcsim::bench

// Evaluates a driver call; on failure reports it and returns false from the enclosing function.
#define BENCH_CU(call)                                                                     \
  do {                                                                                     \
    const CUresult bench_r_ = (call);                                                      \
    if (bench_r_ != CUDA_SUCCESS) return ::mcsim::bench::reportFailure(bench_r_, #call, __FILE__, __LINE__); \
  } while (0)

// A teardown call: reported on failure, and the teardown goes on. `ok` becomes false.
#define BENCH_CU_TEARDOWN(ok, call)                                                       \
  do {                                                                                    \
    const CUresult bench_r_ = (call);                                                     \
    if (bench_r_ != CUDA_SUCCESS) (ok) = ::mcsim::bench::reportFailure(bench_r_, #call, __FILE__, __LINE__); \
  } while (0)
