// The node and its attached processes (node_host.h): the node-wide state (NodeHost::State) and
// each process's view of it (ProcessNode). The embedded node is a host with this process alone.
#include "fabric/node_host.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <set>
#include <unordered_map>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <map>
#include <mutex>
#include <optional>
#include <vector>

#include "fabric/node_model.h"
#include "fabric/unique_fd.h"
#include "model/reduction.h"
#include "model/digest.h"
#include "model/engine.h"
#include "model/lazy_region.h"

namespace mcsim::fabric {

namespace {

using model::AddressSpace;
using model::AllocId;
using model::Segment;

// cuMemAlloc hands out whole granules; its ranges and mappings are aligned to this.
constexpr uint64_t kLinearGranule = 2ull << 20;
// Handle values are small, distinct from any address, and never reused within a process.
constexpr uint64_t kHandleBase = 0x1000;
constexpr uint64_t kHandleStride = 0x10;
// A FABRIC handle: magic, node identity, allocation id, and a check value.
constexpr char kFabricMagic[8] = {'m', 'c', 's', 'i', 'm', 'F', 'A', 'B'};

bool envFlag(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' && std::string(v) != "0";
}

uint64_t envUnsigned(const char* name, uint64_t dflt) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return dflt;
  char* end = nullptr;
  const unsigned long long x = std::strtoull(v, &end, 10);
  return end != nullptr && *end == '\0' ? x : dflt;
}

// How an allocation was made: by cuMemCreate, by cuMemAlloc, or from a stream-ordered pool.
enum class AllocKind { kVmm, kLinear, kPooled };

struct Allocation {
  AllocId id = 0;
  AllocationProps props;
  AllocKind kind = AllocKind::kVmm;
  uint64_t requested = 0;  // what cuMemAlloc or the pool was asked for
  uint64_t refs = 0;             // live handle values + mappings + bindings, in every process
  bool heldByDescriptors = false;  // no refs left, but an exported descriptor is still open
  std::shared_ptr<model::LazyRegion> region;  // made on first write; device work in flight shares it
};

struct HandleEntry {
  AllocId alloc = 0;
  uint64_t refs = 0;
  bool imported = false;
};

struct FileKey {
  uint64_t dev;
  uint64_t ino;
  bool operator<(const FileKey& o) const { return dev != o.dev ? dev < o.dev : ino < o.ino; }
};

// An exported descriptor. The node cannot see every process's descriptor table (a descriptor
// may be open in a process that never attached, or be in flight in a Unix socket), so the export
// carries a lock that tells: an open-file-description lock taken on the exported descriptor is
// held for as long as any copy of it (dup, fork, SCM_RIGHTS, pidfd_getfd) is open anywhere, and
// `probe`, a second description of the same file that the node keeps, sees whether it is.
struct ExportRecord {
  uint64_t object = 0;
  UniqueFd probe;
};

// Whether the lock of an export is still held, i.e. a copy of the exported descriptor is open.
bool descriptorOpen(const ExportRecord& e) {
  struct flock l {};
  l.l_type = F_RDLCK;
  l.l_whence = SEEK_SET;
  l.l_len = 1;
  if (fcntl(e.probe.get(), F_OFD_GETLK, &l) != 0) return true;  // cannot tell: keep the memory
  return l.l_type != F_UNLCK;
}

template <typename Map>
std::vector<typename Map::key_type> sortedKeys(const Map& m) {
  std::vector<typename Map::key_type> keys;
  keys.reserve(m.size());
  for (const auto& kv : m) keys.push_back(kv.first);
  std::sort(keys.begin(), keys.end());
  return keys;
}

class ProcessNode;

}  // namespace

// What is node-wide. Every field is guarded by `mu`, but the atomics.
struct NodeHost::State {
  State(Preset p, HangPolicy policy)
      : preset(std::move(p)),
        deviceUsed(static_cast<size_t>(preset.gpuCount), 0),
        hostUsed(static_cast<size_t>(preset.hostNumaNodes), 0),
        fabric(preset),
        waiter(policy),
        model(std::make_shared<NodeModel>(preset)),
        functional(!envFlag("MCSIM_TIMING_ONLY")),
        pollIntervalPs(envUnsigned("MCSIM_HOST_POLL_NS", 1000) * 1000) {
    imexPresent.store(preset.imexChannel);
    // Fault plans may deny switch group slots (the multicast-slot point).
    fabric.setSlotVeto([this] {
      FaultEvent e;
      e.point = FaultPointKind::kMulticastSlot;
      // The rank of the bind that asks for the slot (it went through onEntry first), so that
      // rank= filters on multicast-slot rules match; they never did with the rank left unset.
      e.rank = faultRank;
      if (injector.usesTime()) e.nowPs = model::Engine::instance().nowPs();
      const auto fired = injector.consult(e);
      return fired && injector.rule(*fired).action == FaultActionKind::kExhaust;
    });
  }

  Preset preset;
  std::mutex mu;
  // The order requests are taken in (a shared node's; the embedded node's calls carry no
  // Request, and pass straight through).
  AdmissionOrder admission;
  // The node's lock for a request. Taking a request in pins it to the simulation's runs
  // (fabric/admission.h); the pin ends with the lock scope it was taken in, or when the request
  // begins to wait (for device work, a team, a fault hold), whichever comes first.
  class RequestLock : public std::unique_lock<std::mutex> {
   public:
    explicit RequestLock(std::mutex& m) : std::unique_lock<std::mutex>(m) {}
    RequestLock(RequestLock&&) = default;
    ~RequestLock() {
      if (owns_lock()) model::Engine::release();
    }
  };
  // Locks the node for the current request, taking it in first if it has not been.
  RequestLock enter() {
    RequestLock lock(mu);
    admission.admit(lock);
    return lock;
  }
  // For calls that need no lock of their own (the clock, waits): takes the current request in,
  // and keeps it pinned past the node's lock until the call's own engine step (a wait or an
  // advance releases it once it waits) or the end of the returned scope. Nothing at all for the
  // embedded node's calls, which are no requests.
  struct PinnedAdmission {
    PinnedAdmission() = default;
    PinnedAdmission(const PinnedAdmission&) = delete;
    PinnedAdmission& operator=(const PinnedAdmission&) = delete;
    ~PinnedAdmission() { model::Engine::release(); }
  };
  [[nodiscard]] std::optional<PinnedAdmission> admitRequest() {
    if (currentRequest() == nullptr) return std::nullopt;
    std::unique_lock<std::mutex> lock(mu);
    admission.admit(lock);
    return std::optional<PinnedAdmission>(std::in_place);
  }
  // Hash maps: lookups stay flat however many objects live. Nothing iterates them where order
  // could show, except digests, which sort their keys (sortedKeys).
  std::unordered_map<AllocId, Allocation> allocs;
  std::set<uint64_t> held;  // objects that only exported descriptors keep
  std::map<FileKey, ExportRecord> exports;   // exported memfds -> object
  std::vector<uint64_t> deviceUsed;
  std::vector<uint64_t> hostUsed;
  AllocId nextAlloc = 0;
  FabricManager fabric;
  TeamWaiter waiter;
  FaultInjector injector;
  std::atomic<bool> faultsActive{false};
  // Whether an IMEX channel exists: the preset's answer until a fault plan changes it. Atomic,
  // since the driver asks without the node's lock.
  std::atomic<bool> imexPresent{false};
  int faultRank = -1;  // MCSIM_RANK as the driver last passed it to onEntry
  std::set<int> linksDown;  // GPUs whose NVLinks a fault plan took down
  bool switchDown = false;
  std::shared_ptr<NodeModel> model;  // the timing model; work in flight shares it
  std::once_flag stallPolicySet;     // the engine's stall report is this node's (waitFor)
  uint64_t identity = 0;  // in FABRIC handles, so that another node's are refused (0: embedded)
  bool functional;                   // false: timing only (MCSIM_TIMING_ONLY=1), no data moves
  uint64_t pollIntervalPs;           // how far a query that finds work unfinished lets time run
  // The attached processes, by the number each got when it attached (ordered: digests walk it).
  std::map<uint64_t, ProcessNode*> processes;
  uint64_t nextProcess = 0;

  // Node-wide bookkeeping, under `mu`; any attached process's call may run it.
  uint64_t* usedFor(const Location& loc, uint64_t* capacity) {
    if (loc.kind == LocationKind::kDevice) {
      *capacity = preset.gpu.memoryBytes;
      return &deviceUsed[static_cast<size_t>(loc.id)];
    }
    *capacity = preset.hostMemoryBytesPerNumaNode;
    // Plain host memory (no NUMA node named) is charged to node 0.
    return &hostUsed[loc.kind == LocationKind::kHost ? 0 : static_cast<size_t>(loc.id)];
  }

