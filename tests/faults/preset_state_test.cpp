// The fabric manager's initial state from the preset (fabric_manager.initial_state): the built-in
// presets say it, a user's preset can change it, a bad value is refused with its file and line,
// and MCSIM_FABRIC_MANAGER and fault plans still override it.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "fabric/preset.h"
#include "tests/faults/fault_test.h"

namespace {

using namespace faulttest;
using mcsim::fabric::InputError;
using mcsim::fabric::loadPreset;

std::string readSource(const std::string& relative) {
  std::ifstream in(std::string(MCSIM_SOURCE_DIR) + "/" + relative);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// hgx-h100.json with its initial_state line replaced by `replacement` (a whole "fabric_manager"
// member, or nothing), written to a temporary file that the object removes.
class EditedPreset {
 public:
  explicit EditedPreset(const std::string& fabricManagerMember) {
    std::string text = readSource("fabric/presets/nodes/hgx-h100.json");
    const std::string from = "  \"fabric_manager\": {\n    \"initial_state\": \"ready\"\n  },\n";
    const auto at = text.find(from);
    EXPECT_NE(std::string::npos, at);
    if (at != std::string::npos) text.replace(at, from.size(), fabricManagerMember);
    char name[] = "/tmp/mcsim-preset-XXXXXX.json";
    const int fd = mkstemps(name, 5);
    EXPECT_GE(fd, 0);
    ::close(fd);
    path_ = name;
    text_ = text;
    std::ofstream(path_) << text;
  }
  ~EditedPreset() { std::remove(path_.c_str()); }
  const std::string& path() const { return path_; }
  // "PATH:LINE: " of the first line holding `fragment` (so that the test does not depend on where
  // in the file the key stands).
  std::string at(const std::string& fragment) const {
    const auto pos = text_.find(fragment);
    EXPECT_NE(std::string::npos, pos) << fragment;
    const long line = 1 + std::count(text_.begin(), text_.begin() + static_cast<long>(pos), '\n');
    return path_ + ":" + std::to_string(line) + ": ";
  }

 private:
  std::string path_, text_;
};

std::string loadError(const std::string& path) {
  try {
    loadPreset(path);
  } catch (const InputError& e) {
    return e.what();
  }
  return "loaded";
}

TEST(PresetFabricManager, BuiltInPresetsSayTheirInitialState) {
  for (const std::string& name : mcsim::fabric::builtinPresetNames()) {
    const auto p = loadPreset(name);
    EXPECT_EQ(p.multicastSupported() ? "ready" : "not-started", p.fabricManagerInitialState) << name;
  }
}

TEST(PresetFabricManager, AnyStateAndTheDefaultWithoutTheKey) {
  for (const char* state : {"not-started", "initialising", "ready", "degraded"}) {
    EditedPreset p(std::string("  \"fabric_manager\": {\"initial_state\": \"") + state + "\"},\n");
    EXPECT_EQ(state, loadPreset(p.path()).fabricManagerInitialState);
  }
  EditedPreset none("");
  EXPECT_EQ("ready", loadPreset(none.path()).fabricManagerInitialState);
}

TEST(PresetFabricManager, BadValuesAreRefusedWithFileAndLine) {
  {
    EditedPreset p("  \"fabric_manager\": {\n    \"initial_state\": \"booting\"\n  },\n");
    const std::string err = loadError(p.path());
    EXPECT_EQ(0u, err.find(p.at("booting") + "unknown fabric manager state 'booting'")) << err;
  }
  {
    EditedPreset p("  \"fabric_manager\": {\n    \"initial_state\": 1\n  },\n");
    EXPECT_EQ(0u, loadError(p.path()).find(p.at("\"initial_state\": 1") + "'initial_state' must be a string"));
  }
  {
    EditedPreset p("  \"fabric_manager\": {\n    \"state\": \"ready\"\n  },\n");
    const std::string err = loadError(p.path());
    EXPECT_NE(std::string::npos, err.find("missing required key 'initial_state'")) << err;
  }
  {
    EditedPreset p("  \"fabric_manager\": {\n    \"initial_state\": \"ready\",\n    \"restarts\": 2\n  },\n");
    const std::string err = loadError(p.path());
    EXPECT_EQ(0u, err.find(p.at("restarts") + "unknown key 'restarts'")) << err;
  }
}

TEST(PresetFabricManager, APresetWithoutAFabricCannotStartAManager) {
  std::string text = readSource("fabric/presets/nodes/single-h100.json");
  const std::string from = "\"initial_state\": \"not-started\"";
  ASSERT_NE(std::string::npos, text.find(from));
  text.replace(text.find(from), from.size(), "\"initial_state\": \"ready\"");
  char name[] = "/tmp/mcsim-preset-XXXXXX.json";
  const int fd = mkstemps(name, 5);
  ::close(fd);
  std::ofstream(name) << text;
  const std::string err = loadError(name);
  std::remove(name);
  EXPECT_NE(std::string::npos, err.find("has no fabric manager running: its initial_state can only be 'not-started'")) << err;
}

// A user's preset whose manager is still initialising: binds say SYSTEM_NOT_READY until a plan
// (or MCSIM_FABRIC_MANAGER) says otherwise.
class PresetState : public McTest {
 protected:
  // A bind on a one-device team, undone when it succeeds.
  CUresult bindOnce() {
    CUmemGenericAllocationHandle mem = makeMem(0, kMin), mc = makeTeam({0}, kMin);
    const uint64_t before = mcsim::api::stateDigest();
    const CUresult r = cuMulticastBindMem(mc, 0, mem, 0, kMin, 0);
    if (r == CUDA_SUCCESS) EXPECT_OK(cuMulticastUnbind(mc, 0, 0, kMin));
    else EXPECT_EQ(before, mcsim::api::stateDigest());
    EXPECT_OK(cuMemRelease(mc));
    EXPECT_OK(cuMemRelease(mem));
    return r;
  }
};

TEST_F(PresetState, InitialStateGatesBindsUntilAPlanMovesIt) {
  EditedPreset p("  \"fabric_manager\": {\"initial_state\": \"initialising\"},\n");
  INIT(p.path().c_str());
  EXPECT_CU(CUDA_ERROR_SYSTEM_NOT_READY, bindOnce());
  ASSERT_EQ("", mcsim::api::installFaultPlan("fabric-manager : nth=1 -> state ready"));
  EXPECT_CU(CUDA_SUCCESS, bindOnce());
}

TEST_F(PresetState, EnvironmentOverridesThePreset) {
  EditedPreset p("  \"fabric_manager\": {\"initial_state\": \"degraded\"},\n");
  INIT(p.path().c_str(), {{"MCSIM_FABRIC_MANAGER", "ready"}});
  EXPECT_CU(CUDA_SUCCESS, bindOnce());
}

TEST_F(PresetState, DegradedPresetFailsBindsWithIllegalState) {
  EditedPreset p("  \"fabric_manager\": {\"initial_state\": \"degraded\"},\n");
  INIT(p.path().c_str());
  EXPECT_CU(CUDA_ERROR_ILLEGAL_STATE, bindOnce());
}

}  // namespace
