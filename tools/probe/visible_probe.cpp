// What the driver makes of CUDA_VISIBLE_DEVICES: which GPUs a process sees for a given value
// (spaces, empty entries, separators), and which device ordinal memory imported from a process that
// sees every GPU has in one that sees fewer, or another order.
//
//   visible_probe list
//       cuInit's answer, then `count = N` and `dev.K = <PCI bus id>` for each device seen.
//   visible_probe ipc GPU CHILD_VISIBLE
//       this process (seeing what its environment says) allocates on GPU and exports it with
//       cuIpcGetMemHandle; a child run with CUDA_VISIBLE_DEVICES=CHILD_VISIBLE opens the handle
//       and prints cuIpcOpenMemHandle's answer, the pointer's CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL
//       and whether it reads the bytes written.
//
// Plain device memory only: it never calls any cuMulticast* function. Build: g++ -std=c++17 -O2
// -I/usr/local/cuda/include tools/probe/visible_probe.cpp -lcuda -o visible_probe.
#include <cuda.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "probe_timing.h"

namespace {

const char* resultName(CUresult r) {
  const char* n = nullptr;
  cuGetErrorName(r, &n);
  return n ? n : "?";
}

int list() {
  CUresult r = cuInit(0);
  std::printf("cuInit = %s\n", resultName(r));
  if (r != CUDA_SUCCESS) return 0;
  int n = 0;
  CHECK(cuDeviceGetCount(&n));
  std::printf("count = %d\n", n);
  for (int d = 0; d < n; ++d) {
    char bus[32] = {};
    CHECK(cuDeviceGetPCIBusId(bus, sizeof bus, d));
    std::printf("dev.%d = %s\n", d, bus);
  }
  return 0;
}

int importChild(int fd) {
  CUipcMemHandle handle;
  if (read(fd, &handle, sizeof handle) != static_cast<ssize_t>(sizeof handle)) {
    std::printf("child: no handle\n");
    return 1;
  }
  CUresult r = cuInit(0);
  std::printf("child.cuInit = %s\n", resultName(r));
  if (r != CUDA_SUCCESS) return 0;
  int n = 0;
  CHECK(cuDeviceGetCount(&n));
  std::printf("child.count = %d\n", n);
  CUcontext ctx;
  CHECK(cuDevicePrimaryCtxRetain(&ctx, 0));
  CHECK(cuCtxSetCurrent(ctx));
  CUdeviceptr p = 0;
  r = cuIpcOpenMemHandle(&p, handle, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
  std::printf("child.cuIpcOpenMemHandle = %s\n", resultName(r));
  if (r != CUDA_SUCCESS) return 0;
  int ordinal = -1;
  r = cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p);
  std::printf("child.device_ordinal = %s %d\n", resultName(r), ordinal);
  unsigned char byte = 0;
  r = cuMemcpyDtoH(&byte, p, 1);
  std::printf("child.read = %s 0x%02x\n", resultName(r), byte);
  CHECK(cuIpcCloseMemHandle(p));
  CHECK(cuDevicePrimaryCtxRelease(0));
  return 0;
}

int exportParent(const char* self, int gpu, const char* childVisible) {
  int pipeFds[2];
  if (pipe(pipeFds) != 0) return 1;
  // The child starts (and execs) before this process initialises the driver.
  pid_t child = fork();
  if (child == 0) {
    close(pipeFds[1]);
    setenv("CUDA_VISIBLE_DEVICES", childVisible, 1);
    std::string fd = std::to_string(pipeFds[0]);
    execl("/proc/self/exe", self, "ipc-child", fd.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  close(pipeFds[0]);
  CHECK(cuInit(0));
  CUcontext ctx;
  CHECK(cuDevicePrimaryCtxRetain(&ctx, gpu));
  CHECK(cuCtxSetCurrent(ctx));
  CUdeviceptr p;
  const size_t bytes = size_t{2} << 20;
  CHECK(cuMemAlloc(&p, bytes));
  CHECK(cuMemsetD8(p, 0x5a, bytes));
  CHECK(cuCtxSynchronize());
  CUipcMemHandle handle;
  CHECK(cuIpcGetMemHandle(&handle, p));
  if (write(pipeFds[1], &handle, sizeof handle) != static_cast<ssize_t>(sizeof handle)) return 1;
  close(pipeFds[1]);
  int status = 0;
  waitpid(child, &status, 0);
  std::fflush(stdout);
  std::printf("parent.child_exit = %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  CHECK(cuMemFree(p));
  CHECK(cuDevicePrimaryCtxRelease(gpu));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  if (argc >= 2 && std::strcmp(argv[1], "list") == 0) return list();
  if (argc == 3 && std::strcmp(argv[1], "ipc-child") == 0) return importChild(std::atoi(argv[2]));
  if (argc == 4 && std::strcmp(argv[1], "ipc") == 0) return exportParent(argv[0], std::atoi(argv[2]), argv[3]);
  std::fprintf(stderr, "usage: visible_probe list | ipc GPU CHILD_VISIBLE\n");
  return 2;
}
