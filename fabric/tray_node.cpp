// The tray's view of a rack node (tray_node.h).
#include "fabric/tray_node.h"

#include <string>
#include <utility>

namespace mcsim::fabric {

namespace {

// Forwards every call to the wrapped node; TrayNode overrides those that name devices.
class ForwardingNode : public Node {
 public:
  explicit ForwardingNode(std::unique_ptr<Node> inner) : inner_(std::move(inner)) {}

  const Preset& preset() const override { return inner_->preset(); }
  uint64_t vaBase() const override { return inner_->vaBase(); }
  uint64_t vaLimit() const override { return inner_->vaLimit(); }
  bool faultsActive() const override { return inner_->faultsActive(); }
  bool imexChannelPresent() const override { return inner_->imexChannelPresent(); }
  bool lost() const override { return inner_->lost(); }
  Status advanceTime(uint64_t ps, uint64_t* reachedPs) override { return inner_->advanceTime(ps, reachedPs); }
  void beginTraced(std::vector<uint64_t> tags) override { inner_->beginTraced(std::move(tags)); }
  std::vector<Admission> endTraced() override { return inner_->endTraced(); }
  std::string sharedSettings() const override { return inner_->sharedSettings(); }

#define NODE_OP(Return, name, params) \
  Return name(MCSIM_NODE_DECLS(params)) override { return forward(&Node::name MCSIM_NODE_COMMA_NAMES(params)); }
#define NODE_CALL(Return, name, params) NODE_OP(Return, name, params)
#define NODE_WIRE(name, inputs, outputs)
#include "fabric/node_ops.def"

 protected:
  template <class R, class... P, class... A>
  R forward(R (Node::*f)(P...), A&&... args) {
    return (inner_.get()->*f)(std::forward<A>(args)...);
  }
  Node& inner() { return *inner_; }

 private:
  std::unique_ptr<Node> inner_;
};

class TrayNode final : public ForwardingNode {
 public:
  TrayNode(std::unique_ptr<Node> inner, const TraySpan& span) : ForwardingNode(std::move(inner)), span_(span) {}

  Status createAllocation(const AllocationProps& props, uint64_t* handle) override {
    return inner().createAllocation(toRack(props), handle);
  }
  Status handleProps(uint64_t handle, AllocationProps* props) override {
    const Status s = inner().handleProps(handle, props);
    if (s == Status::kOk) props->location = toTray(props->location);
    return s;
  }
  Status setAccess(uint64_t va, uint64_t size, int device, Access access) override {
    return inner().setAccess(va, size, span_.rackGpuOf(device), access);
  }
  Status getAccess(uint64_t va, int device, Access* access) override {
    return inner().getAccess(va, span_.rackGpuOf(device), access);
  }
  Status allocLinear(int device, uint64_t size, uint64_t* va) override {
    return inner().allocLinear(span_.rackGpuOf(device), size, va);
  }
  Status allocPooled(const AllocationProps& props, uint64_t size, const std::vector<int>& accessors,
                     uint64_t* va) override {
    std::vector<int> rack;
    rack.reserve(accessors.size());
    for (int d : accessors) rack.push_back(span_.rackGpuOf(d));
    return inner().allocPooled(toRack(props), size, rack, va);
  }
  Status setPooledAccess(uint64_t va, int device, Access access) override {
    return inner().setPooledAccess(va, span_.rackGpuOf(device), access);
  }
  Status pointerInfo(uint64_t va, int device, PointerInfo* info) override {
    const Status s = inner().pointerInfo(va, span_.rackGpuOf(device), info);
    if (s == Status::kOk) info->location = toTray(info->location);
    return s;
  }
  Status memoryInfo(int device, uint64_t* free, uint64_t* total) override {
    return inner().memoryInfo(span_.rackGpuOf(device), free, total);
  }
  Status submit(const DeviceOp& op, const std::vector<WorkDone>& after, WorkDone* done) override {
    DeviceOp rack = op;
    rack.engineDevice = span_.rackGpuOf(op.engineDevice);
    rack.dstAccessor = span_.rackGpuOf(op.dstAccessor);
    rack.srcAccessor = span_.rackGpuOf(op.srcAccessor);
    for (int& p : rack.peers) p = span_.rackGpuOf(p);
    return inner().submit(rack, after, done);
  }
  Status multicastAddDevice(uint64_t handle, int device) override {
    return inner().multicastAddDevice(handle, span_.rackGpuOf(device));
  }
  Status multicastBindMem(uint64_t mcHandle, int device, uint64_t mcOffset, uint64_t memHandle, uint64_t memOffset,
                          uint64_t size) override {
    return inner().multicastBindMem(mcHandle, span_.rackGpuOf(device), mcOffset, memHandle, memOffset, size);
  }
  Status multicastBindAddr(uint64_t mcHandle, int device, uint64_t mcOffset, uint64_t va, uint64_t size) override {
    return inner().multicastBindAddr(mcHandle, span_.rackGpuOf(device), mcOffset, va, size);
  }
  Status multicastUnbind(uint64_t mcHandle, int device, uint64_t mcOffset, uint64_t size) override {
    return inner().multicastUnbind(mcHandle, span_.rackGpuOf(device), mcOffset, size);
  }
  FaultOutcome onEntry(const char* symbol, int device, int rank, const FaultArgument* args, size_t argCount,
                       bool fabricMoment) override {
    return inner().onEntry(symbol, span_.rackGpuOf(device), rank, args, argCount, fabricMoment);
  }
  bool nvlinkUp(int gpu) override { return inner().nvlinkUp(span_.rackGpuOf(gpu)); }
  std::vector<Holding> holdings() override {
    std::vector<Holding> h = inner().holdings();
    for (Holding& x : h) x.device = span_.ordinalOf(x.device);
    return h;
  }

 private:
  Location toRack(Location l) const {
    if (l.kind == LocationKind::kDevice) l.id = span_.rackGpuOf(l.id);
    if (l.kind == LocationKind::kHostNuma) l.id += span_.firstNumaNode;
    return l;
  }
  Location toTray(Location l) const {
    if (l.kind == LocationKind::kDevice) l.id = span_.ordinalOf(l.id);
    if (l.kind == LocationKind::kHostNuma && l.id >= span_.firstNumaNode) l.id -= span_.firstNumaNode;
    return l;
  }
  AllocationProps toRack(AllocationProps p) const {
    p.location = toRack(p.location);
    return p;
  }

  TraySpan span_;
};

}  // namespace

std::unique_ptr<Node> makeTrayNode(std::unique_ptr<Node> inner, const TraySpan& span) {
  return std::make_unique<TrayNode>(std::move(inner), span);
}

}  // namespace mcsim::fabric
