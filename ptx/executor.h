// Runs a kernel of a parsed module (ptx/ir.h) on the CPU: a warp-wide interpreter.
//
// Execution: a launch is a run (Executor::start) that executes a bounded number of warp
// instructions at a time (Run::advance) and says whether it finished, faulted, made progress or
// waits. `LaunchConfig::residentBlocks` blocks are resident at once (the GPU's occupancy); they
// progress together, in slot order, and a block beyond residency starts in the slot of the block
// that finished. Within a round every warp of every resident block takes a turn in (slot, warp)
// order, running until it waits at a barrier, exits or has run a quantum of instructions, so
// that warps and blocks that wait for each other through memory progress. A warp that spins (a
// quantum of loads of a few words and nothing written) is parked until memory changes.
// Each instruction runs for the
// warp's active lanes at once over registers laid out lane-contiguously (32 64-bit values per
// register). Divergence: every lane has its own program counter and the warp runs the lanes at
// the lowest one (min-PC scheduling); lanes that branch apart reconverge where their paths meet,
// which for the forward branches and backward loop edges nvcc emits is the immediate
// post-dominator. docs/ptx.md has the details and what is not implemented.
//
// Deterministic: nothing depends on host time or addresses; %clock64 counts the warp's
// instructions and %globaltimer is LaunchConfig::globalTimerNs plus that count, or, for a caller
// that keeps time (LaunchConfig::warpInstructionPs), that caller's clock (Executor::setClock).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ptx/ir.h"
#include "ptx/memory.h"

namespace mcsim::ptx {

struct Dim3 {
  uint32_t x = 1, y = 1, z = 1;
};

struct LaunchConfig {
  Dim3 grid, block;
  uint32_t dynamicShared = 0;
  std::vector<uint8_t> params;   // the kernel's parameters in its .param layout (Function::params)
  int device = 0;                // passed to GlobalMemory::resolve
  uint32_t smCount = 132;        // %nsmid; %smid is the block's linear index modulo this
  uint64_t globalTimerNs = 0;    // %globaltimer at the launch
  // The time one warp instruction of the kernel takes to issue, as a caller that times the kernel
  // counts it (the SMs the grid occupies). Not 0: %globaltimer reads the caller's clock
  // (Executor::setClock) moved on by the issue time of the instructions since it was set, and by
  // the warp's nanosleep requests. 0: %globaltimer is globalTimerNs plus the warp's instructions.
  double warpInstructionPs = 0;
  uint64_t maxWarpInstructions = 0;  // 0: unlimited; else a kernel running longer fails (kTimeout)
  uint32_t maxSharedBytes = 232448;  // shared memory a block may have (sm_90: 227 KiB)
  // Where the module's .global variables live in device memory (0: in the executor's storage).
  // Their addresses (kModuleGlobalWindow + offset) then reach global memory at this base.
  uint64_t moduleGlobalsVa = 0;
  // Blocks resident at once (the device's SMs times the blocks an SM holds of this kernel, as
  // the driver's occupancy calculation gives it); 0: every block of the grid.
  uint64_t residentBlocks = 0;
  // The device printf FIFO's size (CU_LIMIT_PRINTF_FIFO_SIZE; 1 MiB by default, as on a GPU):
  // it is circular, so when a launch's printf records outgrow it the oldest are lost.
  uint64_t printfFifoBytes = 1 << 20;
};

// What Run::advance did.
enum class RunState : uint8_t {
  kFinished,  // every block has exited: LaunchResult is final
  kFaulted,   // a fault stopped the kernel (LaunchResult::fault, message)
  kProgress,  // it ran and has more to do
  kWaiting,   // every warp left waits for memory to change (spinning on a word; see Run::wake)
};

enum class Fault : uint8_t {
  kNone,
  kInvalidLaunch,      // no such kernel, bad dimensions, parameter bytes of the wrong size
  kIllegalAddress,     // unmapped, out of a space's bounds, no access right, a write to const/param
  kMisalignedAddress,  // an access not aligned to its size
  kTrap,               // trap: the kernel stopped itself
  kBarrierDeadlock,    // threads wait at a barrier that can never complete
  kTimeout,            // more than maxWarpInstructions
  kAssert,             // a device assert failed (__assertfail): LaunchResult::assertOutput says which
  kInvalidPc,          // brx.idx with an index outside its .branchtargets list (undefined in the ISA)
  kNvlink,             // an access over an NVLink path that is down (an uncorrectable NVLink error)
  kIllegalInstruction,  // an instruction the GPU refuses as it runs (an mbarrier operation on memory
                        // outside shared memory: CUDA_ERROR_ILLEGAL_INSTRUCTION on a real H200)
};
const char* faultName(Fault f);

struct LaunchResult {
  Fault fault = Fault::kNone;
  // For a fault: what, where (kernel, block, thread, instruction, PTX line, source line) and the
  // address, e.g. "kernel 'k' block (0,0,0) thread (5,0,0): illegal address 0x10 (unmapped) in
  // 'ld.global.f32' at k.ptx:31 (k.cu:4)".
  std::string message;
  uint64_t warpInstructions = 0;
  uint64_t threadInstructions = 0;
  // Of warpInstructions, those of turns after which the warp was parked as spinning (a whole
  // quantum that changed nothing and re-read a few words): polling, not work.
  uint64_t pollingInstructions = 0;
  // Bytes of global memory (GlobalMemory) the kernel's lanes read, and wrote or updated atomically.
  uint64_t globalBytesRead = 0;
  uint64_t globalBytesWritten = 0;
  // What the kernel's printf calls wrote (vprintf), in the order the executor ran them: warps in
  // their turns, the lanes of one call in ascending order; only what the FIFO still held.
  std::string printfOutput;
  // A failed assert's lines, one a failing thread, as the CUDA runtime prints them to stderr:
  // "k.cu:12: void k(int*): block: [0,0,0], thread: [3,0,0] Assertion `x > 0` failed."
  std::string assertOutput;
};

class Executor {
 public:
  // `module` and `memory` must outlive the executor. The module's .global and .const variables
  // are copied into the executor's storage, which persists across launches. One launch at a time.
  Executor(const Module& module, GlobalMemory& memory);
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // Runs the whole launch. A kernel whose every warp ends up waiting for memory that nothing
  // will change (no other agent runs here) fails with kTimeout and a report of what it waits on.
  LaunchResult launch(const std::string& kernel, const LaunchConfig& config);

