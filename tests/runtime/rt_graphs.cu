// CUDA graphs through the runtime, as a user writes them: stream capture of copies, memsets,
// `<<<>>>` kernels (a kernel of the program's own: on mcsim its PTX runs in the executor) and
// host functions; fork and join through events; explicit cudaGraphAdd*Node; instantiation,
// many launches with the results checked on the host, cudaGraphExecKernelNodeSetParams; and what
// capture forbids. The same binary runs on a real GPU.
//   rt_graphs [CASE...]   (cases below; all by default)
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "tests/runtime/rt_check.h"

// x[i] = x[i] * 3 + add over n words.
__global__ void rt_affine(int* x, int n, int add) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = x[i] * 3 + add;
}

__global__ void rt_copy_plus(const int* src, int* dst, int n, int add) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) dst[i] = src[i] + add;
}

namespace {

constexpr int kN = 10000;
constexpr size_t kBytes = kN * sizeof(int);
constexpr int kBlocks = (kN + 255) / 256;

struct Counter {
  int calls = 0;
  const int* watch = nullptr;
  int seen = 0;
};

void CUDART_CB countCall(void* p) {
  auto* c = static_cast<Counter*>(p);
  ++c->calls;
  if (c->watch != nullptr) c->seen = c->watch[0];
}

void expectAll(const std::vector<int>& v, int want, const char* what) {
  for (size_t i = 0; i < v.size(); ++i) {
    RT_EXPECT(v[i] == want, "%s[%zu] = %d, expected %d", what, i, v[i], want);
  }
}

size_t nodeCount(cudaGraph_t g) {
  size_t n = 0;
  RT_OK(cudaGraphGetNodes(g, nullptr, &n));
  return n;
}

// A memset node's parameters: every word of d set to `value`.
cudaMemsetParams setWords(int* d, int value) {
  cudaMemsetParams mp{};
  mp.dst = d;
  mp.value = static_cast<unsigned>(value);
  mp.elementSize = 4;
  mp.width = kN;
  mp.height = 1;
  return mp;
}

// A kernel node's parameters: rt_affine over kN words, with `args` = {int**, int*, int*}.
cudaKernelNodeParams affineNode(void** args) {
  cudaKernelNodeParams kp{};
  kp.func = reinterpret_cast<void*>(rt_affine);
  kp.gridDim = dim3(kBlocks);
  kp.blockDim = dim3(256);
  kp.kernelParams = args;
  return kp;
}

void captureKernelsCopies() {
  int* d = nullptr;
  int* e = nullptr;
  int* pinnedIn = nullptr;
  int* pinnedOut = nullptr;
  RT_OK(cudaMalloc(&d, kBytes));
  RT_OK(cudaMalloc(&e, kBytes));
  RT_OK(cudaMallocHost(&pinnedIn, kBytes));
  RT_OK(cudaMallocHost(&pinnedOut, kBytes));
  for (int i = 0; i < kN; ++i) pinnedIn[i] = i;
  cudaStream_t s = nullptr;
  RT_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  Counter count;
  count.watch = pinnedOut;
  RT_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  RT_OK(cudaMemcpyAsync(d, pinnedIn, kBytes, cudaMemcpyHostToDevice, s));
  rt_affine<<<kBlocks, 256, 0, s>>>(d, kN, 1);
  RT_OK(cudaGetLastError());
  RT_OK(cudaMemsetAsync(e, 0, kBytes, s));
  rt_copy_plus<<<kBlocks, 256, 0, s>>>(d, e, kN, 5);
  RT_OK(cudaMemcpyAsync(pinnedOut, e, kBytes, cudaMemcpyDeviceToHost, s));
  RT_OK(cudaLaunchHostFunc(s, countCall, &count));
  cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
  RT_OK(cudaStreamIsCapturing(s, &st));
  RT_EXPECT(st == cudaStreamCaptureStatusActive, "status %d", st);
  cudaGraph_t g = nullptr;
  RT_OK(cudaStreamEndCapture(s, &g));
  RT_EXPECT(count.calls == 0, "the host function ran %d times during capture", count.calls);
  RT_EXPECT(nodeCount(g) == 6, "%zu nodes captured", nodeCount(g));
  cudaGraphExec_t exec = nullptr;
  RT_OK(cudaGraphInstantiate(&exec, g, 0));
  std::vector<int> out(kN);
  for (int round = 0; round < 20; ++round) {
    pinnedIn[0] = round;  // pinned memory is read when the copy runs
    RT_OK(cudaGraphLaunch(exec, s));
    RT_OK(cudaStreamSynchronize(s));
    RT_EXPECT(count.calls == round + 1, "host node ran %d times after %d launches", count.calls, round + 1);
    RT_EXPECT(count.seen == round * 3 + 1 + 5, "host node saw %d in round %d", count.seen, round);
    for (int i = 1; i < kN; ++i) {
      RT_EXPECT(pinnedOut[i] == i * 3 + 1 + 5, "out[%d] = %d in round %d", i, pinnedOut[i], round);
    }
  }
  RT_OK(cudaGraphExecDestroy(exec));
  RT_OK(cudaGraphDestroy(g));
  RT_OK(cudaStreamDestroy(s));
  RT_OK(cudaFreeHost(pinnedIn));
  RT_OK(cudaFreeHost(pinnedOut));
  RT_OK(cudaFree(d));
  RT_OK(cudaFree(e));
}

void captureMemset2DIsOneNode() {
  int* d = nullptr;
  size_t pitch = 0;
  RT_OK(cudaMallocPitch(&d, &pitch, 100 * sizeof(int), 16));
  cudaStream_t s = nullptr;
  RT_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  RT_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  RT_OK(cudaMemset2DAsync(d, pitch, 0x11, 100 * sizeof(int), 16, s));
  cudaGraph_t g = nullptr;
  RT_OK(cudaStreamEndCapture(s, &g));
  RT_EXPECT(nodeCount(g) == 1, "%zu nodes for one 2D memset", nodeCount(g));
  cudaGraphExec_t exec = nullptr;
  RT_OK(cudaGraphInstantiate(&exec, g, 0));
  RT_OK(cudaGraphLaunch(exec, s));
  RT_OK(cudaStreamSynchronize(s));
  std::vector<int> row(100);
  RT_OK(cudaMemcpy(row.data(), reinterpret_cast<char*>(d) + 15 * pitch, row.size() * sizeof(int),
                   cudaMemcpyDeviceToHost));
  expectAll(row, 0x11111111, "last row");
  RT_OK(cudaGraphExecDestroy(exec));
  RT_OK(cudaGraphDestroy(g));
  RT_OK(cudaStreamDestroy(s));
  RT_OK(cudaFree(d));
}

void forkJoin() {
  int *a = nullptr, *b = nullptr;
  RT_OK(cudaMalloc(&a, kBytes));
  RT_OK(cudaMalloc(&b, kBytes));
  cudaStream_t s1 = nullptr, s2 = nullptr;
  RT_OK(cudaStreamCreate(&s1));
  RT_OK(cudaStreamCreate(&s2));
  cudaEvent_t fork = nullptr, join = nullptr;
  RT_OK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
  RT_OK(cudaEventCreateWithFlags(&join, cudaEventDisableTiming));
  RT_OK(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal));
  RT_OK(cudaMemsetAsync(a, 0, kBytes, s1));
  RT_OK(cudaEventRecord(fork, s1));
  RT_OK(cudaStreamWaitEvent(s2, fork, 0));
  rt_copy_plus<<<kBlocks, 256, 0, s2>>>(a, b, kN, 7);  // b = 7, on the forked stream
  rt_affine<<<kBlocks, 256, 0, s1>>>(a, kN, 2);        // a = 2, meanwhile
  RT_OK(cudaEventRecord(join, s2));
  RT_OK(cudaStreamWaitEvent(s1, join, 0));
  rt_copy_plus<<<kBlocks, 256, 0, s1>>>(b, a, kN, 1);  // a = b + 1 = 8, after both
  cudaGraph_t g = nullptr;
  RT_OK(cudaStreamEndCapture(s1, &g));
  RT_EXPECT(nodeCount(g) == 4, "%zu nodes", nodeCount(g));
  size_t roots = 0;
  RT_OK(cudaGraphGetRootNodes(g, nullptr, &roots));
  RT_EXPECT(roots == 1, "%zu roots", roots);
  cudaGraphExec_t exec = nullptr;
  RT_OK(cudaGraphInstantiate(&exec, g, 0));
  std::vector<int> out(kN);
  for (int round = 0; round < 5; ++round) {
    RT_OK(cudaGraphLaunch(exec, s1));
    RT_OK(cudaStreamSynchronize(s1));
    RT_OK(cudaMemcpy(out.data(), a, kBytes, cudaMemcpyDeviceToHost));
    expectAll(out, 8, "a");
  }
  RT_OK(cudaGraphExecDestroy(exec));
  RT_OK(cudaGraphDestroy(g));
  RT_OK(cudaEventDestroy(fork));
  RT_OK(cudaEventDestroy(join));
  RT_OK(cudaStreamDestroy(s1));
  RT_OK(cudaStreamDestroy(s2));
  RT_OK(cudaFree(a));
  RT_OK(cudaFree(b));
}

