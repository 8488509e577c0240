/* mcsim_sample_user_program: a program as a user writes one, for the tests of what users trip
 * over with traces and campaigns (docs/traces.md, docs/faults.md). One GPU, cuda.h and mcsim's
 * kernel library only; it checks every call and exits 1 at the first that fails, as programs do.
 *
 *   mcsim_sample_user_program [--bytes N] [--kernel copy|reduce] [--fork] [--fork-early] [--ipc] [--hang] [--leak]
 *
 * It copies N bytes (default 1 MiB: more than a trace used to hold by default) from the host to
 * the device, runs one kernel of the library over them (mcsim_copy into a second buffer, or
 * mcsim_reduce adding the buffer to itself), copies the result back and checks it, then frees
 * everything. --fork: before the copies it forks a child that does not exec, which makes a driver
 * call of its own and exits; the parent waits for it. --fork-early: it forks before cuInit, and
 * the child runs the whole program too (a CUDA process of its own), started once the parent has
 * attached (its context made) and waited for before the parent goes on: so the parent's later
 * requests always come after the child's have finished, and its trace alone shows that another
 * process's are missing, whatever the machine's load. --ipc: it
 * forks before cuInit a child that imports the result: the parent exports the kernel's output
 * buffer (cuIpcGetMemHandle) and an interprocess event recorded after the kernel
 * (cuIpcGetEventHandle) and sends both handles through a pipe; the child opens them, makes its
 * stream wait for the event, copies the buffer back and checks it, closes both and tells the
 * parent, which then frees the buffer (a shared node: MCSIM_NODE). --hang: after the kernel the stream waits
 * for a value nothing writes, and the program synchronises (a hang mcsim reports).
 * --leak: the second buffer is never freed. Prints "user-program: ok" when the data read back is
 * what the kernel should have made. */
#include <cuda.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mcsim/kernels.h"

