// Evaluates a fault plan: which rule, if any, fires for an event at a point. Deterministic: the
// same sequence of events and seed fires the same rules (each rule draws from its own stream
// derived from MCSIM_SEED, one per listed device when it names devices, and only when its other
// triggers hold).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "fabric/fault_plan.h"
#include "model/random.h"

namespace mcsim::fabric {

struct FaultEvent {
  FaultPointKind point = FaultPointKind::kEntryPoint;
  std::string entry;  // entry points: the base name (cuMulticastBindMem)
  int device = -1;    // the call's device, -1 when it has none
  int rank = -1;      // MCSIM_RANK of the calling process, -1 when unset
  uint64_t nowPs = 0; // simulated time (read only when some rule has an at= trigger: usesTime)
  // Entry points: the arguments the call reports (fault_arguments.def), for argument filters.
  const FaultArgument* args = nullptr;
  size_t argCount = 0;
};

struct FaultRuleCounts {
  uint64_t matched = 0;  // events at the rule's point that passed its filters
  uint64_t fired = 0;
};

// A rule that names devices (device=1,4,6) keeps its trigger state for each of them: nth/after/max
// count each listed device's calls ("cuMulticastBindMem device=1,4,6 : nth=1" fails the first
// bind of every listed device, 3 of 8 ranks as in the field report, not only the first of the
// three to get there), and prob= draws from a stream per device, so that in a program whose
// threads each drive one device the draws do not depend on how the threads interleave. A rule
// without a device filter counts every matching call together ("the 3rd cuMemCreate") and draws
// from one stream: in a multi-threaded program its draws follow the order of the calls (list the
// devices to make them independent of it).

// One line for each rule that never fired ("fault rule at FILE:LINE never fired (N matching
// events): TEXT"), in plan order: reported when the plan's run ends, so that a plan aimed at the
// wrong call (a misspelt filter, a device the program never uses) is noticed.
std::vector<std::string> unfiredRuleLines(const std::vector<FaultRule>& rules, const std::vector<FaultRuleCounts>& counts);

class FaultInjector {
 public:
  FaultInjector() = default;
  FaultInjector(std::vector<FaultRule> rules, uint64_t seed);

  bool empty() const { return rules_.empty(); }
  // Whether some rule has an at= trigger, so that events need the simulated time. Reading it
  // starts the engine, which a plan without time triggers has no reason to do at cuInit (the
  // engine's thread starting there, sanitizer pipes and all, would race with what a program
  // counts right after cuInit, such as its open descriptors).
  bool usesTime() const { return usesTime_; }
  // Every rule counts the event if it matches; the first (in plan order) whose triggers hold
  // fires, and its index is returned.
  std::optional<size_t> consult(const FaultEvent& e);
  const FaultRule& rule(size_t i) const { return rules_[i]; }
  const std::vector<FaultRule>& rules() const { return rules_; }
  const std::vector<FaultRuleCounts>& counts() const { return counts_; }

  // Blocking rules wait for their label to be released (by a release rule or the API).
  void release(const std::string& label) { released_[label] = true; }
  bool isReleased(const std::string& label) const;

  static std::string baseName(const std::string& symbol);

 private:
  bool matches(const FaultRule& r, const FaultEvent& e) const;
  static bool argumentsMatch(const FaultRule& r, const FaultEvent& e);
  // The counts the triggers of rule `i` use for event `e`, and the stream it draws from (above).
  FaultRuleCounts& triggerCounts(size_t i, const FaultEvent& e);
  model::RandomStream& stream(size_t i, const FaultEvent& e);
  std::vector<FaultRule> rules_;
  std::vector<FaultRuleCounts> counts_;  // totals, for reports
  std::vector<std::map<int, FaultRuleCounts>> perDevice_;  // rules that name devices: by device
  std::vector<std::map<int, model::RandomStream>> streams_;  // by listed device (-1: the rule's one)
  uint64_t seed_ = 0;
  bool usesTime_ = false;
  std::map<std::string, bool> released_;
};

}  // namespace mcsim::fabric
