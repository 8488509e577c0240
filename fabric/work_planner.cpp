// Work planning and address resolution for device operations (work_planner.h).
#include "fabric/work_planner.h"

#include <algorithm>

#include "fabric/work_slice.h"
#include "model/reduction.h"
#include "model/timeline.h"

namespace mcsim::fabric {

using model::AddressSpace;
using model::Segment;

// One side of a device operation, resolved: pieces of memory with their data pointers.
struct WorkPlanner::Side {
  std::vector<Segment> segs;       // device memory
  std::vector<uint8_t*> data;      // per segment (nullptr: never written, reads as zeros)
  bool device = true;
  uint8_t* host = nullptr;
  bool pinned = false;
};

// A side split into (memory, data) runs in address order.
struct WorkPlanner::Run {
  MemoryRef ref;
  uint8_t* data;
  uint64_t len;
};

WorkPlanner::WorkPlanner(const Preset& preset, ObjectTable& objects, const FabricManager& fabric,
                         const FabricHealth& health, bool functional)
    : preset_(preset), objects_(objects), fabric_(fabric), health_(health), functional_(functional) {}

// The device whose memory a segment list starts in (-1: host memory).
int WorkPlanner::deviceOf(const std::vector<Segment>& segs) const {
  if (segs.empty() || isMulticastId(segs[0].alloc)) return -1;
  const Location& l = objects_.at(segs[0].alloc).props.location;
  return l.kind == LocationKind::kDevice ? l.id : -1;
}

// Whether a copy between two GPUs reaches cuMemAlloc memory of a GPU other than the engine's that
// the stream's context has no peer access to (DeviceOp::peers): the driver then stages it through
// host memory. VMM and pool memory are reached through their mappings' access rights instead.
bool WorkPlanner::stagedPeer(const DeviceOp& op, const Side& src, const Side& dst) const {
  if (!src.device || !dst.device) return false;
  const int a = deviceOf(src.segs), b = deviceOf(dst.segs);
  if (a < 0 || b < 0 || a == b) return false;
  auto unreached = [&](const Side& side, int gpu) {
    if (gpu == op.engineDevice || objects_.at(side.segs[0].alloc).kind != AllocKind::kLinear) return false;
    return std::find(op.peers.begin(), op.peers.end(), gpu) == op.peers.end();
  };
  return unreached(src, a) || unreached(dst, b);
}

// Where a resolved segment's memory is, for the timing model.
MemoryRef WorkPlanner::memoryRefOf(const Segment& sg) const {
  const Allocation& a = objects_.at(sg.alloc);
  MemoryRef m;
  m.device = a.props.location.kind == LocationKind::kDevice;
  m.gpu = m.device ? a.props.location.id : -1;
  m.alloc = sg.alloc;
  m.offset = sg.allocOffset;
  return m;
}

// cuMemAlloc memory is used within what was asked for, one allocation at a time: the real driver
// refuses a copy or memset that runs past the requested size even inside the allocation's 2 MiB
// page, or on into the next allocation (fault.memset_past_end, fault.dtod_oob,
// fault.dtod_oob_2MiB_alloc, fault.htod_oob, fault.dtoh_oob).
bool WorkPlanner::withinLinear(const std::vector<Segment>& segs) const {
  for (const Segment& sg : segs) {
    // A multicast mapping is reached by multimem instructions, not by copies or memsets.
    if (isMulticastId(sg.alloc)) return false;
    const Allocation& a = objects_.at(sg.alloc);
    if (a.kind != AllocKind::kVmm && (segs.size() > 1 || sg.allocOffset + sg.len > a.requested)) return false;
  }
  return true;
}

Status WorkPlanner::resolveSide(const AddressSpace& space, uint64_t addr, bool device, bool pinned, uint64_t bytes,
                                int accessor, bool write, Side* side, DeviceWork* work) {
  side->device = device;
  if (!device) {
    side->host = reinterpret_cast<uint8_t*>(addr);
    side->pinned = pinned;
    return Status::kOk;
  }
  Status s = space.resolve(addr, bytes, accessor, write ? Access::kReadWrite : Access::kRead, &side->segs);
  if (s == Status::kOk && !withinLinear(side->segs)) s = Status::kIllegalAddress;
  if (s != Status::kOk) return s;
  if (write) {
    std::vector<uint8_t*> dst;
    if (!objects_.back(side->segs, &dst)) return Status::kOutOfMemory;
    side->data = std::move(dst);
  } else {
    for (const uint8_t* p : objects_.peek(side->segs)) side->data.push_back(const_cast<uint8_t*>(p));
  }
  // The work in flight keeps the backing memory alive, whatever the program frees meanwhile.
  for (const Segment& sg : side->segs) {
    const Allocation& a = objects_.at(sg.alloc);
    if (a.region) work->keepAlive.push_back(a.region);
  }
  return Status::kOk;
}

// Splits a side into (memory, data) runs of at most `bytes` in address order.
std::vector<WorkPlanner::Run> WorkPlanner::runsOf(const Side& side, uint64_t bytes) const {
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
Status WorkPlanner::resolvePlain(const AddressSpace& space, uint64_t va, uint64_t bytes, int accessor, bool write,
                                 MemorySpan* span, DeviceWork* work) {
  std::vector<Segment> segs;
  Status s = space.resolve(va, bytes, accessor, write ? Access::kReadWrite : Access::kRead, &segs);
  if (s != Status::kOk) return Status::kIllegalAddress;
  for (const Segment& sg : segs) {
    // Plain loads and stores do not reach a multicast mapping.
    if (isMulticastId(sg.alloc)) return Status::kIllegalAddress;
  }
  std::vector<uint8_t*> data;
  if (!objects_.back(segs, &data)) return Status::kOutOfMemory;
  for (size_t i = 0; i < segs.size(); ++i) {
    span->push_back(MemoryRun{memoryRefOf(segs[i]), data[i], segs[i].len});
    work->keepAlive.push_back(objects_.at(segs[i].alloc).region);
  }
  return Status::kOk;
}

// A multimem operand: a range of a multicast mapping, resolved to every team member's bound
// memory behind it (members in ascending device order). A range that is not a multicast
// mapping, or that some member has no memory bound for, is an illegal address.
Status WorkPlanner::resolveMulticast(const AddressSpace& space, uint64_t va, uint64_t bytes, int accessor,
                                     std::vector<int>* gpus, std::vector<MemorySpan>* members, DeviceWork* work) {
  std::vector<Segment> segs;
  Status s = space.resolve(va, bytes, accessor, Access::kReadWrite, &segs);
  if (s != Status::kOk) return Status::kIllegalAddress;
  const MulticastObject* mc = nullptr;
  for (const Segment& sg : segs) {
    if (!isMulticastId(sg.alloc)) return Status::kIllegalAddress;
    const MulticastObject* o = fabric_.find(sg.alloc);
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
        if (!objects_.back({bound}, &data)) return Status::kOutOfMemory;
        span.push_back(MemoryRun{memoryRefOf(bound), data[0], n});
        work->keepAlive.push_back(objects_.at(b->alloc).region);
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
Status WorkPlanner::planKernel(const AddressSpace& space, const std::shared_ptr<std::atomic<bool>>& abandoned,
                               const DeviceOp& op, DeviceWork* work) {
  using K = KernelStep::Kind;
  work->kind = DeviceWork::Kind::kKernel;
  work->abandoned = abandoned;
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
        s = resolvePlain(space, k.src, r.bytes, dev, false, &r.src, work);
        if (s == Status::kOk) s = resolvePlain(space, k.dst, r.bytes, dev, true, &r.dst, work);
        break;
      case K::kReduce:
        s = resolvePlain(space, k.src, r.bytes, dev, false, &r.src, work);
        if (s == Status::kOk) s = resolvePlain(space, k.src2, r.bytes, dev, false, &r.src2, work);
        if (s == Status::kOk) s = resolvePlain(space, k.dst, r.bytes, dev, true, &r.dst, work);
        break;
      case K::kMultimemStore:
      case K::kMultimemReduce:
        s = resolvePlain(space, k.src, r.bytes, dev, false, &r.src, work);
        if (s == Status::kOk) s = resolveMulticast(space, k.mc, r.bytes, dev, &r.memberGpus, &r.members, work);
        break;
      case K::kMultimemLoadReduce:
        s = resolveMulticast(space, k.mc, r.bytes, dev, &r.memberGpus, &r.members, work);
        if (s == Status::kOk) s = resolvePlain(space, k.dst, r.bytes, dev, true, &r.dst, work);
        break;
      case K::kMultimemLoadReduceStore:
      case K::kSignal:
        s = resolveMulticast(space, k.mc, r.bytes, dev, &r.memberGpus, &r.members, work);
        break;
      case K::kWait:
        s = resolvePlain(space, k.dst, r.bytes, dev, false, &r.dst, work);
        break;
    }
    if (s != Status::kOk) return s;
    work->steps.push_back(std::move(r));
  }
  return Status::kOk;
}

// A stream memory operation's wait: a one-step kernel of the front end that waits for its word.
Status WorkPlanner::planWaitValue(const AddressSpace& space, const std::shared_ptr<std::atomic<bool>>& abandoned,
                                  const DeviceOp& op, DeviceWork* work) {
  if (op.elementBytes != 4 && op.elementBytes != 8) return Status::kInvalidValue;
  if (op.dst % op.elementBytes != 0) return Status::kMisaligned;
  work->kind = DeviceWork::Kind::kKernel;
  work->memoryOperation = true;
  work->abandoned = abandoned;
  work->label = op.label;
  ResolvedStep r;
  r.kind = KernelStep::Kind::kWait;
  r.bytes = op.elementBytes;
  r.waitVa = op.dst;
  r.streamWait = true;
  r.compare = op.waitCompare;
  r.operand = op.waitValue;
  const Status s = resolvePlain(space, op.dst, r.bytes, op.dstAccessor, false, &r.dst, work);
  if (s != Status::kOk) return s;
  work->steps.push_back(std::move(r));
  return Status::kOk;
}

Status WorkPlanner::plan(const AddressSpace& space, const std::shared_ptr<std::atomic<bool>>& abandoned,
                         const DeviceOp& op, DeviceWork* work) {
  if (op.engineDevice < 0 || op.engineDevice >= preset_.gpuCount) return Status::kInvalidDevice;
  work->engineGpu = op.engineDevice;
  work->functional = functional_;
  work->stream = op.stream;
  const Status s = planWork(space, abandoned, op, work);
  if (s == Status::kOk && model::Timeline::active() != nullptr) work->slice = describeWork(op, *work);
  return s;
}

Status WorkPlanner::planWork(const AddressSpace& space, const std::shared_ptr<std::atomic<bool>>& abandoned,
                             const DeviceOp& op, DeviceWork* work) {
  if (op.kind == DeviceOp::Kind::kKernel) return planKernel(space, abandoned, op, work);
  if (op.kind == DeviceOp::Kind::kWaitValue) return planWaitValue(space, abandoned, op, work);
  if (op.kind == DeviceOp::Kind::kMarker) {
    work->kind = DeviceWork::Kind::kMarker;
    work->crossGpu = op.crossGpu;
    return Status::kOk;
  }
  if (op.kind == DeviceOp::Kind::kFill) {
    if (op.elementBytes == 0 || op.count > UINT64_MAX / op.elementBytes) return Status::kInvalidValue;
    const uint64_t bytes = op.count * op.elementBytes;
    Side dst;
    Status s = resolveSide(space, op.dst, true, false, bytes, op.dstAccessor, true, &dst, work);
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
  Status s = resolveSide(space, op.src, op.srcDevice, op.srcPinned, op.bytes, op.srcAccessor, false, &src, work);
  if (s == Status::kOk) {
    s = resolveSide(space, op.dst, op.dstDevice, op.dstPinned, op.bytes, op.dstAccessor, true, &dst, work);
  }
  // A copy between two GPUs needs an NVLink path between them: a switch that is up with a live
  // link from each (model/link_health.h). Host memory takes PCIe.
  if (s == Status::kOk && op.srcDevice && op.dstDevice && !health_.links.healthy()) {
    const int a = deviceOf(src.segs), b = deviceOf(dst.segs);
    if (a >= 0 && b >= 0 && !health_.links.reach(a, b)) s = Status::kLinkDown;
  }
  if (s != Status::kOk) return s;
  work->kind = DeviceWork::Kind::kCopy;
  work->stagedPeer = stagedPeer(op, src, dst);
  // Pageable host data is staged now, as the real driver does, unless the caller waits anyway.
  if (!op.srcDevice && (op.stageSource || (!op.srcPinned && !op.callerWaits)) && functional_) {
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

}  // namespace mcsim::fabric
