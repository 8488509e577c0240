// The node and its attached processes (node_host.h): the node-wide state (NodeHost::State), which
// owns the node's services and its lock, and each process's view of it (ProcessNode), a facade
// that takes the lock and hands each call to the service whose job it is:
//   object_table.h      allocations, multicast objects' references, memory used per location
//   export_table.h      exported POSIX descriptors and FABRIC handles
//   ipc_event_table.h   events shared between processes (cuIpcGetEventHandle)
//   handle_table.h      a process's handle values (one per process)
//   process_space.h     a process's device address space, cuMemAlloc and pool memory (one per process)
//   multicast_service.h binds, maps and team waits
//   fault_service.h     the fault plan and what it did to the fabric
//   work_planner.h      device operations resolved into work for the timing model (node_model.h)
// Every service is guarded by the node's one lock (docs/architecture.md, "Locks and their order",
// says why one). The embedded node is a host with this process alone.
#include "fabric/node_host.h"

#include <sys/mman.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "fabric/export_table.h"
#include "fabric/fault_service.h"
#include "fabric/handle_table.h"
#include "fabric/ipc_event_table.h"
#include "fabric/multicast_service.h"
#include "fabric/node_model.h"
#include "fabric/object_table.h"
#include "fabric/process_space.h"
#include "fabric/relocatable_objects.h"
#include "fabric/work_planner.h"
#include "model/digest.h"
#include "model/engine.h"
#include "model/ordered_mutex.h"
#include "ptx/linker.h"
#include "ptx/parser.h"

namespace mcsim::fabric {

namespace {

using model::AllocId;

class ProcessNode;

}  // namespace

// What is node-wide: the services and the lock that guards them all (but the atomics).
struct NodeHost::State {
  State(Preset p, const NodeSettings& settings)
      : preset(std::move(p)),
        admission(engine),
        fabric(preset, settings.fabricManager),
        waiter(settings.hang, engine),
        model(std::make_shared<NodeModel>(preset, engine)),
        objects(preset, fabric, exports, *model),
        multicast(preset, fabric, waiter, objects, health),
        faults(fabric, waiter, health, multicast, engine),
        functional(settings.movesData),
        planner(preset, objects, fabric, health, functional),
        pollIntervalPs(settings.hostPollNs * 1000) {
    health.imexPresent.store(preset.imexChannel);
    health.links = healthyLinks(preset);
    // The timing model and the device work it runs see the fabric's health change at the point
    // the rule fired, in admission order, so that a fault at the same point gives the same times.
    faults.setOnHealthChanged([this](const model::LinkHealth& h) { model->setHealth(h); });
    // Fault plans may deny switch group slots (the multicast-slot point).
    fabric.setSlotVeto([this] { return faults.vetoSlot(); });
    // A forgotten object has no handle value in any process any more; waiters on a multicast
    // object can now only fail.
    objects.setOnDestroyed([this](uint64_t id) { forgetEverywhere(id); });
  }

  Preset preset;
  // The node's simulation: its clock and the SystemC context its hardware runs in. Declared
  // before everything that uses it, so that it is destroyed last (its end frees the work in flight).
  model::Engine engine;
  OrderedMutex mu{LockRank::kNode};
  // The order requests are taken in (a shared node's; the embedded node's calls carry no
  // Request, and pass straight through).
  AdmissionOrder admission;
  // The node's lock for a request. Taking a request in pins it to the simulation's runs
  // (fabric/admission.h); the pin ends with the lock scope it was taken in, or when the request
  // begins to wait (for device work, a team, a fault hold), whichever comes first.
  class RequestLock : public OrderedLock {
   public:
    explicit RequestLock(OrderedMutex& m) : OrderedLock(m) {}
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
    OrderedLock lock(mu);
    admission.admit(lock);
    return std::optional<PinnedAdmission>(std::in_place);
  }

  // The services, in the order they are made (each is given those it uses).
  FabricManager fabric;   // multicast objects, teams, bindings, switch slots
  TeamWaiter waiter;      // blocked binds, maps and fault holds
  std::shared_ptr<NodeModel> model;  // the timing model; work in flight shares it
  FabricHealth health;
  ExportTable exports;
  IpcEventTable ipcEvents;
  ObjectTable objects;
  MulticastService multicast;
  FaultService faults;
  bool functional;        // false: timing only (MCSIM_TIMING_ONLY=1), no data moves
  WorkPlanner planner;
  std::once_flag stallPolicySet;     // the engine's stall report is this node's (waitFor)
  uint64_t pollIntervalPs;           // how far a query that finds work unfinished lets time run
  // The attached processes, by the number each got when it attached (ordered: digests walk it).
  std::map<uint64_t, ProcessNode*> processes;
  uint64_t nextProcess = 0;
  // The bytes of relocatable objects being sent to the node, every process's (loadObjects).
  uint64_t objectDraftBytes = 0;

  void forgetEverywhere(uint64_t id);
  // Counts of the whole node: every process's handles, reservations and mappings together.
  NodeStats collectStats() const;
  uint64_t digest() const;
};

namespace {

// A process's host, for refusals: "tray 3", or "the whole node" (no tray setting).
std::string trayName(int tray) { return tray < 0 ? std::string("the whole node") : "tray " + std::to_string(tray); }

class ProcessNode final : public AttachedNode {
 public:
  // `window`: this process's, when the node is embedded (a shared node's client holds its own).
  ProcessNode(std::shared_ptr<NodeHost::State> state, uint64_t vaBase, DeviceWindow window = {}, int tray = -1)
      : tray_(tray),
        window_(std::move(window)),
        state_(std::move(state)),
        n_(*state_),
        vaBase_(vaBase),
        space_(vaBase_, kDeviceWindowSize - kLinearGranule, n_.preset.gpuCount, n_.objects, n_.fabric) {
    std::lock_guard<OrderedMutex> lock(n_.mu);
    number_ = ++n_.nextProcess;
    n_.processes[number_] = this;
    n_.waiter.progress();  // one more process whose threads may add a device
  }

