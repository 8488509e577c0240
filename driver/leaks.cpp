// The leak report at exit (leaks.h).
#include "driver/leaks.h"

#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "driver/driver.h"
#include "settings/byte_size.h"

namespace mcsim::driver {

namespace {

struct KindName {
  const char* one;
  const char* many;
};

KindName nameOf(LeakReport::Kind k) {
  switch (k) {
    case LeakReport::Kind::kLinear: return {"cuMemAlloc allocation", "cuMemAlloc allocations"};
    case LeakReport::Kind::kPooled: return {"cuMemAllocAsync allocation", "cuMemAllocAsync allocations"};
    case LeakReport::Kind::kPinned: return {"pinned host allocation", "pinned host allocations"};
    case LeakReport::Kind::kRegistered: return {"registered host range", "registered host ranges"};
    case LeakReport::Kind::kAllocationHandle: return {"physical allocation handle", "physical allocation handles"};
    case LeakReport::Kind::kMulticastHandle: return {"multicast object handle", "multicast object handles"};
    case LeakReport::Kind::kMapping: return {"mapping", "mappings"};
    case LeakReport::Kind::kReservation: return {"address reservation", "address reservations"};
    case LeakReport::Kind::kIpcOpen: return {"opened IPC memory handle", "opened IPC memory handles"};
    case LeakReport::Kind::kContext: return {"context", "contexts"};
    case LeakReport::Kind::kStream: return {"stream", "streams"};
    case LeakReport::Kind::kEvent: return {"event", "events"};
  }
  return {"object", "objects"};
}

std::string deviceText(int device) { return device >= 0 ? " on device " + std::to_string(device) : ""; }

// What the node says this process holds.
void addNodeHoldings(LeakReport& r) {
  for (const fabric::Holding& h : node().holdings()) {
    using K = fabric::Holding::Kind;
    const std::string size = settings::formatByteSize(h.size);
    switch (h.kind) {
      case K::kAllocationHandle:
        r.add(LeakReport::Kind::kAllocationHandle, h.size, "handle " + std::to_string(h.key) + " of " + size + deviceText(h.device));
        break;
      case K::kMulticastHandle:
        r.add(LeakReport::Kind::kMulticastHandle, h.size, "handle " + std::to_string(h.key) + " of " + size);
        break;
      case K::kReservation:
        r.add(LeakReport::Kind::kReservation, 0, size + " at " + hexAddress(h.key));
        break;
      case K::kMapping:
        r.add(LeakReport::Kind::kMapping, 0, size + " at " + hexAddress(h.key) + deviceText(h.device));
        break;
      case K::kLinear:
        r.add(LeakReport::Kind::kLinear, h.size, size + deviceText(h.device) + " at " + hexAddress(h.key));
        break;
      case K::kPooled:
        r.add(LeakReport::Kind::kPooled, h.size, size + deviceText(h.device) + " at " + hexAddress(h.key));
        break;
      case K::kIpcOpen:
        r.add(LeakReport::Kind::kIpcOpen, 0, size + deviceText(h.device) + " at " + hexAddress(h.key));
        break;
    }
  }
}

// MCSIM_LEAK_CHECK, as cuInit read it.
enum class Mode { kOff, kSummary, kFull, kError };
Mode gMode = Mode::kOff;  // trivially destructible: read after the static destructors ran

// What contexts held when they went (noteLeftInContext); leaked, as it is read at exit.
struct ContextLeftovers {
  std::mutex mu;
  LeakReport report;
};
ContextLeftovers& contextLeftovers() {
  static ContextLeftovers* c = new ContextLeftovers();
  return *c;
}

// After every atexit handler and static destructor of the process (those of the program and of
// the runtimes it embeds, which may free what they made): a shared library's ELF destructors run
// last, from the dynamic loader's own exit handler.
__attribute__((destructor)) void reportLeftoversAtExit() {
  if (gMode == Mode::kOff || !initialized() || state().forkedChild.load() || node().lost()) return;
  const LeakReport r = gatherLeftovers();
  if (r.empty()) return;
  if (gMode == Mode::kSummary) {
    std::fprintf(stderr, "mcsim: at exit the program still held %s (MCSIM_LEAK_CHECK=full lists them)\n",
                 r.summary().c_str());
    return;
  }
  std::fprintf(stderr, "mcsim: at exit the program still held %s:\n", r.summary().c_str());
  for (const std::string& line : r.lines()) std::fprintf(stderr, "mcsim:   %s\n", line.c_str());
  if (gMode == Mode::kError) {
    std::fflush(nullptr);
    _exit(1);
  }
}

}  // namespace

void LeakReport::add(Kind kind, uint64_t bytes, std::string detail) {
  Left& l = byKind_[kind];
  l.bytes += bytes;
  l.details.push_back(std::move(detail));
}

std::string LeakReport::summary() const {
  std::string out;
  for (const auto& [kind, left] : byKind_) {
    if (!out.empty()) out += ", ";
    const KindName n = nameOf(kind);
    out += std::to_string(left.details.size()) + " " + (left.details.size() == 1 ? n.one : n.many);
    if (left.bytes != 0) out += " (" + settings::formatByteSize(left.bytes) + ")";
  }
  return out;
}

std::vector<std::string> LeakReport::lines() const {
  std::vector<std::string> out;
  for (const auto& [kind, left] : byKind_) {
    for (const std::string& d : left.details) out.push_back(std::string(nameOf(kind).one) + ": " + d);
  }
  return out;
}

void noteLeftInContext(LeakReport::Kind kind, uint64_t bytes, const std::string& detail, const std::string& how) {
  std::lock_guard<std::mutex> lock(contextLeftovers().mu);
  contextLeftovers().report.add(kind, bytes, detail + ", " + how);
}

std::string hexAddress(uint64_t v) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%" PRIx64, v);
  return text;
}

bool leakReportArmed() { return gMode != Mode::kOff; }

void LeakReport::merge(const LeakReport& other) {
  for (const auto& [kind, left] : other.byKind_) {
    Left& mine = byKind_[kind];
    mine.bytes += left.bytes;
    mine.details.insert(mine.details.end(), left.details.begin(), left.details.end());
  }
}

void armLeakReport() {
  const std::string& m = driverSettings().leakCheck;
  gMode = m == "off" || m == "0"    ? Mode::kOff
          : m == "full" || m == "1" ? Mode::kFull
          : m == "error"            ? Mode::kError
                                    : Mode::kSummary;
}

LeakReport gatherLeftovers() {
  LeakReport r;
  {
    std::lock_guard<std::mutex> lock(contextLeftovers().mu);
    r.merge(contextLeftovers().report);
  }
  addNodeHoldings(r);
  addHostMemoryLeft(r);
  addContextsLeft(r);
  addStreamsAndEventsLeft(r);
  return r;
}

HandleCounts countHandles() {
  HandleCounts c;
  countContexts(c);
  countModules(c);
  countPools(c);
  countGraphs(c);
  countGraphExecs(c);
  countStreamsAndEvents(c);
  return c;
}

}  // namespace mcsim::driver
