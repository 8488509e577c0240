// CUDA graphs as the driver keeps them (docs/runtime.md, "Graphs and stream capture").
//
// A graph is a list of nodes in the order they were made and a list of edges in the order they
// were added; both orders are what every query answers in, so that output never depends on heap
// addresses. A node that does device work (a kernel, a copy, a memset, a stream memory operation)
// holds that work as the fabric::DeviceOps the ordinary stream path builds: a node is made by
// running the same entry-point body with the thread's OpRecorder in scope (explicit nodes) or on
// a capturing stream (stream capture), and enqueue hands the operations to the graph instead of
// the node. An instantiated graph (CUgraphExec) is a deep copy with child graphs flattened, in an
// order where every node follows its dependencies; cuGraphLaunch submits its nodes after their
// dependencies' completions, in stream order on the launch stream.
//
// Every object lives in the graph tables (graph.cpp) under one lock, ranked below the
// submission and stream locks so that enqueue may take it first; no node call is made under it.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "fabric/node.h"
#include "model/ordered_mutex.h"

struct CUctx_st;
struct CUgraph_st;
struct CUstream_st;
struct CUevent_st;

// What a kernel node launches, kept so that cuGraphKernelNodeGetParams can answer (the
// parameters are the node's own copies) and a node can be rebuilt with new parameters.
struct KernelNodeParams {
  CUDA_KERNEL_NODE_PARAMS p{};           // kernelParams/extra point into the vectors below
  std::vector<std::vector<uint8_t>> args;  // one copy per parameter (kernelParams form)
  std::vector<void*> argPtrs;
  std::vector<uint8_t> extraBuffer;      // the packed buffer (extra form)
  size_t extraBytes = 0;
  std::vector<void*> extraArray;
  // Copies what `src` points at, with the parameter sizes the kernel declares.
  void assign(const CUDA_KERNEL_NODE_PARAMS& src, const std::vector<size_t>& sizes);
  KernelNodeParams() = default;
  KernelNodeParams(const KernelNodeParams& o) { *this = o; }
  KernelNodeParams& operator=(const KernelNodeParams& o);
};

struct CUgraphNode_st {
  CUgraph_st* graph = nullptr;
  CUgraphNodeType type = CU_GRAPH_NODE_TYPE_EMPTY;
  uint64_t order = 0;  // creation order within the graph (clones keep it: cuGraphNodeFindInClone)
  // Device work, run in order on `ctx`'s device (kernel, memcpy, memset, mem-op nodes).
  CUctx_st* ctx = nullptr;
  std::vector<mcsim::fabric::DeviceOp> ops;
  // Host bytes the operations read that the node itself keeps (a stream memory write's word).
  std::vector<std::shared_ptr<const std::vector<uint8_t>>> owned;
  // What each node type's GetParams answers.
  KernelNodeParams kernel;
  CUDA_MEMCPY3D copy{};
  CUDA_MEMSET_NODE_PARAMS memset{};
  CUDA_HOST_NODE_PARAMS host{};
  CUevent event = nullptr;                    // event record / wait nodes
  std::unique_ptr<CUgraph_st> child;          // child graph nodes own a copy of the graph
};

struct CUgraph_st {
  std::vector<std::unique_ptr<CUgraphNode_st>> nodes;  // creation order
  std::vector<std::pair<CUgraphNode_st*, CUgraphNode_st*>> edges;  // (from, to), as added
  uint64_t nextOrder = 0;
  uint64_t id = 0;
  CUgraphNode_st* owner = nullptr;  // the child-graph node that owns this graph, if any
  ~CUgraph_st();
};

namespace mcsim::driver {

// The graph tables' lock (graph.cpp).
OrderedMutex& graphMutex();

// While one is in scope on a thread, enqueue appends the operations of that thread to it
// instead of submitting them: how explicit nodes reuse the entry points' bodies.
struct OpRecorder {
  OpRecorder();
  ~OpRecorder();
  OpRecorder(const OpRecorder&) = delete;
  OpRecorder& operator=(const OpRecorder&) = delete;
  CUctx_st* ctx = nullptr;
  std::vector<fabric::DeviceOp> ops;