  // Detaching: the process gives back everything it held, as a real process does when it exits
  // or dies. Calls it was waiting in are over (a dead process's were abandoned first).
  ~ProcessNode() override {
    {
      // Its kernels that have not run yet never will: they find this set under the mappings lock
      // before they read the space that is about to go (node_ptx.cpp).
      std::unique_lock<std::shared_mutex> writing(*space_.space().mappingsLock());
      abandoned_->store(true);
    }
    std::lock_guard<OrderedMutex> lock(n_.mu);
    // Its bindings first (each holds a reference on the bound memory) ...
    n_.multicast.unbindOwnedBy(number_);
    // ... then its mappings (cuMemAlloc and pool memory among them) ...
    space_.releaseAll();
    // ... and its handle values and shared events.
    for (uint64_t object : handles_.takeAll()) n_.objects.release(object);
    n_.ipcEvents.releaseAll(number_);
    n_.objectDraftBytes -= objectDraft_.bytes.size();
    n_.processes.erase(number_);
    // Memory only descriptors kept may have lost its last descriptor with the process.
    n_.objects.sweep();
    n_.waiter.progress();  // teams it held may be gone; waiters look again
  }

  const Preset& preset() const override { return n_.preset; }
  uint64_t vaBase() const override { return vaBase_; }
  uint64_t vaLimit() const override { return space_.space().limit(); }

  // ---- Objects and handle values ----

  Status createAllocation(const AllocationProps& props, uint64_t* handle) override {
    auto lock = n_.enter();
    n_.objects.sweep();  // memory kept only by closed descriptors counts no more
    AllocId id = 0;
    Status s = n_.objects.create(props, AllocKind::kVmm, 0, &id);
    if (s != Status::kOk) return s;
    *handle = handles_.add(id, false);
    return Status::kOk;
  }

  Status releaseHandle(uint64_t handle) override {
    auto lock = n_.enter();
    uint64_t dropped = 0;
    const Status s = handles_.release(handle, &dropped);
    if (s != Status::kOk) return s;
    if (dropped != 0) n_.objects.release(dropped);
    n_.waiter.progress();
    return Status::kOk;
  }

  Status handleProps(uint64_t handle, AllocationProps* props) override {
    auto lock = n_.enter();
    const HandleEntry* h = handles_.find(handle);
    if (h == nullptr) {
      // The real driver's handle is its allocation object, so a value whose every reference was
      // released still answers while a mapping keeps the allocation
      // (vmm.retain.props_after_all_released_still_mapped, vmm.data.release_mapped.*).
      uint64_t id = 0;
      if (!handles_.firstKnownAs(handle, &id) || isMulticastId(id)) return Status::kInvalidValue;
      const Allocation* a = n_.objects.find(id);
      if (a == nullptr || a->refs == 0) return Status::kInvalidValue;
      *props = a->props;
      return Status::kOk;
    }
    if (isMulticastId(h->object)) return Status::kInvalidValue;  // no allocation properties
    *props = n_.objects.at(h->object).props;
    if (h->imported) props->handleTypes = 0;
    return Status::kOk;
  }

  Status retainHandleAt(uint64_t va, uint64_t* handle) override {
    auto lock = n_.enter();
    const model::Mapping* m = space_.space().mappingContaining(va);
    if (m == nullptr) return Status::kInvalidValue;
    // Only cuMemCreate memory has a handle to retain.
    if (!isMulticastId(m->alloc) && n_.objects.at(m->alloc).kind != AllocKind::kVmm) return Status::kInvalidValue;
    // The real driver answers with the handle value the allocation was first known by, even
    // after the program released it (the mapping kept the allocation alive).
    // (The process had a handle for it, or it could not have mapped it.)
    bool fresh = false;
    *handle = handles_.retainFirst(m->alloc, &fresh);
    if (fresh) n_.objects.retain(m->alloc);
    return Status::kOk;
  }

  // ---- Shareable handles ----

  Status exportPosixFd(uint64_t handle, int* fd) override {
    auto lock = n_.enter();
    const HandleEntry* h = handles_.find(handle);
    if (h == nullptr) return MCSIM_REFUSE(Status::kInvalidValue, "handle is not a live handle of this process");
    if ((n_.objects.handleTypes(h->object) & kHandlePosixFd) == 0) {
      return MCSIM_REFUSE(Status::kInvalidValue, "the object was not created with CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR "
                          "in its handle types");
    }
    return n_.exports.exportPosix(h->object, tray_, fd);
  }

  Status importPosixFd(int fd, uint64_t* handle) override {
    struct stat st {};
    if (fd < 0 || fstat(fd, &st) != 0) return Status::kNotShareable;
    return importPosixFile(static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino), handle);
  }

  Status importPosixFile(uint64_t dev, uint64_t ino, uint64_t* handle) override {
    auto lock = n_.enter();
    uint64_t id = 0;
    int host = -1;
    if (!n_.exports.objectOfFile(dev, ino, &id, &host)) return Status::kNotShareable;
    // A descriptor never leaves its host: on a rack, a process of another tray holds one only
    // because the simulation runs every tray on one machine. Its driver knows no such export.
    if (host != tray_) {
      return MCSIM_REFUSE(Status::kNotShareable, "the descriptor was exported on ", trayName(host),
                          " and this process runs on ", trayName(tray_), ": descriptors do not cross hosts");
    }
    n_.objects.retainImported(id);
    *handle = handles_.add(id, true);
    return Status::kOk;
  }

  Status exportFabric(uint64_t handle, uint8_t out[64]) override {
    auto lock = n_.enter();
    const HandleEntry* h = handles_.find(handle);
    if (h == nullptr) return Status::kInvalidValue;
    if ((n_.objects.handleTypes(h->object) & kHandleFabric) == 0) return Status::kInvalidValue;
    if (!n_.health.imexPresent.load()) return Status::kNotPermitted;
    n_.exports.encodeFabric(h->object, out);
    return Status::kOk;
  }

