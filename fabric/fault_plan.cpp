#include "fabric/fault_plan.h"

#include <cstdlib>
#include <sstream>

#include "fabric/json_source.h"

namespace mcsim::fabric {

namespace {

std::vector<std::string> words(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r") - b + 1);
}

bool parseUnsigned(const std::string& s, uint64_t* v) {
  if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos || s.size() > 18) return false;
  *v = std::strtoull(s.c_str(), nullptr, 10);
  return true;
}

bool parseIntList(const std::string& s, std::vector<int>* out) {
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');) {
    uint64_t v = 0;
    if (!parseUnsigned(item, &v) || v > 1 << 20) return false;
    out->push_back(static_cast<int>(v));
  }
  return !out->empty();
}

// Splits "key=value"; false when there is no '='.
bool keyValue(const std::string& w, std::string* k, std::string* v) {
  const auto eq = w.find('=');
  if (eq == std::string::npos || eq == 0) return false;
  *k = w.substr(0, eq);
  *v = w.substr(eq + 1);
  return true;
}

class RuleParser {
 public:
  RuleParser(const std::string& origin, int line, const std::string& text)
      : origin_(origin), line_(line), text_(text) {}

  FaultRule parse() {
    FaultRule r;
    r.file = origin_;
    r.line = line_;
    r.text = text_;
    const auto colon = text_.find(':');
    const auto arrow = text_.find("->");
    if (colon == std::string::npos || arrow == std::string::npos || arrow < colon) {
      fail("a rule reads POINT [FILTERS] : TRIGGERS -> ACTION");
    }
    parsePoint(words(text_.substr(0, colon)), &r);
    parseTriggers(words(text_.substr(colon + 1, arrow - colon - 1)), &r);
    parseAction(words(text_.substr(arrow + 2)), &r);
    return r;
  }

 private:
  [[noreturn]] void fail(const std::string& problem) const {
    throw InputError(origin_, line_, problem + " (in '" + text_ + "')");
  }

  void parsePoint(const std::vector<std::string>& w, FaultRule* r) const {
    if (w.empty()) fail("the rule names no point");
    const std::string& p = w[0];
    if (p == "fabric-manager") r->point = FaultPointKind::kFabricManager;
    else if (p == "multicast-slot") r->point = FaultPointKind::kMulticastSlot;
    else if (p == "imex") r->point = FaultPointKind::kImex;
    else if (p == "link") r->point = FaultPointKind::kLink;
    else if (p == "switch") r->point = FaultPointKind::kSwitch;
    else if (p.size() > 2 && p.compare(0, 2, "cu") == 0) {
      r->point = FaultPointKind::kEntryPoint;
      r->prefix = p.back() == '*';
      r->entry = r->prefix ? p.substr(0, p.size() - 1) : p;
      if (r->entry.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") !=
          std::string::npos) {
        fail("'" + p + "' is no driver entry point name");
      }
    } else {
      fail("unknown point '" + p + "' (a driver entry point such as cuMulticastBindMem, or fabric-manager, "
           "multicast-slot, imex, link, switch)");
    }
    for (size_t i = 1; i < w.size(); ++i) {
      std::string k, v;
      if (!keyValue(w[i], &k, &v)) fail("filter '" + w[i] + "' is not key=value");
      if (k == "device") {
        if (!parseIntList(v, &r->devices)) fail("device= takes a list of device ordinals, e.g. device=1,4,6");
      } else if (k == "rank") {
        if (!parseIntList(v, &r->ranks)) fail("rank= takes a list of ranks");
      } else if (k == "gpu") {
        uint64_t g = 0;
        if (!parseUnsigned(v, &g)) fail("gpu= takes a device ordinal");
        r->gpu = static_cast<int>(g);
      } else {
        fail("unknown filter '" + k + "' (device, rank, gpu)");
      }
    }
    // Fabric-level events carry no device, and only link events a GPU: such a filter elsewhere
    // would make the rule silently never fire (or be silently ignored), so it is refused.
    if (!r->devices.empty() && r->point != FaultPointKind::kEntryPoint) {
      fail("device= applies to driver entry points only ('" + p + "' events have no device)");
    }
    if (r->gpu >= 0 && r->point != FaultPointKind::kLink) fail("gpu= applies to link rules only");
  }

  void parseTriggers(const std::vector<std::string>& w, FaultRule* r) const {
    if (w.empty()) fail("the rule has no trigger (always, nth=N, after=N, prob=P, at=TIME, max=K)");
    for (const std::string& t : w) {
      std::string k, v;
      if (t == "always") {
        r->always = true;
        continue;
      }
      if (!keyValue(t, &k, &v)) fail("trigger '" + t + "' is not one of always, nth=N, after=N, prob=P, at=TIME, max=K");
      uint64_t n = 0;
      if (k == "nth" || k == "after" || k == "max") {
        if (!parseUnsigned(v, &n) || (k != "after" && n == 0)) fail(k + "= takes a count" + (k == "after" ? "" : " of at least 1"));
        (k == "nth" ? r->nth : k == "after" ? r->after : r->max) = n;
        if (k == "after" && n == 0) r->always = true;  // after=0: every call
      } else if (k == "prob") {
        char* end = nullptr;
        const double p = std::strtod(v.c_str(), &end);
        if (v.empty() || *end != '\0' || !(p >= 0 && p <= 1)) fail("prob= takes a probability between 0 and 1");
        r->probability = p;
      } else if (k == "at") {
        uint64_t ps = 0;
        if (!parseDuration(v, &ps)) fail("at= takes a simulated time such as 0, 10us or 2ms");
        r->atPs = static_cast<int64_t>(ps);
      } else {
        fail("unknown trigger '" + k + "' (always, nth, after, prob, at, max)");
      }
    }
    if (r->nth != 0 && r->after != 0) fail("nth= and after= cannot be combined");
  }

