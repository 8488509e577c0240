// CUDA graphs: the graph and node objects, explicit construction, edges, queries, node
// parameters, clones (driver/graph.h says how the objects are kept). Instantiation and launch are
// in graph_exec.cpp, stream capture in stream_capture.cpp.
//
// A device-work node is made by running the entry point's own body (a launch, cuMemcpy3DAsync,
// cuMemsetD2D*Async) on the node's context with an OpRecorder in scope, so that what it would
// queue becomes the node's operations and its checks are the call's: a node whose parameters
// the call would refuse is refused with the call's error, and the graph is left as it was.
#include "driver/graph.h"

#include <cstdio>
#include <map>
#include <mutex>
#include <set>
#include <utility>

#include "driver/context.h"
#include "driver/driver.h"
#include "driver/leaks.h"
#include "driver/memory.h"
#include "driver/module_ptx.h"
#include "driver/stream.h"

CUgraph_st::~CUgraph_st() = default;

KernelNodeParams& KernelNodeParams::operator=(const KernelNodeParams& o) {
  if (this == &o) return *this;
  p = o.p;
  args = o.args;
  extraBuffer = o.extraBuffer;
  extraBytes = o.extraBytes;
  argPtrs.clear();
  for (auto& a : args) argPtrs.push_back(a.data());
  extraArray.clear();
  if (o.p.kernelParams != nullptr) p.kernelParams = argPtrs.data();
  if (o.p.extra != nullptr) {
    extraArray = {CU_LAUNCH_PARAM_BUFFER_POINTER, extraBuffer.data(), CU_LAUNCH_PARAM_BUFFER_SIZE, &extraBytes,
                  CU_LAUNCH_PARAM_END};
    p.extra = extraArray.data();
  }
  return *this;
}

void KernelNodeParams::assign(const CUDA_KERNEL_NODE_PARAMS& src, const std::vector<size_t>& sizes) {
  KernelNodeParams fresh;
  fresh.p = src;
  fresh.p.kernelParams = nullptr;
  fresh.p.extra = nullptr;
  if (src.kernelParams != nullptr) {
    for (size_t i = 0; i < sizes.size(); ++i) {
      const auto* b = static_cast<const uint8_t*>(src.kernelParams[i]);
      fresh.args.emplace_back(b, b + sizes[i]);
    }
    fresh.p.kernelParams = reinterpret_cast<void**>(1);  // marks the form; re-pointed below
  } else if (src.extra != nullptr) {
    const uint8_t* buffer = nullptr;
    size_t bytes = 0;
    if (mcsim::driver::extraBuffer(src.extra, &buffer, &bytes) == CUDA_SUCCESS) {
      fresh.extraBuffer.assign(buffer, buffer + bytes);
      fresh.extraBytes = bytes;
      fresh.p.extra = reinterpret_cast<void**>(1);
    }
  }
  *this = fresh;
}


namespace mcsim::driver {

namespace {

struct GraphTables {
  OrderedMutex mu{LockRank::kDriverGraphs};
  std::set<CUgraph_st*> graphs;      // every live graph, child graphs included
  std::set<CUgraphNode_st*> nodes;   // every live node
  std::map<const CUgraph_st*, uint64_t> clonedFrom;  // clone -> original graph's id
  uint64_t nextGraphId = 1;
};

GraphTables& tables() {
  static auto* t = new GraphTables();
  return *t;
}

thread_local OpRecorder* tRecorder = nullptr;
thread_local NodeCall* tNodeCall = nullptr;

// Forgets `g`, its nodes and its child graphs in the tables (caller holding the lock; the
// objects are freed by their owner).
void forgetGraphLocked(CUgraph_st* g) {
  GraphTables& t = tables();
  for (const auto& n : g->nodes) {
    if (n->child) forgetGraphLocked(n->child.get());
    t.nodes.erase(n.get());
  }
  t.graphs.erase(g);
  t.clonedFrom.erase(g);
}

}  // namespace

OrderedMutex& graphMutex() { return tables().mu; }

OpRecorder::OpRecorder() : previous_(tRecorder) { tRecorder = this; }
OpRecorder::~OpRecorder() { tRecorder = previous_; }
OpRecorder* activeRecorder() { return tRecorder; }

NodeCall::NodeCall(CUgraphNodeType t) : type(t), previous_(tNodeCall) { tNodeCall = this; }
NodeCall::~NodeCall() { tNodeCall = previous_; }
NodeCall* activeNodeCall() { return tNodeCall; }


CUgraph_st* newGraphLocked() {
  GraphTables& t = tables();
  auto* g = new CUgraph_st();
  g->id = t.nextGraphId++;
  t.graphs.insert(g);
  return g;
}

bool liveGraphLocked(CUgraph_st* g) { return g != nullptr && tables().graphs.count(g) != 0; }
bool liveNodeLocked(CUgraphNode_st* n) { return n != nullptr && tables().nodes.count(n) != 0; }

CUresult addNodeLocked(CUgraph_st* g, CUgraphNodeType type, const CUgraphNode_st* const* deps, size_t n,
                       CUgraphNode_st** out) {
  if (out == nullptr || !liveGraphLocked(g)) return CUDA_ERROR_INVALID_VALUE;
  if (n != 0 && deps == nullptr) return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < n; ++i) {
    auto* d = const_cast<CUgraphNode_st*>(deps[i]);
    if (!liveNodeLocked(d) || d->graph != g) return CUDA_ERROR_INVALID_VALUE;
    for (size_t j = 0; j < i; ++j) {
      if (deps[j] == deps[i]) return CUDA_ERROR_INVALID_VALUE;
    }
  }
  auto node = std::make_unique<CUgraphNode_st>();
  node->graph = g;
  node->type = type;
  node->order = g->nextOrder++;
  CUgraphNode_st* raw = node.get();
  for (size_t i = 0; i < n; ++i) g->edges.emplace_back(const_cast<CUgraphNode_st*>(deps[i]), raw);
  g->nodes.push_back(std::move(node));
  tables().nodes.insert(raw);
  *out = raw;
  return CUDA_SUCCESS;
}

