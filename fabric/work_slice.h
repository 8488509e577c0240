// Device work on the timeline (docs/timeline.md): each kernel, copy and memset a slice of its
// stream's row, with what it was asked to do (grid, block, bytes, parameters) and an arrow from
// the driver call that queued it.
#pragma once

#include <cstdint>
#include <string>

#include "fabric/node.h"
#include "model/timeline.h"

namespace mcsim::fabric {

struct DeviceWork;

// What the slice of `op` shows: its category, its arguments as a JSON object and its arrow
// (DeviceOp::flowId). Asked by the work's planner, on the host thread that submits it, only while
// a timeline is kept.
model::SliceDetail describeWork(const DeviceOp& op, const DeviceWork& work);

// The slice of one piece of work, opened when it starts. close() ends it; work that never ends (a
// kernel still spinning when the program exits) leaves it open, and the timeline writes it as
// unfinished.
class WorkSlice {
 public:
  WorkSlice(const DeviceWork& work, uint64_t startPs);
  // `moreArgs`: a JSON object of what the work found out while it ran (a PTX kernel's bytes).
  void close(uint64_t endPs, const std::string& moreArgs = "");

 private:
  model::TimelineTrack track_;
  uint64_t token_ = 0;
};

}  // namespace mcsim::fabric
