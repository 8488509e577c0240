// 2D and 3D copies and 2D memsets (cuMemcpy2D*, cuMemcpy3D*, cuMemsetD2D*): a box of rows, each
// row one copy or fill of the 1D kind, in row order on the same stream; a box whose rows are
// contiguous on both sides is one operation. CUDA arrays are not modelled: a copy that names one
// is CUDA_ERROR_NOT_SUPPORTED, said once on stderr.
#include <atomic>
#include <cstdio>

#include "driver/memory.h"
#include "driver/graph.h"

#include "driver/driver.h"
#include "driver/enum_field.h"

namespace mcsim::driver {

namespace {

// One side of a copy: where its box starts, and how its rows and slices are laid out.
struct Side {
  bool host = false;      // a host pointer (else a device or unified address)
  bool unified = false;   // CU_MEMORYTYPE_UNIFIED: the address says which
  uint64_t base = 0;      // first byte of the box
  size_t pitch = 0;       // bytes from a row to the next
  size_t slice = 0;       // bytes from a slice to the next (pitch x the side's height)
  CUcontext ctx = nullptr;  // a peer copy's context for this side (nullptr: the current one)
};

CUresult arrayNotModelled(const char* call) {
  static std::atomic<bool> told{false};
  if (!told.exchange(true, std::memory_order_relaxed)) {
    std::fprintf(stderr, "mcsim: CUDA arrays are not modelled; %s of an array returns CUDA_ERROR_NOT_SUPPORTED\n", call);
  }
  return CUDA_ERROR_NOT_SUPPORTED;
}

CUresult side(const char* call, uint32_t type, const void* host, CUdeviceptr device, size_t x, size_t y, size_t z,
              size_t pitch, size_t height, Side* out) {
  switch (type) {
    case CU_MEMORYTYPE_HOST: out->host = true; out->base = reinterpret_cast<uint64_t>(host); break;
    case CU_MEMORYTYPE_DEVICE: out->base = device; break;
    case CU_MEMORYTYPE_UNIFIED: out->unified = true; out->base = device; break;
    case CU_MEMORYTYPE_ARRAY: return arrayNotModelled(call);
    default: return CUDA_ERROR_INVALID_VALUE;
  }
  if (out->base == 0) return CUDA_ERROR_INVALID_VALUE;
  out->pitch = pitch;
  out->slice = pitch * height;
  out->base += z * out->slice + y * pitch + x;
  return CUDA_SUCCESS;
}

CUresult copyRow(const Side& dst, const Side& src, uint64_t dstAddr, uint64_t srcAddr, size_t bytes, const Ordering& o) {
  if (dst.unified || src.unified || (dst.host && src.host)) return copyUnified(dstAddr, srcAddr, bytes, o);
  if (src.host) return copyHtoD(dstAddr, reinterpret_cast<const void*>(srcAddr), bytes, o);
  if (dst.host) return copyDtoH(reinterpret_cast<void*>(dstAddr), srcAddr, bytes, o);
  // Device to device: a peer copy reads with the source context's device, writes with the
  // destination's.
  if (dst.ctx != nullptr || src.ctx != nullptr) return copyPeer(dstAddr, dst.ctx, srcAddr, src.ctx, bytes, o);
  return copyDtoD(dstAddr, srcAddr, bytes, o);
}

// A box of `depth` slices of `height` rows of `width` bytes.
CUresult copyBox(const Side& dst, const Side& src, size_t width, size_t height, size_t depth, const Ordering& o) {
  const bool dense = (height == 1 || (src.pitch == width && dst.pitch == width)) &&
                     (depth == 1 || (src.slice == width * height && dst.slice == width * height));
  if (dense) return copyRow(dst, src, dst.base, src.base, width * height * depth, o);
  for (size_t z = 0; z < depth; ++z) {
    for (size_t row = 0; row < height; ++row) {
      MCSIM_TRY(copyRow(dst, src, dst.base + z * dst.slice + row * dst.pitch, src.base + z * src.slice + row * src.pitch,
                        width, o));
    }
  }
  return CUDA_SUCCESS;
}

// A pitch narrower than a row (past its x offset) would overlap rows; a height shorter than the
// box's (past its y offset) would overlap slices.
bool layoutFits(size_t width, size_t height, size_t depth, size_t x, size_t y, size_t pitch, size_t sideHeight) {
  if ((height > 1 || depth > 1) && pitch < width + x) return false;
  if (depth > 1 && sideHeight < height + y) return false;
  return true;
}

template <typename Copy3D>
CUresult copy3DSides(const char* call, const Copy3D* c, CUcontext dstCtx, CUcontext srcCtx, const Ordering& o) {
  if (c == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (c->WidthInBytes == 0 || c->Height == 0 || c->Depth == 0) return CUDA_SUCCESS;
  if (!layoutFits(c->WidthInBytes, c->Height, c->Depth, c->srcXInBytes, c->srcY, c->srcPitch, c->srcHeight) ||
      !layoutFits(c->WidthInBytes, c->Height, c->Depth, c->dstXInBytes, c->dstY, c->dstPitch, c->dstHeight)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  Side src, dst;
  MCSIM_TRY(side(call, enumField(c->srcMemoryType), c->srcHost, c->srcDevice, c->srcXInBytes, c->srcY, c->srcZ,
                 c->srcPitch, c->srcHeight, &src));
  MCSIM_TRY(side(call, enumField(c->dstMemoryType), c->dstHost, c->dstDevice, c->dstXInBytes, c->dstY, c->dstZ,
                 c->dstPitch, c->dstHeight, &dst));
  src.ctx = srcCtx;
  dst.ctx = dstCtx;
  return copyBox(dst, src, c->WidthInBytes, c->Height, c->Depth, o);
}

}  // namespace

// Each call below is one graph node when captured, however many rows it copies or sets.
CUresult copy2D(const CUDA_MEMCPY2D* c, const Ordering& o) {
  NodeCall call(CU_GRAPH_NODE_TYPE_MEMCPY);
  if (c == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (c->WidthInBytes == 0 || c->Height == 0) return CUDA_SUCCESS;
  if (!layoutFits(c->WidthInBytes, c->Height, 1, c->srcXInBytes, c->srcY, c->srcPitch, 0) ||
      !layoutFits(c->WidthInBytes, c->Height, 1, c->dstXInBytes, c->dstY, c->dstPitch, 0)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  Side src, dst;
  MCSIM_TRY(side("cuMemcpy2D", enumField(c->srcMemoryType), c->srcHost, c->srcDevice, c->srcXInBytes, c->srcY, 0,
                 c->srcPitch, 0, &src));
  MCSIM_TRY(side("cuMemcpy2D", enumField(c->dstMemoryType), c->dstHost, c->dstDevice, c->dstXInBytes, c->dstY, 0,
                 c->dstPitch, 0, &dst));
  return copyBox(dst, src, c->WidthInBytes, c->Height, 1, o);
}

CUresult copy3D(const CUDA_MEMCPY3D* c, const Ordering& o) {
  NodeCall call(CU_GRAPH_NODE_TYPE_MEMCPY);
  if (c != nullptr) {
    call.haveCopy = true;
    call.copy = *c;
  }
  return copy3DSides("cuMemcpy3D", c, nullptr, nullptr, o);
}

CUresult copy3DPeer(const CUDA_MEMCPY3D_PEER* c, const Ordering& o) {
  NodeCall call(CU_GRAPH_NODE_TYPE_MEMCPY);
  if (c == nullptr) return CUDA_ERROR_INVALID_VALUE;
  // NULL names the current context, as for cuMemcpyPeer; copyPeer checks the others.
  return copy3DSides("cuMemcpy3DPeer", c, c->dstContext, c->srcContext, o);
}

CUresult fill2D(CUdeviceptr dst, size_t pitch, uint32_t value, unsigned elementBytes, size_t width, size_t height,
                const Ordering& o) {
  NodeCall call(CU_GRAPH_NODE_TYPE_MEMSET);
  call.haveMemset = true;
  call.memset = CUDA_MEMSET_NODE_PARAMS{dst, pitch, value, elementBytes, width, height};
  if (width == 0 || height == 0) return CUDA_SUCCESS;
  if (height > 1 && pitch < width * elementBytes) return CUDA_ERROR_INVALID_VALUE;
  if (pitch == width * elementBytes) return fill(dst, value, elementBytes, width * height, o);
  for (size_t row = 0; row < height; ++row) MCSIM_TRY(fill(dst + row * pitch, value, elementBytes, width, o));
  return CUDA_SUCCESS;
}

}  // namespace mcsim::driver

using namespace mcsim::driver;

#include "driver/memory2d_entries.inc"
