#include "traces/lib/recorder.h"
#include "traces/lib/call_log.h"

#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "files/bounded_file.h"
#include "traces/lib/call_desc.h"
#include "traces/lib/codec.h"
#include "traces/lib/results.h"
#include "traces/lib/trace_format.h"
#include "model/hang_abort.h"
#include "model/thread_owned.h"

namespace mcsim::trace {

bool gRecording = false;

namespace {

struct Recorder {
  std::mutex mu;
  FILE* file = nullptr;
  Target target{};
  RecordOptions options;
  Names names;
  uint64_t admitted = 0;
  uint64_t written = 0;
  std::string nodeSettings;  // the shared node's, once attached (the end record keeps them)
  int threads = 0;
  bool closed = false;
  // Wrapper and forward pointers sorted by address, for cuGetProcAddress.
  std::vector<std::pair<void*, int>> byForward, byWrapper;
  // Calls admitted and not yet returned, by admission number (written if the process aborts on a
  // hang: the calls that hung are the point of such a trace).
  std::map<uint64_t, const CallScope*> inFlight;
  // The kernel each launch submitted, by admission number, with the launch's time (the end
  // record's kernel times).
  std::map<uint64_t, std::pair<void*, uint64_t>> kernels;
  std::string pattern;  // MCSIM_RECORD as given (%p: the process id)
  Json header;          // the header written (a forked child writes it again with its own pid)
  bool initialized = false;  // a cuInit of this process succeeded
};

Recorder*& recorderPointer() {
  // Leaked on purpose: calls made from static destructors must still find it.
  static Recorder* r = new Recorder();
  return r;
}
Recorder& recorder() { return *recorderPointer(); }
// A forked child's parent's recorder, which the child replaced (recordInChild).
Recorder* gParentsRecorder = nullptr;

thread_local int tThread = -1;
thread_local int tDepth = 0;  // a driver that calls its own exports is recorded once

// A replay's admission numbers for the thread's next call (mcsim_trace_node_plan).
struct NodePlan {
  uint64_t clock[2] = {0, 0};
  std::vector<uint64_t> requests;
};
// Outlives the thread's thread_local destructors (model/thread_owned.h): calls made from them and
// from exit handlers are recorded too.
struct NodePlanTag;
NodePlan& threadPlan() { return threadOwned<NodePlan, NodePlanTag>(); }

std::vector<uint64_t> tagsOf(uint64_t n) { return n == 0 ? std::vector<uint64_t>{} : std::vector<uint64_t>{n}; }

Json admissionJson(const NodeAdmission& a) { return Json::array({a.number, a.finishedBefore, a.simRuns}); }

// A clock read's admission: the one request it made, or null when it made none.
Json clockJson(const std::vector<NodeAdmission>& a) { return a.empty() ? Json() : admissionJson(a.front()); }

std::atomic<uint64_t> gAdmitted{0};
std::atomic<uint64_t> gFinished{0};

int findIn(const std::vector<std::pair<void*, int>>& v, void* p) {
  auto it = std::lower_bound(v.begin(), v.end(), std::make_pair(p, -1));
  return (it != v.end() && it->first == p) ? it->second : -1;
}

// The fault plan's text for the header ("" when it cannot be read: cuInit then refuses the plan).
std::string readFile(const char* path) { return files::readBoundedFile(path, files::kMaxTextInputBytes).bytes; }

void writeLine(Recorder& r, const Json& j) {
  const std::string line = j.dump();
  std::fwrite(line.data(), 1, line.size(), r.file);
  std::fputc('\n', r.file);
  // Flushed per record, so that a trace of a program that crashes ends at its last call.
  std::fflush(r.file);
}

void closeTrace() {
  Recorder& r = recorder();
  std::lock_guard<std::mutex> lock(r.mu);
  if (r.file == nullptr || r.closed) return;
  r.closed = true;
  Json end{{"end", true}, {"calls", r.written}};
  Json kernels = Json::array();
  for (const auto& [seq, kernel] : r.kernels) {
    uint64_t start = 0, finish = 0;
    if (r.target.kernelTimes(kernel.first, kernel.second, &start, &finish)) kernels.push_back(Json::array({seq, start, finish}));
  }
  if (!kernels.empty()) end["kernels"] = std::move(kernels);
  if (!r.nodeSettings.empty()) end["node"] = Json::parse(r.nodeSettings, nullptr, false);
  writeLine(r, end);
  std::fclose(r.file);
  r.file = nullptr;
}

// MCSIM_ON_HANG=abort: the calls still waiting are written (they never returned: result
// CUDA_ERROR_LAUNCH_TIMEOUT and "aborted":true, no outputs, t1_ps = t0_ps), then the end record, so
// that the trace reads and replays (the replay hangs and aborts at the same calls).
void closeTraceOnHangAbort() {
  Recorder& r = recorder();
  {
    std::lock_guard<std::mutex> lock(r.mu);
    if (r.file == nullptr || r.closed) return;
    for (const auto& [seq, scope] : r.inFlight) {
      writeLine(r, scope->abortedRecord(r.target.simNowPs != nullptr));
      ++r.written;
    }
    r.inFlight.clear();
  }
  closeTrace();
}

// MCSIM_RECORD for this process: %p is its id. A forked child without %p records beside its
// parent's trace, its id before the extension ("app.jsonl" -> "app-4712.jsonl").
std::string tracePath(const std::string& pattern, bool child) {
  std::string p = pattern;
  const std::string pid = std::to_string(::getpid());
  const size_t at = p.find("%p");
  if (at != std::string::npos) {
    p.replace(at, 2, pid);
  } else if (child) {
    const size_t dot = p.rfind('.');
    const size_t slash = p.rfind('/');
    if (dot != std::string::npos && (slash == std::string::npos || dot > slash)) {
      p.insert(dot, "-" + pid);
    } else {
      p += "-" + pid;
    }
  }
  return p;
}

// Opens this process's trace and writes its header. False (said on stderr) when it cannot.
bool openTrace(Recorder& r, bool child) {
  const std::string p = tracePath(r.pattern, child);
  r.file = std::fopen(p.c_str(), "w");
  if (r.file == nullptr) {
    std::fprintf(stderr, "mcsim: MCSIM_RECORD=%s: cannot write the trace: %s\n", p.c_str(), std::strerror(errno));
    return false;
  }
  r.header["pid"] = static_cast<int64_t>(::getpid());
  writeLine(r, r.header);
  return true;
}

// A forked child. One forked before this process's cuInit is a CUDA process of its own (on a
// shared node, one more process of the run): it records a trace of its own, from a fresh
// recorder (another thread of the parent may have held the old one's lock at the fork). One
// forked after it cannot use the parent's driver (its calls are refused, as CUDA refuses them):
// it stops recording rather than interleave with its parent's trace.
void recordInChild() {
  Recorder& old = recorder();
  if (old.file == nullptr || old.closed || old.initialized) {
    old.file = nullptr;
    old.closed = true;
    gRecording = false;
    return;
  }
  auto* fresh = new Recorder();
  fresh->target = old.target;
  fresh->options = old.options;
  fresh->byForward = old.byForward;
  fresh->byWrapper = old.byWrapper;
  fresh->pattern = old.pattern;
  fresh->header = old.header;
  // The old one (and its FILE, the parent's trace) is left as it is: its lock may be held. It stays
  // reachable, as the process's objects must (LeakSanitizer checks every process, children too).
  gParentsRecorder = &old;
  recorderPointer() = fresh;
  gAdmitted.store(0);
  gFinished.store(0);
  tThread = -1;
  if (!openTrace(*fresh, true)) {
    fresh->closed = true;
    gRecording = false;
  }
}

uint64_t wallNs() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count());
}

}  // namespace

