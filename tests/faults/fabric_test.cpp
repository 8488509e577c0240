// Fabric faults that bite (docs/faults.md, "Fabric faults"): links and NVSwitch chips taken down by
// a plan change what crosses them. Some links of a GPU down: its traffic takes the links left, at
// their share of the bandwidth (peer copies and NVLS all-reduces slow down by the links' ratio, in
// simulated time, which the model makes exact). Every link of a GPU down: the GPU is cut off, and
// copies to it, its peers' kernels' accesses to its memory and multicast teams that include it
// fail with an uncorrectable NVLink error, while teams of the other GPUs go on. A switch chip
// down: its plane's share of every GPU's bandwidth goes.
#include <cuda.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "fabric/fault_plan.h"
#include "fabric/json_source.h"
#include "fabric/preset.h"
#include "mcsim/kernels.h"
#include "tests/faults/fault_test.h"

namespace {

using namespace faulttest;
using mcsim::fabric::checkFaultPlanFor;
using mcsim::fabric::faultRuleLinks;
using mcsim::fabric::FaultPointKind;
using mcsim::fabric::InputError;
using mcsim::fabric::parseFaultPlan;

constexpr size_t kMiB = size_t{1} << 20;

uint64_t now() { return mcsim::api::simulatedTimePs(); }

// These tests time the fabric's shares of bandwidth, one thread driving eight GPUs: the host's
// cost of eight launches in a row (docs/model.md, "What the host costs") would sit inside every
// time they compare, so the host's clock is off in this test program (before cuInit reads the
// settings).
const bool kHostClockOff = setenv("MCSIM_HOST_COST_PERCENT", "0", 0) == 0;

// --- The plan format ----------------------------------------------------------------------------

TEST(FabricPlan, LinkAndSwitchRulesParse) {
  const auto rules = parseFaultPlan(
      "link gpu=3 links=0,1,2 : nth=1 -> down\n"
      "link gpu=3 : nth=2 -> up\n"
      "switch id=2 : nth=1 -> down\n"
      "switch : nth=5 -> up\n",
      "f.plan");
  ASSERT_EQ(4u, rules.size());
  EXPECT_EQ(FaultPointKind::kLink, rules[0].point);
  EXPECT_EQ(3, rules[0].gpu);
  EXPECT_EQ((std::vector<int>{0, 1, 2}), faultRuleLinks(rules[0]));
  EXPECT_TRUE(faultRuleLinks(rules[1]).empty());
  EXPECT_EQ(FaultPointKind::kSwitch, rules[2].point);
  EXPECT_EQ(2, rules[2].gpu);
  EXPECT_EQ(-1, rules[3].gpu);
  checkFaultPlanFor(rules, mcsim::fabric::loadPreset("hgx-h100"));
}

TEST(FabricPlan, BadLinkAndSwitchRulesAreRefusedWithTheirLine) {
  struct Case {
    const char* plan;
    const char* problem;
  };
  const Case parse[] = {
      {"# c\nlink links=0 : nth=1 -> down", "f.plan:2: links= names links of one GPU: add gpu=N"},
      {"link gpu=1 links=a : nth=1 -> down", "f.plan:1: links= takes a list of NVLink numbers"},
      {"link gpu=1 id=0 : nth=1 -> down", "f.plan:1: id= applies to switch rules only"},
      {"switch links=0 : nth=1 -> down", "f.plan:1: links= applies to link rules only"},
      {"switch gpu=1 : nth=1 -> down", "f.plan:1: gpu= applies to link rules only"},
      {"switch id=x : nth=1 -> down", "f.plan:1: id= takes an NVSwitch number"},
      {"cuMemMap id=1 : nth=1 -> return CUDA_ERROR_UNKNOWN", "f.plan:1: id= applies to switch rules only"},
  };
  for (const Case& c : parse) {
    try {
      parseFaultPlan(c.plan, "f.plan");
      ADD_FAILURE() << "accepted: " << c.plan;
    } catch (const InputError& e) {
      EXPECT_NE(std::string::npos, std::string(e.what()).find(c.problem)) << e.what();
    }
  }
  const mcsim::fabric::Preset h100 = mcsim::fabric::loadPreset("hgx-h100");
  const Case check[] = {
      {"link gpu=1 links=18 : nth=1 -> down", "f.plan:1: links= names NVLink 18, but a GPU of the node has 18 (0 to 17)"},
      {"\nswitch id=4 : nth=1 -> down", "f.plan:2: id=4 names no NVSwitch: the node has 4 (0 to 3)"},
  };
  for (const Case& c : check) {
    try {
      checkFaultPlanFor(parseFaultPlan(c.plan, "f.plan"), h100);
      ADD_FAILURE() << "accepted: " << c.plan;
    } catch (const InputError& e) {
      EXPECT_NE(std::string::npos, std::string(e.what()).find(c.problem)) << e.what();
    }
  }
}

// --- On the node --------------------------------------------------------------------------------

// hgx-h100: 8 GPUs, 18 NVLinks each, 5/4/4/5 to the 4 switches (links 0-4 to switch 0).
class Fabric : public McTest {
 protected:
  void install(const std::string& plan) { ASSERT_EQ("", mcsim::api::installFaultPlan(plan)); }