  Status newAllocation(const AllocationProps& props, AllocKind kind, uint64_t requested, AllocId* id) {
    const bool device = props.location.kind == LocationKind::kDevice;
    const int limit = device ? preset.gpuCount : preset.hostNumaNodes;
    if (props.location.kind != LocationKind::kHost && (props.location.id < 0 || props.location.id >= limit)) {
      return device ? Status::kInvalidDevice : Status::kInvalidValue;
    }
    uint64_t capacity = 0;
    uint64_t* used = usedFor(props.location, &capacity);
    if (props.size > capacity - *used) return Status::kOutOfMemory;
    *used += props.size;
    Allocation a;
    a.id = ++nextAlloc;
    a.props = props;
    a.kind = kind;
    a.requested = requested;
    a.refs = 1;
    *id = a.id;
    allocs.emplace(a.id, std::move(a));
    return Status::kOk;
  }

  void dropRef(uint64_t id) {
    if (!objectExists(id)) return;
    const ObjectView o = objectOf(id);
    if (--*o.refs != 0) return;
    if (exportStillOpen(id)) {
      *o.heldByDescriptors = true;
      held.insert(id);
    } else {
      destroyObject(id);
    }
  }

  // Whether a descriptor exported for `id` is still open somewhere.
  bool exportStillOpen(uint64_t id) const {
    for (const auto& [key, e] : exports) {
      if (e.object == id && descriptorOpen(e)) return true;
    }
    return false;
  }

  // Frees allocations that only exported descriptors kept, once those are all closed.
  // Costs nothing while no object is held that way, so calls can afford it.
  void sweepHeldAllocations() {
    std::vector<uint64_t> done;
    for (uint64_t id : held) {
      if (!exportStillOpen(id)) done.push_back(id);
    }
    for (uint64_t id : done) destroyObject(id);
  }


  // A view of the bookkeeping that allocations and multicast objects share.
  struct ObjectView {
    uint64_t* refs;
    bool* heldByDescriptors;
    uint32_t handleTypes;
  };
  bool objectExists(uint64_t id) const {
    return isMulticastId(id) ? fabric.find(id) != nullptr : allocs.count(id) != 0;
  }
  ObjectView objectOf(uint64_t id) {
    if (isMulticastId(id)) {
      MulticastObject& mc = *fabric.find(id);
      return {&mc.refs, &mc.heldByDescriptors, mc.props.handleTypes};
    }
    Allocation& a = allocs.at(id);
    return {&a.refs, &a.heldByDescriptors, a.props.handleTypes};
  }

  // Forgets an object whose last reference is gone: its export records, every process's handle
  // value for it, and (a multicast object) its bindings' references.
  void destroyObject(uint64_t id);

  void destroyAllocation(AllocId id) {
    auto it = allocs.find(id);
    uint64_t capacity = 0;
    *usedFor(it->second.props.location, &capacity) -= it->second.props.size;
    if (it->second.props.location.kind == LocationKind::kDevice) model->forget(it->second.props.location.id, id);
    allocs.erase(it);  // unmaps the backing region, giving its pages back
  }

  void installPlan(std::vector<FaultRule> rules, uint64_t seed) {
    injector = FaultInjector(std::move(rules), seed);
    faultsActive.store(!injector.empty(), std::memory_order_release);
  }
  // Counts of the whole node: every process's handles, reservations and mappings together.
  NodeStats collectStats() const;
};

namespace {

class ProcessNode final : public AttachedNode {
  friend struct NodeHost::State;

 public:
  ProcessNode(std::shared_ptr<NodeHost::State> state, uint64_t vaBase)
      : state_(std::move(state)),
        n_(*state_),
        vaBase_(vaBase),
        space_(vaBase_, kDeviceWindowSize - kLinearGranule, n_.preset.gpuCount) {
    std::lock_guard<std::mutex> lock(n_.mu);
    number_ = ++n_.nextProcess;
    n_.processes[number_] = this;
    n_.waiter.progress();  // one more process whose threads may add a device
  }

  // Detaching: the process gives back everything it held, as a real process does when it exits
  // or dies. Calls it was waiting in are over (a dead process's were abandoned first).
  ~ProcessNode() override {
    std::lock_guard<std::mutex> lock(n_.mu);
    // Its bindings first (each holds a reference on the bound memory) ...
    for (const MulticastBinding& b : n_.fabric.unbindOwnedBy(number_)) n_.dropRef(b.alloc);
    // ... then its mappings (cuMemAlloc and pool memory among them) ...
    std::vector<AllocId> mapped;
    space_.forEachMapping([&](const model::Mapping& m) { mapped.push_back(m.alloc); });
    for (AllocId id : mapped) n_.dropRef(id);
    // ... and its handle values.
    for (uint64_t value : sortedKeys(handles_)) n_.dropRef(handles_.at(value).alloc);
    handles_.clear();
    n_.processes.erase(number_);
    // Memory only descriptors kept may have lost its last descriptor with the process.
    n_.sweepHeldAllocations();
    n_.waiter.progress();  // teams it held may be gone; waiters look again
  }

  const Preset& preset() const override { return n_.preset; }
  uint64_t vaBase() const override { return vaBase_; }
  uint64_t vaLimit() const override { return space_.limit(); }

  Status createAllocation(const AllocationProps& props, uint64_t* handle) override {
    auto lock = n_.enter();
    n_.sweepHeldAllocations();  // memory kept only by closed descriptors counts no more
    AllocId id = 0;
    Status s = n_.newAllocation(props, AllocKind::kVmm, 0, &id);
    if (s != Status::kOk) return s;
    *handle = newHandle(id, false);
    return Status::kOk;
  }

  Status releaseHandle(uint64_t handle) override {
    auto lock = n_.enter();
    auto it = handles_.find(handle);
    if (it == handles_.end()) return Status::kInvalidValue;
    if (--it->second.refs == 0) {
      const AllocId alloc = it->second.alloc;
      handles_.erase(it);
      n_.dropRef(alloc);
    }
    n_.waiter.progress();
    return Status::kOk;
  }

  Status handleProps(uint64_t handle, AllocationProps* props) override {
    auto lock = n_.enter();
    auto it = handles_.find(handle);
    if (it == handles_.end()) {
      // The real driver's handle is its allocation object, so a value whose every reference was
      // released still answers while a mapping keeps the allocation
      // (vmm.retain.props_after_all_released_still_mapped, vmm.data.release_mapped.*).
      for (const auto& [id, first] : firstHandles_) {
        if (first != handle || isMulticastId(id)) continue;
        auto a = n_.allocs.find(id);
        if (a == n_.allocs.end() || a->second.refs == 0) break;
        *props = a->second.props;
        return Status::kOk;
      }
      return Status::kInvalidValue;
    }
    if (isMulticastId(it->second.alloc)) return Status::kInvalidValue;  // no allocation properties
    *props = n_.allocs.at(it->second.alloc).props;
    if (it->second.imported) props->handleTypes = 0;
    return Status::kOk;
  }

  Status retainHandleAt(uint64_t va, uint64_t* handle) override {
    auto lock = n_.enter();
    const model::Mapping* m = space_.mappingContaining(va);
    if (m == nullptr) return Status::kInvalidValue;
    // Only cuMemCreate memory has a handle to retain.
    if (!isMulticastId(m->alloc) && n_.allocs.at(m->alloc).kind != AllocKind::kVmm) return Status::kInvalidValue;
    // The real driver answers with the handle value the allocation was first known by, even
    // after the program released it (the mapping kept the allocation alive).
    // (The process had a handle for it, or it could not have mapped it.)
    const uint64_t first = firstHandles_.at(m->alloc);
    auto h = handles_.find(first);
    if (h != handles_.end()) {
      ++h->second.refs;
    } else {
      handles_[first] = HandleEntry{m->alloc, 1, false};
      ++*n_.objectOf(m->alloc).refs;
    }
    *handle = first;
    return Status::kOk;
  }

