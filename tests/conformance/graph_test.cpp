// CUDA graphs and stream capture through the driver API: explicit construction, edges and
// queries, instantiation and repeated launches (memsets, copies, a PTX kernel, host nodes, event
// nodes, child graphs), stream capture with its modes, fork and join through events, and what
// capture forbids. Values are checked on the host; nothing depends on how fast the device is.
// Node and edge order is compared as sets where the reference promises no order.
#include <algorithm>
#include <atomic>
#include <set>
#include <thread>
#include <vector>

#include "tests/conformance/conformance.h"

namespace conformance {
namespace {

// p[i] = p[i] * 2 + 1 over n words.
const char* const kPtx = R"(
.version 8.0
.target sm_90
.address_size 64

.visible .entry twice_plus_one(.param .u64 p, .param .u32 n)
{
  .reg .pred %p<2>;
  .reg .b32 %r<9>;
  .reg .b64 %rd<4>;
  mov.u32 %r1, %ctaid.x;
  mov.u32 %r2, %ntid.x;
  mov.u32 %r3, %tid.x;
  mad.lo.s32 %r4, %r1, %r2, %r3;
  ld.param.u32 %r5, [n];
  setp.ge.s32 %p1, %r4, %r5;
  @%p1 bra DONE;
  ld.param.u64 %rd1, [p];
  mul.wide.s32 %rd2, %r4, 4;
  add.s64 %rd3, %rd1, %rd2;
  ld.global.u32 %r6, [%rd3];
  shl.b32 %r7, %r6, 1;
  add.s32 %r8, %r7, 1;
  st.global.u32 [%rd3], %r8;
DONE:
  ret;
}
)";

class GraphTest : public DriverTest {
 protected:
  static constexpr unsigned kWords = 4096;
  static constexpr size_t kBytes = kWords * 4;
  void SetUp() override {
    DriverTest::SetUp();
    ASSERT_OK(cuModuleLoadData(&module, kPtx));
    ASSERT_OK(cuModuleGetFunction(&kernel, module, "twice_plus_one"));
    ASSERT_OK(cuMemAlloc(&dev, kBytes));
    ASSERT_OK(cuMemAllocHost(&host, kBytes));
    ASSERT_OK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  }
  void TearDown() override {
    cuStreamDestroy(stream);
    cuMemFreeHost(host);
    cuMemFree(dev);
    cuModuleUnload(module);
    DriverTest::TearDown();
  }
  uint32_t* words() const { return static_cast<uint32_t*>(host); }
  bool hostIs(uint32_t v) const {
    return std::all_of(words(), words() + kWords, [v](uint32_t w) { return w == v; });
  }
  // Kernel node parameters for twice_plus_one over the device buffer.
  CUDA_KERNEL_NODE_PARAMS kernelParams() {
    CUDA_KERNEL_NODE_PARAMS p{};
    p.func = kernel;
    p.gridDimX = kWords / 256;
    p.gridDimY = p.gridDimZ = 1;
    p.blockDimX = 256;
    p.blockDimY = p.blockDimZ = 1;
    args[0] = &argDev;
    args[1] = &argN;
    p.kernelParams = args;
    return p;
  }
  CUDA_MEMCPY3D copyToHost() const {
    CUDA_MEMCPY3D c{};
    c.srcMemoryType = CU_MEMORYTYPE_DEVICE;
    c.srcDevice = dev;
    c.dstMemoryType = CU_MEMORYTYPE_HOST;
    c.dstHost = host;
    c.WidthInBytes = kBytes;
    c.Height = 1;
    c.Depth = 1;
    return c;
  }
  CUDA_MEMSET_NODE_PARAMS memsetWords(uint32_t v) const {
    CUDA_MEMSET_NODE_PARAMS m{};
    m.dst = dev;
    m.value = v;
    m.elementSize = 4;
    m.width = kWords;
    m.height = 1;
    return m;
  }
  void launchKernelOn(CUstream s) {
    void* a[] = {&argDev, &argN};
    ASSERT_OK(cuLaunchKernel(kernel, kWords / 256, 1, 1, 256, 1, 1, 0, s, a, nullptr));
  }
  static std::set<CUgraphNode> asSet(const std::vector<CUgraphNode>& v) { return {v.begin(), v.end()}; }
  static std::vector<CUgraphNode> nodesOf(CUgraph g) {
    size_t n = 0;
    EXPECT_OK(cuGraphGetNodes(g, nullptr, &n));
    std::vector<CUgraphNode> v(n);
    EXPECT_OK(cuGraphGetNodes(g, v.data(), &n));
    v.resize(n);
    return v;
  }
  static std::vector<CUgraphNodeType> typesOf(CUgraph g) {
    std::vector<CUgraphNodeType> t;
    for (CUgraphNode n : nodesOf(g)) {
      CUgraphNodeType type{};
      EXPECT_OK(cuGraphNodeGetType(n, &type));
      t.push_back(type);
    }
    return t;
  }
  static size_t countOf(const std::vector<CUgraphNodeType>& t, CUgraphNodeType type) {
    return static_cast<size_t>(std::count(t.begin(), t.end(), type));
  }