  Status importFabric(const uint8_t in[64], uint64_t* handle) override {
    auto lock = n_.enter();
    if (!n_.health.imexPresent.load()) return Status::kNotPermitted;
    uint64_t id = 0;
    // Bytes that this node never exported (forged, or another node's) name nothing.
    if (!n_.exports.decodeFabric(in, &id)) return Status::kInvalidValue;
    if (!n_.objects.exists(id) || (n_.objects.handleTypes(id) & kHandleFabric) == 0) return Status::kInvalidValue;
    n_.objects.retainImported(id);
    *handle = handles_.add(id, true);
    return Status::kOk;
  }

  // ---- Virtual memory ----

  Status reserve(uint64_t size, uint64_t alignment, uint64_t hint, uint64_t* va) override {
    auto lock = n_.enter();
    return space_.reserve(size, alignment, hint, va);
  }

  Status freeReservation(uint64_t va, uint64_t size) override {
    auto lock = n_.enter();
    return space_.freeReservation(va, size);
  }

  Status map(uint64_t va, uint64_t size, uint64_t offset, uint64_t handle) override {
    auto lock = n_.enter();
    const HandleEntry* h = handles_.find(handle);
    if (h == nullptr) return Status::kInvalidValue;
    if (isMulticastId(h->object)) return n_.multicast.map(lock, space_, va, size, offset, h->object);
    return space_.mapAllocation(va, size, offset, h->object);
  }

  Status unmap(uint64_t va, uint64_t size) override {
    auto lock = n_.enter();
    return space_.unmap(va, size);
  }

  Status setAccess(uint64_t va, uint64_t size, int device, Access access) override {
    auto lock = n_.enter();
    return space_.setAccess(va, size, device, access);
  }

  Status getAccess(uint64_t va, int device, Access* access) override {
    auto lock = n_.enter();
    return space_.getAccess(va, device, access);
  }

  Status allocLinear(int device, uint64_t size, uint64_t* va) override {
    auto lock = n_.enter();
    if (device < 0 || device >= n_.preset.gpuCount) return Status::kInvalidDevice;
    AllocationProps props;
    props.location = Location{LocationKind::kDevice, device};
    // Every device's copy engines reach cuMemAlloc memory.
    return space_.allocInternal(props, size, AllocKind::kLinear, space_.everyDevice(), va);
  }

  Status freeLinear(uint64_t va) override {
    auto lock = n_.enter();
    return space_.freeInternal(va, AllocKind::kLinear);
  }

  Status allocPooled(const AllocationProps& props, uint64_t size, const std::vector<int>& accessors,
                     uint64_t* va) override {
    auto lock = n_.enter();
    return space_.allocInternal(props, size, AllocKind::kPooled, accessors, va);
  }

  Status freePooled(uint64_t va) override {
    auto lock = n_.enter();
    return space_.freeInternal(va, AllocKind::kPooled);
  }

  Status setPooledAccess(uint64_t va, int device, Access access) override {
    auto lock = n_.enter();
    return space_.setPooledAccess(va, device, access);
  }

  Status ipcExportMemory(uint64_t va, uint8_t out[64]) override {
    auto lock = n_.enter();
    AllocId id = 0;
    const Status s = space_.linearAllocationAt(va, &id);
    if (s != Status::kOk) return s;
    n_.exports.encodeFabric(id, out, tray_);
    return Status::kOk;
  }

  Status ipcOpenMemory(const uint8_t in[64], uint64_t* va) override {
    auto lock = n_.enter();
    uint64_t id = 0;
    int host = ExportTable::kAnyHost;
    // Bytes this node never made (forged, or another node's) name nothing.
    if (!n_.exports.decodeFabric(in, &id, &host) || isMulticastId(id)) return Status::kInvalidValue;
    if (host != tray_) {
      return MCSIM_REFUSE(Status::kInvalidValue, "the IPC handle was made on ", trayName(host), " and this process runs on ",
                          trayName(tray_), ": IPC handles name memory of their own host only");
    }
    const Allocation* a = n_.objects.find(id);
    if (a == nullptr || a->refs == 0 || a->kind != AllocKind::kLinear) return Status::kInvalidValue;
    if (space_.madeLinear(id)) return Status::kOwnProcess;
    return space_.openImported(id, va);
  }

  Status ipcCloseMemory(uint64_t va) override {
    auto lock = n_.enter();
    return space_.closeImported(va);
  }

  Status ipcEventCreate(uint64_t* key) override {
    auto lock = n_.enter();
    *key = n_.ipcEvents.create(number_);
    return Status::kOk;
  }

  Status ipcEventExport(uint64_t key, uint8_t out[64]) override {
    auto lock = n_.enter();
    if (!n_.ipcEvents.exists(key)) return Status::kInvalidValue;
    n_.exports.encodeFabric(key, out, tray_);
    return Status::kOk;
  }

  Status ipcEventOpen(const uint8_t in[64], uint64_t* key) override {
    auto lock = n_.enter();
    uint64_t id = 0;
    int host = ExportTable::kAnyHost;
    if (!n_.exports.decodeFabric(in, &id, &host) || (id & kIpcEventKeyBit) == 0 || isMulticastId(id)) {
      return Status::kInvalidValue;
    }
    if (host != tray_) {
      return MCSIM_REFUSE(Status::kInvalidValue, "the IPC event handle was made on ", trayName(host),
                          " and this process runs on ", trayName(tray_), ": IPC handles name events of their own host only");
    }
    const Status s = n_.ipcEvents.open(id, number_);
    if (s == Status::kOk) *key = id;
    return s;
  }

  Status ipcEventRelease(uint64_t key) override {
    auto lock = n_.enter();
    return n_.ipcEvents.release(key, number_);
  }

  Status ipcEventRecord(uint64_t key, const WorkDone& w) override {
    auto lock = n_.enter();
    return n_.ipcEvents.record(key, number_, w);
  }

  Status ipcEventLatest(uint64_t key, WorkDone* w) override {
    auto lock = n_.enter();
    return n_.ipcEvents.latest(key, number_, w);
  }

  Status pointerInfo(uint64_t va, int device, PointerInfo* info) override {
    auto lock = n_.enter();
    space_.pointerInfo(va, device, info);
    return Status::kOk;
  }

