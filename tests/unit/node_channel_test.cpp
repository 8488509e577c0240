// The shared node's wire form of a device operation (fabric/node_channel.cpp): every field the
// embedded node would see arrives at the node process unchanged, so that a kernel launched from an
// attached process is timed exactly as one launched in-process.
#include "fabric/node_channel.h"

#include <gtest/gtest.h>

#include <vector>

namespace mcsim::fabric {
namespace {

TEST(NodeChannel, ADeviceOpCrossesWithEveryField) {
  DeviceOp op;
  op.kind = DeviceOp::Kind::kKernel;
  op.engineDevice = 5;
  op.dst = 0x1111;
  op.src = 0x2222;
  op.dstDevice = false;
  op.srcDevice = true;
  op.dstPinned = true;
  op.srcPinned = false;
  op.dstAccessor = 3;
  op.srcAccessor = 4;
  op.bytes = 77;
  op.value = 0xabcd;
  op.elementBytes = 4;
  op.count = 19;
  op.callerWaits = true;
  op.stageSource = true;
  op.crossGpu = true;
  KernelStep k;
  k.kind = KernelStep::Kind::kMultimemLoadReduceStore;
  k.dst = 1;
  k.src = 2;
  k.src2 = 3;
  k.mc = 4;
  k.bytes = 5;
  k.count = 6;
  k.dtype = MCSIM_DTYPE_BF16X2;
  k.op = MCSIM_REDOP_MAX;
  k.value = 9;
  op.steps = {k, KernelStep{}};
  op.threads = 16 * 640;
  op.blocks = 16;
  op.bytesInFlightPerThread = 64;
  op.label = "mcsim_allreduce_nvls";
  op.stream = "stream 7";

  std::vector<uint8_t> bytes;
  wire::Writer w(&bytes);
  w.put(op);
  wire::Reader r(bytes.data(), bytes.size());
  DeviceOp back;
  r.read(&back);
  ASSERT_TRUE(r.ok());

  EXPECT_EQ(back.kind, op.kind);
  EXPECT_EQ(back.engineDevice, op.engineDevice);
  EXPECT_EQ(back.dst, op.dst);
  EXPECT_EQ(back.src, op.src);
  EXPECT_EQ(back.dstDevice, op.dstDevice);
  EXPECT_EQ(back.srcDevice, op.srcDevice);
  EXPECT_EQ(back.dstPinned, op.dstPinned);
  EXPECT_EQ(back.srcPinned, op.srcPinned);
  EXPECT_EQ(back.dstAccessor, op.dstAccessor);
  EXPECT_EQ(back.srcAccessor, op.srcAccessor);
  EXPECT_EQ(back.bytes, op.bytes);
  EXPECT_EQ(back.value, op.value);
  EXPECT_EQ(back.elementBytes, op.elementBytes);
  EXPECT_EQ(back.count, op.count);
  EXPECT_EQ(back.callerWaits, op.callerWaits);
  EXPECT_EQ(back.stageSource, op.stageSource);
  EXPECT_EQ(back.crossGpu, op.crossGpu);
  ASSERT_EQ(back.steps.size(), 2u);
  const KernelStep& b = back.steps[0];
  EXPECT_EQ(b.kind, k.kind);
  EXPECT_EQ(b.dst, k.dst);
  EXPECT_EQ(b.src, k.src);
  EXPECT_EQ(b.src2, k.src2);
  EXPECT_EQ(b.mc, k.mc);
  EXPECT_EQ(b.bytes, k.bytes);
  EXPECT_EQ(b.count, k.count);
  EXPECT_EQ(b.dtype, k.dtype);
  EXPECT_EQ(b.op, k.op);
  EXPECT_EQ(b.value, k.value);
  EXPECT_EQ(back.threads, op.threads);
  EXPECT_EQ(back.blocks, op.blocks);
  EXPECT_EQ(back.bytesInFlightPerThread, op.bytesInFlightPerThread);
  EXPECT_EQ(back.label, op.label);
  EXPECT_EQ(back.stream, op.stream);
}

TEST(NodeChannel, ATruncatedDeviceOpIsRefused) {
  DeviceOp op;
  op.kind = DeviceOp::Kind::kKernel;
  op.steps.resize(3);
  op.label = "k";
  std::vector<uint8_t> bytes;
  wire::Writer w(&bytes);
  w.put(op);
  for (size_t cut : {size_t{0}, size_t{1}, bytes.size() / 2, bytes.size() - 1}) {
    wire::Reader r(bytes.data(), cut);
    DeviceOp back;
    r.read(&back);
    EXPECT_FALSE(r.ok()) << "cut at " << cut;
  }
}

}  // namespace
}  // namespace mcsim::fabric
