#include "fabric/node_channel.h"

namespace mcsim::fabric::channel {

void put(wire::Writer& w, const AllocationProps& p) {
  w.put(p.location.kind).put(p.location.id).put(p.size).put(p.handleTypes).put(p.compressionType);
  w.put(p.gpuDirectRdmaCapable).put(p.usage);
}

void get(wire::Reader& r, AllocationProps* p) {
  p->location.kind = r.get<LocationKind>();
  p->location.id = r.get<int>();
  p->size = r.get<uint64_t>();
  p->handleTypes = r.get<uint32_t>();
  p->compressionType = r.get<uint8_t>();
  p->gpuDirectRdmaCapable = r.getBool();
  p->usage = r.get<uint16_t>();
}

void put(wire::Writer& w, const PointerInfo& p) {
  w.put(p.mapped).put(p.linear).put(p.pooled).put(p.location.kind).put(p.location.id).put(p.allocationId);
  w.put(p.handleTypes).put(p.gpuDirectRdmaCapable).put(p.access).put(p.mappingBase).put(p.mappingSize);
  w.put(p.reservationBase).put(p.reservationSize).put(p.requestedSize);
}

void get(wire::Reader& r, PointerInfo* p) {
  p->mapped = r.getBool();
  p->linear = r.getBool();
  p->pooled = r.getBool();
  p->location.kind = r.get<LocationKind>();
  p->location.id = r.get<int>();
  p->allocationId = r.get<uint64_t>();
  p->handleTypes = r.get<uint32_t>();
  p->gpuDirectRdmaCapable = r.getBool();
  p->access = r.get<Access>();
  p->mappingBase = r.get<uint64_t>();
  p->mappingSize = r.get<uint64_t>();
  p->reservationBase = r.get<uint64_t>();
  p->reservationSize = r.get<uint64_t>();
  p->requestedSize = r.get<uint64_t>();
}

void put(wire::Writer& w, const NodeStats& s) {
  w.put(s.allocations).put(s.handles).put(s.reservations).put(s.mappings).put(s.exportedFds);
  w.put(s.residentBytes).put(s.multicastObjects).put(s.freeMulticastSlots);
}

void get(wire::Reader& r, NodeStats* s) {
  s->allocations = r.get<uint64_t>();
  s->handles = r.get<uint64_t>();
  s->reservations = r.get<uint64_t>();
  s->mappings = r.get<uint64_t>();
  s->exportedFds = r.get<uint64_t>();
  s->residentBytes = r.get<uint64_t>();
  s->multicastObjects = r.get<uint64_t>();
  s->freeMulticastSlots = r.get<int>();
}

void put(wire::Writer& w, const MulticastProps& p) { w.put(p.numDevices).put(p.size).put(p.handleTypes); }

void get(wire::Reader& r, MulticastProps* p) {
  p->numDevices = r.get<unsigned>();
  p->size = r.get<uint64_t>();
  p->handleTypes = r.get<uint32_t>();
}

void put(wire::Writer& w, const Admission& a) { w.put(a.number).put(a.finishedBefore).put(a.simRuns); }

void get(wire::Reader& r, Admission* a) {
  a->number = r.get<uint64_t>();
  a->finishedBefore = r.get<uint64_t>();
  a->simRuns = r.get<uint64_t>();
}

void put(wire::Writer& w, const DeviceOp& op) {
  w.put(op.kind).put(op.engineDevice).put(op.dst).put(op.src).put(op.dstDevice).put(op.srcDevice);
  w.put(op.dstPinned).put(op.srcPinned).put(op.dstAccessor).put(op.srcAccessor).put(op.bytes);
  w.put(op.value).put(op.elementBytes).put(op.count).put(op.callerWaits).put(op.stageSource).put(op.crossGpu);
  w.put<uint64_t>(op.steps.size());
  for (const KernelStep& k : op.steps) {
    w.put(k.kind).put(k.dst).put(k.src).put(k.src2).put(k.mc).put(k.bytes).put(k.count).put(k.dtype);
    w.put(k.op).put(k.value);
  }
  w.put(op.threads).put(op.blocks).put(op.bytesInFlightPerThread).put(op.label).put(op.stream);
}

void get(wire::Reader& r, DeviceOp* op) {
  op->kind = r.get<DeviceOp::Kind>();
  op->engineDevice = r.get<int>();
  op->dst = r.get<uint64_t>();
  op->src = r.get<uint64_t>();
  op->dstDevice = r.getBool();
  op->srcDevice = r.getBool();
  op->dstPinned = r.getBool();
  op->srcPinned = r.getBool();
  op->dstAccessor = r.get<int>();
  op->srcAccessor = r.get<int>();
  op->bytes = r.get<uint64_t>();
  op->value = r.get<uint32_t>();
  op->elementBytes = r.get<unsigned>();
  op->count = r.get<uint64_t>();
  op->callerWaits = r.getBool();
  op->stageSource = r.getBool();
  op->crossGpu = r.getBool();
  op->steps.resize(r.getCount(80));
  for (KernelStep& k : op->steps) {
    k.kind = r.get<KernelStep::Kind>();
    k.dst = r.get<uint64_t>();
    k.src = r.get<uint64_t>();
    k.src2 = r.get<uint64_t>();
    k.mc = r.get<uint64_t>();
    k.bytes = r.get<uint64_t>();
    k.count = r.get<uint64_t>();
    k.dtype = r.get<uint32_t>();
    k.op = r.get<uint32_t>();
    k.value = r.get<uint32_t>();
  }
  op->threads = r.get<uint64_t>();
  op->blocks = r.get<uint64_t>();
  op->bytesInFlightPerThread = r.get<uint32_t>();
  op->label = r.getString();
  op->stream = r.getString();
}

void put(wire::Writer& w, const std::vector<FaultRule>& rules) {
  w.put<uint64_t>(rules.size());
  for (const FaultRule& f : rules) {
    w.put(f.file).put(f.line).put(f.text).put(f.point).put(f.entry).put(f.prefix).put(f.devices).put(f.ranks);
    w.put(f.gpu).put<uint64_t>(f.args.size());
    for (const ArgFilter& a : f.args) {
      w.put(a.name).put(a.op).put(a.text).put<uint64_t>(a.values.size());
      for (const ArgValue& v : a.values) w.put(v.number).put(v.symbol);
    }
    w.put(f.nth).put(f.after).put(f.max).put(f.probability).put(f.atPs).put(f.always);
    w.put(f.action).put(f.result).put(f.label).put(f.timePs).put(f.untilPs).put(f.forPs).put(f.state);
  }
}

void get(wire::Reader& r, std::vector<FaultRule>* rules) {
  rules->resize(r.getCount(64));
  for (FaultRule& f : *rules) {
    f.file = r.getString();
    f.line = r.get<int>();
    f.text = r.getString();
    f.point = r.get<FaultPointKind>();
    f.entry = r.getString();
    f.prefix = r.getBool();
    f.devices = r.getVector<int>();
    f.ranks = r.getVector<int>();
    f.gpu = r.get<int>();
    f.args.resize(r.getCount(32));
    for (ArgFilter& a : f.args) {
      a.name = r.getString();
      a.op = r.get<ArgOp>();
      a.text = r.getBool();
      a.values.resize(r.getCount(16));
      for (ArgValue& v : a.values) {
        v.number = r.get<uint64_t>();
        v.symbol = r.getString();
      }
    }
    f.nth = r.get<uint64_t>();
    f.after = r.get<uint64_t>();
    f.max = r.get<uint64_t>();
    f.probability = r.getDouble();
    f.atPs = r.get<int64_t>();
    f.always = r.getBool();
    f.action = r.get<FaultActionKind>();
    f.result = r.getString();
    f.label = r.getString();
    f.timePs = r.get<uint64_t>();
    f.untilPs = r.get<int64_t>();
    f.forPs = r.get<int64_t>();
    f.state = r.getString();
  }
}

void put(wire::Writer& w, const std::vector<FaultRuleCounts>& counts) {
  w.put<uint64_t>(counts.size());
  for (const FaultRuleCounts& c : counts) w.put(c.matched).put(c.fired);
}

void get(wire::Reader& r, std::vector<FaultRuleCounts>* counts) {
  counts->resize(r.getCount(16));
  for (FaultRuleCounts& c : *counts) {
    c.matched = r.get<uint64_t>();
    c.fired = r.get<uint64_t>();
  }
}

}  // namespace mcsim::fabric::channel