  void setUpGpus() {
    ctxs.resize(8);
    streams.resize(8);
    modules.resize(8);
    for (int d = 0; d < 8; ++d) {
      ASSERT_OK(cuDevicePrimaryCtxRetain(&ctxs[d], d));
      ASSERT_OK(cuCtxSetCurrent(ctxs[d]));
      ASSERT_OK(cuStreamCreate(&streams[d], CU_STREAM_NON_BLOCKING));
      ASSERT_OK(cuModuleLoadData(&modules[d], mcsim_kernel_image));
    }
    ASSERT_OK(cuCtxSetCurrent(ctxs[0]));
  }

  // Simulated picoseconds a peer copy of `bytes` from GPU a to GPU b takes, over NVLink: GPU b's
  // context, whose stream runs it, has peer access to GPU a (without, the driver stages the copy
  // through host memory: docs/model.md).
  uint64_t peerCopyPs(int a, int b, size_t bytes) {
    CUdeviceptr src = 0, dst = 0;
    EXPECT_OK(cuCtxSetCurrent(ctxs[a]));
    EXPECT_OK(cuMemAlloc(&src, bytes));
    EXPECT_OK(cuCtxSetCurrent(ctxs[b]));
    EXPECT_OK(cuMemAlloc(&dst, bytes));
    const CUresult access = cuCtxEnablePeerAccess(ctxs[a], 0);
    EXPECT_TRUE(access == CUDA_SUCCESS || access == CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED) << access;
    const uint64_t t0 = now();
    EXPECT_OK(cuMemcpyPeer(dst, ctxs[b], src, ctxs[a], bytes));
    const uint64_t t = now() - t0;
    EXPECT_OK(cuMemFree(dst));
    EXPECT_OK(cuCtxSetCurrent(ctxs[a]));
    EXPECT_OK(cuMemFree(src));
    return t;
  }
  // The streaming part of a peer copy: 128 MiB more bytes, without the fixed costs.
  uint64_t peerStreamPs(int a, int b) { return peerCopyPs(a, b, 192 * kMiB) - peerCopyPs(a, b, 64 * kMiB); }

