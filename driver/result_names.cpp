// The CUresults cuda.h defines, by code and by name (driver/cuda_names.h).
#include <cuda.h>

#include <string>

#include "driver/cuda_names.h"

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

const char* resultName(CUresult code) {
  const ResultText* r = find(code);
  return r != nullptr ? r->name : nullptr;
}

const char* resultDescription(CUresult code) {
  const ResultText* r = find(code);
  return r != nullptr ? r->description : nullptr;
}

}  // namespace mcsim::driver
