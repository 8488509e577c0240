// Streams and events as the driver keeps them.
//
// A stream is an order: each operation submitted to it runs after the one before (the stream's
// tail), plus whatever the legacy default stream's rules add: work on a context's legacy stream
// waits for all earlier work of that context's blocking streams, and work on a blocking stream
// waits for the legacy stream's earlier work. Streams created with CU_STREAM_NON_BLOCKING opt
// out. The per-thread default stream (the _ptds/_ptsz ABI, or CU_STREAM_PER_THREAD) is a
// blocking stream of its own for each thread and context. The node runs the operations and keeps
// simulated time; the driver only chains their completions.
//
// Handles are checked against live objects before use: a destroyed or made-up CUstream or CUevent
// is CUDA_ERROR_INVALID_HANDLE, never a dereference. The tables own their objects through
// shared_ptr, and a call that resolved a handle holds its own reference until it returns: a
// thread that destroys the handle meanwhile only takes it out of the table, so the racing call
// ends on a live object (success, or an error), never on freed memory.
#pragma once

#include <cuda.h>

#include <memory>
#include <string>
#include <vector>

#include "fabric/node.h"
#include "model/digest.h"

struct CUctx_st;
struct CUgraphNode_st;
namespace mcsim::driver {
struct CaptureSession;  // stream_capture.cpp
}

struct CUstream_st {
  enum class Kind { kCreated, kLegacy, kPerThread };
  Kind kind = Kind::kCreated;
  unsigned long long id = 0;
  CUctx_st* ctx = nullptr;
  unsigned flags = 0;  // CU_STREAM_DEFAULT or CU_STREAM_NON_BLOCKING
  int priority = 0;
  mcsim::fabric::WorkDone tail;  // the last operation submitted (under the stream tables' lock)
  bool destroyed = false;        // cuStreamDestroy took it out of the table (under the same lock)
  std::string name;              // for the timeline
  // Stream capture (stream_capture.cpp), under the graph tables' lock: the capture sequence the
  // stream is part of, and the nodes its next captured operation will depend on.
  std::shared_ptr<mcsim::driver::CaptureSession> capture;
  std::vector<CUgraphNode_st*> captureDeps;
  bool blocking() const { return kind != Kind::kLegacy && (flags & CU_STREAM_NON_BLOCKING) == 0; }
};

struct CUevent_st {
  CUevent_st() = default;
  CUevent_st(const CUevent_st&) = delete;
  CUevent_st& operator=(const CUevent_st&) = delete;
  // Gives the node's hold of a shared event back (sharedKey): the hold lives as long as the event
  // object, the table's reference or that of a call still using it, whichever goes last. No
  // reference may be dropped under the stream tables' lock (the node's is never taken under it).
  ~CUevent_st();
  unsigned long long id = 0;
  CUctx_st* ctx = nullptr;
  unsigned flags = 0;
  mcsim::fabric::WorkDone recorded;  // the last record point; empty until recorded
  // A CU_EVENT_INTERPROCESS event's record on the node (fabric/ipc_event_table.h), 0 for others:
  // its record point is the node's, which every process holding it shares.
  uint64_t sharedKey = 0;
  // Recorded in a capture (under the graph tables' lock): the capture's id and the nodes a wait
  // on the event joins; 0 when its last record was outside capture.
  uint64_t captureId = 0;
  std::vector<CUgraphNode_st*> captureNodes;
};

