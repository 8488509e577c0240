// Fault plans: rules of point, trigger and action, read from a small text format.
//
//   # one rule a line; ';' also separates rules (for the one-line MCSIM_FAULTS form)
//   POINT [FILTER...] : TRIGGER... -> ACTION [ARG...]
//
//   cuMulticastBindMem device=1,4,6 : nth=1 -> return CUDA_ERROR_SYSTEM_NOT_READY
//   cuMulticastAddDevice device=7 : always -> block
//   fabric-manager : at=0 -> state initialising
//   multicast-slot : after=4 -> exhaust
//
// Points: a driver entry point by base name (cuMemCreate; a trailing * matches a prefix, so
// cuMulticast* matches them all), or one of fabric-manager, multicast-slot, imex, link, switch.
// Filters: device=LIST (the call's device: the one it names, else the current context's),
// rank=LIST (MCSIM_RANK of the process), gpu=N (links). Triggers (all must hold): nth=N (the
// Nth matching call), after=N (every matching call after the Nth), prob=P (drawn from the seeded
// source), at=TIME (simulated time at least TIME: 10us, 2ms, 0), max=K (at most K firings),
// always. With device=, nth/after/max count each listed device's calls on their own (nth=1: the
// first call of every listed device). Actions: return CUresult-name | block [name=ID] | release ID | delay TIME |
// state not-started|initialising|ready|degraded|restarted | exhaust | absent | present | down | up.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mcsim::fabric {

enum class FaultPointKind { kEntryPoint, kFabricManager, kMulticastSlot, kImex, kLink, kSwitch };

enum class FaultActionKind {
  kReturn,   // the call returns `result` and changes nothing
  kBlock,    // the call waits until released (by a release action or the API)
  kRelease,  // releases the blocked calls of the block rule named `label`
  kDelay,    // the call takes `timePs` of simulated time more
  kState,    // the fabric manager moves to `state`
  kExhaust,  // multicast slot allocation fails (OUT_OF_MEMORY at the bind)
  kAbsent,   // the IMEX channel is absent
  kPresent,  // the IMEX channel is present
  kDown,     // a link or switch goes down
  kUp,       // and comes back
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
  int gpu = -1;              // links: the GPU whose links go down; -1: all

  uint64_t nth = 0, after = 0, max = 0;  // 0: not set
  double probability = -1;               // < 0: not set
  int64_t atPs = -1;                     // < 0: not set
  bool always = false;

  FaultActionKind action = FaultActionKind::kReturn;
  std::string result;   // kReturn: the CUresult name (the driver resolves it)
  std::string label;    // kBlock name=..., kRelease target
  uint64_t timePs = 0;  // kDelay
  std::string state;    // kState
};

// Parses a plan. `origin` names the text in errors (a file path, or "MCSIM_FAULTS"). Throws
// InputError with the line and the problem.
std::vector<FaultRule> parseFaultPlan(const std::string& text, const std::string& origin);

// A simulated duration: "0", "150ns", "10us", "2.5ms", "1s". false when malformed.
bool parseDuration(const std::string& s, uint64_t* ps);

}  // namespace mcsim::fabric