  // A launch to be run piecewise (Run::advance), for a caller that interleaves several kernels.
  // A launch the executor refuses (no such kernel, bad dimensions ...) gives a run whose first
  // advance() reports kFaulted with kInvalidLaunch. `config` is copied.
  class Run;
  struct RunDeleter {
    void operator()(Run* r) const;
  };
  using RunPtr = std::unique_ptr<Run, RunDeleter>;
  RunPtr start(const std::string& kernel, const LaunchConfig& config);
  // Run a piece of `run`: about `budget` warp instructions (a warp's turn is not cut short).
  static RunState advance(Run& run, uint64_t budget);
  // Parked warps of `run` look at memory again on their next turn: something that could have
  // changed what they wait on happened outside the run (another kernel's, a copy's, the host's write).
  static void wake(Run& run);
  // The caller's simulated time (ns) now, before an advance(): %globaltimer's clock
  // (LaunchConfig::warpInstructionPs).
  static void setClock(Run& run, uint64_t ns);
  static const LaunchResult& result(const Run& run);
  // Whether the last advance() changed memory others could observe (a global store, or an atomic
  // that changed its word): the caller wakes other runs waiting on memory.
  static bool wroteGlobal(const Run& run);
  // For a run in kWaiting: what each waiting block waits on, one line each: the word's address,
  // the value it holds and the value the warp compares it with, the block and the PTX line. For a
  // spinning run, the same, a warp that spins while it writes saying so.
  static std::string describeWait(const Run& run);
  // Whether the last advance() of a run in kProgress or kWaiting left it able to do nothing but
  // spin until memory changes: every warp left is parked or waits at a barrier, or spins on a few
  // words that held the same values over its last two turns while writing only the same few words
  // (an iteration counter: a spin the parking rule does not take, docs/ptx.md "Spin parking"; a
  // turn may run from one timed fence to the next), at least one warp does the last, and no block
  // is still to start. The node reports a hang when
  // every kernel stays so for its grace period with nothing else running.
  static bool spinning(const Run& run);
  // Whether the last advance() made progress: a warp took a turn that was neither parked as a spin
  // nor a spin that writes (above), or a block started. A kernel released from a wait, which may
  // work and wait again within one advance (kWaiting before and after), made progress so.
  static bool progressed(const Run& run);

  // The module's .global variables (their address is kModuleGlobalWindow + offset).
  std::vector<uint8_t>& moduleGlobals() { return globals_; }

 private:
  const Module& module_;
  GlobalMemory& memory_;
  std::vector<uint8_t> globals_;
  std::vector<uint8_t> consts_;
};

// The bytes of global memory a thread of `fn` loads before it uses any of them: the most, over the
// straight-line runs of its code (a run ends at a backward branch, a barrier or an exit; forward
// branches, which nvcc emits around the guarded loads of an unrolled loop, do not end it), of
// global and generic ld and multimem.ld_reduce bytes issued before an instruction reads a register
// one of them loaded, and cp.async / cp.async.bulk bytes from global memory before a wait (for the
// copies or an mbarrier phase). What the kernel's unroll keeps in flight, for timing it (0: no such load).
uint32_t loadBytesInFlight(const Function& fn);

// Packs arguments in the kernel's .param layout: args[i] points at parameter i's bytes, as the
// driver's cuLaunchKernel receives them.
std::vector<uint8_t> packParams(const Function& fn, const void* const* args);

}  // namespace mcsim::ptx
