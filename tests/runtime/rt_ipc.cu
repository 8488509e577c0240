// IPC between processes through the CUDA runtime (cudaIpcGetMemHandle, cudaIpcOpenMemHandle,
// cudaIpcCloseMemHandle, cudaIpcGetEventHandle, cudaIpcOpenEventHandle), as multi-process programs use it: the parent exports,
// a child process (this program again, started with a child's case name) opens, reads what the
// parent wrote, writes its own answer and closes. Runs unchanged on mcsim and on a real GPU. On
// mcsim the processes share devices only on a shared node (MCSIM_NODE): a child on an embedded node
// of its own has other devices, and the parent's handle names nothing there (cudaErrorInvalidValue),
// which the cases check instead.
#include <dlfcn.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <string>
#include <vector>

#include "tests/runtime/rt_check.h"

extern char** environ;

namespace {

constexpr size_t kBytes = 1 << 20;
constexpr unsigned kParentWord = 0x1234abcdu, kChildWord = 0x5a5a0001u;

// The devices are another process's too: a real GPU, or mcsim's shared node. On mcsim's embedded
// node a child process has a node of its own.
bool devicesShared() {
  return !rtcheck::onMcsim() || std::getenv("MCSIM_NODE") != nullptr;
}

std::string hex(const void* p, size_t n) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < n; ++i) {
    const unsigned b = static_cast<const unsigned char*>(p)[i];
    s += digits[b >> 4];
    s += digits[b & 15];
  }
  return s;
}

void unhex(const char* s, void* p, size_t n) {
  auto v = [](char c) { return c <= '9' ? c - '0' : c - 'a' + 10; };
  for (size_t i = 0; i < n; ++i) static_cast<unsigned char*>(p)[i] = static_cast<unsigned char>(v(s[2 * i]) * 16 + v(s[2 * i + 1]));
}

// Runs this program as `childCase arg` and returns its exit status (0: its checks passed).
int runChild(const char* childCase, const std::string& arg) {
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  RT_EXPECT(n > 0, "readlink /proc/self/exe");
  self[n] = '\0';
  std::vector<char*> argv = {self, const_cast<char*>(childCase), const_cast<char*>(arg.c_str()), nullptr};
  pid_t pid = 0;
  RT_EXPECT(posix_spawn(&pid, self, nullptr, nullptr, argv.data(), environ) == 0, "posix_spawn");
  int status = 0;
  RT_EXPECT(waitpid(pid, &status, 0) == pid, "waitpid");
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

int deviceCount() {
  int n = 0;
  RT_OK(cudaGetDeviceCount(&n));
  return n;
}

// ---- The parent's cases.

void ipcMemory() {
  RT_OK(cudaSetDevice(0));
  void* d = nullptr;
  RT_OK(cudaMalloc(&d, kBytes));
  std::vector<unsigned> words(kBytes / 4, kParentWord);
  RT_OK(cudaMemcpy(d, words.data(), kBytes, cudaMemcpyHostToDevice));
  cudaIpcMemHandle_t h;
  RT_OK(cudaIpcGetMemHandle(&h, d));
  // Opened by the process that made it: the real driver's "invalid device context".
  void* same = nullptr;
  RT_EXPECT(cudaIpcOpenMemHandle(&same, h, cudaIpcMemLazyEnablePeerAccess) == cudaErrorDeviceUninitialized,
            "opened in its own process");
  cudaGetLastError();
  const int status = runChild("child_ipc_memory", hex(&h, sizeof h));
  RT_EXPECT(status == 0, "the child failed (%d)", status);
  RT_OK(cudaMemcpy(words.data(), d, kBytes, cudaMemcpyDeviceToHost));
  const unsigned expect = devicesShared() ? kChildWord : kParentWord;
  RT_EXPECT(words[0] == expect && words.back() == expect, "first word %#x, last %#x, expected %#x", words[0],
            words.back(), expect);
  RT_OK(cudaFree(d));
}

// An interprocess event orders work across processes: the child's stream waits for the parent's
// memset through it, and the parent's synchronize waits for the child's record.
void ipcEvent() {
  RT_OK(cudaSetDevice(0));
  cudaEvent_t plain = nullptr, ev = nullptr;
  RT_OK(cudaEventCreate(&plain));
  cudaIpcEventHandle_t eh;
  RT_EXPECT(cudaIpcGetEventHandle(&eh, plain) == cudaErrorInvalidResourceHandle, "an event without the flag exported");
  cudaGetLastError();
  RT_OK(cudaEventDestroy(plain));
  RT_OK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming | cudaEventInterprocess));
  RT_OK(cudaIpcGetEventHandle(&eh, ev));
  cudaEvent_t same = nullptr;
  RT_EXPECT(cudaIpcOpenEventHandle(&same, eh) == cudaErrorDeviceUninitialized, "opened in its own process");
  cudaGetLastError();
  void* d = nullptr;
  RT_OK(cudaMalloc(&d, kBytes));
  cudaIpcMemHandle_t mh;
  RT_OK(cudaIpcGetMemHandle(&mh, d));
  cudaStream_t s = nullptr;
  RT_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  RT_OK(cudaMemsetAsync(d, 7, kBytes, s));
  RT_OK(cudaEventRecord(ev, s));
  const int status = runChild("child_ipc_event", hex(&mh, sizeof mh) + hex(&eh, sizeof eh));
  RT_EXPECT(status == 0, "the child failed (%d)", status);
  RT_OK(cudaEventSynchronize(ev));
  RT_OK(cudaEventQuery(ev));
  std::vector<unsigned char> bytes(kBytes);
  RT_OK(cudaMemcpy(bytes.data(), d, kBytes, cudaMemcpyDeviceToHost));
  const unsigned char expect = devicesShared() ? 9 : 7;
  RT_EXPECT(bytes[0] == expect && bytes.back() == expect, "bytes %d .. %d, expected %d", bytes[0], bytes.back(), expect);
  RT_OK(cudaStreamDestroy(s));
  RT_OK(cudaEventDestroy(ev));
  RT_OK(cudaFree(d));
}

