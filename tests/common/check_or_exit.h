// CHECK for the standalone programs the tests run (not Google Test ones): a driver call that
// fails prints the call, its result and the line, and ends the program with status 1, which the
// test that runs it reports.
#pragma once

#include <cuda.h>

#include <cstdio>
#include <cstdlib>

#define CHECK(x)                                                         \
  do {                                                                   \
    CUresult r_ = (x);                                                   \
    if (r_ != CUDA_SUCCESS) {                                            \
      std::printf("error: %s -> %d (line %d)\n", #x, r_, __LINE__);      \
      std::exit(1);                                                      \
    }                                                                    \
  } while (0)