  void parseAction(const std::vector<std::string>& w, FaultRule* r) const {
    if (w.empty()) fail("the rule has no action");
    const std::string& a = w[0];
    auto expectArgs = [&](size_t n, const char* usage) {
      if (w.size() != n + 1) fail(std::string("usage: -> ") + usage);
    };
    const bool entry = r->point == FaultPointKind::kEntryPoint;
    auto requirePoint = [&](bool ok, const char* which) {
      if (!ok) fail(std::string("action '") + a + "' applies to " + which);
    };
    if (a == "return") {
      expectArgs(1, "return CUDA_ERROR_NAME");
      requirePoint(entry, "driver entry points");
      if (w[1].compare(0, 5, "CUDA_") != 0) fail("return takes a CUresult name such as CUDA_ERROR_SYSTEM_NOT_READY");
      r->action = FaultActionKind::kReturn;
      r->result = w[1];
    } else if (a == "block") {
      requirePoint(entry, "driver entry points");
      r->action = FaultActionKind::kBlock;
      for (size_t i = 1; i < w.size(); ++i) {
        std::string k, v;
        if (!keyValue(w[i], &k, &v) || k != "name" || v.empty()) fail("usage: -> block [name=ID]");
        r->label = v;
      }
    } else if (a == "release") {
      expectArgs(1, "release ID");
      requirePoint(entry || r->point == FaultPointKind::kFabricManager, "driver entry points and fabric-manager");
      r->action = FaultActionKind::kRelease;
      r->label = w[1];
    } else if (a == "delay") {
      expectArgs(1, "delay TIME");
      requirePoint(entry, "driver entry points");
      if (!parseDuration(w[1], &r->timePs)) fail("delay takes a simulated time such as 10us");
      r->action = FaultActionKind::kDelay;
    } else if (a == "state") {
      expectArgs(1, "state not-started|initialising|ready|degraded|restarted");
      requirePoint(r->point == FaultPointKind::kFabricManager, "fabric-manager");
      static const char* kStates[] = {"not-started", "initialising", "ready", "degraded", "restarted"};
      bool known = false;
      for (const char* s : kStates) known = known || w[1] == s;
      if (!known) fail("unknown fabric manager state '" + w[1] + "'");
      r->action = FaultActionKind::kState;
      r->state = w[1];
    } else if (a == "exhaust") {
      expectArgs(0, "exhaust");
      requirePoint(r->point == FaultPointKind::kMulticastSlot, "multicast-slot");
      r->action = FaultActionKind::kExhaust;
    } else if (a == "absent" || a == "present") {
      expectArgs(0, a == "absent" ? "absent" : "present");
      requirePoint(r->point == FaultPointKind::kImex, "imex");
      r->action = a == "absent" ? FaultActionKind::kAbsent : FaultActionKind::kPresent;
    } else if (a == "down" || a == "up") {
      expectArgs(0, a == "down" ? "down" : "up");
      requirePoint(r->point == FaultPointKind::kLink || r->point == FaultPointKind::kSwitch, "link and switch");
      r->action = a == "down" ? FaultActionKind::kDown : FaultActionKind::kUp;
    } else {
      fail("unknown action '" + a + "' (return, block, release, delay, state, exhaust, absent, present, down, up)");
    }
  }

  const std::string& origin_;
  int line_;
  const std::string& text_;
};

}  // namespace

bool parseDuration(const std::string& s, uint64_t* ps) {
  if (s == "0") {
    *ps = 0;
    return true;
  }
  static const std::pair<const char*, double> kUnits[] = {{"ps", 1}, {"ns", 1e3}, {"us", 1e6}, {"ms", 1e9}, {"s", 1e12}};
  for (const auto& [unit, scale] : kUnits) {
    const std::string u(unit);
    if (s.size() > u.size() && s.compare(s.size() - u.size(), u.size(), u) == 0) {
      const std::string num = s.substr(0, s.size() - u.size());
      char* end = nullptr;
      const double v = std::strtod(num.c_str(), &end);
      if (num.empty() || *end != '\0' || !(v >= 0) || v * scale > 9e18) return false;
      // "ms" also ends in "s": a unit matches only when what precedes it is a number.
      *ps = static_cast<uint64_t>(v * scale + 0.5);
      return true;
    }
  }
  return false;
}

std::vector<FaultRule> parseFaultPlan(const std::string& text, const std::string& origin) {
  std::vector<FaultRule> rules;
  std::istringstream in(text);
  int lineNo = 0;
  for (std::string line; std::getline(in, line);) {
    ++lineNo;
    const auto hash = line.find('#');
    if (hash != std::string::npos) line.resize(hash);
    std::stringstream parts(line);
    for (std::string part; std::getline(parts, part, ';');) {
      part = trim(part);
      if (!part.empty()) rules.push_back(RuleParser(origin, lineNo, part).parse());
    }
  }
  // A release must name a block rule of the plan.
  for (const FaultRule& r : rules) {
    if (r.action != FaultActionKind::kRelease) continue;
    bool found = false;
    for (const FaultRule& b : rules) found = found || (b.action == FaultActionKind::kBlock && b.label == r.label);
    if (!found) throw InputError(origin, r.line, "release names '" + r.label + "', but no block rule has name=" + r.label);
  }
  return rules;
}

}  // namespace mcsim::fabric
