// The node's fault plan (fault_service.h).
#include "fabric/fault_service.h"

#include <chrono>
#include <cstdint>
#include <thread>

#include "fabric/multicast_service.h"
#include "model/engine.h"

namespace mcsim::fabric {

FaultService::FaultService(FabricManager& fabric, TeamWaiter& waiter, FabricHealth& health,
                           const MulticastService& waits, model::Engine& engine)
    : fabric_(fabric), waiter_(waiter), health_(health), waits_(waits), engine_(engine) {}

void FaultService::install(std::vector<FaultRule> rules, uint64_t seed) {
  injector_ = FaultInjector(std::move(rules), seed);
  active_.store(!injector_.empty(), std::memory_order_release);
}

bool FaultService::vetoSlot() {
  FaultEvent e;
  e.point = FaultPointKind::kMulticastSlot;
  // The rank of the bind that asks for the slot (it went through onEntry first), so that rank=
  // filters on multicast-slot rules match; they never did with the rank left unset.
  e.rank = rank_;
  if (injector_.usesTime()) e.nowPs = engine_.nowPs();
  const auto fired = injector_.consult(e);
  return fired && injector_.rule(*fired).action == FaultActionKind::kExhaust;
}

Node::FaultOutcome FaultService::onEntry(OrderedLock& lock, const char* symbol, int device, int rank,
                                         const FaultArgument* args, size_t argCount, bool fabricMoment) {
  Node::FaultOutcome out;
  if (injector_.empty()) return out;
  rank_ = rank;
  FaultEvent e;
  e.rank = rank;
  if (injector_.usesTime()) e.nowPs = engine_.nowPs();
  // Fabric-level rules see every driver call that acts on the node as a moment at which they
  // may fire.
  for (FaultPointKind p : {FaultPointKind::kFabricManager, FaultPointKind::kImex, FaultPointKind::kLink,
                           FaultPointKind::kSwitch}) {
    if (!fabricMoment) break;
    e.point = p;
    if (auto i = injector_.consult(e)) applyFabricRule(injector_.rule(*i));
  }
  e.point = FaultPointKind::kEntryPoint;
  e.entry = FaultInjector::baseName(symbol);
  e.device = device;
  e.args = args;
  e.argCount = argCount;
  const auto fired = injector_.consult(e);
  if (!fired) return out;
  const FaultRule& r = injector_.rule(*fired);
  switch (r.action) {
    case FaultActionKind::kReturn:
      // "delay 7s return ...": the call takes its time before it fails (a stalled manager).
      if (r.timePs > 0) delay(r.timePs, r.wallClock, lock);
      out.fail = true;
      out.result = r.result;
      return out;
    case FaultActionKind::kRelease:
      injector_.release(r.label);
      waiter_.progress();
      return out;
    case FaultActionKind::kDelay:
      delay(r.timePs, r.wallClock, lock);
      return out;
    case FaultActionKind::kBlock:
      return block(r, symbol, device, lock);
    default:
      return out;
  }
}

void FaultService::release(const std::string& label) {
  injector_.release(label);
  waiter_.progress();
}

// A `delay` (or the delay of "delay T return ...") : simulated time passes for the call. Timed
// blocks may end meanwhile, so waiters look again.
void FaultService::delay(uint64_t ps, bool wall, OrderedLock& lock) {
  // A delay past the end of simulated time stops there (past 2^64 ps it wrapped round to a time
  // already past, and the delay was dropped without a word).
  const uint64_t wallPs = ps;
  const uint64_t now = engine_.nowPs();
  if (now < kEndOfSimulatedTimePs) {
    if (ps > kEndOfSimulatedTimePs - now) ps = kEndOfSimulatedTimePs - now;
    engine_.run([ps] { return ps; });
    waiter_.progress();
  }
  if (!wall) return;
  // Other calls go on meanwhile, as they would beside a stalled call on a real system.
  lock.unlock();
  std::this_thread::sleep_for(std::chrono::nanoseconds(wallPs / 1000));
  lock.lock();
}

// A call held by a `block` rule: until its label is released (a release rule, the API), or
// simulated time reaches the rule's until= (for=: that long after the call arrived), whichever
// comes first; or until the wait is given up as a deadlock or hang.
Node::FaultOutcome FaultService::block(const FaultRule& r, const char* symbol, int device, OrderedLock& lock) {
  Node::FaultOutcome out;
  const std::string label = r.label;
  uint64_t wakeAt = TeamWaiter::kNoDeadline;
  if (r.untilPs >= 0) wakeAt = static_cast<uint64_t>(r.untilPs);
  if (r.forPs >= 0) {
    const uint64_t now = engine_.nowPs();
    const auto forPs = static_cast<uint64_t>(r.forPs);
    wakeAt = now >= kEndOfSimulatedTimePs || forPs > kEndOfSimulatedTimePs - now ? kEndOfSimulatedTimePs : now + forPs;
  }
  std::string releasedBy;
  if (!label.empty()) releasedBy = "'release " + label + "' or mcsim::api::releaseFault";
  if (wakeAt != TeamWaiter::kNoDeadline) {
    releasedBy += (releasedBy.empty() ? "" : ", or ") + std::string("simulated time ") + std::to_string(wakeAt) + " ps";
  }
  const std::string who = std::string(symbol) + (device >= 0 ? " on device " + std::to_string(device) : "") +
                          " (held by the fault rule at " + r.file + ":" + std::to_string(r.line) +
                          (releasedBy.empty() ? ", unnamed: never released)" : ", released by " + releasedBy + ")");
  // A block counts as a call blocked in the driver, so that a plan that holds the thread which
  // would complete a team shows up as the deadlock it is. Its wait object is kFaultHold;
  // describeWait names both kinds, since whichever waiter notices the deadlock writes the report
  // for all (with a describer of its own, a team waiter's report called the fault hold "a
  // released multicast object", a fault waiter's called every team a fault hold).
  const Status s = waiter_.wait(
      lock, who, MulticastService::kFaultHold,
      [&] {
        return (!label.empty() && injector_.isReleased(label)) ||
               (wakeAt != TeamWaiter::kNoDeadline && engine_.nowPs() >= wakeAt);
      },
      [&](uint64_t object) { return waits_.describeWait(object); }, wakeAt);
  if (s != Status::kOk) {
    out.fail = true;
    out.status = s;
  }
  return out;
}

namespace {

bool sameHealth(const model::LinkHealth& a, const model::LinkHealth& b) {
  for (int s = 0; s < a.switches(); ++s) {
    if (a.switchUp(s) != b.switchUp(s)) return false;
  }
  for (int g = 0; g < a.gpus(); ++g) {
    for (int l = 0; l < a.linksPerGpu(); ++l) {
      if (a.linkActive(g, l) != b.linkActive(g, l) || a.liveLinks(g) != b.liveLinks(g)) return false;
    }
  }
  return true;
}

}  // namespace

// What a fired fabric-level rule does to the node.
void FaultService::applyFabricRule(const FaultRule& r) {
  switch (r.action) {
    case FaultActionKind::kState:
      if (r.state == "restarted") fabric_.restart();
      else if (r.state == "not-started") fabric_.setState(FabricManagerState::kNotStarted);
      else if (r.state == "initialising") fabric_.setState(FabricManagerState::kInitialising);
      else if (r.state == "ready") fabric_.setState(FabricManagerState::kReady);
      else fabric_.setState(FabricManagerState::kDegraded);
      break;
    case FaultActionKind::kRelease: injector_.release(r.label); break;
    case FaultActionKind::kAbsent: health_.imexPresent.store(false); break;
    case FaultActionKind::kPresent: health_.imexPresent.store(true); break;
    case FaultActionKind::kDown:
    case FaultActionKind::kUp: {
      const bool up = r.action == FaultActionKind::kUp;
      model::LinkHealth& h = health_.links;
      const model::LinkHealth before = h;
      if (r.point == FaultPointKind::kSwitch) {
        // id=N: that NVSwitch chip; without it, every one.
        for (int s = 0; s < h.switches(); ++s) {
          if (r.gpu < 0 || s == r.gpu) h.setSwitch(s, up);
        }
      } else {
        // gpu=N links=...: those links of that GPU; gpu=N: all of its links; neither: every GPU's.
        std::vector<int> links = faultRuleLinks(r);
        if (links.empty()) {
          for (int l = 0; l < h.linksPerGpu(); ++l) links.push_back(l);
        }
        for (int g = 0; g < h.gpus(); ++g) {
          if (r.gpu >= 0 && g != r.gpu) continue;
          for (int l : links) h.setLink(g, l, up);
        }
      }
      // The model hears of changes only: a rule that fires at every call (`always`) and finds the
      // links as it leaves them posts nothing.
      if (onHealthChanged_ && !sameHealth(before, h)) onHealthChanged_(h);
      break;
    }
    default: break;
  }
  waiter_.progress();
}

}  // namespace mcsim::fabric