  Status memoryInfo(int device, uint64_t* free, uint64_t* total) override {
    auto lock = n_.enter();
    if (device < 0 || device >= n_.preset.gpuCount) return Status::kInvalidDevice;
    *total = n_.preset.gpu.memoryBytes;
    *free = *total - n_.objects.deviceUsed(device);
    return Status::kOk;
  }

  // ---- Device work ----

  Status submit(const DeviceOp& op, const std::vector<WorkDone>& after, WorkDone* done) override {
    auto work = std::make_shared<DeviceWork>();
    auto lock = n_.enter();
    const Status s = n_.planner.plan(space_.space(), abandoned_, op, work.get());
    if (s != Status::kOk) return s;
    work->notBeforePs = op.notBeforePs;
    if (op.kind == DeviceOp::Kind::kKernel && op.ptxModule != 0) {
      const Status p = planPtxLaunch(op, work.get());
      if (p != Status::kOk) return p;
    }
    // Submitted under the lock: the engine admits work in the order the node accepted it.
    *done = n_.model->submit(std::move(work), after);
    if (op.kind == DeviceOp::Kind::kKernel && op.ptxModule != 0) notePrinting(*done);
    return Status::kOk;
  }

  Status takeKernelOutput(uint64_t upToPs, std::string* text, uint64_t* unfinished) override {
    const auto pinned = n_.admitRequest();
    n_.engine.settle();  // finished or not as of the request's run
    std::vector<std::pair<uint64_t, size_t>> ready;  // (completion time, launch order)
    std::vector<WorkDone> finished;
    {
      std::lock_guard<std::mutex> lock(printingMu_);
      std::vector<WorkDone> rest;
      for (WorkDone& w : printing_) {
        if (w->done() && w->donePs() <= upToPs) {
          ready.emplace_back(w->donePs(), finished.size());
          finished.push_back(std::move(w));
        } else {
          rest.push_back(std::move(w));
        }
      }
      printing_ = std::move(rest);
      *unfinished = printing_.size();
    }
    std::stable_sort(ready.begin(), ready.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    text->clear();
    for (const auto& [ps, i] : ready) {
      (void)ps;
      if (finished[i]->output()) *text += *finished[i]->output();
    }
    return Status::kOk;
  }

  Status loadPtx(uint64_t draft, const std::string& name, const std::string& piece, bool last, uint64_t* module,
                 std::string* error) override {
    auto lock = n_.enter();
    if (draft == 0) {
      draft = ++nextPtx_;
      ptxDrafts_[draft];
    }
    auto it = ptxDrafts_.find(draft);
    if (it == ptxDrafts_.end()) return Status::kInvalidValue;
    it->second += piece;
    *module = draft;
    if (!last) return Status::kOk;
    const std::string text = std::move(it->second);
    ptxDrafts_.erase(it);
    auto parsed = std::make_shared<ptx::Module>();
    // Lenient, as the driver parses it: kernels the executor cannot run are left out.
    if (!ptx::parseModule(text, name, parsed.get(), error, /*lenient=*/true)) {
      *module = 0;
      return Status::kOk;
    }
    // A linked kernel's table functions, linked at their first call from the relocatable objects
    // this process gave the node (loadObjects; docs/ptx.md).
    attachCallLinker(text, parsed.get(), [this](const std::string& key) {
      auto h = heldObjects_.find(key);
      return h == heldObjects_.end() ? nullptr : h->second;
    });
    ptxModules_[draft] = std::move(parsed);
    return Status::kOk;
  }

  Status unloadPtx(uint64_t module) override {
    auto lock = n_.enter();
    // A launch planned already holds the module (PtxLaunch::module) until it finishes.
    return ptxModules_.erase(module) != 0 ? Status::kOk : Status::kInvalidHandle;
  }

  // ---- Pinned host memory ----

  Status allocHost(uint64_t bytes, void** host) override {
    // This process's own memory (the embedded node; a shared node's client makes its own).
    void* p = bytes == 0 ? MAP_FAILED : mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return Status::kOutOfMemory;
    std::shared_ptr<const void> keep(p, [bytes](const void* q) { munmap(const_cast<void*>(q), bytes); });
    auto lock = n_.enter();
    hostRanges_[reinterpret_cast<uint64_t>(p)] = PtxLaunch::Host{bytes, static_cast<uint8_t*>(p), std::move(keep)};
    *host = p;
    return Status::kOk;
  }

  Status freeHost(void* host) override {
    auto lock = n_.enter();
    auto it = hostRanges_.find(reinterpret_cast<uint64_t>(host));
    if (it == hostRanges_.end() || it->second.keep == nullptr) {
      return MCSIM_REFUSE(Status::kInvalidValue, "not pinned host memory this node allocated");
    }
    hostRanges_.erase(it);  // unmapped once no launch holds it any more
    return Status::kOk;
  }

  // Under the node's lock: whether [va, va + bytes) is a range no pinned or registered host memory
  // of the process overlaps (and not empty, nor past the end of the address space).
  bool freeHostRange(uint64_t va, uint64_t bytes) const {
    auto next = hostRanges_.lower_bound(va);
    return bytes != 0 && va + bytes >= va && (next == hostRanges_.end() || next->first >= va + bytes) &&
           (next == hostRanges_.begin() || va - std::prev(next)->first >= std::prev(next)->second.size);
  }

  Status mapHost(uint64_t va, uint64_t bytes, uint8_t* data) override {
    auto lock = n_.enter();
    if (!freeHostRange(va, bytes)) {
      return MCSIM_REFUSE(Status::kInvalidValue, "the range overlaps pinned host memory of this process");
    }
    hostRanges_[va] = PtxLaunch::Host{bytes, data, nullptr};
    return Status::kOk;
  }

  Status registerHost(uint64_t va, uint64_t bytes) override {
    auto lock = n_.enter();
    if (!freeHostRange(va, bytes)) {
      return MCSIM_REFUSE(Status::kInvalidValue, "the range overlaps pinned or registered host memory of this process");
    }
    PtxLaunch::Host h;
    h.size = bytes;
    // The embedded node runs kernels in this process, which owns the pages; a shared node's
    // process does not have them.
    h.data = window_.base() != 0 ? reinterpret_cast<uint8_t*>(va) : nullptr;
    h.registered = std::make_shared<PtxLaunch::Registered>();
    hostRanges_[va] = std::move(h);
    return Status::kOk;
  }

  Status unregisterHost(uint64_t va) override {
    std::shared_ptr<PtxLaunch::Registered> r;
    {
      auto lock = n_.enter();
      auto it = hostRanges_.find(va);
      if (it == hostRanges_.end() || it->second.registered == nullptr) {
        return MCSIM_REFUSE(Status::kInvalidValue, "no registered host memory of this process there");
      }
      r = it->second.registered;
      hostRanges_.erase(it);
    }
    // Launches taken in before still hold the range: from now on they find it revoked, and a warp
    // turn that is in it now ends before this returns (not under the node's lock, which a turn
    // may need).
    r->revoked.store(true);
    std::unique_lock<std::shared_mutex> turnsInIt(r->access);
    return Status::kOk;
  }

  Status unmapHost(uint64_t va, const uint8_t* data) override {
    auto lock = n_.enter();
    auto it = hostRanges_.find(va);
    if (it == hostRanges_.end() || it->second.data != data) {
      return MCSIM_REFUSE(Status::kInvalidValue, "no pinned host memory of this process there");
    }
    hostRanges_.erase(it);
    return Status::kOk;
  }

  Status loadObjects(const std::string& key, uint64_t offset, const std::string& piece, bool* held) override {
    auto lock = n_.enter();
    uint64_t size = 0;
    if (!RelocatableObjects::parseKey(key, &size)) {
      return MCSIM_REFUSE(Status::kInvalidValue, "the key names no relocatable objects a node takes");
    }
    *held = true;
    if (heldObjects_.count(key) != 0) return Status::kOk;
    // Sent by another process (or, on the embedded node, read by this process's driver).
    if (std::shared_ptr<RelocatableObjects> live = RelocatableObjects::find(key)) {
      heldObjects_[key] = std::move(live);
      if (objectDraft_.key == key) dropObjectDraft();
      return Status::kOk;
    }
    *held = false;
    if (piece.empty()) return offset == 0 ? Status::kOk : MCSIM_REFUSE(Status::kInvalidValue, "an empty piece past 0");
    const bool begins = offset == 0;
    if (!begins && (objectDraft_.key != key || offset != objectDraft_.bytes.size())) {
      return MCSIM_REFUSE(Status::kInvalidValue, "the piece is not at the end of the objects being sent");
    }
    if (piece.size() > size - offset) return MCSIM_REFUSE(Status::kInvalidValue, "the piece goes past the key's size");
    const uint64_t kept = begins ? objectDraft_.bytes.size() : 0;  // a new set replaces the draft
    if (n_.objectDraftBytes - kept + piece.size() + RelocatableObjects::liveTextBytes() > kMaxObjectsNodeBytes) {
      return MCSIM_REFUSE(Status::kOutOfMemory, "the node holds as many relocatable objects as it takes");
    }
    if (offset + piece.size() < size) {
      if (begins) dropObjectDraft();
      objectDraft_.key = key;
      objectDraft_.bytes += piece;
      n_.objectDraftBytes += piece.size();
      return Status::kOk;
    }
    // The last piece: the whole set, checked and read; refused, the draft stays as it was.
    std::string error;
    std::shared_ptr<RelocatableObjects> objects =
        RelocatableObjects::fromSent(key, begins ? piece : objectDraft_.bytes + piece, &error);
    if (objects == nullptr) {
      std::fprintf(stderr, "mcsim: node: relocatable objects refused: %s\n", error.c_str());
      return MCSIM_REFUSE(Status::kInvalidValue, error);
    }
    // Only a shared node is ever sent a set (the embedded node finds its driver's): its log says so.
    std::fprintf(stderr, "mcsim: node: relocatable objects %s: %zu objects, %llu bytes of PTX\n", key.c_str(),
                 objects->objects(), static_cast<unsigned long long>(objects->textBytes()));
    dropObjectDraft();
    heldObjects_[key] = std::move(objects);
    *held = true;
    return Status::kOk;
  }

  Status waitFor(const WorkDone& w, uint64_t* ps) override {
    const auto pinned = n_.admitRequest();  // taken in like any request; the wait itself is outside the lock
    model::Engine& engine = n_.engine;
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
    *ps = engine.wait(w, abandoned_.get());
    return *ps == model::Engine::kGaveUp ? Status::kHang : Status::kOk;
  }

  size_t abandonWaits(int pid, const std::string& who) override {
    abandoned_->store(true);
    size_t stopped = 0;
    if (n_.engine.started()) {
      n_.engine.wakeWaiters();
      stopped = n_.model->stopKernels(abandoned_);
    }
    std::lock_guard<OrderedMutex> lock(n_.mu);
    std::vector<uint64_t> teams;
    for (uint64_t object : handles_.objects()) {
      if (isMulticastId(object)) teams.push_back(object);
    }
    n_.waiter.abandon(pid, who, teams);
    return stopped;
  }

  Status poll(const WorkDone& w, uint64_t hostPs, bool* done) override {
    const auto pinned = n_.admitRequest();
    model::Engine& engine = n_.engine;
    engine.settle();  // done or not as of the request's run
    if (hostPs == 0) {
      *done = w->done();
      if (!*done) engine.advance(n_.pollIntervalPs, w);
      return Status::kOk;
    }
    // The host asks at its own clock: time runs up to it (or until the work is done), and work
    // done later than the host's clock is not done yet for it. The driver moves its clock on by
    // the polling interval for the next query.
    const uint64_t now = engine.nowPs();
    if (!w->done() && now < hostPs) engine.advance(hostPs - now, w);
    *done = w->done() && w->donePs() <= hostPs;
    return Status::kOk;
  }

  uint64_t nowPs() override {
    const auto pinned = n_.admitRequest();  // a clock read is a request like any other: where it falls decides what it reads
    return n_.engine.nowPs();
  }
  Status advanceTime(uint64_t ps, uint64_t* reachedPs) override {
    const auto pinned = n_.admitRequest();
    *reachedPs = n_.engine.advance(ps);
    return Status::kOk;
  }
  Status isDone(const WorkDone& w, bool* done) override {
    const auto pinned = n_.admitRequest();
    n_.engine.settle();  // done or not as of the request's run
    *done = w->done();
    return Status::kOk;
  }

  // ---- Multicast ----

  Status multicastCreate(const MulticastProps& props, uint64_t* handle) override {
    auto lock = n_.enter();
    uint64_t id = 0;
    Status s = n_.multicast.create(props, &id);
    if (s != Status::kOk) return s;
    *handle = handles_.add(id, false);
    return Status::kOk;
  }

  Status multicastAddDevice(uint64_t handle, int device) override {
    auto lock = n_.enter();
    MulticastObject* mc = multicastOf(handle);
    if (mc == nullptr) return MCSIM_REFUSE(Status::kInvalidValue, "mcHandle is not a live multicast object of this process");
    return n_.multicast.addDevice(*mc, device);
  }

  Status multicastBindMem(uint64_t mcHandle, int device, uint64_t mcOffset, uint64_t memHandle,
                          uint64_t memOffset, uint64_t size) override {
    auto lock = n_.enter();
    // The memory is named by handle; it is looked up again after any wait, since another
    // thread may release it meanwhile.
    auto source = [&](BindSource* src) {
      const HandleEntry* h = handles_.find(memHandle);
      if (h == nullptr) return MCSIM_REFUSE(Status::kInvalidValue, "memHandle is not a live handle of this process");
      if (isMulticastId(h->object)) {
        return MCSIM_REFUSE(Status::kInvalidValue, "memHandle is a multicast object, not physical memory");
      }
      return n_.multicast.bindSourceOf(h->object, memOffset, size, src);
    };
    return n_.multicast.bind(lock, "cuMulticastBindMem", [&] { return multicastOf(mcHandle); }, device, mcOffset,
                             size, source, number_);
  }

  Status multicastBindAddr(uint64_t mcHandle, int device, uint64_t mcOffset, uint64_t va,
                           uint64_t size) override {
    auto lock = n_.enter();
    auto source = [&](BindSource* src) {
      // The range must lie in one mapping of memory from cuMemCreate or a pool; cuMemAlloc
      // memory is refused (the reference names cuMemCreate and cudaMallocAsync only).
      const model::Mapping* m = space_.space().mappingContaining(va);
      if (m == nullptr || isMulticastId(m->alloc) || size > m->va + m->size - va) {
        return MCSIM_REFUSE(Status::kInvalidValue, "the range is not inside one mapping of physical memory");
      }
      if (n_.objects.at(m->alloc).kind == AllocKind::kLinear) {
        return MCSIM_REFUSE(Status::kInvalidValue, "cuMemAlloc memory cannot be bound; bind memory from cuMemCreate "
                            "or a memory pool");
      }
      return n_.multicast.bindSourceOf(m->alloc, m->allocOffset + (va - m->va), size, src);
    };
    return n_.multicast.bind(lock, "cuMulticastBindAddr", [&] { return multicastOf(mcHandle); }, device, mcOffset,
                             size, source, number_);
  }

  Status multicastUnbind(uint64_t mcHandle, int device, uint64_t mcOffset, uint64_t size) override {
    auto lock = n_.enter();
    MulticastObject* mc = multicastOf(mcHandle);
    if (mc == nullptr) return MCSIM_REFUSE(Status::kInvalidValue, "mcHandle is not a live multicast object of this process");
    return n_.multicast.unbind(*mc, device, mcOffset, size);
  }

  FabricManagerState fabricManagerState() override {
    auto lock = n_.enter();
    return n_.multicast.state();
  }

  void setFabricManagerState(FabricManagerState state) override {
    auto lock = n_.enter();
    n_.multicast.setState(state);
  }

  // ---- Faults ----

  bool faultsActive() const override { return n_.faults.active(); }

  FaultOutcome onEntry(const char* symbol, int device, int rank, const FaultArgument* args,
                       size_t argCount, bool fabricMoment) override {
    auto lock = n_.enter();
    return n_.faults.onEntry(lock, symbol, device, rank, args, argCount, fabricMoment);
  }

  void installFaultPlan(std::vector<FaultRule> rules, uint64_t seed) override {
    auto lock = n_.enter();
    n_.faults.install(std::move(rules), seed);
  }

  void releaseFault(const std::string& label) override {
    auto lock = n_.enter();
    n_.faults.release(label);
  }

  std::vector<FaultRuleCounts> faultCounts() override {
    auto lock = n_.enter();
    return n_.faults.counts();
  }

  std::vector<FaultRule> faultRules() override {
    auto lock = n_.enter();
    return n_.faults.rules();
  }

  bool imexChannelPresent() const override { return n_.health.imexPresent.load(); }

  bool nvlinkUp(int gpu) override {
    auto lock = n_.enter();
    return n_.health.links.attached(gpu);
  }

  // ---- State ----

  uint64_t stateDigest() override {
    auto lock = n_.enter();
    // An allocation that only a since-closed descriptor kept is already gone in fact (the close
    // happened outside mcsim); sweep it first, so that no later call appears to change state.
    n_.objects.sweep();
    return n_.digest();
  }

  NodeStats stats() override {
    auto lock = n_.enter();
    n_.objects.sweep();
    return n_.collectStats();
  }

  model::EngineStats engineStats() override { return n_.engine.stats(); }

  std::vector<Holding> holdings() override {
    auto lock = n_.enter();
    std::vector<Holding> out;
    for (const auto& [value, object] : handles_.values()) {
      if (isMulticastId(object)) {
        const MulticastObject* mc = n_.multicast.live(object);
        out.push_back(Holding{Holding::Kind::kMulticastHandle, value, mc != nullptr ? mc->props.size : 0, -1});
      } else {
        const Allocation* a = n_.objects.find(object);
        const bool onDevice = a != nullptr && a->props.location.kind == LocationKind::kDevice;
        out.push_back(Holding{Holding::Kind::kAllocationHandle, value, a != nullptr ? a->props.size : 0,
                              onDevice ? a->props.location.id : -1});
      }
    }
    space_.addHoldings(&out);
    return out;
  }

  NodeStats held() override {
    std::lock_guard<OrderedMutex> lock(n_.mu);
    NodeStats s;
    addToStats(&s);
    return s;
  }

  // What is this process's, for the node's counts and digest. Under the node's lock.
  void addToStats(NodeStats* s) const {
    s->handles += handles_.size();
    s->reservations += space_.reservationCount();
    s->mappings += space_.mappingCount();
    s->ptxModules += ptxModules_.size();
  }
  void addProcessDigest(model::Digest& d) const {
    d.add(number_);
    handles_.addToDigest(d);
    space_.addToDigest(d);
  }
  // The object is gone from the node.
  void forgetObject(uint64_t id) { handles_.forget(id); }

 private:
  // The live multicast object a handle value names, or nullptr.
  MulticastObject* multicastOf(uint64_t handle) {
    const HandleEntry* h = handles_.find(handle);
    if (h == nullptr || !isMulticastId(h->object)) return nullptr;
    return n_.multicast.live(h->object);
  }

  // A launch of a program's own kernel (DeviceOp::ptxModule): its module, its configuration, and
  // the backing bytes of every allocation its device may reach through this process's mappings
  // (backed now, so that the simulation thread never touches the object table; node_ptx.cpp).
  Status planPtxLaunch(const DeviceOp& op, DeviceWork* work) {
    auto it = ptxModules_.find(op.ptxModule);
    if (it == ptxModules_.end()) return Status::kInvalidHandle;
    auto launch = std::make_shared<PtxLaunch>();
    launch->module = it->second;
    launch->kernel = op.label;
    launch->config.grid = ptx::Dim3{op.gridX, op.gridY, op.gridZ};
    launch->config.block = ptx::Dim3{op.blockX, op.blockY, op.blockZ};
    launch->config.dynamicShared = op.dynamicShared;
    launch->config.params = op.params;
    launch->config.moduleGlobalsVa = op.globalsVa;
    launch->config.residentBlocks = op.residentBlocks;
    if (op.printfFifoBytes != 0) launch->config.printfFifoBytes = op.printfFifoBytes;
    launch->space = &space_.space();
    launch->spaceLock = space_.space().mappingsLock();
    bool backed = true;
    space_.space().forEachMapping([&](const model::Mapping& m) {
      if (!backed || launch->backing.count(m.alloc) != 0 || launch->multicast.count(m.alloc) != 0) return;
      const size_t d = static_cast<size_t>(op.engineDevice);
      if (d >= m.access.size() || m.access[d] == Access::kNone) return;
      if (isMulticastId(m.alloc)) {
        backed = snapshotMulticast(m.alloc, launch.get(), work);
        return;
      }
      const Allocation& a = n_.objects.at(m.alloc);
      std::vector<uint8_t*> data;
      if (!n_.objects.back({model::Segment{m.alloc, 0, a.props.size}}, &data)) {
        backed = false;
        return;
      }
      PtxLaunch::Backing b;
      b.data = data[0];
      b.size = a.props.size;
      b.ref.device = a.props.location.kind == LocationKind::kDevice;
      b.ref.gpu = b.ref.device ? a.props.location.id : -1;
      b.ref.alloc = m.alloc;
      launch->backing[m.alloc] = b;
      work->keepAlive.push_back(a.region);
    });
    if (!backed) return Status::kOutOfMemory;
    launch->host = hostRanges_;
    work->ptx = std::move(launch);
    return Status::kOk;
  }

  // A multicast object a PTX launch maps, as it is now: its members and the memory each has bound
  // (backed now, as planPtxLaunch backs plain allocations), for the launch's multimem accesses.
  bool snapshotMulticast(uint64_t id, PtxLaunch* launch, DeviceWork* work) {
    const MulticastObject* o = n_.fabric.find(id);
    if (o == nullptr) return true;  // released: its mapping reads as unmapped
    PtxLaunch::Multicast& mc = launch->multicast[id];
    mc.numDevices = static_cast<uint32_t>(o->props.numDevices);
    mc.devices = o->members;
    std::sort(mc.devices.begin(), mc.devices.end());
    for (const auto& [key, b] : o->bindings) {
      std::vector<uint8_t*> data;
      if (!n_.objects.back({model::Segment{b.alloc, b.allocOffset, b.size}}, &data)) return false;
      const Allocation& a = n_.objects.at(b.alloc);
      PtxLaunch::Bound bound;
      bound.mcOffset = b.mcOffset;
      bound.size = b.size;
      bound.data = data[0];
      bound.ref.device = a.props.location.kind == LocationKind::kDevice;
      bound.ref.gpu = bound.ref.device ? a.props.location.id : -1;
      bound.ref.alloc = b.alloc;
      bound.ref.offset = b.allocOffset;
      mc.bindings[key] = bound;
      work->keepAlive.push_back(a.region);
    }
    return true;
  }

  // Its pinned host memory (allocHost, mapHost), by address; under the node's lock.
  std::map<uint64_t, PtxLaunch::Host> hostRanges_;
  // Relocatable objects this process gave the node or found there (loadObjects), by key: the
  // node keeps a set while a process holds it (or a module of its linked from it runs).
  std::map<std::string, std::shared_ptr<RelocatableObjects>> heldObjects_;
  struct ObjectDraft {
    std::string key;
    std::string bytes;
  } objectDraft_;  // the set this process is sending
  void dropObjectDraft() {
    n_.objectDraftBytes -= objectDraft_.bytes.size();
    objectDraft_ = ObjectDraft();
  }
  // Modules registered for the executor (loadPtx), and those whose text is still coming.
  std::map<uint64_t, std::shared_ptr<const ptx::Module>> ptxModules_;
  std::map<uint64_t, std::string> ptxDrafts_;
  uint64_t nextPtx_ = 0;

  int tray_ = -1;  // the compute tray the process runs on, its host (-1: the whole node)
  DeviceWindow window_;  // given back after the node (destroyed last)
  std::shared_ptr<NodeHost::State> state_;
  NodeHost::State& n_;  // *state_
  uint64_t number_ = 0;  // the order in which it attached
  // The process died: its waits for device work give up, and its kernels stop (DeviceWork).
  std::shared_ptr<std::atomic<bool>> abandoned_ = std::make_shared<std::atomic<bool>>(false);
  uint64_t vaBase_;
  ProcessSpace space_;
  HandleTable handles_;
  // The process's PTX launches whose printf output it has not taken yet (takeKernelOutput), in
  // launch order. A program that launches and never synchronises (it polls) keeps no finished
  // launch that printed nothing: those are let go every so often.
  std::mutex printingMu_;
  std::vector<WorkDone> printing_;
  size_t printingPruneAt_ = 1024;

  void notePrinting(const WorkDone& w) {
    std::lock_guard<std::mutex> lock(printingMu_);
    if (printing_.size() >= printingPruneAt_) {
      const auto silent = [](const WorkDone& p) { return p->done() && !p->output(); };
      printing_.erase(std::remove_if(printing_.begin(), printing_.end(), silent), printing_.end());
      printingPruneAt_ = std::max<size_t>(1024, 2 * printing_.size());
    }
    printing_.push_back(w);
  }
};

}  // namespace

void NodeHost::State::forgetEverywhere(uint64_t id) {
  for (const auto& [number, p] : processes) p->forgetObject(id);
  if (isMulticastId(id)) waiter.progress();  // waiters on this object can now only fail
}

NodeStats NodeHost::State::collectStats() const {
  NodeStats s;
  s.allocations = objects.count();
  for (const auto& [number, p] : processes) p->addToStats(&s);
  s.exportedFds = exports.count();
  s.residentBytes = objects.residentBytes();
  s.multicastObjects = fabric.objectCount();
  s.freeMulticastSlots = fabric.freeSlots();
  return s;
}

uint64_t NodeHost::State::digest() const {
  model::Digest d;
  objects.addAllocationsToDigest(d);
  exports.addToDigest(d);
  ipcEvents.addToDigest(d);
  objects.addUsageToDigest(d);
  fabric.addToDigest(d);
  // Every attached process's part, in the order they attached.
  d.add(processes.size());
  for (const auto& [number, p] : processes) p->addProcessDigest(d);
  return d.value();
}

NodeHost::NodeHost(Preset preset, const NodeSettings& settings)
    : state_(std::make_shared<State>(std::move(preset), settings)) {}

NodeHost::~NodeHost() = default;

const Preset& NodeHost::preset() const { return state_->preset; }

std::unique_ptr<AttachedNode> NodeHost::attach(uint64_t vaBase, int tray) {
  return std::make_unique<ProcessNode>(state_, vaBase, DeviceWindow{}, tray);
}

std::unique_ptr<AttachedNode> NodeHost::attach(DeviceWindow window) {
  const uint64_t base = window.base();
  return std::make_unique<ProcessNode>(state_, base, std::move(window));
}

void NodeHost::setIdentity(const std::string& name) {
  std::lock_guard<OrderedMutex> lock(state_->mu);
  // FNV-1a of the name: the same node name gives the same FABRIC handle bytes on every run.
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : name) h = (h ^ c) * 0x100000001b3ull;
  state_->exports.setIdentity(h);
}