  // A multicast team of `devices` over `bytes` each, with a signal-word team beside it: every
  // member's memory mapped locally and the object mapped for it.
  struct Team {
    std::vector<int> devices;
    size_t bytes = 0;
    CUmemGenericAllocationHandle mc = 0, sigMc = 0;
    std::vector<CUdeviceptr> local, view, sigLocal, sigView;
  };
  void makeObject(const std::vector<int>& devices, size_t bytes, CUmemGenericAllocationHandle* mc,
                  std::vector<CUdeviceptr>* locals, std::vector<CUdeviceptr>* views) {
    const CUmulticastObjectProp p = mcProp(static_cast<unsigned>(devices.size()), bytes);
    ASSERT_OK(cuMulticastCreate(mc, &p));
    for (int d : devices) ASSERT_OK(cuMulticastAddDevice(*mc, d));
    for (int d : devices) {
      ASSERT_OK(cuCtxSetCurrent(ctxs[d]));
      const CUmemAllocationProp prop = devicePinned(d);
      CUmemGenericAllocationHandle mem = 0;
      ASSERT_OK(cuMemCreate(&mem, bytes, &prop, 0));
      ASSERT_OK(cuMulticastBindMem(*mc, 0, mem, 0, bytes, 0));
      const CUmemAccessDesc rw = readWrite(d);
      CUdeviceptr l = 0, v = 0;
      ASSERT_OK(cuMemAddressReserve(&l, bytes, 0, 0, 0));
      ASSERT_OK(cuMemMap(l, bytes, 0, mem, 0));
      ASSERT_OK(cuMemSetAccess(l, bytes, &rw, 1));
      ASSERT_OK(cuMemRelease(mem));
      ASSERT_OK(cuMemAddressReserve(&v, bytes, 0, 0, 0));
      ASSERT_OK(cuMemMap(v, bytes, 0, *mc, 0));
      ASSERT_OK(cuMemSetAccess(v, bytes, &rw, 1));
      locals->push_back(l);
      views->push_back(v);
    }
  }
  void makeTeam(const std::vector<int>& devices, size_t bytes, Team* t) {
    t->devices = devices;
    t->bytes = bytes;
    makeObject(devices, bytes, &t->mc, &t->local, &t->view);
    makeObject(devices, 2 * kMiB, &t->sigMc, &t->sigLocal, &t->sigView);
    for (size_t i = 0; i < devices.size(); ++i) {
      ASSERT_OK(cuCtxSetCurrent(ctxs[devices[i]]));
      ASSERT_OK(cuMemsetD32(t->sigLocal[i], 0, 1));
    }
    teams.push_back(*t);
  }
  // Every member's buffer: (i % 13) * (rank + 1) for element i.
  void fill(const Team& t, uint64_t count) {
    for (size_t r = 0; r < t.devices.size(); ++r) {
      std::vector<float> v(count);
      for (uint64_t i = 0; i < count; ++i) v[i] = static_cast<float>((i % 13) * (r + 1));
      ASSERT_OK(cuCtxSetCurrent(ctxs[t.devices[r]]));
      ASSERT_OK(cuMemcpyHtoD(t.local[r], v.data(), count * 4));
    }
  }
  // The library's NVLS all-reduce of `count` f32 over team t (barrier epochs `epoch`, +1):
  // every member's result, and the simulated time it took; `results` gets each member's
  // synchronisation result.
  uint64_t nvls(const Team& t, uint64_t count, uint32_t epoch, std::vector<CUresult>* results, unsigned blocks = 132) {
    const uint64_t t0 = now();
    uint32_t world = static_cast<uint32_t>(t.devices.size()), dtype = MCSIM_DTYPE_F32;
    uint64_t c = count;
    for (size_t r = 0; r < t.devices.size(); ++r) {
      const int d = t.devices[r];
      CUdeviceptr mc = t.view[r], sigMc = t.sigView[r], sig = t.sigLocal[r];
      uint32_t rank = static_cast<uint32_t>(r);
      void* args[] = {&mc, &c, &dtype, &sigMc, &sig, &rank, &world, &epoch};
      EXPECT_OK(cuCtxSetCurrent(ctxs[d]));
      CUfunction f = nullptr;
      EXPECT_OK(cuModuleGetFunction(&f, modules[d], MCSIM_KERNEL_ALLREDUCE_NVLS));
      EXPECT_OK(cuLaunchKernel(f, blocks, 1, 1, 512, 1, 1, 0, streams[d], args, nullptr));
    }
    results->clear();
    for (int d : t.devices) {
      EXPECT_OK(cuCtxSetCurrent(ctxs[d]));
      results->push_back(cuStreamSynchronize(streams[d]));
    }
    return now() - t0;
  }
  bool exact(const Team& t, uint64_t count) {
    const size_t n = t.devices.size();
    float sums[13];
    for (uint64_t v = 0; v < 13; ++v) {
      float s = 0;
      for (size_t k = 0; k < n; ++k) s += static_cast<float>(v * (k + 1));
      sums[v] = s;
    }
    for (size_t r = 0; r < n; ++r) {
      std::vector<float> got(count);
      EXPECT_OK(cuCtxSetCurrent(ctxs[t.devices[r]]));
      EXPECT_OK(cuMemcpyDtoH(got.data(), t.local[r], count * 4));
      for (uint64_t i = 0; i < count; ++i) {
        if (got[i] != sums[i % 13]) return false;
      }
    }
    return true;
  }

