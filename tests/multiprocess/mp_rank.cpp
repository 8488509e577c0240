// mp_rank: one process of the multi-process tests (multiprocess_test.cpp), attached to a shared
// node through MCSIM_NODE. Usage: mp_rank SCENARIO RANK RANKS SOCKET_FD
//
// It talks to the test (the broker, as NCCL's bootstrap and proxy would) over SOCKET_FD, a
// SOCK_SEQPACKET socket: "barrier" (answered "go" once every rank asked), "share" with a
// descriptor or "put TEXT" (kept by the broker), "fetch" / "get" (answered once something was
// shared), "hold NAME" (answered when the test releases NAME), and "note KEY VALUE" (facts for
// the test to check). A call that fails where it must not prints what and exits 1.
#include <cuda.h>
#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "mcsim/api.h"
#include "mcsim/kernels.h"
#include "nvml/nvml_api.h"
#include "tests/common/unparked_spin_ptx.h"
#include "tests/common/vmm_props.h"
#include "tests/multiprocess/messages.h"

namespace {

int gRank = 0, gRanks = 0, gSock = -1;
std::string gScenario;

const char* name(CUresult r) {
  const char* n = nullptr;
  cuGetErrorName(r, &n);
  return n != nullptr ? n : "?";
}

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "mp_rank %s rank %d: %s\n", gScenario.c_str(), gRank, what.c_str());
  std::exit(1);
}