void NodeHost::setThreadCounter(std::function<int()> count) {
  std::lock_guard<OrderedMutex> lock(state_->mu);
  state_->waiter.setThreadCounter(std::move(count));
}


std::string NodeHost::lastHangReport() {
  // A wait for device work this thread gave up (Engine::wait), else a team wait's.
  std::string device = model::Engine::takeHangReport();
  if (!device.empty()) return device;
  std::lock_guard<OrderedMutex> lock(state_->mu);
  return state_->waiter.lastReport();
}

void NodeHost::installFaultPlan(std::vector<FaultRule> rules, uint64_t seed) {
  std::lock_guard<OrderedMutex> lock(state_->mu);
  state_->faults.install(std::move(rules), seed);
}

std::vector<std::string> NodeHost::unfiredFaultRules() {
  std::lock_guard<OrderedMutex> lock(state_->mu);
  return unfiredRuleLines(state_->faults.rules(), state_->faults.counts());
}

NodeStats NodeHost::stats() {
  std::lock_guard<OrderedMutex> lock(state_->mu);
  state_->objects.sweep();
  return state_->collectStats();
}

bool NodeHost::movesData() const { return state_->functional; }

uint64_t NodeHost::simulatedPs() { return state_->engine.nowPs(); }

void NodeHost::finishRequest() {
  {
    OrderedLock lock(state_->mu);
    state_->admission.finish(lock);
  }
  // A request's pin ends with the request. finish() takes in (and so pins) a request that never
  // entered the node (a transport request such as Op::stage); its pin used to stay with the
  // serving thread until that thread's next request, and for ever when the process died first:
  // no run could start again, and the node froze.
  model::Engine::release();
}

void NodeHost::followAdmissions(std::vector<Admission> schedule, double patienceSeconds) {
  std::lock_guard<OrderedMutex> lock(state_->mu);
  state_->admission.follow(std::move(schedule), patienceSeconds);
}

void NodeHost::skipAdmissions(const std::vector<uint64_t>& numbers) {
  std::lock_guard<OrderedMutex> lock(state_->mu);
  state_->admission.skip(numbers);
}

std::string NodeHost::admissionDivergence() {
  std::lock_guard<OrderedMutex> lock(state_->mu);
  return state_->admission.divergence();
}

size_t NodeHost::processCount() {
  std::lock_guard<OrderedMutex> lock(state_->mu);
  return state_->processes.size();
}

std::unique_ptr<Node> makeEmbeddedNode(Preset preset, const NodeSettings& settings) {
  DeviceWindow window = DeviceWindow::reserve();
  if (window.base() == 0) return nullptr;
  NodeHost host(std::move(preset), settings);
  return host.attach(std::move(window));
}

}  // namespace mcsim::fabric
