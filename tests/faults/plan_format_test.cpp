// The plan format (fabric/fault_plan.h): every point, filter, trigger and action parses into the
// rule it says; ';' and comments; and every malformed rule is refused with its file, its line and
// a problem a person can act on, whether the plan comes from parseFaultPlan, installFaultPlan,
// MCSIM_FAULTS or MCSIM_FAULTS_FILE.
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>

#include "fabric/fault_plan.h"
#include "fabric/json_source.h"
#include "tests/faults/fault_test.h"

namespace {

using namespace faulttest;
using mcsim::fabric::FaultActionKind;
using mcsim::fabric::FaultPointKind;
using mcsim::fabric::FaultRule;
using mcsim::fabric::InputError;
using mcsim::fabric::parseDuration;
using mcsim::fabric::parseFaultPlan;

FaultRule one(const std::string& text) {
  const std::vector<FaultRule> rules = parseFaultPlan(text, "test.plan");
  EXPECT_EQ(1u, rules.size()) << text;
  return rules.empty() ? FaultRule{} : rules[0];
}

// The InputError a malformed plan throws (its line and message), or a failure.
struct Refusal {
  int line = -1;
  std::string file, problem, what;
};
Refusal refusal(const std::string& text) {
  try {
    parseFaultPlan(text, "test.plan");
  } catch (const InputError& e) {
    return {e.line(), e.file(), e.problem(), e.what()};
  }
  ADD_FAILURE() << "accepted: " << text;
  return {};
}

#define EXPECT_REFUSED(text, expectedLine, fragment)                                        \
  do {                                                                                      \
    const Refusal r_ = refusal(text);                                                       \
    EXPECT_EQ(expectedLine, r_.line) << text;                                               \
    EXPECT_EQ("test.plan", r_.file) << text;                                                \
    EXPECT_NE(std::string::npos, r_.problem.find(fragment)) << "problem: " << r_.problem;   \
    EXPECT_EQ(0u, r_.what.find("test.plan:" + std::to_string(expectedLine) + ": ")) << r_.what; \
  } while (0)

// --- Points and filters -------------------------------------------------------------------------

TEST(PlanFormat, EntryPointRule) {
  const FaultRule r = one("cuMulticastBindMem device=1,4,6 : nth=1 -> return CUDA_ERROR_SYSTEM_NOT_READY");
  EXPECT_EQ(FaultPointKind::kEntryPoint, r.point);
  EXPECT_EQ("cuMulticastBindMem", r.entry);
  EXPECT_FALSE(r.prefix);
  EXPECT_EQ((std::vector<int>{1, 4, 6}), r.devices);
  EXPECT_TRUE(r.ranks.empty());
  EXPECT_EQ(1u, r.nth);
  EXPECT_EQ(FaultActionKind::kReturn, r.action);
  EXPECT_EQ("CUDA_ERROR_SYSTEM_NOT_READY", r.result);
  EXPECT_EQ("test.plan", r.file);
  EXPECT_EQ(1, r.line);
  EXPECT_EQ("cuMulticastBindMem device=1,4,6 : nth=1 -> return CUDA_ERROR_SYSTEM_NOT_READY", r.text);
}

TEST(PlanFormat, PrefixPointAndRankFilter) {
  const FaultRule r = one("cuMulticast* rank=0,3 : always -> return CUDA_ERROR_UNKNOWN");
  EXPECT_EQ(FaultPointKind::kEntryPoint, r.point);
  EXPECT_TRUE(r.prefix);
  EXPECT_EQ("cuMulticast", r.entry);
  EXPECT_EQ((std::vector<int>{0, 3}), r.ranks);
  EXPECT_TRUE(r.always);
}

TEST(PlanFormat, FabricPoints) {
  const std::vector<std::pair<std::string, FaultPointKind>> points = {
      {"fabric-manager : always -> state ready", FaultPointKind::kFabricManager},
      {"multicast-slot : always -> exhaust", FaultPointKind::kMulticastSlot},
      {"imex : always -> absent", FaultPointKind::kImex},
      {"link gpu=3 : always -> down", FaultPointKind::kLink},
      {"switch : always -> down", FaultPointKind::kSwitch},
  };
  for (const auto& [text, kind] : points) EXPECT_EQ(kind, one(text).point) << text;
  EXPECT_EQ(3, one("link gpu=3 : always -> down").gpu);
  EXPECT_EQ(-1, one("link : always -> up").gpu);
}

// --- Triggers -----------------------------------------------------------------------------------

TEST(PlanFormat, Triggers) {
  FaultRule r = one("cuMemCreate : nth=7 -> return CUDA_ERROR_OUT_OF_MEMORY");
  EXPECT_EQ(7u, r.nth);
  EXPECT_FALSE(r.always);
  r = one("cuMemCreate : after=3 -> return CUDA_ERROR_OUT_OF_MEMORY");
  EXPECT_EQ(3u, r.after);
  r = one("cuMemCreate : after=0 -> return CUDA_ERROR_OUT_OF_MEMORY");  // every call
  EXPECT_TRUE(r.always);
  r = one("cuMemCreate : prob=0.25 -> return CUDA_ERROR_OUT_OF_MEMORY");
  EXPECT_DOUBLE_EQ(0.25, r.probability);
  r = one("cuMemCreate : at=10us -> return CUDA_ERROR_OUT_OF_MEMORY");
  EXPECT_EQ(10'000'000, r.atPs);
  r = one("cuMemCreate : at=0 -> return CUDA_ERROR_OUT_OF_MEMORY");
  EXPECT_EQ(0, r.atPs);
  r = one("cuMemCreate : max=2 -> return CUDA_ERROR_OUT_OF_MEMORY");
  EXPECT_EQ(2u, r.max);
  // All of them at once: every one must hold.
  r = one("cuMemCreate : after=2 max=3 prob=0.5 at=2ms always -> return CUDA_ERROR_OUT_OF_MEMORY");
  EXPECT_EQ(2u, r.after);
  EXPECT_EQ(3u, r.max);
  EXPECT_DOUBLE_EQ(0.5, r.probability);
  EXPECT_EQ(2'000'000'000, r.atPs);
  EXPECT_TRUE(r.always);
  // Unset triggers keep their "not set" values.
  r = one("cuMemCreate : always -> return CUDA_ERROR_OUT_OF_MEMORY");
  EXPECT_EQ(0u, r.nth);
  EXPECT_EQ(0u, r.after);
  EXPECT_EQ(0u, r.max);
  EXPECT_LT(r.probability, 0);
  EXPECT_LT(r.atPs, 0);
}

TEST(PlanFormat, Durations) {
  const std::vector<std::pair<std::string, uint64_t>> good = {
      {"0", 0},           {"7ps", 7},  {"150ns", 150'000}, {"10us", 10'000'000}, {"2.5ms", 2'500'000'000},
      {"1s", 1'000'000'000'000}, {"0ms", 0}, {"1e3us", 1'000'000'000},
  };
  for (const auto& [text, ps] : good) {
    uint64_t got = 1234;
    EXPECT_TRUE(parseDuration(text, &got)) << text;
    EXPECT_EQ(ps, got) << text;
  }
  for (const char* bad : {"", "ms", "10", "10m", "-1ms", "1.5.2ms", "abc", "10 ms", "nanms", "1e30s", "5 ", "s"}) {
    uint64_t got = 0;
    EXPECT_FALSE(parseDuration(bad, &got)) << "'" << bad << "'";
  }
}

// --- Actions ------------------------------------------------------------------------------------

TEST(PlanFormat, Actions) {
  FaultRule r = one("cuMemMap : always -> block");
  EXPECT_EQ(FaultActionKind::kBlock, r.action);
  EXPECT_EQ("", r.label);
  const std::vector<FaultRule> pair = parseFaultPlan("cuMemMap : always -> block name=gate\ncuCtxSynchronize : nth=2 -> release gate", "p");
  ASSERT_EQ(2u, pair.size());
  EXPECT_EQ("gate", pair[0].label);
  EXPECT_EQ(FaultActionKind::kRelease, pair[1].action);
  EXPECT_EQ("gate", pair[1].label);
  EXPECT_EQ(FaultActionKind::kRelease,
            parseFaultPlan("cuMemMap : always -> block name=g; fabric-manager : at=1ms -> release g", "p")[1].action);
  r = one("cuMemcpyHtoD : always -> delay 150ns");
  EXPECT_EQ(FaultActionKind::kDelay, r.action);
  EXPECT_EQ(150'000u, r.timePs);
  EXPECT_FALSE(r.wallClock);
  r = one("cuMemcpyHtoD : always -> delay 20ms wall");
  EXPECT_EQ(FaultActionKind::kDelay, r.action);
  EXPECT_EQ(20'000'000'000u, r.timePs);
  EXPECT_TRUE(r.wallClock);
  r = one("cuMulticastBindMem : nth=1 -> delay 7s wall then return CUDA_ERROR_SYSTEM_NOT_READY");
  EXPECT_EQ(FaultActionKind::kReturn, r.action);
  EXPECT_EQ("CUDA_ERROR_SYSTEM_NOT_READY", r.result);
  EXPECT_TRUE(r.wallClock);
  for (const char* s : {"not-started", "initialising", "ready", "degraded", "restarted"}) {
    r = one(std::string("fabric-manager : always -> state ") + s);
    EXPECT_EQ(FaultActionKind::kState, r.action);
    EXPECT_EQ(s, r.state);
  }
  EXPECT_EQ(FaultActionKind::kExhaust, one("multicast-slot : after=4 -> exhaust").action);
  EXPECT_EQ(FaultActionKind::kAbsent, one("imex : always -> absent").action);
  EXPECT_EQ(FaultActionKind::kPresent, one("imex : always -> present").action);
  EXPECT_EQ(FaultActionKind::kDown, one("link gpu=1 : always -> down").action);
  EXPECT_EQ(FaultActionKind::kUp, one("switch : always -> up").action);
}

// --- Lines, ';' and comments --------------------------------------------------------------------

TEST(PlanFormat, LinesSemicolonsAndComments) {
  const std::string plan =
      "# a comment line\n"
      "\n"
      "   cuMemCreate : nth=1 -> return CUDA_ERROR_OUT_OF_MEMORY   # a trailing comment\n"
      "cuMemMap : always -> delay 1us ; cuMemUnmap : always -> delay 2us;;\n"
      "  ;  \n"
      "# cuMemRelease : always -> block   (commented out)\n"
      "fabric-manager : at=0 -> state initialising # ; imex : always -> absent\n";
  const std::vector<FaultRule> rules = parseFaultPlan(plan, "lines.plan");
  ASSERT_EQ(4u, rules.size());
  EXPECT_EQ(3, rules[0].line);
  EXPECT_EQ("cuMemCreate : nth=1 -> return CUDA_ERROR_OUT_OF_MEMORY", rules[0].text);
  EXPECT_EQ(4, rules[1].line);
  EXPECT_EQ("cuMemMap : always -> delay 1us", rules[1].text);
  EXPECT_EQ(4, rules[2].line);
  EXPECT_EQ("cuMemUnmap", rules[2].entry);
  EXPECT_EQ(2'000'000u, rules[2].timePs);
  EXPECT_EQ(7, rules[3].line);
  EXPECT_EQ(FaultPointKind::kFabricManager, rules[3].point);
  for (const auto& r : rules) EXPECT_EQ("lines.plan", r.file);
  EXPECT_TRUE(parseFaultPlan("", "empty").empty());
  EXPECT_TRUE(parseFaultPlan("# only comments\n\n   # and blanks\n", "empty").empty());
}

// --- Refusals -----------------------------------------------------------------------------------

TEST(PlanFormat, RefusesUnknownPointsFiltersTriggersAndActions) {
  EXPECT_REFUSED("bogus : always -> return CUDA_ERROR_UNKNOWN", 1, "unknown point 'bogus'");
  EXPECT_REFUSED("cuMem-Create : always -> return CUDA_ERROR_UNKNOWN", 1, "is no driver entry point name");
  EXPECT_REFUSED("cuMemCreate colour=red : always -> return CUDA_ERROR_UNKNOWN", 1,
                 "cuMemCreate reports no argument 'colour' (it reports size, handleTypes, flags)");
  EXPECT_REFUSED("cuMemCreate 7 : always -> return CUDA_ERROR_UNKNOWN", 1, "filter '7' is not NAME OP VALUE");
  EXPECT_REFUSED("cuMemCreate device=a : always -> return CUDA_ERROR_UNKNOWN", 1, "device= takes a list");
  EXPECT_REFUSED("cuMemCreate device=1,,2 : always -> return CUDA_ERROR_UNKNOWN", 1, "device= takes a list");
  EXPECT_REFUSED("cuMemCreate rank=-1 : always -> return CUDA_ERROR_UNKNOWN", 1, "rank= takes a list");
  EXPECT_REFUSED("link gpu=x : always -> down", 1, "gpu= takes a device ordinal");
  EXPECT_REFUSED("cuMemCreate : sometimes -> return CUDA_ERROR_UNKNOWN", 1, "trigger 'sometimes' is not one of");
  EXPECT_REFUSED("cuMemCreate : when=3 -> return CUDA_ERROR_UNKNOWN", 1, "unknown trigger 'when'");
  EXPECT_REFUSED("cuMemCreate : always -> explode", 1, "unknown action 'explode'");
}

TEST(PlanFormat, RefusesRulesWithoutTheirParts) {
  EXPECT_REFUSED("cuMemCreate always -> return CUDA_ERROR_UNKNOWN", 1, "a rule reads POINT [FILTERS] : TRIGGERS -> ACTION");
  EXPECT_REFUSED("cuMemCreate : always", 1, "a rule reads POINT");
  EXPECT_REFUSED("cuMemCreate -> return X : always", 1, "a rule reads POINT");
  EXPECT_REFUSED(" : always -> return CUDA_ERROR_UNKNOWN", 1, "names no point");
  EXPECT_REFUSED("cuMemCreate : -> return CUDA_ERROR_UNKNOWN", 1, "has no trigger");
  EXPECT_REFUSED("cuMemCreate : always ->", 1, "has no action");
}

TEST(PlanFormat, RefusesBadCountsTimesAndProbabilities) {
  EXPECT_REFUSED("cuMemCreate : nth=0 -> return CUDA_ERROR_UNKNOWN", 1, "nth= takes a count of at least 1");
  EXPECT_REFUSED("cuMemCreate : max=0 -> return CUDA_ERROR_UNKNOWN", 1, "max= takes a count of at least 1");
  EXPECT_REFUSED("cuMemCreate : nth=two -> return CUDA_ERROR_UNKNOWN", 1, "nth= takes a count");
  EXPECT_REFUSED("cuMemCreate : after=-1 -> return CUDA_ERROR_UNKNOWN", 1, "after= takes a count");
  EXPECT_REFUSED("cuMemCreate : nth=1 after=2 -> return CUDA_ERROR_UNKNOWN", 1, "cannot be combined");
  EXPECT_REFUSED("cuMemCreate : prob=1.5 -> return CUDA_ERROR_UNKNOWN", 1, "prob= takes a probability between 0 and 1");
  EXPECT_REFUSED("cuMemCreate : prob= -> return CUDA_ERROR_UNKNOWN", 1, "prob= takes a probability");
  EXPECT_REFUSED("cuMemCreate : prob=half -> return CUDA_ERROR_UNKNOWN", 1, "prob= takes a probability");
  EXPECT_REFUSED("cuMemCreate : at=10xs -> return CUDA_ERROR_UNKNOWN", 1, "at= takes a simulated time");
  EXPECT_REFUSED("cuMemCreate : at=-2ms -> return CUDA_ERROR_UNKNOWN", 1, "at= takes a simulated time");
  EXPECT_REFUSED("cuMemCreate : at=5 -> return CUDA_ERROR_UNKNOWN", 1, "at= takes a simulated time");
  EXPECT_REFUSED("cuMemCreate : always -> delay soon", 1, "delay takes a simulated time");
  EXPECT_REFUSED("cuMemCreate : always -> delay 5", 1, "delay takes a simulated time");
  EXPECT_REFUSED("cuMemCreate : always -> delay", 1, "delay takes a simulated time");
  EXPECT_REFUSED("cuMemCreate : always -> delay 1ms 2ms", 1, "usage: -> delay TIME [wall] [then return CUDA_ERROR_NAME]");
  EXPECT_REFUSED("cuMemCreate : always -> delay 61s wall", 1, "a wall-clock delay is at most 60s");
  EXPECT_REFUSED("cuMemCreate : always -> delay 1ms wall wall", 1, "usage: -> delay TIME [wall]");
}

TEST(PlanFormat, RefusesBadActionArguments) {
  EXPECT_REFUSED("cuMemCreate : always -> return", 1, "usage: -> return CUDA_ERROR_NAME");
  EXPECT_REFUSED("cuMemCreate : always -> return 401", 1, "return takes a CUresult name");
  EXPECT_REFUSED("cuMemCreate : always -> return CUDA_ERROR_UNKNOWN now", 1, "usage: -> return");
  EXPECT_REFUSED("cuMemCreate : always -> block forever", 1, "usage: -> block [name=ID]");
  EXPECT_REFUSED("cuMemCreate : always -> block name=", 1, "usage: -> block [name=ID]");
  EXPECT_REFUSED("cuMemCreate : always -> release", 1, "usage: -> release ID");
  EXPECT_REFUSED("fabric-manager : always -> state sleepy", 1, "unknown fabric manager state 'sleepy'");
  EXPECT_REFUSED("fabric-manager : always -> state", 1, "usage: -> state");
  EXPECT_REFUSED("multicast-slot : always -> exhaust now", 1, "usage: -> exhaust");
}

TEST(PlanFormat, RefusesActionsAtPointsTheyDoNotApplyTo) {
  EXPECT_REFUSED("fabric-manager : always -> return CUDA_ERROR_UNKNOWN", 1, "applies to driver entry points");
  EXPECT_REFUSED("imex : always -> block", 1, "applies to driver entry points");
  EXPECT_REFUSED("link : always -> delay 1ms", 1, "applies to driver entry points");
  EXPECT_REFUSED("cuMemCreate : always -> state ready", 1, "applies to fabric-manager");
  EXPECT_REFUSED("cuMemCreate : always -> exhaust", 1, "applies to multicast-slot");
  EXPECT_REFUSED("switch : always -> absent", 1, "applies to imex");
  EXPECT_REFUSED("imex : always -> down", 1, "applies to link and switch");
  EXPECT_REFUSED("imex : always -> block name=x; imex : always -> release x", 1, "applies to driver entry points");
}

// Filters a point's events cannot carry would make a rule that silently never fires.
TEST(PlanFormat, RefusesFiltersThePointCannotMatch) {
  EXPECT_REFUSED("fabric-manager device=1 : always -> state ready", 1, "device= applies to driver entry points only");
  EXPECT_REFUSED("multicast-slot device=0 : after=1 -> exhaust", 1, "device= applies to driver entry points only");
  EXPECT_REFUSED("cuMemCreate gpu=1 : always -> return CUDA_ERROR_UNKNOWN", 1, "gpu= applies to link rules only");
  EXPECT_REFUSED("switch gpu=1 : always -> down", 1, "gpu= applies to link rules only");
}

TEST(PlanFormat, ReleaseMustNameABlockRule) {
  EXPECT_REFUSED("# header\ncuMemMap : always -> block name=a\ncuMemUnmap : nth=1 -> release b", 3,
                 "release names 'b', but no block rule has name=b");
  EXPECT_REFUSED("fabric-manager : at=1ms -> release nobody", 1, "no block rule has name=nobody");
  // A release may come before the block it names.
  EXPECT_EQ(2u, parseFaultPlan("cuMemUnmap : nth=1 -> release a\ncuMemMap : always -> block name=a", "p").size());
}

TEST(PlanFormat, RefusalNamesTheLineOfTheBadRule) {
  const std::string plan =
      "# two good rules, then a bad one\n"
      "cuMemCreate : nth=1 -> return CUDA_ERROR_OUT_OF_MEMORY\n"
      "\n"
      "cuMemMap : always -> delay 1us ; cuMemUnmap : always -> delya 2us\n"
      "cuMemRelease : always -> block\n";
  EXPECT_REFUSED(plan, 4, "unknown action 'delya'");
  // The message quotes the rule as written.
  EXPECT_NE(std::string::npos, refusal(plan).problem.find("(in 'cuMemUnmap : always -> delya 2us')"));
}

// --- Through the driver -------------------------------------------------------------------------

class PlanInstall : public McTest {};

TEST_F(PlanInstall, InstallsAndReportsRules) {
  INIT();
  EXPECT_EQ("", mcsim::api::installFaultPlan("# header\ncuMemCreate : nth=2 -> return CUDA_ERROR_OUT_OF_MEMORY\n"
                                             "imex : always -> absent; cuMemMap : always -> delay 1us"));
  const auto report = mcsim::api::faultReport();
  ASSERT_EQ(3u, report.size());
  EXPECT_EQ("cuMemCreate : nth=2 -> return CUDA_ERROR_OUT_OF_MEMORY", report[0].rule);
  EXPECT_EQ("MCSIM_API:2", report[0].where);
  EXPECT_EQ("imex : always -> absent", report[1].rule);
  EXPECT_EQ("MCSIM_API:3", report[1].where);
  EXPECT_EQ("MCSIM_API:3", report[2].where);
  // An empty plan switches injection off.
  EXPECT_EQ("", mcsim::api::installFaultPlan(""));
  EXPECT_TRUE(mcsim::api::faultReport().empty());
}

TEST_F(PlanInstall, RefusesANameThatIsNoCUresultAndKeepsThePlanInForce) {
  INIT();
  ASSERT_EQ("", mcsim::api::installFaultPlan("cuMemCreate : nth=5 -> return CUDA_ERROR_OUT_OF_MEMORY"));
  EXPECT_EQ("MCSIM_API:2: 'CUDA_ERROR_NOT_A_THING' is no CUresult name (in 'cuMemCreate : always -> return CUDA_ERROR_NOT_A_THING')",
            mcsim::api::installFaultPlan("cuMemMap : always -> delay 1us\ncuMemCreate : always -> return CUDA_ERROR_NOT_A_THING"));
  EXPECT_EQ("MCSIM_API:1: 'CUDA_SUCCES' is no CUresult name (in 'cuMemCreate : always -> return CUDA_SUCCES')",
            mcsim::api::installFaultPlan("cuMemCreate : always -> return CUDA_SUCCES"));
  const std::string err = mcsim::api::installFaultPlan("cuMemCreate : always -> return CUDA_ERROR_UNKNOWN\nlink : always -> sideways");
  EXPECT_EQ(0u, err.find("MCSIM_API:2: unknown action 'sideways'")) << err;
  const auto report = mcsim::api::faultReport();
  ASSERT_EQ(1u, report.size());
  EXPECT_EQ("cuMemCreate : nth=5 -> return CUDA_ERROR_OUT_OF_MEMORY", report[0].rule);
}

TEST(PlanInstallBeforeInit, SaysCuInitHasNotSucceeded) {
  EXPECT_EQ("cuInit has not succeeded", mcsim::api::installFaultPlan("imex : always -> absent"));
  EXPECT_TRUE(mcsim::api::faultReport().empty());
}

// A temporary plan file, removed at the end of the test.
class TempPlan {
 public:
  explicit TempPlan(const std::string& text) {
    char name[] = "/tmp/mcsim-fault-plan-XXXXXX";
    const int fd = mkstemp(name);
    EXPECT_GE(fd, 0);
    path_ = name;
    ::close(fd);
    std::ofstream(path_) << text;
  }
  ~TempPlan() { std::remove(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// cuInit with the environment given; returns its result and what it wrote to stderr.
std::pair<CUresult, std::string> initWith(const Env& env) {
  for (const auto& [k, v] : env) ::setenv(k, v, 1);
  StderrCapture capture;
  const CUresult r = cuInit(0);
  return {r, capture.take()};
}

TEST(PlanFromEnvironment, MalformedFileFailsCuInitWithFileAndLine) {
  TempPlan plan("# a plan with a bad third line\ncuMemCreate : nth=1 -> return CUDA_ERROR_OUT_OF_MEMORY\n"
                "cuMemMap : always -> dealy 1us\n");
  const auto [r, err] = initWith({{"MCSIM_FAULTS_FILE", plan.path().c_str()}});
  EXPECT_CU(CUDA_ERROR_NO_DEVICE, r);
  EXPECT_NE(std::string::npos, err.find("mcsim: cannot load fault plan: " + plan.path() + ":3: unknown action 'dealy'")) << err;
  EXPECT_FALSE(mcsim::api::initialized());
  int n = 0;
  EXPECT_CU(CUDA_ERROR_NOT_INITIALIZED, cuDeviceGetCount(&n));
  EXPECT_CU(CUDA_ERROR_NO_DEVICE, cuInit(0));  // the answer stays
}

TEST(PlanFromEnvironment, UnknownResultNameInFileFailsCuInit) {
  TempPlan plan("\n\ncuMemCreate : nth=1 -> return CUDA_ERROR_OUT_OF_MEMORY ; cuMemMap : always -> return CUDA_ERROR_BOGUS\n");
  const auto [r, err] = initWith({{"MCSIM_FAULTS_FILE", plan.path().c_str()}});
  EXPECT_CU(CUDA_ERROR_NO_DEVICE, r);
  EXPECT_NE(std::string::npos, err.find(plan.path() + ":3: 'CUDA_ERROR_BOGUS' is no CUresult name")) << err;
}

TEST(PlanFromEnvironment, UnreadableFileFailsCuInit) {
  const auto [r, err] = initWith({{"MCSIM_FAULTS_FILE", "/nonexistent/mcsim/no.plan"}});
  EXPECT_CU(CUDA_ERROR_NO_DEVICE, r);
  EXPECT_NE(std::string::npos, err.find("/nonexistent/mcsim/no.plan: cannot read the fault plan")) << err;
}

// Issue 19, item 12's sibling: a plan "file" that is a directory or a device is refused unread.
TEST(PlanFromEnvironment, DirectoryOrDeviceAsPlanFileFailsCuInit) {
  const auto [r, err] = initWith({{"MCSIM_FAULTS_FILE", "/dev/zero"}});
  EXPECT_CU(CUDA_ERROR_NO_DEVICE, r);
  EXPECT_NE(std::string::npos, err.find("/dev/zero: cannot read the fault plan: /dev/zero is not a regular file")) << err;
}

// Issue 19, item 16: rules that can never fire were accepted: an entry point mcsim has no such
// name for, a device or a link GPU the node lacks (the default node has 8 GPUs).
TEST(PlanFromEnvironment, RuleNamingNoEntryPointFailsCuInit) {
  const auto [r, err] = initWith({{"MCSIM_FAULTS", "cuMemCreate : nth=1 -> delay 1us; cuMulticastBindMemm : always -> return CUDA_ERROR_UNKNOWN"}});
  EXPECT_CU(CUDA_ERROR_NO_DEVICE, r);
  EXPECT_NE(std::string::npos, err.find("MCSIM_FAULTS:1: 'cuMulticastBindMemm' is no driver entry point mcsim has")) << err;
}

TEST(PlanFromEnvironment, PrefixMatchingNoEntryPointFailsCuInit) {
  const auto [r, err] = initWith({{"MCSIM_FAULTS", "cuMultikast* : always -> return CUDA_ERROR_UNKNOWN"}});
  EXPECT_CU(CUDA_ERROR_NO_DEVICE, r);
  EXPECT_NE(std::string::npos, err.find("'cuMultikast*' is no driver entry point")) << err;
}

TEST(PlanFromEnvironment, RuleNamingADeviceTheNodeLacksFailsCuInit) {
  const auto [r, err] = initWith({{"MCSIM_FAULTS", "cuMemCreate device=1,8 : always -> return CUDA_ERROR_UNKNOWN"}});
  EXPECT_CU(CUDA_ERROR_NO_DEVICE, r);
  EXPECT_NE(std::string::npos, err.find("MCSIM_FAULTS:1: device=8 names no GPU: the node has 8 (0 to 7)")) << err;
}

TEST(PlanFromEnvironment, LinkRuleNamingAGpuTheNodeLacksFailsCuInit) {
  const auto [r, err] = initWith({{"MCSIM_FAULTS", "link gpu=12 : at=0 -> down"}});
  EXPECT_CU(CUDA_ERROR_NO_DEVICE, r);
  EXPECT_NE(std::string::npos, err.find("MCSIM_FAULTS:1: gpu=12 names no GPU: the node has 8 (0 to 7)")) << err;
}

TEST(PlanFromEnvironment, RulesNamingWhatTheNodeHasAreAccepted) {
  const auto [r, err] = initWith({{"MCSIM_FAULTS", "cuMulticast* device=0,7 : nth=1 -> delay 1us; link gpu=7 : at=1s -> down"}});
  EXPECT_CU(CUDA_SUCCESS, r);
  EXPECT_EQ("", err);
}

TEST(PlanFromEnvironment, MalformedOneLinePlanFailsCuInit) {
  const auto [r, err] = initWith({{"MCSIM_FAULTS", "cuMemCreate : nth=1 -> return CUDA_ERROR_OUT_OF_MEMORY; imex : always -> down"}});
  EXPECT_CU(CUDA_ERROR_NO_DEVICE, r);
  EXPECT_NE(std::string::npos, err.find("MCSIM_FAULTS:1: action 'down' applies to link and switch")) << err;
}

TEST(PlanFromEnvironment, FileRulesComeBeforeOneLineRules) {
  TempPlan plan("# file\ncuMemCreate : nth=1 -> return CUDA_ERROR_OUT_OF_MEMORY\n");
  const auto [r, err] = initWith({{"MCSIM_FAULTS_FILE", plan.path().c_str()},
                                  {"MCSIM_FAULTS", "cuMemMap : always -> delay 1us;cuMemUnmap : nth=2 -> return CUDA_ERROR_UNKNOWN"}});
  ASSERT_CU(CUDA_SUCCESS, r);
  EXPECT_EQ("", err);
  const auto report = mcsim::api::faultReport();
  ASSERT_EQ(3u, report.size());
  EXPECT_EQ(plan.path() + ":2", report[0].where);
  EXPECT_EQ("MCSIM_FAULTS:1", report[1].where);
  EXPECT_EQ("cuMemUnmap : nth=2 -> return CUDA_ERROR_UNKNOWN", report[2].rule);
}

// Every plan shipped in examples/faults parses, holds one line of rules at most, and starts with
// the comment header that says what it reproduces.
TEST(PlanFormat, ExamplePlansParse) {
  DIR* dir = opendir(MCSIM_FAULT_PLANS_DIR);
  ASSERT_NE(nullptr, dir);
  int plans = 0;
  while (dirent* e = readdir(dir)) {
    const std::string name = e->d_name;
    if (name.size() < 6 || name.compare(name.size() - 5, 5, ".plan") != 0) continue;
    ++plans;
    const std::string path = std::string(MCSIM_FAULT_PLANS_DIR) + "/" + name;
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string text = ss.str();
    EXPECT_EQ(0u, text.find("# Field failure:")) << name;
    EXPECT_NE(std::string::npos, text.find("# Source:")) << name;
    EXPECT_NE(std::string::npos, text.find("# Test:")) << name;
    std::vector<FaultRule> rules;
    try {
      rules = parseFaultPlan(text, path);
    } catch (const InputError& err) {
      ADD_FAILURE() << err.what();
      continue;
    }
    std::set<int> lines;
    for (const auto& r : rules) lines.insert(r.line);
    EXPECT_LE(lines.size(), 1u) << name << " is not a one-line plan";
  }
  closedir(dir);
  EXPECT_EQ(14, plans) << "one plan per row of the field failure table";
}

}  // namespace
