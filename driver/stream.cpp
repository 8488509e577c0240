// Streams and events: the objects, stream order, and the entry points that take no stream
// argument (those that do are in stream_entries.inc, compiled twice like the memory operations).
#include "driver/stream.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "driver/context.h"
#include "driver/driver.h"
#include "driver/graph.h"
#include "driver/leaks.h"
#include "model/engine.h"
#include "model/thread_owned.h"

CUevent_st::~CUevent_st() {
  if (sharedKey != 0) mcsim::driver::node().ipcEventRelease(sharedKey);
}

namespace mcsim::driver {

namespace {

struct StreamTables {
  OrderedMutex mu{LockRank::kDriverStreams};
  // The objects are shared with the calls using them (StreamRef, EventRef): erasing an entry
  // frees the object only once the last such call has returned.
  std::map<const CUstream_st*, StreamRef> created;
  std::map<const CUctx_st*, StreamRef> legacy;
  std::map<std::pair<int, const CUctx_st*>, StreamRef> perThread;  // by thread ordinal
  std::map<const CUevent_st*, EventRef> events;
  // Work of destroyed streams that had not finished: cuCtxSynchronize still waits for it.
  // Finished work is let go as more comes (keepOrphan), so that a program that destroys streams
  // with work in flight and never synchronises its context keeps no more than what is unfinished.
  struct Orphans {
    std::vector<fabric::WorkDone> work;
    size_t pruneAt = 64;
  };
  std::map<const CUctx_st*, Orphans> orphans;
  unsigned long long nextStreamId = 0x10;
  unsigned long long nextEventId = 1;
};

StreamTables& tables() {
  static StreamTables* t = new StreamTables();
  return *t;
}

// Keeps `w`, work of a destroyed stream of `ctx`, for cuCtxSynchronize (caller holding the tables'
// lock), and lets go of the work kept before that finished without a fault once there is as much
// again.
void keepOrphan(StreamTables& t, const CUctx_st* ctx, const fabric::WorkDone& w) {
  StreamTables::Orphans& o = t.orphans[ctx];
  if (o.work.size() >= o.pruneAt) {
    // (Work that faulted stays: cuCtxSynchronize reports its fault.)
    const auto settled = [](const fabric::WorkDone& p) { return !pendingWork(p) && (!p || !p->fault()); };
    o.work.erase(std::remove_if(o.work.begin(), o.work.end(), settled), o.work.end());
    o.pruneAt = std::max<size_t>(64, 2 * o.work.size());
  }
  o.work.push_back(w);
}

// Threads are numbered in the order they first use a per-thread default stream.
int threadOrdinal() {
  static std::atomic<int> next{0};
  thread_local int ordinal = next.fetch_add(1);
  return ordinal;
}

// The streams of `ctx`, caller holding the lock. Created streams first (by handle order would
// depend on heap addresses; by id it does not), then the default ones.
std::vector<CUstream_st*> streamsOf(StreamTables& t, const CUctx_st* ctx) {
  std::map<unsigned long long, CUstream_st*> byId;
  for (auto& [p, s] : t.created) {
    if (s->ctx == ctx) byId[s->id] = s.get();
  }
  for (auto& [key, s] : t.perThread) {
    if (s->ctx == ctx) byId[s->id] = s.get();
  }
  auto it = t.legacy.find(ctx);
  if (it != t.legacy.end()) byId[it->second->id] = it->second.get();
  std::vector<CUstream_st*> out;
  for (auto& [id, s] : byId) out.push_back(s);
  return out;
}

// A new stream of `ctx`, numbered from the tables' counter (caller holding the lock); `name` is
// its timeline label, its id when empty.
StreamRef newStream(StreamTables& t, CUstream_st::Kind kind, CUctx_st* ctx, unsigned flags, int priority,
                    const std::string& name) {
  auto s = std::make_shared<CUstream_st>();
  s->kind = kind;
  s->ctx = ctx;
  s->flags = flags;
  s->priority = priority;
  s->id = t.nextStreamId++;
  s->name = name.empty() ? std::to_string(s->id) : name;
  return s;
}

StreamRef legacyStream(StreamTables& t, CUctx_st* ctx) {
  auto& slot = t.legacy[ctx];
  if (!slot) {
    slot = newStream(t, CUstream_st::Kind::kLegacy, ctx, 0, 0, "legacy (context " + std::to_string(ctx->id) + ")");
  }
  return slot;
}

// The calling thread's per-thread default streams go when the thread ends: nothing can name them
// any more (CU_STREAM_PER_THREAD names the calling thread's). What they still run is kept with the
// orphans, which cuCtxSynchronize waits for, as a destroyed stream's.
struct PerThreadStreamsOfThread {
  int ordinal = -1;  // set when the thread first has one
  PerThreadStreamsOfThread() = default;
  PerThreadStreamsOfThread(const PerThreadStreamsOfThread&) = delete;
  PerThreadStreamsOfThread& operator=(const PerThreadStreamsOfThread&) = delete;
  ~PerThreadStreamsOfThread() {
    if (ordinal < 0) return;
    std::vector<StreamRef> gone;
    {
      StreamTables& t = tables();
      std::lock_guard<mcsim::OrderedMutex> lock(t.mu);
      const std::pair<int, const CUctx_st*> first{ordinal, nullptr};
      for (auto it = t.perThread.lower_bound(first); it != t.perThread.end() && it->first.first == ordinal;) {
        if (pendingWork(it->second->tail)) keepOrphan(t, it->second->ctx, it->second->tail);
        it->second->destroyed = true;
        gone.push_back(std::move(it->second));
        it = t.perThread.erase(it);
      }
    }
    for (const StreamRef& s : gone) forgetStreamCapture(s.get());  // (the graph lock ranks below the tables')
  }
};
struct PerThreadStreamsTag;

StreamRef perThreadStream(StreamTables& t, CUctx_st* ctx) {
  const int ordinal = threadOrdinal();
  auto& slot = t.perThread[{ordinal, ctx}];
  if (!slot) {
    threadOwned<PerThreadStreamsOfThread, PerThreadStreamsTag>().ordinal = ordinal;
    slot = newStream(t, CUstream_st::Kind::kPerThread, ctx, 0, 0,
                     "per-thread " + std::to_string(ordinal) + " (context " + std::to_string(ctx->id) + ")");
  }
  return slot;
}

bool pending(const fabric::WorkDone& w) { return w && !w->done(); }

}  // namespace

// An event's last record point (empty until recorded), read under the lock that records it; a
// shared event's is the node's, whichever process recorded it.
fabric::WorkDone eventRecordPoint(const CUevent_st* ev) {
  if (ev->sharedKey != 0) {
    fabric::WorkDone w;
    node().ipcEventLatest(ev->sharedKey, &w);
    return w;
  }
  std::lock_guard<mcsim::OrderedMutex> lock(tables().mu);
  return ev->recorded;
}

CUresult setEventRecordPoint(CUevent_st* ev, const fabric::WorkDone& w) {
  if (ev->sharedKey != 0) return toResult(node().ipcEventRecord(ev->sharedKey, w));
  std::lock_guard<mcsim::OrderedMutex> lock(tables().mu);
  ev->recorded = w;
  return CUDA_SUCCESS;
}

namespace {

fabric::WorkDone recordedWork(const CUevent_st* ev) { return eventRecordPoint(ev); }

// A new event, not yet in the tables. It owns the node's hold of `sharedKey` from here on: when
// it is not put in the tables after all, dropping it (outside their lock) gives the hold back.
EventRef makeEvent(CUctx_st* ctx, unsigned flags, uint64_t sharedKey) {
  auto e = std::make_shared<CUevent_st>();
  e->ctx = ctx;
  e->flags = flags;
  e->sharedKey = sharedKey;
  return e;
}

// Puts a new event in the tables (caller holding their lock).
CUevent insertEvent(StreamTables& t, EventRef e) {
  e->id = t.nextEventId++;
  CUevent_st* raw = e.get();
  t.events[raw] = std::move(e);
  return raw;
}

}  // namespace

CUresult resolveStream(CUstream s, bool perThreadDefault, StreamRef* out) {
  StreamTables& t = tables();
  if (s == nullptr || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD) {
    CUctx_st* ctx = nullptr;
    MCSIM_TRY(currentContext(&ctx));
    const bool perThread = s == CU_STREAM_PER_THREAD || (s == nullptr && perThreadDefault);
    std::lock_guard<mcsim::OrderedMutex> lock(t.mu);
    *out = perThread ? perThreadStream(t, ctx) : legacyStream(t, ctx);
    return CUDA_SUCCESS;
  }
  std::lock_guard<mcsim::OrderedMutex> lock(t.mu);
  auto it = t.created.find(s);
  if (it == t.created.end()) {
    return MCSIM_REFUSE(CUDA_ERROR_INVALID_HANDLE, "the stream is not one this process created, or it was destroyed");
  }
  if (!usableContext(it->second->ctx)) {
    return MCSIM_REFUSE(CUDA_ERROR_CONTEXT_IS_DESTROYED, "the stream's context was destroyed");
  }
  // A stream of a context a kernel poisoned answers with the context's sticky error.
  const CUresult sticky = it->second->ctx->stickyError.load();
  if (sticky != CUDA_SUCCESS) return sticky;
  *out = it->second;
  return CUDA_SUCCESS;
}

namespace {

// PTX launches made and not yet known finished: while there are none, a synchronisation need not
// ask the node for kernels' printf output.
std::atomic<uint64_t> gPtxLaunches{0};
std::atomic<bool> gPtxUnfinished{false};

// Prints the printf output of the process's PTX launches that have finished by the time `w` did
// (simulated time, which a waiter has reached when it returns; work `w` follows finished no
// later): by completion time, then launch order. The node keeps the launches and their output
// (Node::takeKernelOutput), so that output reaches a program on a shared node too.
void flushPrintf(const fabric::WorkDone& w) {
  const uint64_t launches = gPtxLaunches.load();
  if (launches == 0 && !gPtxUnfinished.load()) return;
  std::string text;
  {
    // One take at a time, so that the last answer about unfinished launches is the one kept.
    static std::mutex takeMu;
    std::lock_guard<std::mutex> lock(takeMu);
    uint64_t unfinished = 0;
    if (node().takeKernelOutput(w->donePs(), &text, &unfinished) != Status::kOk) return;
    // Launches made meanwhile stay counted, for the next synchronisation to ask.
    gPtxLaunches.fetch_sub(launches);
    gPtxUnfinished.store(unfinished != 0);
  }
  if (text.empty()) return;
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
}

// A PTX kernel submitted (from a stream or a graph): its printf output, if any, waits for a
// synchronisation.
void notePtxKernel(const fabric::DeviceOp& op, const fabric::WorkDone& w) {
  if (w && op.kind == fabric::DeviceOp::Kind::kKernel && op.ptxModule != 0) gPtxLaunches.fetch_add(1);
}

std::atomic<bool> gKeepKernels{false};
struct SubmittedKernelsTag;
std::vector<SubmittedKernel>& submittedKernels() { return threadOwned<std::vector<SubmittedKernel>, SubmittedKernelsTag>(); }

// enqueue's body: `alsoAfter` are the completions the operation follows besides stream order.
CUresult enqueueFollowing(CUstream_st* st, fabric::DeviceOp op, fabric::WorkDone* done,
                          const std::vector<fabric::WorkDone>& alsoAfter, Status* submitted) {
  if (done != nullptr) *done = nullptr;
  // An explicit graph node being made: the operation is the node's, not the stream's.
  if (OpRecorder* r = activeRecorder()) {
    op.engineDevice = st->ctx->device;
    r->ctx = st->ctx;
    r->ops.push_back(std::move(op));
    return CUDA_SUCCESS;
  }
  if (capturesActive()) {
    bool captured = false;
    MCSIM_TRY(captureOperation(st, op, &captured));
    if (captured) return CUDA_SUCCESS;
  }
  StreamTables& t = tables();
  // The context's submission lock spans reading the tails and recording the new one; the tables'
  // lock is taken for each of those only, so that other threads' table calls (creating, querying,
  // destroying) never wait for the node's answer.
  std::lock_guard<mcsim::OrderedMutex> order(st->ctx->submitOrder);
  std::vector<fabric::WorkDone> after;
  {
    std::lock_guard<mcsim::OrderedMutex> lock(t.mu);
    if (pending(st->tail)) after.push_back(st->tail);
    for (const auto& w : alsoAfter) {
      if (pending(w)) after.push_back(w);
    }
    if (st->kind == CUstream_st::Kind::kLegacy) {
      for (CUstream_st* other : streamsOf(t, st->ctx)) {
        if (other != st && other->blocking() && pending(other->tail)) after.push_back(other->tail);
      }
    } else if (st->blocking()) {
      auto it = t.legacy.find(st->ctx);
      if (it != t.legacy.end() && pending(it->second->tail)) after.push_back(it->second->tail);
    }
  }
  op.engineDevice = st->ctx->device;
  op.stream = st->name;
  op.flowId = timelineFlow();
  op.notBeforePs = std::max(op.notBeforePs, hostclock::callPs());
  fabric::WorkDone w;
  const Status s = node().submit(op, after, &w);
  if (submitted != nullptr) *submitted = s;
  MCSIM_TRY(toResult(s));
  notePtxKernel(op, w);
  if (op.kind == fabric::DeviceOp::Kind::kKernel && w && gKeepKernels.load(std::memory_order_relaxed)) {
    submittedKernels().push_back({w, after});
  }
  {
    std::lock_guard<mcsim::OrderedMutex> lock(t.mu);
    st->tail = w;
    // Destroyed while this call submitted: cuCtxSynchronize still owes a wait for the work, as for
    // the work cuStreamDestroy found pending.
    if (st->destroyed && pending(w)) keepOrphan(t, st->ctx, w);
  }
  if (done != nullptr) *done = w;
  return CUDA_SUCCESS;
}

}  // namespace

void keepSubmittedKernels() { gKeepKernels.store(true); }

std::vector<SubmittedKernel> takeSubmittedKernels() {
  std::vector<SubmittedKernel> taken;
  taken.swap(submittedKernels());
  return taken;
}

CUresult enqueue(CUstream_st* st, fabric::DeviceOp op, fabric::WorkDone* done, const fabric::WorkDone& alsoAfter,
                 Status* submitted) {
  std::vector<fabric::WorkDone> also;
  if (alsoAfter) also.push_back(alsoAfter);
  return enqueueFollowing(st, std::move(op), done, also, submitted);
}

CUresult enqueueAfterAll(CUstream_st* st, fabric::DeviceOp op, const std::vector<fabric::WorkDone>& alsoAfter,
                         fabric::WorkDone* done) {
  return enqueueFollowing(st, std::move(op), done, alsoAfter, nullptr);
}

CUresult submitAfter(CUstream_st* st, CUctx_st* ctx, fabric::DeviceOp op, const std::vector<fabric::WorkDone>& after,
                     fabric::WorkDone* done, Status* submitted) {
  std::vector<fabric::WorkDone> pendingAfter;
  for (const auto& w : after) {
    if (pending(w)) pendingAfter.push_back(w);
  }
  op.engineDevice = ctx->device;
  op.stream = st->name;
  op.flowId = timelineFlow();
  op.notBeforePs = std::max(op.notBeforePs, hostclock::callPs());
  std::lock_guard<mcsim::OrderedMutex> order(ctx->submitOrder);
  fabric::WorkDone w;
  const Status s = node().submit(op, pendingAfter, &w);
  if (submitted != nullptr) *submitted = s;
  MCSIM_TRY(toResult(s));
  notePtxKernel(op, w);
  if (done != nullptr) *done = w;
  return CUDA_SUCCESS;
}

CUresult workResult(const fabric::WorkDone& w, CUctx_st* ctx) {
  if (!w || !w->done() || !w->fault()) return CUDA_SUCCESS;
  const model::WorkFault& f = *w->fault();
  CUresult r = CUDA_ERROR_LAUNCH_FAILED;
  const char* name = "CUDA_ERROR_LAUNCH_FAILED";
  switch (f.kind) {
    case model::WorkFault::Kind::kIllegalAddress: r = CUDA_ERROR_ILLEGAL_ADDRESS; name = "CUDA_ERROR_ILLEGAL_ADDRESS"; break;
    case model::WorkFault::Kind::kMisalignedAddress: r = CUDA_ERROR_MISALIGNED_ADDRESS; name = "CUDA_ERROR_MISALIGNED_ADDRESS"; break;
    case model::WorkFault::Kind::kTimeout: r = CUDA_ERROR_LAUNCH_TIMEOUT; name = "CUDA_ERROR_LAUNCH_TIMEOUT"; break;
    case model::WorkFault::Kind::kAssert: r = CUDA_ERROR_ASSERT; name = "CUDA_ERROR_ASSERT"; break;
    // An NVLink fatal error (Xid 74) ends the context's work as CUDA_ERROR_NVLINK_UNCORRECTABLE
    // (docs/faults.md, "Fabric faults").
    case model::WorkFault::Kind::kNvlink: r = CUDA_ERROR_NVLINK_UNCORRECTABLE; name = "CUDA_ERROR_NVLINK_UNCORRECTABLE"; break;
    case model::WorkFault::Kind::kIllegalInstruction: r = CUDA_ERROR_ILLEGAL_INSTRUCTION; name = "CUDA_ERROR_ILLEGAL_INSTRUCTION"; break;
    case model::WorkFault::Kind::kLaunchFailed:
    case model::WorkFault::Kind::kNone: break;
  }
  if (ctx != nullptr) ctx->stickyError = r;
  if (!f.reported.exchange(true)) {
    // An assert's lines come first, as the CUDA runtime prints them; then mcsim's own line.
    const size_t own = f.kind == model::WorkFault::Kind::kAssert ? f.message.rfind('\n') + 1 : 0;
    std::fprintf(stderr, "%smcsim: %s; the context's sticky error is now %s\n", f.message.substr(0, own).c_str(),
                 f.message.c_str() + own, name);
  }
  return r;
}

CUresult waitWork(const fabric::WorkDone& w, CUctx_st* ctx) {
  if (!pending(w)) {
    if (w) {
      hostclock::reached(w->donePs());  // done, but perhaps later than the host's clock
      flushPrintf(w);
    }
    return workResult(w, ctx);
  }
  uint64_t ps = 0;
  const Status s = node().waitFor(w, &ps);
  if (s == Status::kOk) {
    hostclock::reached(ps);
    flushPrintf(w);
    return workResult(w, ctx);
  }
  if (s != Status::kHang) return toResult(s);  // kNodeLost: the work never ran
  if (ctx != nullptr) ctx->stickyError = CUDA_ERROR_LAUNCH_TIMEOUT;
  return CUDA_ERROR_LAUNCH_TIMEOUT;
}

namespace {

// A query of `w`: CUDA_ERROR_NOT_READY while it runs; once done, its fault if it has one.
// With the host's clock, work done later than the clock is not done yet for the host; each
// query that finds it unfinished moves the clock on by the polling interval.
CUresult pollWork(const fabric::WorkDone& w, CUctx_st* ctx) {
  if (!pending(w)) {
    if (w && hostclock::enabled() && w->donePs() > hostclock::nowPs()) {
      hostclock::polled();
      return CUDA_ERROR_NOT_READY;
    }
    return workResult(w, ctx);
  }
  bool done = false;
  MCSIM_TRY(toResult(node().poll(w, hostclock::enabled() ? std::max<uint64_t>(1, hostclock::nowPs()) : 0, &done)));
  if (!done) {
    hostclock::polled();
    return CUDA_ERROR_NOT_READY;
  }
  return workResult(w, ctx);
}

}  // namespace

CUresult synchronizeStream(CUstream_st* st) {
  std::vector<fabric::WorkDone> waits;
  {
    StreamTables& t = tables();
    std::lock_guard<mcsim::OrderedMutex> lock(t.mu);
    waits.push_back(st->tail);
    // Synchronizing the legacy stream waits for the blocking streams' work, which any later
    // legacy work would have waited for.
    if (st->kind == CUstream_st::Kind::kLegacy) {
      for (CUstream_st* other : streamsOf(t, st->ctx)) {
        if (other->blocking()) waits.push_back(other->tail);
      }
    }
  }
  CUresult r = CUDA_SUCCESS;
  for (const auto& w : waits) {
    if (const CUresult e = waitWork(w, st->ctx); e != CUDA_SUCCESS) r = e;
  }
  return r;
}

CUresult synchronizeContext(CUctx_st* ctx) {
  std::vector<fabric::WorkDone> waits;
  {
    StreamTables& t = tables();
    std::lock_guard<mcsim::OrderedMutex> lock(t.mu);
    for (CUstream_st* s : streamsOf(t, ctx)) waits.push_back(s->tail);
    auto it = t.orphans.find(ctx);
    if (it != t.orphans.end()) {
      for (const auto& w : it->second.work) waits.push_back(w);
      t.orphans.erase(it);
    }
  }
  CUresult r = CUDA_SUCCESS;
  for (const auto& w : waits) {
    if (const CUresult e = waitWork(w, ctx); e != CUDA_SUCCESS) r = e;
  }
  return r;
}

void releaseContextStreams(CUctx_st* ctx, const std::string& how) {
  // Work that can never finish was reported; the context goes anyway.
  (void)synchronizeContext(ctx);
  StreamTables& t = tables();
  std::vector<unsigned long long> streams, events;  // the program's own, by id
  std::vector<EventRef> gone;  // dropped after the lock (~CUevent_st gives shared events' holds back)
  {
    std::lock_guard<mcsim::OrderedMutex> lock(t.mu);
    for (auto it = t.created.begin(); it != t.created.end();) {
      if (it->second->ctx != ctx) {
        ++it;
        continue;
      }
      streams.push_back(it->second->id);
      it = t.created.erase(it);
    }
    for (auto it = t.perThread.begin(); it != t.perThread.end();) {
      it = it->second->ctx == ctx ? t.perThread.erase(it) : std::next(it);
    }
    t.legacy.erase(ctx);
    for (auto it = t.events.begin(); it != t.events.end();) {
      if (it->second->ctx != ctx) {
        ++it;
        continue;
      }
      events.push_back(it->second->id);
      gone.push_back(std::move(it->second));
      it = t.events.erase(it);
    }
  }
  if (!leakReportArmed()) return;
  std::sort(streams.begin(), streams.end());  // the tables are keyed by heap address
  std::sort(events.begin(), events.end());
  for (unsigned long long id : streams) noteLeftInContext(LeakReport::Kind::kStream, 0, "id " + std::to_string(id), how);
  for (unsigned long long id : events) noteLeftInContext(LeakReport::Kind::kEvent, 0, "id " + std::to_string(id), how);
}

CUresult checkEvent(CUevent e, EventRef* out) {
  StreamTables& t = tables();
  EventRef found;
  {
    std::lock_guard<mcsim::OrderedMutex> lock(t.mu);
    auto it = t.events.find(e);
    if (it == t.events.end()) {
      return MCSIM_REFUSE(CUDA_ERROR_INVALID_HANDLE, "the event is not one this process created, or it was destroyed");
    }
    found = it->second;
  }
  *out = std::move(found);  // what *out held before is dropped outside the lock
  return CUDA_SUCCESS;
}

void addStreamsToDigest(model::Digest& d) {
  StreamTables& t = tables();
  std::lock_guard<mcsim::OrderedMutex> lock(t.mu);
  // Ids, not handles: handle values are heap addresses.
  std::map<unsigned long long, unsigned> streams;
  for (const auto& [p, s] : t.created) streams[s->id] = s->flags;
  d.add(streams.size());
  for (const auto& [id, flags] : streams) d.add(id).add(flags);
  std::map<unsigned long long, unsigned> events;
  for (const auto& [p, e] : t.events) events[e->id] = e->flags;
  d.add(events.size());
  for (const auto& [id, flags] : events) d.add(id).add(flags);
}

namespace {

// Records `ev` on `st`: a marker whose completion becomes the event's record point, or, on a
// capturing stream, the capture's position (an event record node when `external`).
CUresult recordEvent(CUevent_st* ev, CUstream_st* st, bool external) {
  bool handled = false;
  MCSIM_TRY(captureEventRecord(st, ev, external, &handled));
  if (handled) return CUDA_SUCCESS;
  fabric::DeviceOp op;
  op.kind = fabric::DeviceOp::Kind::kMarker;
  // An event is stamped at the host's clock after its record call: the record reaches the device
  // as the call ends (other work starts no earlier than its call began: host_clock.h).
  op.notBeforePs = hostclock::endPs();
  fabric::WorkDone w;
  MCSIM_TRY(enqueue(st, op, &w));
  return setEventRecordPoint(ev, w);
}

}  // namespace

// Entry points' shared bodies (stream_entries.inc calls them with its ABI's reading of NULL).
CUresult eventRecordEntry(CUevent e, CUstream s, bool perThreadDefault) {
  EventRef ev;
  MCSIM_TRY(checkEvent(e, &ev));
  StreamRef st;
  MCSIM_TRY(resolveStream(s, perThreadDefault, &st));
  // An event belongs to its context; it records on that context's streams only.
  if (st->ctx != ev->ctx) return MCSIM_REFUSE(CUDA_ERROR_INVALID_HANDLE, "the event and the stream belong to different contexts");
  return recordEvent(ev.get(), st.get(), false);
}

CUresult adoptSharedEvent(CUctx_st* ctx, uint64_t key, CUevent* out) {
  EventRef e = makeEvent(ctx, CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING, key);
  StreamTables& t = tables();
  std::lock_guard<mcsim::OrderedMutex> lock(t.mu);
  // A context destroyed meanwhile takes no new event (as cuEventCreate's); the hold goes with `e`.
  if (!usableContext(ctx)) return CUDA_ERROR_CONTEXT_IS_DESTROYED;
  *out = insertEvent(t, std::move(e));
  return CUDA_SUCCESS;
}

CUresult streamSynchronizeEntry(CUstream s, bool perThreadDefault) {
  StreamRef st;
  MCSIM_TRY(resolveStream(s, perThreadDefault, &st));
  // A capturing stream runs nothing to wait for: the reference forbids it, and it ends the capture.
  MCSIM_TRY(refuseWhileCapturing(st.get(), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED));
  return synchronizeStream(st.get());
}

CUresult streamQueryEntry(CUstream s, bool perThreadDefault) {
  StreamRef st;
  MCSIM_TRY(resolveStream(s, perThreadDefault, &st));
  MCSIM_TRY(refuseWhileCapturing(st.get(), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED));
  fabric::WorkDone tail;
  {
    std::lock_guard<mcsim::OrderedMutex> lock(tables().mu);
    tail = st->tail;
  }
  return pollWork(tail, st->ctx);
}

CUresult streamWaitEventEntry(CUstream s, CUevent e, unsigned flags, bool perThreadDefault) {
  StreamRef st;
  MCSIM_TRY(resolveStream(s, perThreadDefault, &st));
  EventRef ev;
  MCSIM_TRY(checkEvent(e, &ev));
  if ((flags & ~unsigned{CU_EVENT_WAIT_EXTERNAL}) != 0) return CUDA_ERROR_INVALID_VALUE;
  const fabric::WorkDone recorded = recordedWork(ev.get());
  bool handled = false;
  MCSIM_TRY(captureStreamWaitEvent(st, ev.get(), (flags & CU_EVENT_WAIT_EXTERNAL) != 0, recorded != nullptr,
                                   &handled));
  if (handled) return CUDA_SUCCESS;
  // Waiting for an event never recorded, or already reached, orders nothing.
  if (!pending(recorded)) return CUDA_SUCCESS;
  fabric::DeviceOp op;
  op.kind = fabric::DeviceOp::Kind::kMarker;
  op.crossGpu = ev->ctx->device != st->ctx->device;
  return enqueue(st.get(), op, nullptr, recorded);
}

CUresult eventRecordWithFlagsEntry(CUevent e, CUstream s, unsigned flags, bool perThreadDefault) {
  if ((flags & ~unsigned{CU_EVENT_RECORD_EXTERNAL}) != 0) return CUDA_ERROR_INVALID_VALUE;
  EventRef ev;
  MCSIM_TRY(checkEvent(e, &ev));
  StreamRef st;
  MCSIM_TRY(resolveStream(s, perThreadDefault, &st));
  if (st->ctx != ev->ctx) return MCSIM_REFUSE(CUDA_ERROR_INVALID_HANDLE, "the event and the stream belong to different contexts");
  return recordEvent(ev.get(), st.get(), (flags & CU_EVENT_RECORD_EXTERNAL) != 0);
}

void addStreamsAndEventsLeft(LeakReport& r) {
  // By id, in the order they were made (the tables are keyed by heap address).
  std::map<unsigned long long, unsigned long long> streams, events;  // id -> context id
  {
    std::lock_guard<OrderedMutex> lock(tables().mu);
    for (const auto& [p, s] : tables().created) streams[s->id] = s->ctx->id;
    for (const auto& [p, e] : tables().events) events[e->id] = e->ctx->id;
  }
  for (const auto& [id, ctx] : streams) {
    r.add(LeakReport::Kind::kStream, 0, "id " + std::to_string(id) + " in context " + std::to_string(ctx));
  }
  for (const auto& [id, ctx] : events) {
    r.add(LeakReport::Kind::kEvent, 0, "id " + std::to_string(id) + " in context " + std::to_string(ctx));
  }
}

void countStreamsAndEvents(HandleCounts& c) {
  std::lock_guard<mcsim::OrderedMutex> lock(tables().mu);
  c.streams = tables().created.size() + tables().perThread.size();
  c.events = tables().events.size();
  for (const auto& [ctx, o] : tables().orphans) c.destroyedStreamWork += o.work.size();
}

}  // namespace mcsim::driver

