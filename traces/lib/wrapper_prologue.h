// What a translation unit that includes the generated wrappers (trace_wrappers.inc) needs first:
// cuda.h with its name mappings lifted (the wrappers define every ABI variant under its exact
// name), the PFN types, and the recorder.
#pragma once

#include <cuda.h>
#include <cudaTypedefs.h>

#include <type_traits>

#include "driver/abi_names.h"
#include "mcsim/cuda_multicast_v2.h"
#include "traces/lib/call_desc.h"
#include "traces/lib/call_log.h"
#include "traces/lib/recorder.h"

