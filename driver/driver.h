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
#include <initializer_list>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "driver/cuda_names.h"
#include "driver/host_clock.h"
#include "fabric/node.h"
#include "fabric/tray_node.h"
#include "model/status.h"
#include "settings/settings.h"

namespace mcsim::driver {

// The process's settings (settings/settings.def), read from its environment the first time the
// driver needs one: at cuInit, or at a call that answers before it (cuDriverGetVersion). Each
// unknown MCSIM_* name and each refused value is reported then, once, on one line.
const settings::Settings& driverSettings();

// Maps a node outcome to the driver's code: the one place where Status becomes CUresult.
CUresult toResult(Status s);
// What a call given up after a deadlock or hang report returns: MCSIM_HANG_RESULT (a CUresult
// name), by default CUDA_ERROR_ILLEGAL_STATE, a code every multicast bind may already return.
CUresult hangResult();

struct DriverState {
  std::once_flag initOnce;
  std::atomic<bool> initialized{false};
  // The node exists and its fault plan is loaded (the first cuInit built it). A cuInit that a
  // fault plan fails leaves the process uninitialized, but the plan stays loaded, so that it can
  // let a later cuInit through.
  std::atomic<bool> nodeUp{false};
  // This process is a child forked (without exec) after cuInit. The real driver answers every
  // call there, cuInit included, with CUDA_ERROR_NOT_INITIALIZED (docs/real-driver.md, "Edges
  // the driver judges"); the child must not touch the parent's node (its engine thread, or a
  // shared node's channel, belongs to the parent).
  std::atomic<bool> forkedChild{false};
  CUresult initResult = CUDA_SUCCESS;
  std::unique_ptr<fabric::Node> node;
  int deviceCount = 0;
  // The host this process runs on: the compute tray (MCSIM_TRAY) or the whole node (tray -1), and
  // the host's GPUs its CUDA ordinals name (CUDA_VISIBLE_DEVICES). `node` is the process's view of
  // the node, in its ordinals (fabric/tray_node.h); `hostNode` is the node itself, which NVML
  // asks about the host's GPUs (tray.hostGpuOf), as real NVML ignores CUDA_VISIBLE_DEVICES.
  fabric::TraySpan tray;
  fabric::Node* hostNode = nullptr;
  // Attribute values per device, indexed [device][attribute], resolved once at cuInit; the same
  // for each of the host's GPUs, in the host's order (NVML's devices).
  std::vector<std::vector<int>> attributes;
  std::vector<std::vector<int>> hostAttributes;
};

DriverState& state();

// The emulated driver version: what cuDriverGetVersion reports and what cuGetProcAddress
// resolves against. MCSIM_DRIVER_VERSION overrides the default (the cuda.h version).
int emulatedDriverVersion();

// The device's UUID (cuDeviceGetUuid), stable per preset and device.
CUuuid deviceUuid(int device);
// The UUID of the node's GPU `rackGpu` (deviceUuid of the ordinal that names it).
CUuuid rackGpuUuid(int rackGpu);

inline bool initialized() { return state().initialized.load(std::memory_order_acquire); }
inline fabric::Node& node() { return *state().node; }
inline bool validDevice(CUdevice d) { return d >= 0 && d < state().deviceCount; }
// The host NUMA nodes this process sees: the node's, or those of its tray (numbered from 0).
inline int hostNumaNodes() { return state().tray.tray >= 0 ? state().tray.numaNodes : node().preset().hostNumaNodes; }
// The host's GPUs that NVML shows: all of the host's (the tray's or the node's), whatever
// CUDA_VISIBLE_DEVICES says.
inline int hostGpuCount() { return static_cast<int>(state().hostAttributes.size()); }
// The answers of every call before cuInit and after the node is gone, with the reason the call log
// gives (MCSIM_DEBUG).
inline CUresult refuseUninitialized() {
  return MCSIM_REFUSE(CUDA_ERROR_NOT_INITIALIZED, state().forkedChild.load(std::memory_order_acquire)
                                                      ? "this process was forked after cuInit; the driver is cut off in it"
                                                      : "cuInit was not called, or failed");
}
inline CUresult refuseNodeLost() {
  return MCSIM_REFUSE(CUDA_ERROR_DEVICE_UNAVAILABLE, "the shared node this process was attached to is gone");
}
inline bool isDeviceAddress(uint64_t p) {
  return initialized() && p >= node().vaBase() && p < node().vaLimit();
}

// What the fault plan says about the driver call `symbol` acting on `device` (kCurrentDevice: the
// current context's, if any; -1: none) with the `argCount` arguments `args` it reports
// (fabric/fault_arguments.def): false to go on, or true with the result the call returns without
// doing anything. A flag rather than "CUDA_SUCCESS means go on", because `-> return CUDA_SUCCESS`
// is a fault too (a call that claims success and does nothing, e.g. a device that never really
// joins its team); read as "go on", it used to run the call after all.
constexpr int kCurrentDevice = -2;
// `fabricMoment`: whether fabric-level rules (fabric-manager, imex, link, switch) may fire at this
// call; false for the calls that answer without the node (cuInit, cuDriverGetVersion,
// cuGetProcAddress, the error-string calls), so that a program's diagnostics (an error name
// printed on a failure path) do not shift the fabric's events.
bool consultFaults(const char* symbol, int device, const fabric::FaultArgument* args, size_t argCount,
                   CUresult* result, bool fabricMoment = true);
// Whether the node is up and its plan loaded: from the first cuInit on, even when a fault plan
// failed that cuInit. The calls that answer before cuInit consult the plan only from then on.
inline bool planLoaded() { return state().nodeUp.load(std::memory_order_acquire); }

// The plan's consult: the arguments are built only while a plan is installed (reading a struct
// field of a null pointer reports it absent; see fabric::FaultArgument).
#define MCSIM_CONSULT_FAULTS_(device, moment, ...)                                                 \
  if (::mcsim::driver::node().faultsActive()) {                                                    \
    const std::initializer_list<::mcsim::fabric::FaultArgument> faultArgs_ = {__VA_ARGS__};        \
    CUresult fault_ = CUDA_SUCCESS;                                                                \
    if (::mcsim::driver::consultFaults(__func__, (device), faultArgs_.begin(), faultArgs_.size(), \
                                       &fault_, (moment))) {                                       \
      return fault_;                                                                               \
    }                                                                                              \
  }

// With MCSIM_TIMELINE set, every driver call appears on the timeline's "driver calls" row at the
// simulated time it was made.
bool timelineActive();
void noteCall(const char* symbol);
// An entry point's exported name from its __func__ (mcsim_impl_<symbol>).
const char* exportedName(const char* symbol);
// The timeline's arrow from the driver call this thread is in to the work it queues (0: no
// timeline is kept).
uint64_t timelineFlow();

// Every entry point but cuInit, cuDriverGetVersion, cuGetProcAddress and the error-string calls
// begins here: the init check, the node's (a shared node known to be gone fails every call with
// CUDA_ERROR_DEVICE_UNAVAILABLE, even one that would not ask it), then the fault plan, before the call does anything (so that an
// injected failure leaves the node as it was). The _DEV forms name the device the call acts on:
// every entry point with a CUdevice parameter uses one (cuDeviceGetAttribute,
// cuDevicePrimaryCtxRetain, ...), so that device= filters see the device the call names, as the
// plan format says; with the current context's device instead, a device= rule never matched a
// cuDevicePrimaryCtxRetain made before any context was current. The _ARGS forms report the
// call's arguments for argument filters, as fabric/fault_arguments.def lists them, e.g.
//   MCSIM_REQUIRE_INIT_ARGS({"size", bytesize}, {"flags", flags});
//   MCSIM_REQUIRE_INIT_DEV_ARGS(dev, {"attribute", attrib});
//   MCSIM_REQUIRE_INIT_ARGS({"size", prop, &CUmulticastObjectProp::size});  // a struct field
#define MCSIM_REQUIRE_INIT_DEV_ARGS(device, ...)                                \
  do {                                                                          \
    if (!::mcsim::driver::initialized()) return ::mcsim::driver::refuseUninitialized(); \
    if (::mcsim::driver::node().lost()) return ::mcsim::driver::refuseNodeLost();     \
    MCSIM_CHARGE_HOST_();                                                       \
    if (::mcsim::driver::timelineActive()) ::mcsim::driver::noteCall(__func__); \
    MCSIM_CONSULT_FAULTS_(device, true, __VA_ARGS__)                            \
  } while (0)
#define MCSIM_REQUIRE_INIT_ARGS(...) MCSIM_REQUIRE_INIT_DEV_ARGS(::mcsim::driver::kCurrentDevice, __VA_ARGS__)
#define MCSIM_REQUIRE_INIT_DEV(device) MCSIM_REQUIRE_INIT_DEV_ARGS(device, )
#define MCSIM_REQUIRE_INIT() MCSIM_REQUIRE_INIT_DEV_ARGS(::mcsim::driver::kCurrentDevice, )

// cuDriverGetVersion, cuGetProcAddress and the error-string calls answer before cuInit: they are
// fault points once the first cuInit has loaded the plan (before it there is none); they act on no
// device, and fabric-level rules do not fire at them (consultFaults).
#define MCSIM_FAULT_POINT_ARGS(...)                                             \
  do {                                                                          \
    if (::mcsim::driver::planLoaded()) {                                        \
      MCSIM_CONSULT_FAULTS_(-1, false, __VA_ARGS__)                             \
    }                                                                           \
  } while (0)
#define MCSIM_FAULT_POINT() MCSIM_FAULT_POINT_ARGS()

#define MCSIM_TRY(expr)              \
  do {                               \
    const CUresult r_ = (expr);      \
    if (r_ != CUDA_SUCCESS) return r_; \
  } while (0)

}  // namespace mcsim::driver
