// What the probes share: CHECK (print the failing call and its result, return 1) and the median
// of event-timed runs of one operation on a stream. Header only: each probe still builds from its
// own source with one g++ line (tools/probe/README.md).
#pragma once

#include <cuda.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#define CHECK(x)                                                                      \
  do {                                                                                \
    CUresult r_ = (x);                                                                \
    if (r_ != CUDA_SUCCESS) {                                                         \
      const char* n_ = nullptr;                                                       \
      cuGetErrorName(r_, &n_);                                                        \
      std::printf("error: %s -> %s (line %d)\n", #x, n_ ? n_ : "?", __LINE__);       \
      return 1;                                                                       \
    }                                                                                 \
  } while (0)

namespace probe {

// Median time in ms of `repeats` runs of `op` on `stream` (after `warmups`), timed with events on
// that stream. Returns 0, or 1 after printing a failed call.
template <typename Op>
int medianMs(CUstream stream, Op op, float* out, int warmups, int repeats) {
  CUevent a, b;
  CHECK(cuEventCreate(&a, CU_EVENT_DEFAULT));
  CHECK(cuEventCreate(&b, CU_EVENT_DEFAULT));
  std::vector<float> ms;
  for (int i = 0; i < warmups + repeats; ++i) {
    CHECK(cuEventRecord(a, stream));
    CHECK(op());
    CHECK(cuEventRecord(b, stream));
    CHECK(cuEventSynchronize(b));
    float t = 0;
    CHECK(cuEventElapsedTime(&t, a, b));
    if (i >= warmups) ms.push_back(t);
  }
  std::sort(ms.begin(), ms.end());
  *out = ms[ms.size() / 2];
  cuEventDestroy(a);
  cuEventDestroy(b);
  return 0;
}

}  // namespace probe
