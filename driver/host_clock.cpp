// The host's simulated clock (host_clock.h; docs/model.md, "What the host costs").
#include "driver/host_clock.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "driver/driver.h"
#include "fabric/fault_injector.h"

namespace mcsim::driver::hostclock {

namespace {

// The default cost of each family in nanoseconds, each with its source (docs/model.md, "What the
// host costs").
uint64_t defaultNs(Family f) {
  switch (f) {
    case Family::kFree: return 0;
    // Fitted, with the event record's: a tiny kernel between two event records takes 6.9-9.2 us on
    // a real H200 (docs/real-driver/h200-kernel-durations-2026-11-29.txt, 2^16 elements), of which
    // the launch call and the closing record are the host's part; bounded by a vector add of 2^20
    // elements, which takes longer than one of 2^16 there and must here (the model's device time
    // of it is 5.2 us). cuLaunchKernel(Ex) took 4.1-4.7 us for each kernel's first launch on a real
    // H100 (docs/real-driver/traces-h100-2026-11-21-launches.txt), lazy loading included.
    case Family::kLaunch: return 3500;
    case Family::kGraphLaunch: return 3500;  // assumed: a launch
    // cudaMemcpyAsync of 4 bytes: 1.23-1.27 us a call on a real H200 (docs/real-driver.md, section
    // 11, bench/runtime_calls); memsets assumed alike.
    case Family::kCopy: return 1250;
    case Family::kMemset: return 1250;
    case Family::kEventRecord: return 1500;  // with the launch's, above
    // Fitted: NCCL's two-GPU ring all-reduce of 16 KiB, whose group makes four records, four waits
    // and two launches between the program's two events, takes 25.2 us on two real H200s
    // (docs/real-driver/h200x2-nccl-hostgap-2026-11-29.txt).
    case Family::kStreamWait: return 2500;
    case Family::kStreamMemOp: return 1000;    // assumed
    case Family::kHostFunction: return 1000;   // assumed
    case Family::kQuery: return 250;           // assumed
    case Family::kSynchronize: return 250;     // assumed
  }
  return 0;
}

uint64_t percent() {
  static const uint64_t p = driverSettings().hostCostPercent;
  return p;
}

thread_local uint64_t tClock = 0;
thread_local uint64_t tCall = 0;

}  // namespace

Family familyOf(const char* symbol) {
  const std::string base = fabric::FaultInjector::baseName(exportedName(symbol));
  struct Entry {
    const char* name;
    Family family;
  };
  static const Entry kTable[] = {
      {"cuLaunchKernel", Family::kLaunch},
      {"cuLaunchKernelEx", Family::kLaunch},
      {"cuLaunchCooperativeKernel", Family::kLaunch},
      {"cuGraphLaunch", Family::kGraphLaunch},
      {"cuEventRecord", Family::kEventRecord},
      {"cuEventRecordWithFlags", Family::kEventRecord},
      {"cuStreamWaitEvent", Family::kStreamWait},
      {"cuStreamWaitValue32", Family::kStreamMemOp},
      {"cuStreamWaitValue64", Family::kStreamMemOp},
      {"cuStreamWriteValue32", Family::kStreamMemOp},
      {"cuStreamWriteValue64", Family::kStreamMemOp},
      {"cuStreamBatchMemOp", Family::kStreamMemOp},
      {"cuLaunchHostFunc", Family::kHostFunction},
      {"cuStreamAddCallback", Family::kHostFunction},
      {"cuStreamQuery", Family::kQuery},
      {"cuEventQuery", Family::kQuery},
      {"cuStreamSynchronize", Family::kSynchronize},
      {"cuEventSynchronize", Family::kSynchronize},
      {"cuCtxSynchronize", Family::kSynchronize},
  };
  for (const Entry& e : kTable) {
    if (base == e.name) return e.family;
  }
  // Every copy and memset, asynchronous or not, of any shape (cuMemcpy, cuMemcpyHtoDAsync,
  // cuMemcpy2DUnaligned, cuMemcpy3DPeerAsync, cuMemsetD2D8Async ...).
  if (base.rfind("cuMemcpy", 0) == 0) return Family::kCopy;
  if (base.rfind("cuMemsetD", 0) == 0) return Family::kMemset;
  return Family::kFree;
}

uint64_t costPs(Family f) { return defaultNs(f) * 1000 * percent() / 100; }

bool enabled() { return percent() != 0; }

uint64_t nowPs() { return tClock; }

void charge(uint64_t costPs) {
  tCall = tClock;
  tClock += costPs;
}

uint64_t callPs() { return enabled() ? tCall : 0; }

uint64_t endPs() { return enabled() ? tClock : 0; }

void reached(uint64_t ps) {
  if (enabled()) tClock = std::max(tClock, ps);
}

void polled() {
  if (enabled()) tClock += driverSettings().hostPollNs * 1000;
}

}  // namespace mcsim::driver::hostclock
