// What the probes written against the CUDA runtime share: CHECK, which prints the failing call
// and its error name and ends the probe with status 1. Header only, beside the probes, so that
// each still builds from its own source with one nvcc line (tools/probe/README.md). (The driver
// API probes have theirs in probe_timing.h.)
#pragma once

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#define CHECK(call)                                                                             \
  do {                                                                                          \
    const cudaError_t e_ = (call);                                                              \
    if (e_ != cudaSuccess) {                                                                    \
      std::printf("FAILED: %s = %s (line %d)\n", #call, cudaGetErrorName(e_), __LINE__);        \
      std::exit(1);                                                                             \
    }                                                                                           \
  } while (0)
