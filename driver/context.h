// Contexts as the driver keeps them. Context objects are never freed: a destroyed context stays
// in the registry marked dead, so a stale CUcontext from the application is recognised rather
// than dereferenced after free, until its object is made a new context (cuCtxCreate takes the
// oldest of the destroyed ones once more than a few wait: context.cpp). A thread's context stack
// remembers which context each entry was, so a thread whose current context was destroyed by
// another thread is told so even once the object is a new context.
#pragma once

#include <cuda.h>

#include <atomic>
#include <cstdint>
#include <set>
#include <vector>

#include "model/digest.h"
#include "model/ordered_mutex.h"

struct CUctx_st {
  int device = 0;
  // flags, alive and peers change while other threads use the context: read and written under
  // the contexts' lock (context.cpp).
  unsigned flags = 0;
  bool primary = false;
  bool alive = true;             // created contexts: until cuCtxDestroy
  unsigned long long id = 0;     // cuCtxGetId
  std::set<int> peers;           // devices whose memory this context may access
  // A kernel's illegal or misaligned access poisons the context: from then on calls made in it
  // return this error, until the context is destroyed or (a primary) reset.
  std::atomic<CUresult> stickyError{CUDA_SUCCESS};
  // Held by the driver across one submission of device work to this context's streams (read the
  // tails stream order requires, submit to the node, record the new tail), so that two threads'
  // submissions are ordered one after the other (driver/stream.cpp).
  mcsim::OrderedMutex submitOrder{mcsim::LockRank::kDriverSubmission};
  // cuCtxGetLimit / cuCtxSetLimit, by CUlimit; back to the defaults when a primary is reset.
  size_t limits[CU_LIMIT_MAX] = {};
  // A kernel that calls printf was launched in the context: its printf FIFO size is fixed from then
  // on (cuCtxSetLimit).
  std::atomic<bool> printfLaunched{false};
};

namespace mcsim::driver {

// The calling thread's current context if it is usable: CUDA_ERROR_INVALID_CONTEXT when there is
// none, CUDA_ERROR_CONTEXT_IS_DESTROYED when it was destroyed (or its primary was released), its
// sticky error once a kernel faulted in it.
CUresult currentContext(CUctx_st** ctx);
// Whether `ctx` is a context this driver made (alive or not).
bool knownContext(CUcontext ctx);
// Whether a known context can be used now.
bool usableContext(CUcontext ctx);
// The devices whose cuMemAlloc memory `ctx` reaches directly: its own and its peers
// (cuCtxEnablePeerAccess), read under the contexts' lock.
std::vector<int> peerDevicesOf(const CUctx_st* ctx);

// The device's primary context object, made on first use, whether or not it is active: what the
// runtime's interface table hands out (it retains the context itself).
CUcontext primaryContextObject(int device);

// For mcsim::api: primary-context counts, live contexts and this thread's stack.
void addContextsToDigest(model::Digest& d);

// Makes `ctx` the calling thread's current context for the scope (a graph node made for a
// context other than the current one), without the checks and fault-plan consult of
// cuCtxPushCurrent.
class ScopedContext {
 public:
  explicit ScopedContext(CUctx_st* ctx);
  ~ScopedContext();
  ScopedContext(const ScopedContext&) = delete;
  ScopedContext& operator=(const ScopedContext&) = delete;
};

// Frees what a context owns when it goes away (memory.cpp implements it). `how` says how it went
// ("destroyed", "reset", "released"), for the leak report (leaks.h).
void releaseContextResources(CUctx_st* ctx, const char* how);
// The modules loaded in a context that goes away, libraries' modules of it included, are unloaded:
// their handles are refused from then on, and a library makes a new module at its next use in a
// context (module.cpp).
void releaseContextModules(CUctx_st* ctx);

}  // namespace mcsim::driver
