#include "fabric/node_settings.h"

#include "fabric/node_ipc.h"
#include "settings/settings.h"

namespace mcsim::fabric {

NodeSettings NodeSettings::from(const settings::Settings& s) {
  NodeSettings n;
  n.hang.graceSeconds = s.hangGraceSeconds;
  n.hang.abortOnHang = s.onHang == "abort";
  n.movesData = !s.timingOnly;
  n.hostPollNs = s.hostPollNs;
  n.fabricManager = s.fabricManager;
  n.nodeDir = ipc::nodeDirectory(s.nodeDir, s.xdgRuntimeDir);
  n.channelSpin = static_cast<int>(s.nodeSpin);
  return n;
}

}  // namespace mcsim::fabric
