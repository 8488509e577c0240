// Linear device memory (cuMemAlloc), pinned host memory, and the synchronous and asynchronous
// copies and memsets on the legacy default stream.
#include "driver/memory.h"
#include "driver/pool.h"

#include <sys/mman.h>

#include <cstdint>
#include <algorithm>
#include <cstring>
#include <functional>
#include <iterator>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "driver/context.h"
#include "driver/driver.h"
#include "driver/graph.h"
#include "driver/leaks.h"
#include "driver/module_ptx.h"
#include "driver/stream.h"
#include "settings/byte_size.h"

namespace mcsim::driver {

namespace {

struct MemoryTables {
  OrderedMutex mu{LockRank::kDriverMemory};
  std::map<uint64_t, HostAllocation> host;   // pinned host memory by base address
  std::map<uint64_t, CUctx_st*> linearOwner;  // cuMemAlloc base -> owning context
  std::map<uint64_t, int> ipcOpener;          // cuIpcOpenMemHandle address -> the opening context's device
  uint64_t nextHostId = 0;
};

MemoryTables& tables() {
  static MemoryTables* t = new MemoryTables();
  return *t;
}

int currentDevice(CUresult* r) {
  CUctx_st* ctx = nullptr;
  *r = currentContext(&ctx);
  return *r == CUDA_SUCCESS ? ctx->device : -1;
}

}  // namespace

bool findHostAllocation(uint64_t p, HostAllocation* out) {
  std::lock_guard<mcsim::OrderedMutex> lock(tables().mu);
  auto it = tables().host.upper_bound(p);
  if (it == tables().host.begin()) return false;
  --it;
  if (p >= it->second.base + it->second.size) return false;
  *out = it->second;
  return true;
}

void noteIpcOpened(uint64_t base, int device) {
  std::lock_guard<mcsim::OrderedMutex> lock(tables().mu);
  tables().ipcOpener[base] = device;
}

void forgetIpcOpened(uint64_t base) {
  std::lock_guard<mcsim::OrderedMutex> lock(tables().mu);
  tables().ipcOpener.erase(base);
}

int ipcOpenerDevice(uint64_t base) {
  std::lock_guard<mcsim::OrderedMutex> lock(tables().mu);
  auto it = tables().ipcOpener.find(base);
  return it == tables().ipcOpener.end() ? -1 : it->second;
}

CUctx_st* linearOwner(uint64_t base) {
  std::lock_guard<mcsim::OrderedMutex> lock(tables().mu);
  auto it = tables().linearOwner.find(base);
  return it == tables().linearOwner.end() ? nullptr : it->second;
}

void addMemoryTablesToDigest(model::Digest& d) {
  std::lock_guard<mcsim::OrderedMutex> lock(tables().mu);
  // Host addresses come from the host's mmap, so only sizes and flags enter the digest.
  d.add(tables().host.size());
  for (const auto& [base, h] : tables().host) d.add(h.size).add(h.flags);
  d.add(tables().linearOwner.size());
  for (const auto& [va, owner] : tables().linearOwner) d.add(va).add(owner->id);
}

void addHostMemoryLeft(LeakReport& r) {
  // In the order they were made, not by address (ids count down from 2^64 - 1).
  std::map<uint64_t, HostAllocation, std::greater<uint64_t>> byId;
  {
    std::lock_guard<mcsim::OrderedMutex> lock(tables().mu);
    for (const auto& [base, h] : tables().host) byId[h.id] = h;
  }
  for (const auto& [id, h] : byId) {
    r.add(h.registered ? LeakReport::Kind::kRegistered : LeakReport::Kind::kPinned, h.size,
          settings::formatByteSize(h.size) + " at " + hexAddress(h.base));
  }
}

uint64_t hostAllocationCount() {
  std::lock_guard<mcsim::OrderedMutex> lock(tables().mu);
  return tables().host.size();
}

// A context's memory is recorded as its own under the memory tables' lock, and only while the
// context is usable, checked under that lock: releaseContextResources collects what a context
// owns under the same lock after the context stopped being usable, so memory made while it was
// destroyed is either collected there or given back by the call that made it (an allocation
// recorded after the collection used to stay for ever: 26 in 2,000 rounds of cuCtxDestroy racing
// cuMemAlloc).
void releaseContextResources(CUctx_st* ctx, const char* how) {
  const std::string went = std::string("still there when context ") + std::to_string(ctx->id) + " was " + how;
  releaseContextStreams(ctx, went);  // its work finishes before its memory goes
  std::vector<uint64_t> linear;
  std::vector<HostAllocation> host;
  {
    std::lock_guard<mcsim::OrderedMutex> lock(tables().mu);
    for (const auto& [va, owner] : tables().linearOwner) {
      if (owner == ctx) linear.push_back(va);
    }
    for (const auto& [base, h] : tables().host) {
      if (h.ctx == ctx) host.push_back(h);
    }
    for (uint64_t va : linear) tables().linearOwner.erase(va);
    for (const HostAllocation& h : host) tables().host.erase(h.base);
  }
  // Registered memory is the program's own: the node only forgets it.
  for (const HostAllocation& h : host) {
    if (h.registered) (void)state().node->unregisterHost(h.base);
    else (void)state().node->freeHost(reinterpret_cast<void*>(h.base));
  }
  if (leakReportArmed()) {
    for (uint64_t va : linear) {
      fabric::PointerInfo info;
      (void)state().node->pointerInfo(va, ctx->device, &info);
      noteLeftInContext(LeakReport::Kind::kLinear, info.requestedSize,
                        settings::formatByteSize(info.requestedSize) + " on device " + std::to_string(ctx->device) +
                            " at " + hexAddress(va),
                        went);
    }
    // In the order they were made (ids count down).
    std::sort(host.begin(), host.end(), [](const HostAllocation& a, const HostAllocation& b) { return a.id > b.id; });
    for (const HostAllocation& h : host) {
      noteLeftInContext(h.registered ? LeakReport::Kind::kRegistered : LeakReport::Kind::kPinned, h.size,
                        settings::formatByteSize(h.size) + " at " + hexAddress(h.base), went);
    }
  }
  for (uint64_t va : linear) state().node->freeLinear(va);
  releaseContextModules(ctx);  // (their variables' memory with them)
  releaseDeviceHeap(ctx);  // malloc/free's heap goes with the context; a later launch places a new one
}

CUresult checkStream(CUstream stream) {
  StreamRef st;
  return resolveStream(stream, false, &st);
}

namespace {

// Whether `p` is memory the driver knows: a device address (the node checks the mapping) or
// pinned host memory.
bool pinnedHost(uint64_t p) {
  HostAllocation h;
  return findHostAllocation(p, &h);
}

bool knownMemory(uint64_t p) { return isDeviceAddress(p) || pinnedHost(p); }

// The stream an operation goes on: the one named (asynchronous calls), or the default stream of
// the calling thread's context (synchronous calls, which then wait for it).
CUresult orderingStream(const Ordering& o, StreamRef* st) {
  // A synchronous call is one stream capture calls potentially unsafe (cuThreadExchangeStreamCaptureMode).
  if (!o.async) MCSIM_TRY(checkUnsafeCall());
  return resolveStream(o.async ? o.stream : nullptr, o.perThreadDefault, st);
}

// Moves `bytes` from `src` to `dst`, each a device address or a host pointer (unified
// addressing tells them apart), on stream `st`. The real driver requires the "device" operands
// of the typed copies to be memory it knows (device or pinned host memory) and takes any pointer
// on a "host" side, device addresses included.
CUresult transfer(uint64_t dst, uint64_t src, size_t bytes, bool dstKnown, bool srcKnown, int dstDevice,
                  int srcDevice, CUstream_st* st, bool async) {
  if (bytes == 0) return CUDA_SUCCESS;
  if (dst == 0 || src == 0) return CUDA_ERROR_INVALID_VALUE;
  if ((dstKnown && !knownMemory(dst)) || (srcKnown && !knownMemory(src))) return CUDA_ERROR_INVALID_VALUE;
  // The device heap of malloc in kernels is not memory the host's copies may name (the CUDA C++
  // Programming Guide; a real H200 answers CUDA_ERROR_INVALID_VALUE, docs/real-driver.md).
  if ((isDeviceAddress(dst) && inDeviceHeap(dst, bytes)) || (isDeviceAddress(src) && inDeviceHeap(src, bytes))) {
    return MCSIM_REFUSE(CUDA_ERROR_INVALID_VALUE, "the copy names memory of the device heap (malloc in kernels), which "
                        "the host's copy calls cannot reach");
  }
  fabric::DeviceOp op;
  op.kind = fabric::DeviceOp::Kind::kCopy;
  op.dst = dst;
  op.src = src;
  op.dstDevice = isDeviceAddress(dst);
  op.srcDevice = isDeviceAddress(src);
  op.dstPinned = !op.dstDevice && pinnedHost(dst);
  op.srcPinned = !op.srcDevice && pinnedHost(src);
  op.dstAccessor = dstDevice;
  op.srcAccessor = srcDevice;
  op.bytes = bytes;
  // Between device memory: whose cuMemAlloc memory the stream's context reaches directly; the node
  // stages a copy through host memory when it reaches another's (fabric::DeviceOp::peers).
  if (op.dstDevice && op.srcDevice) op.peers = peerDevicesOf(st->ctx);
  // A copy into pageable host memory returns only once it is done, as the reference says for
  // the asynchronous calls too; synchronous calls always wait.
  op.callerWaits = !async || (!op.dstDevice && !op.dstPinned);
  fabric::WorkDone done;
  MCSIM_TRY(enqueue(st, op, &done));
  return op.callerWaits ? waitWork(done, st->ctx) : CUDA_SUCCESS;
}

// Copies on a stream of the calling thread's context, whose device's access rights apply.
CUresult contextTransfer(uint64_t dst, uint64_t src, size_t bytes, bool dstKnown, bool srcKnown, const Ordering& o) {
  StreamRef st;
  MCSIM_TRY(orderingStream(o, &st));
  const int dev = st->ctx->device;
  return transfer(dst, src, bytes, dstKnown, srcKnown, dev, dev, st.get(), o.async);
}

}  // namespace

CUresult copyHtoD(uint64_t dst, const void* src, size_t bytes, const Ordering& o) {
  return contextTransfer(dst, reinterpret_cast<uint64_t>(src), bytes, true, false, o);
}

CUresult copyDtoH(void* dst, uint64_t src, size_t bytes, const Ordering& o) {
  return contextTransfer(reinterpret_cast<uint64_t>(dst), src, bytes, false, true, o);
}

CUresult copyDtoD(uint64_t dst, uint64_t src, size_t bytes, const Ordering& o) {
  return contextTransfer(dst, src, bytes, true, true, o);
}

CUresult copyUnified(uint64_t dst, uint64_t src, size_t bytes, const Ordering& o) {
  return contextTransfer(dst, src, bytes, false, false, o);
}

CUresult copyPeer(uint64_t dst, CUcontext dstCtx, uint64_t src, CUcontext srcCtx, size_t bytes, const Ordering& o) {
  // NULL names the current context (the real driver accepts it); others must be contexts.
  if ((dstCtx != nullptr && !usableContext(dstCtx)) || (srcCtx != nullptr && !usableContext(srcCtx))) {
    return CUDA_ERROR_INVALID_CONTEXT;
  }
  StreamRef st;
  MCSIM_TRY(orderingStream(o, &st));
  CUresult r;
  const int current = currentDevice(&r);
  if (r != CUDA_SUCCESS) return r;
  // A peer copy reads with the source context's device and writes with the destination's.
  const int dstDevice = dstCtx != nullptr ? dstCtx->device : current;
  const int srcDevice = srcCtx != nullptr ? srcCtx->device : current;
  return transfer(dst, src, bytes, true, true, dstDevice, srcDevice, st.get(), o.async);
}

CUresult fill(uint64_t dst, uint32_t value, unsigned elementBytes, size_t count, const Ordering& o) {
  StreamRef st;
  MCSIM_TRY(orderingStream(o, &st));
  if (dst % elementBytes != 0) return CUDA_ERROR_INVALID_VALUE;
  if (count == 0) return CUDA_SUCCESS;
  if (!isDeviceAddress(dst)) return CUDA_ERROR_INVALID_VALUE;
  fabric::DeviceOp op;
  op.kind = fabric::DeviceOp::Kind::kFill;
  op.dst = dst;
  op.dstAccessor = st->ctx->device;
  op.value = value;
  op.elementBytes = elementBytes;
  op.count = count;
  op.callerWaits = !o.async;
  fabric::WorkDone done;
  MCSIM_TRY(enqueue(st.get(), op, &done));
  return op.callerWaits ? waitWork(done, st->ctx) : CUDA_SUCCESS;
}

}  // namespace mcsim::driver

