#include "fabric/fault_plan.h"

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "fabric/json_source.h"
#include "files/bounded_file.h"
#include "settings/byte_size.h"

namespace mcsim::fabric {

namespace {

// A wall-clock delay keeps a driver call waiting for real: at most a minute.
constexpr uint64_t kMaxWallDelayPs = 60ull * 1000 * 1000 * 1000 * 1000;

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

// Splits a filter "NAME OP VALUE" (no spaces) at its operator: = != < <= > >= &. false when it
// has no name or no operator.
bool splitFilter(const std::string& w, std::string* name, std::string* op, std::string* value) {
  const auto end = w.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_");
  if (end == 0 || end == std::string::npos) return false;
  *name = w.substr(0, end);
  for (const char* o : {"<=", ">=", "!=", "=", "<", ">", "&"}) {
    const std::string ops(o);
    if (w.compare(end, ops.size(), ops) == 0) {
      *op = ops;
      *value = w.substr(end + ops.size());
      return true;
    }
  }
  return false;
}

ArgOp argOp(const std::string& op) {
  if (op == "=") return ArgOp::kEq;
  if (op == "!=") return ArgOp::kNe;
  if (op == "<") return ArgOp::kLt;
  if (op == "<=") return ArgOp::kLe;
  if (op == ">") return ArgOp::kGt;
  if (op == ">=") return ArgOp::kGe;
  return ArgOp::kBits;
}

std::string joinNames(const std::vector<FaultArgumentSpec>& specs) {
  std::string out;
  for (const auto& a : specs) out += (out.empty() ? "" : ", ") + a.name;
  return out;
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
      std::string k, op, v;
      if (!splitFilter(w[i], &k, &op, &v)) {
        fail("filter '" + w[i] + "' is not NAME OP VALUE (device=1,4, rank=2, gpu=3, or an argument: size>=64MiB)");
      }
      const bool own = k == "device" || k == "rank" || k == "gpu" || k == "links" || k == "id";
      if (own && op != "=") fail(k + " takes '=': " + k + "=...");
      if (k == "device") {
        if (!parseIntList(v, &r->devices)) fail("device= takes a list of device ordinals, e.g. device=1,4,6");
      } else if (k == "rank") {
        if (!parseIntList(v, &r->ranks)) fail("rank= takes a list of ranks");
      } else if (k == "gpu") {
        uint64_t g = 0;
        if (!parseUnsigned(v, &g)) fail("gpu= takes a device ordinal");
        r->gpu = static_cast<int>(g);
      } else if (k == "links" && r->point == FaultPointKind::kLink) {
        std::vector<int> links;
        if (!parseIntList(v, &links)) fail("links= takes a list of NVLink numbers, e.g. links=0,1,2");
        // Kept as its canonical text in `label`, which link rules do not otherwise use (the wire
        // format of a rule stays as it is).
        r->label.clear();
        for (int l : links) r->label += (r->label.empty() ? "" : ",") + std::to_string(l);
      } else if (k == "id" && r->point == FaultPointKind::kSwitch) {
        uint64_t sw = 0;
        if (!parseUnsigned(v, &sw) || sw > 1 << 20) fail("id= takes an NVSwitch number, e.g. id=0");
        r->gpu = static_cast<int>(sw);
      } else if (k == "links" || k == "id") {
        fail(k == "links" ? "links= applies to link rules only" : "id= applies to switch rules only");
      } else {
        r->args.push_back(parseArgFilter(p, *r, k, op, v));
      }
    }
    // Fabric-level events carry no device, and only link events a GPU: such a filter elsewhere
    // would make the rule silently never fire (or be silently ignored), so it is refused.
    if (!r->devices.empty() && r->point != FaultPointKind::kEntryPoint) {
      fail("device= applies to driver entry points only ('" + p + "' events have no device)");
    }
    if (r->gpu >= 0 && r->point != FaultPointKind::kLink && r->point != FaultPointKind::kSwitch) {
      fail("gpu= applies to link rules only");
    }
    for (const std::string& f : w) {
      if (r->point == FaultPointKind::kSwitch && f.compare(0, 4, "gpu=") == 0) fail("gpu= applies to link rules only");
    }
    if (r->point == FaultPointKind::kLink && !r->label.empty() && r->gpu < 0) {
      fail("links= names links of one GPU: add gpu=N");
    }
  }