  CUmodule module = nullptr;
  CUfunction kernel = nullptr;
  CUdeviceptr dev = 0;
  void* host = nullptr;
  CUstream stream = nullptr;
  CUdeviceptr argDev = 0;
  unsigned argN = kWords;
  void* args[2] = {};
};

struct HostCount {
  std::atomic<int> calls{0};
  const uint32_t* data = nullptr;
  uint32_t firstWord = 0;
};

void CUDA_CB countCall(void* p) {
  auto* c = static_cast<HostCount*>(p);
  c->firstWord = c->data[0];
  c->calls.fetch_add(1);
}

TEST_F(GraphTest, CreateRefusesFlagsAndNullOutput) {
  CUgraph g = nullptr;
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuGraphCreate(nullptr, 0));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuGraphCreate(&g, 1));
  ASSERT_OK(cuGraphCreate(&g, 0));
  EXPECT_TRUE(nodesOf(g).empty());
  EXPECT_OK(cuGraphDestroy(g));
}

TEST_F(GraphTest, NodesEdgesAndDependencies) {
  CUgraph g = nullptr;
  ASSERT_OK(cuGraphCreate(&g, 0));
  CUgraphNode a = nullptr, b = nullptr, c = nullptr;
  ASSERT_OK(cuGraphAddEmptyNode(&a, g, nullptr, 0));
  ASSERT_OK(cuGraphAddEmptyNode(&b, g, &a, 1));
  const CUgraphNode ab[] = {a, b};
  ASSERT_OK(cuGraphAddEmptyNode(&c, g, ab, 2));
  EXPECT_EQ(asSet(nodesOf(g)), (std::set<CUgraphNode>{a, b, c}));
  size_t n = 0;
  ASSERT_OK(cuGraphGetRootNodes(g, nullptr, &n));
  ASSERT_EQ(n, 1u);
  CUgraphNode root = nullptr;
  ASSERT_OK(cuGraphGetRootNodes(g, &root, &n));
  EXPECT_EQ(root, a);
  ASSERT_OK(cuGraphGetEdges(g, nullptr, nullptr, nullptr, &n));
  EXPECT_EQ(n, 3u);
  std::vector<CUgraphNode> from(3), to(3);
  ASSERT_OK(cuGraphGetEdges(g, from.data(), to.data(), nullptr, &n));
  std::set<std::pair<CUgraphNode, CUgraphNode>> edges;
  for (size_t i = 0; i < n; ++i) edges.emplace(from[i], to[i]);
  EXPECT_EQ(edges, (std::set<std::pair<CUgraphNode, CUgraphNode>>{{a, b}, {a, c}, {b, c}}));
  // Asking for more than there are: the rest are set to NULL and the count is what was given.
  std::vector<CUgraphNode> deps(4, b);
  n = 4;
  ASSERT_OK(cuGraphNodeGetDependencies(c, deps.data(), nullptr, &n));
  EXPECT_EQ(n, 2u);
  EXPECT_EQ(asSet({deps[0], deps[1]}), (std::set<CUgraphNode>{a, b}));
  EXPECT_EQ(deps[2], nullptr);
  ASSERT_OK(cuGraphNodeGetDependentNodes(a, nullptr, nullptr, &n));
  EXPECT_EQ(n, 2u);
  // An edge that exists cannot be added again, one that does not cannot be removed.
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuGraphAddDependencies(g, &a, &b, nullptr, 1));
  ASSERT_OK(cuGraphRemoveDependencies(g, &a, &c, nullptr, 1));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuGraphRemoveDependencies(g, &a, &c, nullptr, 1));
  ASSERT_OK(cuGraphGetEdges(g, nullptr, nullptr, nullptr, &n));
  EXPECT_EQ(n, 2u);
  ASSERT_OK(cuGraphAddDependencies(g, &a, &c, nullptr, 1));
  CUgraphNodeType type{};
  ASSERT_OK(cuGraphNodeGetType(b, &type));
  EXPECT_EQ(type, CU_GRAPH_NODE_TYPE_EMPTY);
  // Destroying a node takes its edges with it.
  ASSERT_OK(cuGraphDestroyNode(b));
  ASSERT_OK(cuGraphGetEdges(g, nullptr, nullptr, nullptr, &n));
  EXPECT_EQ(n, 1u);
  EXPECT_EQ(asSet(nodesOf(g)), (std::set<CUgraphNode>{a, c}));
  EXPECT_OK(cuGraphDestroy(g));
}

