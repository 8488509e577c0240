// What the real driver answers (its output: capture-probe-h200-2026-11-28.txt) in stream-capture corners (no multicast calls).
#include <cuda.h>
#include <cstdio>
#include <initializer_list>
#include <thread>
static const char* n(CUresult r) { const char* s = nullptr; cuGetErrorName(r, &s); return s ? s : "?"; }
static const char* st(CUstreamCaptureStatus s) {
  return s == CU_STREAM_CAPTURE_STATUS_NONE ? "NONE" : s == CU_STREAM_CAPTURE_STATUS_ACTIVE ? "ACTIVE" : "INVALIDATED";
}
#define P(label, expr) do { CUresult r_ = (expr); std::printf("%-60s %s\n", label, n(r_)); } while (0)
int main() {
  cuInit(0);
  CUdevice dev; cuDeviceGet(&dev, 0);
  CUcontext ctx; cuDevicePrimaryCtxRetain(&ctx, dev); cuCtxSetCurrent(ctx);
  CUdeviceptr d; cuMemAlloc(&d, 1 << 16);
  CUstream s, side; cuStreamCreate(&s, CU_STREAM_NON_BLOCKING); cuStreamCreate(&side, CU_STREAM_NON_BLOCKING);
  CUevent fork, join; cuEventCreate(&fork, CU_EVENT_DISABLE_TIMING); cuEventCreate(&join, CU_EVENT_DISABLE_TIMING);
  CUstreamCaptureStatus cs; CUgraph g = nullptr;
  for (int query = 0; query < 2; ++query) {
    std::printf("== fork/join, query of the captured event first: %d\n", query);
    P("begin GLOBAL", cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    P("memset", cuMemsetD32Async(d, 1, 1024, s));
    P("record fork", cuEventRecord(fork, s));
    if (query) {
      P("query fork", cuEventQuery(fork));
      cs = CU_STREAM_CAPTURE_STATUS_NONE; P("is capturing main", cuStreamIsCapturing(s, &cs)); std::printf("  main: %s\n", st(cs));
    }
    P("side waits fork", cuStreamWaitEvent(side, fork, 0));
    cs = CU_STREAM_CAPTURE_STATUS_NONE; P("is capturing side", cuStreamIsCapturing(side, &cs)); std::printf("  side: %s\n", st(cs));
    P("memset side", cuMemsetD32Async(d + 8192, 2, 1024, side));
    P("record join", cuEventRecord(join, side));
    P("main waits join", cuStreamWaitEvent(s, join, 0));
    g = nullptr; P("end capture", cuStreamEndCapture(s, &g));
    if (g) cuGraphDestroy(g);
    cs = CU_STREAM_CAPTURE_STATUS_NONE; cuStreamIsCapturing(side, &cs); std::printf("  side after: %s\n", st(cs));
    cuStreamSynchronize(s); cuStreamSynchronize(side); cuCtxSynchronize();
  }
  for (CUstreamCaptureMode mode : {CU_STREAM_CAPTURE_MODE_THREAD_LOCAL, CU_STREAM_CAPTURE_MODE_GLOBAL, CU_STREAM_CAPTURE_MODE_RELAXED}) {
    std::printf("== end capture from another thread, mode %d\n", int(mode));
    P("begin", cuStreamBeginCapture(s, mode));
    P("memset", cuMemsetD32Async(d, 1, 1024, s));
    CUresult other = CUDA_SUCCESS; CUstreamCaptureStatus ocs = CU_STREAM_CAPTURE_STATUS_NONE; CUgraph og = nullptr;
    std::thread([&] { cuCtxSetCurrent(ctx); other = cuStreamEndCapture(s, &og); cuStreamIsCapturing(s, &ocs); }).join();
    std::printf("%-60s %s (graph %s)\n", "other thread's end capture", n(other), og ? "set" : "null");
    std::printf("  other thread then sees: %s\n", st(ocs));
    cs = CU_STREAM_CAPTURE_STATUS_NONE; P("is capturing (own thread)", cuStreamIsCapturing(s, &cs)); std::printf("  own: %s\n", st(cs));
    g = nullptr; P("end capture (own thread)", cuStreamEndCapture(s, &g));
    if (g) cuGraphDestroy(g);
    if (og) cuGraphDestroy(og);
    P("sync", cuStreamSynchronize(s));
  }
  std::printf("== end capture on a stream not capturing\n");
  g = nullptr; P("end capture", cuStreamEndCapture(s, &g));
  return 0;
}
