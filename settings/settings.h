// mcsim's settings: the environment variables of settings/settings.def, each read and checked in
// one place. The driver reads them at cuInit (driver/driver.cpp), `mcsim-node` and `mcsim` when they
// start; the model and the fabric are handed the values they need, never the environment.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace mcsim::settings {

// The kinds a value may be. Each says what text it accepts (allowed(), for the warning and the
// table) and turns accepted text into its Value.
struct Text {
  using Value = std::string;
  const char* what;  // what the text names, for the table ("a file")
  explicit Text(const char* w) : what(w) {}
};
struct Flag {
  using Value = bool;  // `0` or `1`
};
struct Unsigned {
  using Value = uint64_t;  // decimal digits only, within [min, max]
  uint64_t min, max;
  Unsigned(uint64_t lo, uint64_t hi) : min(lo), max(hi) {}
};
struct Seconds {
  using Value = double;  // a finite number greater than 0
};
struct Choice {
  using Value = std::string;  // one of the options, exactly
  std::vector<std::string> options;
  Choice(std::initializer_list<const char*> o) : options(o.begin(), o.end()) {}
};
struct ResultName {
  using Value = std::string;  // a CUresult's name, as cuda.h spells it (driver/results.def)
};
struct DriverVersion {
  using Value = int;  // 1000 * major + 10 * minor, from 11000 to 99990
};

// Every setting's value: the default, or what the environment gave and its kind accepted.
struct Settings {
#define MCSIM_SETTING(field, name, kind, dflt, dfltDoc, users, meaning) decltype(kind)::Value field = dflt;
#include "settings/settings.def"
#undef MCSIM_SETTING

  // The text of every variable that was set and accepted, by name: what a trace records, and
  // whether a setting whose default is "unset" was given (isSet).
  std::map<std::string, std::string> given;
  // CUDA_VISIBLE_DEVICES, the real driver's own variable, which mcsim's driver reads at cuInit
  // (docs/user-guide.md): its text when set, even empty (an empty value hides every GPU).
  std::optional<std::string> cudaVisibleDevices;
  bool isSet(const std::string& name) const { return given.count(name) != 0; }
};

// One row of settings.def, for tables and for the check of unknown names.
struct Declaration {
  const char* name;
  std::string allowed;  // the values its kind accepts, in words (Markdown)
  const char* defaultDoc;
  const char* users;
  const char* meaning;
};
const std::vector<Declaration>& declarations();

// Reads every declared variable from `env` (NAME=value strings, as `environ`; nullptr-terminated).
// An unset or empty variable keeps its default. A value its kind refuses, and an MCSIM_* name that
// is not declared, each add one line to `warnings` (when not null) and change nothing else; an
// unknown name's line suggests the declared name closest to it.
Settings parse(const char* const* env, std::vector<std::string>* warnings);

// parse(environ), each warning written to stderr as one line "mcsim: WARNING".
Settings fromEnvironment();
// parse(environ) without a word: for a reader that runs before the process's own check (the
// recorder, when the library loads) and must not say the same thing twice.
Settings fromEnvironmentQuietly();

// The README's settings table: one row per declaration, in declaration order (Markdown).
std::string markdownTable();

// The declared name closest to `name` (edit distance, a swap of neighbours counting one), or ""
// when none is close enough to be a likely typo.
std::string closestName(const std::string& name);

}  // namespace mcsim::settings
