// Stream capture (docs/runtime.md, "Graphs and stream capture"): between cuStreamBeginCapture
// and cuStreamEndCapture the work a program puts on a stream is not run but becomes nodes of a
// graph. enqueue (driver/stream.cpp) asks captureOperation about every operation, so every call
// that queues device work (launches, copies and memsets of every shape, stream memory
// operations) is captured by the same body that runs it otherwise; event records, event waits and
// host functions are handled by their calls. A capture sequence starts on one stream (its
// origin) and takes in other streams through events: a stream that waits for an event recorded in
// the capture joins it (a fork), and the origin waiting for an event recorded on such a stream
// joins that work back. What the reference forbids during capture returns its error and
// invalidates the capture, which then ends with CUDA_ERROR_STREAM_CAPTURE_INVALIDATED.
//
// State lives on the streams and events (stream.h) and in the sessions here, all under the graph
// tables' lock (driver/graph.h).
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "driver/context.h"
#include "driver/driver.h"
#include "driver/graph.h"
#include "model/thread_owned.h"
#include "driver/stream.h"

namespace mcsim::driver {

struct CaptureSession {
  uint64_t id = 0;
  CUgraph_st* graph = nullptr;
  bool ownsGraph = true;  // false for cuStreamBeginCaptureToGraph: the program's graph
  CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
  std::thread::id thread;
  CUstream_st* origin = nullptr;
  bool invalidated = false;
  // The origin first, then the others as they joined; held, so that a stream destroyed with its
  // context meanwhile is still there to leave the capture when it ends.
  std::vector<StreamRef> streams;
};

namespace {

std::atomic<int> gActiveCaptures{0};
std::vector<std::shared_ptr<CaptureSession>>& sessions() {
  static auto* s = new std::vector<std::shared_ptr<CaptureSession>>();
  return *s;
}
uint64_t gNextCaptureId = 1;

// The calling thread's capture interaction mode (cuThreadExchangeStreamCaptureMode).
thread_local CUstreamCaptureMode tCaptureMode = CU_STREAM_CAPTURE_MODE_GLOBAL;

std::shared_ptr<CaptureSession> findSessionLocked(uint64_t id) {
  for (const auto& s : sessions()) {
    if (s->id == id) return s;
  }
  return nullptr;
}

// Ends `s`: every stream leaves it (caller holding the graph lock).
void endSessionLocked(const std::shared_ptr<CaptureSession>& s) {
  for (const StreamRef& st : s->streams) {
    st->capture.reset();
    st->captureDeps.clear();
  }
  s->streams.clear();
  auto& all = sessions();
  all.erase(std::remove(all.begin(), all.end(), s), all.end());
  gActiveCaptures.fetch_sub(1);
}

CUgraphNodeType typeOfOperation(const fabric::DeviceOp& op) {
  switch (op.kind) {
    case fabric::DeviceOp::Kind::kKernel: return CU_GRAPH_NODE_TYPE_KERNEL;
    case fabric::DeviceOp::Kind::kCopy: return CU_GRAPH_NODE_TYPE_MEMCPY;
    case fabric::DeviceOp::Kind::kFill: return CU_GRAPH_NODE_TYPE_MEMSET;
    case fabric::DeviceOp::Kind::kWaitValue: return CU_GRAPH_NODE_TYPE_BATCH_MEM_OP;
    case fabric::DeviceOp::Kind::kMarker: break;
  }
  return CU_GRAPH_NODE_TYPE_EMPTY;
}

// What a captured node's GetParams answers when the call did not say: read from its operation.
void describeFromOperation(CUgraphNode_st* n, const fabric::DeviceOp& op) {
  if (op.kind == fabric::DeviceOp::Kind::kCopy) {
    CUDA_MEMCPY3D& c = n->copy;
    c = CUDA_MEMCPY3D{};
    c.srcMemoryType = op.srcDevice ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST;
    c.dstMemoryType = op.dstDevice ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST;
    if (op.srcDevice) c.srcDevice = op.src; else c.srcHost = reinterpret_cast<const void*>(op.src);
    if (op.dstDevice) c.dstDevice = op.dst; else c.dstHost = reinterpret_cast<void*>(op.dst);
    c.WidthInBytes = op.bytes;
    c.srcPitch = c.dstPitch = op.bytes;
    c.Height = c.Depth = 1;
  } else if (op.kind == fabric::DeviceOp::Kind::kFill) {
    n->memset = CUDA_MEMSET_NODE_PARAMS{op.dst, 0, op.value, op.elementBytes, op.count, 1};
  }
}

// A new node of the capture `st` is in, after the stream's dependencies; the stream's next
// operation follows it (caller holding the graph lock).
CUresult addCapturedNodeLocked(CUstream_st* st, CUgraphNodeType type, CUgraphNode_st** out) {
  CaptureSession& s = *st->capture;
  MCSIM_TRY(addNodeLocked(s.graph, type, st->captureDeps.data(), st->captureDeps.size(), out));
  (*out)->ctx = st->ctx;
  st->captureDeps.assign(1, *out);
  return CUDA_SUCCESS;
}

void invalidateLocked(CaptureSession& s) { s.invalidated = true; }

bool containsNode(const std::vector<CUgraphNode_st*>& v, const CUgraphNode_st* n) {
  return std::find(v.begin(), v.end(), n) != v.end();
}

}  // namespace

bool capturesActive() { return gActiveCaptures.load(std::memory_order_acquire) != 0; }

CUresult captureOperation(CUstream_st* st, fabric::DeviceOp& op, bool* captured) {
  *captured = false;
  std::lock_guard<OrderedMutex> lock(graphMutex());
  if (st->capture) {
    CaptureSession& s = *st->capture;
    if (s.invalidated) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    op.engineDevice = st->ctx->device;
    NodeCall* call = activeNodeCall();
    // A word the call took by value (a stream memory write) must outlive the call: the node
    // keeps a copy, which its copies and instances share.
    std::shared_ptr<const std::vector<uint8_t>> owned;
    if (call != nullptr && call->copiesSourceNow && op.kind == fabric::DeviceOp::Kind::kCopy && !op.srcDevice) {
      const auto* b = reinterpret_cast<const uint8_t*>(op.src);
      owned = std::make_shared<const std::vector<uint8_t>>(b, b + op.bytes);
      op.src = reinterpret_cast<uint64_t>(owned->data());
      op.srcPinned = false;
    }
    // The call's later operations join the node its first one made (a 2D copy's rows).
    if (call != nullptr && call->node != nullptr && liveNodeLocked(call->node) && call->node->graph == s.graph &&
        !st->captureDeps.empty() && st->captureDeps.back() == call->node) {
      call->node->ops.push_back(op);
      if (owned) call->node->owned.push_back(owned);
      *captured = true;
      return CUDA_SUCCESS;
    }
    CUgraphNode_st* n = nullptr;
    MCSIM_TRY(addCapturedNodeLocked(st, call != nullptr ? call->type : typeOfOperation(op), &n));
    n->ops.push_back(op);
    if (owned) n->owned.push_back(owned);
    describeFromOperation(n, op);
    if (call != nullptr) {
      call->node = n;
      if (call->haveKernel) n->kernel.assign(call->kernel, call->kernelSizes);
      if (call->haveCopy) n->copy = call->copy;
      if (call->haveMemset) n->memset = call->memset;
    }
    *captured = true;
    return CUDA_SUCCESS;
  }
  // Work on the legacy stream waits for every blocking stream of its context, which a capturing
  // stream cannot give it: the reference's "implicit dependency" on a capture, which it ends.
  if (st->kind == CUstream_st::Kind::kLegacy) {
    bool hit = false;
    for (const auto& s : sessions()) {
      for (const StreamRef& other : s->streams) {
        if (other->ctx == st->ctx && other->blocking()) {
          invalidateLocked(*s);
          hit = true;
        }
      }
    }
    if (hit) return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
  }
  return CUDA_SUCCESS;
}

CUresult refuseWhileCapturing(CUstream_st* st, CUresult forbidden) {
  if (!capturesActive()) return CUDA_SUCCESS;
  std::lock_guard<OrderedMutex> lock(graphMutex());
  if (!st->capture) return CUDA_SUCCESS;
  invalidateLocked(*st->capture);
  return forbidden;
}

CUresult checkUnsafeCall() {
  if (!capturesActive()) return CUDA_SUCCESS;
  const CUstreamCaptureMode mine = tCaptureMode;
  if (mine == CU_STREAM_CAPTURE_MODE_RELAXED) return CUDA_SUCCESS;
  const std::thread::id self = std::this_thread::get_id();
  std::lock_guard<OrderedMutex> lock(graphMutex());
  bool prohibited = false;
  for (const auto& s : sessions()) {
    if (s->mode == CU_STREAM_CAPTURE_MODE_RELAXED) continue;
    // The thread's own capture, or (in global mode) another thread's global capture.
    if (s->thread == self || (mine == CU_STREAM_CAPTURE_MODE_GLOBAL && s->mode == CU_STREAM_CAPTURE_MODE_GLOBAL)) {
      invalidateLocked(*s);
      prohibited = true;
    }
  }
  return prohibited ? CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED : CUDA_SUCCESS;
}

CUresult captureEventRecord(CUstream_st* st, CUevent_st* ev, bool external, bool* handled) {
  *handled = false;
  if (!capturesActive()) return CUDA_SUCCESS;
  std::lock_guard<OrderedMutex> lock(graphMutex());
  if (!st->capture) {
    ev->captureId = 0;  // recorded outside capture from now on
    ev->captureNodes.clear();
    return CUDA_SUCCESS;
  }
  CaptureSession& s = *st->capture;
  if (s.invalidated) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  *handled = true;
  if (external) {
    // An event record node: the event is recorded when the graph runs.
    CUgraphNode_st* n = nullptr;
    MCSIM_TRY(addCapturedNodeLocked(st, CU_GRAPH_NODE_TYPE_EVENT_RECORD, &n));
    n->event = ev;
  }
  ev->captureId = s.id;
  ev->captureNodes = st->captureDeps;
  return CUDA_SUCCESS;
}

CUresult captureStreamWaitEvent(const StreamRef& st, CUevent_st* ev, bool external, bool recordedOutside,
                                bool* handled) {
  *handled = false;
  if (!capturesActive()) return CUDA_SUCCESS;
  std::lock_guard<OrderedMutex> lock(graphMutex());
  std::shared_ptr<CaptureSession> from = ev->captureId != 0 ? findSessionLocked(ev->captureId) : nullptr;
  if (external && st->capture) {
    // An event wait node: the graph waits for the event's record at the time it runs.
    if (st->capture->invalidated) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    CUgraphNode_st* n = nullptr;
    MCSIM_TRY(addCapturedNodeLocked(st.get(), CU_GRAPH_NODE_TYPE_WAIT_EVENT, &n));
    n->event = ev;
    *handled = true;
    return CUDA_SUCCESS;
  }
  if (from) {
    *handled = true;
    // A stream outside any capture cannot fork from an invalidated one: the real driver (580.159.04)
    // answers INVALID_VALUE and the stream stays outside.
    if (from->invalidated) return st->capture ? CUDA_ERROR_STREAM_CAPTURE_INVALIDATED : CUDA_ERROR_INVALID_VALUE;
    if (!st->capture) {
      // A fork: the stream joins the capture, its next operations after the event's nodes. The
      // legacy stream can take no part in a capture.
      if (st->kind == CUstream_st::Kind::kLegacy) {
        invalidateLocked(*from);
        return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
      }
      st->capture = from;
      st->captureDeps = ev->captureNodes;
      from->streams.push_back(st);
      return CUDA_SUCCESS;
    }
    if (st->capture != from) {
      invalidateLocked(*from);
      invalidateLocked(*st->capture);
      return CUDA_ERROR_STREAM_CAPTURE_MERGE;
    }
    // A join: the stream's next operations also follow the event's nodes.
    for (CUgraphNode_st* n : ev->captureNodes) {
      if (!containsNode(st->captureDeps, n)) st->captureDeps.push_back(n);
    }
    return CUDA_SUCCESS;
  }
  if (st->capture) {
    *handled = true;
    if (st->capture->invalidated) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    // An event of work outside the capture: a dependency across the capture's boundary.
    if (recordedOutside) {
      invalidateLocked(*st->capture);
      return CUDA_ERROR_STREAM_CAPTURE_ISOLATION;
    }
    return CUDA_SUCCESS;  // never recorded (or recorded in a capture that ended): no dependency
  }
  return CUDA_SUCCESS;
}

CUresult captureHostFunction(CUstream_st* st, CUhostFn fn, void* userData, bool* handled) {
  *handled = false;
  if (!capturesActive()) return CUDA_SUCCESS;
  std::lock_guard<OrderedMutex> lock(graphMutex());
  if (!st->capture) return CUDA_SUCCESS;
  *handled = true;
  if (st->capture->invalidated) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  CUgraphNode_st* n = nullptr;
  MCSIM_TRY(addCapturedNodeLocked(st, CU_GRAPH_NODE_TYPE_HOST, &n));
  n->host = CUDA_HOST_NODE_PARAMS{fn, userData};
  return CUDA_SUCCESS;
}

bool eventRecordedInCapture(const CUevent_st* ev) {
  if (!capturesActive()) return false;
  std::lock_guard<OrderedMutex> lock(graphMutex());
  return ev->captureId != 0 && findSessionLocked(ev->captureId) != nullptr;
}

bool queryInvalidatesCapture(const CUevent_st* ev) {
  if (!capturesActive() || ev->captureId == 0) return false;
  std::lock_guard<OrderedMutex> lock(graphMutex());
  std::shared_ptr<CaptureSession> s = findSessionLocked(ev->captureId);
  if (s == nullptr) return false;
  invalidateLocked(*s);
  return true;
}

void forgetStreamCapture(CUstream_st* st) {
  if (!capturesActive()) return;
  CUgraph_st* orphan = nullptr;  // the graph of a capture nobody can end any more
  {
    std::lock_guard<OrderedMutex> lock(graphMutex());
    if (!st->capture) return;
    // A stream destroyed while capturing leaves its capture invalid (its work cannot be joined).
    auto s = st->capture;
    invalidateLocked(*s);
    if (s->origin == st) {
      endSessionLocked(s);
      if (s->ownsGraph) orphan = s->graph;
    } else {
      s->streams.erase(std::remove_if(s->streams.begin(), s->streams.end(),
                                      [st](const StreamRef& x) { return x.get() == st; }),
                       s->streams.end());
      st->capture.reset();
      st->captureDeps.clear();
    }
  }
  if (orphan != nullptr) destroyGraph(orphan);
}


namespace {

CUresult captureStatus(CUstream_st* st, CUstreamCaptureStatus* status) {
  if (!st->capture) {
    *status = CU_STREAM_CAPTURE_STATUS_NONE;
  } else {
    *status = st->capture->invalidated ? CU_STREAM_CAPTURE_STATUS_INVALIDATED : CU_STREAM_CAPTURE_STATUS_ACTIVE;
  }
  return CUDA_SUCCESS;
}

// The edge data cuStreamGetCaptureInfo hands out with a stream's dependencies: all default
// (full completion), which is all mcsim's captures make; one array per thread, valid until its
// next call, as the reference allows.
const CUgraphEdgeData* defaultEdgeData(size_t n) {
  struct EdgeDataTag;
  std::vector<CUgraphEdgeData>& data = threadOwned<std::vector<CUgraphEdgeData>, EdgeDataTag>();
  data.assign(std::max<size_t>(n, 1), CUgraphEdgeData{});
  return data.data();
}

}  // namespace

CUresult captureStatusEntry(CUstream s, CUstreamCaptureStatus* status, bool perThreadDefault) {
  if (status == nullptr) return CUDA_ERROR_INVALID_VALUE;
  StreamRef st;
  MCSIM_TRY(resolveStream(s, perThreadDefault, &st));
  std::lock_guard<OrderedMutex> lock(graphMutex());
  return captureStatus(st.get(), status);
}

CUresult captureInfoEntry(CUstream s, CUstreamCaptureStatus* status, cuuint64_t* id, CUgraph* graph,
                          const CUgraphNode** deps, const CUgraphEdgeData** edgeData, size_t* numDeps,
                          bool perThreadDefault) {
  if (status == nullptr) return CUDA_ERROR_INVALID_VALUE;
  // Edge data comes only with the dependencies it describes (the reference).
  if (edgeData != nullptr && deps == nullptr) return CUDA_ERROR_INVALID_VALUE;
  StreamRef st;
  MCSIM_TRY(resolveStream(s, perThreadDefault, &st));
  std::lock_guard<OrderedMutex> lock(graphMutex());
  captureStatus(st.get(), status);
  if (*status == CU_STREAM_CAPTURE_STATUS_NONE) return CUDA_SUCCESS;  // the other outputs are left alone
  const CaptureSession& c = *st->capture;
  if (id != nullptr) *id = c.id;
  if (graph != nullptr) *graph = c.graph;
  if (deps != nullptr) *deps = st->captureDeps.empty() ? nullptr : st->captureDeps.data();
  if (edgeData != nullptr) *edgeData = st->captureDeps.empty() ? nullptr : defaultEdgeData(st->captureDeps.size());
  if (numDeps != nullptr) *numDeps = st->captureDeps.size();
  return CUDA_SUCCESS;
}

CUresult beginCaptureEntry(CUstream s, CUgraph into, const CUgraphNode* deps, const CUgraphEdgeData* edgeData,
                           size_t numDeps, CUstreamCaptureMode mode, bool perThreadDefault) {
  if (mode != CU_STREAM_CAPTURE_MODE_GLOBAL && mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
      mode != CU_STREAM_CAPTURE_MODE_RELAXED) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  // The legacy stream cannot capture (the reference); the NULL stream of a per-thread ABI can.
  if (s == CU_STREAM_LEGACY || (s == nullptr && !perThreadDefault)) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  if (numDeps != 0 && deps == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (edgeData != nullptr) {
    for (size_t i = 0; i < numDeps; ++i) {
      const CUgraphEdgeData& e = edgeData[i];
      if (e.from_port != 0 || e.to_port != 0 || e.type != 0) return CUDA_ERROR_NOT_SUPPORTED;
    }
  }
  StreamRef st;
  MCSIM_TRY(resolveStream(s, perThreadDefault, &st));
  if (st->kind == CUstream_st::Kind::kLegacy) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  std::lock_guard<OrderedMutex> lock(graphMutex());
  if (st->capture) return CUDA_ERROR_ILLEGAL_STATE;
  auto session = std::make_shared<CaptureSession>();
  if (into != nullptr) {
    if (!liveGraphLocked(into)) return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < numDeps; ++i) {
      if (!liveNodeLocked(deps[i]) || deps[i]->graph != into) return CUDA_ERROR_INVALID_VALUE;
    }
    session->graph = into;
    session->ownsGraph = false;
    st->captureDeps.assign(deps, deps + numDeps);
  } else {
    session->graph = newGraphLocked();
    st->captureDeps.clear();
  }
  session->id = gNextCaptureId++;
  session->mode = mode;
  session->thread = std::this_thread::get_id();
  session->origin = st.get();
  session->streams.push_back(st);
  st->capture = session;
  sessions().push_back(session);
  gActiveCaptures.fetch_add(1);
  return CUDA_SUCCESS;
}

CUresult endCaptureEntry(CUstream s, CUgraph* phGraph, bool perThreadDefault) {
  if (phGraph == nullptr) return CUDA_ERROR_INVALID_VALUE;
  StreamRef st;
  MCSIM_TRY(resolveStream(s, perThreadDefault, &st));
  CUgraph_st* discard = nullptr;
  CUresult r = CUDA_SUCCESS;
  {
    std::lock_guard<OrderedMutex> lock(graphMutex());
    if (!st->capture) return CUDA_ERROR_ILLEGAL_STATE;
    std::shared_ptr<CaptureSession> c = st->capture;
    if (c->origin != st.get()) return CUDA_ERROR_STREAM_CAPTURE_UNMATCHED;
    // From another thread (outside relaxed mode) the capture still ends, its graph discarded: on the
    // real driver (580.159.04) the stream is no longer capturing afterwards, and ending it again
    // from the thread that began it is ILLEGAL_STATE.
    const bool wrongThread = c->mode != CU_STREAM_CAPTURE_MODE_RELAXED && c->thread != std::this_thread::get_id();
    // Every stream that joined must have been joined back: its last nodes precede the origin's.
    bool unjoined = false;
    for (const StreamRef& other : c->streams) {
      if (other == st) continue;
      for (const CUgraphNode_st* n : other->captureDeps) {
        bool reached = false;
        for (const CUgraphNode_st* o : st->captureDeps) reached = reached || precedesLocked(n, o);
        if (!reached) unjoined = true;
      }
    }
    if (wrongThread) r = CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD;
    else if (c->invalidated) r = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    else if (unjoined) r = CUDA_ERROR_STREAM_CAPTURE_UNJOINED;
    endSessionLocked(c);
    if (r == CUDA_SUCCESS) {
      *phGraph = c->graph;
    } else {
      *phGraph = nullptr;
      if (c->ownsGraph) discard = c->graph;
    }
  }
  if (discard != nullptr) destroyGraph(discard);
  return r;
}

CUresult updateCaptureDependenciesEntry(CUstream s, CUgraphNode* deps, const CUgraphEdgeData* edgeData,
                                        size_t numDeps, unsigned flags, bool perThreadDefault) {
  if (flags != CU_STREAM_ADD_CAPTURE_DEPENDENCIES && flags != CU_STREAM_SET_CAPTURE_DEPENDENCIES) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (numDeps != 0 && deps == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (edgeData != nullptr) {
    for (size_t i = 0; i < numDeps; ++i) {
      if (edgeData[i].from_port != 0 || edgeData[i].to_port != 0 || edgeData[i].type != 0) {
        return CUDA_ERROR_NOT_SUPPORTED;
      }
    }
  }
  StreamRef st;
  MCSIM_TRY(resolveStream(s, perThreadDefault, &st));
  std::lock_guard<OrderedMutex> lock(graphMutex());
  if (!st->capture) return CUDA_ERROR_ILLEGAL_STATE;
  if (st->capture->invalidated) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  for (size_t i = 0; i < numDeps; ++i) {
    if (!liveNodeLocked(deps[i]) || deps[i]->graph != st->capture->graph) return CUDA_ERROR_INVALID_VALUE;
  }
  if (flags == CU_STREAM_SET_CAPTURE_DEPENDENCIES) st->captureDeps.clear();
  for (size_t i = 0; i < numDeps; ++i) {
    if (!containsNode(st->captureDeps, deps[i])) st->captureDeps.push_back(deps[i]);
  }
  return CUDA_SUCCESS;
}

}  // namespace mcsim::driver

extern "C" CUresult CUDAAPI cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode* mode) {
  MCSIM_REQUIRE_INIT();
  if (mode == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (*mode != CU_STREAM_CAPTURE_MODE_GLOBAL && *mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
      *mode != CU_STREAM_CAPTURE_MODE_RELAXED) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  const CUstreamCaptureMode previous = mcsim::driver::tCaptureMode;
  mcsim::driver::tCaptureMode = *mode;
  *mode = previous;
  return CUDA_SUCCESS;
}

#include "driver/stream_capture_entries.inc"
