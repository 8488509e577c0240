// The node's fault plan: its evaluation at every driver call, what its rules do, and what they
// did to the fabric (FabricHealth).
//
// Before a driver call does anything, the driver asks the node what the plan says about it
// (Node::onEntry): a rule may fail the call, delay it in simulated time, hold it until a label is
// released or a simulated time comes (a hold waits like a team wait, and counts as a blocked
// call for deadlock detection), or, at fabric-level points, change the fabric manager's state,
// take IMEX, links or switches down and up. The switch slot point is consulted by the fabric
// manager itself (slot veto).
//
// Guarded by the node's lock (node_host.cpp), but for whether a plan is installed and whether an
// IMEX channel exists, which the driver reads without it (atomics).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "fabric/fault_injector.h"
#include "fabric/node.h"
#include "fabric/team_wait.h"
#include "model/link_health.h"
#include "model/ordered_mutex.h"

namespace mcsim::fabric {

class MulticastService;

// What fault plans did to the fabric: read by the calls that use it (exports, multicast, device
// work). Under the node's lock, but `imexPresent`.
struct FabricHealth {
  // Whether an IMEX channel exists: the preset's answer until a fault plan changes it.
  std::atomic<bool> imexPresent{false};
  // Which NVLinks and NVSwitch chips are up (model/link_health.h).
  model::LinkHealth links;
};

class FaultService {
 public:
  // `waits` describes what a blocked call waits for in reports (a hold, or a team); `engine` is
  // the node's simulation, whose clock times rules and delays.
  FaultService(FabricManager& fabric, TeamWaiter& waiter, FabricHealth& health,
               const MulticastService& waits, model::Engine& engine);

  bool active() const { return active_.load(std::memory_order_acquire); }
  void install(std::vector<FaultRule> rules, uint64_t seed);
  // Node::onEntry, with the node's `lock` held (a hold waits on it).
  Node::FaultOutcome onEntry(OrderedLock& lock, const char* symbol, int device, int rank, const FaultArgument* args,
                             size_t argCount, bool fabricMoment);
  void release(const std::string& label);
  std::vector<FaultRuleCounts> counts() const { return injector_.counts(); }
  std::vector<FaultRule> rules() const { return injector_.rules(); }
  // Called with the fabric's new health each time a link or switch rule changes it (the node
  // hands it to the timing model, in admission order).
  void setOnHealthChanged(std::function<void(const model::LinkHealth&)> fn) { onHealthChanged_ = std::move(fn); }
  // The multicast-slot point: whether the plan denies the switch group slot a bind asks for.
  bool vetoSlot();

 private:
  // `wall`: the call then also waits that long in wall-clock time, with `lock` released meanwhile.
  void delay(uint64_t ps, bool wall, OrderedLock& lock);
  Node::FaultOutcome block(const FaultRule& r, const char* symbol, int device, OrderedLock& lock);
  void applyFabricRule(const FaultRule& r);

  FabricManager& fabric_;
  TeamWaiter& waiter_;
  FabricHealth& health_;
  const MulticastService& waits_;
  model::Engine& engine_;
  FaultInjector injector_;
  std::atomic<bool> active_{false};
  std::function<void(const model::LinkHealth&)> onHealthChanged_;
  int rank_ = -1;  // MCSIM_RANK as the driver last passed it to onEntry
};

}  // namespace mcsim::fabric