TEST_F(GraphTest, ExplicitGraphRunsInDependencyOrderEveryLaunch) {
  CUgraph g = nullptr;
  ASSERT_OK(cuGraphCreate(&g, 0));
  argDev = dev;
  CUgraphNode set = nullptr, k = nullptr, copy = nullptr, hostNode = nullptr;
  const CUDA_MEMSET_NODE_PARAMS m = memsetWords(3);
  ASSERT_OK(cuGraphAddMemsetNode(&set, g, nullptr, 0, &m, ctx));
  const CUDA_KERNEL_NODE_PARAMS kp = kernelParams();
  ASSERT_OK(cuGraphAddKernelNode(&k, g, &set, 1, &kp));
  const CUDA_MEMCPY3D c = copyToHost();
  ASSERT_OK(cuGraphAddMemcpyNode(&copy, g, &k, 1, &c, ctx));
  HostCount count;
  count.data = words();
  CUDA_HOST_NODE_PARAMS hp{countCall, &count};
  ASSERT_OK(cuGraphAddHostNode(&hostNode, g, &copy, 1, &hp));
  // The parameters read back; the kernel's are the node's own copies.
  CUDA_KERNEL_NODE_PARAMS back{};
  ASSERT_OK(cuGraphKernelNodeGetParams(k, &back));
  EXPECT_EQ(back.func, kernel);
  EXPECT_EQ(back.gridDimX, kWords / 256);
  EXPECT_EQ(back.blockDimX, 256u);
  ASSERT_NE(back.kernelParams, nullptr);
  EXPECT_EQ(*static_cast<CUdeviceptr*>(back.kernelParams[0]), dev);
  EXPECT_EQ(*static_cast<unsigned*>(back.kernelParams[1]), kWords);
  CUDA_MEMSET_NODE_PARAMS mBack{};
  ASSERT_OK(cuGraphMemsetNodeGetParams(set, &mBack));
  EXPECT_EQ(mBack.dst, dev);
  EXPECT_EQ(mBack.value, 3u);
  EXPECT_EQ(mBack.width, size_t{kWords});
  CUDA_HOST_NODE_PARAMS hBack{};
  ASSERT_OK(cuGraphHostNodeGetParams(hostNode, &hBack));
  EXPECT_EQ(hBack.userData, &count);
  // Wrong node kinds are refused.
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuGraphKernelNodeGetParams(set, &back));
  CUgraphExec exec = nullptr;
  ASSERT_OK(cuGraphInstantiate(&exec, g, 0));
  std::memset(host, 0, kBytes);
  EXPECT_EQ(count.calls.load(), 0) << "instantiation runs nothing";
  for (int i = 0; i < 5; ++i) ASSERT_OK(cuGraphLaunch(exec, stream));
  ASSERT_OK(cuStreamSynchronize(stream));
  EXPECT_EQ(count.calls.load(), 5);
  EXPECT_EQ(count.firstWord, 7u) << "the host node ran after the copy";
  EXPECT_TRUE(hostIs(7));  // memset 3, then 3 * 2 + 1, every launch anew
  EXPECT_OK(cuGraphExecDestroy(exec));
  EXPECT_OK(cuGraphDestroy(g));
}

TEST_F(GraphTest, ExecKernelNodeSetParamsChangesLaterLaunchesOnly) {
  CUdeviceptr other = 0;
  ASSERT_OK(cuMemAlloc(&other, kBytes));
  ASSERT_OK(cuMemsetD32(dev, 1, kWords));
  ASSERT_OK(cuMemsetD32(other, 10, kWords));
  CUgraph g = nullptr;
  ASSERT_OK(cuGraphCreate(&g, 0));
  argDev = dev;
  CUgraphNode k = nullptr;
  const CUDA_KERNEL_NODE_PARAMS kp = kernelParams();
  ASSERT_OK(cuGraphAddKernelNode(&k, g, nullptr, 0, &kp));
  CUgraphExec exec = nullptr;
  ASSERT_OK(cuGraphInstantiate(&exec, g, 0));
  ASSERT_OK(cuGraphLaunch(exec, stream));  // dev: 1 -> 3
  argDev = other;
  const CUDA_KERNEL_NODE_PARAMS kp2 = kernelParams();
  ASSERT_OK(cuGraphExecKernelNodeSetParams(exec, k, &kp2));
  ASSERT_OK(cuGraphLaunch(exec, stream));  // other: 10 -> 21
  ASSERT_OK(cuStreamSynchronize(stream));
  ASSERT_OK(cuMemcpyDtoH(host, dev, kBytes));
  EXPECT_TRUE(hostIs(3));
  ASSERT_OK(cuMemcpyDtoH(host, other, kBytes));
  EXPECT_TRUE(hostIs(21));
  // The graph's own node still has the first parameters.
  CUDA_KERNEL_NODE_PARAMS back{};
  ASSERT_OK(cuGraphKernelNodeGetParams(k, &back));
  EXPECT_EQ(*static_cast<CUdeviceptr*>(back.kernelParams[0]), dev);
  EXPECT_OK(cuGraphExecDestroy(exec));
  EXPECT_OK(cuGraphDestroy(g));
  cuMemFree(other);
}