  // What a test made goes, so that the run ends with nothing held (a context that took a sticky
  // error refuses the calls: it is reset first).
  void TearDown() override {
    for (const Team& team : teams) {
      const Team* t = &team;
      for (size_t i = 0; i < t->devices.size(); ++i) {
        cuCtxSetCurrent(ctxs[t->devices[i]]);
        for (CUdeviceptr va : {t->local[i], t->view[i]}) {
          cuMemUnmap(va, t->bytes);
          cuMemAddressFree(va, t->bytes);
        }
        for (CUdeviceptr va : {t->sigLocal[i], t->sigView[i]}) {
          cuMemUnmap(va, 2 * kMiB);
          cuMemAddressFree(va, 2 * kMiB);
        }
      }
      cuMemRelease(t->mc);
      cuMemRelease(t->sigMc);
    }
    for (size_t d = 0; d < streams.size(); ++d) {
      cuCtxSetCurrent(ctxs[d]);
      if (streams[d] != nullptr) cuStreamDestroy(streams[d]);
      if (modules[d] != nullptr) cuModuleUnload(modules[d]);
    }
    for (size_t d = 0; d < ctxs.size(); ++d) {
      for (int k = 0; k < retains[d]; ++k) cuDevicePrimaryCtxRelease(static_cast<int>(d));
    }
    McTest::TearDown();
  }

  std::vector<CUcontext> ctxs;
  std::vector<CUstream> streams;
  std::vector<CUmodule> modules;
  std::vector<Team> teams;  // made by makeTeam, released by TearDown
  std::vector<int> retains = std::vector<int>(8, 1);  // of each primary context, by this fixture
};

TEST_F(Fabric, SomeLinksDownLowerAPeerCopysBandwidthByTheirShare) {
  INIT();
  setUpGpus();
  const uint64_t healthy = peerStreamPs(3, 4);
  const uint64_t other = peerStreamPs(0, 1);
  // One of GPU 3's 18 links: 17 left.
  install("link gpu=3 links=0 : nth=1 -> down");
  ASSERT_OK(cuCtxSynchronize());  // a driver call: the rule fires
  const uint64_t oneDown = peerStreamPs(3, 4);
  // Its 5 links to switch 0 (links 0-4): 13 left.
  install("link gpu=3 links=0,1,2,3,4 : nth=1 -> down");
  ASSERT_OK(cuCtxSynchronize());
  const uint64_t fiveDown = peerStreamPs(3, 4);
  // Pairs that do not involve GPU 3 keep every link, and their times exactly.
  EXPECT_EQ(other, peerStreamPs(0, 1));
  std::printf("peer copy 3->4, 128 MiB streamed: healthy %.1f us, 1 link down %.1f us (x%.4f), 5 links down %.1f us (x%.4f)\n",
              healthy / 1e6, oneDown / 1e6, double(oneDown) / double(healthy), fiveDown / 1e6,
              double(fiveDown) / double(healthy));
  EXPECT_NEAR(18.0 / 17.0, double(oneDown) / double(healthy), 0.005);
  EXPECT_NEAR(18.0 / 13.0, double(fiveDown) / double(healthy), 0.005);
  // The links come back: so do the times.
  install("link gpu=3 : nth=1 -> up");
  ASSERT_OK(cuCtxSynchronize());
  EXPECT_EQ(healthy, peerStreamPs(3, 4));
}

TEST_F(Fabric, AFaultAtTheSamePointGivesTheSameTimes) {
  INIT();
  setUpGpus();
  // The rule fires at the 2nd copy's call, in the middle of the run: twice, the same times.
  std::vector<uint64_t> runs;
  for (int run = 0; run < 2; ++run) {
    install("link gpu=3 links=0,1 : nth=9 -> down");  // the 2nd copy's first call
    const uint64_t a = peerCopyPs(3, 4, 32 * kMiB), b = peerCopyPs(3, 4, 32 * kMiB);
    install("link gpu=3 : nth=1 -> up");
    ASSERT_OK(cuCtxSynchronize());
    runs.push_back(a);
    runs.push_back(b);
  }
  EXPECT_EQ(runs[0], runs[2]);
  EXPECT_EQ(runs[1], runs[3]);
  EXPECT_LT(runs[0], runs[1]);  // the second copy ran with two links fewer
}

TEST_F(Fabric, AGpuWithEveryLinkDownIsCutOff) {
  INIT();
  setUpGpus();
  CUdeviceptr on3 = 0, on4 = 0, on0 = 0;
  ASSERT_OK(cuCtxSetCurrent(ctxs[3]));
  ASSERT_OK(cuMemAlloc(&on3, kPatternBytes));
  ASSERT_OK(writePattern(on3, kPatternBytes, 3));
  ASSERT_OK(cuCtxSetCurrent(ctxs[4]));
  ASSERT_OK(cuMemAlloc(&on4, kPatternBytes));
  ASSERT_OK(writePattern(on4, kPatternBytes, 4));
  ASSERT_OK(cuCtxSetCurrent(ctxs[0]));
  ASSERT_OK(cuMemAlloc(&on0, kPatternBytes));
  int can = -1;
  ASSERT_OK(cuDeviceCanAccessPeer(&can, 3, 4));
  EXPECT_EQ(1, can);
  install("link gpu=3 : nth=1 -> down");
  // Copies to and from it fail and write nothing; the others' go on.
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_NVLINK_UNCORRECTABLE, cuMemcpyPeer(on4, ctxs[4], on3, ctxs[3], kPatternBytes));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_NVLINK_UNCORRECTABLE, cuMemcpyPeer(on3, ctxs[3], on4, ctxs[4], kPatternBytes));
  EXPECT_TRUE(holdsPattern(on4, kPatternBytes, 4));
  EXPECT_OK(cuMemcpyPeer(on0, ctxs[0], on4, ctxs[4], kPatternBytes));
  ASSERT_OK(cuDeviceCanAccessPeer(&can, 3, 4));
  EXPECT_EQ(0, can);
  ASSERT_OK(cuDeviceCanAccessPeer(&can, 0, 4));
  EXPECT_EQ(1, can);
  ASSERT_OK(cuCtxSetCurrent(ctxs[4]));
  EXPECT_CU(CUDA_ERROR_PEER_ACCESS_UNSUPPORTED, cuCtxEnablePeerAccess(ctxs[3], 0));
  EXPECT_OK(cuCtxEnablePeerAccess(ctxs[0], 0));
  EXPECT_OK(cuCtxDisablePeerAccess(ctxs[0]));
  // Its own memory it still reaches.
  ASSERT_OK(cuCtxSetCurrent(ctxs[3]));
  EXPECT_TRUE(holdsPattern(on3, kPatternBytes, 3));
  EXPECT_OK(cuMemFree(on3));
  ASSERT_OK(cuCtxSetCurrent(ctxs[4]));
  EXPECT_OK(cuMemFree(on4));
  ASSERT_OK(cuCtxSetCurrent(ctxs[0]));
  EXPECT_OK(cuMemFree(on0));
  // It joins no multicast team.
  CUmemGenericAllocationHandle mc = 0;
  const CUmulticastObjectProp p = mcProp(2, 2 * kMiB);
  ASSERT_OK(cuMulticastCreate(&mc, &p));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_ILLEGAL_STATE, cuMulticastAddDevice(mc, 3));
  EXPECT_OK(cuMulticastAddDevice(mc, 4));
  EXPECT_OK(cuMemRelease(mc));
}

