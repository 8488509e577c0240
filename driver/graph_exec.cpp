// Instantiated graphs: cuGraphInstantiate*, cuGraphLaunch, cuGraphUpload, cuGraphExec*.
//
// An exec is a deep copy of its graph's nodes, child graphs flattened (a child-graph node becomes
// an entry and an exit around the child's nodes), put in an order where every node comes after
// its dependencies (ties broken by the order the nodes were made, so the order is the same every
// run). A launch submits, on the launch stream's order, a marker every first node follows, then
// each node after its dependencies' completions: device work to the node on its context's device
// (the same operations a stream would queue, so a PTX kernel runs through the executor and a
// modelled one by its model), a host node on the launching thread once its dependencies are done
// (as cuLaunchHostFunc does), an event record node as the event's new record point, an event wait
// node after the event's record point. The stream's next work follows a marker after the last
// nodes. Nothing is prepared ahead, so cuGraphUpload only checks its arguments.
#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <queue>
#include <set>

#include "driver/context.h"
#include "driver/driver.h"
#include "driver/graph.h"
#include "driver/leaks.h"
#include "driver/stream.h"

struct ExecNode {
  CUgraphNodeType type = CU_GRAPH_NODE_TYPE_EMPTY;
  CUgraphNodeType graphType = CU_GRAPH_NODE_TYPE_EMPTY;  // the graph node's type (a child graph's entry: GRAPH)
  const CUgraphNode_st* source = nullptr;  // the graph's node (nullptr: a child graph's entry)
  uint64_t sourceOrder = 0;
  CUctx_st* ctx = nullptr;
  std::vector<mcsim::fabric::DeviceOp> ops;
  std::vector<std::shared_ptr<const std::vector<uint8_t>>> owned;  // what the ops' host sources point into
  CUDA_HOST_NODE_PARAMS host{};
  CUevent event = nullptr;
  std::vector<size_t> deps;  // indices of earlier exec nodes
  bool sink = true;          // no exec node depends on it
  bool enabled = true;
};

struct CUgraphExec_st {
  // Copied on write: a launch works on the vector it read, whatever a SetParams does meanwhile.
  std::shared_ptr<const std::vector<ExecNode>> nodes;
  std::map<const CUgraphNode_st*, size_t> bySource;  // the instantiated graph's top-level nodes
  std::vector<const CUgraphNode_st*> topLevel;        // those nodes, in creation order
  unsigned long long flags = 0;
};

