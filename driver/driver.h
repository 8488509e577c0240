// Internal core of mcsim's libcuda.so.1: the process-wide driver state and the helpers every
// entry point uses. Entry points live in one translation unit per API group.
#pragma once

#include <cuda.h>
// The driver's sources (MCSIM_DRIVER_IMPL) define each entry point as mcsim_impl_<symbol>; the
// trace wrappers (traces/, generated from entry_points.def) define the exported names.
#ifdef MCSIM_DRIVER_IMPL
#include "mcsim_internal_names.h"
#endif

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "fabric/node.h"
#include "model/status.h"

namespace mcsim::driver {

// Maps a node outcome to the driver's code: the one place where Status becomes CUresult.
CUresult toResult(Status s);
// What a call given up after a deadlock or hang report returns: MCSIM_HANG_RESULT (a CUresult
// name), by default CUDA_ERROR_ILLEGAL_STATE, a code every multicast bind may already return.
CUresult hangResult();

struct DriverState {
  std::once_flag initOnce;
  std::atomic<bool> initialized{false};
  CUresult initResult = CUDA_SUCCESS;
  std::unique_ptr<fabric::Node> node;
  int deviceCount = 0;
  // Attribute values per device, indexed [device][attribute], resolved once at cuInit.
  std::vector<std::vector<int>> attributes;
};

DriverState& state();

// The emulated driver version: what cuDriverGetVersion reports and what cuGetProcAddress
// resolves against. MCSIM_DRIVER_VERSION overrides the default (the cuda.h version).
int emulatedDriverVersion();

inline bool initialized() { return state().initialized.load(std::memory_order_acquire); }
inline fabric::Node& node() { return *state().node; }
inline bool validDevice(CUdevice d) { return d >= 0 && d < state().deviceCount; }
inline bool isDeviceAddress(uint64_t p) {
  return initialized() && p >= node().vaBase() && p < node().vaLimit();
}

// What the fault plan says about the driver call `symbol` acting on `device` (kCurrentDevice: the
// current context's, if any): false to go on, or true with the result the call returns without
// doing anything. A flag rather than "CUDA_SUCCESS means go on", because `-> return CUDA_SUCCESS`
// is a fault too (a call that claims success and does nothing, e.g. a device that never really
// joins its team); read as "go on", it used to run the call after all.
constexpr int kCurrentDevice = -2;
bool consultFaults(const char* symbol, int device, CUresult* result);
// The CUresult with this name (CUDA_ERROR_...), for fault plans; false when there is none.
bool resultByName(const std::string& name, CUresult* out);

// Every entry point but cuInit, cuDriverGetVersion, cuGetProcAddress and the error-string calls
// begins here: the init check, then the fault plan, before the call does anything (so that an
// injected failure leaves the node as it was). The _DEV form names the device the call acts on:
// every entry point with a CUdevice parameter uses it (cuDeviceGetAttribute,
// cuDevicePrimaryCtxRetain, ...), so that device= filters see the device the call names, as the
// plan format says; with the current context's device instead, a device= rule never matched a
// cuDevicePrimaryCtxRetain made before any context was current.
#define MCSIM_REQUIRE_INIT_DEV(device)                                                        \
  do {                                                                                        \
    if (!::mcsim::driver::initialized()) return CUDA_ERROR_NOT_INITIALIZED;                  \
    if (::mcsim::driver::node().faultsActive()) {                                             \
      CUresult fault_ = CUDA_SUCCESS;                                                         \
      if (::mcsim::driver::consultFaults(__func__, (device), &fault_)) return fault_;         \
    }                                                                                         \
  } while (0)
#define MCSIM_REQUIRE_INIT() MCSIM_REQUIRE_INIT_DEV(::mcsim::driver::kCurrentDevice)

#define MCSIM_TRY(expr)              \
  do {                               \
    const CUresult r_ = (expr);      \
    if (r_ != CUDA_SUCCESS) return r_; \
  } while (0)

}  // namespace mcsim::driver
