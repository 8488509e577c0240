// Contexts: primary contexts, created contexts, the per-thread context stack, peer access.
#include "driver/context.h"

#include <algorithm>
#include <deque>
#include <map>
#include <mutex>
#include <vector>

#include "driver/driver.h"
#include "driver/graph.h"
#include "driver/export_tables.h"
#include "driver/leaks.h"
#include "driver/module_ptx.h"
#include "driver/stream.h"
#include "model/thread_owned.h"

namespace mcsim::driver {

namespace {

struct Primary {
  CUctx_st ctx;
  int refs = 0;
  // Whether the context exists. Usually refs > 0, but cuDevicePrimaryCtxReset destroys the
  // context and keeps the retain count: the real driver needs as many releases after a reset as
  // before it (ctx.primary.state.final: still active after one release of two retains).
  bool active = false;
  unsigned flags = 0;
};

// How many destroyed created contexts wait before their objects are made new contexts again (a
// CUcontext is the object's address: a call of another thread still using one just destroyed ends
// on the object it resolved, never on freed memory, nor on a new context's fields being set).
constexpr size_t kContextQuarantine = 16;

struct Contexts {
  std::mutex mu;
  // Every context object: the primaries, the live created contexts and the destroyed ones, which
  // stay known (and refused: CUDA_ERROR_CONTEXT_IS_DESTROYED) until their object is made a new
  // context (a CUcontext value is an address, reused as the real driver's handles are). Lookups
  // only, never iterated for output.
  std::set<CUctx_st*> registry;
  // Destroyed created contexts, oldest first: cuCtxCreate takes the oldest once more than
  // kContextQuarantine wait, so that the registry holds no more than the live contexts and those.
  std::deque<CUctx_st*> destroyed;
  std::vector<Primary*> primaries;  // one per device, made at first use
  // Created contexts' ids follow the primaries' (1..deviceCount), so that making the primary
  // table, which happens on first use, changes no id a later call hands out.
  unsigned long long nextCreatedId = 0;
};

Contexts& contexts() {
  static Contexts* c = new Contexts();
  return *c;
}

// An entry of a thread's context stack: the context's object, its id when it was made current (an
// object that has since been made a new context has another), and its device (cuCtxGetDevice
// answers it even once the context is destroyed).
struct StackEntry {
  CUctx_st* ctx = nullptr;
  unsigned long long id = 0;
  int device = 0;
};

// The calling thread's context stack, which outlives the thread's thread_local destructors and,
// on the main thread, exit(): libraries call the driver from those and from atexit handlers (NCCL's
// env plugin logs through cudaGetDevice from one; a thread_local vector read there was freed
// memory). model/thread_owned.h says how.
struct ContextStackTag;
std::vector<StackEntry>& threadStack() { return threadOwned<std::vector<StackEntry>, ContextStackTag>(); }

// An entry for `ctx` (a known context): its object, and which context the object is now.
StackEntry entryFor(CUctx_st* ctx) {
  std::lock_guard<std::mutex> lock(contexts().mu);
  return StackEntry{ctx, ctx->id, ctx->device};
}

// Whether `e` still names the context it was made for (caller holding the contexts' lock): not
// when the object has since been made a new context.
bool sameContextLocked(const StackEntry& e) { return e.ctx->id == e.id; }

// The limits a context starts with: the defaults the CUDA programming guide gives (1 KiB of stack
// per thread, an 8 MiB device heap, sync depth 2, 2048 pending launches), the printf FIFO a real
// H200 reports (8,650,752 bytes, driver 580.159.04; docs/real-driver.md) and the 64-byte L2 fetch
// granularity; no persisting L2, no shared-memory carve-out limit.
constexpr size_t kDefaultPrintfFifoBytes = 8650752;
constexpr size_t kMinPrintfFifoBytes = 512 << 10;
constexpr size_t kMinMallocHeapBytes = 4 << 20;

void setDefaultLimits(CUctx_st* ctx) {
  for (size_t& l : ctx->limits) l = 0;
  ctx->limits[CU_LIMIT_STACK_SIZE] = 1024;
  ctx->limits[CU_LIMIT_PRINTF_FIFO_SIZE] = kDefaultPrintfFifoBytes;
  ctx->limits[CU_LIMIT_MALLOC_HEAP_SIZE] = 8 << 20;
  ctx->limits[CU_LIMIT_DEV_RUNTIME_SYNC_DEPTH] = 2;
  ctx->limits[CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT] = 2048;
  ctx->limits[CU_LIMIT_MAX_L2_FETCH_GRANULARITY] = 64;
}

Primary& primaryFor(int device) {
  Contexts& c = contexts();
  if (c.primaries.empty()) {
    for (int d = 0; d < state().deviceCount; ++d) {
      auto* p = new Primary();
      p->ctx.device = d;
      p->ctx.primary = true;
      p->ctx.id = static_cast<unsigned long long>(d) + 1;
      setDefaultLimits(&p->ctx);
      c.registry.insert(&p->ctx);
      c.primaries.push_back(p);
    }
  }
  return *c.primaries[static_cast<size_t>(device)];
}

bool usableLocked(CUctx_st* ctx) {
  if (ctx->primary) return primaryFor(ctx->device).active;
  return ctx->alive;
}

constexpr unsigned kCtxFlagsAllowed = CU_CTX_FLAGS_MASK;

bool validSchedFlags(unsigned flags) {
  const unsigned sched = flags & CU_CTX_SCHED_MASK;
  return (flags & ~kCtxFlagsAllowed) == 0 &&
         (sched == CU_CTX_SCHED_AUTO || sched == CU_CTX_SCHED_SPIN || sched == CU_CTX_SCHED_YIELD ||
          sched == CU_CTX_SCHED_BLOCKING_SYNC);
}

}  // namespace

void addContextsToDigest(model::Digest& d) {
  std::lock_guard<std::mutex> lock(contexts().mu);
  // A primary not made yet digests as one made and never retained: making the table on first
  // use (even by a call that then fails) is no change of state.
  for (int dev = 0; dev < state().deviceCount; ++dev) {
    const Primary* p = contexts().primaries.empty() ? nullptr : contexts().primaries[static_cast<size_t>(dev)];
    d.add(p != nullptr ? static_cast<uint64_t>(p->refs) : 0).add(p != nullptr ? p->flags : 0u);
    d.add(p != nullptr && p->active ? 1 : 0);
  }
  d.add(contexts().nextCreatedId);
  const std::vector<StackEntry>& stack = threadStack();
  d.add(stack.size());
  for (const StackEntry& e : stack) d.add(e.id);
}

CUcontext primaryContextObject(int device) {
  std::lock_guard<std::mutex> lock(contexts().mu);
  return &primaryFor(device).ctx;
}

bool knownContext(CUcontext ctx) {
  std::lock_guard<std::mutex> lock(contexts().mu);
  return contexts().registry.count(ctx) != 0;
}

std::vector<int> peerDevicesOf(const CUctx_st* ctx) {
  std::lock_guard<std::mutex> lock(contexts().mu);
  std::vector<int> devices(ctx->peers.begin(), ctx->peers.end());
  devices.push_back(ctx->device);
  return devices;
}

bool usableContext(CUcontext ctx) {
  std::lock_guard<std::mutex> lock(contexts().mu);
  return contexts().registry.count(ctx) != 0 && usableLocked(ctx);
}

ScopedContext::ScopedContext(CUctx_st* ctx) { threadStack().push_back(entryFor(ctx)); }
ScopedContext::~ScopedContext() { threadStack().pop_back(); }

// The answer of a call that needs the calling thread's current context when it has none.
static CUresult noCurrentContext() {
  return MCSIM_REFUSE(CUDA_ERROR_INVALID_CONTEXT, "no context is current on this thread (cuCtxSetCurrent, "
                      "cuCtxPushCurrent; the CUDA runtime makes one current at its first call)");
}

CUresult currentContext(CUctx_st** ctx) {
  const std::vector<StackEntry>& stack = threadStack();
  if (stack.empty()) return noCurrentContext();
  CUctx_st* top = stack.back().ctx;
  std::lock_guard<std::mutex> lock(contexts().mu);
  if (!sameContextLocked(stack.back()) || !usableLocked(top)) {
    return MCSIM_REFUSE(CUDA_ERROR_CONTEXT_IS_DESTROYED, "the current context was destroyed");
  }
  const CUresult sticky = top->stickyError.load();
  if (sticky != CUDA_SUCCESS) {
    return MCSIM_REFUSE(sticky, "the context holds a sticky error from an earlier kernel fault; it must be "
                        "destroyed (cuDevicePrimaryCtxReset)");
  }
  *ctx = top;
  return CUDA_SUCCESS;
}

void addContextsLeft(LeakReport& r) {
  std::map<unsigned long long, int> byId;  // created contexts still alive: id -> device
  {
    std::lock_guard<std::mutex> lock(contexts().mu);
    for (const CUctx_st* c : contexts().registry) {
      if (!c->primary && c->alive) byId[c->id] = c->device;
    }
  }
  for (const auto& [id, device] : byId) {
    r.add(LeakReport::Kind::kContext, 0, "id " + std::to_string(id) + " on device " + std::to_string(device));
  }
}

void countContexts(HandleCounts& c) {
  std::lock_guard<std::mutex> lock(contexts().mu);
  for (const CUctx_st* ctx : contexts().registry) c.contexts += ctx->primary ? 0 : 1;
}

}  // namespace mcsim::driver

