#include "model/timeline.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <set>

#include <nlohmann/json.hpp>

#include "model/hang_abort.h"

namespace mcsim::model {

void TimelineTrack::span(uint64_t startPs, uint64_t endPs, const char* what) const {
  if (timeline_ != nullptr) timeline_->span(id_, startPs, endPs, what);
}

void TimelineTrack::instant(uint64_t atPs, const std::string& what) const {
  if (timeline_ != nullptr) timeline_->instant(id_, atPs, what);
}

uint64_t TimelineTrack::open(uint64_t startPs, const std::string& what, SliceDetail detail) const {
  return timeline_ != nullptr ? timeline_->open(id_, startPs, what, std::move(detail)) : 0;
}

void TimelineTrack::close(uint64_t token, uint64_t endPs, const std::string& moreArgs) const {
  if (timeline_ != nullptr) timeline_->close(token, endPs, moreArgs);
}

namespace {

std::atomic<Timeline*> gActive{nullptr};

// The last instant this thread put on a timeline (the driver call it is in), where an arrow to
// the work the call queues starts. Plain data: safe to touch while the thread ends.
struct LastInstant {
  Timeline* timeline;
  int track;
  size_t index;
};
thread_local LastInstant tLastInstant{nullptr, -1, 0};

// A slice's token: its track and its index there (slices are only ever appended).
uint64_t tokenOf(int track, size_t index) { return (static_cast<uint64_t>(track) + 1) << 32 | index; }

double microseconds(uint64_t ps) { return static_cast<double>(ps) / 1e6; }

}  // namespace

Timeline* Timeline::active() { return gActive.load(std::memory_order_acquire); }

void Timeline::start(const std::string& path, bool summary) {
  if ((path.empty() && !summary) || active() != nullptr) return;
  auto* t = new Timeline(path, summary);  // leaked: written by the exit handler
  Timeline* none = nullptr;
  if (!gActive.compare_exchange_strong(none, t, std::memory_order_acq_rel)) {
    delete t;
    return;
  }
  std::atexit([] {
    Timeline* timeline = Timeline::active();
    timeline->flush();
    if (timeline->summary_) std::fputs(timeline->summary().c_str(), stderr);
  });
  beforeHangAbort([] { Timeline::active()->flush(); });  // MCSIM_ON_HANG=abort runs no exit handlers
}

TimelineTrack Timeline::trackIfActive(const std::string& group, const std::string& name) {
  Timeline* t = active();
  return t != nullptr ? t->track(group, name) : TimelineTrack();
}

Timeline::Timeline(std::string path, bool summary) : path_(std::move(path)), summary_(summary) {}

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
  if (!spans.empty() && !spans.back().instant && !spans.back().own && spans.back().what == label &&
      startPs <= spans.back().end && startPs >= spans.back().start) {
    if (endPs > spans.back().end) spans.back().end = endPs;
    return;
  }
  Span s;
  s.start = startPs;
  s.end = endPs;
  s.what = label;
  spans.push_back(std::move(s));
}

void Timeline::instant(int track, uint64_t atPs, const std::string& what) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Span>& spans = tracks_[static_cast<size_t>(track)].spans;
  Span s;
  s.start = s.end = atPs;
  s.what = what;
  s.instant = true;
  spans.push_back(std::move(s));
  tLastInstant = LastInstant{this, track, spans.size() - 1};
}

uint64_t Timeline::open(int track, uint64_t startPs, const std::string& what, SliceDetail detail) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Span>& spans = tracks_[static_cast<size_t>(track)].spans;
  Span s;
  s.start = startPs;
  s.end = kOpen;
  s.what = what;
  s.own = true;
  s.detail = std::move(detail);
  spans.push_back(std::move(s));
  return tokenOf(track, spans.size() - 1);
}