TEST_F(GraphTest, ExecUpdateTakesNewParametersOrRefusesANewTopology) {
  ASSERT_OK(cuMemsetD32(dev, 0, kWords));
  CUgraph g1 = nullptr, g2 = nullptr, g3 = nullptr;
  ASSERT_OK(cuGraphCreate(&g1, 0));
  ASSERT_OK(cuGraphCreate(&g2, 0));
  ASSERT_OK(cuGraphCreate(&g3, 0));
  CUgraphNode n1 = nullptr, n2 = nullptr, n3 = nullptr, n4 = nullptr;
  CUDA_MEMSET_NODE_PARAMS m = memsetWords(5);
  ASSERT_OK(cuGraphAddMemsetNode(&n1, g1, nullptr, 0, &m, ctx));
  m.value = 9;
  ASSERT_OK(cuGraphAddMemsetNode(&n2, g2, nullptr, 0, &m, ctx));
  ASSERT_OK(cuGraphAddMemsetNode(&n3, g3, nullptr, 0, &m, ctx));
  ASSERT_OK(cuGraphAddEmptyNode(&n4, g3, &n3, 1));
  CUgraphExec exec = nullptr;
  ASSERT_OK(cuGraphInstantiate(&exec, g1, 0));
  CUgraphExecUpdateResultInfo info{};
  EXPECT_CU(CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE, cuGraphExecUpdate(exec, g3, &info));
  EXPECT_EQ(info.result, CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED);
  ASSERT_OK(cuGraphExecUpdate(exec, g2, &info));
  EXPECT_EQ(info.result, CU_GRAPH_EXEC_UPDATE_SUCCESS);
  ASSERT_OK(cuGraphLaunch(exec, stream));
  ASSERT_OK(cuStreamSynchronize(stream));
  ASSERT_OK(cuMemcpyDtoH(host, dev, kBytes));
  EXPECT_TRUE(hostIs(9));
  EXPECT_OK(cuGraphExecDestroy(exec));
  for (CUgraph g : {g1, g2, g3}) EXPECT_OK(cuGraphDestroy(g));
}

TEST_F(GraphTest, CloneChildGraphAndEventNodes) {
  CUgraph child = nullptr, g = nullptr;
  ASSERT_OK(cuGraphCreate(&child, 0));
  CUgraphNode set = nullptr;
  const CUDA_MEMSET_NODE_PARAMS m = memsetWords(4);
  ASSERT_OK(cuGraphAddMemsetNode(&set, child, nullptr, 0, &m, ctx));
  CUgraph clone = nullptr;
  ASSERT_OK(cuGraphClone(&clone, child));
  CUgraphNode inClone = nullptr;
  ASSERT_OK(cuGraphNodeFindInClone(&inClone, set, clone));
  CUgraphNodeType type{};
  ASSERT_OK(cuGraphNodeGetType(inClone, &type));
  EXPECT_EQ(type, CU_GRAPH_NODE_TYPE_MEMSET);
  EXPECT_NE(inClone, set);
  ASSERT_OK(cuGraphCreate(&g, 0));
  CUgraphNode childNode = nullptr, copy = nullptr, record = nullptr;
  ASSERT_OK(cuGraphAddChildGraphNode(&childNode, g, nullptr, 0, clone));
  CUgraph embedded = nullptr;
  ASSERT_OK(cuGraphChildGraphNodeGetGraph(childNode, &embedded));
  EXPECT_EQ(nodesOf(embedded).size(), 1u);
  const CUDA_MEMCPY3D c = copyToHost();
  ASSERT_OK(cuGraphAddMemcpyNode(&copy, g, &childNode, 1, &c, ctx));
  CUevent ev = nullptr;
  ASSERT_OK(cuEventCreate(&ev, CU_EVENT_DEFAULT));
  ASSERT_OK(cuGraphAddEventRecordNode(&record, g, &copy, 1, ev));
  CUevent back = nullptr;
  ASSERT_OK(cuGraphEventRecordNodeGetEvent(record, &back));
  EXPECT_EQ(back, ev);
  CUgraphExec exec = nullptr;
  ASSERT_OK(cuGraphInstantiate(&exec, g, 0));
  std::memset(host, 0, kBytes);
  ASSERT_OK(cuGraphLaunch(exec, stream));
  ASSERT_OK(cuEventSynchronize(ev));  // the record node recorded it after the copy
  EXPECT_TRUE(hostIs(4));
  ASSERT_OK(cuStreamSynchronize(stream));
  EXPECT_OK(cuGraphExecDestroy(exec));
  for (CUgraph x : {g, clone, child}) EXPECT_OK(cuGraphDestroy(x));
  cuEventDestroy(ev);
}