// A program's own kernel on GPU 0 that stores to GPU 3's memory (mapped for GPU 0 with peer rights).
const char* const kPeerStorePtx = R"(
.version 8.0
.target sm_90
.address_size 64
.visible .entry peer_store(.param .u64 p)
{
  .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [p];
  st.global.u32 [%rd1], 7;
  ret;
}
)";

TEST_F(Fabric, APeerStoreOverACutPathFaultsTheKernelWithAStickyNvlinkError) {
  INIT();
  setUpGpus();
  // GPU 3's memory, mapped read-write for GPU 0 too.
  ASSERT_OK(cuCtxSetCurrent(ctxs[3]));
  const CUmemAllocationProp prop = devicePinned(3);
  CUmemGenericAllocationHandle mem = 0;
  ASSERT_OK(cuMemCreate(&mem, 2 * kMiB, &prop, 0));
  CUdeviceptr va = 0;
  ASSERT_OK(cuMemAddressReserve(&va, 2 * kMiB, 0, 0, 0));
  ASSERT_OK(cuMemMap(va, 2 * kMiB, 0, mem, 0));
  const CUmemAccessDesc rw[] = {readWrite(3), readWrite(0)};
  ASSERT_OK(cuMemSetAccess(va, 2 * kMiB, rw, 2));
  ASSERT_OK(cuMemsetD32(va, 0, 1));
  ASSERT_OK(cuCtxSetCurrent(ctxs[0]));
  CUmodule m = nullptr;
  ASSERT_OK(cuModuleLoadData(&m, kPeerStorePtx));
  CUfunction f = nullptr;
  ASSERT_OK(cuModuleGetFunction(&f, m, "peer_store"));
  void* args[] = {&va};
  // With the path up the store lands.
  ASSERT_OK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, streams[0], args, nullptr));
  ASSERT_OK(cuStreamSynchronize(streams[0]));
  uint32_t word = 0;
  ASSERT_OK(cuMemcpyDtoH(&word, va, 4));
  EXPECT_EQ(7u, word);
  ASSERT_OK(cuCtxSetCurrent(ctxs[3]));
  ASSERT_OK(cuMemsetD32(va, 0, 1));
  ASSERT_OK(cuCtxSetCurrent(ctxs[0]));
  install("link gpu=3 : nth=1 -> down");
  // The launch succeeds, as on a GPU; the fault shows when the work is waited for, is reported,
  // and sticks to the context.
  StderrCapture capture;
  EXPECT_OK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, streams[0], args, nullptr));
  EXPECT_CU(CUDA_ERROR_NVLINK_UNCORRECTABLE, cuStreamSynchronize(streams[0]));
  const std::string err = capture.take();
  EXPECT_NE(std::string::npos, err.find("uncorrectable NVLink error at")) << err;
  EXPECT_NE(std::string::npos, err.find("the NVLink path to its memory is down")) << err;
  EXPECT_NE(std::string::npos, err.find("sticky error is now CUDA_ERROR_NVLINK_UNCORRECTABLE")) << err;
  CUdeviceptr p = 0;
  EXPECT_CU(CUDA_ERROR_NVLINK_UNCORRECTABLE, cuMemAlloc(&p, 4096));
  EXPECT_CU(CUDA_ERROR_NVLINK_UNCORRECTABLE, cuCtxSynchronize());
  // Nothing was written, and GPU 3 itself goes on.
  ASSERT_OK(cuCtxSetCurrent(ctxs[3]));
  ASSERT_OK(cuMemcpyDtoH(&word, va, 4));
  EXPECT_EQ(0u, word);
  EXPECT_OK(cuMemUnmap(va, 2 * kMiB));
  EXPECT_OK(cuMemAddressFree(va, 2 * kMiB));
  EXPECT_OK(cuMemRelease(mem));
  // A reset clears it.
  ASSERT_OK(cuDevicePrimaryCtxReset(0));
  ASSERT_OK(cuDevicePrimaryCtxRetain(&ctxs[0], 0));
  ++retains[0];
  ASSERT_OK(cuCtxSetCurrent(ctxs[0]));
  EXPECT_OK(cuCtxSynchronize());
  CUdeviceptr q = 0;
  EXPECT_OK(cuMemAlloc(&q, 4096));
  EXPECT_OK(cuMemFree(q));
  streams[0] = nullptr;  // went with the reset context
  modules[0] = nullptr;
}

