// NVTX ranges and marks on the timeline (driver/nvtx_bridge.h). Each host thread that speaks NVTX
// gets a row per domain ("NVTX, thread 2"), numbered in the order threads first spoke it, so the
// same program writes the same rows; times are the node's simulated time (0 before cuInit).
#include "driver/nvtx_bridge.h"

#include <atomic>
#include <map>
#include <string>
#include <vector>

#include "driver/driver.h"
#include "model/thread_owned.h"
#include "model/timeline.h"

namespace mcsim::driver {
namespace {

model::Timeline* timeline() { return model::Timeline::active(); }

// The host's clock when it is kept (docs/model.md, "What the host costs"), else the node's time.
uint64_t nowPs() {
  if (!initialized()) return 0;
  return hostclock::enabled() ? hostclock::nowPs() : node().nowPs();
}

// This thread's row number (1, 2, ...), given the first time it speaks NVTX.
int threadNumber() {
  static std::atomic<int> next{1};
  thread_local int number = 0;  // plain data: safe while the thread ends
  if (number == 0) number = next.fetch_add(1);
  return number;
}

std::string rowName(const char* domain) {
  const std::string prefix = domain != nullptr ? std::string("NVTX ") + domain : std::string("NVTX");
  return prefix + ", thread " + std::to_string(threadNumber());
}

std::string label(const char* domain, const char* message) {
  std::string m = message != nullptr ? message : "";
  return domain != nullptr ? std::string(domain) + ": " + m : m;
}

// The thread's open nvtxRangePush ranges, innermost last, by domain (the default domain is "").
struct OpenRanges {
  std::map<std::string, std::vector<std::pair<model::TimelineTrack, uint64_t>>> byDomain;
};
struct OpenRangesTag;

}  // namespace
}  // namespace mcsim::driver

using namespace mcsim::driver;

extern "C" {

int mcsim_nvtx_attach(int bridge_version) {
  if (bridge_version != MCSIM_NVTX_BRIDGE_VERSION) return 0;
  const mcsim::settings::Settings& s = driverSettings();
  mcsim::model::Timeline::start(s.timeline, s.timelineSummary);
  return timeline() != nullptr ? 1 : 0;
}

int mcsim_nvtx_push(const char* domain, const char* message) {
  mcsim::model::Timeline* t = timeline();
  if (t == nullptr) return -1;
  auto& stack = mcsim::threadOwned<OpenRanges, OpenRangesTag>().byDomain[domain != nullptr ? domain : ""];
  const mcsim::model::TimelineTrack track = t->track("Host", rowName(domain));
  mcsim::model::SliceDetail detail;
  detail.category = "nvtx";
  stack.emplace_back(track, track.open(nowPs(), message != nullptr ? message : "", std::move(detail)));
  return static_cast<int>(stack.size()) - 1;
}

int mcsim_nvtx_pop(const char* domain) {
  if (timeline() == nullptr) return -1;
  auto& stack = mcsim::threadOwned<OpenRanges, OpenRangesTag>().byDomain[domain != nullptr ? domain : ""];
  if (stack.empty()) return -1;
  stack.back().first.close(stack.back().second, nowPs());
  stack.pop_back();
  return static_cast<int>(stack.size());
}

void mcsim_nvtx_mark(const char* domain, const char* message) {
  mcsim::model::Timeline* t = timeline();
  if (t != nullptr) t->track("Host", rowName(domain)).instant(nowPs(), message != nullptr ? message : "");
}

uint64_t mcsim_nvtx_start(const char* domain, const char* message) {
  mcsim::model::Timeline* t = timeline();
  return t != nullptr ? t->openAsync("Host", nowPs(), label(domain, message)) : 0;
}

void mcsim_nvtx_end(uint64_t id) {
  mcsim::model::Timeline* t = timeline();
  if (t != nullptr) t->closeAsync(id, nowPs());
}

}  // extern "C"