void startRecorder(const Target& t, const settings::Settings& settings) {
  Recorder& r = recorder();
  r.target = t;
  for (size_t i = 0; i < callCount(); ++i) {
    if (t.forwards[i] != nullptr) r.byForward.emplace_back(t.forwards[i], static_cast<int>(i));
    r.byWrapper.emplace_back(t.wrappers[i], static_cast<int>(i));
  }
  std::sort(r.byForward.begin(), r.byForward.end());
  std::sort(r.byWrapper.begin(), r.byWrapper.end());
  r.options.symbolOf = &wrappedSymbol;
  r.options.describeFunction = t.describeFunction;

  startCallLog(settings);
  if (settings.record.empty()) return;
  r.pattern = settings.record;
  r.options.dataLimit = settings.recordData;
  r.options.outputData = settings.recordOutputData;
  r.options.imagesInFull = settings.recordImages == "full";
  Json header{{"mcsim_trace", kTraceVersion}, {"target", t.name}, {"pid", static_cast<int64_t>(::getpid())}};
  Json env = Json::object();
  for (const char* name : kRecordedEnvironment) {
    if (auto it = settings.given.find(name); it != settings.given.end()) env[name] = it->second;
  }
  // The driver's own setting, not an mcsim one: the devices the program saw, in its order.
  if (settings.cudaVisibleDevices) env["CUDA_VISIBLE_DEVICES"] = *settings.cudaVisibleDevices;
  header["env"] = env;
  Json faults;
  if (!settings.faultsFile.empty()) {
    faults = readFile(settings.faultsFile.c_str());
  } else if (!settings.faults.empty()) {
    faults = settings.faults;
  }
  header["faults"] = faults;
  header["data_limit"] = r.options.dataLimit;
  if (r.options.imagesInFull) header["images"] = "full";
  // A shared node's name (informational: a replay builds a node of its own).
  if (!settings.node.empty()) header["node"] = settings.node;
  r.header = std::move(header);
  if (!openTrace(r, false)) return;
  std::atexit(closeTrace);
  model::beforeHangAbort(closeTraceOnHangAbort);
  ::pthread_atfork(nullptr, nullptr, recordInChild);
  gRecording = true;
}