void destroyGraph(CUgraph_st* g) {
  std::lock_guard<OrderedMutex> lock(graphMutex());
  if (!liveGraphLocked(g)) return;
  forgetGraphLocked(g);
  delete g;
}

bool precedesLocked(const CUgraphNode_st* ancestor, const CUgraphNode_st* n) {
  if (ancestor == n) return true;
  if (ancestor->graph != n->graph) return false;
  // Walk back from n over the edges (graphs are small; no index is kept).
  std::vector<const CUgraphNode_st*> todo{n};
  std::set<const CUgraphNode_st*> seen{n};
  while (!todo.empty()) {
    const CUgraphNode_st* cur = todo.back();
    todo.pop_back();
    for (const auto& [from, to] : n->graph->edges) {
      if (to != cur || seen.count(from) != 0) continue;
      if (from == ancestor) return true;
      seen.insert(from);
      todo.push_back(from);
    }
  }
  return false;
}

namespace {

// The node `n` stands for in the tables, or nullptr.
CUgraphNode_st* liveNode(CUgraphNode n) { return liveNodeLocked(n) ? n : nullptr; }

// The parameters of a node of each kind, as a node made of them: the operations an entry point
// would queue, built with its checks. Not under the graph lock (the calls take the stream,
// memory and module locks).
CUresult buildKernelNode(const CUDA_KERNEL_NODE_PARAMS& p, CUgraphNode_st* out) {
  CUfunction f = p.func != nullptr ? p.func : reinterpret_cast<CUfunction>(p.kern);
  if (f == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUctx_st* ctx = p.func != nullptr ? functionContext(p.func) : p.ctx;
  if (ctx == nullptr) MCSIM_TRY(currentContext(&ctx));
  if (!usableContext(ctx)) return CUDA_ERROR_INVALID_CONTEXT;
  ScopedContext scope(ctx);
  std::vector<size_t> sizes;
  MCSIM_TRY(kernelParamSizes(f, ctx, &sizes));
  OpRecorder rec;
  MCSIM_TRY(launchKernelEntry(f, p.gridDimX, p.gridDimY, p.gridDimZ, p.blockDimX, p.blockDimY, p.blockDimZ,
                              p.sharedMemBytes, nullptr, p.kernelParams, p.extra, false));
  out->type = CU_GRAPH_NODE_TYPE_KERNEL;
  out->ctx = ctx;
  out->ops = std::move(rec.ops);
  out->kernel.assign(p, sizes);
  out->kernel.p.func = f;
  out->kernel.p.ctx = ctx;
  return CUDA_SUCCESS;
}

CUresult buildMemcpyNode(const CUDA_MEMCPY3D* copy, CUcontext ctx, CUgraphNode_st* out) {
  if (copy == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (ctx == nullptr) MCSIM_TRY(currentContext(&ctx));
  if (!usableContext(ctx)) return CUDA_ERROR_INVALID_CONTEXT;
  ScopedContext scope(ctx);
  OpRecorder rec;
  MCSIM_TRY(copy3D(copy, Ordering{nullptr, true, false}));
  out->type = CU_GRAPH_NODE_TYPE_MEMCPY;
  out->ctx = ctx;
  out->ops = std::move(rec.ops);
  out->copy = *copy;
  return CUDA_SUCCESS;
}

CUresult buildMemsetNode(const CUDA_MEMSET_NODE_PARAMS* m, CUcontext ctx, CUgraphNode_st* out) {
  if (m == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (m->elementSize != 1 && m->elementSize != 2 && m->elementSize != 4) return CUDA_ERROR_INVALID_VALUE;
  if (m->width == 0 || m->height == 0) return CUDA_ERROR_INVALID_VALUE;
  if (ctx == nullptr) MCSIM_TRY(currentContext(&ctx));
  if (!usableContext(ctx)) return CUDA_ERROR_INVALID_CONTEXT;
  ScopedContext scope(ctx);
  OpRecorder rec;
  // The pitch is not used for one row (the reference).
  const size_t pitch = m->height == 1 ? m->width * m->elementSize : m->pitch;
  MCSIM_TRY(fill2D(m->dst, pitch, m->value, m->elementSize, m->width, m->height, Ordering{nullptr, true, false}));
  out->type = CU_GRAPH_NODE_TYPE_MEMSET;
  out->ctx = ctx;
  out->ops = std::move(rec.ops);
  out->memset = *m;
  return CUDA_SUCCESS;
}

// Adds the built node `proto` to `g` after `deps`.
CUresult addBuiltNode(CUgraph_st* g, const CUgraphNode_st* const* deps, size_t n, CUgraphNode_st& proto,
                      CUgraphNode_st** out) {
  std::lock_guard<OrderedMutex> lock(graphMutex());
  CUgraphNode_st* node = nullptr;
  MCSIM_TRY(addNodeLocked(g, proto.type, deps, n, &node));
  node->ctx = proto.ctx;
  node->ops = std::move(proto.ops);
  node->kernel = proto.kernel;
  node->copy = proto.copy;
  node->memset = proto.memset;
  node->host = proto.host;
  node->event = proto.event;
  *out = node;
  return CUDA_SUCCESS;
}

// Checks what every cuGraphAdd*Node checks before it builds anything.
CUresult checkAdd(CUgraphNode* out, CUgraph g, const CUgraphNode* deps, size_t n) {
  if (out == nullptr || g == nullptr || (n != 0 && deps == nullptr)) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<OrderedMutex> lock(graphMutex());
  if (!liveGraphLocked(g)) return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}

// A deep copy of `src` (caller holding the lock): nodes keep their creation order, which
// cuGraphNodeFindInClone matches on.
CUgraph_st* cloneLocked(const CUgraph_st* src) {
  CUgraph_st* g = newGraphLocked();
  std::map<const CUgraphNode_st*, CUgraphNode_st*> map;
  for (const auto& n : src->nodes) {
    auto c = std::make_unique<CUgraphNode_st>();
    c->graph = g;
    c->type = n->type;
    c->order = n->order;
    c->ctx = n->ctx;
    c->ops = n->ops;
    c->owned = n->owned;
    c->kernel = n->kernel;
    c->copy = n->copy;
    c->memset = n->memset;
    c->host = n->host;
    c->event = n->event;
    if (n->child) {
      CUgraph_st* cc = cloneLocked(n->child.get());
      cc->owner = c.get();
      c->child.reset(cc);
    }
    map[n.get()] = c.get();
    tables().nodes.insert(c.get());
    g->nodes.push_back(std::move(c));
  }
  g->nextOrder = src->nextOrder;
  for (const auto& [from, to] : src->edges) g->edges.emplace_back(map[from], map[to]);
  tables().clonedFrom[g] = src->id;
  return g;
}

// Whether the edge data a _v2 call passes asks for anything but the default edge, which is all
// mcsim models (programmatic dependencies are not).
bool defaultEdges(const CUgraphEdgeData* data, size_t n) {
  if (data == nullptr) return true;
  for (size_t i = 0; i < n; ++i) {
    if (data[i].from_port != 0 || data[i].to_port != 0 || data[i].type != CU_GRAPH_DEPENDENCY_TYPE_DEFAULT) {
      return false;
    }
  }
  return true;
}

// Copies `v` into `out` (up to *count entries, the rest set to NULL) or, with `out` NULL, says
// how many there are: the reference's rule for every graph query.
template <typename T>
CUresult answerList(const std::vector<T>& v, T* out, size_t* count) {
  if (count == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (out == nullptr) {
    *count = v.size();
    return CUDA_SUCCESS;
  }
  const size_t n = std::min(*count, v.size());
  for (size_t i = 0; i < *count; ++i) out[i] = i < n ? v[i] : T{};
  *count = n;
  return CUDA_SUCCESS;
}

// A node's dependencies (incoming = true) or dependents, in the order their edges were added.
CUresult nodeNeighbours(CUgraphNode node, CUgraphNode* out, CUgraphEdgeData* edgeData, size_t* count, bool incoming) {
  std::lock_guard<OrderedMutex> lock(graphMutex());
  CUgraphNode_st* n = liveNode(node);
  if (n == nullptr || count == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (edgeData != nullptr && out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::vector<CUgraphNode> v;
  for (const auto& [from, to] : n->graph->edges) {
    if (incoming && to == n) v.push_back(from);
    if (!incoming && from == n) v.push_back(to);
  }
  const size_t asked = *count;
  MCSIM_TRY(answerList(v, out, count));
  if (edgeData != nullptr) {
    for (size_t i = 0; i < asked; ++i) edgeData[i] = CUgraphEdgeData{};
  }
  return CUDA_SUCCESS;
}

CUresult graphEdges(CUgraph hGraph, CUgraphNode* from, CUgraphNode* to, CUgraphEdgeData* edgeData, size_t* numEdges) {
  if (numEdges == nullptr || (from == nullptr) != (to == nullptr)) return CUDA_ERROR_INVALID_VALUE;
  if (edgeData != nullptr && from == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<OrderedMutex> lock(graphMutex());
  if (!liveGraphLocked(hGraph)) return CUDA_ERROR_INVALID_VALUE;
  std::vector<CUgraphNode> f, t;
  for (const auto& [a, b] : hGraph->edges) {
    f.push_back(a);
    t.push_back(b);
  }
  const size_t asked = *numEdges;
  if (from == nullptr) {
    *numEdges = f.size();
    return CUDA_SUCCESS;
  }
  size_t n = asked;
  answerList(f, from, &n);
  answerList(t, to, numEdges);
  if (edgeData != nullptr) {
    for (size_t i = 0; i < asked; ++i) edgeData[i] = CUgraphEdgeData{};
  }
  return CUDA_SUCCESS;
}

CUresult changeDependencies(CUgraph hGraph, const CUgraphNode* from, const CUgraphNode* to,
                            const CUgraphEdgeData* edgeData, size_t n, bool add) {
  if (hGraph == nullptr || (n != 0 && (from == nullptr || to == nullptr))) return CUDA_ERROR_INVALID_VALUE;
  if (!defaultEdges(edgeData, n)) return CUDA_ERROR_NOT_SUPPORTED;
  std::lock_guard<OrderedMutex> lock(graphMutex());
  if (!liveGraphLocked(hGraph)) return CUDA_ERROR_INVALID_VALUE;
  auto& edges = hGraph->edges;
  // Every pair is checked before any changes: a refused call leaves the graph as it was.
  for (size_t i = 0; i < n; ++i) {
    CUgraphNode_st* a = liveNode(from[i]);
    CUgraphNode_st* b = liveNode(to[i]);
    if (a == nullptr || b == nullptr || a->graph != hGraph || b->graph != hGraph || a == b) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    const bool present = std::find(edges.begin(), edges.end(), std::make_pair(a, b)) != edges.end();
    bool repeated = false;
    for (size_t j = 0; j < i; ++j) repeated = repeated || (from[j] == a && to[j] == b);
    if (present == add || repeated) return CUDA_ERROR_INVALID_VALUE;
  }
  for (size_t i = 0; i < n; ++i) {
    const auto e = std::make_pair(from[i], to[i]);
    if (add) edges.push_back(e);
    else edges.erase(std::find(edges.begin(), edges.end(), e));
  }
  return CUDA_SUCCESS;
}

// A node of `type` (caller holding the lock), or nullptr.
CUgraphNode_st* typedNode(CUgraphNode node, CUgraphNodeType type) {
  CUgraphNode_st* n = liveNode(node);
  return n != nullptr && n->type == type ? n : nullptr;
}

// Replaces the work and parameters of `node` (of `proto`'s type) with `proto`'s.
CUresult replaceNode(CUgraphNode node, CUgraphNode_st& proto) {
  std::lock_guard<OrderedMutex> lock(graphMutex());
  CUgraphNode_st* n = typedNode(node, proto.type);
  if (n == nullptr) return CUDA_ERROR_INVALID_VALUE;
  n->ctx = proto.ctx;
  n->ops = std::move(proto.ops);
  n->kernel = proto.kernel;
  n->copy = proto.copy;
  n->memset = proto.memset;
  return CUDA_SUCCESS;
}

CUresult checkNodeType(CUgraphNode node, CUgraphNodeType type) {
  std::lock_guard<OrderedMutex> lock(graphMutex());
  return typedNode(node, type) != nullptr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult eventNodeParam(CUgraphNode node, CUgraphNodeType type, CUevent* get, CUevent set) {
  if (get == nullptr && set == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (set != nullptr) {
    EventRef ev;
    MCSIM_TRY(checkEvent(set, &ev));
  }
  std::lock_guard<OrderedMutex> lock(graphMutex());
  CUgraphNode_st* n = typedNode(node, type);
  if (n == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (get != nullptr) *get = n->event;
  else n->event = set;
  return CUDA_SUCCESS;
}

CUresult addEventNode(CUgraphNode* out, CUgraph g, const CUgraphNode* deps, size_t n, CUevent event,
                      CUgraphNodeType type) {
  MCSIM_TRY(checkAdd(out, g, deps, n));
  EventRef ev;
  MCSIM_TRY(checkEvent(event, &ev));
  CUgraphNode_st proto;
  proto.type = type;
  proto.event = event;
  proto.ctx = ev->ctx;
  return addBuiltNode(g, deps, n, proto, out);
}

CUresult kernelParamsOf(CUgraphNode node, CUDA_KERNEL_NODE_PARAMS* out) {
  if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<OrderedMutex> lock(graphMutex());
  CUgraphNode_st* n = typedNode(node, CU_GRAPH_NODE_TYPE_KERNEL);
  if (n == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *out = n->kernel.p;
  return CUDA_SUCCESS;
}

CUDA_KERNEL_NODE_PARAMS fromV1(const CUDA_KERNEL_NODE_PARAMS_v1& p) {
  CUDA_KERNEL_NODE_PARAMS q{};
  q.func = p.func;
  q.gridDimX = p.gridDimX;
  q.gridDimY = p.gridDimY;
  q.gridDimZ = p.gridDimZ;
  q.blockDimX = p.blockDimX;
  q.blockDimY = p.blockDimY;
  q.blockDimZ = p.blockDimZ;
  q.sharedMemBytes = p.sharedMemBytes;
  q.kernelParams = p.kernelParams;
  q.extra = p.extra;
  return q;
}

}  // namespace

// Entry-point bodies shared with graph_abi.cpp (the older ABI variants) and graph_exec.cpp.
CUresult buildNodeFromKernelParams(const CUDA_KERNEL_NODE_PARAMS* p, CUgraphNode_st* out) {
  if (p == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return buildKernelNode(*p, out);
}
CUresult buildNodeFromMemcpyParams(const CUDA_MEMCPY3D* p, CUcontext ctx, CUgraphNode_st* out) {
  return buildMemcpyNode(p, ctx, out);
}
CUresult buildNodeFromMemsetParams(const CUDA_MEMSET_NODE_PARAMS* p, CUcontext ctx, CUgraphNode_st* out) {
  return buildMemsetNode(p, ctx, out);
}

CUresult addKernelNodeEntry(CUgraphNode* out, CUgraph g, const CUgraphNode* deps, size_t n,
                            const CUDA_KERNEL_NODE_PARAMS* p) {
  MCSIM_TRY(checkAdd(out, g, deps, n));
  if (p == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUgraphNode_st proto;
  MCSIM_TRY(buildKernelNode(*p, &proto));
  return addBuiltNode(g, deps, n, proto, out);
}
CUresult addKernelNodeV1Entry(CUgraphNode* out, CUgraph g, const CUgraphNode* deps, size_t n,
                              const CUDA_KERNEL_NODE_PARAMS_v1* p) {
  if (p == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const CUDA_KERNEL_NODE_PARAMS q = fromV1(*p);
  return addKernelNodeEntry(out, g, deps, n, &q);
}
CUresult kernelNodeGetParamsEntry(CUgraphNode node, CUDA_KERNEL_NODE_PARAMS* out) { return kernelParamsOf(node, out); }
CUresult kernelNodeGetParamsV1Entry(CUgraphNode node, CUDA_KERNEL_NODE_PARAMS_v1* out) {
  if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUDA_KERNEL_NODE_PARAMS q{};
  MCSIM_TRY(kernelParamsOf(node, &q));
  *out = CUDA_KERNEL_NODE_PARAMS_v1{q.func, q.gridDimX, q.gridDimY, q.gridDimZ, q.blockDimX, q.blockDimY,
                                    q.blockDimZ, q.sharedMemBytes, q.kernelParams, q.extra};
  return CUDA_SUCCESS;
}
CUresult kernelNodeSetParamsEntry(CUgraphNode node, const CUDA_KERNEL_NODE_PARAMS* p) {
  if (p == nullptr) return CUDA_ERROR_INVALID_VALUE;
  MCSIM_TRY(checkNodeType(node, CU_GRAPH_NODE_TYPE_KERNEL));
  CUgraphNode_st proto;
  MCSIM_TRY(buildKernelNode(*p, &proto));
  return replaceNode(node, proto);
}
CUresult kernelNodeSetParamsV1Entry(CUgraphNode node, const CUDA_KERNEL_NODE_PARAMS_v1* p) {
  if (p == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const CUDA_KERNEL_NODE_PARAMS q = fromV1(*p);
  return kernelNodeSetParamsEntry(node, &q);
}
CUresult graphEdgesEntry(CUgraph g, CUgraphNode* from, CUgraphNode* to, CUgraphEdgeData* edgeData, size_t* n) {
  return graphEdges(g, from, to, edgeData, n);
}
CUresult nodeNeighboursEntry(CUgraphNode node, CUgraphNode* out, CUgraphEdgeData* edgeData, size_t* n, bool incoming) {
  return nodeNeighbours(node, out, edgeData, n, incoming);
}
CUresult changeDependenciesEntry(CUgraph g, const CUgraphNode* from, const CUgraphNode* to,
                                 const CUgraphEdgeData* edgeData, size_t n, bool add) {
  return changeDependencies(g, from, to, edgeData, n, add);
}

void countGraphs(HandleCounts& c) {
  std::lock_guard<OrderedMutex> lock(tables().mu);
  c.graphs = tables().graphs.size();
  c.graphNodes = tables().nodes.size();
}

}  // namespace mcsim::driver

using namespace mcsim::driver;
using mcsim::OrderedMutex;

extern "C" {

CUresult CUDAAPI cuGraphCreate(CUgraph* phGraph, unsigned int flags) {
  MCSIM_REQUIRE_INIT();
  if (phGraph == nullptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<OrderedMutex> lock(graphMutex());
  *phGraph = newGraphLocked();
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphDestroy(CUgraph hGraph) {
  MCSIM_REQUIRE_INIT();
  {
    std::lock_guard<OrderedMutex> lock(graphMutex());
    if (!liveGraphLocked(hGraph)) return CUDA_ERROR_INVALID_VALUE;
    // A child graph belongs to its node (cuGraphChildGraphNodeGetGraph does not hand it over).
    if (hGraph->owner != nullptr) return CUDA_ERROR_INVALID_VALUE;
  }
  destroyGraph(hGraph);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphClone(CUgraph* phGraphClone, CUgraph originalGraph) {
  MCSIM_REQUIRE_INIT();
  if (phGraphClone == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<OrderedMutex> lock(graphMutex());
  if (!liveGraphLocked(originalGraph)) return CUDA_ERROR_INVALID_VALUE;
  *phGraphClone = cloneLocked(originalGraph);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphNodeFindInClone(CUgraphNode* phNode, CUgraphNode hOriginalNode, CUgraph hClonedGraph) {
  MCSIM_REQUIRE_INIT();
  if (phNode == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<OrderedMutex> lock(graphMutex());
  CUgraphNode_st* orig = liveNode(hOriginalNode);
  if (orig == nullptr || !liveGraphLocked(hClonedGraph)) return CUDA_ERROR_INVALID_VALUE;
  auto it = tables().clonedFrom.find(hClonedGraph);
  if (it == tables().clonedFrom.end() || it->second != orig->graph->id) return CUDA_ERROR_INVALID_VALUE;
  for (const auto& n : hClonedGraph->nodes) {
    if (n->order == orig->order) {
      *phNode = n.get();
      return CUDA_SUCCESS;
    }
  }
  return CUDA_ERROR_INVALID_VALUE;
}

CUresult CUDAAPI cuGraphAddEmptyNode(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                                     size_t numDependencies) {
  MCSIM_REQUIRE_INIT();
  MCSIM_TRY(checkAdd(phGraphNode, hGraph, dependencies, numDependencies));
  CUgraphNode_st proto;
  proto.type = CU_GRAPH_NODE_TYPE_EMPTY;
  return addBuiltNode(hGraph, dependencies, numDependencies, proto, phGraphNode);
}

CUresult CUDAAPI cuGraphAddKernelNode_v2(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                                         size_t numDependencies, const CUDA_KERNEL_NODE_PARAMS* nodeParams) {
  MCSIM_REQUIRE_INIT();
  return addKernelNodeEntry(phGraphNode, hGraph, dependencies, numDependencies, nodeParams);
}

CUresult CUDAAPI cuGraphKernelNodeGetParams_v2(CUgraphNode hNode, CUDA_KERNEL_NODE_PARAMS* nodeParams) {
  MCSIM_REQUIRE_INIT();
  return kernelNodeGetParamsEntry(hNode, nodeParams);
}

CUresult CUDAAPI cuGraphKernelNodeSetParams_v2(CUgraphNode hNode, const CUDA_KERNEL_NODE_PARAMS* nodeParams) {
  MCSIM_REQUIRE_INIT();
  return kernelNodeSetParamsEntry(hNode, nodeParams);
}

CUresult CUDAAPI cuGraphAddMemcpyNode(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                                      size_t numDependencies, const CUDA_MEMCPY3D* copyParams, CUcontext ctx) {
  MCSIM_REQUIRE_INIT();
  MCSIM_TRY(checkAdd(phGraphNode, hGraph, dependencies, numDependencies));
  CUgraphNode_st proto;
  MCSIM_TRY(buildMemcpyNode(copyParams, ctx, &proto));
  return addBuiltNode(hGraph, dependencies, numDependencies, proto, phGraphNode);
}

CUresult CUDAAPI cuGraphMemcpyNodeGetParams(CUgraphNode hNode, CUDA_MEMCPY3D* nodeParams) {
  MCSIM_REQUIRE_INIT();
  if (nodeParams == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<OrderedMutex> lock(graphMutex());
  CUgraphNode_st* n = typedNode(hNode, CU_GRAPH_NODE_TYPE_MEMCPY);
  if (n == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *nodeParams = n->copy;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphMemcpyNodeSetParams(CUgraphNode hNode, const CUDA_MEMCPY3D* nodeParams) {
  MCSIM_REQUIRE_INIT();
  CUcontext ctx = nullptr;
  {
    std::lock_guard<OrderedMutex> lock(graphMutex());
    CUgraphNode_st* n = typedNode(hNode, CU_GRAPH_NODE_TYPE_MEMCPY);
    if (n == nullptr) return CUDA_ERROR_INVALID_VALUE;
    ctx = n->ctx;
  }
  CUgraphNode_st proto;
  MCSIM_TRY(buildMemcpyNode(nodeParams, ctx, &proto));
  return replaceNode(hNode, proto);
}

CUresult CUDAAPI cuGraphAddMemsetNode(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                                      size_t numDependencies, const CUDA_MEMSET_NODE_PARAMS* memsetParams,
                                      CUcontext ctx) {
  MCSIM_REQUIRE_INIT();
  MCSIM_TRY(checkAdd(phGraphNode, hGraph, dependencies, numDependencies));
  CUgraphNode_st proto;
  MCSIM_TRY(buildMemsetNode(memsetParams, ctx, &proto));
  return addBuiltNode(hGraph, dependencies, numDependencies, proto, phGraphNode);
}

CUresult CUDAAPI cuGraphMemsetNodeGetParams(CUgraphNode hNode, CUDA_MEMSET_NODE_PARAMS* nodeParams) {
  MCSIM_REQUIRE_INIT();
  if (nodeParams == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<OrderedMutex> lock(graphMutex());
  CUgraphNode_st* n = typedNode(hNode, CU_GRAPH_NODE_TYPE_MEMSET);
  if (n == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *nodeParams = n->memset;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphMemsetNodeSetParams(CUgraphNode hNode, const CUDA_MEMSET_NODE_PARAMS* nodeParams) {
  MCSIM_REQUIRE_INIT();
  CUcontext ctx = nullptr;
  {
    std::lock_guard<OrderedMutex> lock(graphMutex());
    CUgraphNode_st* n = typedNode(hNode, CU_GRAPH_NODE_TYPE_MEMSET);
    if (n == nullptr) return CUDA_ERROR_INVALID_VALUE;
    ctx = n->ctx;
  }
  CUgraphNode_st proto;
  MCSIM_TRY(buildMemsetNode(nodeParams, ctx, &proto));
  return replaceNode(hNode, proto);
}

CUresult CUDAAPI cuGraphAddHostNode(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                                    size_t numDependencies, const CUDA_HOST_NODE_PARAMS* nodeParams) {
  MCSIM_REQUIRE_INIT();
  MCSIM_TRY(checkAdd(phGraphNode, hGraph, dependencies, numDependencies));
  if (nodeParams == nullptr || nodeParams->fn == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUgraphNode_st proto;
  proto.type = CU_GRAPH_NODE_TYPE_HOST;
  proto.host = *nodeParams;
  return addBuiltNode(hGraph, dependencies, numDependencies, proto, phGraphNode);
}

CUresult CUDAAPI cuGraphHostNodeGetParams(CUgraphNode hNode, CUDA_HOST_NODE_PARAMS* nodeParams) {
  MCSIM_REQUIRE_INIT();
  if (nodeParams == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<OrderedMutex> lock(graphMutex());
  CUgraphNode_st* n = typedNode(hNode, CU_GRAPH_NODE_TYPE_HOST);
  if (n == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *nodeParams = n->host;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphHostNodeSetParams(CUgraphNode hNode, const CUDA_HOST_NODE_PARAMS* nodeParams) {
  MCSIM_REQUIRE_INIT();
  if (nodeParams == nullptr || nodeParams->fn == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<OrderedMutex> lock(graphMutex());
  CUgraphNode_st* n = typedNode(hNode, CU_GRAPH_NODE_TYPE_HOST);
  if (n == nullptr) return CUDA_ERROR_INVALID_VALUE;
  n->host = *nodeParams;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphAddEventRecordNode(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                                           size_t numDependencies, CUevent event) {
  MCSIM_REQUIRE_INIT();
  return addEventNode(phGraphNode, hGraph, dependencies, numDependencies, event, CU_GRAPH_NODE_TYPE_EVENT_RECORD);
}

CUresult CUDAAPI cuGraphAddEventWaitNode(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                                         size_t numDependencies, CUevent event) {
  MCSIM_REQUIRE_INIT();
  return addEventNode(phGraphNode, hGraph, dependencies, numDependencies, event, CU_GRAPH_NODE_TYPE_WAIT_EVENT);
}

CUresult CUDAAPI cuGraphEventRecordNodeGetEvent(CUgraphNode hNode, CUevent* event_out) {
  MCSIM_REQUIRE_INIT();
  if (event_out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return eventNodeParam(hNode, CU_GRAPH_NODE_TYPE_EVENT_RECORD, event_out, nullptr);
}
CUresult CUDAAPI cuGraphEventRecordNodeSetEvent(CUgraphNode hNode, CUevent event) {
  MCSIM_REQUIRE_INIT();
  if (event == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return eventNodeParam(hNode, CU_GRAPH_NODE_TYPE_EVENT_RECORD, nullptr, event);
}
CUresult CUDAAPI cuGraphEventWaitNodeGetEvent(CUgraphNode hNode, CUevent* event_out) {
  MCSIM_REQUIRE_INIT();
  if (event_out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return eventNodeParam(hNode, CU_GRAPH_NODE_TYPE_WAIT_EVENT, event_out, nullptr);
}
CUresult CUDAAPI cuGraphEventWaitNodeSetEvent(CUgraphNode hNode, CUevent event) {
  MCSIM_REQUIRE_INIT();
  if (event == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return eventNodeParam(hNode, CU_GRAPH_NODE_TYPE_WAIT_EVENT, nullptr, event);
}

CUresult CUDAAPI cuGraphAddChildGraphNode(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                                          size_t numDependencies, CUgraph childGraph) {
  MCSIM_REQUIRE_INIT();
  MCSIM_TRY(checkAdd(phGraphNode, hGraph, dependencies, numDependencies));
  std::lock_guard<OrderedMutex> lock(graphMutex());
  if (!liveGraphLocked(childGraph) || childGraph == hGraph) return CUDA_ERROR_INVALID_VALUE;
  CUgraphNode_st* node = nullptr;
  MCSIM_TRY(addNodeLocked(hGraph, CU_GRAPH_NODE_TYPE_GRAPH, dependencies, numDependencies, &node));
  // The node holds a clone: later changes to childGraph do not reach it (the reference).
  CUgraph_st* copy = cloneLocked(childGraph);
  copy->owner = node;
  node->child.reset(copy);
  *phGraphNode = node;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphChildGraphNodeGetGraph(CUgraphNode hNode, CUgraph* phGraph) {
  MCSIM_REQUIRE_INIT();
  if (phGraph == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<OrderedMutex> lock(graphMutex());
  CUgraphNode_st* n = typedNode(hNode, CU_GRAPH_NODE_TYPE_GRAPH);
  if (n == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *phGraph = n->child.get();
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphNodeGetType(CUgraphNode hNode, CUgraphNodeType* type) {
  MCSIM_REQUIRE_INIT();
  if (type == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<OrderedMutex> lock(graphMutex());
  CUgraphNode_st* n = liveNode(hNode);
  if (n == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *type = n->type;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphGetNodes(CUgraph hGraph, CUgraphNode* nodes, size_t* numNodes) {
  MCSIM_REQUIRE_INIT();
  std::lock_guard<OrderedMutex> lock(graphMutex());
  if (!liveGraphLocked(hGraph)) return CUDA_ERROR_INVALID_VALUE;
  std::vector<CUgraphNode> v;
  for (const auto& n : hGraph->nodes) v.push_back(n.get());
  return answerList(v, nodes, numNodes);
}

CUresult CUDAAPI cuGraphGetRootNodes(CUgraph hGraph, CUgraphNode* rootNodes, size_t* numRootNodes) {
  MCSIM_REQUIRE_INIT();
  std::lock_guard<OrderedMutex> lock(graphMutex());
  if (!liveGraphLocked(hGraph)) return CUDA_ERROR_INVALID_VALUE;
  std::set<const CUgraphNode_st*> hasDeps;
  for (const auto& e : hGraph->edges) hasDeps.insert(e.second);
  std::vector<CUgraphNode> v;
  for (const auto& n : hGraph->nodes) {
    if (hasDeps.count(n.get()) == 0) v.push_back(n.get());
  }
  return answerList(v, rootNodes, numRootNodes);
}

CUresult CUDAAPI cuGraphGetEdges_v2(CUgraph hGraph, CUgraphNode* from, CUgraphNode* to, CUgraphEdgeData* edgeData,
                                    size_t* numEdges) {
  MCSIM_REQUIRE_INIT();
  return graphEdges(hGraph, from, to, edgeData, numEdges);
}

CUresult CUDAAPI cuGraphNodeGetDependencies_v2(CUgraphNode hNode, CUgraphNode* dependencies, CUgraphEdgeData* edgeData,
                                               size_t* numDependencies) {
  MCSIM_REQUIRE_INIT();
  return nodeNeighbours(hNode, dependencies, edgeData, numDependencies, true);
}

CUresult CUDAAPI cuGraphNodeGetDependentNodes_v2(CUgraphNode hNode, CUgraphNode* dependentNodes,
                                                 CUgraphEdgeData* edgeData, size_t* numDependentNodes) {
  MCSIM_REQUIRE_INIT();
  return nodeNeighbours(hNode, dependentNodes, edgeData, numDependentNodes, false);
}

CUresult CUDAAPI cuGraphAddDependencies_v2(CUgraph hGraph, const CUgraphNode* from, const CUgraphNode* to,
                                           const CUgraphEdgeData* edgeData, size_t numDependencies) {
  MCSIM_REQUIRE_INIT();
  return changeDependencies(hGraph, from, to, edgeData, numDependencies, true);
}

CUresult CUDAAPI cuGraphRemoveDependencies_v2(CUgraph hGraph, const CUgraphNode* from, const CUgraphNode* to,
                                              const CUgraphEdgeData* edgeData, size_t numDependencies) {
  MCSIM_REQUIRE_INIT();
  return changeDependencies(hGraph, from, to, edgeData, numDependencies, false);
}

CUresult CUDAAPI cuGraphDestroyNode(CUgraphNode hNode) {
  MCSIM_REQUIRE_INIT();
  std::lock_guard<OrderedMutex> lock(graphMutex());
  CUgraphNode_st* n = liveNode(hNode);
  if (n == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUgraph_st* g = n->graph;
  auto& edges = g->edges;
  edges.erase(std::remove_if(edges.begin(), edges.end(), [n](const auto& e) { return e.first == n || e.second == n; }),
              edges.end());
  if (n->child) forgetGraphLocked(n->child.get());
  tables().nodes.erase(n);
  g->nodes.erase(std::find_if(g->nodes.begin(), g->nodes.end(), [n](const auto& p) { return p.get() == n; }));
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphDebugDotPrint(CUgraph hGraph, const char* path, unsigned int flags) {
  MCSIM_REQUIRE_INIT();
  (void)flags;  // every level of detail prints the same: node kinds and edges
  if (path == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<OrderedMutex> lock(graphMutex());
  if (!liveGraphLocked(hGraph)) return CUDA_ERROR_INVALID_VALUE;
  FILE* f = std::fopen(path, "w");
  if (f == nullptr) return CUDA_ERROR_OPERATING_SYSTEM;
  static const char* kNames[] = {"kernel", "memcpy", "memset", "host", "graph", "empty", "wait_event",
                                 "event_record", "ext_semas_signal", "ext_semas_wait", "mem_alloc", "mem_free",
                                 "batch_mem_op", "conditional"};
  std::fprintf(f, "digraph graph%llu {\n", static_cast<unsigned long long>(hGraph->id));
  for (const auto& n : hGraph->nodes) {
    const auto t = static_cast<size_t>(n->type);
    std::fprintf(f, "  n%llu [label=\"%llu %s\"];\n", static_cast<unsigned long long>(n->order),
                 static_cast<unsigned long long>(n->order), t < std::size(kNames) ? kNames[t] : "node");
  }
  for (const auto& [a, b] : hGraph->edges) {
    std::fprintf(f, "  n%llu -> n%llu;\n", static_cast<unsigned long long>(a->order),
                 static_cast<unsigned long long>(b->order));
  }
  std::fprintf(f, "}\n");
  return std::fclose(f) == 0 ? CUDA_SUCCESS : CUDA_ERROR_OPERATING_SYSTEM;
}

}  // extern "C"
