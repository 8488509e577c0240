// (its output: fork-probe-h200-2026-11-28.txt) What the real driver answers in a child forked after the parent initialised CUDA (no multicast).
#include <cuda.h>
#include <cstdio>
#include <sys/wait.h>
#include <unistd.h>
static const char* n(CUresult r) { const char* s = nullptr; cuGetErrorName(r, &s); return s ? s : "?"; }
#define P(label, expr) do { CUresult r_ = (expr); std::printf("%-44s %s\n", label, n(r_)); std::fflush(stdout); } while (0)
int main() {
  P("parent cuInit", cuInit(0));
  CUdevice dev; cuDeviceGet(&dev, 0);
  CUcontext ctx; cuDevicePrimaryCtxRetain(&ctx, dev); cuCtxSetCurrent(ctx);
  CUdeviceptr d; P("parent cuMemAlloc", cuMemAlloc(&d, 1 << 20));
  CUstream s; cuStreamCreate(&s, 0);
  char buf[16] = {1};
  pid_t pid = fork();
  if (pid == 0) {
    std::printf("-- child\n");
    P("cuMemcpyHtoD (parent's pointer)", cuMemcpyHtoD(d, buf, 16));
    CUcontext cur = nullptr; P("cuCtxGetCurrent", cuCtxGetCurrent(&cur)); std::printf("  current %s\n", cur ? "non-null" : "null");
    P("cuCtxSynchronize", cuCtxSynchronize());
    P("cuStreamSynchronize (parent's stream)", cuStreamSynchronize(s));
    P("cuInit", cuInit(0));
    int count = -1; P("cuDeviceGetCount", cuDeviceGetCount(&count)); std::printf("  count %d\n", count);
    CUdevice d0 = -1; P("cuDeviceGet", cuDeviceGet(&d0, 0));
    int v = 0; P("cuDriverGetVersion", cuDriverGetVersion(&v)); std::printf("  version %d\n", v);
    char name[64] = {}; P("cuDeviceGetName", cuDeviceGetName(name, 64, 0));
    CUcontext c2 = nullptr; P("cuDevicePrimaryCtxRetain", cuDevicePrimaryCtxRetain(&c2, 0));
    CUdeviceptr d2 = 0; P("cuMemAlloc", cuMemAlloc(&d2, 1 << 20));
    P("cuMemFree (parent's pointer)", cuMemFree(d));
    CUstream s2; P("cuStreamCreate", cuStreamCreate(&s2, 0));
    const char* str = nullptr; P("cuGetErrorString(INVALID_VALUE)", cuGetErrorString(CUDA_ERROR_INVALID_VALUE, &str));
    _exit(0);
  }
  int status = 0; waitpid(pid, &status, 0);
  std::printf("-- parent after the child: child exit %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  P("parent cuMemcpyHtoD", cuMemcpyHtoD(d, buf, 16));
  P("parent cuCtxSynchronize", cuCtxSynchronize());
  return 0;
}