#define CHECK(call)                                                               \
  do {                                                                            \
    CUresult r_ = (call);                                                         \
    if (r_ != CUDA_SUCCESS) {                                                     \
      const char* name_ = NULL;                                                   \
      cuGetErrorName(r_, &name_);                                                 \
      fprintf(stderr, "user-program: %s failed: %s\n", #call, name_ ? name_ : "?"); \
      return 1;                                                                   \
    }                                                                             \
  } while (0)

/* --ipc's child: a CUDA process that opens the parent's IPC handles, read from `in`, checks the
 * buffer against `want` and writes one byte to `out` when done with the handles. */
static int ipcImporter(int in, int out, const uint32_t* want, uint32_t* back, size_t bytes) {
  CUipcMemHandle mh;
  CUipcEventHandle eh;
  if (read(in, &mh, sizeof mh) != (ssize_t)sizeof mh || read(in, &eh, sizeof eh) != (ssize_t)sizeof eh) return 1;
  CUdevice dev;
  CUcontext ctx;
  CUdeviceptr p = 0;
  CUevent ev = NULL;
  CHECK(cuInit(0));
  CHECK(cuDeviceGet(&dev, 0));
  CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CHECK(cuCtxSetCurrent(ctx));
  CHECK(cuIpcOpenMemHandle(&p, mh, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
  CHECK(cuIpcOpenEventHandle(&ev, eh));
  CHECK(cuStreamWaitEvent(NULL, ev, 0));
  CHECK(cuMemcpyDtoH(back, p, bytes));
  for (size_t i = 0; i < bytes / 4; ++i) {
    if (back[i] != want[i]) {
      fprintf(stderr, "user-program: the importer reads word %zu as 0x%08x, expected 0x%08x\n", i, back[i], want[i]);
      return 1;
    }
  }
  CHECK(cuIpcCloseMemHandle(p));
  CHECK(cuEventDestroy(ev));
  CHECK(cuDevicePrimaryCtxRelease(dev));
  const char done = 1;
  if (write(out, &done, 1) != 1) return 1;
  fprintf(stderr, "user-program: the importer read the exporter's buffer\n");
  return 0;
}

static int forkChild(void) {
  fflush(NULL);
  const pid_t pid = fork();
  if (pid < 0) return 1;
  if (pid == 0) {
    /* What a forked child may try: CUDA does not support it (a real driver refuses these calls in
     * the child); whatever they answer, the child exits 0. */
    int count = 0;
    CUdeviceptr p = 0;
    const CUresult r0 = cuInit(0);
    const CUresult r1 = r0 == CUDA_SUCCESS ? cuDeviceGetCount(&count) : r0;
    const CUresult r2 = cuMemAlloc(&p, 4096);
    const CUresult r3 = r2 == CUDA_SUCCESS ? cuMemFree(p) : r2;
    fprintf(stderr, "user-program: forked child: cuInit %d, cuDeviceGetCount %d, cuMemAlloc %d, cuMemFree %d\n", (int)r0, (int)r1, (int)r2, (int)r3);
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}

int main(int argc, char** argv) {
  size_t bytes = 1u << 20;
  const char* kernel = "copy";
  int doFork = 0, forkEarly = 0, ipc = 0, hang = 0, leak = 0;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--bytes") == 0 && i + 1 < argc) {
      bytes = (size_t)strtoull(argv[++i], NULL, 10);
    } else if (strcmp(argv[i], "--kernel") == 0 && i + 1 < argc) {
      kernel = argv[++i];
    } else if (strcmp(argv[i], "--fork") == 0) {
      doFork = 1;
    } else if (strcmp(argv[i], "--fork-early") == 0) {
      forkEarly = 1;
    } else if (strcmp(argv[i], "--ipc") == 0) {
      ipc = 1;
    } else if (strcmp(argv[i], "--hang") == 0) {
      hang = 1;
    } else if (strcmp(argv[i], "--leak") == 0) {
      leak = 1;
    } else {
      fprintf(stderr, "user-program: unknown argument %s\n", argv[i]);
      return 2;
    }
  }
  bytes -= bytes % 4;
  const size_t words = bytes / 4;
  /* File-scope: a run that a fault stops early (CHECK returns from main) leaves them to the
   * process's exit, still reachable, so a leak check of the program reports only what is lost. */
  static uint32_t* host;
  static uint32_t* back;
  host = malloc(bytes);
  back = malloc(bytes);
  if (host == NULL || back == NULL || words == 0) return 2;
  for (size_t i = 0; i < words; ++i) host[i] = (uint32_t)(i * 2654435761u);

  /* --fork-early: a child forked before cuInit is a CUDA process of its own: it runs the program
   * too, and the parent waits for it at the end. */
  pid_t child = -1;
  int go[2] = {-1, -1};
  if (forkEarly) {
    if (pipe(go) != 0) return 2;
    fflush(NULL);
    child = fork();
    if (child < 0) return 2;
    if (child == 0) {
      char c = 0;
      close(go[1]);
      if (read(go[0], &c, 1) != 1) _exit(2);  /* the parent attached */
      close(go[0]);
    } else {
      close(go[0]);
    }
  }
  /* --ipc: the child imports what the parent exports (handles one way, "done" the other). */
  int toChild[2] = {-1, -1}, toParent[2] = {-1, -1};
  if (ipc) {
    if (pipe(toChild) != 0 || pipe(toParent) != 0) return 2;
    fflush(NULL);
    child = fork();
    if (child < 0) return 2;
    if (child == 0) {
      /* The data the kernel makes: the copy kernel's output is the input. */
      /* A process of its own: exit() writes its trace's end record (atexit). */
      exit(ipcImporter(toChild[0], toParent[1], host, back, bytes));
    }
  }
  CUdevice dev;
  CUcontext ctx;
  CHECK(cuInit(0));
  CHECK(cuDeviceGet(&dev, 0));
  CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CHECK(cuCtxSetCurrent(ctx));
  if (forkEarly && child > 0) {
    int status = 0;
    if (write(go[1], "g", 1) != 1) return 2;
    close(go[1]);
    waitpid(child, &status, 0);
    child = -1;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      fprintf(stderr, "user-program: the child forked before cuInit failed\n");
      return 1;
    }
  }
  if (doFork && forkChild() != 0) {
    fprintf(stderr, "user-program: the forked child failed\n");
    return 1;
  }
  CUdeviceptr a = 0, b = 0;
  CHECK(cuMemAlloc(&a, bytes));
  CHECK(cuMemAlloc(&b, bytes));
  CHECK(cuMemcpyHtoD(a, host, bytes));
  CUmodule mod = NULL;
  CUfunction fn = NULL;
  CHECK(cuModuleLoadData(&mod, mcsim_kernel_image));
  if (strcmp(kernel, "reduce") == 0) {
    CHECK(cuModuleGetFunction(&fn, mod, MCSIM_KERNEL_REDUCE));
    CUdeviceptr dst = b, x = a, y = a;
    uint64_t n = words;
    uint32_t dtype = MCSIM_DTYPE_U32, op = MCSIM_REDOP_ADD;
    void* params[] = {&dst, &x, &y, &n, &dtype, &op};
    CHECK(cuLaunchKernel(fn, 8, 1, 1, 256, 1, 1, 0, NULL, params, NULL));
  } else {
    CHECK(cuModuleGetFunction(&fn, mod, MCSIM_KERNEL_COPY));
    CUdeviceptr dst = b, src = a;
    uint64_t n = bytes;
    void* params[] = {&dst, &src, &n};
    CHECK(cuLaunchKernel(fn, 8, 1, 1, 256, 1, 1, 0, NULL, params, NULL));
  }
  if (hang) {
    /* The stream waits until the first word of `a` (0) is 12345, which nothing writes. */
    CHECK(cuStreamWaitValue32(NULL, a, 12345u, CU_STREAM_WAIT_VALUE_EQ));
  }
  CUevent ipcEvent = NULL;
  if (ipc) {
    /* The output buffer and an event recorded after the kernel, to the child. */
    CUipcMemHandle mh;
    CUipcEventHandle eh;
    CHECK(cuEventCreate(&ipcEvent, CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS));
    CHECK(cuEventRecord(ipcEvent, NULL));
    CHECK(cuIpcGetMemHandle(&mh, b));
    CHECK(cuIpcGetEventHandle(&eh, ipcEvent));
    if (write(toChild[1], &mh, sizeof mh) != (ssize_t)sizeof mh || write(toChild[1], &eh, sizeof eh) != (ssize_t)sizeof eh)
      return 1;
    char done = 0;
    if (read(toParent[0], &done, 1) != 1) {
      fprintf(stderr, "user-program: the importer stopped before it was done with the handles\n");
      return 1;
    }
    CHECK(cuEventDestroy(ipcEvent));
  }
  CHECK(cuCtxSynchronize());
  CHECK(cuMemcpyDtoH(back, b, bytes));
  int bad = 0;
  for (size_t i = 0; i < words && !bad; ++i) {
    const uint32_t want = strcmp(kernel, "reduce") == 0 ? host[i] + host[i] : host[i];
    if (back[i] != want) {
      fprintf(stderr, "user-program: word %zu is 0x%08x, expected 0x%08x\n", i, back[i], want);
      bad = 1;
    }
  }
  CHECK(cuModuleUnload(mod));
  if (!leak) CHECK(cuMemFree(b));
  CHECK(cuMemFree(a));
  CHECK(cuDevicePrimaryCtxRelease(dev));
  free(host);
  free(back);
  if (bad) return 1;
  if (child > 0) {
    int status = 0;
    waitpid(child, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      fprintf(stderr, "user-program: the child forked before cuInit failed\n");
      return 1;
    }
  }
  printf("user-program: ok\n");
  return 0;
}
