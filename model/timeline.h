// The timeline: simulated activity written as Chrome / Perfetto trace-event JSON
// (MCSIM_TIMELINE=path), to open in ui.perfetto.dev or chrome://tracing, and summed up in a
// table at exit (MCSIM_TIMELINE_SUMMARY=1).
//
// Each piece of hardware is a "process" in the viewer (GPU 3, NVSwitch 1, the host) and each of
// its resources a "thread" (HBM stack 2, NVLink to switch 1 out, stream 7, driver calls). Spans
// are simulated time. Back-to-back spans of one track with the same label are merged, so a long
// transfer is one bar however many chunks it moved in. Device work (kernels, copies) and NVTX
// ranges are slices of their own: opened when they start and closed when they end, with their
// arguments, and an arrow from the driver call that queued them. Output is ordered by track and
// time: the same run writes the same file.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace mcsim::model {

class Timeline;

// What a slice of device work shows when it is selected, and where it came from.
struct SliceDetail {
  std::string category;  // "kernel", "copy", "memset", "nvtx" ...: the summary sums kernels by name
  std::string argsJson;  // a JSON object (grid, block, bytes, parameters ...), or empty
  uint64_t flowIn = 0;   // the arrow from the driver call that queued it (Timeline::flowFromLastCall)
};

// A handle to one track; invalid (and free to use) when no timeline is being kept.
class TimelineTrack {
 public:
  TimelineTrack() = default;
  bool valid() const { return timeline_ != nullptr; }
  void span(uint64_t startPs, uint64_t endPs, const char* what) const;
  void instant(uint64_t atPs, const std::string& what) const;
  // A slice that never merges with others, open until close(token). One still open when the
  // timeline is written (a kernel that never finished, an NVTX range never popped) is written
  // as unfinished, up to the last time the timeline saw. Returns 0 on an invalid track.
  uint64_t open(uint64_t startPs, const std::string& what, SliceDetail detail) const;
  // `moreArgs`: a JSON object whose members join the slice's arguments (what the work found out
  // while it ran).
  void close(uint64_t token, uint64_t endPs, const std::string& moreArgs = "") const;

 private:
  friend class Timeline;
  TimelineTrack(Timeline* t, int id) : timeline_(t), id_(id) {}
  Timeline* timeline_ = nullptr;
  int id_ = -1;
};

class Timeline {
 public:
  // The timeline of this process: non-null once start() was asked for a file or a summary
  // (MCSIM_TIMELINE, MCSIM_TIMELINE_SUMMARY, which the driver and mcsim-node read as they start).
  // It is written, and summed up, when the process exits.
  static Timeline* active();
  // Starts the process's timeline: written to `path` at exit (none when empty), and summed up on
  // standard error at exit when `summary`. Nothing when neither is asked for, or when a timeline
  // is already kept (one per process: the first stays).
  static void start(const std::string& path, bool summary);

  // `group` is the viewer's process row (e.g. "GPU 0"), `name` the thread row within it.
  TimelineTrack track(const std::string& group, const std::string& name);
  // That track of the active timeline, or an invalid (do-nothing) track when none is kept.
  static TimelineTrack trackIfActive(const std::string& group, const std::string& name);
  void span(int track, uint64_t startPs, uint64_t endPs, const char* what);
  void instant(int track, uint64_t atPs, const std::string& what);
  uint64_t open(int track, uint64_t startPs, const std::string& what, SliceDetail detail);
  void close(uint64_t token, uint64_t endPs, const std::string& moreArgs = "");
  // An arrow out of the last instant the calling thread put on this timeline (the driver call it
  // is in): its id, for the SliceDetail::flowIn of the work the call queues. 0 when the thread
  // noted nothing. Arrows whose target never reached this timeline (work run by a shared node,
  // which keeps its own) are not written.
  uint64_t flowFromLastCall();
  // A range that need not nest with others (nvtxRangeStart / End): an async slice of `group`.
  uint64_t openAsync(const std::string& group, uint64_t startPs, const std::string& what);
  void closeAsync(uint64_t token, uint64_t endPs);

  // Writes the file now (it is rewritten at exit with whatever came later); true when written,
  // or when no file is kept.
  bool flush();
  // The table MCSIM_TIMELINE_SUMMARY prints: time per kernel, per copy kind, per link and switch.
  std::string summary();
  explicit Timeline(std::string path, bool summary = false);

 private:
  static constexpr uint64_t kOpen = UINT64_MAX;  // the end of a slice not closed yet
  struct Span {
    uint64_t start, end;
    std::string what;
    bool instant = false;
    bool own = false;        // an open()ed slice: never merged
    uint64_t flowOut = 0;    // an instant's arrow out
    SliceDetail detail;
  };
  struct Track {
    std::string group, name;
    std::vector<Span> spans;
  };
  struct AsyncSpan {
    std::string group, what;
    uint64_t start, end;
  };
  uint64_t lastTimeLocked() const;
  std::string path_;
  bool summary_ = false;
  std::mutex mu_;
  std::vector<Track> tracks_;
  std::map<std::pair<std::string, std::string>, int> byName_;
  std::vector<AsyncSpan> async_;
  uint64_t nextFlow_ = 1;
};

}  // namespace mcsim::model
