// What a program asks about stream capture (CUDA graphs). mcsim does not model graphs:
// cuStreamBeginCapture is unmodelled (driver/unmodelled.def), so no stream is ever capturing, and
// the queries answer so, as the real driver does for a stream that is not capturing: the status is
// CU_STREAM_CAPTURE_STATUS_NONE and the other outputs of cuStreamGetCaptureInfo are left alone.
// Libraries ask these before every allocation or launch they would have to treat differently
// under capture (PyTorch's caching allocator, NCCL), so the answers matter even without graphs.
#include "driver/driver.h"
#include "driver/stream.h"

namespace mcsim::driver {

CUresult captureStatusEntry(CUstream s, CUstreamCaptureStatus* status, bool perThreadDefault) {
  if (status == nullptr) return CUDA_ERROR_INVALID_VALUE;
  StreamRef st;
  MCSIM_TRY(resolveStream(s, perThreadDefault, &st));
  *status = CU_STREAM_CAPTURE_STATUS_NONE;
  return CUDA_SUCCESS;
}

namespace {
// The calling thread's capture interaction mode; it governs what unsafe calls a capture in
// progress allows, and is kept as set even though no capture is ever in progress.
thread_local CUstreamCaptureMode tCaptureMode = CU_STREAM_CAPTURE_MODE_GLOBAL;
}  // namespace

}  // namespace mcsim::driver

extern "C" CUresult CUDAAPI cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode* mode) {
  MCSIM_REQUIRE_INIT();
  if (mode == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (*mode != CU_STREAM_CAPTURE_MODE_GLOBAL && *mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
      *mode != CU_STREAM_CAPTURE_MODE_RELAXED) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  const CUstreamCaptureMode previous = mcsim::driver::tCaptureMode;
  mcsim::driver::tCaptureMode = *mode;
  *mode = previous;
  return CUDA_SUCCESS;
}

#include "driver/stream_capture_entries.inc"
