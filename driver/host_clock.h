// The host's simulated clock (docs/model.md, "What the host costs").
//
// Each host thread carries a clock of simulated time. Every driver call moves it on by a fixed
// cost of the call's family (a launch, a copy's or a memset's issue, an event record, a stream's
// wait, a query, ...; MCSIM_HOST_COST_PERCENT scales them all, 0 turns the clock off), and a call
// that blocks (a synchronisation, a blocking copy, an event's synchronisation) brings it up to the
// completion it waited for. Work a call queues starts on the device no earlier than the clock at
// which the call was made (DeviceOp::notBeforePs): the call's own cost comes after, since the
// model's fitted device-side figures (a copy's set-up, a kernel's launch) were measured as one
// operation between two event records and hold its own call's host time. An event record is the
// exception: the event is stamped no earlier than the clock after its call (the record reaches the
// device as the call ends), so two records back to back are one record's cost apart, and a pair
// around one operation measures what it did before (the operation starts when the first record is
// stamped). A query answers CUDA_ERROR_NOT_READY for work done later than the clock, and moves the
// clock on by the host polling interval (MCSIM_HOST_POLL_NS). Costs are fixed per call, never wall
// time: the same program gets the same clocks on every run, whatever the host machine.
#pragma once

#include <cstdint>

namespace mcsim::driver::hostclock {

enum class Family : uint8_t {
  kFree,          // calls that queue nothing and wait for nothing: no cost
  kLaunch,        // cuLaunchKernel, cuLaunchKernelEx, cuLaunchCooperativeKernel
  kGraphLaunch,   // cuGraphLaunch
  kCopy,          // a copy's issue, asynchronous or blocking (cuMemcpy*)
  kMemset,        // a memset's issue (cuMemsetD*)
  kEventRecord,   // cuEventRecord, cuEventRecordWithFlags
  kStreamWait,    // cuStreamWaitEvent
  kStreamMemOp,   // cuStreamWaitValue*, cuStreamWriteValue*, cuStreamBatchMemOp
  kHostFunction,  // cuLaunchHostFunc, cuStreamAddCallback
  kQuery,         // cuStreamQuery, cuEventQuery
  kSynchronize,   // cuStreamSynchronize, cuEventSynchronize, cuCtxSynchronize
};
// The family of an entry point, by its name (as __func__ spells it, mcsim_impl_ and ABI suffixes
// allowed).
Family familyOf(const char* symbol);
// A family's cost in picoseconds, the default figure scaled by MCSIM_HOST_COST_PERCENT.
uint64_t costPs(Family f);
// Whether the clock is kept (MCSIM_HOST_COST_PERCENT is not 0).
bool enabled();

// The calling thread's clock (picoseconds of simulated time).
uint64_t nowPs();
// Every entry point (MCSIM_REQUIRE_INIT): the call is made at the thread's clock, which then
// moves on by `costPs`.
void charge(uint64_t costPs);
// The clock at which the thread's current call was made: the device work it queues starts no
// earlier (0 while the clock is off: no bound).
uint64_t callPs();
// The thread's clock after the current call's cost (0 while the clock is off): an event record's
// work starts no earlier.
uint64_t endPs();
// A blocking call waited until `ps`: the clock comes up to it.
void reached(uint64_t ps);
// A query found the work unfinished: the clock moves on by the host polling interval.
void polled();

}  // namespace mcsim::driver::hostclock

// Per entry point: its family's cost, looked up once.
#define MCSIM_CHARGE_HOST_()                                                                       \
  do {                                                                                             \
    static const uint64_t hostCost_ = ::mcsim::driver::hostclock::costPs(                          \
        ::mcsim::driver::hostclock::familyOf(__func__));                                           \
    ::mcsim::driver::hostclock::charge(hostCost_);                                                 \
  } while (0)