TEST_F(GraphTest, CaptureMakesNodesThatRunOnlyWhenLaunched) {
  argDev = dev;
  std::memset(host, 0, kBytes);
  HostCount count;
  count.data = words();
  CUstreamCaptureStatus status{};
  ASSERT_OK(cuStreamIsCapturing(stream, &status));
  EXPECT_EQ(status, CU_STREAM_CAPTURE_STATUS_NONE);
  ASSERT_OK(cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL));
  ASSERT_OK(cuStreamIsCapturing(stream, &status));
  EXPECT_EQ(status, CU_STREAM_CAPTURE_STATUS_ACTIVE);
  ASSERT_OK(cuMemsetD32Async(dev, 2, kWords, stream));
  launchKernelOn(stream);
  ASSERT_OK(cuMemcpyDtoHAsync(host, dev, kBytes, stream));
  ASSERT_OK(cuLaunchHostFunc(stream, countCall, &count));
  cuuint64_t id = 0;
  CUgraph during = nullptr;
  const CUgraphNode* deps = nullptr;
  size_t numDeps = 0;
  ASSERT_OK(cuStreamGetCaptureInfo(stream, &status, &id, &during, &deps, nullptr, &numDeps));
  EXPECT_EQ(status, CU_STREAM_CAPTURE_STATUS_ACTIVE);
  EXPECT_NE(id, 0u);
  EXPECT_NE(during, nullptr);
  ASSERT_EQ(numDeps, 1u);  // the host node, the last captured
  CUgraphNodeType lastType{};
  ASSERT_OK(cuGraphNodeGetType(deps[0], &lastType));
  EXPECT_EQ(lastType, CU_GRAPH_NODE_TYPE_HOST);
  CUgraph g = nullptr;
  ASSERT_OK(cuStreamEndCapture(stream, &g));
  EXPECT_EQ(g, during);
  ASSERT_OK(cuStreamIsCapturing(stream, &status));
  EXPECT_EQ(status, CU_STREAM_CAPTURE_STATUS_NONE);
  EXPECT_EQ(count.calls.load(), 0) << "nothing captured ran";
  EXPECT_TRUE(hostIs(0));
  const std::vector<CUgraphNodeType> types = typesOf(g);
  ASSERT_EQ(types.size(), 4u);
  EXPECT_EQ(countOf(types, CU_GRAPH_NODE_TYPE_MEMSET), 1u);
  EXPECT_EQ(countOf(types, CU_GRAPH_NODE_TYPE_KERNEL), 1u);
  EXPECT_EQ(countOf(types, CU_GRAPH_NODE_TYPE_MEMCPY), 1u);
  EXPECT_EQ(countOf(types, CU_GRAPH_NODE_TYPE_HOST), 1u);
  size_t edges = 0;
  ASSERT_OK(cuGraphGetEdges(g, nullptr, nullptr, nullptr, &edges));
  EXPECT_EQ(edges, 3u);  // a chain
  CUgraphExec exec = nullptr;
  ASSERT_OK(cuGraphInstantiate(&exec, g, 0));
  for (int i = 0; i < 3; ++i) ASSERT_OK(cuGraphLaunch(exec, stream));
  ASSERT_OK(cuStreamSynchronize(stream));
  EXPECT_EQ(count.calls.load(), 3);
  EXPECT_EQ(count.firstWord, 5u);
  EXPECT_TRUE(hostIs(5));
  EXPECT_OK(cuGraphExecDestroy(exec));
  EXPECT_OK(cuGraphDestroy(g));
}

