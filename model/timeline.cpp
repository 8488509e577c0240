#include "model/timeline.h"
#include "model/hang_abort.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>

#include <nlohmann/json.hpp>

namespace mcsim::model {

void TimelineTrack::span(uint64_t startPs, uint64_t endPs, const char* what) const {
  if (timeline_ != nullptr) timeline_->span(id_, startPs, endPs, what);
}

void TimelineTrack::instant(uint64_t atPs, const std::string& what) const {
  if (timeline_ != nullptr) timeline_->instant(id_, atPs, what);
}

namespace {
std::atomic<Timeline*> gActive{nullptr};
}  // namespace

Timeline* Timeline::active() { return gActive.load(std::memory_order_acquire); }

void Timeline::writeTo(const std::string& path) {
  if (path.empty() || active() != nullptr) return;
  auto* t = new Timeline(path);  // leaked: written by the exit handler
  Timeline* none = nullptr;
  if (!gActive.compare_exchange_strong(none, t, std::memory_order_acq_rel)) {
    delete t;
    return;
  }
  std::atexit([] { Timeline::active()->flush(); });
  beforeHangAbort([] { Timeline::active()->flush(); });  // MCSIM_ON_HANG=abort runs no exit handlers
}

TimelineTrack Timeline::trackIfActive(const std::string& group, const std::string& name) {
  Timeline* t = active();
  return t != nullptr ? t->track(group, name) : TimelineTrack();
}

Timeline::Timeline(std::string path) : path_(std::move(path)) {}

TimelineTrack Timeline::track(const std::string& group, const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  auto [it, added] = byName_.emplace(std::make_pair(group, name), static_cast<int>(tracks_.size()));
  if (added) tracks_.push_back(Track{group, name, {}});
  return TimelineTrack(this, it->second);
}

void Timeline::span(int track, uint64_t startPs, uint64_t endPs, const char* what) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Span>& spans = tracks_[static_cast<size_t>(track)].spans;
  const std::string label = what != nullptr ? what : "busy";
  // Merge with the previous span when this one continues it (chunks of one transfer).
  if (!spans.empty() && !spans.back().instant && spans.back().what == label && startPs <= spans.back().end &&
      startPs >= spans.back().start) {
    if (endPs > spans.back().end) spans.back().end = endPs;
    return;
  }
  spans.push_back(Span{startPs, endPs, label, false});
}

void Timeline::instant(int track, uint64_t atPs, const std::string& what) {
  std::lock_guard<std::mutex> lock(mu_);
  tracks_[static_cast<size_t>(track)].spans.push_back(Span{atPs, atPs, what, true});
}

bool Timeline::flush() {
  std::lock_guard<std::mutex> lock(mu_);
  // Viewer process ids in order of the groups' names, thread ids in order of creation.
  std::map<std::string, int> pids;
  for (const Track& t : tracks_) pids.emplace(t.group, 0);
  int next = 1;
  for (auto& [group, pid] : pids) pid = next++;
  nlohmann::json events = nlohmann::json::array();
  for (const auto& [group, pid] : pids) {
    events.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", pid}, {"args", {{"name", group}}}});
    events.push_back({{"ph", "M"}, {"name", "process_sort_index"}, {"pid", pid}, {"args", {{"sort_index", pid}}}});
  }
  for (size_t i = 0; i < tracks_.size(); ++i) {
    const Track& t = tracks_[i];
    const int pid = pids[t.group];
    const int tid = static_cast<int>(i) + 1;
    events.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", pid}, {"tid", tid}, {"args", {{"name", t.name}}}});
    events.push_back({{"ph", "M"}, {"name", "thread_sort_index"}, {"pid", pid}, {"tid", tid},
                      {"args", {{"sort_index", tid}}}});
    for (const Span& s : t.spans) {
      // Trace-event times are microseconds; simulated time is kept to the picosecond.
      const double ts = static_cast<double>(s.start) / 1e6;
      if (s.instant) {
        events.push_back({{"ph", "i"}, {"s", "t"}, {"name", s.what}, {"pid", pid}, {"tid", tid}, {"ts", ts}});
      } else {
        events.push_back({{"ph", "X"}, {"name", s.what}, {"pid", pid}, {"tid", tid}, {"ts", ts},
                          {"dur", static_cast<double>(s.end - s.start) / 1e6}});
      }
    }
  }
  nlohmann::json doc = {{"displayTimeUnit", "ns"}, {"traceEvents", events}};
  FILE* f = std::fopen(path_.c_str(), "w");
  if (f == nullptr) {
    std::fprintf(stderr, "mcsim: cannot write the timeline to '%s'\n", path_.c_str());
    return false;
  }
  const std::string text = doc.dump(1);
  std::fwrite(text.data(), 1, text.size(), f);
  std::fputc('\n', f);
  return std::fclose(f) == 0;
}

}  // namespace mcsim::model