using namespace mcsim::driver;

extern "C" {

CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext* pctx, CUdevice dev) {
  MCSIM_REQUIRE_INIT_DEV(dev);
  if (pctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!validDevice(dev)) return CUDA_ERROR_INVALID_DEVICE;
  std::lock_guard<std::mutex> lock(contexts().mu);
  Primary& p = primaryFor(dev);
  ++p.refs;
  if (!p.active) {
    p.active = true;
    p.ctx.flags = p.flags;
  }
  *pctx = &p.ctx;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
  MCSIM_REQUIRE_INIT_DEV(dev);
  if (!validDevice(dev)) return CUDA_ERROR_INVALID_DEVICE;
  CUctx_st* released = nullptr;
  {
    std::lock_guard<std::mutex> lock(contexts().mu);
    Primary& p = primaryFor(dev);
    if (p.refs == 0) return CUDA_ERROR_INVALID_CONTEXT;
    if (p.refs == 1 && p.active) released = &p.ctx;
  }
  // The runtimes' context-local storage goes first, while the context still works: their
  // destructors free what they made in it.
  if (released != nullptr) runContextStorageDestructors(released);
  released = nullptr;
  {
    std::lock_guard<std::mutex> lock(contexts().mu);
    Primary& p = primaryFor(dev);
    if (p.refs == 0) return CUDA_ERROR_INVALID_CONTEXT;
    if (--p.refs == 0) {
      if (p.active) released = &p.ctx;
      p.active = false;
      p.ctx.stickyError = CUDA_SUCCESS;
    }
  }
  if (released != nullptr) releaseContextResources(released, "released");
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDevicePrimaryCtxReset_v2(CUdevice dev) {
  MCSIM_REQUIRE_INIT_DEV(dev);
  if (!validDevice(dev)) return CUDA_ERROR_INVALID_DEVICE;
  // As at the last release: the runtimes' destructors run while the context still works.
  runContextStorageDestructors(primaryContextObject(dev));
  CUctx_st* ctx = nullptr;
  {
    std::lock_guard<std::mutex> lock(contexts().mu);
    Primary& p = primaryFor(dev);
    p.active = false;  // the retain count survives a reset (see Primary)
    p.flags = 0;
    p.ctx.peers.clear();
    setDefaultLimits(&p.ctx);
    ctx = &p.ctx;
  }
  releaseContextResources(ctx, "reset");
  // Cleared once its work is released: synchronising work that faulted (a kernel's sticky error
  // that no call had collected yet) sets the error again, and the context a later retain makes
  // must start clean (faults.Fabric.APeerStoreOverACutPathFaultsTheKernelWithAStickyNvlinkError).
  {
    std::lock_guard<std::mutex> lock(contexts().mu);
    primaryFor(dev).ctx.stickyError = CUDA_SUCCESS;
  }
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int* flags, int* active) {
  MCSIM_REQUIRE_INIT_DEV(dev);
  if (flags == nullptr || active == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!validDevice(dev)) return CUDA_ERROR_INVALID_DEVICE;
  std::lock_guard<std::mutex> lock(contexts().mu);
  Primary& p = primaryFor(dev);
  *flags = p.flags;
  *active = p.active ? 1 : 0;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDevicePrimaryCtxSetFlags_v2(CUdevice dev, unsigned int flags) {
  MCSIM_REQUIRE_INIT_DEV_ARGS(dev, {"flags", flags});
  if (!validDevice(dev)) return CUDA_ERROR_INVALID_DEVICE;
  if (!validSchedFlags(flags)) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(contexts().mu);
  Primary& p = primaryFor(dev);
  p.flags = flags;
  p.ctx.flags = flags;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxCreate_v4(CUcontext* pctx, CUctxCreateParams* params, unsigned int flags,
                                CUdevice dev) {
  MCSIM_REQUIRE_INIT_DEV_ARGS(dev, {"flags", flags});
  if (pctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!validSchedFlags(flags)) return CUDA_ERROR_INVALID_VALUE;
  if (!validDevice(dev)) return CUDA_ERROR_INVALID_DEVICE;
  // A count without its array: INVALID_VALUE on the real H100
  // (docs/real-driver/edge-probe-h100-2026-11-25.txt), as cuCtxCreate_v3 answers it.
  if (params != nullptr && (params->numExecAffinityParams < 0 ||
                            (params->numExecAffinityParams > 0 && params->execAffinityParams == nullptr))) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  // Execution affinity and CIG parameters describe hardware partitioning mcsim does not model.
  if (params != nullptr && (params->execAffinityParams != nullptr || params->cigParams != nullptr)) {
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  CUctx_st* ctx = nullptr;
  {
    std::lock_guard<std::mutex> lock(contexts().mu);
    Contexts& c = contexts();
    if (c.destroyed.size() > kContextQuarantine) {
      // The oldest destroyed context's object becomes this one (what it owned went with it).
      ctx = c.destroyed.front();
      c.destroyed.pop_front();
      ctx->peers.clear();
      ctx->stickyError = CUDA_SUCCESS;
      ctx->printfLaunched = false;
    } else {
      ctx = new CUctx_st();
      c.registry.insert(ctx);
    }
    ctx->device = dev;
    ctx->flags = flags;
    ctx->alive = true;
    setDefaultLimits(ctx);
    ctx->id = static_cast<unsigned long long>(state().deviceCount) + 1 + c.nextCreatedId++;
  }
  threadStack().push_back(entryFor(ctx));
  *pctx = ctx;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxDestroy_v2(CUcontext ctx) {
  MCSIM_REQUIRE_INIT();
  if (ctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  {
    std::lock_guard<std::mutex> lock(contexts().mu);
    if (contexts().registry.count(ctx) == 0 || ctx->primary) return CUDA_ERROR_INVALID_CONTEXT;
    if (!ctx->alive) return CUDA_ERROR_CONTEXT_IS_DESTROYED;
  }
  runContextStorageDestructors(ctx);
  {
    std::lock_guard<std::mutex> lock(contexts().mu);
    if (!ctx->alive) return CUDA_ERROR_CONTEXT_IS_DESTROYED;
    ctx->alive = false;
  }
  std::vector<StackEntry>& stack = threadStack();
  if (!stack.empty() && stack.back().ctx == ctx) stack.pop_back();
  releaseContextResources(ctx, "destroyed");
  {
    // Known (and refused) until its object is made a new context.
    std::lock_guard<std::mutex> lock(contexts().mu);
    contexts().destroyed.push_back(ctx);
  }
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxGetCurrent(CUcontext* pctx) {
  MCSIM_REQUIRE_INIT();
  if (pctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const std::vector<StackEntry>& stack = threadStack();
  *pctx = stack.empty() ? nullptr : stack.back().ctx;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxSetCurrent(CUcontext ctx) {
  MCSIM_REQUIRE_INIT();
  std::vector<StackEntry>& stack = threadStack();
  if (ctx == nullptr) {
    if (!stack.empty()) stack.pop_back();
    return CUDA_SUCCESS;
  }
  // A destroyed context may be made current; calls then report it (as the real driver does).
  if (!knownContext(ctx)) return CUDA_ERROR_INVALID_CONTEXT;
  if (stack.empty()) stack.push_back(entryFor(ctx));
  else stack.back() = entryFor(ctx);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxPushCurrent_v2(CUcontext ctx) {
  MCSIM_REQUIRE_INIT();
  if (ctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!knownContext(ctx)) return CUDA_ERROR_INVALID_CONTEXT;
  threadStack().push_back(entryFor(ctx));
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxPopCurrent_v2(CUcontext* pctx) {
  MCSIM_REQUIRE_INIT();
  std::vector<StackEntry>& stack = threadStack();
  if (stack.empty()) return noCurrentContext();
  if (pctx != nullptr) *pctx = stack.back().ctx;
  stack.pop_back();
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxGetDevice(CUdevice* device) {
  MCSIM_REQUIRE_INIT();
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  // The device of the current context is known even when the context is no longer usable.
  const std::vector<StackEntry>& stack = threadStack();
  if (stack.empty()) return noCurrentContext();
  *device = stack.back().device;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxSynchronize(void) {
  MCSIM_REQUIRE_INIT();
  CUctx_st* ctx = nullptr;
  MCSIM_TRY(currentContext(&ctx));
  MCSIM_TRY(checkUnsafeCall());  // it would wait for work a capture never runs
  return synchronizeContext(ctx);
}

// CUDA 13.0 forms that name the context; NULL means the calling thread's current one.
CUresult CUDAAPI cuCtxGetDevice_v2(CUdevice* device, CUcontext ctx) {
  MCSIM_REQUIRE_INIT();
  // Not through cuCtxGetDevice: a second entry would count as a second call in fault plans.
  if (ctx == nullptr) {
    if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
    const std::vector<StackEntry>& stack = threadStack();
    if (stack.empty()) return noCurrentContext();
    *device = stack.back().device;
    return CUDA_SUCCESS;
  }
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!knownContext(ctx)) return CUDA_ERROR_INVALID_CONTEXT;
  if (!usableContext(ctx)) return CUDA_ERROR_CONTEXT_IS_DESTROYED;
  *device = ctx->device;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxSynchronize_v2(CUcontext ctx) {
  MCSIM_REQUIRE_INIT();
  // Not through cuCtxSynchronize: a second entry would count as a second call in fault plans
  // (nth=1 would see the first cuCtxSynchronize_v2(NULL) twice; a delay would be taken twice).
  if (ctx == nullptr) {
    CUctx_st* current = nullptr;
    MCSIM_TRY(currentContext(&current));
    return synchronizeContext(current);
  }
  if (!knownContext(ctx)) return CUDA_ERROR_INVALID_CONTEXT;
  if (!usableContext(ctx)) return CUDA_ERROR_CONTEXT_IS_DESTROYED;
  return synchronizeContext(ctx);
}

CUresult CUDAAPI cuCtxGetFlags(unsigned int* flags) {
  MCSIM_REQUIRE_INIT();
  if (flags == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUctx_st* ctx = nullptr;
  MCSIM_TRY(currentContext(&ctx));
  // A primary context reports CU_CTX_MAP_HOST on top of its flags; a created one does not
  // (real driver, docs/real-driver/). Flags are read and written under the contexts' lock: another
  // thread may set them (cuCtxSetFlags, cuDevicePrimaryCtxSetFlags) meanwhile.
  std::lock_guard<std::mutex> lock(contexts().mu);
  *flags = ctx->flags | (ctx->primary ? static_cast<unsigned>(CU_CTX_MAP_HOST) : 0u);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxSetFlags(unsigned int flags) {
  MCSIM_REQUIRE_INIT();
  if (!validSchedFlags(flags)) return CUDA_ERROR_INVALID_VALUE;
  CUctx_st* ctx = nullptr;
  MCSIM_TRY(currentContext(&ctx));
  std::lock_guard<std::mutex> lock(contexts().mu);
  ctx->flags = flags;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxGetApiVersion(CUcontext ctx, unsigned int* version) {
  MCSIM_REQUIRE_INIT();
  if (version == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (ctx == nullptr) {
    CUctx_st* cur = nullptr;
    MCSIM_TRY(currentContext(&cur));
  } else if (!usableContext(ctx)) {
    return CUDA_ERROR_INVALID_CONTEXT;
  }
  *version = 3020;  // every context made through the v2+ entry points reports the v2 API
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxGetId(CUcontext ctx, unsigned long long* ctxId) {
  MCSIM_REQUIRE_INIT();
  if (ctxId == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUctx_st* c = ctx;
  if (c == nullptr) MCSIM_TRY(currentContext(&c));
  else if (!usableContext(c)) return CUDA_ERROR_INVALID_CONTEXT;
  *ctxId = c->id;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxGetLimit(size_t* pvalue, CUlimit limit) {
  MCSIM_REQUIRE_INIT();
  if (pvalue == nullptr || limit < 0 || limit >= CU_LIMIT_MAX) return CUDA_ERROR_INVALID_VALUE;
  CUctx_st* ctx = nullptr;
  MCSIM_TRY(currentContext(&ctx));
  std::lock_guard<std::mutex> lock(contexts().mu);
  *pvalue = ctx->limits[limit];
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxSetLimit(CUlimit limit, size_t value) {
  MCSIM_REQUIRE_INIT();
  if (limit < 0 || limit >= CU_LIMIT_MAX) return CUDA_ERROR_INVALID_VALUE;
  // The L2 fetch granularity is a hint of 0 to 128 bytes in powers of two.
  if (limit == CU_LIMIT_MAX_L2_FETCH_GRANULARITY && value != 0 && value != 32 && value != 64 && value != 128) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  CUctx_st* ctx = nullptr;
  MCSIM_TRY(currentContext(&ctx));
  if (limit == CU_LIMIT_PRINTF_FIFO_SIZE) {
    // As a real H200 answers (driver 580.159.04, docs/real-driver.md): fixed once a kernel that
    // calls printf was launched; at least 512 KiB (a smaller size reads back as 512 KiB).
    if (ctx->printfLaunched.load()) {
      return MCSIM_REFUSE(CUDA_ERROR_INVALID_VALUE, "the printf FIFO size cannot change after a kernel that calls "
                          "printf was launched in the context");
    }
    value = std::max<size_t>(value, kMinPrintfFifoBytes);
  }
  if (limit == CU_LIMIT_MALLOC_HEAP_SIZE) {
    // cuda.h, cuCtxSetLimit: "Setting CU_LIMIT_MALLOC_HEAP_SIZE must be performed before launching
    // any kernel that uses the malloc() or free() device system calls, otherwise
    // CUDA_ERROR_INVALID_VALUE will be returned." At least 4 MiB: a real H200 reads 1000 bytes
    // and 1 MiB back as 4,194,304 (driver 580.159.04, docs/real-driver.md); larger sizes as asked
    // (the programming guide: cuCtxGetLimit returns the requested heap size).
    value = std::max<size_t>(value, kMinMallocHeapBytes);
    const bool set = unlessDeviceHeapPlaced(ctx, [&] {
      std::lock_guard<std::mutex> lock(contexts().mu);
      ctx->limits[limit] = value;
    });
    if (!set) {
      return MCSIM_REFUSE(CUDA_ERROR_INVALID_VALUE, "the device heap size cannot change after a kernel that calls "
                          "malloc or free was launched in the context");
    }
    return CUDA_SUCCESS;
  }
  std::lock_guard<std::mutex> lock(contexts().mu);
  ctx->limits[limit] = value;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxEnablePeerAccess(CUcontext peerContext, unsigned int Flags) {
  MCSIM_REQUIRE_INIT_ARGS({"flags", Flags});
  if (Flags != 0) return CUDA_ERROR_INVALID_VALUE;
  CUctx_st* ctx = nullptr;
  MCSIM_TRY(currentContext(&ctx));
  if (peerContext == nullptr || !usableContext(peerContext)) return CUDA_ERROR_INVALID_HANDLE;
  // A device is not its own peer (the real driver answers PEER_ACCESS_UNSUPPORTED).
  if (peerContext->device == ctx->device || state().node->preset().nvlink.linksPerGpu == 0) {
    return CUDA_ERROR_PEER_ACCESS_UNSUPPORTED;
  }
  // Nor is a GPU a fault plan cut off from the NVLink fabric (cuDeviceCanAccessPeer answers 0).
  if (!state().node->nvlinkUp(ctx->device) || !state().node->nvlinkUp(peerContext->device)) {
    if (state().node->lost()) return CUDA_ERROR_DEVICE_UNAVAILABLE;  // (as in cuDeviceCanAccessPeer)
    return CUDA_ERROR_PEER_ACCESS_UNSUPPORTED;
  }
  std::lock_guard<std::mutex> lock(contexts().mu);
  if (!ctx->peers.insert(peerContext->device).second) return CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxDisablePeerAccess(CUcontext peerContext) {
  MCSIM_REQUIRE_INIT();
  CUctx_st* ctx = nullptr;
  MCSIM_TRY(currentContext(&ctx));
  if (peerContext == nullptr || !knownContext(peerContext)) return CUDA_ERROR_INVALID_CONTEXT;
  std::lock_guard<std::mutex> lock(contexts().mu);
  if (ctx->peers.erase(peerContext->device) == 0) return CUDA_ERROR_PEER_ACCESS_NOT_ENABLED;
  return CUDA_SUCCESS;
}

}  // extern "C"

// Older ABI variants that cuGetProcAddress hands to programs asking for older versions (NCCL
// asks for cuCtxCreate at 11040). Their arguments and meaning are unchanged.
#include "driver/abi_names.h"

extern "C" {

CUresult CUDAAPI cuCtxCreate(CUcontext* pctx, unsigned int flags, CUdevice dev) {
  return cuCtxCreate_v4(pctx, nullptr, flags, dev);
}
CUresult CUDAAPI cuCtxDestroy(CUcontext ctx) { return cuCtxDestroy_v2(ctx); }
CUresult CUDAAPI cuCtxPopCurrent(CUcontext* pctx) { return cuCtxPopCurrent_v2(pctx); }
CUresult CUDAAPI cuCtxPushCurrent(CUcontext ctx) { return cuCtxPushCurrent_v2(ctx); }
CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice dev) { return cuDevicePrimaryCtxRelease_v2(dev); }
CUresult CUDAAPI cuDevicePrimaryCtxReset(CUdevice dev) { return cuDevicePrimaryCtxReset_v2(dev); }
CUresult CUDAAPI cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags) {
  return cuDevicePrimaryCtxSetFlags_v2(dev, flags);
}

CUresult CUDAAPI cuCtxCreate_v2(CUcontext* pctx, unsigned int flags, CUdevice dev) {
  return cuCtxCreate_v4(pctx, nullptr, flags, dev);
}
CUresult CUDAAPI cuCtxCreate_v3(CUcontext* pctx, CUexecAffinityParam* paramsArray, int numParams,
                                unsigned int flags, CUdevice dev) {
  if (numParams < 0 || (numParams > 0 && paramsArray == nullptr)) return CUDA_ERROR_INVALID_VALUE;
  if (numParams > 0) return CUDA_ERROR_NOT_SUPPORTED;  // execution affinity is not modelled
  return cuCtxCreate_v4(pctx, nullptr, flags, dev);
}

}  // extern "C"
