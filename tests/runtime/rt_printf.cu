// Device printf through the runtime API, as a user writes it: the output of a launch appears at
// the synchronisation after it, not at the launch (docs/ptx.md, "printf and assert"). Each case
// captures the program's stdout (fd 1) around its launches and compares it exactly.
//
//   rt_printf [CASE...]
// A warp's lanes print in lane order on mcsim; a real GPU does not promise an order between
// warps or blocks, so each launch prints from one warp.
#include <unistd.h>

#include <cstdio>
#include <string>

#include "tests/runtime/rt_check.h"

// Kernels at namespace scope: mcsim finds a kernel by its cubin symbol, which is local for a kernel
// in an anonymous namespace.
__device__ __noinline__ int square(int x) { return x * x; }

__global__ void rt_hello(int base) {
  const int t = threadIdx.x;
  if (t % 8 == 0) printf("block %d thread %2d: %d %s %.2f %c %lld\n", blockIdx.x, t, square(t) + base, "ok", t * 0.5, 'a' + t / 8,
                         -(1LL << 40) + t);
}

__global__ void rt_once(const char* word) { printf("once: %s %5.1e|%-6x|%%\n", word, 12345.0, 0xbeef); }

namespace {

// Runs `body` with fd 1 sent to a file, and answers what was written there.
template <typename F>
std::string captureStdout(F body) {
  std::fflush(stdout);
  char path[] = "/tmp/rt_printf_XXXXXX";
  const int fd = mkstemp(path);
  RT_EXPECT(fd >= 0, "mkstemp");
  const int saved = dup(1);
  dup2(fd, 1);
  try {
    body();
  } catch (...) {
    std::fflush(stdout);
    dup2(saved, 1);
    throw;
  }
  std::fflush(stdout);
  dup2(saved, 1);
  close(saved);
  std::string out;
  FILE* f = std::fopen(path, "r");
  char buf[4096];
  for (size_t n; f != nullptr && (n = std::fread(buf, 1, sizeof buf, f)) > 0;) out.append(buf, n);
  if (f != nullptr) std::fclose(f);
  close(fd);
  unlink(path);
  return out;
}

void printfAtSynchronize() {
  const std::string out = captureStdout([] {
    rt_hello<<<1, 32>>>(100);
    RT_OK(cudaGetLastError());
    std::printf("host, before the synchronisation\n");
    std::fflush(stdout);
    RT_OK(cudaDeviceSynchronize());
    std::printf("host, after\n");
  });
  const std::string want =
      "host, before the synchronisation\n"
      "block 0 thread  0: 100 ok 0.00 a -1099511627776\n"
      "block 0 thread  8: 164 ok 4.00 b -1099511627768\n"
      "block 0 thread 16: 356 ok 8.00 c -1099511627760\n"
      "block 0 thread 24: 676 ok 12.00 d -1099511627752\n"
      "host, after\n";
  RT_EXPECT(out == want, "stdout was:\n%s", out.c_str());
}

// Two launches in a stream, then a blocking copy: both launches' output, in launch order.
void printfAtStreamSyncAndCopy() {
  char* word = nullptr;
  RT_OK(cudaMalloc(&word, 8));
  RT_OK(cudaMemcpy(word, "mcsim", 6, cudaMemcpyHostToDevice));
  cudaStream_t s;
  RT_OK(cudaStreamCreate(&s));
  const std::string out = captureStdout([&] {
    rt_once<<<1, 1, 0, s>>>(word);
    RT_OK(cudaStreamSynchronize(s));
    rt_hello<<<1, 9, 0, s>>>(1);
    rt_once<<<1, 1, 0, s>>>(word);
    int back = 0;
    RT_OK(cudaMemcpy(&back, word, 4, cudaMemcpyDeviceToHost));  // synchronous: waits for the stream's work
  });
  RT_OK(cudaStreamDestroy(s));
  RT_OK(cudaFree(word));
  const std::string once = "once: mcsim 1.2e+04|beef  |%\n";
  const std::string want = once + "block 0 thread  0: 1 ok 0.00 a -1099511627776\nblock 0 thread  8: 65 ok 4.00 b -1099511627768\n" + once;
  RT_EXPECT(out == want, "stdout was:\n%s", out.c_str());
}

// A kernel of a captured graph prints at each graph launch's synchronisation.
void printfFromAGraph() {
  char* word = nullptr;
  RT_OK(cudaMalloc(&word, 8));
  RT_OK(cudaMemcpy(word, "graph", 6, cudaMemcpyHostToDevice));
  cudaStream_t s;
  RT_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaGraph_t graph;
  RT_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  rt_once<<<1, 1, 0, s>>>(word);
  RT_OK(cudaStreamEndCapture(s, &graph));
  cudaGraphExec_t exec;
  RT_OK(cudaGraphInstantiate(&exec, graph, 0));
  const std::string out = captureStdout([&] {
    RT_OK(cudaGraphLaunch(exec, s));
    RT_OK(cudaGraphLaunch(exec, s));
    RT_OK(cudaStreamSynchronize(s));
  });
  RT_OK(cudaGraphExecDestroy(exec));
  RT_OK(cudaGraphDestroy(graph));
  RT_OK(cudaStreamDestroy(s));
  RT_OK(cudaFree(word));
  const std::string once = "once: graph 1.2e+04|beef  |%\n";
  RT_EXPECT(out == once + once, "stdout was:\n%s", out.c_str());
}

// Destroying the context flushes too (cudaDeviceReset; the guide's own example relies on it), but
// exiting does not.
void printfAtDeviceReset() {
  char* word = nullptr;
  RT_OK(cudaMalloc(&word, 8));
  RT_OK(cudaMemcpy(word, "reset", 6, cudaMemcpyHostToDevice));
  const std::string out = captureStdout([&] {
    rt_once<<<1, 1>>>(word);
    RT_OK(cudaGetLastError());
    RT_OK(cudaDeviceReset());  // the allocation goes with the context
  });
  RT_EXPECT(out == "once: reset 1.2e+04|beef  |%\n", "stdout was:\n%s", out.c_str());
}

// Many warps and blocks print, to the program's stdout: on mcsim in the order the simulation ran
// them, the same on every run (runtime.printf.deterministic); a real GPU gives no such order.
void manyWarps() {
  rt_hello<<<3, 96>>>(0);
  RT_OK(cudaGetLastError());
  RT_OK(cudaDeviceSynchronize());
}

// cudaLimitPrintfFifoSize as a real H200 answers it (driver 580.159.04, docs/real-driver.md):
// 8,650,752 bytes by default, at least 512 KiB (100 reads back as 524,288), and fixed once a kernel
// that calls printf has been launched (cudaErrorInvalidValue). A process of its own: the first
// printf launch fixes the size for the rest of it.
void fifoLimit() {
  size_t size = 0;
  RT_OK(cudaDeviceGetLimit(&size, cudaLimitPrintfFifoSize));
  RT_EXPECT(size == 8650752, "the default printf FIFO is %zu bytes", size);
  RT_OK(cudaDeviceSetLimit(cudaLimitPrintfFifoSize, 100));
  RT_OK(cudaDeviceGetLimit(&size, cudaLimitPrintfFifoSize));
  RT_EXPECT(size == 524288, "a 100-byte printf FIFO reads back as %zu bytes", size);
  char* word = nullptr;
  RT_OK(cudaMalloc(&word, 8));
  RT_OK(cudaMemcpy(word, "fifo", 5, cudaMemcpyHostToDevice));
  const std::string out = captureStdout([&] {
    rt_once<<<1, 8>>>(word);
    RT_OK(cudaDeviceSynchronize());
  });
  std::string want;
  for (int i = 0; i < 8; ++i) want += "once: fifo 1.2e+04|beef  |%\n";
  RT_EXPECT(out == want, "stdout was:\n%s", out.c_str());
  const cudaError_t again = cudaDeviceSetLimit(cudaLimitPrintfFifoSize, 1 << 20);
  RT_EXPECT(again == cudaErrorInvalidValue, "setting the size after a printf launch: %s", cudaGetErrorName(again));
  (void)cudaGetLastError();  // the runtime keeps the refusal as its last error
  RT_OK(cudaFree(word));
}

const rtcheck::Case kCases[] = {
    {"fifo_limit", fifoLimit, /*onlyWhenNamed=*/true},
    {"at_synchronize", printfAtSynchronize},
    {"at_stream_sync_and_copy", printfAtStreamSyncAndCopy},
    {"from_a_graph", printfFromAGraph},
    {"at_device_reset", printfAtDeviceReset},
    {"many_warps", manyWarps, true},
};

}  // namespace

int main(int argc, char** argv) { return rtcheck::runCases(kCases, sizeof kCases / sizeof kCases[0], argc, argv); }