// ---- The child's cases (argv[2]: the handle in hex).

int childIpcMemory(const char* handleHex) {
  cudaIpcMemHandle_t h;
  unhex(handleHex, &h, sizeof h);
  // Open on another device where there is one: the memory is device 0's, reached as a peer's.
  RT_OK(cudaSetDevice(deviceCount() > 1 ? 1 : 0));
  void* p = nullptr;
  const cudaError_t e = cudaIpcOpenMemHandle(&p, h, cudaIpcMemLazyEnablePeerAccess);
  if (!devicesShared()) {
    RT_EXPECT(e == cudaErrorInvalidValue, "another node's handle opened: %s", cudaGetErrorName(e));
    return 0;
  }
  RT_OK(e);
  // A second open of the same handle gives the same address; each open is closed.
  void* again = nullptr;
  RT_OK(cudaIpcOpenMemHandle(&again, h, cudaIpcMemLazyEnablePeerAccess));
  RT_EXPECT(again == p, "second open at %p, first at %p", again, p);
  RT_OK(cudaIpcCloseMemHandle(again));
  std::vector<unsigned> words(kBytes / 4);
  RT_OK(cudaMemcpy(words.data(), p, kBytes, cudaMemcpyDeviceToHost));
  RT_EXPECT(words[0] == kParentWord && words.back() == kParentWord, "read %#x .. %#x", words[0], words.back());
  RT_OK(cudaMemset(p, 0, kBytes));
  std::vector<unsigned> answer(kBytes / 4, kChildWord);
  RT_OK(cudaMemcpy(p, answer.data(), kBytes, cudaMemcpyHostToDevice));
  RT_OK(cudaDeviceSynchronize());
  RT_OK(cudaIpcCloseMemHandle(p));
  // Closed: a second close of the address is refused.
  RT_EXPECT(cudaIpcCloseMemHandle(p) == cudaErrorInvalidValue, "closed twice");
  cudaGetLastError();
  return 0;
}

// argv[2]: the memory handle, then the event handle.
int childIpcEvent(const char* handlesHex) {
  cudaIpcMemHandle_t mh;
  cudaIpcEventHandle_t eh;
  unhex(handlesHex, &mh, sizeof mh);
  unhex(handlesHex + 2 * sizeof mh, &eh, sizeof eh);
  RT_OK(cudaSetDevice(0));
  cudaEvent_t ev = nullptr;
  const cudaError_t e = cudaIpcOpenEventHandle(&ev, eh);
  if (!devicesShared()) {
    // A handle naming no event this node knows: what a real driver answers for a handle it
    // cannot map (CUDA_ERROR_MAP_FAILED, seen on an H100).
    RT_EXPECT(e == cudaErrorMapBufferObjectFailed, "another node's event opened: %s", cudaGetErrorName(e));
    return 0;
  }
  RT_OK(e);
  void* p = nullptr;
  RT_OK(cudaIpcOpenMemHandle(&p, mh, cudaIpcMemLazyEnablePeerAccess));
  cudaStream_t s = nullptr;
  RT_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  // After the parent's memset, through its event.
  RT_OK(cudaStreamWaitEvent(s, ev, 0));
  std::vector<unsigned char> bytes(kBytes);
  RT_OK(cudaMemcpyAsync(bytes.data(), p, kBytes, cudaMemcpyDeviceToHost, s));
  RT_OK(cudaStreamSynchronize(s));
  RT_EXPECT(bytes[0] == 7 && bytes.back() == 7, "read %d .. %d before the parent's memset", bytes[0], bytes.back());
  // The child's record is what the parent's synchronize waits for.
  RT_OK(cudaMemsetAsync(p, 9, kBytes, s));
  RT_OK(cudaEventRecord(ev, s));
  RT_OK(cudaEventSynchronize(ev));
  RT_OK(cudaStreamDestroy(s));
  RT_OK(cudaEventDestroy(ev));
  RT_OK(cudaIpcCloseMemHandle(p));
  return 0;
}

// A child's case: 0 when its checks passed, else 1 (its failure printed).
int runChildCase(int (*body)(const char*), const char* name, const char* arg) {
  try {
    return body(arg);
  } catch (const rtcheck::Failure& f) {
    std::printf("FAIL %s: %s\n", name, f.what.c_str());
    return 1;
  }
}

const rtcheck::Case kCases[] = {
    {"ipc_memory", ipcMemory},
    {"ipc_event", ipcEvent},
};

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::strcmp(argv[1], "child_ipc_memory") == 0) return runChildCase(childIpcMemory, argv[1], argv[2]);
  if (argc == 3 && std::strcmp(argv[1], "child_ipc_event") == 0) return runChildCase(childIpcEvent, argv[1], argv[2]);
  return rtcheck::runCases(kCases, sizeof kCases / sizeof kCases[0], argc, argv);
}