TEST_F(GraphTest, CaptureForksAndJoinsThroughEvents) {
  CUstream side = nullptr;
  ASSERT_OK(cuStreamCreate(&side, CU_STREAM_NON_BLOCKING));
  CUevent fork = nullptr, join = nullptr;
  ASSERT_OK(cuEventCreate(&fork, CU_EVENT_DISABLE_TIMING));
  ASSERT_OK(cuEventCreate(&join, CU_EVENT_DISABLE_TIMING));
  CUdeviceptr other = 0, third = 0;
  ASSERT_OK(cuMemAlloc(&other, kBytes));
  ASSERT_OK(cuMemAlloc(&third, kBytes));
  ASSERT_OK(cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL));
  ASSERT_OK(cuMemsetD32Async(dev, 1, kWords, stream));
  ASSERT_OK(cuEventRecord(fork, stream));
  ASSERT_OK(cuStreamWaitEvent(side, fork, 0));
  CUstreamCaptureStatus status{};
  ASSERT_OK(cuStreamIsCapturing(side, &status));
  EXPECT_EQ(status, CU_STREAM_CAPTURE_STATUS_ACTIVE) << "the side stream joined the capture";
  cuuint64_t idMain = 0, idSide = 0;
  ASSERT_OK(cuStreamGetCaptureInfo(stream, &status, &idMain, nullptr, nullptr, nullptr, nullptr));
  ASSERT_OK(cuStreamGetCaptureInfo(side, &status, &idSide, nullptr, nullptr, nullptr, nullptr));
  EXPECT_EQ(idMain, idSide);
  ASSERT_OK(cuMemcpyDtoDAsync(other, dev, kBytes, side));
  ASSERT_OK(cuMemsetD32Async(third, 8, kWords, stream));
  ASSERT_OK(cuEventRecord(join, side));
  ASSERT_OK(cuStreamWaitEvent(stream, join, 0));
  ASSERT_OK(cuMemcpyDtoHAsync(host, other, kBytes, stream));
  CUgraph g = nullptr;
  ASSERT_OK(cuStreamEndCapture(stream, &g));
  ASSERT_OK(cuStreamIsCapturing(side, &status));
  EXPECT_EQ(status, CU_STREAM_CAPTURE_STATUS_NONE);
  // memset(1) -> {copy to other on the side, memset(8) of third} -> copy of other to the host.
  const std::vector<CUgraphNodeType> types = typesOf(g);
  EXPECT_EQ(types.size(), 4u);
  size_t roots = 0, edges = 0;
  ASSERT_OK(cuGraphGetRootNodes(g, nullptr, &roots));
  ASSERT_OK(cuGraphGetEdges(g, nullptr, nullptr, nullptr, &edges));
  EXPECT_EQ(roots, 1u);
  EXPECT_EQ(edges, 4u);
  CUgraphExec exec = nullptr;
  ASSERT_OK(cuGraphInstantiate(&exec, g, 0));
  std::memset(host, 0, kBytes);
  ASSERT_OK(cuGraphLaunch(exec, stream));
  ASSERT_OK(cuStreamSynchronize(stream));
  EXPECT_TRUE(hostIs(1));
  EXPECT_OK(cuGraphExecDestroy(exec));
  EXPECT_OK(cuGraphDestroy(g));
  cuMemFree(other);
  cuMemFree(third);
  cuEventDestroy(fork);
  cuEventDestroy(join);
  cuStreamDestroy(side);
}

// An event recorded in a capture cannot be queried, and the query invalidates the capture: a stream
// outside it can no longer fork from it, and the capture ends invalidated (the real driver,
// 580.159.04 on an H200; docs/real-driver/capture-probe-h200-2026-11-28.txt).
TEST_F(GraphTest, QueryOfACapturedEventInvalidatesTheCapture) {
  CUstream side = nullptr;
  ASSERT_OK(cuStreamCreate(&side, CU_STREAM_NON_BLOCKING));
  CUevent fork = nullptr;
  ASSERT_OK(cuEventCreate(&fork, CU_EVENT_DISABLE_TIMING));
  ASSERT_OK(cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL));
  ASSERT_OK(cuMemsetD32Async(dev, 1, kWords, stream));
  ASSERT_OK(cuEventRecord(fork, stream));
  EXPECT_CU(CUDA_ERROR_CAPTURED_EVENT, cuEventQuery(fork));
  CUstreamCaptureStatus status{};
  ASSERT_OK(cuStreamIsCapturing(stream, &status));
  EXPECT_EQ(status, CU_STREAM_CAPTURE_STATUS_INVALIDATED);
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuStreamWaitEvent(side, fork, 0));
  ASSERT_OK(cuStreamIsCapturing(side, &status));
  EXPECT_EQ(status, CU_STREAM_CAPTURE_STATUS_NONE) << "the side stream did not join";
  CUgraph g = nullptr;
  EXPECT_CU(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, cuStreamEndCapture(stream, &g));
  EXPECT_EQ(g, nullptr);
  ASSERT_OK(cuStreamIsCapturing(stream, &status));
  EXPECT_EQ(status, CU_STREAM_CAPTURE_STATUS_NONE);
  cuEventDestroy(fork);
  cuStreamDestroy(side);
}