  Status exportPosixFd(uint64_t handle, int* fd) override {
    auto lock = n_.enter();
    auto it = handles_.find(handle);
    if (it == handles_.end()) return Status::kInvalidValue;
    const uint64_t id = it->second.alloc;
    if ((n_.objectOf(id).handleTypes & kHandlePosixFd) == 0) return Status::kInvalidValue;
    // A real descriptor: a sealed memfd whose content names the node's object.
    char name[64];
    std::snprintf(name, sizeof name, "mcsim-%s-%llu", isMulticastId(id) ? "multicast" : "allocation",
                  static_cast<unsigned long long>(id & ~kMulticastIdBit));
    UniqueFd f(memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING));
    if (!f) return Status::kOutOfMemory;
    char body[96];
    const int n = std::snprintf(body, sizeof body, "mcsim shareable v1 object %llu\n",
                                static_cast<unsigned long long>(id));
    struct stat st {};
    if (::write(f.get(), body, static_cast<size_t>(n)) != n || fstat(f.get(), &st) != 0) return Status::kOutOfMemory;
    fcntl(f.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL);
    // The lock that says whether a copy of the descriptor is still open (ExportRecord), and the
    // node's own description of the file to look at it through.
    struct flock lk {};
    lk.l_type = F_WRLCK;
    lk.l_whence = SEEK_SET;
    lk.l_len = 1;
    const std::string self = "/proc/self/fd/" + std::to_string(f.get());
    UniqueFd probe(open(self.c_str(), O_RDONLY | O_CLOEXEC));
    if (fcntl(f.get(), F_OFD_SETLK, &lk) != 0 || !probe) return Status::kOutOfMemory;
    n_.exports[FileKey{static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino)}] =
        ExportRecord{id, std::move(probe)};
    *fd = f.release();
    return Status::kOk;
  }

  Status importPosixFd(int fd, uint64_t* handle) override {
    struct stat st {};
    if (fd < 0 || fstat(fd, &st) != 0) return Status::kNotShareable;
    return importPosixFile(static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino), handle);
  }

  Status importPosixFile(uint64_t dev, uint64_t ino, uint64_t* handle) override {
    auto lock = n_.enter();
    auto it = n_.exports.find(FileKey{dev, ino});
    if (it == n_.exports.end()) return Status::kNotShareable;
    const uint64_t id = it->second.object;
    const auto o = n_.objectOf(id);
    *o.heldByDescriptors = false;
    n_.held.erase(id);
    ++*o.refs;
    *handle = newHandle(id, true);
    return Status::kOk;
  }

  Status exportFabric(uint64_t handle, uint8_t out[64]) override {
    auto lock = n_.enter();
    auto it = handles_.find(handle);
    if (it == handles_.end()) return Status::kInvalidValue;
    const uint64_t id = it->second.alloc;
    if ((n_.objectOf(id).handleTypes & kHandleFabric) == 0) return Status::kInvalidValue;
    if (!n_.imexPresent.load()) return Status::kNotPermitted;
    std::memset(out, 0, 64);
    std::memcpy(out, kFabricMagic, 8);
    std::memcpy(out + 8, &id, 8);
    const uint64_t check = fabricCheck(id);
    std::memcpy(out + 16, &check, 8);
    std::memcpy(out + 24, &n_.identity, 8);
    return Status::kOk;
  }

  Status importFabric(const uint8_t in[64], uint64_t* handle) override {
    auto lock = n_.enter();
    if (!n_.imexPresent.load()) return Status::kNotPermitted;
    AllocId id = 0;
    uint64_t check = 0, identity = 0;
    std::memcpy(&id, in + 8, 8);
    std::memcpy(&check, in + 16, 8);
    std::memcpy(&identity, in + 24, 8);
    // Bytes that this node never exported (forged, or another node's) name nothing.
    if (std::memcmp(in, kFabricMagic, 8) != 0 || check != fabricCheck(id) || identity != n_.identity) {
      return Status::kInvalidValue;
    }
    if (!n_.objectExists(id) || (n_.objectOf(id).handleTypes & kHandleFabric) == 0) return Status::kInvalidValue;
    const auto o = n_.objectOf(id);
    *o.heldByDescriptors = false;
    n_.held.erase(id);
    ++*o.refs;
    *handle = newHandle(id, true);
    return Status::kOk;
  }

  Status reserve(uint64_t size, uint64_t alignment, uint64_t hint, uint64_t* va) override {
    auto lock = n_.enter();
    return space_.reserve(size, alignment, hint, false, va);
  }

  Status freeReservation(uint64_t va, uint64_t size) override {
    auto lock = n_.enter();
    const model::Reservation* r = space_.reservationContaining(va);
    if (r == nullptr || r->internal) return Status::kInvalidValue;
    return space_.free(va, size);
  }

  Status map(uint64_t va, uint64_t size, uint64_t offset, uint64_t handle) override {
    auto lock = n_.enter();
    auto h = handles_.find(handle);
    if (h == handles_.end()) return Status::kInvalidValue;
    if (isMulticastId(h->second.alloc)) return mapMulticast(lock, va, size, offset, h->second.alloc);
    Allocation& a = n_.allocs.at(h->second.alloc);
    // The real driver maps only a whole allocation, from its start.
    if (offset != 0 || size != a.props.size) return Status::kNotSupported;
    const model::Reservation* r = space_.reservationContaining(va);
    if (r != nullptr && r->internal) return Status::kInvalidValue;
    Status s = space_.map(va, size, a.id, offset);
    if (s != Status::kOk) return s;
    ++a.refs;
    return Status::kOk;
  }

  Status unmap(uint64_t va, uint64_t size) override {
    auto lock = n_.enter();
    const model::Reservation* r = space_.reservationContaining(va);
    if (r == nullptr || r->internal) return Status::kInvalidValue;
    std::vector<model::Mapping> removed;
    Status s = space_.unmap(va, size, &removed);
    if (s != Status::kOk) return s;
    for (const auto& m : removed) n_.dropRef(m.alloc);
    return Status::kOk;
  }

  Status setAccess(uint64_t va, uint64_t size, int device, Access access) override {
    auto lock = n_.enter();
    const model::Reservation* r = space_.reservationContaining(va);
    if (r != nullptr && r->internal) return Status::kInvalidValue;
    return space_.setAccess(va, size, device, access);
  }

  Status getAccess(uint64_t va, int device, Access* access) override {
    auto lock = n_.enter();
    const model::Mapping* m = space_.mappingContaining(va);
    if (m == nullptr || device < 0 || device >= n_.preset.gpuCount) return Status::kInvalidValue;
    *access = m->access[static_cast<size_t>(device)];
    return Status::kOk;
  }

  Status allocLinear(int device, uint64_t size, uint64_t* va) override {
    auto lock = n_.enter();
    if (device < 0 || device >= n_.preset.gpuCount) return Status::kInvalidDevice;
    AllocationProps props;
    props.location = Location{LocationKind::kDevice, device};
    // Every device's copy engines reach cuMemAlloc memory.
    std::vector<int> everyDevice;
    for (int d = 0; d < n_.preset.gpuCount; ++d) everyDevice.push_back(d);
    return allocInternal(props, size, AllocKind::kLinear, everyDevice, va);
  }

  Status freeLinear(uint64_t va) override {
    auto lock = n_.enter();
    return freeInternal(va, AllocKind::kLinear);
  }

  Status allocPooled(const AllocationProps& props, uint64_t size, const std::vector<int>& accessors,
                     uint64_t* va) override {
    auto lock = n_.enter();
    return allocInternal(props, size, AllocKind::kPooled, accessors, va);
  }

  Status freePooled(uint64_t va) override {
    auto lock = n_.enter();
    return freeInternal(va, AllocKind::kPooled);
  }

  Status setPooledAccess(uint64_t va, int device, Access access) override {
    auto lock = n_.enter();
    auto it = internal_.find(va);
    if (it == internal_.end() || n_.allocs.at(it->second).kind != AllocKind::kPooled) return Status::kInvalidValue;
    return space_.setAccess(va, n_.allocs.at(it->second).props.size, device, access);
  }

  Status pointerInfo(uint64_t va, int device, PointerInfo* info) override {
    auto lock = n_.enter();
    *info = PointerInfo{};
    const model::Mapping* m = space_.mappingContaining(va);
    if (m == nullptr) return Status::kOk;
    const model::Reservation* r = space_.reservationContaining(va);
    if (isMulticastId(m->alloc)) {
      const MulticastObject& mc = *n_.fabric.find(m->alloc);
      info->mapped = true;
      info->location = Location{LocationKind::kDevice, -1};  // every member's memory at once
      info->allocationId = mc.id;
      info->handleTypes = mc.props.handleTypes;
      info->mappingBase = m->va;
      info->mappingSize = m->size;
      info->reservationBase = r != nullptr ? r->va : 0;
      info->reservationSize = r != nullptr ? r->size : 0;
      if (device >= 0 && device < n_.preset.gpuCount) info->access = m->access[static_cast<size_t>(device)];
      return Status::kOk;
    }
    const Allocation& a = n_.allocs.at(m->alloc);
    info->mapped = true;
    info->linear = a.kind == AllocKind::kLinear;
    info->pooled = a.kind == AllocKind::kPooled;
    info->location = a.props.location;
    info->allocationId = a.id;
    info->handleTypes = a.props.handleTypes;
    info->gpuDirectRdmaCapable = a.kind == AllocKind::kLinear || a.props.gpuDirectRdmaCapable;
    info->mappingBase = m->va;
    info->mappingSize = m->size;
    // A mapping may run past its reservation's end (the real driver allows it); then the
    // address is in no reservation.
    info->reservationBase = r != nullptr ? r->va : 0;
    info->reservationSize = r != nullptr ? r->size : 0;
    info->requestedSize = a.requested;
    if (device >= 0 && device < n_.preset.gpuCount) info->access = m->access[static_cast<size_t>(device)];
    return Status::kOk;
  }

  Status memoryInfo(int device, uint64_t* free, uint64_t* total) override {
    auto lock = n_.enter();
    if (device < 0 || device >= n_.preset.gpuCount) return Status::kInvalidDevice;
    *total = n_.preset.gpu.memoryBytes;
    *free = *total - n_.deviceUsed[static_cast<size_t>(device)];
    return Status::kOk;
  }

  Status submit(const DeviceOp& op, const std::vector<WorkDone>& after, WorkDone* done) override {
    auto work = std::make_shared<DeviceWork>();
    auto lock = n_.enter();
    const Status s = planWork(op, work.get());
    if (s != Status::kOk) return s;
    // Submitted under the lock: the engine admits work in the order the node accepted it.
    *done = n_.model->submit(std::move(work), after);
    return Status::kOk;
  }

  uint64_t waitFor(const WorkDone& w) override {
    const auto pinned = n_.admitRequest();  // taken in like any request; the wait itself is outside the lock
    model::Engine& engine = model::Engine::instance();
    // The engine reports device work that can never finish (a kernel barrier a GPU never joins)
    // with the hang policy of team waits and the kernels this node has waiting.
    std::call_once(n_.stallPolicySet, [&] {
      model::Engine::StallPolicy p;
      p.graceSeconds = n_.waiter.policy().graceSeconds;
      p.abortOnHang = n_.waiter.policy().abortOnHang;
      p.describe = [m = std::weak_ptr<NodeModel>(n_.model)] {
        const auto model = m.lock();
        return model ? model->describeWaitingKernels() : std::string();
      };
      engine.setStallPolicy(std::move(p));
    });
    return engine.wait(w, abandoned_.get());
  }

  size_t abandonWaits(int pid) override {
    abandoned_->store(true);
    size_t stopped = 0;
    if (model::Engine::exists()) {
      model::Engine::instance().wakeWaiters();
      stopped = n_.model->stopKernels(abandoned_);
    }
    std::lock_guard<std::mutex> lock(n_.mu);
    n_.waiter.abandon(pid);
    return stopped;
  }

  bool poll(const WorkDone& w) override {
    const auto pinned = n_.admitRequest();
    model::Engine& engine = model::Engine::instance();
    engine.settle();  // done or not as of the request's run
    if (w->done()) return true;
    engine.advance(n_.pollIntervalPs, w);
    return false;
  }

  uint64_t nowPs() override {
    const auto pinned = n_.admitRequest();  // a clock read is a request like any other: where it falls decides what it reads
    return model::Engine::instance().nowPs();
  }
  Status advanceTime(uint64_t ps, uint64_t* reachedPs) override {
    const auto pinned = n_.admitRequest();
    *reachedPs = model::Engine::instance().advance(ps);
    return Status::kOk;
  }
  bool isDone(const WorkDone& w) override {
    const auto pinned = n_.admitRequest();
    model::Engine::instance().settle();  // done or not as of the request's run
    return w->done();
  }

  Status multicastCreate(const MulticastProps& props, uint64_t* handle) override {
    auto lock = n_.enter();
    uint64_t id = 0;
    Status s = n_.fabric.create(props, &id);
    if (s != Status::kOk) return s;
    *handle = newHandle(id, false);
    return Status::kOk;
  }

  Status multicastAddDevice(uint64_t handle, int device) override {
    auto lock = n_.enter();
    MulticastObject* mc = multicastOf(handle);
    if (mc == nullptr) return Status::kInvalidValue;
    Status s = n_.fabric.addDevice(*mc, device);
    if (s == Status::kOk) n_.waiter.progress();  // a bind or map may be waiting for this device
    return s;
  }

  Status multicastBindMem(uint64_t mcHandle, int device, uint64_t mcOffset, uint64_t memHandle,
                          uint64_t memOffset, uint64_t size) override {
    auto lock = n_.enter();
    // The memory is named by handle; it is looked up again after any wait, since another
    // thread may release it meanwhile.
    auto source = [&](BindSource* src) {
      auto h = handles_.find(memHandle);
      if (h == handles_.end() || isMulticastId(h->second.alloc)) return Status::kInvalidValue;
      return bindSourceOf(h->second.alloc, memOffset, size, src);
    };
    return bind(lock, "cuMulticastBindMem", mcHandle, device, mcOffset, size, source);
  }

  Status multicastBindAddr(uint64_t mcHandle, int device, uint64_t mcOffset, uint64_t va,
                           uint64_t size) override {
    auto lock = n_.enter();
    auto source = [&](BindSource* src) {
      // The range must lie in one mapping of memory from cuMemCreate or a pool; cuMemAlloc
      // memory is refused (the reference names cuMemCreate and cudaMallocAsync only).
      const model::Mapping* m = space_.mappingContaining(va);
      if (m == nullptr || isMulticastId(m->alloc) || size > m->va + m->size - va) return Status::kInvalidValue;
      if (n_.allocs.at(m->alloc).kind == AllocKind::kLinear) return Status::kInvalidValue;
      return bindSourceOf(m->alloc, m->allocOffset + (va - m->va), size, src);
    };
    return bind(lock, "cuMulticastBindAddr", mcHandle, device, mcOffset, size, source);
  }

  Status multicastUnbind(uint64_t mcHandle, int device, uint64_t mcOffset, uint64_t size) override {
    auto lock = n_.enter();
    MulticastObject* mc = multicastOf(mcHandle);
    if (mc == nullptr) return Status::kInvalidValue;
    if (mcOffset > mc->props.size || size > mc->props.size - mcOffset) return Status::kInvalidValue;
    MulticastBinding removed;
    Status s = n_.fabric.unbind(*mc, device, mcOffset, size, &removed);
    if (s != Status::kOk) return s;
    n_.dropRef(removed.alloc);
    return Status::kOk;
  }

  FabricManagerState fabricManagerState() override {
    auto lock = n_.enter();
    return n_.fabric.state();
  }

  void setFabricManagerState(FabricManagerState state) override {
    auto lock = n_.enter();
    n_.fabric.setState(state);
    n_.waiter.progress();
  }

  bool faultsActive() const override { return n_.faultsActive.load(std::memory_order_acquire); }

  FaultOutcome onEntry(const char* symbol, int device, int rank, const FaultArgument* args,
                       size_t argCount, bool fabricMoment) override {
    auto lock = n_.enter();
    FaultOutcome out;
    if (n_.injector.empty()) return out;
    n_.faultRank = rank;
    FaultEvent e;
    e.rank = rank;
    if (n_.injector.usesTime()) e.nowPs = model::Engine::instance().nowPs();
    // Fabric-level rules see every driver call that acts on the node as a moment at which they
    // may fire.
    for (FaultPointKind p : {FaultPointKind::kFabricManager, FaultPointKind::kImex, FaultPointKind::kLink,
                             FaultPointKind::kSwitch}) {
      if (!fabricMoment) break;
      e.point = p;
      if (auto i = n_.injector.consult(e)) applyFabricRule(n_.injector.rule(*i));
    }
    e.point = FaultPointKind::kEntryPoint;
    e.entry = FaultInjector::baseName(symbol);
    e.device = device;
    e.args = args;
    e.argCount = argCount;
    const auto fired = n_.injector.consult(e);
    if (!fired) return out;
    const FaultRule& r = n_.injector.rule(*fired);
    switch (r.action) {
      case FaultActionKind::kReturn:
        // "delay 7s return ...": the call takes its time before it fails (a stalled manager).
        if (r.timePs > 0) delay(r.timePs);
        out.fail = true;
        out.result = r.result;
        return out;
      case FaultActionKind::kRelease:
        n_.injector.release(r.label);
        n_.waiter.progress();
        return out;
      case FaultActionKind::kDelay:
        delay(r.timePs);
        return out;
      case FaultActionKind::kBlock:
        return block(r, symbol, device, lock);
      default:
        return out;
    }
  }

  void installFaultPlan(std::vector<FaultRule> rules, uint64_t seed) override {
    auto lock = n_.enter();
    n_.installPlan(std::move(rules), seed);
  }

  void releaseFault(const std::string& label) override {
    auto lock = n_.enter();
    n_.injector.release(label);
    n_.waiter.progress();
  }

  std::vector<FaultRuleCounts> faultCounts() override {
    auto lock = n_.enter();
    return n_.injector.counts();
  }

  std::vector<FaultRule> faultRules() override {
    auto lock = n_.enter();
    return n_.injector.rules();
  }

  bool imexChannelPresent() const override { return n_.imexPresent.load(); }

  bool nvlinkUp(int gpu) override {
    auto lock = n_.enter();
    return n_.linksDown.count(gpu) == 0;
  }

  uint64_t stateDigest() override {
    auto lock = n_.enter();
    // An allocation that only a since-closed descriptor kept is already gone in fact (the close
    // happened outside mcsim); sweep it first, so that no later call appears to change state.
    n_.sweepHeldAllocations();
    model::Digest d;
    d.add(n_.nextAlloc);
    d.add(n_.allocs.size());
    for (AllocId id : sortedKeys(n_.allocs)) {
      const Allocation& a = n_.allocs.at(id);
      d.add(id).add(a.refs).add(static_cast<uint64_t>(a.kind)).add(a.props.size).add(a.props.handleTypes);
      d.add(a.heldByDescriptors ? 1 : 0);
      d.add(static_cast<uint64_t>(a.props.location.kind)).add(static_cast<uint64_t>(a.props.location.id));
    }
    d.add(n_.exports.size());
    for (const auto& [key, e] : n_.exports) d.add(e.object);
    for (uint64_t u : n_.deviceUsed) d.add(u);
    for (uint64_t u : n_.hostUsed) d.add(u);
    n_.fabric.addToDigest(d);
    // Every attached process's part, in the order they attached.
    d.add(n_.processes.size());
    for (const auto& [number, p] : n_.processes) p->addProcessDigest(d);
    return d.value();
  }

  NodeStats stats() override {
    auto lock = n_.enter();
    n_.sweepHeldAllocations();
    return n_.collectStats();
  }

 private:
  // A `delay` (or the delay of "delay T return ...") : simulated time passes for the call. Timed
  // blocks may end meanwhile, so waiters look again.
  void delay(uint64_t ps) {
    model::Engine::instance().run([ps] { return ps; });
    n_.waiter.progress();
  }

  // A call held by a `block` rule: until its label is released (a release rule, the API), or
  // simulated time reaches the rule's until= (for=: that long after the call arrived), whichever
  // comes first; or until the wait is given up as a deadlock or hang.
  FaultOutcome block(const FaultRule& r, const char* symbol, int device, std::unique_lock<std::mutex>& lock) {
    FaultOutcome out;
    const std::string label = r.label;
    uint64_t wakeAt = TeamWaiter::kNoDeadline;
    if (r.untilPs >= 0) wakeAt = static_cast<uint64_t>(r.untilPs);
    if (r.forPs >= 0) wakeAt = model::Engine::instance().nowPs() + static_cast<uint64_t>(r.forPs);
    std::string releasedBy;
    if (!label.empty()) releasedBy = "'release " + label + "' or mcsim::api::releaseFault";
    if (wakeAt != TeamWaiter::kNoDeadline) {
      releasedBy += (releasedBy.empty() ? "" : ", or ") + std::string("simulated time ") + std::to_string(wakeAt) + " ps";
    }
    const std::string who = std::string(symbol) + (device >= 0 ? " on device " + std::to_string(device) : "") +
                            " (held by the fault rule at " + r.file + ":" + std::to_string(r.line) +
                            (releasedBy.empty() ? ", unnamed: never released)" : ", released by " + releasedBy + ")");
    // A block counts as a call blocked in the driver, so that a plan that holds the thread
    // which would complete a team shows up as the deadlock it is. Its wait object is
    // kFaultHold; describeWait names both kinds, since whichever waiter notices the deadlock
    // writes the report for all (with a describer of its own, a team waiter's report called
    // the fault hold "a released multicast object", a fault waiter's called every team a
    // fault hold).
    const Status s = n_.waiter.wait(
        lock, who, kFaultHold,
        [&] {
          return (!label.empty() && n_.injector.isReleased(label)) ||
                 (wakeAt != TeamWaiter::kNoDeadline && model::Engine::instance().nowPs() >= wakeAt);
        },
        [&](uint64_t object) { return describeWait(object); }, wakeAt);
    if (s != Status::kOk) {
      out.fail = true;
      out.status = s;
    }
    return out;
  }

  // What a fired fabric-level rule does to the node.
  void applyFabricRule(const FaultRule& r) {
    switch (r.action) {
      case FaultActionKind::kState:
        if (r.state == "restarted") n_.fabric.restart();
        else if (r.state == "not-started") n_.fabric.setState(FabricManagerState::kNotStarted);
        else if (r.state == "initialising") n_.fabric.setState(FabricManagerState::kInitialising);
        else if (r.state == "ready") n_.fabric.setState(FabricManagerState::kReady);
        else n_.fabric.setState(FabricManagerState::kDegraded);
        break;
      case FaultActionKind::kRelease: n_.injector.release(r.label); break;
      case FaultActionKind::kAbsent: n_.imexPresent.store(false); break;
      case FaultActionKind::kPresent: n_.imexPresent.store(true); break;
      case FaultActionKind::kDown:
      case FaultActionKind::kUp: {
        const bool down = r.action == FaultActionKind::kDown;
        if (r.point == FaultPointKind::kSwitch) {
          n_.switchDown = down;
          break;
        }
        for (int g = 0; g < n_.preset.gpuCount; ++g) {
          if (r.gpu >= 0 && g != r.gpu) continue;
          if (down) n_.linksDown.insert(g);
          else n_.linksDown.erase(g);
        }
        break;
      }
      default: break;
    }
    n_.waiter.progress();
  }

  // The device whose memory a segment list starts in (-1: host memory).
  int deviceOf(const std::vector<Segment>& segs) const {
    if (segs.empty() || isMulticastId(segs[0].alloc)) return -1;
    const Location& l = n_.allocs.at(segs[0].alloc).props.location;
    return l.kind == LocationKind::kDevice ? l.id : -1;
  }

  // A copy between two GPUs needs both GPUs' NVLinks.
  bool linkPathUp(const std::vector<Segment>& from, const std::vector<Segment>& to) const {
    if (n_.linksDown.empty()) return true;
    const int a = deviceOf(from), b = deviceOf(to);
    if (a < 0 || b < 0 || a == b) return true;
    return n_.linksDown.count(a) == 0 && n_.linksDown.count(b) == 0;
  }

  // The switches' and the manager's word on a multicast bind or map.
  Status multicastGate() const {
    if (n_.switchDown) return Status::kIllegalState;
    return n_.fabric.gate();
  }

  // Memory the driver reserves, backs and maps in one step (cuMemAlloc, pools): rounded to whole
  // granules, used within `requested`, reachable by `accessors`.
  Status allocInternal(AllocationProps props, uint64_t requested, AllocKind kind,
                       const std::vector<int>& accessors, uint64_t* va) {
    const uint64_t rounded = (requested + kLinearGranule - 1) & ~(kLinearGranule - 1);
    if (requested == 0 || rounded < requested) return Status::kInvalidValue;
    props.size = rounded;
    AllocId id = 0;
    Status s = n_.newAllocation(props, kind, requested, &id);
    if (s != Status::kOk) return s;
    uint64_t at = 0;
    s = space_.reserve(rounded, kLinearGranule, 0, true, &at);
    if (s != Status::kOk) {
      n_.destroyAllocation(id);
      return s;
    }
    space_.map(at, rounded, id, 0);
    for (int d : accessors) space_.setAccess(at, rounded, d, Access::kReadWrite);
    internal_[at] = id;
    *va = at;
    return Status::kOk;
  }

  Status freeInternal(uint64_t va, AllocKind kind) {
    auto it = internal_.find(va);
    if (it == internal_.end() || n_.allocs.at(it->second).kind != kind) return Status::kInvalidValue;
    const uint64_t size = n_.allocs.at(it->second).props.size;
    std::vector<model::Mapping> removed;
    space_.unmap(va, size, &removed);
    space_.free(va, size);
    internal_.erase(it);
    for (const auto& m : removed) n_.dropRef(m.alloc);
    return Status::kOk;
  }

  MulticastObject* multicastOf(uint64_t handle) {
    auto h = handles_.find(handle);
    if (h == handles_.end() || !isMulticastId(h->second.alloc)) return nullptr;
    MulticastObject* mc = n_.fabric.find(h->second.alloc);
    // Objects from before a fabric manager restart answer as unknown until released.
    return mc != nullptr && mc->stale ? nullptr : mc;
  }

  // What a bind of `size` bytes at `offset` of allocation `id` binds, if they fit.
  Status bindSourceOf(AllocId id, uint64_t offset, uint64_t size, BindSource* src) const {
    const Allocation& a = n_.allocs.at(id);
    if (offset > a.props.size || size > a.props.size - offset) return Status::kInvalidValue;
    *src = BindSource{id, a.props.location, a.props.size, a.props.handleTypes, offset};
    return Status::kOk;
  }

  // The device a binding is for. The first forms bind for the memory's own device, which must
  // be device memory; the _v2 forms name the device, and device memory must be on it, host
  // memory on the NUMA node closest to it (CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID).
  Status bindDevice(int requested, const BindSource& src, int* device) const {
    const Location& loc = src.location;
    if (requested < 0) {
      if (loc.kind != LocationKind::kDevice) return Status::kInvalidDevice;
      *device = loc.id;
      return Status::kOk;
    }
    if (loc.kind == LocationKind::kDevice) {
      if (loc.id != requested) return Status::kInvalidDevice;
    } else {
      const int numa = loc.kind == LocationKind::kHost ? 0 : loc.id;
      if (numa != n_.preset.gpuNumaNode[static_cast<size_t>(requested)]) return Status::kInvalidValue;
    }
    *device = requested;
    return Status::kOk;
  }

  // The path every bind takes: check what can be checked at once, wait for the team, check
  // again (the world may have changed while waiting), then let the fabric manager bind.
  template <typename SourceFn>
  Status bind(std::unique_lock<std::mutex>& lock, const char* call, uint64_t mcHandle, int device,
              uint64_t mcOffset, uint64_t size, SourceFn source) {
    auto check = [&](MulticastObject** mc, BindSource* src) {
      *mc = multicastOf(mcHandle);
      if (*mc == nullptr) return Status::kInvalidValue;
      Status s = source(src);
      if (s != Status::kOk) return s;
      if (mcOffset > (*mc)->props.size || size > (*mc)->props.size - mcOffset) return Status::kInvalidValue;
      // Externally shareable and imported multicast objects bind only shareable memory.
      if ((*mc)->props.handleTypes != 0 && src->handleTypes == 0) return Status::kInvalidValue;
      return Status::kOk;
    };
    MulticastObject* mc = nullptr;
    BindSource src;
    Status s = check(&mc, &src);
    if (s != Status::kOk) return s;
    const uint64_t id = mc->id;
    s = waitForTeam(lock, id, call, device);
    if (s != Status::kOk) return s;
    s = check(&mc, &src);
    if (s != Status::kOk) return s;
    if (mc->id != id) return Status::kInvalidValue;
    // The fabric manager sets the team up when it is first used.
    s = multicastGate();
    if (s != Status::kOk) return s;
    int dev = 0;
    s = bindDevice(device, src, &dev);
    if (s != Status::kOk) return s;
    // Objects that only since-closed descriptors kept are gone in fact, and so are their switch
    // slots: sweep them before the slot check, or a loop of create / export / bind / release /
    // close runs out of slots at its 129th bind (multicast.Slots.ClosingTheLastDescriptorFreesTheSlot).
    // Neither `mc` nor the bound memory can be swept: a handle or a mapping holds each.
    n_.sweepHeldAllocations();
    src.owner = number_;
    s = n_.fabric.bind(*mc, dev, mcOffset, src, size);
    if (s != Status::kOk) return s;
    ++n_.allocs.at(src.alloc).refs;  // the binding keeps the bound memory alive
    return Status::kOk;
  }

  // A multicast object maps from offset 0, any size up to its own, aligned to the multicast
  // granularity; the map blocks until the team is complete.
  Status mapMulticast(std::unique_lock<std::mutex>& lock, uint64_t va, uint64_t size, uint64_t offset,
                      uint64_t id) {
    const uint64_t gran = n_.preset.multicast.granularityMinimum;
    MulticastObject* mc = n_.fabric.find(id);
    // An object from before a fabric manager restart is refused here as by every other multicast
    // call (multicastOf); the map used to go through and map an object the manager forgot.
    if (mc->stale) return Status::kInvalidValue;
    if (offset != 0) return Status::kNotSupported;
    if (size == 0 || size > mc->props.size || size % gran != 0 || va % gran != 0) return Status::kInvalidValue;
    const model::Reservation* r = space_.reservationContaining(va);
    if (r == nullptr || r->internal) return Status::kInvalidValue;
    Status s = waitForTeam(lock, id, "cuMemMap", -1);
    if (s != Status::kOk) return s;
    mc = n_.fabric.find(id);
    if (mc == nullptr || mc->stale) return Status::kInvalidValue;
    s = multicastGate();
    if (s != Status::kOk) return s;
    s = space_.map(va, size, id, 0);
    if (s != Status::kOk) return s;
    ++mc->refs;
    return Status::kOk;
  }

  // Blocks until the team of object `id` is complete. `call` and `device` only name the waiter
  // in reports, so nothing is formatted unless the call really has to wait.
  Status waitForTeam(std::unique_lock<std::mutex>& lock, uint64_t id, const char* call, int device) {
    auto ready = [&] {
      const MulticastObject* mc = n_.fabric.find(id);
      return mc == nullptr || mc->complete();  // a released object wakes its waiters too
    };
    if (ready()) return Status::kOk;
    const std::string who = std::string(call) + (device >= 0 ? " on device " + std::to_string(device) : "") +
                            " (multicast object " + std::to_string(id & ~kMulticastIdBit) + ")";
    return n_.waiter.wait(lock, who, id, ready, [&](uint64_t object) { return describeWait(object); });
  }

  // The wait object of calls held by fault plan block rules (team waits use multicast ids, which
  // are never 0).
  static constexpr uint64_t kFaultHold = 0;

  // What a wait object still lacks, for hang and deadlock reports. Under the lock.
  std::string describeWait(uint64_t object) const {
    if (object == kFaultHold) return "calls held by fault plan block rules (each waiting call below names its rule)";
    const MulticastObject* mc = n_.fabric.find(object);
    if (mc == nullptr) return std::string("a released multicast object");
    std::string added;
    for (int d : mc->members) added += (added.empty() ? "" : " ") + std::to_string(d);
    return "multicast object " + std::to_string(object & ~kMulticastIdBit) + ": team of " +
           std::to_string(mc->props.numDevices) + ", devices added [" + added + "], " +
           std::to_string(mc->props.numDevices - mc->members.size()) + " still to be added";
  }

  uint64_t fabricCheck(AllocId id) const {
    return (id * 0x9e3779b97f4a7c15ull) ^ 0x6d6373696d464142ull ^ (n_.identity * 0xff51afd7ed558ccdull);
  }

  // Where a resolved segment's memory is, for the timing model.
  MemoryRef memoryRefOf(const Segment& sg) const {
    const Allocation& a = n_.allocs.at(sg.alloc);
    MemoryRef m;
    m.device = a.props.location.kind == LocationKind::kDevice;
    m.gpu = m.device ? a.props.location.id : -1;
    m.alloc = sg.alloc;
    m.offset = sg.allocOffset;
    return m;
  }

  // One side of a device operation, resolved: pieces of memory with their data pointers.
  struct Side {
    std::vector<Segment> segs;       // device memory
    std::vector<uint8_t*> data;      // per segment (nullptr: never written, reads as zeros)
    bool device = true;
    uint8_t* host = nullptr;
    bool pinned = false;
  };

  Status resolveSide(uint64_t addr, bool device, bool pinned, uint64_t bytes, int accessor, bool write,
                     Side* side, DeviceWork* work) {
    side->device = device;
    if (!device) {
      side->host = reinterpret_cast<uint8_t*>(addr);
      side->pinned = pinned;
      return Status::kOk;
    }
    Status s = space_.resolve(addr, bytes, accessor, write ? Access::kReadWrite : Access::kRead, &side->segs);
    if (s == Status::kOk && !withinLinear(side->segs)) s = Status::kIllegalAddress;
    if (s != Status::kOk) return s;
    if (write) {
      std::vector<uint8_t*> dst;
      if (!backSegments(side->segs, &dst)) return Status::kOutOfMemory;
      side->data = std::move(dst);
    } else {
      for (const uint8_t* p : peekSegments(side->segs)) side->data.push_back(const_cast<uint8_t*>(p));
    }
    // The work in flight keeps the backing memory alive, whatever the program frees meanwhile.
    for (const Segment& sg : side->segs) {
      const Allocation& a = n_.allocs.at(sg.alloc);
      if (a.region) work->keepAlive.push_back(a.region);
    }
    return Status::kOk;
  }

  // Splits a side into (memory, data) runs of at most `bytes` in address order.
  struct Run {
    MemoryRef ref;
    uint8_t* data;
    uint64_t len;
  };
  std::vector<Run> runsOf(const Side& side, uint64_t bytes) const {
    std::vector<Run> runs;
    if (!side.device) {
      MemoryRef m;
      m.device = false;
      m.pageable = !side.pinned;
      runs.push_back(Run{m, side.host, bytes});
      return runs;
    }
    for (size_t i = 0; i < side.segs.size(); ++i) {
      runs.push_back(Run{memoryRefOf(side.segs[i]), side.data[i], side.segs[i].len});
    }
    return runs;
  }

  // A kernel operand in ordinary device memory, as device `accessor` reaches it: its runs, with
  // their backing (kernels may read memory never written, which reads as zeros).
  Status resolvePlain(uint64_t va, uint64_t bytes, int accessor, bool write, MemorySpan* span, DeviceWork* work) {
    std::vector<Segment> segs;
    Status s = space_.resolve(va, bytes, accessor, write ? Access::kReadWrite : Access::kRead, &segs);
    if (s != Status::kOk) return Status::kIllegalAddress;
    for (const Segment& sg : segs) {
      // Plain loads and stores do not reach a multicast mapping.
      if (isMulticastId(sg.alloc)) return Status::kIllegalAddress;
    }
    std::vector<uint8_t*> data;
    if (!backSegments(segs, &data)) return Status::kOutOfMemory;
    for (size_t i = 0; i < segs.size(); ++i) {
      span->push_back(MemoryRun{memoryRefOf(segs[i]), data[i], segs[i].len});
      work->keepAlive.push_back(n_.allocs.at(segs[i].alloc).region);
    }
    return Status::kOk;
  }

  // A multimem operand: a range of a multicast mapping, resolved to every team member's bound
  // memory behind it (members in ascending device order). A range that is not a multicast
  // mapping, or that some member has no memory bound for, is an illegal address.
  Status resolveMulticast(uint64_t va, uint64_t bytes, int accessor, std::vector<int>* gpus,
                          std::vector<MemorySpan>* members, DeviceWork* work) {
    std::vector<Segment> segs;
    Status s = space_.resolve(va, bytes, accessor, Access::kReadWrite, &segs);
    if (s != Status::kOk) return Status::kIllegalAddress;
    const MulticastObject* mc = nullptr;
    for (const Segment& sg : segs) {
      if (!isMulticastId(sg.alloc)) return Status::kIllegalAddress;
      const MulticastObject* o = n_.fabric.find(sg.alloc);
      if (o == nullptr || (mc != nullptr && o != mc)) return Status::kIllegalAddress;
      mc = o;
    }
    if (mc == nullptr || !mc->complete()) return Status::kIllegalAddress;
    std::vector<int> devices = mc->members;
    std::sort(devices.begin(), devices.end());
    for (int d : devices) {
      MemorySpan span;
      for (const Segment& sg : segs) {
        uint64_t off = sg.allocOffset, left = sg.len;
        while (left > 0) {
          // The binding of device d that covers mc offset `off`.
          const MulticastBinding* b = nullptr;
          auto it = mc->bindings.upper_bound({d, off});
          if (it != mc->bindings.begin()) {
            const MulticastBinding& c = std::prev(it)->second;
            if (c.device == d && c.mcOffset <= off && off < c.mcOffset + c.size) b = &c;
          }
          if (b == nullptr) return Status::kIllegalAddress;
          const uint64_t n = std::min(left, b->mcOffset + b->size - off);
          const Segment bound{b->alloc, b->allocOffset + (off - b->mcOffset), n};
          std::vector<uint8_t*> data;
          if (!backSegments({bound}, &data)) return Status::kOutOfMemory;
          span.push_back(MemoryRun{memoryRefOf(bound), data[0], n});
          work->keepAlive.push_back(n_.allocs.at(b->alloc).region);
          off += n;
          left -= n;
        }
      }
      gpus->push_back(d);
      members->push_back(std::move(span));
    }
    return Status::kOk;
  }

  // A launch's steps, resolved against the launching device's rights.
  Status planKernel(const DeviceOp& op, DeviceWork* work) {
    using K = KernelStep::Kind;
    work->kind = DeviceWork::Kind::kKernel;
    work->abandoned = abandoned_;
    work->threads = op.threads;
    work->blocks = op.blocks;
    work->bytesInFlightPerThread = op.bytesInFlightPerThread;
    work->label = op.label;
    const int dev = op.engineDevice;
    for (const KernelStep& k : op.steps) {
      ResolvedStep r;
      r.kind = k.kind;
      r.dtype = k.dtype;
      r.op = k.op;
      r.value = k.value;
      r.count = k.count;
      if (k.kind == K::kWait) r.waitVa = k.dst;
      const bool elementWise = k.kind != K::kCopy && k.kind != K::kSignal && k.kind != K::kWait;
      uint64_t align = 1;
      if (elementWise) {
        align = mcsim_dtype_bytes(k.dtype);
        if (align == 0 || !model::reductionDefined(k.dtype, k.kind == K::kMultimemStore ? uint32_t{MCSIM_REDOP_ADD} : k.op) ||
            k.count > UINT64_MAX / align) {
          return Status::kInvalidValue;
        }
        r.bytes = k.count * align;
      } else {
        r.bytes = k.bytes;
        if (k.kind != K::kCopy) align = 4;
      }
      if (r.bytes == 0 && k.kind != K::kSignal && k.kind != K::kWait) continue;
      for (uint64_t a : {k.dst, k.src, k.src2, k.mc}) {
        if (a % align != 0) return Status::kMisaligned;
      }
      Status s = Status::kOk;
      switch (k.kind) {
        case K::kCopy:
          s = resolvePlain(k.src, r.bytes, dev, false, &r.src, work);
          if (s == Status::kOk) s = resolvePlain(k.dst, r.bytes, dev, true, &r.dst, work);
          break;
        case K::kReduce:
          s = resolvePlain(k.src, r.bytes, dev, false, &r.src, work);
          if (s == Status::kOk) s = resolvePlain(k.src2, r.bytes, dev, false, &r.src2, work);
          if (s == Status::kOk) s = resolvePlain(k.dst, r.bytes, dev, true, &r.dst, work);
          break;
        case K::kMultimemStore:
        case K::kMultimemReduce:
          s = resolvePlain(k.src, r.bytes, dev, false, &r.src, work);
          if (s == Status::kOk) s = resolveMulticast(k.mc, r.bytes, dev, &r.memberGpus, &r.members, work);
          break;
        case K::kMultimemLoadReduce:
          s = resolveMulticast(k.mc, r.bytes, dev, &r.memberGpus, &r.members, work);
          if (s == Status::kOk) s = resolvePlain(k.dst, r.bytes, dev, true, &r.dst, work);
          break;
        case K::kMultimemLoadReduceStore:
        case K::kSignal:
          s = resolveMulticast(k.mc, r.bytes, dev, &r.memberGpus, &r.members, work);
          break;
        case K::kWait:
          s = resolvePlain(k.dst, r.bytes, dev, false, &r.dst, work);
          break;
      }
      if (s != Status::kOk) return s;
      if (!r.memberGpus.empty() && n_.switchDown) return Status::kLinkDown;
      work->steps.push_back(std::move(r));
    }
    return Status::kOk;
  }

  // Checks a device operation and turns it into work for the timing model. Changes nothing but
  // first-touch backing of memory about to be written (which no digest sees).
  Status planWork(const DeviceOp& op, DeviceWork* work) {
    if (op.engineDevice < 0 || op.engineDevice >= n_.preset.gpuCount) return Status::kInvalidDevice;
    work->engineGpu = op.engineDevice;
    work->functional = n_.functional;
    work->stream = op.stream;
    if (op.kind == DeviceOp::Kind::kKernel) return planKernel(op, work);
    if (op.kind == DeviceOp::Kind::kMarker) {
      work->kind = DeviceWork::Kind::kMarker;
      work->crossGpu = op.crossGpu;
      return Status::kOk;
    }
    if (op.kind == DeviceOp::Kind::kFill) {
      if (op.elementBytes == 0 || op.count > UINT64_MAX / op.elementBytes) return Status::kInvalidValue;
      const uint64_t bytes = op.count * op.elementBytes;
      Side dst;
      Status s = resolveSide(op.dst, true, false, bytes, op.dstAccessor, true, &dst, work);
      if (s != Status::kOk) return s;
      work->kind = DeviceWork::Kind::kFill;
      work->fillValue = op.value;
      work->fillElementBytes = op.elementBytes;
      work->label = "memset";
      for (const Run& r : runsOf(dst, bytes)) {
        WorkPiece p;
        p.dst = r.ref;
        p.dstData = r.data;
        p.bytes = r.len;
        work->pieces.push_back(p);
      }
      return Status::kOk;
    }
    Side src, dst;
    Status s = resolveSide(op.src, op.srcDevice, op.srcPinned, op.bytes, op.srcAccessor, false, &src, work);
    if (s == Status::kOk) s = resolveSide(op.dst, op.dstDevice, op.dstPinned, op.bytes, op.dstAccessor, true, &dst, work);
    if (s == Status::kOk && op.srcDevice && op.dstDevice && !linkPathUp(src.segs, dst.segs)) s = Status::kLinkDown;
    if (s != Status::kOk) return s;
    work->kind = DeviceWork::Kind::kCopy;
    // Pageable host data is staged now, as the real driver does, unless the caller waits anyway.
    if (!op.srcDevice && (op.stageSource || (!op.srcPinned && !op.callerWaits)) && n_.functional) {
      work->staging.assign(src.host, src.host + op.bytes);
      src.host = work->staging.data();
    }
    const std::vector<Run> from = runsOf(src, op.bytes), to = runsOf(dst, op.bytes);
    // Walk both run lists together: each piece lies within one run of each side.
    size_t i = 0, j = 0;
    uint64_t oi = 0, oj = 0;
    while (i < from.size() && j < to.size()) {
      const uint64_t n = std::min(from[i].len - oi, to[j].len - oj);
      WorkPiece p;
      p.src = from[i].ref;
      p.dst = to[j].ref;
      if (p.src.device) p.src.offset += oi;
      if (p.dst.device) p.dst.offset += oj;
      p.srcData = from[i].data != nullptr ? from[i].data + oi : nullptr;
      p.dstData = to[j].data + oj;
      p.bytes = n;
      work->pieces.push_back(p);
      oi += n;
      oj += n;
      if (oi == from[i].len) { ++i; oi = 0; }
      if (oj == to[j].len) { ++j; oj = 0; }
    }
    work->label = "copy";
    return Status::kOk;
  }

  uint64_t newHandle(AllocId alloc, bool imported) {
    const uint64_t value = kHandleBase + kHandleStride * nextHandle_++;
    handles_[value] = HandleEntry{alloc, 1, imported};
    firstHandles_.emplace(alloc, value);  // kept if the process had one before
    return value;
  }

  // cuMemAlloc memory is used within what was asked for, one allocation at a time: the real driver
  // refuses a copy or memset that runs past the requested size even inside the allocation's 2 MiB
  // page, or on into the next allocation (fault.memset_past_end, fault.dtod_oob,
  // fault.dtod_oob_2MiB_alloc, fault.htod_oob, fault.dtoh_oob).
  bool withinLinear(const std::vector<Segment>& segs) const {
    for (const Segment& sg : segs) {
      // A multicast mapping is reached by multimem instructions, not by copies or memsets.
      if (isMulticastId(sg.alloc)) return false;
      const Allocation& a = n_.allocs.at(sg.alloc);
      if (a.kind != AllocKind::kVmm && (segs.size() > 1 || sg.allocOffset + sg.len > a.requested)) return false;
    }
    return true;
  }

  // Host pointers for segments about to be written, backing allocations on first touch.
  bool backSegments(const std::vector<Segment>& segs, std::vector<uint8_t*>* out) {
    for (const Segment& sg : segs) {
      Allocation& a = n_.allocs.at(sg.alloc);
      if (!a.region) {
        a.region = model::LazyRegion::create(a.props.size);
        if (!a.region) return false;
      }
      out->push_back(a.region->data() + sg.allocOffset);
    }
    return true;
  }

  // Host pointers for segments about to be read; nullptr where nothing was ever written.
  std::vector<const uint8_t*> peekSegments(const std::vector<Segment>& segs) {
    std::vector<const uint8_t*> out;
    for (const Segment& sg : segs) {
      const Allocation& a = n_.allocs.at(sg.alloc);
      out.push_back(a.region ? a.region->data() + sg.allocOffset : nullptr);
    }
    return out;
  }

  NodeStats held() override {
    std::lock_guard<std::mutex> lock(n_.mu);
    NodeStats s;
    addToStats(&s);
    return s;
  }

  void addToStats(NodeStats* s) const {
    s->handles += handles_.size();
    s->reservations += space_.reservationCount();
    s->mappings += space_.mappingCount();
  }

  // Adds what is this process's to a digest of the node.
  void addProcessDigest(model::Digest& d) const {
    d.add(number_).add(nextHandle_);
    d.add(handles_.size());
    for (uint64_t value : sortedKeys(handles_)) {
      const HandleEntry& h = handles_.at(value);
      d.add(value).add(h.alloc).add(h.refs).add(h.imported ? 1 : 0);
    }
    d.add(firstHandles_.size());
    for (const auto& [id, value] : firstHandles_) d.add(id).add(value);
    space_.addToDigest(d);
  }

  std::shared_ptr<NodeHost::State> state_;
  NodeHost::State& n_;  // *state_
  uint64_t number_ = 0;  // the order in which it attached
  // The process died: its waits for device work give up, and its kernels stop (DeviceWork).
  std::shared_ptr<std::atomic<bool>> abandoned_ = std::make_shared<std::atomic<bool>>(false);
  uint64_t vaBase_;
  AddressSpace space_;
  std::unordered_map<uint64_t, HandleEntry> handles_;
  // The handle value this process first had for each object it knew (the real driver's answer
  // to cuMemRetainAllocationHandle, and to property queries of a released value still mapped).
  std::map<uint64_t, uint64_t> firstHandles_;
  std::map<uint64_t, AllocId> internal_;  // cuMemAlloc and pool allocations by base address
  uint64_t nextHandle_ = 0;
};

}  // namespace