void explicitNodes() {
  int *d = nullptr, *other = nullptr;
  RT_OK(cudaMalloc(&d, kBytes));
  RT_OK(cudaMalloc(&other, kBytes));
  RT_OK(cudaMemset(other, 0, kBytes));
  std::vector<int> out(kN);
  cudaGraph_t g = nullptr;
  RT_OK(cudaGraphCreate(&g, 0));
  cudaGraphNode_t set = nullptr, kernel = nullptr, copy = nullptr, host = nullptr;
  const cudaMemsetParams mp = setWords(d, 4);
  RT_OK(cudaGraphAddMemsetNode(&set, g, nullptr, 0, &mp));
  int* arg0 = d;
  int arg1 = kN, arg2 = 0;
  void* args[] = {&arg0, &arg1, &arg2};
  cudaKernelNodeParams kp = affineNode(args);
  RT_OK(cudaGraphAddKernelNode(&kernel, g, &set, 1, &kp));
  RT_OK(cudaGraphAddMemcpyNode1D(&copy, g, &kernel, 1, out.data(), d, kBytes, cudaMemcpyDeviceToHost));
  Counter count;
  cudaHostNodeParams hp{countCall, &count};
  RT_OK(cudaGraphAddHostNode(&host, g, &copy, 1, &hp));
  cudaGraphExec_t exec = nullptr;
  RT_OK(cudaGraphInstantiate(&exec, g, 0));
  for (int round = 0; round < 3; ++round) {
    std::fill(out.begin(), out.end(), -1);
    RT_OK(cudaGraphLaunch(exec, 0));
    RT_OK(cudaDeviceSynchronize());
    expectAll(out, 12, "out");  // 4 * 3 + 0
  }
  RT_EXPECT(count.calls == 3, "host node ran %d times", count.calls);
  // The exec's kernel node now works on `other` and adds 9; the graph's node is unchanged.
  arg0 = other;
  arg2 = 9;
  RT_OK(cudaGraphExecKernelNodeSetParams(exec, kernel, &kp));
  RT_OK(cudaGraphLaunch(exec, 0));
  RT_OK(cudaDeviceSynchronize());
  expectAll(out, 4, "out (d only set)");
  std::vector<int> o2(kN);
  RT_OK(cudaMemcpy(o2.data(), other, kBytes, cudaMemcpyDeviceToHost));
  expectAll(o2, 9, "other");
  cudaKernelNodeParams back{};
  RT_OK(cudaGraphKernelNodeGetParams(kernel, &back));
  RT_EXPECT(*static_cast<int**>(back.kernelParams[0]) == d, "the graph's node keeps its first argument");
  RT_OK(cudaGraphExecDestroy(exec));
  RT_OK(cudaGraphDestroy(g));
  RT_OK(cudaFree(d));
  RT_OK(cudaFree(other));
}

