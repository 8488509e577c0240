// The per-thread default-stream twins (_ptds / _ptsz) of the memory operations. This translation
// unit is compiled with CUDA_API_PER_THREAD_DEFAULT_STREAM, so cuda.h itself renames each
// function below to its per-thread symbol: the names and signatures come from the header.
#ifndef CUDA_API_PER_THREAD_DEFAULT_STREAM
#error "ptds.cpp must be compiled with CUDA_API_PER_THREAD_DEFAULT_STREAM"
#endif

#include "driver/context.h"
#include "driver/driver.h"
#include "driver/memory.h"
#include "driver/pool.h"
#include "driver/stream.h"
#include "driver/stream_memops.h"

using namespace mcsim::driver;

#include "driver/memops_entries.inc"
#include "driver/stream_entries.inc"
#include "driver/launch_entries.inc"
#include "driver/memory2d_entries.inc"
#include "driver/host_function_entries.inc"
#include "driver/stream_capture_entries.inc"
#include "driver/stream_memops_entries.inc"