void Timeline::close(uint64_t token, uint64_t endPs, const std::string& moreArgs) {
  if (token == 0) return;
  std::lock_guard<std::mutex> lock(mu_);
  const size_t track = static_cast<size_t>(token >> 32) - 1;
  const size_t index = token & 0xffffffffu;
  if (track >= tracks_.size() || index >= tracks_[track].spans.size()) return;
  Span& s = tracks_[track].spans[index];
  s.end = std::max(endPs, s.start);
  if (!moreArgs.empty()) {
    nlohmann::json args = s.detail.argsJson.empty() ? nlohmann::json::object()
                                                     : nlohmann::json::parse(s.detail.argsJson, nullptr, false);
    const nlohmann::json more = nlohmann::json::parse(moreArgs, nullptr, false);
    if (args.is_object() && more.is_object()) {
      args.update(more);
      s.detail.argsJson = args.dump();
    }
  }
}

uint64_t Timeline::flowFromLastCall() {
  const LastInstant last = tLastInstant;
  if (last.timeline != this) return 0;
  std::lock_guard<std::mutex> lock(mu_);
  Span& call = tracks_[static_cast<size_t>(last.track)].spans[last.index];
  if (call.flowOut == 0) call.flowOut = nextFlow_++;
  return call.flowOut;
}

uint64_t Timeline::openAsync(const std::string& group, uint64_t startPs, const std::string& what) {
  std::lock_guard<std::mutex> lock(mu_);
  async_.push_back(AsyncSpan{group, what, startPs, kOpen});
  return async_.size();
}

void Timeline::closeAsync(uint64_t token, uint64_t endPs) {
  std::lock_guard<std::mutex> lock(mu_);
  if (token == 0 || token > async_.size()) return;
  AsyncSpan& s = async_[token - 1];
  s.end = std::max(endPs, s.start);
}

uint64_t Timeline::lastTimeLocked() const {
  uint64_t last = 0;
  for (const Track& t : tracks_) {
    for (const Span& s : t.spans) last = std::max(last, s.end == kOpen ? s.start : s.end);
  }
  for (const AsyncSpan& s : async_) last = std::max(last, s.end == kOpen ? s.start : s.end);
  return last;
}