// Event record and event wait nodes, made explicitly and by capture (cudaEventRecordExternal,
// cudaEventWaitExternal): a record node fires after the nodes it follows, so the host that
// synchronizes on its event sees their results; a wait node holds its dependents until the
// event's last record, made on another stream before the launch.
void eventNodes() {
  int *d = nullptr, *d2 = nullptr, *pinned = nullptr;
  RT_OK(cudaMalloc(&d, kBytes));
  RT_OK(cudaMalloc(&d2, kBytes));
  RT_OK(cudaMallocHost(&pinned, kBytes));
  cudaStream_t s1 = nullptr, s2 = nullptr;
  RT_OK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  RT_OK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  cudaEvent_t done = nullptr, ready = nullptr;
  RT_OK(cudaEventCreate(&done));
  RT_OK(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming));

  // memset 5 -> kernel (5 * 3 + 1) -> copy to pinned memory -> record `done`.
  cudaGraph_t g = nullptr;
  RT_OK(cudaGraphCreate(&g, 0));
  cudaGraphNode_t set = nullptr, kernel = nullptr, copy = nullptr, record = nullptr;
  const cudaMemsetParams mp = setWords(d, 5);
  RT_OK(cudaGraphAddMemsetNode(&set, g, nullptr, 0, &mp));
  int* arg0 = d;
  int arg1 = kN, arg2 = 1;
  void* args[] = {&arg0, &arg1, &arg2};
  cudaKernelNodeParams kp = affineNode(args);
  RT_OK(cudaGraphAddKernelNode(&kernel, g, &set, 1, &kp));
  RT_OK(cudaGraphAddMemcpyNode1D(&copy, g, &kernel, 1, pinned, d, kBytes, cudaMemcpyDeviceToHost));
  RT_OK(cudaGraphAddEventRecordNode(&record, g, &copy, 1, done));
  cudaGraphNodeType type = cudaGraphNodeTypeEmpty;
  RT_OK(cudaGraphNodeGetType(record, &type));
  RT_EXPECT(type == cudaGraphNodeTypeEventRecord, "record node type %d", static_cast<int>(type));
  cudaEvent_t got = nullptr;
  RT_OK(cudaGraphEventRecordNodeGetEvent(record, &got));
  RT_EXPECT(got == done, "the record node names another event");
  cudaGraphExec_t exec = nullptr;
  RT_OK(cudaGraphInstantiate(&exec, g, 0));
  for (int round = 0; round < 3; ++round) {
    std::fill(pinned, pinned + kN, -1);
    RT_OK(cudaGraphLaunch(exec, s1));
    RT_OK(cudaEventSynchronize(done));  // not the stream: the record node alone says it is done
    RT_EXPECT(pinned[0] == 16 && pinned[kN - 1] == 16, "round %d: %d .. %d after the record node", round, pinned[0],
              pinned[kN - 1]);
  }
  RT_OK(cudaStreamSynchronize(s1));

  // A wait node: d2 is set to 7 on s1 and `ready` recorded there; the graph, launched on s2,
  // waits for it and then computes 7 * 3 + 1.
  cudaGraph_t w = nullptr;
  RT_OK(cudaGraphCreate(&w, 0));
  cudaGraphNode_t wait = nullptr, after = nullptr;
  RT_OK(cudaGraphAddEventWaitNode(&wait, w, nullptr, 0, ready));
  RT_OK(cudaGraphNodeGetType(wait, &type));
  RT_EXPECT(type == cudaGraphNodeTypeWaitEvent, "wait node type %d", static_cast<int>(type));
  int* warg0 = d2;
  void* wargs[] = {&warg0, &arg1, &arg2};
  kp = affineNode(wargs);
  RT_OK(cudaGraphAddKernelNode(&after, w, &wait, 1, &kp));
  cudaGraphExec_t wexec = nullptr;
  RT_OK(cudaGraphInstantiate(&wexec, w, 0));
  for (int round = 0; round < 3; ++round) {
    RT_OK(cudaMemsetAsync(d2, 0, kBytes, s1));  // without the wait, the kernel would make 1s
    std::vector<int> seven(kN, 7);
    RT_OK(cudaMemcpyAsync(d2, seven.data(), kBytes, cudaMemcpyHostToDevice, s1));
    RT_OK(cudaEventRecord(ready, s1));
    RT_OK(cudaGraphLaunch(wexec, s2));
    RT_OK(cudaStreamSynchronize(s2));
    std::vector<int> out(kN);
    RT_OK(cudaMemcpy(out.data(), d2, kBytes, cudaMemcpyDeviceToHost));
    expectAll(out, 22, "after the wait node");
  }

  // The same nodes by capture: cudaEventRecordWithFlags(External) and cudaStreamWaitEvent(External).
  cudaGraph_t c = nullptr;
  RT_OK(cudaStreamBeginCapture(s2, cudaStreamCaptureModeThreadLocal));
  RT_OK(cudaStreamWaitEvent(s2, ready, cudaEventWaitExternal));
  rt_affine<<<kBlocks, 256, 0, s2>>>(d2, kN, 1);
  RT_OK(cudaEventRecordWithFlags(done, s2, cudaEventRecordExternal));
  RT_OK(cudaStreamEndCapture(s2, &c));
  RT_EXPECT(nodeCount(c) == 3, "%zu nodes captured", nodeCount(c));
  size_t roots = 0;
  RT_OK(cudaGraphGetRootNodes(c, nullptr, &roots));
  cudaGraphNode_t root = nullptr;
  RT_EXPECT(roots == 1, "%zu roots", roots);
  RT_OK(cudaGraphGetRootNodes(c, &root, &roots));
  RT_OK(cudaGraphNodeGetType(root, &type));
  RT_EXPECT(type == cudaGraphNodeTypeWaitEvent, "captured root type %d", static_cast<int>(type));
  cudaGraphExec_t cexec = nullptr;
  RT_OK(cudaGraphInstantiate(&cexec, c, 0));
  std::vector<int> seven(kN, 7);
  RT_OK(cudaMemcpyAsync(d2, seven.data(), kBytes, cudaMemcpyHostToDevice, s1));
  RT_OK(cudaEventRecord(ready, s1));
  RT_OK(cudaGraphLaunch(cexec, s2));
  RT_OK(cudaEventSynchronize(done));
  std::vector<int> out(kN);
  RT_OK(cudaMemcpy(out.data(), d2, kBytes, cudaMemcpyDeviceToHost));
  expectAll(out, 22, "after the captured wait and record");

  RT_OK(cudaGraphExecDestroy(cexec));
  RT_OK(cudaGraphDestroy(c));
  RT_OK(cudaGraphExecDestroy(wexec));
  RT_OK(cudaGraphDestroy(w));
  RT_OK(cudaGraphExecDestroy(exec));
  RT_OK(cudaGraphDestroy(g));
  RT_OK(cudaEventDestroy(done));
  RT_OK(cudaEventDestroy(ready));
  RT_OK(cudaStreamDestroy(s1));
  RT_OK(cudaStreamDestroy(s2));
  RT_OK(cudaFreeHost(pinned));
  RT_OK(cudaFree(d));
  RT_OK(cudaFree(d2));
}

