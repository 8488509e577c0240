// What a node, and a process attached to a shared one, are told by the settings of the process
// that makes them (settings/settings.def). The fabric and the model read no environment: the
// driver (cuInit) and mcsim-node (at start) read it and hand these values in.
#pragma once

#include <cstdint>
#include <string>

#include "fabric/team_wait.h"

namespace mcsim::settings {
struct Settings;
}

namespace mcsim::fabric {

struct NodeSettings {
  HangPolicy hang;              // MCSIM_HANG_GRACE_S, MCSIM_ON_HANG
  bool movesData = true;        // false with MCSIM_TIMING_ONLY=1: time copies, move no data
  uint64_t hostPollNs = 1000;   // MCSIM_HOST_POLL_NS: how far an unanswered query lets time run
  std::string fabricManager;    // MCSIM_FABRIC_MANAGER: the initial state's name; "" for the preset's
  std::string nodeDir;          // where shared nodes live (ipc::nodeDirectory of MCSIM_NODE_DIR)
  int channelSpin = 0;          // MCSIM_NODE_SPIN (channel::setSpinRounds)

  static NodeSettings from(const settings::Settings& s);
};

}  // namespace mcsim::fabric