using namespace mcsim::driver;

namespace {

// Freeing needs no current context (the real driver frees without one), but a current context
// that was destroyed is reported.
CUresult checkFreeContext() {
  CUctx_st* ctx = nullptr;
  const CUresult r = currentContext(&ctx);
  return r == CUDA_ERROR_CONTEXT_IS_DESTROYED ? r : CUDA_SUCCESS;
}

}  // namespace

extern "C" {

// The body of cuMemAlloc and cuMemAllocPitch (each consults the fault plan under its own name).
static CUresult allocLinear(CUdeviceptr* dptr, size_t bytesize) {
  CUctx_st* ctx = nullptr;
  MCSIM_TRY(currentContext(&ctx));
  if (bytesize == 0) return CUDA_ERROR_INVALID_VALUE;
  uint64_t va = 0;
  MCSIM_TRY(toResult(state().node->allocLinear(ctx->device, bytesize, &va)));
  {
    std::lock_guard<mcsim::OrderedMutex> lock(tables().mu);
    // Recorded only while the context lives (see ownedByLiveContext).
    if (usableContext(ctx)) {
      tables().linearOwner[va] = ctx;
      tables().ipcOpener.erase(va);  // an IPC mapping that was here went with its context
      *dptr = va;
      return CUDA_SUCCESS;
    }
  }
  state().node->freeLinear(va);
  return CUDA_ERROR_CONTEXT_IS_DESTROYED;
}

CUresult CUDAAPI cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytesize) {
  MCSIM_REQUIRE_INIT_ARGS({"bytesize", bytesize});
  if (dptr == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *dptr = 0;  // the real driver clears the pointer of a refused allocation (mem.alloc.size0)
  MCSIM_TRY(checkUnsafeCall());  // an allocation no capture can see (the reference's example)
  return allocLinear(dptr, bytesize);
}

// Rows padded to a multiple of 512 bytes, the pitch cudaMallocPitch hands out on Hopper for
// narrow rows (a row of 100 bytes gets 512).
CUresult CUDAAPI cuMemAllocPitch_v2(CUdeviceptr* dptr, size_t* pPitch, size_t WidthInBytes, size_t Height,
                                    unsigned int ElementSizeBytes) {
  MCSIM_REQUIRE_INIT();
  if (dptr == nullptr || pPitch == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (ElementSizeBytes != 4 && ElementSizeBytes != 8 && ElementSizeBytes != 16) return CUDA_ERROR_INVALID_VALUE;
  if (WidthInBytes == 0 || Height == 0) return CUDA_ERROR_INVALID_VALUE;
  constexpr size_t kPitchAlignment = 512;
  if (WidthInBytes > SIZE_MAX - kPitchAlignment) return CUDA_ERROR_INVALID_VALUE;
  const size_t pitch = (WidthInBytes + kPitchAlignment - 1) / kPitchAlignment * kPitchAlignment;
  if (Height > SIZE_MAX / pitch) return CUDA_ERROR_OUT_OF_MEMORY;
  MCSIM_TRY(allocLinear(dptr, pitch * Height));
  *pPitch = pitch;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemFree_v2(CUdeviceptr dptr) {
  MCSIM_REQUIRE_INIT();
  MCSIM_TRY(checkFreeContext());
  if (dptr == 0) return CUDA_SUCCESS;
  {
    std::lock_guard<mcsim::OrderedMutex> lock(tables().mu);
    if (tables().linearOwner.erase(dptr) == 0) {
      return MCSIM_REFUSE(CUDA_ERROR_INVALID_VALUE, "not an address cuMemAlloc returned, or freed already");
    }
  }
  return toResult(state().node->freeLinear(dptr));
}

CUresult CUDAAPI cuMemGetInfo_v2(size_t* free, size_t* total) {
  MCSIM_REQUIRE_INIT();
  if (free == nullptr || total == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUctx_st* ctx = nullptr;
  MCSIM_TRY(currentContext(&ctx));
  uint64_t f = 0, t = 0;
  MCSIM_TRY(toResult(state().node->memoryInfo(ctx->device, &f, &t)));
  *free = f;
  *total = t;
  return CUDA_SUCCESS;
}

// The body of cuMemHostAlloc and cuMemAllocHost. Each entry point consults the fault plan under
// its own name: cuMemAllocHost used to forward to cuMemHostAlloc, so a plan's cuMemAllocHost rule
// never fired and its calls counted as cuMemHostAlloc's.
static CUresult hostAlloc(void** pp, size_t bytesize, unsigned int Flags);

CUresult CUDAAPI cuMemHostAlloc(void** pp, size_t bytesize, unsigned int Flags) {
  MCSIM_REQUIRE_INIT();
  return hostAlloc(pp, bytesize, Flags);
}

CUresult CUDAAPI cuMemAllocHost_v2(void** pp, size_t bytesize) {
  MCSIM_REQUIRE_INIT();
  return hostAlloc(pp, bytesize, 0);
}

static CUresult hostAlloc(void** pp, size_t bytesize, unsigned int Flags) {
  if (pp == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if ((Flags & ~(CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_WRITECOMBINED)) != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  CUctx_st* ctx = nullptr;
  MCSIM_TRY(currentContext(&ctx));
  if (bytesize == 0) {
    *pp = nullptr;  // the real driver succeeds and hands back NULL
    return CUDA_SUCCESS;
  }
  // Host memory the node's kernels reach at the same address (on a shared node, in the segment
  // that the node maps too: docs/multiprocess.md).
  void* p = nullptr;
  if (state().node->allocHost(bytesize, &p) != mcsim::Status::kOk) return CUDA_ERROR_OUT_OF_MEMORY;
  const auto base = reinterpret_cast<uint64_t>(p);
  {
    std::lock_guard<mcsim::OrderedMutex> lock(tables().mu);
    // Recorded only while the context lives, as cuMemAlloc's memory (allocLinear).
    if (usableContext(ctx)) {
      // Buffer ids of host memory count down from the top, clear of the node's allocation ids.
      tables().host[base] = HostAllocation{base, bytesize, Flags, ctx, ~uint64_t{0} - tables().nextHostId++};
      *pp = p;
      return CUDA_SUCCESS;
    }
  }
  (void)state().node->freeHost(p);
  return CUDA_ERROR_CONTEXT_IS_DESTROYED;
}

CUresult CUDAAPI cuMemFreeHost(void* p) {
  MCSIM_REQUIRE_INIT();
  MCSIM_TRY(checkFreeContext());
  if (p == nullptr) return CUDA_SUCCESS;
  std::lock_guard<mcsim::OrderedMutex> lock(tables().mu);
  auto it = tables().host.find(reinterpret_cast<uint64_t>(p));
  if (it == tables().host.end() || it->second.registered) return CUDA_ERROR_INVALID_VALUE;
  (void)state().node->freeHost(p);
  tables().host.erase(it);
  return CUDA_SUCCESS;
}

// Host memory the program allocated itself, page-locked for the device: from then on copies treat
// it as pinned and pointer queries report it as host memory, as for cuMemHostAlloc's, and the
// embedded node's kernels reach it at its address (a shared node's cannot: docs/multiprocess.md).
CUresult CUDAAPI cuMemHostRegister_v2(void* p, size_t bytesize, unsigned int Flags) {
  MCSIM_REQUIRE_INIT();
  const unsigned known = CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP | CU_MEMHOSTREGISTER_IOMEMORY |
                         CU_MEMHOSTREGISTER_READ_ONLY;
  if (p == nullptr || bytesize == 0 || (Flags & ~known) != 0) return CUDA_ERROR_INVALID_VALUE;
  if ((Flags & CU_MEMHOSTREGISTER_IOMEMORY) != 0) return CUDA_ERROR_NOT_SUPPORTED;  // no device I/O memory here
  CUctx_st* ctx = nullptr;
  MCSIM_TRY(currentContext(&ctx));
  const auto base = reinterpret_cast<uint64_t>(p);
  if (base + bytesize < base) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<mcsim::OrderedMutex> lock(tables().mu);
  // Overlapping pinned memory of any kind refuses the registration.
  auto it = tables().host.lower_bound(base + bytesize);
  if (it != tables().host.begin() && std::prev(it)->second.base + std::prev(it)->second.size > base) {
    return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
  }
  // The node knows the range too, for the kernels' accesses (under the tables' lock, so that an
  // unregistration of the same range comes after it).
  const mcsim::Status s = state().node->registerHost(base, bytesize);
  if (s != mcsim::Status::kOk) return toResult(s);
  HostAllocation h{base, bytesize, Flags, ctx, ~uint64_t{0} - tables().nextHostId++};
  h.registered = true;
  tables().host[base] = h;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemHostUnregister(void* p) {
  MCSIM_REQUIRE_INIT();
  if (p == nullptr) return CUDA_ERROR_INVALID_VALUE;
  {
    std::lock_guard<mcsim::OrderedMutex> lock(tables().mu);
    auto it = tables().host.find(reinterpret_cast<uint64_t>(p));
    if (it == tables().host.end() || !it->second.registered) return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
    tables().host.erase(it);
  }
  // Once the node has forgotten it, no kernel reaches the pages (a warp turn in them ends first):
  // the program may free them. Not under the tables' lock: the node waits for that turn.
  return toResult(state().node->unregisterHost(reinterpret_cast<uint64_t>(p)));
}

CUresult CUDAAPI cuMemHostGetDevicePointer_v2(CUdeviceptr* pdptr, void* p, unsigned int Flags) {
  MCSIM_REQUIRE_INIT();
  if (pdptr == nullptr || Flags != 0) return CUDA_ERROR_INVALID_VALUE;
  HostAllocation h;
  if (!findHostAllocation(reinterpret_cast<uint64_t>(p), &h)) return CUDA_ERROR_INVALID_VALUE;
  *pdptr = reinterpret_cast<CUdeviceptr>(p);  // unified addressing: the same address
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemHostGetFlags(unsigned int* pFlags, void* p) {
  MCSIM_REQUIRE_INIT();
  if (pFlags == nullptr) return CUDA_ERROR_INVALID_VALUE;
  HostAllocation h;
  if (!findHostAllocation(reinterpret_cast<uint64_t>(p), &h)) return CUDA_ERROR_INVALID_VALUE;
  *pFlags = h.flags | CU_MEMHOSTALLOC_DEVICEMAP;
  return CUDA_SUCCESS;
}

}  // extern "C"

#include "driver/memops_entries.inc"

// The CUDA 2.0 cuMemAlloc, with a 32-bit device pointer, that cuGetProcAddress hands to a caller
// asking for a version before 3.2 as the real driver does (gpa.v2.cuMemAlloc.2000: its exported
// cuMemAlloc). No simulated device address fits in 32 bits, so it never succeeds.
#include "driver/abi_names.h"
#include "model/ordered_mutex.h"
extern "C" CUresult CUDAAPI cuMemAlloc(unsigned int* dptr, unsigned int bytesize) {
  MCSIM_REQUIRE_INIT();
  if (dptr == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUctx_st* ctx = nullptr;
  MCSIM_TRY(currentContext(&ctx));
  if (bytesize == 0) return CUDA_ERROR_INVALID_VALUE;
  return CUDA_ERROR_OUT_OF_MEMORY;
}
