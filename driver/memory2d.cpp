// 2D copies and memsets (cuMemcpy2D*, cuMemsetD2D*): a rectangle of rows, each row one copy or fill
// of the 1D kind, in row order on the same stream; a rectangle whose rows are contiguous on both
// sides is one operation. CUDA arrays are not modelled.
#include "driver/memory.h"

#include "driver/driver.h"

namespace mcsim::driver {

namespace {

struct Side {
  bool host = false;      // a host pointer (else a device or unified address)
  bool unified = false;   // CU_MEMORYTYPE_UNIFIED: the address says which
  uint64_t base = 0;      // first byte of the rectangle
  size_t pitch = 0;
};

CUresult side(CUmemorytype type, const void* host, CUdeviceptr device, size_t x, size_t y, size_t pitch, Side* out) {
  switch (type) {
    case CU_MEMORYTYPE_HOST: out->host = true; out->base = reinterpret_cast<uint64_t>(host); break;
    case CU_MEMORYTYPE_DEVICE: out->base = device; break;
    case CU_MEMORYTYPE_UNIFIED: out->unified = true; out->base = device; break;
    case CU_MEMORYTYPE_ARRAY: return CUDA_ERROR_NOT_SUPPORTED;  // CUDA arrays are not modelled
    default: return CUDA_ERROR_INVALID_VALUE;
  }
  if (out->base == 0) return CUDA_ERROR_INVALID_VALUE;
  out->pitch = pitch;
  out->base += y * pitch + x;
  return CUDA_SUCCESS;
}

CUresult copyRow(const Side& dst, const Side& src, uint64_t dstAddr, uint64_t srcAddr, size_t bytes, const Ordering& o) {
  if (dst.unified || src.unified || (dst.host && src.host)) return copyUnified(dstAddr, srcAddr, bytes, o);
  if (src.host) return copyHtoD(dstAddr, reinterpret_cast<const void*>(srcAddr), bytes, o);
  if (dst.host) return copyDtoH(reinterpret_cast<void*>(dstAddr), srcAddr, bytes, o);
  return copyDtoD(dstAddr, srcAddr, bytes, o);
}

}  // namespace

CUresult copy2D(const CUDA_MEMCPY2D* c, const Ordering& o) {
  if (c == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (c->WidthInBytes == 0 || c->Height == 0) return CUDA_SUCCESS;
  // A pitch narrower than a row (past its x offset) would overlap rows.
  if (c->Height > 1 && (c->srcPitch < c->WidthInBytes + c->srcXInBytes || c->dstPitch < c->WidthInBytes + c->dstXInBytes)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  Side src, dst;
  MCSIM_TRY(side(c->srcMemoryType, c->srcHost, c->srcDevice, c->srcXInBytes, c->srcY, c->srcPitch, &src));
  MCSIM_TRY(side(c->dstMemoryType, c->dstHost, c->dstDevice, c->dstXInBytes, c->dstY, c->dstPitch, &dst));
  if (c->Height == 1 || (src.pitch == c->WidthInBytes && dst.pitch == c->WidthInBytes)) {
    return copyRow(dst, src, dst.base, src.base, c->WidthInBytes * c->Height, o);
  }
  for (size_t row = 0; row < c->Height; ++row) {
    MCSIM_TRY(copyRow(dst, src, dst.base + row * dst.pitch, src.base + row * src.pitch, c->WidthInBytes, o));
  }
  return CUDA_SUCCESS;
}

CUresult fill2D(CUdeviceptr dst, size_t pitch, uint32_t value, unsigned elementBytes, size_t width, size_t height,
                const Ordering& o) {
  if (width == 0 || height == 0) return CUDA_SUCCESS;
  if (height > 1 && pitch < width * elementBytes) return CUDA_ERROR_INVALID_VALUE;
  if (pitch == width * elementBytes) return fill(dst, value, elementBytes, width * height, o);
  for (size_t row = 0; row < height; ++row) MCSIM_TRY(fill(dst + row * pitch, value, elementBytes, width, o));
  return CUDA_SUCCESS;
}

}  // namespace mcsim::driver

using namespace mcsim::driver;

#include "driver/memory2d_entries.inc"