TEST_F(Fabric, NvlsThroughACutOffGpuFailsAndATeamOfTheOthersStillReduces) {
  INIT();
  setUpGpus();
  // 256 KiB of f32. The healthy team's all-reduce runs the grid a GPU has (132 blocks of 512
  // threads), the rest 2 blocks a GPU: with the library's PTX (faults.library_ptx.*) the large grid
  // once deadlocked on a healthy fabric, parked warps missing other GPUs' multimem.red increments
  // that came while their kernel still ran (fabric/node_ptx.cpp, the memory epoch `seen`).
  const uint64_t count = 1 << 16;
  Team all, others;
  makeTeam({0, 1, 2, 3, 4, 5, 6, 7}, 4 * kMiB, &all);
  makeTeam({0, 1, 2, 4, 5, 6, 7}, 4 * kMiB, &others);
  fill(all, count);
  std::vector<CUresult> results;
  nvls(all, count, 1, &results, 132);
  EXPECT_EQ(std::vector<CUresult>(8, CUDA_SUCCESS), results);
  EXPECT_TRUE(exact(all, count));
  install("link gpu=3 : nth=1 -> down");
  ASSERT_OK(cuCtxSynchronize());
  // The other GPUs' team reduces, exactly.
  fill(others, count);
  nvls(others, count, 1, &results, 2);
  EXPECT_EQ(std::vector<CUresult>(7, CUDA_SUCCESS), results);
  EXPECT_TRUE(exact(others, count));
  // A team with GPU 3 in it is degraded: a new bind for it is refused, and its mappings'
  // multimem accesses fault on every member.
  {
    ASSERT_OK(cuCtxSetCurrent(ctxs[0]));
    const CUmemAllocationProp prop = devicePinned(0);
    CUmemGenericAllocationHandle mem = 0;
    ASSERT_OK(cuMemCreate(&mem, 4 * kMiB, &prop, 0));
    EXPECT_CU(CUDA_ERROR_ILLEGAL_STATE, cuMulticastBindMem(all.mc, 0, mem, 0, 4 * kMiB, 0));
    EXPECT_OK(cuMemRelease(mem));
  }
  StderrCapture capture;
  nvls(all, count, 3, &results, 2);
  EXPECT_EQ(std::vector<CUresult>(8, CUDA_ERROR_NVLINK_UNCORRECTABLE), results);
  const std::string err = capture.take();
  const char* library = std::getenv("MCSIM_LIBRARY_KERNELS");
  if (library != nullptr && std::string(library) == "ptx") {
    // The kernels' PTX: the first multimem access (the barrier's multimem.red) faults.
    EXPECT_NE(std::string::npos, err.find("uncorrectable NVLink error at")) << err;
    EXPECT_NE(std::string::npos, err.find("(multimem, 4 bytes: the NVLink path to its memory is down)")) << err;
  } else {
    EXPECT_NE(std::string::npos, err.find("kernel 'mcsim_allreduce_nvls' on GPU 3: step 1 reaches multicast team member GPU 3, which has no NVLink left (fault plan): uncorrectable NVLink error")) << err;
    EXPECT_NE(std::string::npos, err.find("kernel 'mcsim_allreduce_nvls' on GPU 0: step 1 reaches multicast team member GPU 3 over an NVLink path that is down")) << err;
  }
  // Every member took the sticky error: a reset clears it.
  for (int d = 0; d < 8; ++d) {
    ASSERT_OK(cuDevicePrimaryCtxReset(d));
    streams[d] = nullptr;
    modules[d] = nullptr;
    ASSERT_OK(cuDevicePrimaryCtxRetain(&ctxs[d], d));
    ++retains[d];
    ASSERT_OK(cuCtxSetCurrent(ctxs[d]));
    EXPECT_OK(cuCtxSynchronize()) << "device " << d;
  }
}

