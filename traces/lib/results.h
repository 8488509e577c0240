// CUresult names, from the driver's own list (driver/results.def), so that traces say
// "CUDA_ERROR_ILLEGAL_STATE" rather than 401 and neither recorder asks the driver.
#pragma once

#include <cuda.h>

#include <string>

namespace mcsim::trace {

std::string resultName(CUresult r);  // "CUDA_ERROR_UNKNOWN_RESULT_<n>" for a code not in the list
bool resultByName(const std::string& name, CUresult* out);

}  // namespace mcsim::trace
