// The functions the real libcuda.so.1 exports and mcsim does not model (driver/unmodelled.def):
// each is exported, resolvable through cuGetProcAddress under its real base name and version,
// and returns CUDA_ERROR_NOT_SUPPORTED, saying so once on stderr.
#pragma once

#include <cstddef>

namespace mcsim::driver {

struct UnmodelledEntry {
  const char* name;    // base name, as cuGetProcAddress is asked for it
  int version;         // CUDA version of the variant; 0: not resolvable
  const char* symbol;  // exported symbol
  void* fn;
};

// The table, in unmodelled.def's order; `*count` entries.
const UnmodelledEntry* unmodelledEntries(size_t* count);

}  // namespace mcsim::driver