TEST_F(Fabric, DownedLinksAndSwitchesLowerNvlsBandwidthByTheirShare) {
  INIT();
  setUpGpus();
  const uint64_t count = 8 << 20;  // 32 MiB of f32 per member
  Team all;
  makeTeam({0, 1, 2, 3, 4, 5, 6, 7}, 32 * kMiB, &all);
  std::vector<CUresult> results;
  uint32_t epoch = 1;
  const auto time = [&] {
    const uint64_t t = nvls(all, count, epoch, &results);
    epoch += 2;
    EXPECT_EQ(std::vector<CUresult>(8, CUDA_SUCCESS), results);
    return t;
  };
  fill(all, count);
  const uint64_t healthy = time();
  EXPECT_TRUE(exact(all, count));
  // One link of GPU 3 to switch 0: every member's traffic to that plane is bounded by GPU 3's.
  install("link gpu=3 links=0 : nth=1 -> down");
  ASSERT_OK(cuCtxSynchronize());
  const uint64_t oneLink = time();
  install("link gpu=3 : nth=1 -> up ; switch id=0 : nth=2 -> down");
  ASSERT_OK(cuCtxSynchronize());
  ASSERT_OK(cuCtxSynchronize());
  fill(all, count);
  const uint64_t switchDown = time();
  EXPECT_TRUE(exact(all, count));  // multicast goes on through the switches that are left
  std::printf("NVLS all-reduce of 32 MiB on 8 GPUs: healthy %.1f us, GPU 3's link 0 down %.1f us (x%.4f), "
              "switch 0 down %.1f us (x%.4f)\n",
              healthy / 1e6, oneLink / 1e6, double(oneLink) / double(healthy), switchDown / 1e6,
              double(switchDown) / double(healthy));
  // Bandwidth-bound: the times grow as the links of the narrowest plane shrink (18 -> 17: one of
  // plane {0, 3}'s ten links; switch 0's five links of 18 gone: 13 left), to within the fixed
  // costs (launch, barriers, pipeline fill).
  EXPECT_NEAR(18.0 / 17.0, double(oneLink) / double(healthy), 0.01);
  EXPECT_NEAR(18.0 / 13.0, double(switchDown) / double(healthy), 0.03);
}

}  // namespace