bool Timeline::flush() {
  if (path_.empty()) return true;
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t last = lastTimeLocked();
  // Viewer process ids in order of the groups' names, thread ids in order of creation.
  std::map<std::string, int> pids;
  for (const Track& t : tracks_) pids.emplace(t.group, 0);
  for (const AsyncSpan& s : async_) pids.emplace(s.group, 0);
  int next = 1;
  for (auto& [group, pid] : pids) pid = next++;
  // Arrows are written only where both ends are here (a shared node's work is in its own file).
  std::set<uint64_t> targets;
  for (const Track& t : tracks_) {
    for (const Span& s : t.spans) {
      if (s.detail.flowIn != 0) targets.insert(s.detail.flowIn);
    }
  }
  nlohmann::json events = nlohmann::json::array();
  for (const auto& [group, pid] : pids) {
    events.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", pid}, {"args", {{"name", group}}}});
    events.push_back({{"ph", "M"}, {"name", "process_sort_index"}, {"pid", pid}, {"args", {{"sort_index", pid}}}});
  }
  std::set<uint64_t> arrived;
  for (size_t i = 0; i < tracks_.size(); ++i) {
    const Track& t = tracks_[i];
    const int pid = pids[t.group];
    const int tid = static_cast<int>(i) + 1;
    events.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", pid}, {"tid", tid}, {"args", {{"name", t.name}}}});
    events.push_back({{"ph", "M"}, {"name", "thread_sort_index"}, {"pid", pid}, {"tid", tid},
                      {"args", {{"sort_index", tid}}}});
    for (const Span& s : t.spans) {
      // Trace-event times are microseconds; simulated time is kept to the picosecond. Instants
      // are slices of no duration: the viewers draw arrows only between slices.
      const bool unfinished = s.end == kOpen;
      const uint64_t end = unfinished ? std::max(last, s.start) : s.end;
      nlohmann::json e = {{"ph", "X"},       {"name", unfinished ? s.what + " (unfinished)" : s.what},
                          {"pid", pid},      {"tid", tid},
                          {"ts", microseconds(s.start)}, {"dur", microseconds(end - s.start)}};
      if (!s.detail.category.empty()) e["cat"] = s.detail.category;
      if (!s.detail.argsJson.empty() || unfinished) {
        nlohmann::json args = s.detail.argsJson.empty() ? nlohmann::json::object()
                                                         : nlohmann::json::parse(s.detail.argsJson, nullptr, false);
        if (!args.is_object()) args = nlohmann::json::object();
        if (unfinished) args["finished"] = false;
        e["args"] = std::move(args);
      }
      if (s.flowOut != 0 && targets.count(s.flowOut) != 0) {
        e["bind_id"] = s.flowOut;
        e["flow_out"] = true;
      }
      if (s.detail.flowIn != 0 && arrived.insert(s.detail.flowIn).second) {
        e["bind_id"] = s.detail.flowIn;
        e["flow_in"] = true;
      }
      events.push_back(std::move(e));
    }
  }
  for (size_t i = 0; i < async_.size(); ++i) {
    const AsyncSpan& s = async_[i];
    const bool unfinished = s.end == kOpen;
    const std::string name = unfinished ? s.what + " (unfinished)" : s.what;
    const int pid = pids[s.group];
    const uint64_t end = unfinished ? std::max(last, s.start) : s.end;
    events.push_back(
        {{"ph", "b"}, {"cat", "nvtx"}, {"name", name}, {"id", i + 1}, {"pid", pid}, {"ts", microseconds(s.start)}});
    events.push_back(
        {{"ph", "e"}, {"cat", "nvtx"}, {"name", name}, {"id", i + 1}, {"pid", pid}, {"ts", microseconds(end)}});
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

namespace {

struct Totals {
  uint64_t count = 0, unfinished = 0, total = 0, max = 0;
};

std::string row(const std::string& name, const Totals& t) {
  char line[256];
  std::snprintf(line, sizeof line, "  %-44s %8llu %14.3f %12.3f %12.3f%s\n", name.c_str(),
                static_cast<unsigned long long>(t.count), microseconds(t.total),
                microseconds(t.count != 0 ? t.total / t.count : 0), microseconds(t.max),
                t.unfinished != 0 ? (" (" + std::to_string(t.unfinished) + " unfinished)").c_str() : "");
  return line;
}

bool isLinkOrSwitch(const std::string& group, const std::string& name) {
  return group.rfind("NVSwitch", 0) == 0 || name.find("NVLink") != std::string::npos ||
         name.find("PCIe") != std::string::npos;
}

}  // namespace

std::string Timeline::summary() {
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t last = lastTimeLocked();
  // Device work by category and name, in name order; hardware in the order it was built.
  std::map<std::string, std::map<std::string, Totals>> work;
  std::vector<std::pair<std::string, uint64_t>> busy;
  for (const Track& t : tracks_) {
    uint64_t trackBusy = 0;
    for (const Span& s : t.spans) {
      if (s.instant) continue;
      const bool unfinished = s.end == kOpen;
      const uint64_t dur = (unfinished ? std::max(last, s.start) : s.end) - s.start;
      if (s.own && !s.detail.category.empty()) {
        Totals& k = work[s.detail.category][s.what];
        ++k.count;
        k.total += dur;
        k.max = std::max(k.max, dur);
        if (unfinished) ++k.unfinished;
      } else {
        trackBusy += dur;
      }
    }
    if (trackBusy != 0 && isLinkOrSwitch(t.group, t.name)) busy.emplace_back(t.group + ", " + t.name, trackBusy);
  }
  std::string out;
  char head[256];
  std::snprintf(head, sizeof head, "mcsim: timeline summary, %.3f us of simulated time\n", microseconds(last));
  out += head;
  for (const auto& [category, byName] : work) {
    std::snprintf(head, sizeof head, "  %-44s %8s %14s %12s %12s\n", (category + " (by name)").c_str(), "count",
                  "total (us)", "mean (us)", "max (us)");
    out += head;
    for (const auto& [name, totals] : byName) out += row(name, totals);
  }
  if (!busy.empty()) {
    std::snprintf(head, sizeof head, "  %-44s %14s %8s\n", "links and switches", "busy (us)", "of run");
    out += head;
    for (const auto& [name, ps] : busy) {
      std::snprintf(head, sizeof head, "  %-44s %14.3f %7.1f%%\n", name.c_str(), microseconds(ps),
                    last != 0 ? 100.0 * static_cast<double>(ps) / static_cast<double>(last) : 0.0);
      out += head;
    }
  }
  return out;
}

}  // namespace mcsim::model