  // An argument filter of an entry-point rule. The argument must be one the entry point reports
  // (for a prefix, one that some entry point of the family reports): a filter on anything else
  // would silently never match.
  ArgFilter parseArgFilter(const std::string& point, const FaultRule& r, const std::string& name, const std::string& op,
                           const std::string& value) const {
    if (r.point != FaultPointKind::kEntryPoint) {
      fail("argument filters such as '" + name + op + value + "' apply to driver entry points only");
    }
    ArgFilter f;
    f.name = name;
    f.op = argOp(op);
    const FaultArgumentSpec* spec = nullptr;
    if (!r.prefix) {
      const std::vector<FaultArgumentSpec>* specs = faultArgumentsOf(r.entry);
      if (specs == nullptr) {
        fail(r.entry + " reports no arguments to fault plans, so '" + name + op + value +
             "' cannot filter it (docs/faults.md lists the entry points that do)");
      }
      for (const auto& a : *specs) spec = a.name == name ? &a : spec;
      if (spec == nullptr) fail(r.entry + " reports no argument '" + name + "' (it reports " + joinNames(*specs) + ")");
    } else {
      for (const auto& [entry, specs] : faultArgumentTable()) {
        if (entry.compare(0, r.entry.size(), r.entry) != 0) continue;
        for (const auto& a : specs) spec = (spec == nullptr && a.name == name) ? &a : spec;
      }
      if (spec == nullptr) fail("no entry point matching " + point + " reports an argument '" + name + "'");
    }
    f.text = spec->text;
    const bool list = f.op == ArgOp::kEq || f.op == ArgOp::kNe;
    if (f.text && !list) fail("'" + name + "' is text: it takes = or != only");
    std::stringstream in(value);
    for (std::string item; std::getline(in, item, ',');) {
      ArgValue v;
      if (item.empty()) fail("'" + name + op + value + "' has an empty value");
      if (f.text || item.compare(0, 2, "CU") == 0) {
        v.symbol = item;  // text, or a cuda.h constant the driver resolves
      } else if (!parseArgumentNumber(item, &v.number)) {
        fail("'" + item + "' is not a value for " + name + ": a number (4096, 0x1000, 2MiB) or a cuda.h constant name");
      }
      f.values.push_back(v);
    }
    if (f.values.empty()) fail("'" + name + op + "' has no value");
    if (!list && f.values.size() != 1) fail("'" + op + "' takes one value (lists go with = and !=)");
    if (f.op == ArgOp::kBits && f.values[0].symbol.empty() && f.values[0].number == 0) {
      fail("'" + name + "&0' can never hold: & takes a non-zero mask");
    }
    return f;
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

  std::string checkedResult(const std::string& name) const {
    if (name.compare(0, 5, "CUDA_") != 0) fail("return takes a CUresult name such as CUDA_ERROR_SYSTEM_NOT_READY");
    return name;
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
      r->action = FaultActionKind::kReturn;
      r->result = checkedResult(w[1]);
    } else if (a == "block") {
      requirePoint(entry, "driver entry points");
      r->action = FaultActionKind::kBlock;
      for (size_t i = 1; i < w.size(); ++i) {
        std::string k, v;
        uint64_t ps = 0;
        if (!keyValue(w[i], &k, &v) || (k != "name" && k != "until" && k != "for") || v.empty()) {
          fail("usage: -> block [name=ID] [until=TIME | for=TIME]");
        }
        if (k == "name") {
          r->label = v;
        } else if (!parseDuration(v, &ps)) {
          fail(k + "= takes a simulated time such as 5ms");
        } else {
          (k == "until" ? r->untilPs : r->forPs) = static_cast<int64_t>(ps);
        }
      }
      if (r->untilPs >= 0 && r->forPs >= 0) fail("a block takes until= or for=, not both");
    } else if (a == "release") {
      expectArgs(1, "release ID");
      requirePoint(entry || r->point == FaultPointKind::kFabricManager, "driver entry points and fabric-manager");
      r->action = FaultActionKind::kRelease;
      r->label = w[1];
    } else if (a == "delay") {
      // "delay TIME", or "delay TIME [then] return NAME": the call takes TIME, then fails (a
      // manager that stalls before it answers SYSTEM_NOT_READY).
      // With `wall` the call also waits that long in wall-clock time, so that code with wall-clock
      // timeouts (NCCL's, a watchdog's) meets the stall as it would on a real system.
      const char* usage = "delay TIME [wall] [then return CUDA_ERROR_NAME]";
      requirePoint(entry, "driver entry points");
      if (w.size() < 2 || !parseDuration(w[1], &r->timePs)) fail("delay takes a simulated time such as 10us");
      size_t next = 2;
      if (next < w.size() && w[next] == "wall") {
        if (r->timePs > kMaxWallDelayPs) fail("a wall-clock delay is at most 60s");
        r->wallClock = true;
        ++next;
      }
      if (next < w.size() && w[next] == "then") ++next;
      if (next == w.size() && (next == 2 || (next == 3 && r->wallClock))) {
        r->action = FaultActionKind::kDelay;
      } else if (next + 2 == w.size() && w[next] == "return") {
        r->action = FaultActionKind::kReturn;
        r->result = checkedResult(w[next + 1]);
      } else {
        fail(std::string("usage: -> ") + usage);
      }
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
      fail("unknown action '" + a + "' (return, delay, block, release, state, exhaust, absent, present, down, up)");
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

bool parseArgumentNumber(const std::string& s, uint64_t* v) {
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    const std::string hex = s.substr(2);
    if (hex.size() > 16 || hex.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos) return false;
    *v = std::strtoull(hex.c_str(), nullptr, 16);
    return true;
  }
  return settings::parseByteSize(s, v);
}

bool argumentMatches(const ArgFilter& f, uint64_t value) {
  switch (f.op) {
    case ArgOp::kEq:
    case ArgOp::kNe: {
      bool any = false;
      for (const ArgValue& v : f.values) any = any || v.number == value;
      return f.op == ArgOp::kEq ? any : !any;
    }
    case ArgOp::kLt: return value < f.values[0].number;
    case ArgOp::kLe: return value <= f.values[0].number;
    case ArgOp::kGt: return value > f.values[0].number;
    case ArgOp::kGe: return value >= f.values[0].number;
    case ArgOp::kBits: return (value & f.values[0].number) != 0;
  }
  return false;
}

bool argumentTextMatches(const ArgFilter& f, const char* text) {
  bool any = false;
  for (const ArgValue& v : f.values) {
    const std::string& pattern = v.symbol;
    const bool prefix = !pattern.empty() && pattern.back() == '*';
    const size_t n = prefix ? pattern.size() - 1 : pattern.size();
    any = any || (prefix ? std::strncmp(text, pattern.c_str(), n) == 0 : pattern == text);
  }
  return f.op == ArgOp::kEq ? any : !any;
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

void checkFaultPlanFor(const std::vector<FaultRule>& rules, const Preset& preset) {
  const int gpuCount = preset.gpuCount;
  const auto none = [&](const FaultRule& r, const char* what, int which) {
    throw InputError(r.file, r.line, std::string(what) + "=" + std::to_string(which) + " names no GPU: the node has " +
                                         std::to_string(gpuCount) + " (0 to " + std::to_string(gpuCount - 1) + ") (in '" +
                                         r.text + "')");
  };
  for (const FaultRule& r : rules) {
    for (int d : r.devices) {
      if (d < 0 || d >= gpuCount) none(r, "device", d);
    }
    if (r.point == FaultPointKind::kSwitch) {
      if (r.gpu >= preset.nvswitch.count) {
        throw InputError(r.file, r.line, "id=" + std::to_string(r.gpu) + " names no NVSwitch: the node has " +
                                             std::to_string(preset.nvswitch.count) +
                                             (preset.nvswitch.count > 0 ? " (0 to " + std::to_string(preset.nvswitch.count - 1) + ")" : "") +
                                             " (in '" + r.text + "')");
      }
      continue;
    }
    if (r.gpu >= gpuCount) none(r, "gpu", r.gpu);
    if (r.point == FaultPointKind::kLink) {
      for (int l : faultRuleLinks(r)) {
        if (l >= preset.nvlink.linksPerGpu) {
          throw InputError(r.file, r.line, "links= names NVLink " + std::to_string(l) + ", but a GPU of the node has " +
                                               std::to_string(preset.nvlink.linksPerGpu) +
                                               (preset.nvlink.linksPerGpu > 0 ? " (0 to " + std::to_string(preset.nvlink.linksPerGpu - 1) + ")" : "") +
                                               " (in '" + r.text + "')");
        }
      }
    }
  }
}

std::vector<int> faultRuleLinks(const FaultRule& r) {
  std::vector<int> links;
  if (r.point == FaultPointKind::kLink && !r.label.empty()) parseIntList(r.label, &links);
  return links;
}

std::string readFaultPlanFile(const std::string& path) {
  files::FileRead read = files::readBoundedFile(path, files::kMaxTextInputBytes);
  if (!read.ok()) throw InputError(path, 0, "cannot read the fault plan: " + read.why);
  return std::move(read.bytes);
}

}  // namespace mcsim::fabric
