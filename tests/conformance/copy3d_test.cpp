// 3D copies of pitched memory (cuMemcpy3D, cuMemcpy3DAsync, cuMemcpy3DPeer): a box of slices of
// rows, each side laid out by its own pitch and slice height; validated as the 2D copies are.
// CUDA arrays are not modelled (docs/runtime.md).
#include <cstring>
#include <vector>

#include "tests/conformance/conformance.h"

namespace {

using Copy3D = conformance::DriverTest;

constexpr size_t kWidth = 48, kHeight = 4, kDepth = 3;    // the box
constexpr size_t kPitch = 128, kSliceHeight = 6;          // the device side's layout
constexpr size_t kX = 8, kY = 1, kZ = 1;                  // the box's place on the device side
constexpr size_t kDeviceBytes = kPitch * kSliceHeight * (kDepth + kZ);

CUDA_MEMCPY3D hostToDevice(const void* host, CUdeviceptr d) {
  CUDA_MEMCPY3D c;
  std::memset(&c, 0, sizeof c);
  c.srcMemoryType = CU_MEMORYTYPE_HOST;
  c.srcHost = host;
  c.srcPitch = kWidth;
  c.srcHeight = kHeight;
  c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  c.dstDevice = d;
  c.dstXInBytes = kX;
  c.dstY = kY;
  c.dstZ = kZ;
  c.dstPitch = kPitch;
  c.dstHeight = kSliceHeight;
  c.WidthInBytes = kWidth;
  c.Height = kHeight;
  c.Depth = kDepth;
  return c;
}

std::vector<unsigned char> pattern() {
  std::vector<unsigned char> v(kWidth * kHeight * kDepth);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<unsigned char>(i * 7 + 1);
  return v;
}

// The device bytes a box copy to (kX, kY, kZ) leaves: the pattern inside the box, `fill` outside.
void expectLayout(const std::vector<unsigned char>& device, const std::vector<unsigned char>& box, unsigned char fill) {
  for (size_t z = 0; z < kDepth + kZ; ++z) {
    for (size_t y = 0; y < kSliceHeight; ++y) {
      for (size_t x = 0; x < kPitch; ++x) {
        const bool inside = z >= kZ && y >= kY && y < kY + kHeight && x >= kX && x < kX + kWidth;
        const unsigned char want = inside ? box[((z - kZ) * kHeight + (y - kY)) * kWidth + (x - kX)] : fill;
        ASSERT_EQ(want, device[(z * kSliceHeight + y) * kPitch + x]) << "at x " << x << " y " << y << " z " << z;
      }
    }
  }
}

TEST_F(Copy3D, HostToPitchedDeviceAndBackKeepsTheLayout) {
  CUdeviceptr d = 0;
  ASSERT_OK(cuMemAlloc(&d, kDeviceBytes));
  ASSERT_OK(cuMemsetD8(d, 0xee, kDeviceBytes));
  const std::vector<unsigned char> box = pattern();
  CUDA_MEMCPY3D c = hostToDevice(box.data(), d);
  ASSERT_OK(cuMemcpy3D(&c));
  std::vector<unsigned char> device(kDeviceBytes);
  ASSERT_OK(cuMemcpyDtoH(device.data(), d, kDeviceBytes));
  expectLayout(device, box, 0xee);
  // Back to a dense host box, asynchronously on a stream.
  CUDA_MEMCPY3D back;
  std::memset(&back, 0, sizeof back);
  back.srcMemoryType = CU_MEMORYTYPE_DEVICE;
  back.srcDevice = d;
  back.srcXInBytes = kX;
  back.srcY = kY;
  back.srcZ = kZ;
  back.srcPitch = kPitch;
  back.srcHeight = kSliceHeight;
  std::vector<unsigned char> out(box.size(), 0);
  back.dstMemoryType = CU_MEMORYTYPE_HOST;
  back.dstHost = out.data();
  back.dstPitch = kWidth;
  back.dstHeight = kHeight;
  back.WidthInBytes = kWidth;
  back.Height = kHeight;
  back.Depth = kDepth;
  CUstream s = nullptr;
  ASSERT_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  ASSERT_OK(cuMemcpy3DAsync(&back, s));
  ASSERT_OK(cuStreamSynchronize(s));
  EXPECT_EQ(box, out);
  EXPECT_OK(cuStreamDestroy(s));
  EXPECT_OK(cuMemFree(d));
}

TEST_F(Copy3D, LayoutsThatOverlapAreRefusedAndEmptyBoxesDoNothing) {
  CUdeviceptr d = 0;
  ASSERT_OK(cuMemAlloc(&d, kDeviceBytes));
  const std::vector<unsigned char> box = pattern();
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemcpy3D(nullptr));
  CUDA_MEMCPY3D c = hostToDevice(box.data(), d);
  c.dstPitch = kWidth + kX - 1;  // rows would overlap
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemcpy3D(&c));
  c = hostToDevice(box.data(), d);
  c.srcPitch = kWidth - 1;
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemcpy3D(&c));
  c = hostToDevice(box.data(), d);
  c.dstHeight = kHeight + kY - 1;  // slices would overlap
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemcpy3D(&c));
  c = hostToDevice(box.data(), d);
  c.dstMemoryType = static_cast<CUmemorytype>(0x7f);
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemcpy3D(&c));
  c = hostToDevice(box.data(), d);
  c.Depth = 0;
  EXPECT_OK(cuMemcpy3D(&c));
  EXPECT_OK(cuMemFree(d));
}

