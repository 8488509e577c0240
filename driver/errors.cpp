// cuGetErrorName and cuGetErrorString. Both answer before cuInit, as the real driver's do.
#include <cuda.h>

#include <string>

#include "driver/driver.h"

using mcsim::driver::resultDescription;
using mcsim::driver::resultName;

extern "C" {

CUresult CUDAAPI cuGetErrorName(CUresult error, const char** pStr) {
  MCSIM_FAULT_POINT_ARGS({"error", error});
  if (pStr == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *pStr = resultName(error);
  return *pStr != nullptr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult CUDAAPI cuGetErrorString(CUresult error, const char** pStr) {
  MCSIM_FAULT_POINT_ARGS({"error", error});
  if (pStr == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *pStr = resultDescription(error);
  return *pStr != nullptr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

}  // extern "C"
