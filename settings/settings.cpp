#include "settings/settings.h"
#include "settings/typo_distance.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

extern char** environ;

namespace mcsim::settings {

namespace {

// The CUresult names cuda.h defines (the driver's table, without needing its values here).
constexpr const char* kResultNames[] = {
#define MCSIM_RESULT(name, text) #name,
#include "driver/results.def"
#undef MCSIM_RESULT
};

std::string allowed(const Text& k) { return k.what; }
std::string allowed(const Flag&) { return "`0` or `1`"; }
std::string allowed(const Unsigned& k) {
  if (k.max == UINT64_MAX) return "an integer >= " + std::to_string(k.min);
  return "an integer from " + std::to_string(k.min) + " to " + std::to_string(k.max);
}
std::string allowed(const Seconds&) { return "seconds > 0"; }
std::string allowed(const Choice& k) {
  std::string s = "one of ";
  for (size_t i = 0; i < k.options.size(); ++i) s += (i == 0 ? "`" : ", `") + k.options[i] + "`";
  return s;
}
std::string allowed(const ResultName&) { return "a `CUresult` name"; }
std::string allowed(const DriverVersion&) { return "a version such as `12080` (1000 * major + 10 * minor)"; }

// Decimal digits only: no sign, no spaces, no 0x (strtoull would take "-1" as 2^64 - 1).
bool digits(const std::string& s, uint64_t* out) {
  if (s.empty() || s.size() > 20 || !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return false;
  }
  errno = 0;
  const unsigned long long v = std::strtoull(s.c_str(), nullptr, 10);
  if (errno == ERANGE) return false;
  *out = v;
  return true;
}

bool accept(const Text&, const std::string& s, std::string* v) {
  *v = s;
  return true;
}
bool accept(const Flag&, const std::string& s, bool* v) {
  if (s != "0" && s != "1") return false;
  *v = s == "1";
  return true;
}
bool accept(const Unsigned& k, const std::string& s, uint64_t* v) {
  uint64_t x = 0;
  if (!digits(s, &x) || x < k.min || x > k.max) return false;
  *v = x;
  return true;
}
bool accept(const Seconds&, const std::string& s, double* v) {
  char* end = nullptr;
  const double x = std::strtod(s.c_str(), &end);
  if (*end != '\0' || !std::isfinite(x) || !(x > 0)) return false;
  *v = x;
  return true;
}
bool accept(const Choice& k, const std::string& s, std::string* v) {
  if (std::find(k.options.begin(), k.options.end(), s) == k.options.end()) return false;
  *v = s;
  return true;
}
bool accept(const ResultName&, const std::string& s, std::string* v) {
  for (const char* n : kResultNames) {
    if (s == n) {
      *v = s;
      return true;
    }
  }
  return false;
}
bool accept(const DriverVersion&, const std::string& s, int* v) {
  uint64_t x = 0;
  if (!digits(s, &x) || x < 11000 || x > 99990 || x % 10 != 0) return false;
  *v = static_cast<int>(x);
  return true;
}

// "`10`" -> "10": a default as a warning line prints it.
std::string plain(const char* markdown) {
  std::string s;
  for (const char* p = markdown; *p != '\0'; ++p) {
    if (*p != '`') s += *p;
  }
  return s;
}

}  // namespace


const std::vector<Declaration>& declarations() {
  static const std::vector<Declaration> all = {
#define MCSIM_SETTING(field, name, kind, dflt, dfltDoc, users, meaning) {#name, allowed(kind), dfltDoc, users, meaning},
#include "settings/settings.def"
#undef MCSIM_SETTING
  };
  return all;
}

std::string closestName(const std::string& name) {
  std::string best;
  size_t bestDistance = 0;
  for (const Declaration& d : declarations()) {
    const size_t n = typoDistance(name, d.name);
    if (best.empty() || n < bestDistance) {
      best = d.name;
      bestDistance = n;
    }
  }
  // Within a quarter of the name after MCSIM_ (at least 2): further than that is another word.
  const size_t limit = std::max<size_t>(2, (name.size() > 6 ? name.size() - 6 : 0) / 4);
  return bestDistance <= limit ? best : std::string();
}

Settings parse(const char* const* env, std::vector<std::string>* warnings) {
  // The first of a repeated name, as getenv takes.
  std::map<std::string, std::string> vars;
  for (const char* const* e = env; e != nullptr && *e != nullptr; ++e) {
    const char* eq = std::strchr(*e, '=');
    if (eq == nullptr) continue;
    vars.emplace(std::string(*e, static_cast<size_t>(eq - *e)), std::string(eq + 1));
  }
  auto warn = [&](const std::string& line) {
    if (warnings != nullptr) warnings->push_back(line);
  };

  Settings s;
#define MCSIM_SETTING(field, name, kind, dflt, dfltDoc, users, meaning)                                  \
  if (auto it = vars.find(#name); it != vars.end() && !it->second.empty()) {                              \
    const auto k = kind;                                                                                 \
    if (accept(k, it->second, &s.field)) {                                                               \
      s.given.emplace(#name, it->second);                                                                \
    } else {                                                                                             \
      warn(std::string(#name "='") + it->second + "' is not " + plain(allowed(k).c_str()) + "; using the default (" + \
           plain(dfltDoc) + ")");                                                                           \
    }                                                                                                    \
  }
#include "settings/settings.def"
#undef MCSIM_SETTING

  if (auto it = vars.find("CUDA_VISIBLE_DEVICES"); it != vars.end()) s.cudaVisibleDevices = it->second;

  // Names in mcsim's namespace that nothing reads: most likely a typo of one that something does.
  for (const auto& [name, value] : vars) {
    if (name.compare(0, 6, "MCSIM_") != 0) continue;
    const auto& all = declarations();
    // By value: C++17 lambdas cannot capture a structured binding (clang refuses it; GCC lets it by).
    if (std::any_of(all.begin(), all.end(), [n = name](const Declaration& d) { return n == d.name; })) continue;
    const std::string close = closestName(name);
    warn(name + " is not an mcsim setting" +
         (close.empty() ? std::string(" (`mcsim settings` lists them)") : " (did you mean " + close + "?)") +
         "; ignored");
  }
  return s;
}

Settings fromEnvironment() {
  std::vector<std::string> warnings;
  Settings s = parse(environ, &warnings);
  for (const std::string& w : warnings) std::fprintf(stderr, "mcsim: %s\n", w.c_str());
  return s;
}

Settings fromEnvironmentQuietly() { return parse(environ, nullptr); }

std::string markdownTable() {
  std::string t = "| variable | meaning | values | default | read by |\n|---|---|---|---|---|\n";
  for (const Declaration& d : declarations()) {
    t += std::string("| `") + d.name + "` | " + d.meaning + " | " + d.allowed + " | " + d.defaultDoc + " | " +
         d.users + " |\n";
  }
  return t;
}

}  // namespace mcsim::settings