// mcsim only for now: on two real H100s (580.159.04) this test crashed the process inside the
// driver (docs/real-driver.md, 2026-11-25), most likely at cuMemcpy3DPeer(nullptr), which mcsim
// answers with INVALID_VALUE; until a run splits the cases, mcsim's answers here are its own.
#ifndef MCSIM_CONFORMANCE_REAL
TEST_F(Copy3D, PeerCopyBetweenDevices) {
  REQUIRE_DEVICES(2);
  CUcontext ctx1 = nullptr;
  ASSERT_OK(cuDevicePrimaryCtxRetain(&ctx1, 1));
  CUdeviceptr d0 = 0, d1 = 0;
  ASSERT_OK(cuMemAlloc(&d0, kDeviceBytes));
  const std::vector<unsigned char> box = pattern();
  CUDA_MEMCPY3D c = hostToDevice(box.data(), d0);
  ASSERT_OK(cuMemcpy3D(&c));
  ASSERT_OK(cuCtxSetCurrent(ctx1));
  ASSERT_OK(cuMemAlloc(&d1, kDeviceBytes));
  ASSERT_OK(cuMemsetD8(d1, 0x11, kDeviceBytes));
  ASSERT_OK(cuCtxSetCurrent(ctx));
  CUDA_MEMCPY3D_PEER p;
  std::memset(&p, 0, sizeof p);
  p.srcMemoryType = CU_MEMORYTYPE_DEVICE;
  p.srcDevice = d0;
  p.srcContext = ctx;
  p.srcXInBytes = kX;
  p.srcY = kY;
  p.srcZ = kZ;
  p.srcPitch = kPitch;
  p.srcHeight = kSliceHeight;
  p.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  p.dstDevice = d1;
  p.dstContext = ctx1;
  p.dstXInBytes = kX;
  p.dstY = kY;
  p.dstZ = kZ;
  p.dstPitch = kPitch;
  p.dstHeight = kSliceHeight;
  p.WidthInBytes = kWidth;
  p.Height = kHeight;
  p.Depth = kDepth;
  ASSERT_OK(cuMemcpy3DPeer(&p));
  std::vector<unsigned char> device(kDeviceBytes);
  ASSERT_OK(cuMemcpyDtoH(device.data(), d1, kDeviceBytes));
  expectLayout(device, box, 0x11);
  ASSERT_OK(cuMemcpy3DPeerAsync(&p, nullptr));
  ASSERT_OK(cuCtxSynchronize());
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemcpy3DPeer(nullptr));
  EXPECT_OK(cuMemFree(d0));
  ASSERT_OK(cuCtxSetCurrent(ctx1));
  EXPECT_OK(cuMemFree(d1));
  ASSERT_OK(cuCtxSetCurrent(ctx));
  EXPECT_OK(cuDevicePrimaryCtxRelease(1));
}
#endif

}  // namespace
