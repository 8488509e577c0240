// Evaluates a fault plan: which rule, if any, fires for an event at a point. Deterministic: the
// same sequence of events and seed fires the same rules (each rule draws from its own stream
// derived from MCSIM_SEED, and only when its other triggers hold).
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
  uint64_t nowPs = 0; // simulated time
};

struct FaultRuleCounts {
  uint64_t matched = 0;  // events at the rule's point that passed its filters
  uint64_t fired = 0;
};

class FaultInjector {
 public:
  FaultInjector() = default;
  FaultInjector(std::vector<FaultRule> rules, uint64_t seed);

  bool empty() const { return rules_.empty(); }
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
  std::vector<FaultRule> rules_;
  std::vector<FaultRuleCounts> counts_;
  std::vector<model::RandomStream> streams_;
  std::map<std::string, bool> released_;
};

}  // namespace mcsim::fabric
