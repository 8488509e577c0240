#include "cu_check.h"

#include <cstdio>

namespace mcsim::bench {

bool reportFailure(CUresult r, const char* what, const char* file, int line) {
  const char* name = nullptr;
  if (cuGetErrorName(r, &name) != CUDA_SUCCESS || name == nullptr) name = "an unknown CUresult";
  std::fprintf(stderr, "mcsim_bench_allreduce: %s failed: %s (%s:%d)\n", what, name, file, line);
  return false;
}

}  // namespace mcsim::bench