void errors() {
  cudaStream_t s = nullptr;
  RT_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  int* d = nullptr;
  RT_OK(cudaMalloc(&d, kBytes));
  // The legacy stream cannot capture.
  cudaError_t e = cudaStreamBeginCapture(cudaStreamLegacy, cudaStreamCaptureModeGlobal);
  RT_EXPECT(e == cudaErrorStreamCaptureUnsupported, "legacy capture: %s", cudaGetErrorName(e));
  cudaGetLastError();
  // cudaMalloc during a global capture of this thread is refused and invalidates the capture.
  RT_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  RT_OK(cudaMemsetAsync(d, 0, kBytes, s));
  int* p = nullptr;
  e = cudaMalloc(&p, 64);
  RT_EXPECT(e == cudaErrorStreamCaptureUnsupported, "cudaMalloc in capture: %s", cudaGetErrorName(e));
  cudaGraph_t g = nullptr;
  e = cudaStreamEndCapture(s, &g);
  RT_EXPECT(e == cudaErrorStreamCaptureInvalidated, "end after cudaMalloc: %s", cudaGetErrorName(e));
  RT_EXPECT(g == nullptr, "an invalidated capture gives no graph");
  cudaGetLastError();
  // Synchronizing a capturing stream.
  RT_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed));
  e = cudaStreamSynchronize(s);
  RT_EXPECT(e == cudaErrorStreamCaptureUnsupported, "synchronize in capture: %s", cudaGetErrorName(e));
  e = cudaStreamEndCapture(s, &g);
  RT_EXPECT(e == cudaErrorStreamCaptureInvalidated, "end after synchronize: %s", cudaGetErrorName(e));
  cudaGetLastError();
  // Ending a capture that never began.
  e = cudaStreamEndCapture(s, &g);
  RT_EXPECT(e == cudaErrorIllegalState, "end without capture: %s", cudaGetErrorName(e));
  cudaGetLastError();
  // The stream and the device work afterwards.
  RT_OK(cudaMemsetAsync(d, 0, kBytes, s));
  RT_OK(cudaStreamSynchronize(s));
  RT_OK(cudaStreamDestroy(s));
  RT_OK(cudaFree(d));
}

const rtcheck::Case kCases[] = {
    {"capture_kernels_copies", captureKernelsCopies},
    {"capture_memset_2d", captureMemset2DIsOneNode},
    {"fork_join", forkJoin},
    {"explicit_nodes", explicitNodes},
    {"event_nodes", eventNodes},
    {"errors", errors},
};

}  // namespace

int main(int argc, char** argv) { return rtcheck::runCases(kCases, sizeof kCases / sizeof kCases[0], argc, argv); }
