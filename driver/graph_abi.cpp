// The older ABI variants of the graph and capture calls: the symbols cuda.h's macros map its
// names away from (cuGraphAddKernelNode -> cuGraphAddKernelNode_v2), which programs built with
// older headers, and cuGetProcAddress callers asking for older versions, still reach. Each is the
// newer variant's body with its own parameters; abi_names.h lifts the mappings.
#include "driver/driver.h"
#include "driver/graph.h"
#include "driver/stream.h"
#include "driver/abi_names.h"

using namespace mcsim::driver;

namespace {

// The CUDA 10.0 cuStreamBeginCapture had no mode. What it did is what CUDA 10.1 named the global
// mode, which is what the runtime's cudaStreamBeginCapture of that time asked for.
constexpr CUstreamCaptureMode kLegacyCaptureMode = CU_STREAM_CAPTURE_MODE_GLOBAL;

CUresult instantiateLegacy(CUgraphExec* phGraphExec, CUgraph hGraph, CUgraphNode* phErrorNode, char* logBuffer,
                           size_t bufferSize) {
  if (logBuffer != nullptr && bufferSize > 0) logBuffer[0] = '\0';
  return instantiateEntry(phGraphExec, hGraph, 0, nullptr, phErrorNode, nullptr, false);
}

CUresult execUpdateLegacy(CUgraphExec hGraphExec, CUgraph hGraph, CUgraphNode* hErrorNode_out,
                          CUgraphExecUpdateResult* updateResult_out) {
  if (hErrorNode_out == nullptr || updateResult_out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUgraphExecUpdateResultInfo info{};
  const CUresult r = execUpdateEntry(hGraphExec, hGraph, &info);
  *hErrorNode_out = info.errorNode;
  *updateResult_out = info.result;
  return r;
}

}  // namespace

extern "C" {

CUresult CUDAAPI cuStreamBeginCapture(CUstream hStream) {
  MCSIM_REQUIRE_INIT();
  return beginCaptureEntry(hStream, nullptr, nullptr, nullptr, 0, kLegacyCaptureMode, false);
}
CUresult CUDAAPI cuStreamBeginCapture_ptsz(CUstream hStream) {
  MCSIM_REQUIRE_INIT();
  return beginCaptureEntry(hStream, nullptr, nullptr, nullptr, 0, kLegacyCaptureMode, true);
}

CUresult CUDAAPI cuStreamGetCaptureInfo(CUstream hStream, CUstreamCaptureStatus* captureStatus_out,
                                        cuuint64_t* id_out) {
  MCSIM_REQUIRE_INIT();
  return captureInfoEntry(hStream, captureStatus_out, id_out, nullptr, nullptr, nullptr, nullptr, false);
}
CUresult CUDAAPI cuStreamGetCaptureInfo_ptsz(CUstream hStream, CUstreamCaptureStatus* captureStatus_out,
                                             cuuint64_t* id_out) {
  MCSIM_REQUIRE_INIT();
  return captureInfoEntry(hStream, captureStatus_out, id_out, nullptr, nullptr, nullptr, nullptr, true);
}
CUresult CUDAAPI cuStreamGetCaptureInfo_v2(CUstream hStream, CUstreamCaptureStatus* captureStatus_out,
                                           cuuint64_t* id_out, CUgraph* graph_out,
                                           const CUgraphNode** dependencies_out, size_t* numDependencies_out) {
  MCSIM_REQUIRE_INIT();
  return captureInfoEntry(hStream, captureStatus_out, id_out, graph_out, dependencies_out, nullptr,
                          numDependencies_out, false);
}
CUresult CUDAAPI cuStreamGetCaptureInfo_v2_ptsz(CUstream hStream, CUstreamCaptureStatus* captureStatus_out,
                                                cuuint64_t* id_out, CUgraph* graph_out,
                                                const CUgraphNode** dependencies_out, size_t* numDependencies_out) {
  MCSIM_REQUIRE_INIT();
  return captureInfoEntry(hStream, captureStatus_out, id_out, graph_out, dependencies_out, nullptr,
                          numDependencies_out, true);
}

CUresult CUDAAPI cuStreamUpdateCaptureDependencies(CUstream hStream, CUgraphNode* dependencies,
                                                   size_t numDependencies, unsigned int flags) {
  MCSIM_REQUIRE_INIT();
  return updateCaptureDependenciesEntry(hStream, dependencies, nullptr, numDependencies, flags, false);
}
CUresult CUDAAPI cuStreamUpdateCaptureDependencies_ptsz(CUstream hStream, CUgraphNode* dependencies,
                                                        size_t numDependencies, unsigned int flags) {
  MCSIM_REQUIRE_INIT();
  return updateCaptureDependenciesEntry(hStream, dependencies, nullptr, numDependencies, flags, true);
}

CUresult CUDAAPI cuGraphInstantiate(CUgraphExec* phGraphExec, CUgraph hGraph, CUgraphNode* phErrorNode,
                                    char* logBuffer, size_t bufferSize) {
  MCSIM_REQUIRE_INIT();
  return instantiateLegacy(phGraphExec, hGraph, phErrorNode, logBuffer, bufferSize);
}
CUresult CUDAAPI cuGraphInstantiate_v2(CUgraphExec* phGraphExec, CUgraph hGraph, CUgraphNode* phErrorNode,
                                       char* logBuffer, size_t bufferSize) {
  MCSIM_REQUIRE_INIT();
  return instantiateLegacy(phGraphExec, hGraph, phErrorNode, logBuffer, bufferSize);
}

CUresult CUDAAPI cuGraphExecUpdate(CUgraphExec hGraphExec, CUgraph hGraph, CUgraphNode* hErrorNode_out,
                                   CUgraphExecUpdateResult* updateResult_out) {
  MCSIM_REQUIRE_INIT();
  return execUpdateLegacy(hGraphExec, hGraph, hErrorNode_out, updateResult_out);
}

CUresult CUDAAPI cuGraphAddKernelNode(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                                      size_t numDependencies, const CUDA_KERNEL_NODE_PARAMS_v1* nodeParams) {
  MCSIM_REQUIRE_INIT();
  return addKernelNodeV1Entry(phGraphNode, hGraph, dependencies, numDependencies, nodeParams);
}
CUresult CUDAAPI cuGraphKernelNodeGetParams(CUgraphNode hNode, CUDA_KERNEL_NODE_PARAMS_v1* nodeParams) {
  MCSIM_REQUIRE_INIT();
  return kernelNodeGetParamsV1Entry(hNode, nodeParams);
}
CUresult CUDAAPI cuGraphKernelNodeSetParams(CUgraphNode hNode, const CUDA_KERNEL_NODE_PARAMS_v1* nodeParams) {
  MCSIM_REQUIRE_INIT();
  return kernelNodeSetParamsV1Entry(hNode, nodeParams);
}
CUresult CUDAAPI cuGraphExecKernelNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                                                const CUDA_KERNEL_NODE_PARAMS_v1* nodeParams) {
  MCSIM_REQUIRE_INIT();
  if (nodeParams == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUDA_KERNEL_NODE_PARAMS q{};
  q.func = nodeParams->func;
  q.gridDimX = nodeParams->gridDimX;
  q.gridDimY = nodeParams->gridDimY;
  q.gridDimZ = nodeParams->gridDimZ;
  q.blockDimX = nodeParams->blockDimX;
  q.blockDimY = nodeParams->blockDimY;
  q.blockDimZ = nodeParams->blockDimZ;
  q.sharedMemBytes = nodeParams->sharedMemBytes;
  q.kernelParams = nodeParams->kernelParams;
  q.extra = nodeParams->extra;
  return execKernelNodeSetParamsEntry(hGraphExec, hNode, &q);
}

CUresult CUDAAPI cuGraphGetEdges(CUgraph hGraph, CUgraphNode* from, CUgraphNode* to, size_t* numEdges) {
  MCSIM_REQUIRE_INIT();
  return graphEdgesEntry(hGraph, from, to, nullptr, numEdges);
}
CUresult CUDAAPI cuGraphNodeGetDependencies(CUgraphNode hNode, CUgraphNode* dependencies, size_t* numDependencies) {
  MCSIM_REQUIRE_INIT();
  return nodeNeighboursEntry(hNode, dependencies, nullptr, numDependencies, true);
}
CUresult CUDAAPI cuGraphNodeGetDependentNodes(CUgraphNode hNode, CUgraphNode* dependentNodes,
                                              size_t* numDependentNodes) {
  MCSIM_REQUIRE_INIT();
  return nodeNeighboursEntry(hNode, dependentNodes, nullptr, numDependentNodes, false);
}
CUresult CUDAAPI cuGraphAddDependencies(CUgraph hGraph, const CUgraphNode* from, const CUgraphNode* to,
                                        size_t numDependencies) {
  MCSIM_REQUIRE_INIT();
  return changeDependenciesEntry(hGraph, from, to, nullptr, numDependencies, true);
}
CUresult CUDAAPI cuGraphRemoveDependencies(CUgraph hGraph, const CUgraphNode* from, const CUgraphNode* to,
                                           size_t numDependencies) {
  MCSIM_REQUIRE_INIT();
  return changeDependenciesEntry(hGraph, from, to, nullptr, numDependencies, false);
}

}  // extern "C"
