/*
 * edge_probe: what the real driver answers at a few edges that mcsim must copy (issue 19's list):
 * a child forked after cuInit, and arguments the driver is the judge of. One `key = value` line
 * per answer, as driver_probe prints. Calls no cuMulticast* function.
 *
 *   cc -I/usr/local/cuda/include edge_probe.c -L/usr/lib/x86_64-linux-gnu -lcuda -o edge_probe
 *
 * or the CMake target edge_probe, as driver_probe is built (tools/probe/README.md).
 */
#include <cuda.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const char* name(CUresult r) {
  const char* s = NULL;
  return cuGetErrorName(r, &s) == CUDA_SUCCESS && s != NULL ? s : "?";
}
#define SHOW(key, call)                              \
  do {                                               \
    CUresult r_ = (call);                            \
    printf("%s = %s\n", key, name(r_));              \
    fflush(stdout);                                  \
  } while (0)

static const char kPtx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry probe_kernel(.param .u64 p) { ret; }\n";

int main(void) {
  CUdevice dev;
  CUcontext ctx;
  CUdeviceptr d = 0;
  char host[64] = {0};
  SHOW("init", cuInit(0));
  SHOW("device_get", cuDeviceGet(&dev, 0));
  SHOW("primary_retain", cuDevicePrimaryCtxRetain(&ctx, dev));
  SHOW("set_current", cuCtxSetCurrent(ctx));
  SHOW("mem_alloc", cuMemAlloc(&d, 1 << 20));

  /* A child forked after cuInit, without exec: each call's answer, under a 20 s alarm so that a
   * hang shows as a missing line and a signal, not a stuck probe. */
  pid_t child = fork();
  if (child == 0) {
    alarm(20);
    CUdeviceptr d2 = 0;
    int count = -1;
    SHOW("fork.child.device_get_count", cuDeviceGetCount(&count));
    printf("fork.child.device_count = %d\n", count);
    SHOW("fork.child.ctx_get_current", cuCtxGetCurrent(&ctx));
    SHOW("fork.child.memcpy_htod", cuMemcpyHtoD(d, host, 16));
    SHOW("fork.child.mem_alloc", cuMemAlloc(&d2, 1 << 20));
    SHOW("fork.child.ctx_synchronize", cuCtxSynchronize());
    SHOW("fork.child.init", cuInit(0));
    SHOW("fork.child.primary_retain", cuDevicePrimaryCtxRetain(&ctx, dev));
    _exit(0);
  }
  int status = 0;
  waitpid(child, &status, 0);
  if (WIFSIGNALED(status)) printf("fork.child.signal = %d\n", WTERMSIG(status));
  else printf("fork.child.exit = %d\n", WEXITSTATUS(status));
  SHOW("fork.parent.memcpy_htod_after", cuMemcpyHtoD(d, host, 16));

  /* Arguments the driver judges. */
  CUmodule mod;
  CUfunction fn;
  SHOW("module_load_ptx", cuModuleLoadData(&mod, kPtx));
  SHOW("module_get_function", cuModuleGetFunction(&fn, mod, "probe_kernel"));
  SHOW("func_set_attribute.max_dynamic_shared.minus1",
       cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, -1));
  SHOW("func_set_attribute.max_dynamic_shared.huge",
       cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 1 << 30));
  CUlibrary lib;
  CUlibraryOption opt = (CUlibraryOption)99;
  void* optValue = NULL;
  SHOW("library_load_data.unknown_option", cuLibraryLoadData(&lib, kPtx, NULL, NULL, 0, &opt, &optValue, 1));
  CUctxCreateParams params;
  memset(&params, 0, sizeof params);
  params.execAffinityParams = NULL;
  params.numExecAffinityParams = 5;
  CUcontext created = NULL;
  SHOW("ctx_create_v4.affinity_count5_null", cuCtxCreate_v4(&created, &params, 0, dev));
  int value = 0;
  SHOW("device_get_attribute.invalid", cuDeviceGetAttribute(&value, (CUdevice_attribute)100000, dev));
  SHOW("mem_free", cuMemFree(d));
  return 0;
}
