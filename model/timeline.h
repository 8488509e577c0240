// The timeline: simulated activity written as Chrome / Perfetto trace-event JSON
// (MCSIM_TIMELINE=path), to open in ui.perfetto.dev or chrome://tracing.
//
// Each piece of hardware is a "process" in the viewer (GPU 3, NVSwitch 1, the host) and each of
// its resources a "thread" (HBM stack 2, NVLink to switch 1 out, stream 7, driver calls). Spans
// are simulated time. Back-to-back spans of one track with the same label are merged, so a long
// transfer is one bar however many chunks it moved in. Output is ordered by track and time:
// the same run writes the same file.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace mcsim::model {

class Timeline;

// A handle to one track; invalid (and free to use) when no timeline is being written.
class TimelineTrack {
 public:
  TimelineTrack() = default;
  bool valid() const { return timeline_ != nullptr; }
  void span(uint64_t startPs, uint64_t endPs, const char* what) const;
  void instant(uint64_t atPs, const std::string& what) const;

 private:
  friend class Timeline;
  TimelineTrack(Timeline* t, int id) : timeline_(t), id_(id) {}
  Timeline* timeline_ = nullptr;
  int id_ = -1;
};

class Timeline {
 public:
  // The timeline of this process: non-null once writeTo has named a file (MCSIM_TIMELINE, which
  // the driver and mcsim-node read as they start). It is written when the process exits (and by
  // flush()).
  static Timeline* active();
  // Starts the process's timeline, to be written to `path` at exit; nothing when `path` is empty or
  // a timeline is already being written.
  static void writeTo(const std::string& path);

  // `group` is the viewer's process row (e.g. "GPU 0"), `name` the thread row within it.
  TimelineTrack track(const std::string& group, const std::string& name);
  // That track of the active timeline, or an invalid (do-nothing) track when none is written.
  static TimelineTrack trackIfActive(const std::string& group, const std::string& name);
  void span(int track, uint64_t startPs, uint64_t endPs, const char* what);
  void instant(int track, uint64_t atPs, const std::string& what);
  // Writes the file now (it is rewritten at exit with whatever came later).
  bool flush();
  explicit Timeline(std::string path);

 private:
  struct Span {
    uint64_t start, end;
    std::string what;
    bool instant;
  };
  struct Track {
    std::string group, name;
    std::vector<Span> spans;
  };
  std::string path_;
  std::mutex mu_;
  std::vector<Track> tracks_;
  std::map<std::pair<std::string, std::string>, int> byName_;
};

}  // namespace mcsim::model
