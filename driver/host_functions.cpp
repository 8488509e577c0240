// Host functions in stream order (cuLaunchHostFunc, cuStreamAddCallback). A host function runs
// after everything submitted to its stream before it, and before anything submitted after it.
// mcsim keeps that order by running the function on the calling thread once the stream's earlier
// work is done, before the call returns: the program sees the order the real driver gives, and the
// run stays deterministic. What differs: the call blocks while the stream drains, where the real
// driver returns at once and runs the function on a thread of its own.
#include "driver/context.h"
#include "driver/driver.h"
#include "driver/graph.h"
#include "driver/stream.h"

namespace mcsim::driver {

CUresult launchHostFunctionEntry(CUstream s, CUhostFn fn, void* userData, bool perThreadDefault) {
  if (fn == nullptr) return CUDA_ERROR_INVALID_VALUE;
  StreamRef st;
  MCSIM_TRY(resolveStream(s, perThreadDefault, &st));
  // On a capturing stream the function becomes a host node, run at each launch of the graph.
  bool captured = false;
  MCSIM_TRY(captureHostFunction(st.get(), fn, userData, &captured));
  if (captured) return CUDA_SUCCESS;
  MCSIM_TRY(synchronizeStream(st.get()));
  fn(userData);
  return CUDA_SUCCESS;
}

// The callback learns the stream's state: CUDA_SUCCESS, or the error that stopped its work.
CUresult streamAddCallbackEntry(CUstream s, CUstreamCallback callback, void* userData, unsigned flags,
                                bool perThreadDefault) {
  if (callback == nullptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  StreamRef st;
  MCSIM_TRY(resolveStream(s, perThreadDefault, &st));
  // Stream callbacks cannot be captured (cuLaunchHostFunc is their capturable form).
  MCSIM_TRY(refuseWhileCapturing(st.get(), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED));
  const CUresult status = synchronizeStream(st.get());
  callback(s, status, userData);
  return CUDA_SUCCESS;
}

}  // namespace mcsim::driver

#include "driver/host_function_entries.inc"
