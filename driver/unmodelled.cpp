// The exported functions mcsim does not model, one per line of unmodelled.def.
//
// This file does not include cuda.h, on purpose: every function here is defined without
// parameters, whatever its prototype in cuda.h, and ignores the arguments its caller passes (the
// x86-64 System V convention has the caller pass them in registers and clean up, so a callee that
// does not read them is called safely). It returns CUresult's CUDA_ERROR_NOT_SUPPORTED.
// Unmodelled calls are not traced: they change nothing, so a replay without them is the same.
#include "driver/unmodelled.h"

#include <atomic>
#include <cstdio>

namespace mcsim::driver {
namespace {

constexpr int kNotSupported = 801;  // CUDA_ERROR_NOT_SUPPORTED

int notModelled(const char* symbol, std::atomic<bool>* told) {
  if (!told->exchange(true, std::memory_order_relaxed)) {
    std::fprintf(stderr, "mcsim: %s is not modelled; it returns CUDA_ERROR_NOT_SUPPORTED\n", symbol);
  }
  return kNotSupported;
}

}  // namespace
}  // namespace mcsim::driver

#define MCSIM_UNMODELLED(base, ver, symbol)                              \
  extern "C" int symbol(void) {                                          \
    static std::atomic<bool> told{false};                                \
    return ::mcsim::driver::notModelled(#symbol, &told);                 \
  }
#include "driver/unmodelled.def"
#undef MCSIM_UNMODELLED

namespace mcsim::driver {

namespace {
const UnmodelledEntry kUnmodelled[] = {
#define MCSIM_UNMODELLED(base, ver, symbol) {#base, ver, #symbol, reinterpret_cast<void*>(&symbol)},
#include "driver/unmodelled.def"
#undef MCSIM_UNMODELLED
};
}  // namespace

const UnmodelledEntry* unmodelledEntries(size_t* count) {
  *count = sizeof kUnmodelled / sizeof kUnmodelled[0];
  return kUnmodelled;
}

}  // namespace mcsim::driver
