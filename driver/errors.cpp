// cuGetErrorName and cuGetErrorString. Both answer before cuInit, as the real driver's do.
#include <cuda.h>

#include <string>

#include "driver/driver.h"

namespace {

struct ResultText {
  CUresult code;
  const char* name;
  const char* description;
};

const ResultText kResults[] = {
#define MCSIM_RESULT(name, text) {name, #name, text},
#include "driver/results.def"
#undef MCSIM_RESULT
};

const ResultText* find(CUresult code) {
  for (const ResultText& r : kResults) {
    if (r.code == code) return &r;
  }
  return nullptr;
}

}  // namespace

namespace mcsim::driver {

bool resultByName(const std::string& name, CUresult* out) {
  for (const ResultText& r : kResults) {
    if (name == r.name) {
      *out = r.code;
      return true;
    }
  }
  return false;
}

}  // namespace mcsim::driver

extern "C" {

CUresult CUDAAPI cuGetErrorName(CUresult error, const char** pStr) {
  MCSIM_FAULT_POINT_ARGS({"error", error});
  if (pStr == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const ResultText* r = find(error);
  if (r == nullptr) {
    *pStr = nullptr;
    return CUDA_ERROR_INVALID_VALUE;
  }
  *pStr = r->name;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGetErrorString(CUresult error, const char** pStr) {
  MCSIM_FAULT_POINT_ARGS({"error", error});
  if (pStr == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const ResultText* r = find(error);
  if (r == nullptr) {
    *pStr = nullptr;
    return CUDA_ERROR_INVALID_VALUE;
  }
  *pStr = r->description;
  return CUDA_SUCCESS;
}

}  // extern "C"
