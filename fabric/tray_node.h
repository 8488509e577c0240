// The node as one process's driver sees it: the GPUs of its host (one compute tray of a rack,
// docs/multiprocess.md, "Trays", or the whole node), narrowed and reordered by the process's
// CUDA_VISIBLE_DEVICES (TraySpan::visible). A Node that wraps the process's node (embedded or
// shared) and numbers the GPUs it sees 0 .. n-1, as the host's own driver does. Every device a call names (a memory location,
// an access descriptor, a stream's engine, a multicast member, a fault plan's device) goes to the
// node as the rack's GPU; every device an answer names comes back as the tray's ordinal. A device
// of another tray (the memory behind an imported FABRIC handle) comes back as its ordinal on its
// own tray, which is what its exporter saw. Host NUMA locations are the tray's too: the tray's
// host NUMA nodes are numbered from 0.
#pragma once

#include <memory>

#include "fabric/node.h"

namespace mcsim::fabric {

// `inner` seen from the tray `span`.
std::unique_ptr<Node> makeTrayNode(std::unique_ptr<Node> inner, const TraySpan& span);

}  // namespace mcsim::fabric
