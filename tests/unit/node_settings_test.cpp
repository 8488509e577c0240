// What the fabric and the model are handed from the settings (fabric/node_settings.h): the node,
// its fabric manager, where shared nodes live, and the timeline, each given values and reading no
// environment.
#include "fabric/node_settings.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "fabric/fabric_manager.h"
#include "fabric/node_host.h"
#include "fabric/node_ipc.h"
#include "fabric/preset.h"
#include "model/timeline.h"
#include "settings/settings.h"

namespace mcsim::fabric {
namespace {

settings::Settings parseOf(std::vector<const char*> env) {
  env.push_back(nullptr);
  std::vector<std::string> warnings;
  settings::Settings s = settings::parse(env.data(), &warnings);
  EXPECT_TRUE(warnings.empty());
  return s;
}

TEST(NodeSettings, DefaultsAreTheDeclaredOnes) {
  const NodeSettings n = NodeSettings::from(parseOf({}));
  EXPECT_EQ(n.hang.graceSeconds, 10.0);
  EXPECT_FALSE(n.hang.abortOnHang);
  EXPECT_TRUE(n.movesData);
  EXPECT_EQ(n.hostPollNs, 1000u);
  EXPECT_EQ(n.fabricManager, "");
  EXPECT_EQ(n.nodeDir, "/tmp/mcsim-" + std::to_string(getuid()));
  EXPECT_EQ(n.channelSpin, 0);
}

TEST(NodeSettings, EachSettingReachesItsField) {
  const NodeSettings n = NodeSettings::from(
      parseOf({"MCSIM_HANG_GRACE_S=2.5", "MCSIM_ON_HANG=abort", "MCSIM_TIMING_ONLY=1", "MCSIM_HOST_POLL_NS=7",
               "MCSIM_FABRIC_MANAGER=degraded", "XDG_RUNTIME_DIR=/run/user/7", "MCSIM_NODE_SPIN=300"}));
  EXPECT_EQ(n.hang.graceSeconds, 2.5);
  EXPECT_TRUE(n.hang.abortOnHang);
  EXPECT_FALSE(n.movesData);
  EXPECT_EQ(n.hostPollNs, 7u);
  EXPECT_EQ(n.fabricManager, "degraded");
  EXPECT_EQ(n.nodeDir, "/run/user/7/mcsim");
  EXPECT_EQ(n.channelSpin, 300);
  // MCSIM_NODE_DIR wins over XDG_RUNTIME_DIR.
  EXPECT_EQ(NodeSettings::from(parseOf({"XDG_RUNTIME_DIR=/run/user/7", "MCSIM_NODE_DIR=/tmp/nodes"})).nodeDir,
            "/tmp/nodes");
}

TEST(NodeSettings, NodePathsAreInTheDirectoryGiven) {
  const ipc::NodePaths p = ipc::nodePaths("job1", "/tmp/nodes");
  EXPECT_EQ(p.dir, "/tmp/nodes");
  EXPECT_EQ(p.socket, "/tmp/nodes/job1.sock");
  EXPECT_EQ(p.lock, "/tmp/nodes/job1.lock");
  EXPECT_EQ(p.log, "/tmp/nodes/job1.log");
}

TEST(NodeSettings, TheFabricManagerStartsInTheStateGivenElseThePresets) {
  const Preset preset = loadPreset("hgx-h100");
  EXPECT_EQ(FabricManager(preset, "").state(), FabricManagerState::kReady);
  EXPECT_EQ(FabricManager(preset, "initialising").state(), FabricManagerState::kInitialising);
  EXPECT_EQ(FabricManager(preset, "degraded").state(), FabricManagerState::kDegraded);
  EXPECT_EQ(FabricManager(loadPreset("single-h100"), "").state(), FabricManagerState::kNotStarted);
}

// One node per test: a process holds one engine.
TEST(NodeSettings, ATimingOnlyNodeMovesNoData) {
  NodeSettings timingOnly;
  timingOnly.movesData = false;
  EXPECT_FALSE(NodeHost(loadPreset("single-h100"), timingOnly).movesData());
}

TEST(NodeSettings, ANodeMovesDataByDefault) {
  EXPECT_TRUE(NodeHost(loadPreset("single-h100"), NodeSettings()).movesData());
}

TEST(NodeSettings, TheTimelineIsKeptOnlyWhereTold) {
  ASSERT_EQ(model::Timeline::active(), nullptr);
  model::Timeline::start("", false);
  EXPECT_EQ(model::Timeline::active(), nullptr);
  const std::string path = ::testing::TempDir() + "node_settings_timeline.json";
  model::Timeline::start(path, false);
  ASSERT_NE(model::Timeline::active(), nullptr);
  model::Timeline* first = model::Timeline::active();
  model::Timeline::start(path + ".second", true);  // one timeline per process: the first stays
  EXPECT_EQ(model::Timeline::active(), first);
  EXPECT_TRUE(first->flush());
}

}  // namespace
}  // namespace mcsim::fabric
