#include "fabric/fault_injector.h"

#include <algorithm>
#include <cctype>

namespace mcsim::fabric {

FaultInjector::FaultInjector(std::vector<FaultRule> rules, uint64_t seed)
    : rules_(std::move(rules)),
      counts_(rules_.size()),
      perDevice_(rules_.size()),
      streams_(rules_.size()),
      seed_(seed) {
  for (const FaultRule& r : rules_) usesTime_ = usesTime_ || r.atPs >= 0;
}

FaultRuleCounts& FaultInjector::triggerCounts(size_t i, const FaultEvent& e) {
  return rules_[i].devices.empty() ? counts_[i] : perDevice_[i][e.device];
}

model::RandomStream& FaultInjector::stream(size_t i, const FaultEvent& e) {
  // One stream per listed device for rules that name devices; one for the rule otherwise (named
  // as before per-device streams existed, so that plans without device= draw as they always did).
  const int key = rules_[i].devices.empty() ? -1 : e.device;
  auto& byDevice = streams_[i];
  auto it = byDevice.find(key);
  if (it == byDevice.end()) {
    std::string name = "fault-rule-" + std::to_string(i);
    if (key >= 0) name += "-device-" + std::to_string(key);
    it = byDevice.emplace(key, model::deriveStream(seed_, name)).first;
  }
  return it->second;
}

std::string FaultInjector::baseName(const std::string& symbol) {
  std::string s = symbol;
  for (const char* suffix : {"_ptds", "_ptsz"}) {
    const std::string x(suffix);
    if (s.size() > x.size() && s.compare(s.size() - x.size(), x.size(), x) == 0) s.resize(s.size() - x.size());
  }
  // A version suffix: _v2, _v3, ...
  const auto v = s.rfind("_v");
  if (v != std::string::npos && v + 2 < s.size() &&
      std::all_of(s.begin() + static_cast<long>(v) + 2, s.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); })) {
    s.resize(v);
  }
  return s;
}

bool FaultInjector::matches(const FaultRule& r, const FaultEvent& e) const {
  if (r.point != e.point) return false;
  if (r.point == FaultPointKind::kEntryPoint) {
    if (r.prefix ? e.entry.compare(0, r.entry.size(), r.entry) != 0 : e.entry != r.entry) return false;
  }
  if (!r.devices.empty() && std::find(r.devices.begin(), r.devices.end(), e.device) == r.devices.end()) return false;
  if (!r.ranks.empty() && std::find(r.ranks.begin(), r.ranks.end(), e.rank) == r.ranks.end()) return false;
  return argumentsMatch(r, e);
}

bool FaultInjector::argumentsMatch(const FaultRule& r, const FaultEvent& e) {
  // Every filter must hold. A call that does not report the argument (another member of a prefix
  // family), or reports it absent (a struct it was not given), does not match.
  for (const ArgFilter& f : r.args) {
    const FaultArgument* a = nullptr;
    for (size_t i = 0; i < e.argCount && a == nullptr; ++i) {
      if (f.name == e.args[i].name) a = &e.args[i];
    }
    if (a == nullptr || !a->present) return false;
    if (f.text ? !argumentTextMatches(f, a->text) : !argumentMatches(f, a->value)) return false;
  }
  return true;
}

std::optional<size_t> FaultInjector::consult(const FaultEvent& e) {
  std::optional<size_t> chosen;
  for (size_t i = 0; i < rules_.size(); ++i) {
    const FaultRule& r = rules_[i];
    if (!matches(r, e)) continue;
    FaultRuleCounts& total = counts_[i];
    FaultRuleCounts& c = triggerCounts(i, e);  // `total` itself unless the rule names devices
    if (&c != &total) ++total.matched;
    const uint64_t m = ++c.matched;
    if (chosen) continue;  // an earlier rule fires; later ones only count the event
    bool holds = true;
    if (r.nth != 0) holds = holds && m == r.nth;
    if (r.after != 0) holds = holds && m > r.after;
    if (r.atPs >= 0) holds = holds && e.nowPs >= static_cast<uint64_t>(r.atPs);
    if (r.max != 0) holds = holds && c.fired < r.max;
    // Drawn last, and only when everything else holds, so that a rule's draws depend on nothing
    // but the events that could fire it.
    if (holds && r.probability >= 0) holds = stream(i, e).uniform() < r.probability;
    if (!holds) continue;
    ++c.fired;
    if (&c != &total) ++total.fired;
    chosen = i;
  }
  return chosen;
}

bool FaultInjector::isReleased(const std::string& label) const {
  auto it = released_.find(label);
  return it != released_.end() && it->second;
}

std::vector<std::string> unfiredRuleLines(const std::vector<FaultRule>& rules, const std::vector<FaultRuleCounts>& counts) {
  std::vector<std::string> out;
  for (size_t i = 0; i < rules.size() && i < counts.size(); ++i) {
    if (counts[i].fired != 0) continue;
    out.push_back("fault rule at " + rules[i].file + ":" + std::to_string(rules[i].line) + " never fired (" +
                  std::to_string(counts[i].matched) + (counts[i].matched == 1 ? " matching event): " : " matching events): ") +
                  rules[i].text);
  }
  return out;
}

}  // namespace mcsim::fabric