#define CU(call)                                                                          \
  do {                                                                                    \
    const CUresult r_ = (call);                                                           \
    if (r_ != CUDA_SUCCESS) fail(std::string(#call) + " returned " + name(r_));           \
  } while (0)
#define EXPECT_RESULT(want, call)                                                                  \
  do {                                                                                             \
    const CUresult r_ = (call);                                                                    \
    if (r_ != (want)) fail(std::string(#call) + " returned " + name(r_) + ", not " + name(want)); \
  } while (0)

uint64_t nowNs() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count());
}

// ---- The broker ----

void send(const std::string& text, int fd = -1) {
  if (!mptest::sendText(gSock, text, fd)) fail("the broker is gone");
}

std::string receive(int* fd = nullptr) {
  std::string text;
  if (!mptest::receiveText(gSock, &text, fd)) fail("the broker is gone");
  return text;
}

void barrier() {
  send("barrier");
  if (receive() != "go") fail("barrier");
}
void note(const std::string& key, const std::string& value) { send("note " + key + " " + value); }
void hold(const std::string& what) {
  send("hold " + what);
  receive();
}
void share(int fd) {
  send("share", fd);
  receive();
}
// The `nth` descriptor shared (1: the first).
int fetch(uint64_t nth = 1) {
  send("fetch " + std::to_string(nth));
  int fd = -1;
  receive(&fd);
  if (fd < 0) fail("no descriptor came");
  return fd;
}
void put(const std::string& text) {
  send("put " + text);
  receive();
}
std::string get() {
  send("get");
  return receive();
}

std::string hex(const uint8_t* p, size_t n) {
  std::string s;
  char b[3];
  for (size_t i = 0; i < n; ++i) {
    std::snprintf(b, sizeof b, "%02x", p[i]);
    s += b;
  }
  return s;
}
void unhex(const std::string& s, uint8_t* out, size_t n) {
  for (size_t i = 0; i < n && 2 * i + 1 < s.size(); ++i) out[i] = static_cast<uint8_t>(std::stoul(s.substr(2 * i, 2), nullptr, 16));
}

// ---- Common steps ----

constexpr size_t kMiB = 1 << 20;

CUcontext enter(int dev) {
  CU(cuInit(0));
  CUcontext ctx = nullptr;
  CU(cuDevicePrimaryCtxRetain(&ctx, dev));
  CU(cuCtxSetCurrent(ctx));
  return ctx;
}

// Memory mapped in this process: a reservation with one allocation, read-write for `devs`.
struct Mapped {
  CUdeviceptr va = 0;
  size_t size = 0;
};
Mapped mapHere(CUmemGenericAllocationHandle h, size_t size, std::initializer_list<int> devs) {
  Mapped m;
  m.size = size;
  CU(cuMemAddressReserve(&m.va, size, 0, 0, 0));
  CU(cuMemMap(m.va, size, 0, h, 0));
  for (int d : devs) {
    const CUmemAccessDesc rw = cutest::readWrite(d);
    CU(cuMemSetAccess(m.va, size, &rw, 1));
  }
  return m;
}
void unmapHere(const Mapped& m) {
  CU(cuMemUnmap(m.va, m.size));
  CU(cuMemAddressFree(m.va, m.size));
}

std::vector<uint32_t> pattern(uint32_t seed, size_t words) {
  std::vector<uint32_t> v(words);
  for (size_t i = 0; i < words; ++i) v[i] = seed * 0x9e3779b1u + static_cast<uint32_t>(i) * 2654435761u;
  return v;
}

void expectWords(const Mapped& m, size_t offset, const std::vector<uint32_t>& want, const char* what) {
  std::vector<uint32_t> got(want.size());
  CU(cuMemcpyDtoH(got.data(), m.va + offset, got.size() * 4));
  if (got != want) fail(std::string(what) + ": the bytes read are not the bytes written");
}

// The properties of a multicast object of `devices` that may be exported as a POSIX descriptor.
CUmulticastObjectProp posixTeam(unsigned devices, size_t size) {
  return cutest::mcProp(devices, size, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
}

// The multicast object of a team: rank 0 creates it and shares a POSIX descriptor through the
// broker (the `nth` share of the run); every other rank imports that descriptor.
CUmemGenericAllocationHandle createOrImport(const CUmulticastObjectProp& mp, uint64_t nth = 1) {
  CUmemGenericAllocationHandle mc = 0;
  if (gRank == 0) {
    CU(cuMulticastCreate(&mc, &mp));
    int fd = -1;
    CU(cuMemExportToShareableHandle(&fd, mc, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
    share(fd);
    close(fd);
  } else {
    const int fd = fetch(nth);
    CU(cuMemImportFromShareableHandle(&mc, reinterpret_cast<void*>(static_cast<uintptr_t>(fd)),
                                      CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
    close(fd);
  }
  return mc;
}

// A kernel of mcsim's kernel library, from a module this process loads, and a stream to launch
// it on.
struct Kernel {
  CUmodule module = nullptr;
  CUfunction fn = nullptr;
  CUstream stream = nullptr;
};
Kernel loadKernel(const char* kernel) {
  Kernel k;
  CU(cuModuleLoadData(&k.module, mcsim_kernel_image));
  CU(cuModuleGetFunction(&k.fn, k.module, kernel));
  CU(cuStreamCreate(&k.stream, CU_STREAM_NON_BLOCKING));
  return k;
}

// ---- Scenarios ----

// cuInit alone (another user's attempt): exit 0 if it succeeds, 3 if it fails.
int attachOnly() {
  const CUresult r = cuInit(0);
  std::printf("cuInit: %s\n", name(r));
  return r == CUDA_SUCCESS ? 0 : 3;
}

// Rank 0 makes memory on GPU 0 and writes it, rank 1 imports it (how the descriptor travels
// depends on `how`), reads it and writes the second half, which rank 0 then reads.
int dataAcross(const std::string& how) {
  const size_t size = 2 * kMiB, half = kMiB, words = 64 * 1024;
  const bool fabric = how == "fabric";
  const unsigned type = fabric ? CU_MEM_HANDLE_TYPE_FABRIC : CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  enter(gRank);
  CUmemGenericAllocationHandle h = 0;
  Mapped m;
  if (gRank == 0) {
    const CUmemAllocationProp prop = cutest::devicePinned(0, type);
    CU(cuMemCreate(&h, size, &prop, 0));
    m = mapHere(h, size, {0});
    const std::vector<uint32_t> a = pattern(1, words);
    CU(cuMemcpyHtoD(m.va, a.data(), a.size() * 4));
    if (fabric) {
      CUmemFabricHandle fh;
      CU(cuMemExportToShareableHandle(&fh, h, CU_MEM_HANDLE_TYPE_FABRIC, 0));
      put(hex(fh.data, sizeof fh.data));
    } else {
      int fd = -1;
      CU(cuMemExportToShareableHandle(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
      if (how == "pidfd") {
        put(std::to_string(getpid()) + " " + std::to_string(fd));
        barrier();  // rank 1 took its copy with pidfd_getfd
      } else {
        share(fd);
      }
      close(fd);
    }
    barrier();  // rank 1 read A and wrote B
    barrier();
    expectWords(m, half, pattern(2, words), "rank 0 reading what rank 1 wrote");
    note("data", "ok");
  } else {
    if (fabric) {
      CUmemFabricHandle fh;
      unhex(get(), fh.data, sizeof fh.data);
      CU(cuMemImportFromShareableHandle(&h, &fh, CU_MEM_HANDLE_TYPE_FABRIC));
    } else {
      int fd = -1;
      if (how == "pidfd") {
        int pid = 0, remote = -1;
        if (std::sscanf(get().c_str(), "%d %d", &pid, &remote) != 2) fail("no pid and descriptor");
        const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
        fd = pidfd < 0 ? -1 : static_cast<int>(syscall(SYS_pidfd_getfd, pidfd, remote, 0));
        if (fd < 0) fail(std::string("pidfd_getfd: ") + std::strerror(errno));
        close(pidfd);
        barrier();
      } else {
        fd = fetch();
      }
      CU(cuMemImportFromShareableHandle(&h, reinterpret_cast<void*>(static_cast<uintptr_t>(fd)),
                                        CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
      close(fd);
    }
    m = mapHere(h, size, {gRank});
    barrier();
    expectWords(m, 0, pattern(1, words), "rank 1 reading what rank 0 wrote");
    const std::vector<uint32_t> b = pattern(2, words);
    CU(cuMemcpyHtoD(m.va + half, b.data(), b.size() * 4));
    barrier();
    note("data", "ok");
  }
  unmapHere(m);
  CU(cuMemRelease(h));
  barrier();
  return 0;
}

// Rank 1 (on another node) exports a descriptor, FABRIC bytes and a handle value for rank 0 to
// try; rank 0 tries those and forged ones, and checks that every refusal changed nothing.
int forged() {
  enter(0);
  if (gRank == 1) {
    CUmemGenericAllocationHandle a = 0, b = 0;
    const CUmemAllocationProp prop =
        cutest::devicePinned(0, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR | CU_MEM_HANDLE_TYPE_FABRIC);
    CU(cuMemCreate(&a, 2 * kMiB, &prop, 0));
    CU(cuMemCreate(&b, 2 * kMiB, &prop, 0));
    int fd = -1;
    CU(cuMemExportToShareableHandle(&fd, b, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
    CUmemFabricHandle fh;
    CU(cuMemExportToShareableHandle(&fh, b, CU_MEM_HANDLE_TYPE_FABRIC, 0));
    share(fd);
    put(hex(fh.data, sizeof fh.data) + " " + std::to_string(b));
    barrier();  // rank 0 is done
    close(fd);
    CU(cuMemRelease(a));
    CU(cuMemRelease(b));
    return 0;
  }
  const int foreignFd = fetch();
  std::string text = get();
  CUmemFabricHandle foreignFabric;
  unhex(text.substr(0, text.find(' ')), foreignFabric.data, sizeof foreignFabric.data);
  const CUmemGenericAllocationHandle foreignHandle = std::stoull(text.substr(text.find(' ') + 1));

  // A legitimate allocation of this process, exported both ways, for the forged handles to be
  // near-misses of.
  CUmemGenericAllocationHandle mine = 0;
  const CUmemAllocationProp prop =
      cutest::devicePinned(0, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR | CU_MEM_HANDLE_TYPE_FABRIC);
  CU(cuMemCreate(&mine, 2 * kMiB, &prop, 0));
  CUmemFabricHandle myFabric;
  CU(cuMemExportToShareableHandle(&myFabric, mine, CU_MEM_HANDLE_TYPE_FABRIC, 0));
  const uint64_t before = mcsim::api::stateDigest();
  const mcsim::api::NodeStats statsBefore = mcsim::api::nodeStats();
  auto unchanged = [&](const char* what) {
    if (mcsim::api::stateDigest() != before) fail(std::string(what) + " was refused but changed the node's state");
  };
  auto importFd = [](int fd, CUmemGenericAllocationHandle* h) {
    return cuMemImportFromShareableHandle(h, reinterpret_cast<void*>(static_cast<uintptr_t>(fd)),
                                          CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  };
  CUmemGenericAllocationHandle h = 0;
  // Descriptors that are no exports of this node: /dev/null, a pipe, a memfd of our own, a
  // closed one, and one that another node exported.
  const int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
  EXPECT_RESULT(CUDA_ERROR_UNKNOWN, importFd(devnull, &h));
  unchanged("/dev/null");
  int pipes[2];
  if (pipe2(pipes, O_CLOEXEC) != 0) fail("pipe");
  EXPECT_RESULT(CUDA_ERROR_UNKNOWN, importFd(pipes[0], &h));
  unchanged("a pipe");
  const int memfd = memfd_create("forged", MFD_CLOEXEC);
  const char body[] = "mcsim shareable v1 object 1\n";
  if (write(memfd, body, sizeof body - 1) < 0) fail("write");
  EXPECT_RESULT(CUDA_ERROR_UNKNOWN, importFd(memfd, &h));
  unchanged("a forged memfd");
  const int closed = dup(devnull);
  close(closed);
  EXPECT_RESULT(CUDA_ERROR_UNKNOWN, importFd(closed, &h));
  unchanged("a closed descriptor");
  EXPECT_RESULT(CUDA_ERROR_UNKNOWN, importFd(foreignFd, &h));
  unchanged("another node's descriptor");
  // FABRIC bytes: one bit off ours, and another node's.
  CUmemFabricHandle bent = myFabric;
  bent.data[8] ^= 1;
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuMemImportFromShareableHandle(&h, &bent, CU_MEM_HANDLE_TYPE_FABRIC));
  unchanged("forged FABRIC bytes");
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuMemImportFromShareableHandle(&h, &foreignFabric, CU_MEM_HANDLE_TYPE_FABRIC));
  unchanged("another node's FABRIC bytes");
  // A handle value of another process means nothing here.
  if (foreignHandle != mine) {
    CUdeviceptr va = 0;
    CU(cuMemAddressReserve(&va, 2 * kMiB, 0, 0, 0));
    const uint64_t reserved = mcsim::api::stateDigest();
    EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuMemMap(va, 2 * kMiB, 0, foreignHandle, 0));
    if (mcsim::api::stateDigest() != reserved) fail("another process's handle value was refused but changed the state");
    CU(cuMemAddressFree(va, 2 * kMiB));
  }
  const mcsim::api::NodeStats statsAfter = mcsim::api::nodeStats();
  if (statsAfter.allocations != statsBefore.allocations || statsAfter.handles != statsBefore.handles) {
    fail("the refusals changed the node's counts");
  }
  // The node's clock moves only with the node: a process attached to it cannot advance it.
  if (mcsim_advance_simulated_time(1000, nullptr) != MCSIM_ERROR_NOT_SUPPORTED) {
    fail(std::string("mcsim_advance_simulated_time on a shared node: ") + mcsim_last_error());
  }
  // Our own export still imports.
  CU(cuMemImportFromShareableHandle(&h, &myFabric, CU_MEM_HANDLE_TYPE_FABRIC));
  CU(cuMemRelease(h));
  CU(cuMemRelease(mine));
  note("forged", "ok");
  barrier();
  close(foreignFd);
  return 0;
}

// Processes that each see one GPU of the node (CUDA_VISIBLE_DEVICES=5 for rank 0, =2 for rank 1,
// as a launcher sets it): each sees one device, ordinal 0, and makes (rank + 1) * 128 MiB there.
// Once both have, NVML (which sees every GPU of the node) shows rank 0's memory on GPU 5 and rank
// 1's on GPU 2, and none on GPU 0, which both call ordinal 0.
int visibleGpus() {
  constexpr size_t kChunk = 128 * kMiB;
  enter(0);
  int count = 0;
  CU(cuDeviceGetCount(&count));
  if (count != 1) fail("a process with one visible GPU sees " + std::to_string(count) + " devices");
  CUdeviceptr p = 0;
  CU(cuMemAlloc(&p, (static_cast<size_t>(gRank) + 1) * kChunk));
  barrier();  // both allocated
  if (nvmlInit_v2() != NVML_SUCCESS) fail("nvmlInit");
  unsigned gpus = 0;
  if (nvmlDeviceGetCount_v2(&gpus) != NVML_SUCCESS || gpus != 8) {
    fail("NVML sees " + std::to_string(gpus) + " GPUs, not 8");
  }
  auto used = [](unsigned index) {
    nvmlDevice_t d = nullptr;
    nvmlMemory_t m{};
    if (nvmlDeviceGetHandleByIndex_v2(index, &d) != NVML_SUCCESS || nvmlDeviceGetMemoryInfo(d, &m) != NVML_SUCCESS) {
      fail("NVML memory of GPU " + std::to_string(index));
    }
    return m.used;
  };
  const unsigned long long idle = used(0), on5 = used(5), on2 = used(2);
  if (on5 < idle + kChunk || on5 >= idle + 2 * kChunk) fail("GPU 5 holds " + std::to_string(on5 - idle) + " bytes");
  if (on2 < idle + 2 * kChunk || on2 >= idle + 3 * kChunk) fail("GPU 2 holds " + std::to_string(on2 - idle) + " bytes");
  if (used(1) != idle) fail("GPU 1 holds memory");
  nvmlShutdown();
  barrier();  // both looked
  // Rank 0's memory (on GPU 5, which rank 1 cannot see) opened by rank 1 through an IPC handle: in
  // rank 1 it counts as its context's device's, ordinal 0, as a real driver answers
  // (docs/real-driver/h200x4-visible-2026-11-29.txt), never an ordinal rank 1 does not have.
  if (gRank == 0) {
    CU(cuMemsetD8(p, 0x5a, kChunk));
    CU(cuCtxSynchronize());
    CUipcMemHandle handle;
    CU(cuIpcGetMemHandle(&handle, p));
    put(hex(reinterpret_cast<const uint8_t*>(handle.reserved), sizeof handle.reserved));
    barrier();  // rank 1 opened, read and closed it
  } else {
    CUipcMemHandle handle;
    unhex(get(), reinterpret_cast<uint8_t*>(handle.reserved), sizeof handle.reserved);
    CUdeviceptr opened = 0;
    CU(cuIpcOpenMemHandle(&opened, handle, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
    int ordinal = -1;
    CU(cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, opened));
    if (ordinal != 0) fail("memory opened from GPU 5 reports device ordinal " + std::to_string(ordinal));
    unsigned char byte = 0;
    CU(cuMemcpyDtoH(&byte, opened + kChunk - 1, 1));
    if (byte != 0x5a) fail("reading memory opened from another process's GPU");
    CU(cuIpcCloseMemHandle(opened));
    barrier();
  }
  CU(cuMemFree(p));
  note("visible", "ok");
  return 0;
}

// Processes on the trays of a gb200-nvl72 rack (MCSIM_TRAY: rank 0 and rank 2 on tray 0, rank 1
// on tray 1), each seeing its tray's 4 GPUs. Rank 0 makes memory on its GPU 2 that may be shared
// both ways, cuMemAlloc memory and an interprocess event, and hands out a descriptor, FABRIC bytes
// and IPC handles. Rank 2, on the same tray, imports and opens all of them. Rank 1, on another
// tray (another host), is refused the descriptor and the IPC handles, each refusal changing
// nothing, and imports the FABRIC handle through the IMEX channel: it maps the memory for its own
// GPU 1 and reads and writes it, as rank 0 then checks.
int trays() {
  const size_t size = 2 * kMiB, words = 64 * 1024;
  enter(gRank == 1 ? 1 : 0);
  int count = 0;
  CU(cuDeviceGetCount(&count));
  if (count != 4) fail("a tray's process sees " + std::to_string(count) + " devices, not 4");
  auto importFd = [](int fd, CUmemGenericAllocationHandle* h) {
    return cuMemImportFromShareableHandle(h, reinterpret_cast<void*>(static_cast<uintptr_t>(fd)),
                                          CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  };
  if (gRank == 0) {
    CUcontext ctx = nullptr;
    CU(cuDevicePrimaryCtxRetain(&ctx, 2));
    CU(cuCtxSetCurrent(ctx));
    CUmemGenericAllocationHandle h = 0;
    const CUmemAllocationProp prop =
        cutest::devicePinned(2, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR | CU_MEM_HANDLE_TYPE_FABRIC);
    CU(cuMemCreate(&h, size, &prop, 0));
    const Mapped m = mapHere(h, size, {2});
    CU(cuMemcpyHtoD(m.va, pattern(1, words).data(), words * 4));
    CUdeviceptr linear = 0;
    CU(cuMemAlloc(&linear, size));
    CU(cuMemcpyHtoD(linear, pattern(3, words).data(), words * 4));
    CUevent ev = nullptr;
    CU(cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS));
    CU(cuEventRecord(ev, nullptr));
    CUmemFabricHandle fh;
    CU(cuMemExportToShareableHandle(&fh, h, CU_MEM_HANDLE_TYPE_FABRIC, 0));
    CUipcMemHandle ipcMem;
    CU(cuIpcGetMemHandle(&ipcMem, linear));
    CUipcEventHandle ipcEvent;
    CU(cuIpcGetEventHandle(&ipcEvent, ev));
    int fd = -1;
    CU(cuMemExportToShareableHandle(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
    share(fd);
    close(fd);
    put(hex(fh.data, sizeof fh.data) + " " + hex(reinterpret_cast<const uint8_t*>(ipcMem.reserved), sizeof ipcMem.reserved) +
        " " + hex(reinterpret_cast<const uint8_t*>(ipcEvent.reserved), sizeof ipcEvent.reserved));
    barrier();  // rank 2 imported and opened everything, and let go of it
    barrier();  // rank 1 was refused, imported the FABRIC handle and wrote
    expectWords(m, kMiB, pattern(2, words / 2), "rank 0 reading what tray 1 wrote through the FABRIC handle");
    note("trays", "ok");
    barrier();  // the others let go of what they imported
    unmapHere(m);
    CU(cuMemRelease(h));
    CU(cuMemFree(linear));
    CU(cuEventDestroy(ev));
    return 0;
  }
  const int fd = fetch();
  const std::string text = get();
  CUmemFabricHandle fh;
  CUipcMemHandle ipcMem;
  CUipcEventHandle ipcEvent;
  unhex(text.substr(0, 128), fh.data, sizeof fh.data);
  unhex(text.substr(129, 128), reinterpret_cast<uint8_t*>(ipcMem.reserved), sizeof ipcMem.reserved);
  unhex(text.substr(258, 128), reinterpret_cast<uint8_t*>(ipcEvent.reserved), sizeof ipcEvent.reserved);
  CUmemGenericAllocationHandle h = 0;
  if (gRank == 2) {
    // The same tray: one host, so the descriptor and the IPC handles work as on any one machine.
    CUmemGenericAllocationHandle viaFd = 0;
    CU(importFd(fd, &viaFd));
    CU(cuMemRelease(viaFd));
    CUdeviceptr opened = 0;
    CU(cuIpcOpenMemHandle(&opened, ipcMem, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
    std::vector<uint32_t> got(words);
    CU(cuMemcpyDtoH(got.data(), opened, words * 4));
    if (got != pattern(3, words)) fail("rank 2 reading tray 0's cuMemAlloc memory through its IPC handle");
    CU(cuIpcCloseMemHandle(opened));
    CUevent ev = nullptr;
    CU(cuIpcOpenEventHandle(&ev, ipcEvent));
    CU(cuEventSynchronize(ev));
    CU(cuEventDestroy(ev));
    close(fd);
    note("trays", "ok");
    barrier();
    barrier();
    barrier();
    return 0;
  }
  // Another tray: another host. Its refusals come once rank 2 is done, so that nothing else
  // changes the node meanwhile.
  barrier();
  const uint64_t before = mcsim::api::stateDigest();
  auto unchanged = [&](const char* what) {
    if (mcsim::api::stateDigest() != before) fail(std::string(what) + " was refused but changed the node's state");
  };
  EXPECT_RESULT(CUDA_ERROR_UNKNOWN, importFd(fd, &h));
  unchanged("another tray's descriptor");
  CUdeviceptr opened = 0;
  EXPECT_RESULT(CUDA_ERROR_INVALID_VALUE, cuIpcOpenMemHandle(&opened, ipcMem, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
  unchanged("another tray's IPC memory handle");
  CUevent ev = nullptr;
  EXPECT_RESULT(CUDA_ERROR_MAP_FAILED, cuIpcOpenEventHandle(&ev, ipcEvent));
  unchanged("another tray's IPC event handle");
  close(fd);
  CU(cuMemImportFromShareableHandle(&h, &fh, CU_MEM_HANDLE_TYPE_FABRIC));
  CUmemAllocationProp props{};
  CU(cuMemGetAllocationPropertiesFromHandle(&props, h));
  note("location", std::to_string(props.location.id));
  const Mapped m = mapHere(h, size, {1});
  expectWords(m, 0, pattern(1, words), "tray 1 reading tray 0's memory through the FABRIC handle");
  CU(cuMemcpyHtoD(m.va + kMiB, pattern(2, words / 2).data(), words / 2 * 4));
  CU(cuCtxSynchronize());
  note("trays", "ok");
  barrier();
  unmapHere(m);
  CU(cuMemRelease(h));
  barrier();
  return 0;
}

// The team setup of NCCL's NVLS transport, one process per GPU: rank 0 creates the multicast
// object and shares a POSIX descriptor; every rank imports it, adds its device, makes, maps and
// binds its memory, maps the multicast range; then a one-shot multimem all-reduce across the
// processes; then everything is torn down.
int ncclTeam() {
  const size_t size = 4 * kMiB, words = 64 * 1024;
  const size_t outOffset = kMiB, signalOffset = 2 * kMiB;
  enter(gRank);
  const CUmulticastObjectProp mp = posixTeam(static_cast<unsigned>(gRanks), size);
  const CUmemGenericAllocationHandle mc = createOrImport(mp);
  CUmemGenericAllocationHandle mem = 0;
  CU(cuMulticastAddDevice(mc, gRank));
  const CUmemAllocationProp prop = cutest::devicePinned(gRank, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  CU(cuMemCreate(&mem, size, &prop, 0));
  const Mapped local = mapHere(mem, size, {gRank});
  std::vector<uint32_t> mine(words);
  for (size_t i = 0; i < words; ++i) mine[i] = static_cast<uint32_t>(gRank) * 1000u + static_cast<uint32_t>(i);
  CU(cuMemcpyHtoD(local.va, mine.data(), mine.size() * 4));
  CU(cuMemsetD32(local.va + signalOffset, 0, 1024));
  barrier();  // NCCL's barrier before the bind
  CU(cuMulticastBindMem(mc, 0, mem, 0, size, 0));
  const Mapped mcRange = mapHere(mc, size, {gRank});
  barrier();

  const Kernel k = loadKernel(MCSIM_KERNEL_ALLREDUCE_ONESHOT);
  CUdeviceptr mcBuf = mcRange.va, out = local.va + outOffset, mcSignal = mcRange.va + signalOffset,
              signal = local.va + signalOffset;
  uint64_t count = words;
  uint32_t dtype = MCSIM_DTYPE_U32, world = static_cast<uint32_t>(gRanks), epoch = 1;
  void* args[] = {&mcBuf, &out, &count, &dtype, &mcSignal, &signal, &world, &epoch};
  CU(cuLaunchKernel(k.fn, 2, 1, 1, 256, 1, 1, 0, k.stream, args, nullptr));
  CU(cuStreamSynchronize(k.stream));
  std::vector<uint32_t> got(words);
  CU(cuMemcpyDtoH(got.data(), out, got.size() * 4));
  const uint32_t base = 1000u * static_cast<uint32_t>(gRanks * (gRanks - 1) / 2);
  for (size_t i = 0; i < words; ++i) {
    if (got[i] != base + static_cast<uint32_t>(gRanks) * static_cast<uint32_t>(i)) {
      fail("all-reduce: word " + std::to_string(i) + " is " + std::to_string(got[i]));
    }
  }
  note("allreduce", "ok");
  barrier();

  CU(cuStreamDestroy(k.stream));
  CU(cuModuleUnload(k.module));
  unmapHere(mcRange);
  CU(cuMulticastUnbind(mc, gRank, 0, size));
  CU(cuMemRelease(mc));
  unmapHere(local);
  CU(cuMemRelease(mem));
  barrier();
  return 0;
}

// A bind of a team of 3 blocks in two processes until the third adds its device, which it does
// only when the test says so. Each notes when it bound / added (steady clock, ns).
int blockingBind() {
  enter(gRank);
  const CUmulticastObjectProp mp = posixTeam(3, 2 * kMiB);
  const CUmemGenericAllocationHandle mc = createOrImport(mp);
  CUmemGenericAllocationHandle mem = 0;
  const CUmemAllocationProp prop = cutest::devicePinned(gRank, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  CU(cuMemCreate(&mem, mp.size, &prop, 0));
  if (gRank == 2) {
    note("imported", "1");
    hold("add");  // until the other two are blocked
    note("adding", std::to_string(nowNs()));
  }
  CU(cuMulticastAddDevice(mc, gRank));
  if (gRank != 2) {
    hold("bind");  // until rank 2 is attached (it could not add its device before)
    note("binding", std::to_string(nowNs()));
  }
  CU(cuMulticastBindMem(mc, 0, mem, 0, mp.size, 0));
  note("bound", std::to_string(nowNs()));
  barrier();
  CU(cuMulticastUnbind(mc, gRank, 0, mp.size));
  CU(cuMemRelease(mc));
  CU(cuMemRelease(mem));
  return 0;
}

// A team of RANKS in which the last rank imports the object, then is killed (by the test) before
// it adds its device. The others add theirs and bind: the bind must fail with the configured
// result (MCSIM_HANG_RESULT), and they clean up and leave.
int killedRank() {
  enter(gRank);
  const CUmulticastObjectProp mp = posixTeam(static_cast<unsigned>(gRanks), 2 * kMiB);
  const CUmemGenericAllocationHandle mc = createOrImport(mp);
  CUmemGenericAllocationHandle mem = 0;
  const CUmemAllocationProp prop = cutest::devicePinned(gRank, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  CU(cuMemCreate(&mem, mp.size, &prop, 0));
  if (gRank == gRanks - 1) {
    note("imported", "1");
    hold("forever");  // killed here
    return 0;
  }
  CU(cuMulticastAddDevice(mc, gRank));
  note("binding", std::to_string(nowNs()));
  const CUresult r = cuMulticastBindMem(mc, 0, mem, 0, mp.size, 0);
  note("bind", std::string(name(r)) + " " + std::to_string(nowNs()));
  if (r == CUDA_SUCCESS) CU(cuMulticastUnbind(mc, gRank, 0, mp.size));
  CU(cuMemRelease(mc));
  CU(cuMemRelease(mem));
  return 0;
}

// A team of 2 whose barrier kernel only rank 0 launches: it can never finish. Rank 0 waits for it
// in cuStreamSynchronize (the test kills it there); rank 1 leaves when released, giving back its
// part of the team.
int stuckKernel() {
  const size_t size = 2 * kMiB;
  enter(gRank);
  const CUmulticastObjectProp mp = posixTeam(2, size);
  const CUmemGenericAllocationHandle mc = createOrImport(mp);
  CU(cuMulticastAddDevice(mc, gRank));
  CUmemGenericAllocationHandle mem = 0;
  const CUmemAllocationProp prop = cutest::devicePinned(gRank, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  CU(cuMemCreate(&mem, size, &prop, 0));
  const Mapped local = mapHere(mem, size, {gRank});
  CU(cuMemsetD32(local.va, 0, size / 4));
  barrier();
  CU(cuMulticastBindMem(mc, 0, mem, 0, size, 0));
  const Mapped mcRange = mapHere(mc, size, {gRank});
  barrier();
  if (gRank == 0) {
    const Kernel k = loadKernel(MCSIM_KERNEL_BARRIER);
    CUdeviceptr mcSignal = mcRange.va, signal = local.va;
    uint32_t world = 2, epoch = 1;
    void* args[] = {&mcSignal, &signal, &world, &epoch};
    CU(cuLaunchKernel(k.fn, 1, 1, 1, 32, 1, 1, 0, k.stream, args, nullptr));
    note("launched", "1");
    const CUresult r = cuStreamSynchronize(k.stream);  // killed here
    note("sync", name(r));
    return 0;
  }
  hold("leave");
  unmapHere(mcRange);
  CU(cuMulticastUnbind(mc, gRank, 0, size));
  CU(cuMemRelease(mc));
  unmapHere(local);
  CU(cuMemRelease(mem));
  return 0;
}

// A team of 2 whose second process attaches and imports, then does nothing in the driver (it
// waits for the test): rank 0's bind can only be given up as a suspected hang. Rank 0 notes the
// bind's result; rank 1 leaves when released, without adding its device.
int hangAcross() {
  enter(gRank);
  const CUmulticastObjectProp mp = posixTeam(2, 2 * kMiB);
  const CUmemGenericAllocationHandle mc = createOrImport(mp);
  if (gRank == 0) {
    CUmemGenericAllocationHandle mem = 0;
    CU(cuMulticastAddDevice(mc, 0));
    const CUmemAllocationProp prop = cutest::devicePinned(0, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    CU(cuMemCreate(&mem, mp.size, &prop, 0));
    hold("bind");  // until rank 1 has imported
    const uint64_t start = nowNs();
    const CUresult r = cuMulticastBindMem(mc, 0, mem, 0, mp.size, 0);
    note("bind", std::string(name(r)) + " " + std::to_string((nowNs() - start) / 1000000));
    CU(cuMemRelease(mem));
  } else {
    note("imported", "1");
    hold("leave");  // busy elsewhere: not in the driver
  }
  CU(cuMemRelease(mc));
  return 0;
}

// A process of its own on a node that lost others: one GPU, a team of one, data through it.
// Allocations that a node-wide fault plan may refuse: each process tries four and notes which
// ones failed, going on either way (which process's call a plan's count lands on is the node's
// admission order).
int tolerantAllocations() {
  enter(gRank);
  std::string failed;
  for (int i = 0; i < 4; ++i) {
    CUmemGenericAllocationHandle h = 0;
    const CUmemAllocationProp prop = cutest::devicePinned(gRank);
    if (cuMemCreate(&h, 2 * kMiB, &prop, 0) == CUDA_SUCCESS) {
      CU(cuMemRelease(h));
    } else {
      failed += std::to_string(i);
    }
  }
  note("failed", failed.empty() ? "none" : failed);
  return 0;
}

int solo() {
  enter(0);
  const CUmulticastObjectProp mp = cutest::mcProp(1, 2 * kMiB);
  CUmemGenericAllocationHandle mc = 0, mem = 0;
  CU(cuMulticastCreate(&mc, &mp));
  CU(cuMulticastAddDevice(mc, 0));
  const CUmemAllocationProp prop = cutest::devicePinned(0);
  CU(cuMemCreate(&mem, mp.size, &prop, 0));
  CU(cuMulticastBindMem(mc, 0, mem, 0, mp.size, 0));
  const Mapped m = mapHere(mem, mp.size, {0});
  const std::vector<uint32_t> a = pattern(7, 4096);
  CU(cuMemcpyHtoD(m.va, a.data(), a.size() * 4));
  expectWords(m, 0, a, "solo");
  unmapHere(m);
  CU(cuMulticastUnbind(mc, 0, 0, mp.size));
  CU(cuMemRelease(mc));
  CU(cuMemRelease(mem));
  note("solo", "ok");
  return 0;
}

// PyTorch's order: rank 0 creates and exports, imports its own descriptor, releases its creation
// reference and closes its descriptor before rank 1 has imported (the only copy left is the one
// passing through the broker). Both then join, bind and map.
int creatorReleasesEarly() {
  enter(gRank);
  const CUmulticastObjectProp mp = posixTeam(2, 2 * kMiB);
  CUmemGenericAllocationHandle mc = 0, mem = 0;
  auto importFd = [&](int fd) {
    CU(cuMemImportFromShareableHandle(&mc, reinterpret_cast<void*>(static_cast<uintptr_t>(fd)),
                                      CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
  };
  if (gRank == 0) {
    CUmemGenericAllocationHandle created = 0;
    CU(cuMulticastCreate(&created, &mp));
    int fd = -1;
    CU(cuMemExportToShareableHandle(&fd, created, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
    importFd(fd);
    CU(cuMemRelease(created));
    share(fd);
    close(fd);
    barrier();  // released and closed before rank 1 imports
  } else {
    barrier();
    const int fd = fetch();
    importFd(fd);
    close(fd);
  }
  CU(cuMulticastAddDevice(mc, gRank));
  const CUmemAllocationProp prop = cutest::devicePinned(gRank, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  CU(cuMemCreate(&mem, mp.size, &prop, 0));
  CU(cuMulticastBindMem(mc, 0, mem, 0, mp.size, 0));
  const Mapped m = mapHere(mc, mp.size, {gRank});
  note("early", "ok");
  barrier();
  unmapHere(m);
  CU(cuMulticastUnbind(mc, gRank, 0, mp.size));
  CU(cuMemRelease(mc));
  CU(cuMemRelease(mem));
  return 0;
}

int openDescriptors() {
  int n = 0;
  if (DIR* d = opendir("/proc/self/fd")) {
    while (dirent* e = readdir(d)) n += e->d_name[0] != '.';
    closedir(d);
  }
  return n;
}

// The load benchmark (mp_load): MCSIM_CYCLES times the NCCL-style team setup and teardown (rank 0
// creates and shares, every rank imports, adds, binds and maps, then everything is released).
// Notes the wall time of the cycles and this process's open descriptors before and after.
int cycles() {
  const char* env = std::getenv("MCSIM_CYCLES");
  const int n = env != nullptr ? std::atoi(env) : 1;
  const size_t size = 2 * kMiB;
  enter(gRank);
  const int fdsBefore = openDescriptors();
  const CUmulticastObjectProp mp = posixTeam(static_cast<unsigned>(gRanks), size);
  const CUmemAllocationProp prop = cutest::devicePinned(gRank, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  barrier();
  const uint64_t start = nowNs();
  for (int c = 0; c < n; ++c) {
    const CUmemGenericAllocationHandle mc = createOrImport(mp, static_cast<uint64_t>(c) + 1);
    CUmemGenericAllocationHandle mem = 0;
    CU(cuMulticastAddDevice(mc, gRank));
    CU(cuMemCreate(&mem, size, &prop, 0));
    CU(cuMulticastBindMem(mc, 0, mem, 0, size, 0));
    const Mapped m = mapHere(mc, size, {gRank});
    barrier();
    unmapHere(m);
    CU(cuMulticastUnbind(mc, gRank, 0, size));
    CU(cuMemRelease(mem));
    CU(cuMemRelease(mc));
    barrier();
  }
  note("seconds", std::to_string(static_cast<double>(nowNs() - start) / 1e9));
  note("fds", std::to_string(fdsBefore) + " " + std::to_string(openDescriptors()));
  return 0;
}

// Work queued on a node that then dies (the test kills it while this process holds): every call
// that waits for or asks after the work, and every other call, must fail with
// CUDA_ERROR_DEVICE_UNAVAILABLE, never report work that never ran as done. Notes each call's result.
int orphaned() {
  enter(0);
  CUstream s = nullptr;
  CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CUevent start = nullptr, end = nullptr;
  CU(cuEventCreate(&start, 0));
  CU(cuEventCreate(&end, 0));
  CUdeviceptr buf = 0;
  CU(cuMemAlloc(&buf, 1 << 20));
  CU(cuEventRecord(start, s));
  CU(cuMemsetD32Async(buf, 7, (1 << 20) / 4, s));
  CU(cuEventRecord(end, s));
  note("queued", "1");
  hold("check");  // the node is killed meanwhile
  std::string results;
  auto add = [&](const char* call, CUresult r) { results += std::string(call) + "=" + name(r) + " "; };
  add("cuStreamSynchronize", cuStreamSynchronize(s));
  add("cuEventSynchronize", cuEventSynchronize(end));
  add("cuCtxSynchronize", cuCtxSynchronize());
  add("cuStreamQuery", cuStreamQuery(s));
  add("cuEventQuery", cuEventQuery(end));
  float ms = 0;
  add("cuEventElapsedTime", cuEventElapsedTime(&ms, start, end));
  uint32_t word = 0;
  add("cuMemcpyDtoH", cuMemcpyDtoH(&word, buf, 4));
  int peer = 0;
  add("cuDeviceCanAccessPeer", cuDeviceCanAccessPeer(&peer, 0, 1));
  add("cuMemFree", cuMemFree(buf));
  note("results", results);
  return 0;
}

// Copies 64 MiB to the device and back for ever, noting "htodK" / "dtohK" as round K's copies
// begin, until the test kills it.
int copier() {
  enter(0);
  constexpr size_t kBytes = 64u << 20;
  CUdeviceptr d = 0;
  CU(cuMemAlloc(&d, kBytes));
  std::vector<uint8_t> host(kBytes, 1);
  for (int round = 1;; ++round) {
    note("htod" + std::to_string(round), "1");
    CU(cuMemcpyHtoD(d, host.data(), kBytes));
    note("dtoh" + std::to_string(round), "1");
    CU(cuMemcpyDtoH(host.data(), d, kBytes));
  }
}

// 16 bytes to the device and back, checked: a fresh process that a node must still serve.
int small() {
  enter(0);
  CUdeviceptr d = 0;
  CU(cuMemAlloc(&d, 16));
  const uint32_t out[4] = {1, 2, 3, 0xdeadbeef};
  uint32_t in[4] = {};
  CU(cuMemcpyHtoD(d, out, sizeof out));
  CU(cuMemcpyDtoH(in, d, sizeof in));
  if (std::memcmp(in, out, sizeof out) != 0) fail("read back other bytes");
  CU(cuMemFree(d));
  note("small", "ok");
  return 0;
}

// The node's counts, for the test to check that nothing leaked.
// NCCL's LL128 protocol between two processes, reduced to one line exchange (docs/nccl.md,
// "Several processes"): rank 0's kernel on GPU 0 waits, as NCCL's LL128 receive does, for 32
// lanes' four 16-byte pieces of a buffer of its GPU, each lane loading them with
// `ld.volatile.global.v2.u64` and every 8th lane checking the flag in its second 8 bytes (128
// words a warp); rank 1's kernel on GPU 1 writes the lines, data and flags, through the buffer
// imported from rank 0. Rank 0 is in cuStreamSynchronize when rank 1 launches (a second thread
// waits; a chance, not an assumption: launched earlier, the run passes as well). Rank 0 notes the
// sum of the data its kernel received. Before 2026-11-29 rank 0's waiting warp was never parked
// (the spin parking rule watched 32 words of 8 bytes), so its kernel spun on and the node's run
// that awaited it never ended: rank 1's launch, posted for the next run, was never taken in.
const char* kLinesPtx = R"(
.version 8.0
.target sm_90
.address_size 64
.visible .entry recv_lines(.param .u64 pbuf, .param .u64 pout, .param .u64 pflag)
{
  .reg .b32 %r<8>;
  .reg .b64 %rd<24>;
  .reg .pred %p<8>;
  ld.param.u64 %rd1, [pbuf];
  ld.param.u64 %rd2, [pout];
  ld.param.u64 %rd3, [pflag];
  mov.u32 %r1, %tid.x;
  and.b32 %r2, %r1, 7;
  setp.eq.u32 %p1, %r2, 7;
  mul.wide.u32 %rd4, %r1, 16;
  add.s64 %rd5, %rd1, %rd4;
SPIN:
  ld.volatile.global.v2.u64 {%rd6, %rd7}, [%rd5];
  ld.volatile.global.v2.u64 {%rd8, %rd9}, [%rd5+512];
  ld.volatile.global.v2.u64 {%rd10, %rd11}, [%rd5+1024];
  ld.volatile.global.v2.u64 {%rd12, %rd13}, [%rd5+1536];
  setp.ne.u64 %p2, %rd7, %rd3;
  setp.ne.or.u64 %p2, %rd9, %rd3, %p2;
  setp.ne.or.u64 %p2, %rd11, %rd3, %p2;
  setp.ne.or.u64 %p2, %rd13, %rd3, %p2;
  and.pred %p3, %p2, %p1;
  vote.sync.any.pred %p4, %p3, 0xffffffff;
  @%p4 bra SPIN;
  add.s64 %rd14, %rd6, %rd8;
  add.s64 %rd14, %rd14, %rd10;
  add.s64 %rd14, %rd14, %rd12;
  @%p1 bra STORE;
  add.s64 %rd14, %rd14, %rd7;
  add.s64 %rd14, %rd14, %rd9;
  add.s64 %rd14, %rd14, %rd11;
  add.s64 %rd14, %rd14, %rd13;
STORE:
  atom.global.add.u64 %rd15, [%rd2], %rd14;
  ret;
}
.visible .entry send_lines(.param .u64 pbuf, .param .u64 pflag)
{
  .reg .b32 %r<8>;
  .reg .b64 %rd<16>;
  .reg .pred %p<4>;
  ld.param.u64 %rd1, [pbuf];
  ld.param.u64 %rd3, [pflag];
  mov.u32 %r1, %tid.x;
  and.b32 %r2, %r1, 7;
  setp.eq.u32 %p1, %r2, 7;
  mul.wide.u32 %rd4, %r1, 16;
  add.s64 %rd5, %rd1, %rd4;
  cvt.u64.u32 %rd6, %r1;
  add.s64 %rd7, %rd6, 1;
  selp.b64 %rd8, %rd3, %rd7, %p1;
  st.volatile.global.v2.u64 [%rd5], {%rd6, %rd8};
  st.volatile.global.v2.u64 [%rd5+512], {%rd6, %rd8};
  st.volatile.global.v2.u64 [%rd5+1024], {%rd6, %rd8};
  st.volatile.global.v2.u64 [%rd5+1536], {%rd6, %rd8};
  ret;
}
)";

// A kernel that spins without being parked (tests/common/unparked_spin_ptx.h: it writes an
// iteration counter on every turn) until the flag word at the buffer's start equals `flag`, then
// copies the word after the flag. Rank 1's kernel, launched while rank 0 waits for this one, writes
// the word and then the flag. Before 2026-11-29 the node's run that awaited the spinning kernel
// never ended, so rank 1's launch was never taken in and both hung (docs/multiprocess.md,
// "Simulated times replay exactly").
const std::string kUnparkedPtx = cutest::unparkedSpinPtx("recv_lines", "send_lines");

// `unparked`: the kernels of kUnparkedPtx, one thread each, instead of kLinesPtx's warps.
int ll128Lines(bool unparked = false) {
  const size_t size = 2 * kMiB;
  const unsigned threads = unparked ? 1 : 32;
  enter(gRank);
  CUmodule module = nullptr;
  CU(cuModuleLoadData(&module, unparked ? kUnparkedPtx.c_str() : kLinesPtx));
  CUstream stream = nullptr;
  CU(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  CUmemGenericAllocationHandle h = 0;
  Mapped m;
  uint64_t flag = 1;
  if (gRank == 0) {
    const CUmemAllocationProp prop = cutest::devicePinned(0, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    CU(cuMemCreate(&h, size, &prop, 0));
    m = mapHere(h, size, {0});
    CU(cuMemsetD32(m.va, 0, size / 4));
    int fd = -1;
    CU(cuMemExportToShareableHandle(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
    share(fd);
    close(fd);
    CUfunction recv = nullptr;
    CU(cuModuleGetFunction(&recv, module, "recv_lines"));
    CUdeviceptr buf = m.va, out = m.va + kMiB;
    void* args[] = {&buf, &out, &flag};
    CU(cuLaunchKernel(recv, 1, 1, 1, threads, 1, 1, 0, stream, args, nullptr));
    CUresult r = CUDA_ERROR_UNKNOWN;
    CUcontext ctx = nullptr;
    CU(cuCtxGetCurrent(&ctx));
    std::thread waiter([&] {
      cuCtxSetCurrent(ctx);
      r = cuStreamSynchronize(stream);
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    barrier();  // rank 1 launches its kernel now
    waiter.join();
    CU(r);
    uint64_t sum = 0;
    CU(cuMemcpyDtoH(&sum, out, 8));
    note("sum", std::to_string(sum));
    if (unparked) {
      uint64_t turns = 0;
      CU(cuMemcpyDtoH(&turns, out + 8, 8));
      note("spun", turns > 1 ? "yes" : "no");
    }
    barrier();  // rank 1 is done with the buffer
    unmapHere(m);
    CU(cuMemRelease(h));
  } else {
    const int fd = fetch();
    CU(cuMemImportFromShareableHandle(&h, reinterpret_cast<void*>(static_cast<uintptr_t>(fd)),
                                      CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
    close(fd);
    m = mapHere(h, size, {1});
    CUfunction send = nullptr;
    CU(cuModuleGetFunction(&send, module, "send_lines"));
    CUdeviceptr buf = m.va;
    void* args[] = {&buf, &flag};
    barrier();
    CU(cuLaunchKernel(send, 1, 1, 1, threads, 1, 1, 0, stream, args, nullptr));
    CU(cuStreamSynchronize(stream));
    barrier();
    unmapHere(m);
    CU(cuMemRelease(h));
  }
  CU(cuStreamDestroy(stream));
  CU(cuModuleUnload(module));
  return 0;
}

// A kernel that spins unparked on a flag that nothing will ever set (kUnparkedPtx's, one thread):
// the node gives the synchronisation up after its grace period with a report naming the kernel,
// which reaches this process too. Notes the synchronisation's result and that a fresh stream's
// copy still works.
int unreleased() {
  enter(0);
  CUmodule module = nullptr;
  CU(cuModuleLoadData(&module, kUnparkedPtx.c_str()));
  CUfunction recv = nullptr;
  CU(cuModuleGetFunction(&recv, module, "recv_lines"));
  CUstream stream = nullptr;
  CU(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  CUdeviceptr buf = 0;
  CU(cuMemAlloc(&buf, 64));
  CU(cuMemsetD8(buf, 0, 64));
  CUdeviceptr out = buf + 32;
  uint64_t flag = 1;
  void* args[] = {&buf, &out, &flag};
  CU(cuLaunchKernel(recv, 1, 1, 1, 1, 1, 1, 0, stream, args, nullptr));
  note("sync", name(cuStreamSynchronize(stream)));
  return 0;
}

int counts() {
  CU(cuInit(0));
  const mcsim::api::NodeStats s = mcsim::api::nodeStats();
  note("counts", std::to_string(s.allocations) + " " + std::to_string(s.handles) + " " +
                     std::to_string(s.reservations) + " " + std::to_string(s.mappings) + " " +
                     std::to_string(s.multicastObjects) + " " + std::to_string(s.exportedFds));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: mp_rank SCENARIO RANK RANKS SOCKET_FD\n");
    return 2;
  }
  gScenario = argv[1];
  gRank = std::atoi(argv[2]);
  gRanks = std::atoi(argv[3]);
  gSock = std::atoi(argv[4]);
  if (gScenario == "attach") return attachOnly();
  if (gScenario == "data") return dataAcross("socket");
  if (gScenario == "pidfd") return dataAcross("pidfd");
  if (gScenario == "fabric") return dataAcross("fabric");
  if (gScenario == "forged") return forged();
  if (gScenario == "trays") return trays();
  if (gScenario == "visible") return visibleGpus();
  if (gScenario == "nccl") return ncclTeam();
  if (gScenario == "block") return blockingBind();
  if (gScenario == "killed") return killedRank();
  if (gScenario == "solo") return solo();
  if (gScenario == "tolerant") return tolerantAllocations();
  if (gScenario == "hang") return hangAcross();
  if (gScenario == "stuck") return stuckKernel();
  if (gScenario == "early") return creatorReleasesEarly();
  if (gScenario == "counts") return counts();
  if (gScenario == "ll128") return ll128Lines();
  if (gScenario == "unparked") return ll128Lines(true);
  if (gScenario == "unreleased") return unreleased();
  if (gScenario == "orphaned") return orphaned();
  if (gScenario == "copier") return copier();
  if (gScenario == "small") return small();
  if (gScenario == "cycles") return cycles();
  std::fprintf(stderr, "mp_rank: unknown scenario %s\n", gScenario.c_str());
  return 2;
}
