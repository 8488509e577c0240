// The settings declaration (settings/settings.def): parsing, the warning lines, and that README.md,
// docs/ and the code agree with it.
#include "settings/settings.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;
using mcsim::settings::Settings;

struct Parsed {
  Settings s;
  std::vector<std::string> warnings;
};

Parsed parseOf(const std::vector<std::string>& vars) {
  std::vector<const char*> env;
  for (const std::string& v : vars) env.push_back(v.c_str());
  env.push_back(nullptr);
  Parsed p;
  p.s = mcsim::settings::parse(env.data(), &p.warnings);
  return p;
}

std::set<std::string> declaredNames() {
  std::set<std::string> names;
  for (const auto& d : mcsim::settings::declarations()) names.insert(d.name);
  return names;
}

std::string readFile(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

const fs::path kSource = MCSIM_TEST_SOURCE_DIR;

TEST(Settings, DefaultsWhenNothingIsSet) {
  const Parsed p = parseOf({"PATH=/usr/bin", "HOME=/root"});
  EXPECT_TRUE(p.warnings.empty());
  EXPECT_EQ(p.s.topology, "");
  EXPECT_EQ(p.s.driverVersion, CUDA_VERSION);
  EXPECT_EQ(p.s.seed, 0u);
  EXPECT_EQ(p.s.hangGraceSeconds, 10.0);
  EXPECT_EQ(p.s.hangResult, "CUDA_ERROR_ILLEGAL_STATE");
  EXPECT_EQ(p.s.onHang, "fail");
  EXPECT_EQ(p.s.fabricManager, "");
  EXPECT_FALSE(p.s.timingOnly);
  EXPECT_EQ(p.s.hostPollNs, 1000u);
  EXPECT_EQ(p.s.nodeSpin, 0u);
  EXPECT_EQ(p.s.recordData, 16777216u);
  EXPECT_FALSE(p.s.recordOutputData);
  EXPECT_TRUE(p.s.given.empty());
  EXPECT_FALSE(p.s.isSet("MCSIM_RANK"));
}

TEST(Settings, AcceptedValuesOfEveryKind) {
  const Parsed p = parseOf({"MCSIM_TOPOLOGY=hgx-h200", "MCSIM_DRIVER_VERSION=12080", "MCSIM_SEED=18446744073709551615",
                            "MCSIM_RANK=1048575", "MCSIM_HANG_GRACE_S=0.25", "MCSIM_HANG_RESULT=CUDA_ERROR_LAUNCH_TIMEOUT",
                            "MCSIM_ON_HANG=abort", "MCSIM_FABRIC_MANAGER=degraded", "MCSIM_TIMING_ONLY=1",
                            "MCSIM_HOST_POLL_NS=5", "CUDA_MODULE_LOADING=EAGER"});
  EXPECT_TRUE(p.warnings.empty()) << p.warnings.front();
  EXPECT_EQ(p.s.topology, "hgx-h200");
  EXPECT_EQ(p.s.driverVersion, 12080);
  EXPECT_EQ(p.s.seed, UINT64_MAX);
  EXPECT_EQ(p.s.rank, 1048575u);
  EXPECT_TRUE(p.s.isSet("MCSIM_RANK"));
  EXPECT_EQ(p.s.hangGraceSeconds, 0.25);
  EXPECT_EQ(p.s.hangResult, "CUDA_ERROR_LAUNCH_TIMEOUT");
  EXPECT_EQ(p.s.onHang, "abort");
  EXPECT_EQ(p.s.fabricManager, "degraded");
  EXPECT_TRUE(p.s.timingOnly);
  EXPECT_EQ(p.s.hostPollNs, 5u);
  EXPECT_EQ(p.s.moduleLoading, "EAGER");
  EXPECT_EQ(p.s.given.at("MCSIM_SEED"), "18446744073709551615");
}

TEST(Settings, EmptyIsUnsetAndTheFirstOfARepeatedNameCounts) {
  const Parsed p = parseOf({"MCSIM_SEED=", "MCSIM_RANK=3", "MCSIM_RANK=4"});
  EXPECT_TRUE(p.warnings.empty());
  EXPECT_FALSE(p.s.isSet("MCSIM_SEED"));
  EXPECT_EQ(p.s.rank, 3u);
}

TEST(Settings, MalformedValuesWarnOneLineEachAndKeepTheDefault) {
  const Parsed p = parseOf({"MCSIM_DRIVER_VERSION=abc", "MCSIM_HANG_GRACE_S=x", "MCSIM_SEED=-1", "MCSIM_RANK=1048576",
                            "MCSIM_ON_HANG=explode", "MCSIM_HANG_RESULT=CUDA_ERROR_NOPE", "MCSIM_TIMING_ONLY=yes",
                            "MCSIM_HOST_POLL_NS=0", "MCSIM_FABRIC_MANAGER=up"});
  const std::vector<std::string> expected = {
      "MCSIM_DRIVER_VERSION='abc' is not a version such as 12080 (1000 * major + 10 * minor); using the default "
      "(13000, cuda.h's CUDA_VERSION)",
      "MCSIM_RANK='1048576' is not an integer from 0 to 1048575; using the default (unset)",
      "MCSIM_SEED='-1' is not an integer >= 0; using the default (0)",
      "MCSIM_HANG_GRACE_S='x' is not seconds > 0; using the default (10)",
      "MCSIM_HANG_RESULT='CUDA_ERROR_NOPE' is not a CUresult name; using the default (CUDA_ERROR_ILLEGAL_STATE)",
      "MCSIM_ON_HANG='explode' is not one of fail, abort; using the default (fail)",
      "MCSIM_FABRIC_MANAGER='up' is not one of not-started, initialising, ready, degraded; using "
      "the default (the preset's fabric_manager.initial_state)",
      "MCSIM_TIMING_ONLY='yes' is not 0 or 1; using the default (0)",
      "MCSIM_HOST_POLL_NS='0' is not an integer from 1 to 1000000000; using the default (1000)",
  };
  EXPECT_EQ(p.warnings, expected);
  const Settings defaults = parseOf({}).s;
  EXPECT_EQ(p.s.driverVersion, defaults.driverVersion);
  EXPECT_EQ(p.s.hangGraceSeconds, defaults.hangGraceSeconds);
  EXPECT_EQ(p.s.seed, defaults.seed);
  EXPECT_FALSE(p.s.isSet("MCSIM_RANK"));
  EXPECT_EQ(p.s.onHang, "fail");
  EXPECT_EQ(p.s.hangResult, "CUDA_ERROR_ILLEGAL_STATE");
  EXPECT_FALSE(p.s.timingOnly);
  EXPECT_EQ(p.s.hostPollNs, 1000u);
  EXPECT_EQ(p.s.fabricManager, "");
  EXPECT_TRUE(p.s.given.empty());
}

TEST(Settings, NumbersAreDecimalDigitsOnly) {
  for (const char* bad : {" 1", "1 ", "+1", "0x10", "1e3", "18446744073709551616"}) {
    const Parsed p = parseOf({std::string("MCSIM_SEED=") + bad});
    ASSERT_EQ(p.warnings.size(), 1u) << bad;
    EXPECT_EQ(p.s.seed, 0u) << bad;
  }
  for (const char* bad : {"13001", "10990", "99999", "100000"}) {
    EXPECT_EQ(parseOf({std::string("MCSIM_DRIVER_VERSION=") + bad}).warnings.size(), 1u) << bad;
  }
  for (const char* bad : {"0", "-1", "inf", "nan", "1s"}) {
    EXPECT_EQ(parseOf({std::string("MCSIM_HANG_GRACE_S=") + bad}).warnings.size(), 1u) << bad;
  }
}

TEST(Settings, UnknownNamesWarnWithTheClosestDeclaredName) {
  const Parsed p = parseOf({"MCSIM_TOPLOGY=hgx-h200", "MCSIM_SEDE=4", "MCSIM_HANG_GRACE=3", "MCSIM_QWERTYUIOP=1",
                            "MCSIMFOO=1", "CUDA_VISIBLE_DEVICES=0"});
  const std::vector<std::string> expected = {
      "MCSIM_HANG_GRACE is not an mcsim setting (did you mean MCSIM_HANG_GRACE_S?); ignored",
      "MCSIM_QWERTYUIOP is not an mcsim setting (`mcsim settings` lists them); ignored",
      "MCSIM_SEDE is not an mcsim setting (did you mean MCSIM_SEED?); ignored",
      "MCSIM_TOPLOGY is not an mcsim setting (did you mean MCSIM_TOPOLOGY?); ignored",
  };
  EXPECT_EQ(p.warnings, expected);
  EXPECT_EQ(p.s.topology, "");
  EXPECT_EQ(p.s.seed, 0u);
}

TEST(Settings, EveryDeclarationIsComplete) {
  std::set<std::string> seen;
  for (const auto& d : mcsim::settings::declarations()) {
    EXPECT_TRUE(seen.insert(d.name).second) << d.name << " is declared twice";
    EXPECT_FALSE(d.allowed.empty()) << d.name;
    EXPECT_NE(std::string(d.defaultDoc), "") << d.name;
    EXPECT_NE(std::string(d.users), "") << d.name;
    EXPECT_NE(std::string(d.meaning), "") << d.name;
    // A cell with a '|' would break the README's table.
    for (const std::string& cell : {d.allowed, std::string(d.defaultDoc), std::string(d.users), std::string(d.meaning)}) {
      EXPECT_EQ(cell.find('|'), std::string::npos) << d.name << ": " << cell;
    }
  }
}

// README.md's settings table is the declaration printed (`mcsim settings` prints it): a row
// missing on either side, or a different word, fails here.
TEST(Settings, ReadmeTableIsTheDeclaration) {
  const std::string readme = readFile(kSource / "README.md");
  const size_t section = readme.find("\n## Settings\n");
  ASSERT_NE(section, std::string::npos) << "README.md has no '## Settings' section";
  const size_t end = readme.find("\n## ", section + 1);
  std::istringstream lines(readme.substr(section, end - section));
  std::string table, line;
  while (std::getline(lines, line)) {
    if (!line.empty() && line[0] == '|') table += line + "\n";
  }
  EXPECT_EQ(table, mcsim::settings::markdownTable())
      << "README.md's settings table differs from settings/settings.def; replace it with `mcsim settings`'s output";
}

// Names in the docs that look like settings but are the code's own identifiers (macros, CMake
// options, constants). Each must still occur in the code, so the list cannot outlive them.
const std::set<std::string> kCodeIdentifiers = {
    "MCSIM_API",
    "MCSIM_API_LOADER",
    "MCSIM_API_VERSION",
    "MCSIM_BUILD_FUZZERS",
    "MCSIM_CONFORMANCE_REAL",
    "MCSIM_DRIVER_IMPL",
    "MCSIM_DTYPE_F32",
    "MCSIM_ERROR_INVALID_PLAN",
    "MCSIM_ERROR_NOT_INITIALIZED",
    "MCSIM_OTHER_CUDARTS",
    "MCSIM_FAULT_ARGUMENTS",
    "MCSIM_FAULT_POINT_ARGS",
    "MCSIM_REDOP_ADD",
    "MCSIM_REFUSE",
    "MCSIM_REQUIRE_INIT",
    "MCSIM_REQUIRE_INIT_ARGS",
    "MCSIM_REQUIRE_INIT_DEV_ARGS",
    "MCSIM_TRACES_REAL",
    "MCSIM_WERROR",
    "MCSIM_WIRE_FIELDS",
};

bool isSourceFile(const fs::path& p) {
  const std::string ext = p.extension().string();
  const std::string name = p.filename().string();
  return ext == ".cpp" || ext == ".h" || ext == ".c" || ext == ".cu" || ext == ".def" || ext == ".inc" || ext == ".sh" ||
         ext == ".cmake" || ext == ".py" || name == "CMakeLists.txt" || name == "run";
}

// The project's files under `dir`, skipping build trees and hidden directories (but .ci).
std::vector<fs::path> projectFiles(bool (*want)(const fs::path&)) {
  std::vector<fs::path> files;
  for (auto it = fs::recursive_directory_iterator(kSource); it != fs::recursive_directory_iterator(); ++it) {
    const std::string name = it->path().filename().string();
    if (it->is_directory() &&
        ((name.size() > 1 && name[0] == '.' && name != ".ci") || name.rfind("build", 0) == 0)) {
      it.disable_recursion_pending();
      continue;
    }
    if (it->is_regular_file() && want(it->path())) files.push_back(it->path());
  }
  return files;
}

TEST(Settings, EveryNameTheDocsGiveIsDeclared) {
  const std::set<std::string> declared = declaredNames();
  const std::regex name("MCSIM_[A-Z0-9_]*[A-Z0-9]");
  std::vector<fs::path> docs = projectFiles([](const fs::path& p) {
    const std::string rel = p.lexically_relative(kSource).string();
    return rel.rfind("docs/", 0) == 0 || rel == "README.md";
  });
  ASSERT_FALSE(docs.empty());
  std::set<std::string> used;
  for (const fs::path& doc : docs) {
    const std::string text = readFile(doc);
    for (auto m = std::sregex_iterator(text.begin(), text.end(), name); m != std::sregex_iterator(); ++m) {
      const std::string n = m->str();
      if (declared.count(n) != 0) continue;
      if (kCodeIdentifiers.count(n) != 0) {
        used.insert(n);
        continue;
      }
      ADD_FAILURE() << doc.lexically_relative(kSource).string() << " names " << n
                    << ", which settings/settings.def does not declare";
    }
  }
  // The exceptions are real identifiers of the code.
  std::string code;
  for (const fs::path& f : projectFiles(isSourceFile)) code += readFile(f);
  for (const std::string& n : kCodeIdentifiers) {
    EXPECT_NE(code.find(n), std::string::npos) << n << " is listed as a code identifier but the code has none";
  }
}

// Every variable the code and the scripts read is declared: getenv("MCSIM_..."), the scripts'
// ${MCSIM_...}, and the variables the build's tests set (env MCSIM_...=).
TEST(Settings, EveryVariableTheCodeReadsIsDeclared) {
  const std::set<std::string> declared = declaredNames();
  const std::regex read(R"((?:getenv\(\s*"|\$\{|env\s+|ENVIRONMENT\s+")([A-Z][A-Z0-9_]*))");
  // The misspelling the tests of the warning give on purpose.
  const std::set<std::string> deliberatelyUnknown = {"MCSIM_TOPLOGY"};
  size_t found = 0;
  for (const fs::path& f : projectFiles(isSourceFile)) {
    if (f.filename() == "settings_test.cpp") continue;  // this file's patterns and examples
    const std::string text = readFile(f);
    for (auto m = std::sregex_iterator(text.begin(), text.end(), read); m != std::sregex_iterator(); ++m) {
      const std::string n = (*m)[1].str();
      if (n.rfind("MCSIM_", 0) != 0) continue;
      ++found;
      // The build's own CMake variables (${MCSIM_WARNINGS}) are not the environment's.
      const bool cmake = f.filename() == "CMakeLists.txt" || f.extension() == ".cmake";
      if (cmake && m->str().rfind("${", 0) == 0) continue;
      if (deliberatelyUnknown.count(n) != 0) continue;
      EXPECT_EQ(declared.count(n), 1u) << f.lexically_relative(kSource).string() << " reads " << n
                                       << ", which settings/settings.def does not declare";
    }
  }
  EXPECT_GT(found, 10u);
}

// The simulator's own code reads no environment but through settings/: the model and the fabric
// are handed values, the driver and the tools hold the parsed settings. (Tests and the sample
// workloads are programs of their own; LD_LIBRARY_PATH is only extended for the programs mcsim
// starts.)
TEST(Settings, OnlySettingsReadsTheEnvironment) {
  const std::regex read(R"(getenv\(\s*"?([A-Za-z_0-9]*))");
  size_t files = 0;
  for (const fs::path& f : projectFiles(isSourceFile)) {
    const std::string rel = f.lexically_relative(kSource).string();
    bool simulator = false;
    for (const char* dir : {"driver/", "fabric/", "model/", "traces/", "tools/mcsim/", "tools/node/"}) {
      simulator = simulator || rel.rfind(dir, 0) == 0;
    }
    if (!simulator) continue;
    ++files;
    const std::string text = readFile(f);
    for (auto m = std::sregex_iterator(text.begin(), text.end(), read); m != std::sregex_iterator(); ++m) {
      if ((*m)[1].str() == "LD_LIBRARY_PATH" && rel.rfind("tools/mcsim/", 0) == 0) continue;
      ADD_FAILURE() << rel << " reads the environment (" << m->str()
                    << "): declare the variable in settings/settings.def and hand its value in";
    }
  }
  EXPECT_GT(files, 50u);
}

}  // namespace