TEST_F(GraphTest, CaptureEndsUnjoinedWhenAForkIsNotJoined) {
  CUstream side = nullptr;
  ASSERT_OK(cuStreamCreate(&side, CU_STREAM_NON_BLOCKING));
  CUevent fork = nullptr;
  ASSERT_OK(cuEventCreate(&fork, CU_EVENT_DISABLE_TIMING));
  ASSERT_OK(cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL));
  ASSERT_OK(cuEventRecord(fork, stream));
  ASSERT_OK(cuStreamWaitEvent(side, fork, 0));
  ASSERT_OK(cuMemsetD32Async(dev, 1, kWords, side));
  CUgraph g = reinterpret_cast<CUgraph>(1);
  EXPECT_CU(CUDA_ERROR_STREAM_CAPTURE_UNJOINED, cuStreamEndCapture(stream, &g));
  EXPECT_EQ(g, nullptr);
  CUstreamCaptureStatus status{};
  ASSERT_OK(cuStreamIsCapturing(side, &status));
  EXPECT_EQ(status, CU_STREAM_CAPTURE_STATUS_NONE);
  cuEventDestroy(fork);
  cuStreamDestroy(side);
}

TEST_F(GraphTest, CaptureRefusesWhatItCannotRecordAndIsInvalidated) {
  // The legacy stream cannot capture; a stream not capturing has no capture to end.
  EXPECT_CU(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, cuStreamBeginCapture(nullptr, CU_STREAM_CAPTURE_MODE_GLOBAL));
  CUgraph g = nullptr;
  EXPECT_CU(CUDA_ERROR_ILLEGAL_STATE, cuStreamEndCapture(stream, &g));
  ASSERT_OK(cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL));
  EXPECT_CU(CUDA_ERROR_ILLEGAL_STATE, cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL));
  ASSERT_OK(cuMemsetD32Async(dev, 1, kWords, stream));
  // Synchronizing a capturing stream is forbidden and invalidates the capture.
  EXPECT_CU(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, cuStreamSynchronize(stream));
  CUstreamCaptureStatus status{};
  ASSERT_OK(cuStreamIsCapturing(stream, &status));
  EXPECT_EQ(status, CU_STREAM_CAPTURE_STATUS_INVALIDATED);
  EXPECT_CU(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, cuMemsetD32Async(dev, 1, kWords, stream));
  g = reinterpret_cast<CUgraph>(1);
  EXPECT_CU(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, cuStreamEndCapture(stream, &g));
  EXPECT_EQ(g, nullptr);
  ASSERT_OK(cuStreamIsCapturing(stream, &status));
  EXPECT_EQ(status, CU_STREAM_CAPTURE_STATUS_NONE);
  // The stream works again.
  ASSERT_OK(cuMemsetD32Async(dev, 6, kWords, stream));
  ASSERT_OK(cuMemcpyDtoHAsync(host, dev, kBytes, stream));
  ASSERT_OK(cuStreamSynchronize(stream));
  EXPECT_TRUE(hostIs(6));
}

TEST_F(GraphTest, ModesDecideWhetherUnsafeCallsAreAllowed) {
  ASSERT_OK(cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL));
  // This thread's mode is global: cuMemAlloc is forbidden and ends the capture's validity.
  CUdeviceptr p = 0;
  EXPECT_CU(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, cuMemAlloc(&p, 4096));
  CUgraph g = nullptr;
  EXPECT_CU(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, cuStreamEndCapture(stream, &g));
  // In relaxed mode the same call is allowed and the capture goes on.
  ASSERT_OK(cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL));
  CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
  ASSERT_OK(cuThreadExchangeStreamCaptureMode(&mode));
  EXPECT_EQ(mode, CU_STREAM_CAPTURE_MODE_GLOBAL);
  ASSERT_OK(cuMemAlloc(&p, 4096));
  ASSERT_OK(cuThreadExchangeStreamCaptureMode(&mode));
  ASSERT_OK(cuMemsetD32Async(dev, 1, kWords, stream));
  ASSERT_OK(cuStreamEndCapture(stream, &g));
  EXPECT_EQ(nodesOf(g).size(), 1u);
  EXPECT_OK(cuGraphDestroy(g));
  cuMemFree(p);
}

TEST_F(GraphTest, EndCaptureFromAnotherThreadNeedsRelaxedMode) {
  ASSERT_OK(cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
  CUgraph g = nullptr;
  CUresult other = CUDA_SUCCESS;
  std::thread([&] {
    cuCtxSetCurrent(ctx);
    other = cuStreamEndCapture(stream, &g);
  }).join();
  EXPECT_CU(CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD, other);
  EXPECT_EQ(g, nullptr);
  // The refused end still ended the capture (its graph discarded): the stream no longer
  // captures, and ending it again is ILLEGAL_STATE (the real driver, 580.159.04).
  CUstreamCaptureStatus status{};
  ASSERT_OK(cuStreamIsCapturing(stream, &status));
  EXPECT_EQ(status, CU_STREAM_CAPTURE_STATUS_NONE);
  EXPECT_CU(CUDA_ERROR_ILLEGAL_STATE, cuStreamEndCapture(stream, &g));
  ASSERT_OK(cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_RELAXED));
  std::thread([&] {
    cuCtxSetCurrent(ctx);
    other = cuStreamEndCapture(stream, &g);
  }).join();
  EXPECT_CU(CUDA_SUCCESS, other);
  EXPECT_OK(cuGraphDestroy(g));
}

