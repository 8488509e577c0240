// Fault plans: rules of point, trigger and action, read from a small text format.
//
//   # one rule a line; ';' also separates rules (for the one-line MCSIM_FAULTS form)
//   POINT [FILTER...] : TRIGGER... -> ACTION [ARG...]
//
//   cuMulticastBindMem device=1,4,6 : nth=1 -> delay 7s return CUDA_ERROR_SYSTEM_NOT_READY
//   cuMulticastBindMem size>=64MiB : always -> return CUDA_ERROR_OUT_OF_MEMORY
//   cuMulticastAddDevice device=7 : always -> block
//   cuMemMap : nth=1 -> block until=5ms
//   fabric-manager : at=0 -> state initialising
//   multicast-slot : after=4 -> exhaust
//
// Points: a driver entry point by base name (cuMemCreate; a trailing * matches a prefix, so
// cuMulticast* matches them all), or one of fabric-manager, multicast-slot, imex, link, switch.
// Filters: device=LIST (the call's device: the one it names, else the current context's),
// rank=LIST (MCSIM_RANK of the process), gpu=N (links), and argument filters NAME OP VALUE on the
// arguments the entry point reports (fault_arguments.def): OP is one of = != < <= > >= & (any of
// the bits), VALUE an unsigned number (decimal, 0x hex, or with a byte unit: 4KiB, 2MiB, 1GiB,
// 1TiB), a cuda.h constant name (CU_MEM_HANDLE_TYPE_FABRIC, CU_DEVICE_ATTRIBUTE_..., CUDA_ERROR_...:
// the driver resolves them), or text for text arguments (symbol=cuMulticast*); = and != take a
// comma-separated list (any of / none of). Triggers (all must hold): nth=N (the Nth matching
// call), after=N (every matching call after the Nth), prob=P (drawn from the seeded source),
// at=TIME (simulated time at least TIME: 10us, 2ms, 0), max=K (at most K firings), always. With
// device=, nth/after/max count each listed device's calls on their own (nth=1: the first call of
// every listed device). Actions: return CUresult-name | delay TIME [wall] [then] return CUresult-name |
// block [name=ID] [until=TIME | for=TIME] | release ID | delay TIME |
// state not-started|initialising|ready|degraded|restarted | exhaust | absent | present | down | up.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fabric/fault_arguments.h"
#include "fabric/preset.h"

namespace mcsim::fabric {

enum class FaultPointKind { kEntryPoint, kFabricManager, kMulticastSlot, kImex, kLink, kSwitch };

enum class FaultActionKind {
  kReturn,   // the call returns `result` and changes nothing (after `timePs` of simulated time)
  kBlock,    // the call waits until released (by a release action, the API, or simulated time)
  kRelease,  // releases the blocked calls of the block rule named `label`
  kDelay,    // the call takes `timePs` of simulated time more
  kState,    // the fabric manager moves to `state`
  kExhaust,  // multicast slot allocation fails (OUT_OF_MEMORY at the bind)
  kAbsent,   // the IMEX channel is absent
  kPresent,  // the IMEX channel is present
  kDown,     // a link or switch goes down
  kUp,       // and comes back
};

// An argument filter: `size>=64MiB`, `numDevices=4,8`, `handleTypes&CU_MEM_HANDLE_TYPE_FABRIC`.
enum class ArgOp { kEq, kNe, kLt, kLe, kGt, kGe, kBits };
struct ArgValue {
  uint64_t number = 0;
  std::string symbol;  // a cuda.h constant name, resolved into `number` by the driver; or the text
                       // of a text argument (a trailing '*' matches a prefix)
};
struct ArgFilter {
  std::string name;
  ArgOp op = ArgOp::kEq;
  bool text = false;  // a text argument: compares `symbol`s
  std::vector<ArgValue> values;  // = and !=: any of / none of; the other operators: one value
};

struct FaultRule {
  // Where it comes from, for messages and for the reproduction command.
  std::string file;
  int line = 0;
  std::string text;

  FaultPointKind point = FaultPointKind::kEntryPoint;
  std::string entry;        // base name, or a prefix when `prefix`
  bool prefix = false;
  std::vector<int> devices;  // empty: any
  std::vector<int> ranks;    // empty: any
  int gpu = -1;              // link rules: the GPU whose links go down; switch rules: the NVSwitch (id=); -1: all
  std::vector<ArgFilter> args;  // entry points: every filter must hold

  uint64_t nth = 0, after = 0, max = 0;  // 0: not set
  double probability = -1;               // < 0: not set
  int64_t atPs = -1;                     // < 0: not set
  bool always = false;

  FaultActionKind action = FaultActionKind::kReturn;
  std::string result;   // kReturn: the CUresult name (the driver resolves it)
  std::string label;    // kBlock name=..., kRelease target; link rules: links=, as "0,1,2" (faultRuleLinks)
  uint64_t timePs = 0;  // kDelay, and kReturn's delay before it returns ("delay 7s return ...")
  bool wallClock = false; // "delay TIME wall": the call also waits TIME of wall-clock time
  int64_t untilPs = -1; // kBlock until=TIME: released when simulated time reaches it; < 0: never
  int64_t forPs = -1;   // kBlock for=TIME: released TIME after the call arrives; < 0: never
  std::string state;    // kState
};

// Parses a plan. `origin` names the text in errors (a file path, or "MCSIM_FAULTS"). Throws
// InputError with the line and the problem.
std::vector<FaultRule> parseFaultPlan(const std::string& text, const std::string& origin);

// Refuses (InputError at the rule's line) a rule that names a device or GPU the node lacks: a
// plan is written for a node of `gpuCount` GPUs, and a rule that can never fire is a mistake.
void checkFaultPlanFor(const std::vector<FaultRule>& rules, const Preset& preset);
// A link rule's links= (empty: every link of the GPU).
std::vector<int> faultRuleLinks(const FaultRule& r);

// The text of the plan file at `path` (a regular file of at most files::kMaxTextInputBytes).
// Throws InputError "PATH: cannot read the fault plan: WHY" when it cannot be read.
std::string readFaultPlanFile(const std::string& path);

// Where simulated time ends for fault plans: 2^63 ps (about 107 days), the largest time a plan's
// at= and until= can name. A delay or a block for= that would pass it stops there.
constexpr uint64_t kEndOfSimulatedTimePs = uint64_t{1} << 63;

// A simulated duration: "0", "150ns", "10us", "2.5ms", "1s". false when malformed.
bool parseDuration(const std::string& s, uint64_t* ps);
// An unsigned argument value: "0", "4096", "0x1000", "2MiB", "1.5GiB" (units KiB MiB GiB TiB, and
// B). false when malformed, fractional in bytes, or beyond 2^64 - 1.
bool parseArgumentNumber(const std::string& s, uint64_t* v);
// Whether an argument value passes a filter (numbers; text filters use argumentTextMatches).
bool argumentMatches(const ArgFilter& f, uint64_t value);
bool argumentTextMatches(const ArgFilter& f, const char* text);

}  // namespace mcsim::fabric