namespace mcsim::driver {

namespace {

std::set<CUgraphExec_st*>& execs() {
  static auto* s = new std::set<CUgraphExec_st*>();
  return *s;
}

bool liveExecLocked(CUgraphExec e) { return e != nullptr && execs().count(e) != 0; }

// Appends `g`'s nodes to `out` (caller holding the graph lock), each after the exec nodes its
// dependencies became; `entry` (if not npos) is what nodes without dependencies follow. Returns
// false when the graph has a cycle. Fills `last` with the indices of the nodes no other node of
// `g` depends on.
bool flattenLocked(const CUgraph_st* g, size_t entry, std::vector<ExecNode>* out, std::vector<size_t>* last,
                   std::map<const CUgraphNode_st*, size_t>* bySource) {
  const size_t n = g->nodes.size();
  std::map<const CUgraphNode_st*, size_t> index;
  for (size_t i = 0; i < n; ++i) index[g->nodes[i].get()] = i;
  std::vector<std::vector<size_t>> deps(n), dependents(n);
  for (const auto& [from, to] : g->edges) {
    deps[index[to]].push_back(index[from]);
    dependents[index[from]].push_back(index[to]);
  }
  // Kahn's order, the earliest-made ready node first.
  std::vector<size_t> missing(n);
  std::priority_queue<size_t, std::vector<size_t>, std::greater<size_t>> ready;
  for (size_t i = 0; i < n; ++i) {
    missing[i] = deps[i].size();
    if (missing[i] == 0) ready.push(i);
  }
  std::vector<size_t> exitOf(n, SIZE_MAX);  // the exec node others follow for graph node i
  size_t placed = 0;
  while (!ready.empty()) {
    const size_t i = ready.top();
    ready.pop();
    ++placed;
    const CUgraphNode_st* gn = g->nodes[i].get();
    std::vector<size_t> after;
    for (size_t d : deps[i]) after.push_back(exitOf[d]);
    if (after.empty() && entry != SIZE_MAX) after.push_back(entry);
    ExecNode e;
    e.type = gn->type == CU_GRAPH_NODE_TYPE_GRAPH ? CU_GRAPH_NODE_TYPE_EMPTY : gn->type;
    e.graphType = gn->type;
    e.source = gn;
    e.sourceOrder = gn->order;
    e.ctx = gn->ctx;
    e.ops = gn->ops;
    e.owned = gn->owned;
    e.host = gn->host;
    e.event = gn->event;
    e.deps = after;
    for (size_t a : after) (*out)[a].sink = false;
    out->push_back(std::move(e));
    const size_t at = out->size() - 1;
    if (bySource != nullptr) (*bySource)[gn] = at;
    exitOf[i] = at;
    if (gn->type == CU_GRAPH_NODE_TYPE_GRAPH && gn->child) {
      // The child's nodes follow the entry (this node); an exit node follows the child's last.
      std::vector<size_t> childLast;
      if (!flattenLocked(gn->child.get(), at, out, &childLast, nullptr)) return false;
      ExecNode exitNode;
      exitNode.deps = childLast.empty() ? std::vector<size_t>{at} : childLast;
      for (size_t a : exitNode.deps) (*out)[a].sink = false;
      out->push_back(std::move(exitNode));
      exitOf[i] = out->size() - 1;
    }
    for (size_t d : dependents[i]) {
      if (--missing[d] == 0) ready.push(d);
    }
  }
  if (placed != n) return false;
  for (size_t i = 0; i < n; ++i) {
    if (dependents[i].empty()) last->push_back(exitOf[i]);
  }
  return true;
}

// Adds `w` to `into` unless it is there or already done.
void addWork(std::vector<fabric::WorkDone>* into, const fabric::WorkDone& w) {
  if (!pendingWork(w)) return;
  for (const auto& x : *into) {
    if (x == w) return;
  }
  into->push_back(w);
}

// Runs one exec node after `after` (its dependencies' completions, or the launch's start);
// `done` gets what its dependents follow.
CUresult runNode(const ExecNode& e, CUstream_st* st, const std::vector<fabric::WorkDone>& after,
                 std::vector<fabric::WorkDone>* done) {
  *done = after;
  if (!e.enabled) return CUDA_SUCCESS;  // a disabled node is an empty one
  switch (e.type) {
    case CU_GRAPH_NODE_TYPE_HOST: {
      for (const auto& w : after) MCSIM_TRY(waitWork(w, st->ctx));
      e.host.fn(e.host.userData);
      done->clear();  // everything before it has completed
      return CUDA_SUCCESS;
    }
    case CU_GRAPH_NODE_TYPE_EVENT_RECORD: {
      EventRef ev;
      if (checkEvent(e.event, &ev) != CUDA_SUCCESS) return CUDA_ERROR_INVALID_HANDLE;  // destroyed since
      fabric::DeviceOp op;
      op.kind = fabric::DeviceOp::Kind::kMarker;
      fabric::WorkDone w;
      MCSIM_TRY(submitAfter(st, ev->ctx, op, after, &w, nullptr));
      MCSIM_TRY(setEventRecordPoint(ev.get(), w));
      done->assign(1, w);
      return CUDA_SUCCESS;
    }
    case CU_GRAPH_NODE_TYPE_WAIT_EVENT: {
      EventRef ev;
      if (checkEvent(e.event, &ev) != CUDA_SUCCESS) return CUDA_ERROR_INVALID_HANDLE;
      addWork(done, eventRecordPoint(ev.get()));
      return CUDA_SUCCESS;
    }
    default: break;
  }
  std::vector<fabric::WorkDone> prev = after;
  for (const fabric::DeviceOp& op : e.ops) {
    fabric::WorkDone w;
    Status submitted = Status::kOk;
    const CUresult r = submitAfter(st, e.ctx, op, prev, &w, &submitted);
    if (op.kind == fabric::DeviceOp::Kind::kKernel &&
        (submitted == Status::kIllegalAddress || submitted == Status::kMisaligned)) {
      // As a stream launch: the launch succeeds, the kernel faults and poisons its context.
      const bool misaligned = submitted == Status::kMisaligned;
      e.ctx->stickyError = misaligned ? CUDA_ERROR_MISALIGNED_ADDRESS : CUDA_ERROR_ILLEGAL_ADDRESS;
      std::fprintf(stderr, "mcsim: kernel '%s' on device %d (graph node) made an %s access; the context's sticky "
                   "error is now %s\n", op.label.c_str(), e.ctx->device, misaligned ? "unaligned" : "illegal",
                   misaligned ? "CUDA_ERROR_MISALIGNED_ADDRESS" : "CUDA_ERROR_ILLEGAL_ADDRESS");
      continue;
    }
    MCSIM_TRY(r);
    prev.assign(1, w);
  }
  *done = prev;
  return CUDA_SUCCESS;
}

CUresult execFor(CUgraphExec exec, std::shared_ptr<const std::vector<ExecNode>>* nodes) {
  std::lock_guard<OrderedMutex> lock(graphMutex());
  if (!liveExecLocked(exec)) return CUDA_ERROR_INVALID_VALUE;
  *nodes = exec->nodes;
  return CUDA_SUCCESS;
}

// Applies `change` to the exec node made of `node` (a copy of the nodes, swapped in).
template <typename F>
CUresult changeExecNode(CUgraphExec exec, CUgraphNode node, CUgraphNodeType type, F change) {
  std::lock_guard<OrderedMutex> lock(graphMutex());
  if (!liveExecLocked(exec)) return CUDA_ERROR_INVALID_VALUE;
  auto it = exec->bySource.find(node);
  if (it == exec->bySource.end() || !liveNodeLocked(node)) return CUDA_ERROR_INVALID_VALUE;
  auto copy = std::make_shared<std::vector<ExecNode>>(*exec->nodes);
  ExecNode& e = (*copy)[it->second];
  if (type != CU_GRAPH_NODE_TYPE_GRAPH && e.type != type) return CUDA_ERROR_INVALID_VALUE;
  MCSIM_TRY(change(e));
  exec->nodes = std::move(copy);
  return CUDA_SUCCESS;
}

// Rebuilt device work for an exec node: the context may not change (the reference).
CUresult replaceWork(CUgraphExec exec, CUgraphNode node, CUgraphNodeType type, CUgraphNode_st& proto) {
  return changeExecNode(exec, node, type, [&](ExecNode& e) {
    if (e.ctx != nullptr && proto.ctx != e.ctx) return CUDA_ERROR_INVALID_VALUE;
    e.ops = proto.ops;
    return CUDA_SUCCESS;
  });
}

}  // namespace

CUresult instantiateEntry(CUgraphExec* phExec, CUgraph g, unsigned long long flags, CUstream uploadStream,
                          CUgraphNode* errorNode, CUgraphInstantiateResult* result, bool perThreadDefault) {
  if (result != nullptr) *result = CUDA_GRAPH_INSTANTIATE_ERROR;
  if (phExec == nullptr || g == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const unsigned long long known = CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH | CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD |
                                   CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH |
                                   CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY;
  if ((flags & ~known) != 0) return CUDA_ERROR_INVALID_VALUE;
  // Graphs launched from the device are not modelled.
  if ((flags & CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH) != 0) return CUDA_ERROR_NOT_SUPPORTED;
  if ((flags & CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD) != 0) {
    StreamRef st;
    MCSIM_TRY(resolveStream(uploadStream, perThreadDefault, &st));
  }
  auto exec = std::make_unique<CUgraphExec_st>();
  std::lock_guard<OrderedMutex> lock(graphMutex());
  if (!liveGraphLocked(g)) return CUDA_ERROR_INVALID_VALUE;
  auto nodes = std::make_shared<std::vector<ExecNode>>();
  std::vector<size_t> last;
  if (!flattenLocked(g, SIZE_MAX, nodes.get(), &last, &exec->bySource)) {
    if (result != nullptr) *result = CUDA_GRAPH_INSTANTIATE_INVALID_STRUCTURE;
    return CUDA_ERROR_INVALID_VALUE;  // a cycle
  }
  for (const auto& n : g->nodes) exec->topLevel.push_back(n.get());
  exec->nodes = std::move(nodes);
  // The upload is an action at instantiation, not a property of the executable graph:
  // cuGraphExecGetFlags on the real driver (580.159.04, H200) does not report it.
  exec->flags = flags & ~static_cast<unsigned long long>(CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD);
  CUgraphExec_st* raw = exec.release();
  execs().insert(raw);
  *phExec = raw;
  if (errorNode != nullptr) *errorNode = nullptr;
  if (result != nullptr) *result = CUDA_GRAPH_INSTANTIATE_SUCCESS;
  return CUDA_SUCCESS;
}

CUresult instantiateWithParamsEntry(CUgraphExec* exec, CUgraph g, CUDA_GRAPH_INSTANTIATE_PARAMS* params,
                                    bool perThreadDefault) {
  if (params == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return instantiateEntry(exec, g, params->flags, params->hUploadStream, &params->hErrNode_out, &params->result_out,
                          perThreadDefault);
}

CUresult graphUploadEntry(CUgraphExec exec, CUstream s, bool perThreadDefault) {
  std::shared_ptr<const std::vector<ExecNode>> nodes;
  MCSIM_TRY(execFor(exec, &nodes));
  StreamRef st;
  return resolveStream(s, perThreadDefault, &st);
}

CUresult graphLaunchEntry(CUgraphExec exec, CUstream s, bool perThreadDefault) {
  std::shared_ptr<const std::vector<ExecNode>> nodes;
  MCSIM_TRY(execFor(exec, &nodes));
  StreamRef st;
  MCSIM_TRY(resolveStream(s, perThreadDefault, &st));
  // Launching into a capture would make a child-graph node of the exec's graph: not modelled.
  MCSIM_TRY(refuseWhileCapturing(st.get(), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED));
  fabric::DeviceOp marker;
  marker.kind = fabric::DeviceOp::Kind::kMarker;
  marker.label = "graph launch";
  fabric::WorkDone start;
  MCSIM_TRY(enqueue(st.get(), marker, &start));
  std::vector<std::vector<fabric::WorkDone>> done(nodes->size());
  std::vector<fabric::WorkDone> sinks;
  for (size_t i = 0; i < nodes->size(); ++i) {
    const ExecNode& e = (*nodes)[i];
    std::vector<fabric::WorkDone> after;
    if (e.deps.empty()) addWork(&after, start);
    for (size_t d : e.deps) {
      for (const auto& w : done[d]) addWork(&after, w);
    }
    MCSIM_TRY(runNode(e, st.get(), after, &done[i]));
    if (e.sink) {
      for (const auto& w : done[i]) addWork(&sinks, w);
    }
  }
  marker.label = "graph end";
  return enqueueAfterAll(st.get(), marker, sinks, nullptr);
}

CUresult execKernelNodeSetParamsEntry(CUgraphExec exec, CUgraphNode node, const CUDA_KERNEL_NODE_PARAMS* p) {
  if (p == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUgraphNode_st proto;
  MCSIM_TRY(buildNodeFromKernelParams(p, &proto));
  return replaceWork(exec, node, CU_GRAPH_NODE_TYPE_KERNEL, proto);
}

CUresult execUpdateEntry(CUgraphExec exec, CUgraph g, CUgraphExecUpdateResultInfo* info) {
  if (info == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *info = CUgraphExecUpdateResultInfo{CU_GRAPH_EXEC_UPDATE_ERROR, nullptr, nullptr};
  std::lock_guard<OrderedMutex> lock(graphMutex());
  if (!liveExecLocked(exec) || !liveGraphLocked(g)) return CUDA_ERROR_INVALID_VALUE;
  // Nodes pair up in the order they were made; the topology must be the same.
  auto fail = [&](CUgraphExecUpdateResult why, CUgraphNode node) {
    *info = CUgraphExecUpdateResultInfo{why, node, nullptr};
    return CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE;
  };
  if (g->nodes.size() != exec->topLevel.size()) return fail(CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED, nullptr);
  std::map<const CUgraphNode_st*, size_t> newIndex, oldIndex;
  for (size_t i = 0; i < g->nodes.size(); ++i) {
    newIndex[g->nodes[i].get()] = i;
    oldIndex[exec->topLevel[i]] = i;
  }
  for (size_t i = 0; i < g->nodes.size(); ++i) {
    const CUgraphNode_st* nn = g->nodes[i].get();
    auto at = exec->bySource.find(exec->topLevel[i]);
    const ExecNode& e = (*exec->nodes)[at->second];
    if (nn->type == CU_GRAPH_NODE_TYPE_GRAPH || e.graphType == CU_GRAPH_NODE_TYPE_GRAPH) {
      return fail(CU_GRAPH_EXEC_UPDATE_ERROR_NOT_SUPPORTED, g->nodes[i].get());
    }
    if (nn->type != e.graphType) return fail(CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED, g->nodes[i].get());
    if (e.ctx != nullptr && nn->ctx != e.ctx) {
      return fail(nn->type == CU_GRAPH_NODE_TYPE_KERNEL ? CU_GRAPH_EXEC_UPDATE_ERROR_FUNCTION_CHANGED
                                                        : CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED,
                  g->nodes[i].get());
    }
  }
  // The edges, as pairs of creation indices.
  std::multiset<std::pair<size_t, size_t>> before, now;
  for (const auto& [a, b] : g->edges) now.emplace(newIndex[a], newIndex[b]);
  // The old graph may be gone: its edges are read from the exec nodes' dependencies.
  std::map<size_t, size_t> execToTop;
  for (size_t i = 0; i < exec->topLevel.size(); ++i) execToTop[exec->bySource.at(exec->topLevel[i])] = i;
  for (const auto& [src, at] : exec->bySource) {
    for (size_t d : (*exec->nodes)[at].deps) before.emplace(execToTop.at(d), oldIndex.at(src));
  }
  if (before != now) return fail(CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED, nullptr);
  auto copy = std::make_shared<std::vector<ExecNode>>(*exec->nodes);
  for (size_t i = 0; i < g->nodes.size(); ++i) {
    const CUgraphNode_st* nn = g->nodes[i].get();
    ExecNode& e = (*copy)[exec->bySource.at(exec->topLevel[i])];
    e.ops = nn->ops;
    e.owned = nn->owned;
    e.host = nn->host;
    e.event = nn->event;
  }
  exec->nodes = std::move(copy);
  *info = CUgraphExecUpdateResultInfo{CU_GRAPH_EXEC_UPDATE_SUCCESS, nullptr, nullptr};
  return CUDA_SUCCESS;
}

void countGraphExecs(HandleCounts& c) {
  std::lock_guard<OrderedMutex> lock(graphMutex());
  c.graphExecs = execs().size();
}

}  // namespace mcsim::driver

using namespace mcsim::driver;
using mcsim::OrderedMutex;

extern "C" {

CUresult CUDAAPI cuGraphInstantiateWithFlags(CUgraphExec* phGraphExec, CUgraph hGraph, unsigned long long flags) {
  MCSIM_REQUIRE_INIT();
  // Uploading at instantiation needs a stream: only the WithParams form has one.
  if ((flags & CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD) != 0) return CUDA_ERROR_INVALID_VALUE;
  return instantiateEntry(phGraphExec, hGraph, flags, nullptr, nullptr, nullptr, false);
}

CUresult CUDAAPI cuGraphExecDestroy(CUgraphExec hGraphExec) {
  MCSIM_REQUIRE_INIT();
  std::lock_guard<OrderedMutex> lock(graphMutex());
  if (!liveExecLocked(hGraphExec)) return CUDA_ERROR_INVALID_VALUE;
  execs().erase(hGraphExec);
  delete hGraphExec;  // a launch in flight holds its own reference to the nodes
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphExecGetFlags(CUgraphExec hGraphExec, cuuint64_t* flags) {
  MCSIM_REQUIRE_INIT();
  if (flags == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<OrderedMutex> lock(graphMutex());
  if (!liveExecLocked(hGraphExec)) return CUDA_ERROR_INVALID_VALUE;
  *flags = hGraphExec->flags;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphExecKernelNodeSetParams_v2(CUgraphExec hGraphExec, CUgraphNode hNode,
                                                   const CUDA_KERNEL_NODE_PARAMS* nodeParams) {
  MCSIM_REQUIRE_INIT();
  return execKernelNodeSetParamsEntry(hGraphExec, hNode, nodeParams);
}

CUresult CUDAAPI cuGraphExecMemcpyNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                                                const CUDA_MEMCPY3D* copyParams, CUcontext ctx) {
  MCSIM_REQUIRE_INIT();
  CUgraphNode_st proto;
  MCSIM_TRY(buildNodeFromMemcpyParams(copyParams, ctx, &proto));
  return replaceWork(hGraphExec, hNode, CU_GRAPH_NODE_TYPE_MEMCPY, proto);
}

CUresult CUDAAPI cuGraphExecMemsetNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                                                const CUDA_MEMSET_NODE_PARAMS* memsetParams, CUcontext ctx) {
  MCSIM_REQUIRE_INIT();
  CUgraphNode_st proto;
  MCSIM_TRY(buildNodeFromMemsetParams(memsetParams, ctx, &proto));
  return replaceWork(hGraphExec, hNode, CU_GRAPH_NODE_TYPE_MEMSET, proto);
}

CUresult CUDAAPI cuGraphExecHostNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                                              const CUDA_HOST_NODE_PARAMS* nodeParams) {
  MCSIM_REQUIRE_INIT();
  if (nodeParams == nullptr || nodeParams->fn == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return changeExecNode(hGraphExec, hNode, CU_GRAPH_NODE_TYPE_HOST, [&](ExecNode& e) {
    e.host = *nodeParams;
    return CUDA_SUCCESS;
  });
}

CUresult CUDAAPI cuGraphExecEventRecordNodeSetEvent(CUgraphExec hGraphExec, CUgraphNode hNode, CUevent event) {
  MCSIM_REQUIRE_INIT();
  EventRef ev;
  MCSIM_TRY(checkEvent(event, &ev));
  return changeExecNode(hGraphExec, hNode, CU_GRAPH_NODE_TYPE_EVENT_RECORD, [&](ExecNode& e) {
    e.event = event;
    return CUDA_SUCCESS;
  });
}

CUresult CUDAAPI cuGraphExecEventWaitNodeSetEvent(CUgraphExec hGraphExec, CUgraphNode hNode, CUevent event) {
  MCSIM_REQUIRE_INIT();
  EventRef ev;
  MCSIM_TRY(checkEvent(event, &ev));
  return changeExecNode(hGraphExec, hNode, CU_GRAPH_NODE_TYPE_WAIT_EVENT, [&](ExecNode& e) {
    e.event = event;
    return CUDA_SUCCESS;
  });
}

CUresult CUDAAPI cuGraphNodeSetEnabled(CUgraphExec hGraphExec, CUgraphNode hNode, unsigned int isEnabled) {
  MCSIM_REQUIRE_INIT();
  return changeExecNode(hGraphExec, hNode, CU_GRAPH_NODE_TYPE_GRAPH, [&](ExecNode& e) {
    // Kernel, memcpy and memset nodes may be disabled (the reference).
    if (e.type != CU_GRAPH_NODE_TYPE_KERNEL && e.type != CU_GRAPH_NODE_TYPE_MEMCPY &&
        e.type != CU_GRAPH_NODE_TYPE_MEMSET) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    e.enabled = isEnabled != 0;
    return CUDA_SUCCESS;
  });
}

CUresult CUDAAPI cuGraphNodeGetEnabled(CUgraphExec hGraphExec, CUgraphNode hNode, unsigned int* isEnabled) {
  MCSIM_REQUIRE_INIT();
  if (isEnabled == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<OrderedMutex> lock(graphMutex());
  if (!liveExecLocked(hGraphExec)) return CUDA_ERROR_INVALID_VALUE;
  auto it = hGraphExec->bySource.find(hNode);
  if (it == hGraphExec->bySource.end()) return CUDA_ERROR_INVALID_VALUE;
  const ExecNode& e = (*hGraphExec->nodes)[it->second];
  if (e.type != CU_GRAPH_NODE_TYPE_KERNEL && e.type != CU_GRAPH_NODE_TYPE_MEMCPY &&
      e.type != CU_GRAPH_NODE_TYPE_MEMSET) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  *isEnabled = e.enabled ? 1 : 0;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphExecUpdate_v2(CUgraphExec hGraphExec, CUgraph hGraph, CUgraphExecUpdateResultInfo* resultInfo) {
  MCSIM_REQUIRE_INIT();
  return execUpdateEntry(hGraphExec, hGraph, resultInfo);
}

}  // extern "C"