namespace mcsim::driver {

// A call's own reference to a stream or event: the object outlives a concurrent destroy.
using StreamRef = std::shared_ptr<CUstream_st>;
using EventRef = std::shared_ptr<CUevent_st>;

// Resolves a stream argument: NULL is the legacy stream, or the per-thread one where the entry
// point's ABI says so (`perThreadDefault`); CU_STREAM_LEGACY and CU_STREAM_PER_THREAD name those
// explicitly. The special streams need a current context.
CUresult resolveStream(CUstream s, bool perThreadDefault, StreamRef* out);
// Submits `op` on `st` after what stream order requires (and after `alsoAfter`, if given).
// `submitted`, if given, receives the node's own answer (before it becomes a CUresult). The
// caller holds a reference to `st` (resolveStream's). Submissions of one context are serialised
// (each must see the tails the one before it left) by the context's own lock, not the stream
// tables', which is never held across the node's answer (a round trip on a shared node).
CUresult enqueue(CUstream_st* st, fabric::DeviceOp op, fabric::WorkDone* done = nullptr,
                 const fabric::WorkDone& alsoAfter = nullptr, Status* submitted = nullptr);
// enqueue after several completions (a graph launch's last step, after the graph's last nodes).
CUresult enqueueAfterAll(CUstream_st* st, fabric::DeviceOp op, const std::vector<fabric::WorkDone>& alsoAfter,
                         fabric::WorkDone* done);
// Submits `op` for `ctx`'s device after exactly `after`, leaving every stream's order alone: a
// node of a launched graph, which follows its dependencies; `st` (the launch stream) names it on
// the timeline.
CUresult submitAfter(CUstream_st* st, CUctx_st* ctx, fabric::DeviceOp op, const std::vector<fabric::WorkDone>& after,
                     fabric::WorkDone* done, Status* submitted);
// Whether `w` is work still to finish.
inline bool pendingWork(const fabric::WorkDone& w) { return w && !w->done(); }
// An event's last record point (empty until recorded), and recording one.
fabric::WorkDone eventRecordPoint(const CUevent_st* ev);
CUresult setEventRecordPoint(CUevent_st* ev, const fabric::WorkDone& w);
// Blocks until `w` completes. When it never can (the engine gave the wait up: device work that
// waits for something that never comes, reported on stderr), `ctx` keeps
// CUDA_ERROR_LAUNCH_TIMEOUT as its sticky error, as after a GPU watchdog's timeout, and that is
// returned.
// A PTX kernel's printf output is printed at the synchronisation that reaches it, as the real
// driver flushes the printf FIFO (docs/ptx.md, "printf and assert").
CUresult waitWork(const fabric::WorkDone& w, CUctx_st* ctx);
// What finished work says: CUDA_SUCCESS, or, when it (or work it followed) faulted on the device
// (a PTX kernel's illegal access, trap ...), the fault's CUresult, which becomes `ctx`'s sticky
// error; the fault's report is printed on stderr the first time anyone learns of it.
CUresult workResult(const fabric::WorkDone& w, CUctx_st* ctx);
// Everything submitted so far to `st` (and, for a legacy stream, to its context's blocking
// streams) has completed when this returns CUDA_SUCCESS.
CUresult synchronizeStream(CUstream_st* st);
// Waits for all work of `ctx`'s streams, those already destroyed included.
CUresult synchronizeContext(CUctx_st* ctx);
// A context went away: its work is waited for, and its streams and events are forgotten (those the
// program made are noted for the leak report, `how` as leaks.h's noteLeftInContext takes it).
void releaseContextStreams(CUctx_st* ctx, const std::string& how);
CUresult checkEvent(CUevent e, EventRef* out);
// cuIpcOpenEventHandle: a new event of `ctx` for the node's shared event `key` (this process
// holds it already), as an event made with CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING.
CUresult adoptSharedEvent(CUctx_st* ctx, uint64_t key, CUevent* out);

// The bodies of the entry points that take a stream (stream_entries.inc, compiled for both
// ABIs, passes how its ABI reads a NULL stream).
CUresult streamSynchronizeEntry(CUstream s, bool perThreadDefault);
CUresult streamQueryEntry(CUstream s, bool perThreadDefault);
CUresult streamWaitEventEntry(CUstream s, CUevent e, unsigned flags, bool perThreadDefault);
CUresult eventRecordEntry(CUevent e, CUstream s, bool perThreadDefault);
CUresult eventRecordWithFlagsEntry(CUevent e, CUstream s, unsigned flags, bool perThreadDefault);
// stream_capture.cpp: the capture calls' bodies (stream_capture_entries.inc, both ABIs).
CUresult captureStatusEntry(CUstream s, CUstreamCaptureStatus* status, bool perThreadDefault);
CUresult captureInfoEntry(CUstream s, CUstreamCaptureStatus* status, cuuint64_t* id, CUgraph* graph,
                          const CUgraphNode** deps, const CUgraphEdgeData** edgeData, size_t* numDeps,
                          bool perThreadDefault);
CUresult beginCaptureEntry(CUstream s, CUgraph into, const CUgraphNode* deps, const CUgraphEdgeData* edgeData,
                           size_t numDeps, CUstreamCaptureMode mode, bool perThreadDefault);
CUresult endCaptureEntry(CUstream s, CUgraph* phGraph, bool perThreadDefault);
CUresult updateCaptureDependenciesEntry(CUstream s, CUgraphNode* deps, const CUgraphEdgeData* edgeData,
                                        size_t numDeps, unsigned flags, bool perThreadDefault);
// graph_exec.cpp: the graph calls that take a stream.
CUresult instantiateWithParamsEntry(CUgraphExec* exec, CUgraph g, CUDA_GRAPH_INSTANTIATE_PARAMS* params,
                                    bool perThreadDefault);
CUresult graphUploadEntry(CUgraphExec exec, CUstream s, bool perThreadDefault);
CUresult graphLaunchEntry(CUgraphExec exec, CUstream s, bool perThreadDefault);
// host_functions.cpp
CUresult launchHostFunctionEntry(CUstream s, CUhostFn fn, void* userData, bool perThreadDefault);
CUresult streamAddCallbackEntry(CUstream s, CUstreamCallback callback, void* userData, unsigned flags,
                                bool perThreadDefault);

// For mcsim::api: streams and events in state digests.
void addStreamsToDigest(model::Digest& d);

// Kernels for the trace's kernel times (docs/traces.md): while a trace is recorded
// (keepSubmittedKernels), each kernel a thread submits from a stream is kept with the work it
// followed, until the recorder takes the ones its current call submitted.
struct SubmittedKernel {
  fabric::WorkDone done;
  std::vector<fabric::WorkDone> after;
};
void keepSubmittedKernels();
std::vector<SubmittedKernel> takeSubmittedKernels();

}  // namespace mcsim::driver