TEST_F(GraphTest, UpdateCaptureDependenciesSetsWhatTheNextNodeFollows) {
  ASSERT_OK(cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL));
  ASSERT_OK(cuMemsetD32Async(dev, 1, kWords, stream));
  CUstreamCaptureStatus status{};
  const CUgraphNode* deps = nullptr;
  size_t n = 0;
  CUgraph g = nullptr;
  ASSERT_OK(cuStreamGetCaptureInfo(stream, &status, nullptr, &g, &deps, nullptr, &n));
  ASSERT_EQ(n, 1u);
  const CUgraphNode first = deps[0];
  // No dependencies: the next node is a second root.
  ASSERT_OK(cuStreamUpdateCaptureDependencies(stream, nullptr, nullptr, 0, CU_STREAM_SET_CAPTURE_DEPENDENCIES));
  ASSERT_OK(cuMemsetD32Async(dev, 2, kWords, stream));
  CUgraphNode add = first;
  ASSERT_OK(cuStreamUpdateCaptureDependencies(stream, &add, nullptr, 1, CU_STREAM_ADD_CAPTURE_DEPENDENCIES));
  ASSERT_OK(cuStreamGetCaptureInfo(stream, &status, nullptr, nullptr, &deps, nullptr, &n));
  EXPECT_EQ(n, 2u);
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE,
            cuStreamUpdateCaptureDependencies(stream, nullptr, nullptr, 0, 7));
  ASSERT_OK(cuStreamEndCapture(stream, &g));
  size_t roots = 0;
  ASSERT_OK(cuGraphGetRootNodes(g, nullptr, &roots));
  EXPECT_EQ(roots, 2u);
  EXPECT_OK(cuGraphDestroy(g));
}

TEST_F(GraphTest, CapturedStreamWriteKeepsItsValue) {
  ASSERT_OK(cuMemsetD32(dev, 0, kWords));
  ASSERT_OK(cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL));
  // The value is the call's argument: the graph must keep it after the call returned.
  ASSERT_OK(cuStreamWriteValue32(stream, dev + 8, 0x1234abcd, 0));
  CUgraph g = nullptr;
  ASSERT_OK(cuStreamEndCapture(stream, &g));
  const std::vector<CUgraphNodeType> types = typesOf(g);
  ASSERT_EQ(types.size(), 1u);
  EXPECT_EQ(types[0], CU_GRAPH_NODE_TYPE_BATCH_MEM_OP);
  CUgraphExec exec = nullptr;
  ASSERT_OK(cuGraphInstantiate(&exec, g, 0));
  std::vector<uint32_t> noise(64, 0xdeadbeef);  // reuse the stack the call's value was on
  ASSERT_OK(cuGraphLaunch(exec, stream));
  ASSERT_OK(cuStreamSynchronize(stream));
  ASSERT_OK(cuMemcpyDtoH(host, dev, 16));
  EXPECT_EQ(words()[2], 0x1234abcdu);
  EXPECT_EQ(words()[1], 0u);
  EXPECT_EQ(noise[0], 0xdeadbeefu);
  EXPECT_OK(cuGraphExecDestroy(exec));
  EXPECT_OK(cuGraphDestroy(g));
}

TEST_F(GraphTest, InstantiateRefusesUnknownFlagsAndBadHandles) {
  CUgraph g = nullptr;
  ASSERT_OK(cuGraphCreate(&g, 0));
  CUgraphExec exec = nullptr;
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuGraphInstantiate(&exec, g, 0x100));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuGraphInstantiate(nullptr, g, 0));
  CUDA_GRAPH_INSTANTIATE_PARAMS params{};
  params.flags = CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD;
  params.hUploadStream = stream;
  ASSERT_OK(cuGraphInstantiateWithParams(&exec, g, &params));
  EXPECT_EQ(params.result_out, CUDA_GRAPH_INSTANTIATE_SUCCESS);
  cuuint64_t flags = 0;
  ASSERT_OK(cuGraphExecGetFlags(exec, &flags));
  // The upload happened at instantiation; it is no flag of the graph (as the real driver says).
  EXPECT_EQ(flags, cuuint64_t{0});
  ASSERT_OK(cuGraphUpload(exec, stream));
  ASSERT_OK(cuGraphLaunch(exec, stream));  // an empty graph runs nothing
  ASSERT_OK(cuStreamSynchronize(stream));
  EXPECT_OK(cuGraphExecDestroy(exec));
  EXPECT_OK(cuGraphDestroy(g));
}

}  // namespace
}  // namespace conformance