using namespace mcsim::driver;

extern "C" {

// Priorities as a real H100 and H200 report them (docs/real-driver/): 0 is the least, -5 the
// greatest. mcsim keeps them but does not schedule by them.
constexpr int kLeastPriority = 0;
constexpr int kGreatestPriority = -5;

// The body of cuStreamCreate and cuStreamCreateWithPriority (each consults the fault plan under
// its own name first).
static CUresult createStream(CUstream* phStream, unsigned flags, int priority) {
  if (phStream == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if ((flags & ~unsigned{CU_STREAM_NON_BLOCKING}) != 0) return CUDA_ERROR_INVALID_VALUE;
  CUctx_st* ctx = nullptr;
  MCSIM_TRY(currentContext(&ctx));
  StreamTables& t = tables();
  std::lock_guard<mcsim::OrderedMutex> lock(t.mu);
  // Destroyed meanwhile: its streams were released already (releaseContextStreams, under this lock).
  if (!usableContext(ctx)) return CUDA_ERROR_CONTEXT_IS_DESTROYED;
  StreamRef s = newStream(t, CUstream_st::Kind::kCreated, ctx, flags, priority, "");
  CUstream_st* raw = s.get();
  t.created[raw] = std::move(s);
  *phStream = raw;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamCreate(CUstream* phStream, unsigned int Flags) {
  MCSIM_REQUIRE_INIT();
  return createStream(phStream, Flags, kLeastPriority);
}

CUresult CUDAAPI cuStreamCreateWithPriority(CUstream* phStream, unsigned int flags, int priority) {
  MCSIM_REQUIRE_INIT();
  // Out-of-range priorities are clamped, as the reference says.
  return createStream(phStream, flags, std::min(kLeastPriority, std::max(kGreatestPriority, priority)));
}

CUresult CUDAAPI cuCtxGetStreamPriorityRange(int* leastPriority, int* greatestPriority) {
  MCSIM_REQUIRE_INIT();
  CUctx_st* ctx = nullptr;
  MCSIM_TRY(currentContext(&ctx));
  if (leastPriority != nullptr) *leastPriority = kLeastPriority;
  if (greatestPriority != nullptr) *greatestPriority = kGreatestPriority;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamDestroy_v2(CUstream hStream) {
  MCSIM_REQUIRE_INIT();
  StreamTables& t = tables();
  std::unique_lock<mcsim::OrderedMutex> lock(t.mu);
  auto it = t.created.find(hStream);
  if (it == t.created.end()) return CUDA_ERROR_INVALID_HANDLE;
  // Work already submitted still runs; the handle goes at once (a call still using the stream
  // keeps the object: enqueue then leaves its work with the orphans too).
  if (pending(it->second->tail)) keepOrphan(t, it->second->ctx, it->second->tail);
  it->second->destroyed = true;
  StreamRef gone = it->second;
  t.created.erase(it);
  lock.unlock();
  forgetStreamCapture(gone.get());  // (the graph lock ranks below the tables')
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventCreate(CUevent* phEvent, unsigned int Flags) {
  MCSIM_REQUIRE_INIT();
  if (phEvent == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const unsigned known = CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS;
  if ((Flags & ~known) != 0) return CUDA_ERROR_INVALID_VALUE;
  // An interprocess event must not record timing (the reference: DISABLE_TIMING must be set).
  if ((Flags & CU_EVENT_INTERPROCESS) != 0 && (Flags & CU_EVENT_DISABLE_TIMING) == 0) return CUDA_ERROR_INVALID_VALUE;
  CUctx_st* ctx = nullptr;
  MCSIM_TRY(currentContext(&ctx));
  // An interprocess event's record point lives on the node, for every process that opens it.
  uint64_t key = 0;
  if ((Flags & CU_EVENT_INTERPROCESS) != 0) MCSIM_TRY(toResult(node().ipcEventCreate(&key)));
  EventRef e = makeEvent(ctx, Flags, key);  // a refusal below gives the node's record back with it
  StreamTables& t = tables();
  std::lock_guard<mcsim::OrderedMutex> lock(t.mu);
  if (!usableContext(ctx)) return CUDA_ERROR_CONTEXT_IS_DESTROYED;  // (as a stream's: createStream)
  *phEvent = insertEvent(t, std::move(e));
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventDestroy_v2(CUevent hEvent) {
  MCSIM_REQUIRE_INIT();
  StreamTables& t = tables();
  // Dropped after the lock: the last reference gives a shared event's hold on the node back. A
  // call still using the event keeps its own reference, and the hold with it.
  EventRef gone;
  std::lock_guard<mcsim::OrderedMutex> lock(t.mu);
  auto it = t.events.find(hEvent);
  if (it == t.events.end()) return CUDA_ERROR_INVALID_HANDLE;
  gone = std::move(it->second);
  t.events.erase(it);  // a record still pending completes on its own
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventQuery(CUevent hEvent) {
  MCSIM_REQUIRE_INIT();
  EventRef ev;
  MCSIM_TRY(checkEvent(hEvent, &ev));
  if (queryInvalidatesCapture(ev.get())) return CUDA_ERROR_CAPTURED_EVENT;
  return pollWork(recordedWork(ev.get()), ev->ctx);
}

CUresult CUDAAPI cuEventSynchronize(CUevent hEvent) {
  MCSIM_REQUIRE_INIT();
  EventRef ev;
  MCSIM_TRY(checkEvent(hEvent, &ev));
  if (eventRecordedInCapture(ev.get())) return CUDA_ERROR_CAPTURED_EVENT;
  const mcsim::fabric::WorkDone recorded = recordedWork(ev.get());
  return waitWork(recorded, ev->ctx);
}

static CUresult elapsedTime(float* pMilliseconds, CUevent hStart, CUevent hEnd) {
  // A real H100 answers INVALID_HANDLE for a NULL result pointer too
  // (docs/real-driver/conformance-h100-2026-11-21-streams.txt).
  if (pMilliseconds == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  EventRef a, b;
  MCSIM_TRY(checkEvent(hStart, &a));
  MCSIM_TRY(checkEvent(hEnd, &b));
  const mcsim::fabric::WorkDone ra = recordedWork(a.get()), rb = recordedWork(b.get());
  if (((a->flags | b->flags) & CU_EVENT_DISABLE_TIMING) != 0) {
    return MCSIM_REFUSE(CUDA_ERROR_INVALID_HANDLE, "an event made with CU_EVENT_DISABLE_TIMING has no time");
  }
  if (!ra || !rb) return MCSIM_REFUSE(CUDA_ERROR_INVALID_HANDLE, "an event that was never recorded has no time");
  bool doneA = false, doneB = false;
  MCSIM_TRY(toResult(node().isDone(ra, &doneA)));
  MCSIM_TRY(toResult(node().isDone(rb, &doneB)));
  if (!doneA || !doneB) return CUDA_ERROR_NOT_READY;
  // Simulated picoseconds to milliseconds: an application's own timing code measures the model.
  const double ps = static_cast<double>(rb->donePs()) - static_cast<double>(ra->donePs());
  *pMilliseconds = static_cast<float>(ps / 1e9);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventElapsedTime_v2(float* pMilliseconds, CUevent hStart, CUevent hEnd) {
  MCSIM_REQUIRE_INIT();
  return elapsedTime(pMilliseconds, hStart, hEnd);
}

}  // extern "C"

#include "driver/stream_entries.inc"

// The CUDA 2.0 names of the destroy calls, which cuGetProcAddress hands to callers asking for a
// version before 4.0.
#include "driver/abi_names.h"
#include "model/ordered_mutex.h"
extern "C" CUresult CUDAAPI cuStreamDestroy(CUstream hStream) { return cuStreamDestroy_v2(hStream); }
extern "C" CUresult CUDAAPI cuEventDestroy(CUevent hEvent) { return cuEventDestroy_v2(hEvent); }
// The CUDA 2.0 cuEventElapsedTime; cuda.h's name now means the 12.8 _v2, which answers alike.
extern "C" CUresult CUDAAPI cuEventElapsedTime(float* pMilliseconds, CUevent hStart, CUevent hEnd) {
  MCSIM_REQUIRE_INIT();
  return elapsedTime(pMilliseconds, hStart, hEnd);
}