CallScope::CallScope(int call, const uint64_t* slots) : call_(call), slots_(slots), active_(tDepth == 0) {
  ++tDepth;
  if (!active_) return;
  Recorder& r = recorder();
  std::lock_guard<std::mutex> lock(r.mu);
  if (r.closed || r.file == nullptr) {
    active_ = false;
    return;
  }
  if (tThread < 0) tThread = r.threads++;
  thread_ = tThread;
  seq_ = r.admitted++;
  finishedBefore_ = gFinished.load(std::memory_order_acquire);
  auto* args = new Json();
  encodeInputs(callTable()[call_], slots_, r.names, r.options, args);
  inputs_ = args;
  sharedIn_ = shareableIdentity(callTable()[call_], slots_, false);
  // On a shared node the clock read is a node request, and the call's own requests follow it.
  NodePlan plan;
  std::swap(plan, threadPlan());
  if (r.target.nodeBegin != nullptr) r.target.nodeBegin(tagsOf(plan.clock[0]));
  t0_ = r.target.simNowPs != nullptr ? r.target.simNowPs() : wallNs();
  if (r.target.nodeEnd != nullptr) r.target.nodeEnd(&clock0_);
  clock1Tag_ = tagsOf(plan.clock[1]);
  r.inFlight.emplace(seq_, this);
  gAdmitted.store(r.admitted, std::memory_order_release);
  if (r.target.nodeBegin != nullptr) r.target.nodeBegin(plan.requests);
}