 private:
  OpRecorder* previous_;
};
OpRecorder* activeRecorder();

// What the entry point being run would make a node of (its type and GetParams answer), for the
// node that capture makes of its operations; every operation one call enqueues goes into that one
// node (a 2D copy of many rows is one memcpy node).
struct NodeCall {
  explicit NodeCall(CUgraphNodeType type);
  ~NodeCall();
  NodeCall(const NodeCall&) = delete;
  NodeCall& operator=(const NodeCall&) = delete;
  CUgraphNodeType type;
  CUgraphNode_st* node = nullptr;  // the node made of this call's operations, once captured
  // Set by the entry point where it knows them (GetParams of a captured node).
  bool haveKernel = false;
  CUDA_KERNEL_NODE_PARAMS kernel{};
  std::vector<size_t> kernelSizes;
  bool haveCopy = false;
  CUDA_MEMCPY3D copy{};
  bool haveMemset = false;
  CUDA_MEMSET_NODE_PARAMS memset{};
  // The call's host source is a value of its own (a stream memory write's word), gone when it
  // returns: a captured node keeps a copy.
  bool copiesSourceNow = false;

 private:
  NodeCall* previous_;
};
NodeCall* activeNodeCall();

// Graph tables (graph.cpp), under graphMutex().
CUgraph_st* newGraphLocked();
bool liveGraphLocked(CUgraph_st* g);
bool liveNodeLocked(CUgraphNode_st* n);
// Adds a node of `type` to `g` after `deps` (checked: each in g, no repeats), registered as live.
CUresult addNodeLocked(CUgraph_st* g, CUgraphNodeType type, const CUgraphNode_st* const* deps, size_t n,
                       CUgraphNode_st** out);
// Destroys graph `g` with its nodes (not under the lock: takes it).
void destroyGraph(CUgraph_st* g);
// Whether `ancestor` is `n` or precedes it in its graph.
bool precedesLocked(const CUgraphNode_st* ancestor, const CUgraphNode_st* n);

// Nodes made of parameters (graph.cpp): the operations the entry point would queue, with its
// checks; `out` gets the type, context, operations and what GetParams answers.
CUresult buildNodeFromKernelParams(const CUDA_KERNEL_NODE_PARAMS* p, CUgraphNode_st* out);
CUresult buildNodeFromMemcpyParams(const CUDA_MEMCPY3D* p, CUcontext ctx, CUgraphNode_st* out);
CUresult buildNodeFromMemsetParams(const CUDA_MEMSET_NODE_PARAMS* p, CUcontext ctx, CUgraphNode_st* out);
// Entry-point bodies shared by the ABI variants (graph.cpp, graph_exec.cpp; graph_abi.cpp
// defines the older variants with them).
CUresult addKernelNodeEntry(CUgraphNode* out, CUgraph g, const CUgraphNode* deps, size_t n,
                            const CUDA_KERNEL_NODE_PARAMS* p);
CUresult addKernelNodeV1Entry(CUgraphNode* out, CUgraph g, const CUgraphNode* deps, size_t n,
                              const CUDA_KERNEL_NODE_PARAMS_v1* p);
CUresult kernelNodeGetParamsEntry(CUgraphNode node, CUDA_KERNEL_NODE_PARAMS* out);
CUresult kernelNodeGetParamsV1Entry(CUgraphNode node, CUDA_KERNEL_NODE_PARAMS_v1* out);
CUresult kernelNodeSetParamsEntry(CUgraphNode node, const CUDA_KERNEL_NODE_PARAMS* p);
CUresult kernelNodeSetParamsV1Entry(CUgraphNode node, const CUDA_KERNEL_NODE_PARAMS_v1* p);
CUresult graphEdgesEntry(CUgraph g, CUgraphNode* from, CUgraphNode* to, CUgraphEdgeData* edgeData, size_t* n);
CUresult nodeNeighboursEntry(CUgraphNode node, CUgraphNode* out, CUgraphEdgeData* edgeData, size_t* n, bool incoming);
CUresult changeDependenciesEntry(CUgraph g, const CUgraphNode* from, const CUgraphNode* to,
                                 const CUgraphEdgeData* edgeData, size_t n, bool add);
CUresult instantiateEntry(CUgraphExec* exec, CUgraph g, unsigned long long flags, CUstream uploadStream,
                          CUgraphNode* errorNode, CUgraphInstantiateResult* result, bool perThreadDefault);
CUresult execKernelNodeSetParamsEntry(CUgraphExec exec, CUgraphNode node, const CUDA_KERNEL_NODE_PARAMS* p);
CUresult execUpdateEntry(CUgraphExec exec, CUgraph g, CUgraphExecUpdateResultInfo* info);
// The launch body of a kernel (module.cpp), which builds kernel nodes under an OpRecorder.
CUresult launchKernelEntry(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                           unsigned sharedMem, CUstream s, void** kernelParams, void** extra, bool perThreadDefault);

// Parameter sizes of a kernel as its launch reads them (module.cpp): its behavioural model's, or
// its PTX's. CUDA_ERROR_INVALID_HANDLE for a function no context can launch.
CUresult kernelParamSizes(CUfunction f, CUctx_st* ctx, std::vector<size_t>* sizes);
// The context a CUfunction belongs to (module.cpp); nullptr for a CUkernel or an unknown handle.
CUctx_st* functionContext(CUfunction f);

// Stream capture (stream_capture.cpp), asked by enqueue and the stream calls.
// Whether any capture is in progress in the process (cheap: an atomic).
bool capturesActive();
// Called by enqueue for each operation: appends it to the capture `st` is part of (*captured
// set), refuses it (the capture's error: invalidated; legacy work that would depend on a
// capturing stream, which invalidates that capture), or leaves it to run (neither).
CUresult captureOperation(CUstream_st* st, fabric::DeviceOp& op, bool* captured);
// Whether `st` is capturing; CUDA_SUCCESS when not. Otherwise its capture is invalidated (the
// call was one capture forbids, such as a synchronize) and `forbidden` is returned.
CUresult refuseWhileCapturing(CUstream_st* st, CUresult forbidden);
// Whether the calling thread may make a "potentially unsafe" call (cuMemAlloc, a synchronous
// copy, cuCtxSynchronize) given its capture mode and the captures in progress; when not, the
// captures that forbid it are invalidated and CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED returned.
CUresult checkUnsafeCall();
// Event record / wait on a capturing stream (*handled set when the stream captures).
CUresult captureEventRecord(CUstream_st* st, CUevent_st* ev, bool external, bool* handled);
// `recordedOutside`: the event has a record point made outside capture.
CUresult captureStreamWaitEvent(const std::shared_ptr<CUstream_st>& st, CUevent_st* ev, bool external,
                                bool recordedOutside, bool* handled);
// A host function on a capturing stream becomes a host node (*handled set).
CUresult captureHostFunction(CUstream_st* st, CUhostFn fn, void* userData, bool* handled);
// Whether `ev` was last recorded in a capture (then queries and synchronizes are
// CUDA_ERROR_CAPTURED_EVENT); a record outside capture clears it.
bool eventRecordedInCapture(const CUevent_st* ev);
// cuEventQuery of such an event: true, and the capture is invalidated (the real driver, 580.159.04:
// the query returns CUDA_ERROR_CAPTURED_EVENT and the capture's status turns INVALIDATED).
bool queryInvalidatesCapture(const CUevent_st* ev);
// A stream goes away: it leaves its capture, which is invalidated (ended, if it began there).
void forgetStreamCapture(CUstream_st* st);

}  // namespace mcsim::driver