NodeStats NodeHost::State::collectStats() const {
  NodeStats s;
  s.allocations = allocs.size();
  for (const auto& [number, p] : processes) p->addToStats(&s);
  s.exportedFds = exports.size();
  for (const auto& [id, a] : allocs) s.residentBytes += a.region ? a.region->residentBytes() : 0;
  s.multicastObjects = fabric.objectCount();
  s.freeMulticastSlots = fabric.freeSlots();
  return s;
}

void NodeHost::State::destroyObject(uint64_t id) {
  held.erase(id);
  for (auto e = exports.begin(); e != exports.end();) {
    e = (e->second.object == id) ? exports.erase(e) : std::next(e);
  }
  // No process knows a handle value for it any more.
  for (const auto& [number, p] : processes) p->firstHandles_.erase(id);
  if (!isMulticastId(id)) {
    destroyAllocation(id);
    return;
  }
  // The object's bindings held references on the bound memory.
  for (const MulticastBinding& b : fabric.destroy(id)) dropRef(b.alloc);
  waiter.progress();  // waiters on this object can now only fail
}

uint64_t reserveDeviceWindow() {
  void* want = reinterpret_cast<void*>(kDeviceWindowBase);
  void* p = mmap(want, kDeviceWindowSize, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE |
                 MAP_FIXED_NOREPLACE, -1, 0);
  if (p == want) return kDeviceWindowBase;
  if (p != MAP_FAILED) munmap(p, kDeviceWindowSize);
  p = mmap(nullptr, kDeviceWindowSize, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return 0;
  std::fprintf(stderr, "mcsim: the device address window at 0x%llx is taken; device addresses "
                       "will differ from run to run\n", static_cast<unsigned long long>(kDeviceWindowBase));
  // Keep the window aligned to 2 MiB so that granularity rules hold for every address in it.
  return (reinterpret_cast<uint64_t>(p) + kLinearGranule - 1) & ~(kLinearGranule - 1);
}

NodeHost::NodeHost(Preset preset, HangPolicy policy)
    : state_(std::make_shared<State>(std::move(preset), policy)) {}

NodeHost::~NodeHost() = default;

const Preset& NodeHost::preset() const { return state_->preset; }

std::unique_ptr<AttachedNode> NodeHost::attach(uint64_t vaBase) {
  return std::make_unique<ProcessNode>(state_, vaBase);
}

void NodeHost::setIdentity(const std::string& name) {
  std::lock_guard<std::mutex> lock(state_->mu);
  // FNV-1a of the name: the same node name gives the same FABRIC handle bytes on every run.
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : name) h = (h ^ c) * 0x100000001b3ull;
  state_->identity = h;
}