CUresult CallScope::finish(CUresult result) {
  --tDepth;
  if (!active_) return result;
  Recorder& r = recorder();
  std::vector<NodeAdmission> admissions, clock1;
  if (r.target.nodeEnd != nullptr) r.target.nodeEnd(&admissions);
  if (r.target.nodeBegin != nullptr) r.target.nodeBegin(clock1Tag_);
  const uint64_t t1 = r.target.simNowPs != nullptr ? r.target.simNowPs() : wallNs();
  if (r.target.nodeEnd != nullptr) r.target.nodeEnd(&clock1);
  std::unique_ptr<Json> args(static_cast<Json*>(inputs_));
  // A launch that succeeded keeps the kernel it submitted, for its time in the end record.
  void* kernel = r.target.takeKernel != nullptr
                     ? r.target.takeKernel(result == CUDA_SUCCESS && isLaunch(callTable()[call_]) && r.target.simNowPs != nullptr)
                     : nullptr;
  std::lock_guard<std::mutex> lock(r.mu);
  r.inFlight.erase(seq_);
  if (kernel != nullptr) r.kernels.emplace(seq_, std::make_pair(kernel, t0_));
  if (r.closed || r.file == nullptr) return result;
  const CallDesc& d = callTable()[call_];
  Json rec{{"seq", seq_}, {"fin", finishedBefore_}, {"thread", thread_}, {"call", d.symbol}, {"args", std::move(*args)}};
  rec["result"] = resultName(result);
  if (result == CUDA_SUCCESS) {
    Json out;
    encodeOutputs(d, slots_, r.names, r.options, &out);
    if (!out.empty()) rec["out"] = std::move(out);
  }
  const std::string shared = result == CUDA_SUCCESS && sharedIn_.empty() ? shareableIdentity(d, slots_, true) : sharedIn_;
  if (!shared.empty()) rec["shared"] = shared;
  if (!admissions.empty()) {
    Json& node = rec["node"] = Json::array();
    for (const NodeAdmission& a : admissions) node.push_back(admissionJson(a));
  }
  if (!clock0_.empty() || !clock1.empty()) rec["node_clock"] = Json::array({clockJson(clock0_), clockJson(clock1)});
  if (r.nodeSettings.empty() && r.target.nodeSettings != nullptr) r.nodeSettings = r.target.nodeSettings();
  if (r.target.simNowPs != nullptr) {
    rec["t0_ps"] = t0_;
    rec["t1_ps"] = t1;
  } else {
    rec["dur_ns"] = t1 - t0_;
  }
  writeLine(r, rec);
  ++r.written;
  if (result == CUDA_SUCCESS && std::strcmp(d.base, "cuInit") == 0) r.initialized = true;
  gFinished.fetch_add(1, std::memory_order_acq_rel);
  return result;
}

Json CallScope::abortedRecord(bool simulated) const {
  Json rec{{"seq", seq_},   {"fin", finishedBefore_}, {"thread", thread_}, {"call", callTable()[call_].symbol},
           {"args", *static_cast<const Json*>(inputs_)}, {"result", resultName(CUDA_ERROR_LAUNCH_TIMEOUT)}, {"aborted", true}};
  if (simulated) {
    rec["t0_ps"] = t0_;
    rec["t1_ps"] = t0_;
  } else {
    rec["dur_ns"] = 0;
  }
  return rec;
}

const char* wrappedSymbol(void* fn) {
  const int i = findIn(recorder().byWrapper, fn);
  return i < 0 ? nullptr : callTable()[i].symbol;
}

void wrapProcAddress(const char* symbol, void** pfn) {
  if (pfn == nullptr || *pfn == nullptr) return;
  Recorder& r = recorder();
  const int i = findIn(r.byForward, *pfn);
  if (i >= 0) {
    *pfn = r.target.wrappers[i];
    return;
  }
  if (std::strcmp(r.target.name, "real") == 0 && symbol != nullptr && std::strncmp(symbol, "cuMulticast", 11) == 0) {
    std::fprintf(stderr, "mcsim record: withholding %s, a cuMulticast* entry point the recorder has no wrapper for\n",
                 symbol);
    *pfn = nullptr;
  }
}

}  // namespace mcsim::trace

extern "C" uint64_t mcsim_trace_admitted(void) { return mcsim::trace::gAdmitted.load(std::memory_order_acquire); }

extern "C" uint64_t mcsim_trace_finished(void) { return mcsim::trace::gFinished.load(std::memory_order_acquire); }

extern "C" void mcsim_trace_close(void) { mcsim::trace::closeTrace(); }

extern "C" void mcsim_trace_node_plan(const uint64_t clock[2], const uint64_t* requests, size_t n) {
  mcsim::trace::NodePlan& p = mcsim::trace::threadPlan();
  p.clock[0] = clock != nullptr ? clock[0] : 0;
  p.clock[1] = clock != nullptr ? clock[1] : 0;
  p.requests.assign(requests, requests + (requests != nullptr ? n : 0));
}
