#include "fabric/node.h"

namespace mcsim::fabric {

namespace {

Status submitAndWait(Node& node, const DeviceOp& op) {
  WorkDone done;
  const Status s = node.submit(op, {}, &done);
  if (s == Status::kOk) node.waitFor(done);
  return s;
}

}  // namespace

Status Node::write(uint64_t va, const void* src, uint64_t bytes, int accessor) {
  DeviceOp op;
  op.kind = DeviceOp::Kind::kCopy;
  op.engineDevice = op.dstAccessor = op.srcAccessor = accessor;
  op.dst = va;
  op.src = reinterpret_cast<uint64_t>(src);
  op.srcDevice = false;
  op.bytes = bytes;
  op.callerWaits = true;
  return submitAndWait(*this, op);
}

Status Node::read(void* dst, uint64_t va, uint64_t bytes, int accessor) {
  DeviceOp op;
  op.kind = DeviceOp::Kind::kCopy;
  op.engineDevice = op.dstAccessor = op.srcAccessor = accessor;
  op.dst = reinterpret_cast<uint64_t>(dst);
  op.dstDevice = false;
  op.src = va;
  op.bytes = bytes;
  op.callerWaits = true;
  return submitAndWait(*this, op);
}

Status Node::copy(uint64_t dstVa, uint64_t srcVa, uint64_t bytes, int dstAccessor, int srcAccessor) {
  DeviceOp op;
  op.kind = DeviceOp::Kind::kCopy;
  op.engineDevice = srcAccessor;
  op.dst = dstVa;
  op.src = srcVa;
  op.dstAccessor = dstAccessor;
  op.srcAccessor = srcAccessor;
  op.bytes = bytes;
  op.callerWaits = true;
  return submitAndWait(*this, op);
}

Status Node::fill(uint64_t va, uint32_t value, unsigned elementBytes, uint64_t count, int accessor) {
  DeviceOp op;
  op.kind = DeviceOp::Kind::kFill;
  op.engineDevice = op.dstAccessor = accessor;
  op.dst = va;
  op.value = value;
  op.elementBytes = elementBytes;
  op.count = count;
  op.callerWaits = true;
  return submitAndWait(*this, op);
}

}  // namespace mcsim::fabric