void NodeHost::setThreadCounter(std::function<int()> count) {
  std::lock_guard<std::mutex> lock(state_->mu);
  state_->waiter.setThreadCounter(std::move(count));
}


std::string NodeHost::lastHangReport() {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->waiter.lastReport();
}

void NodeHost::installFaultPlan(std::vector<FaultRule> rules, uint64_t seed) {
  std::lock_guard<std::mutex> lock(state_->mu);
  state_->installPlan(std::move(rules), seed);
}

NodeStats NodeHost::stats() {
  std::lock_guard<std::mutex> lock(state_->mu);
  state_->sweepHeldAllocations();
  return state_->collectStats();
}

bool NodeHost::movesData() const { return state_->functional; }

void NodeHost::finishRequest() {
  std::unique_lock<std::mutex> lock(state_->mu);
  state_->admission.finish(lock);
}

void NodeHost::followAdmissions(std::vector<Admission> schedule, double patienceSeconds) {
  std::lock_guard<std::mutex> lock(state_->mu);
  state_->admission.follow(std::move(schedule), patienceSeconds);
}

void NodeHost::skipAdmissions(const std::vector<uint64_t>& numbers) {
  std::lock_guard<std::mutex> lock(state_->mu);
  state_->admission.skip(numbers);
}

std::string NodeHost::admissionDivergence() {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->admission.divergence();
}

size_t NodeHost::processCount() {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->processes.size();
}

std::unique_ptr<Node> makeEmbeddedNode(Preset preset) {
  const uint64_t window = reserveDeviceWindow();
  if (window == 0) return nullptr;
  NodeHost host(std::move(preset), HangPolicy::fromEnvironment());
  return host.attach(window);
}

}  // namespace mcsim::fabric