namespace mcsim::driver {
// The bodies of the launch entry points (module.cpp; launch_entries.inc is compiled for both ABIs).
CUresult launchKernelEntry(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                           unsigned sharedMem, CUstream s, void** kernelParams, void** extra, bool perThreadDefault);
CUresult launchKernelExEntry(const CUlaunchConfig* config, CUfunction f, void** kernelParams, void** extra,
                             bool perThreadDefault);
CUresult launchCooperativeKernelEntry(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                      unsigned bz, unsigned sharedMem, CUstream s, void** kernelParams,
                                      bool perThreadDefault);
// Occupancy (occupancy.cpp): the blocks of `f` with `blockSize` threads, `staticShared` bytes of
// static shared memory (0: as cuFuncGetAttribute reads it) and `dynamicShared` bytes of dynamic
// shared memory that one SM of `device` holds at once, by the rules cuOccupancy* follow.
int blocksPerSm(int device, CUfunc_st* f, int blockSize, long staticShared, long dynamicShared);
// The same from the function's attributes (its registers, thread limit, shared memory carveout
// preference, static and largest dynamic shared memory).
int occupancyBlocksPerSm(int device, int regs, int maxThreads, int carveout, long staticShared, long maxDynamicShared,
                         int blockSize, long dynamicShared);
}  // namespace mcsim::driver
