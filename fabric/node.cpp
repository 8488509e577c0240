#include "fabric/node.h"

namespace mcsim::fabric {

namespace {

Status submitAndWait(Node& node, const DeviceOp& op) {
  WorkDone done;
  const Status s = node.submit(op, {}, &done);
  if (s != Status::kOk) return s;
  // The caller reads or reuses the memory next: work that never ran (a shared node gone) fails.
  uint64_t ps = 0;
  return node.waitFor(done, &ps);
}

// A copy the caller waits for; its copy engine is the reading device's.
DeviceOp waitedCopy(uint64_t dst, bool dstDevice, uint64_t src, bool srcDevice, uint64_t bytes, int dstAccessor,
                    int srcAccessor) {
  DeviceOp op;
  op.kind = DeviceOp::Kind::kCopy;
  op.engineDevice = srcAccessor;
  op.dst = dst;
  op.dstDevice = dstDevice;
  op.src = src;
  op.srcDevice = srcDevice;
  op.dstAccessor = dstAccessor;
  op.srcAccessor = srcAccessor;
  op.bytes = bytes;
  op.callerWaits = true;
  return op;
}

}  // namespace

Status Node::write(uint64_t va, const void* src, uint64_t bytes, int accessor) {
  return submitAndWait(*this, waitedCopy(va, true, reinterpret_cast<uint64_t>(src), false, bytes, accessor, accessor));
}

Status Node::read(void* dst, uint64_t va, uint64_t bytes, int accessor) {
  return submitAndWait(*this, waitedCopy(reinterpret_cast<uint64_t>(dst), false, va, true, bytes, accessor, accessor));
}

Status Node::copy(uint64_t dstVa, uint64_t srcVa, uint64_t bytes, int dstAccessor, int srcAccessor) {
  return submitAndWait(*this, waitedCopy(dstVa, true, srcVa, true, bytes, dstAccessor, srcAccessor));
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
