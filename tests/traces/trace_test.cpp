// Unit tests of the trace layer: the reader's refusals (every class of bad trace names its file
// and line), the codec's encodings, names, conditions and the diff; and the recording library's
// refusal of cuMulticast* calls in front of a "real" driver (mcsim's own, here).
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstring>
#include <string>
#include <vector>

#include "mcsim/kernels.h"
#include "traces/lib/codec.h"
#include "traces/lib/ids.h"
#include "traces/lib/image.h"
#include "traces/lib/minimize.h"
#include "traces/lib/trace_diff.h"
#include "traces/lib/trace_reader.h"

namespace mcsim::trace {
namespace {

const std::string kDir = MCSIM_TEST_TRACE_DIR;

struct BadTrace {
  const char* file;
  int line;
  const char* reason;
};

TEST(TraceReader, EveryBadTraceIsRefusedWithFileLineAndReason) {
  const BadTrace cases[] = {
      {"truncated.jsonl", 4, "truncated: the last line is incomplete"},
      {"no-end.jsonl", 3, "truncated: no end record"},
      {"wrong-version.jsonl", 1, "trace version 99 (this mcsim reads version 1)"},
      {"unknown-call.jsonl", 3, "unknown call 'cuDevicePrimaryCtxFrobnicate'"},
      {"dangling-id.jsonl", 3, "dangling id 'ctx7' (argument 'ctx'): no earlier call produced it"},
      {"not-json.jsonl", 3, "not JSON"},
      {"bad-argument.jsonl", 3, "argument 'dev': expected a number"},
      {"unknown-result.jsonl", 3, "unknown result 'CUDA_ERROR_WHATEVER'"},
      {"dangling-kernel-param.jsonl", 8,
       "dangling id 'va9' (argument 'kernelParams', parameter 1): no earlier call produced it"},
      {"bad-kernel-param.jsonl", 7, "argument 'kernelParams': parameter 2: \"value\" must be a number of 1, 2, 4 or 8 bytes"},
      // Issue 19, item 14: the replay read past the 4 recorded bytes (a segfault at 1 MiB).
      {"host-data-short-of-count.jsonl", 3, "arguments: 'ByteCount' is 1048576 but 'srcHost' holds 4 bytes in the trace"},
      // Issue 19, item 15: the replay set whatever the header named (a fault plan file of /etc/passwd).
      {"env-not-recorded.jsonl", 1, "the header's env sets MCSIM_FAULTS_FILE, which a trace does not restore (only MCSIM_TOPOLOGY, "},
      {"env-bad-value.jsonl", 1, "the header's env: MCSIM_DRIVER_VERSION='abc' is not a version"},
      // Found by the replay fuzzer: a float where C has an integer reached a conversion out of
      // range (undefined) in the decoder; a float data_limit would have in the replay.
      {"float-where-c-has-an-integer.jsonl", 3,
       "argument 'dev': a number with a fraction or an exponent where C has an integer"},
      {"data-limit-not-bytes.jsonl", 1, "the header's data_limit must be a number of bytes"},
  };
  for (const BadTrace& c : cases) {
    const std::string path = kDir + "/bad/" + c.file;
    Trace t;
    const std::string e = readTrace(path, &t);
    const std::string prefix = path + ":" + std::to_string(c.line) + ": ";
    EXPECT_EQ(e.rfind(prefix, 0), 0u) << e;
    EXPECT_NE(e.find(c.reason), std::string::npos) << e;
  }
}

TEST(TraceReader, MoreRefusals) {
  Trace t;
  EXPECT_EQ(parseTrace("", "x", &t), "x:1: empty file");
  EXPECT_NE(parseTrace("{\"hello\":1}\n", "x", &t).find("x:1: not an mcsim trace"), std::string::npos);
  const std::string h = "{\"mcsim_trace\":1,\"target\":\"mcsim\"}\n";
  const std::string init = "{\"seq\":0,\"thread\":0,\"call\":\"cuInit\",\"args\":{\"Flags\":0},\"result\":\"CUDA_SUCCESS\"}\n";
  EXPECT_NE(parseTrace(h + init + init + "{\"end\":true,\"calls\":2}\n", "x", &t).find("x:3: admission number 0 appears twice"),
            std::string::npos);
  EXPECT_NE(parseTrace(h + init + "{\"end\":true,\"calls\":5}\n", "x", &t).find("x:3: the end record counts 5"), std::string::npos);
  EXPECT_NE(parseTrace(h + "{\"end\":true,\"calls\":0}\nmore\n", "x", &t).find("x:3: text after the end record"), std::string::npos);
  EXPECT_NE(parseTrace(h + "{\"seq\":0,\"thread\":0,\"call\":\"cuInit\",\"args\":{},\"result\":\"CUDA_SUCCESS\"}\n{\"end\":true,\"calls\":1}\n",
                       "x", &t).find("x:2: argument 'Flags' is missing"),
            std::string::npos);
  // A descriptor missing a field is refused, not a crash later.
  const std::string create = "{\"seq\":1,\"thread\":0,\"call\":\"cuMemCreate\",\"args\":{\"handle\":\"out\",\"size\":1,"
                             "\"prop\":{\"type\":1},\"flags\":0},\"result\":\"CUDA_SUCCESS\"}\n";
  EXPECT_NE(parseTrace(h + init + create + "{\"end\":true,\"calls\":2}\n", "x", &t).find("x:3: arguments:"), std::string::npos);
  // A shared node's admissions: [number, finished before, simulation runs], checked.
  const auto withNode = [&](const std::string& admissions) {
    const std::string call = "{\"seq\":0,\"thread\":0,\"call\":\"cuInit\",\"args\":{\"Flags\":0},\"result\":\"CUDA_SUCCESS\","
                             "\"node\":" + admissions + "}\n";
    return parseTrace(h + call + "{\"end\":true,\"calls\":1}\n", "x", &t);
  };
  EXPECT_EQ("", withNode("[[1,0,0],[4,2,7]]"));
  EXPECT_EQ(7u, t.records.at(0).node.at(1).simRuns);
  EXPECT_NE(withNode("[[1,0]]").find("x:2: \"node\": a node admission is [number, finished before, simulation runs]"),
            std::string::npos);
  EXPECT_NE(withNode("[[0,0,0]]").find("x:2: \"node\": node admission numbers start at 1"), std::string::npos);
  EXPECT_NE(withNode("[[3,3,0]]").find("x:2: \"node\": node admission 3 cannot follow 3 finished requests"),
            std::string::npos);
  EXPECT_NE(withNode("[[2,0,-1]]").find("x:2: \"node\": a node admission is"), std::string::npos);
}

// Version-1 traces recorded before launches had their own kinds (the parameters written raw) are
// still read: no version bump was needed.
TEST(TraceReader, LaunchesRecordedRawStillRead) {
  const std::string h = "{\"mcsim_trace\":1,\"target\":\"mcsim\"}\n";
  const std::string launch =
      "{\"seq\":0,\"thread\":0,\"call\":\"cuLaunchKernel\",\"args\":{\"f\":null,\"gridDimX\":1,\"gridDimY\":1,"
      "\"gridDimZ\":1,\"blockDimX\":1,\"blockDimY\":1,\"blockDimZ\":1,\"sharedMemBytes\":0,\"hStream\":null,"
      "\"kernelParams\":{\"raw_ptr\":\"nonnull\"},\"extra\":null},\"result\":\"CUDA_ERROR_INVALID_HANDLE\"}\n";
  const std::string load =
      "{\"seq\":1,\"thread\":0,\"call\":\"cuModuleLoadData\",\"args\":{\"module\":\"out\",\"image\":{\"raw_ptr\":\"nonnull\"}},"
      "\"result\":\"CUDA_ERROR_INVALID_IMAGE\"}\n";
  Trace t;
  EXPECT_EQ(parseTrace(h + launch + load + "{\"end\":true,\"calls\":2}\n", "x", &t), "");
}

TEST(TraceReader, GoodTraceReadsAndWritesBack) {
  Trace t;
  ASSERT_EQ(readTrace(kDir + "/good.jsonl", &t), "");
  ASSERT_EQ(t.records.size(), 3u);
  EXPECT_EQ(t.records[2].producers, std::vector<int>{1});
  Trace again;
  ASSERT_EQ(parseTrace(writeTrace(t.header, t.records), "again", &again), "");
  EXPECT_EQ(again.records.size(), 3u);
}

TEST(Codec, Base64RoundTripsAndRefusesJunk) {
  for (size_t n = 0; n < 10; ++n) {
    std::vector<uint8_t> in(n);
    for (size_t i = 0; i < n; ++i) in[i] = static_cast<uint8_t>(i * 77 + 3);
    std::vector<uint8_t> out;
    ASSERT_TRUE(fromBase64(toBase64(in.data(), in.size()), &out));
    EXPECT_EQ(in, out);
  }
  std::vector<uint8_t> out;
  EXPECT_FALSE(fromBase64("abc", &out));
  EXPECT_FALSE(fromBase64("ab!d", &out));
  EXPECT_FALSE(fromBase64("a=bc", &out));
}

// Issue 19, item 14's siblings: a count larger than what the record holds is refused for every
// array the driver reads by a count, and a pointer the trace did not record stands in with room
// for the whole count (a 4 KiB stand-in for a 1 MiB DtoH was written past: heap bytes in the -o
// trace).
TEST(Codec, CountsBeyondWhatTheRecordHoldsAreRefused) {
  Binder b;
  b.bind("va1", 0x5000000);
  Arena arena;
  uint64_t slots[32];
  bool approximate = false;
  const auto decode = [&](const char* symbol, const Json& args) {
    try {
      decodeInputs(callTable()[findCall(symbol)], args, b, arena, slots, &approximate);
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(decode("cuMemSetAccess", Json::parse(R"({"ptr":"va1","size":2097152,"count":3,
      "desc":[{"location":{"type":1,"id":0},"flags":3}]})")),
            "'count' is 3 but 'desc' holds 1 descriptors in the trace");
  EXPECT_EQ(decode("cuPointerGetAttributes", Json::parse(R"({"numAttributes":5,"attributes":null,
      "data":{"attributes":[1,2]},"ptr":"va1"})")),
            "'numAttributes' is 5 but 'data' holds 2 attributes in the trace");
  EXPECT_EQ(decode("cuModuleLoadDataEx", Json::parse(R"({"module":"out","image":null,"numOptions":9,
      "options":{"options":[0],"values":[0]},"optionValues":null})")),
            "'numOptions' is 9 but 'options' holds 1 options in the trace");
  EXPECT_EQ(decode("cuMemcpyHtoD_v2", Json::parse(R"({"dstDevice":"va1","srcHost":{"bytes":4},"ByteCount":5})")),
            "'ByteCount' is 5 but 'srcHost' holds 4 bytes in the trace");
  // A raw destination of 1 MiB: the stand-in has room for all of it.
  ASSERT_EQ(decode("cuMemcpyDtoH_v2", Json::parse(R"({"dstHost":{"raw_ptr":"nonnull"},"srcDevice":"va1","ByteCount":1048576})")), "");
  std::memset(reinterpret_cast<void*>(slots[0]), 0xff, 1 << 20);  // ASan names an overflow here
}

// ---- launches and images

constexpr uint64_t kRegion = 0x7f0000000000ull;  // a device region of the recording, "va1"
constexpr uint64_t kFunc = 0x1234, kStream = 0x5678;

const CallDesc& call(const char* symbol) {
  const int i = findCall(symbol);
  EXPECT_GE(i, 0) << symbol;
  return callTable()[i];
}

// What the recorder knows before the launch: a region, a function looked up by name, a stream.
Names recordingNames() {
  Names n;
  EXPECT_EQ(n.newRegion(false, kRegion, 1 << 20), "va1");
  EXPECT_EQ(n.outHandle(HandleKind::kFunction, kFunc, true), "func1");
  n.setLabel(HandleKind::kFunction, kFunc, "mcsim_copy");
  EXPECT_EQ(n.outHandle(HandleKind::kStream, kStream, true), "stream1");
  return n;
}

// The replay's values for those names, elsewhere.
Binder replayBinder() {
  Binder b;
  b.bind("va1", 0x5000000);
  b.bind("func1", 0x99);
  b.bind("stream1", 0x77);
  return b;
}

uint64_t u64At(const void* p) {
  uint64_t v = 0;
  std::memcpy(&v, p, 8);
  return v;
}

TEST(Codec, LaunchParametersAreValuesWithAddressesAsNames) {
  const CallDesc& d = call("cuLaunchKernel");
  const Names names = recordingNames();
  uint64_t dst = kRegion + 4096, src = kRegion, bytes = 4096;
  void* params[] = {&dst, &src, &bytes};
  const uint64_t slots[] = {kFunc, 2, 1, 1, 256, 1, 1, 0, kStream, toSlot(params), 0};
  Json args;
  encodeInputs(d, slots, names, RecordOptions{}, &args);  // no target: the library's ABI gives the layout
  EXPECT_EQ(args.at("f"), "func1");
  EXPECT_EQ(args.at("kernel"), "mcsim_copy");
  EXPECT_EQ(args.at("hStream"), "stream1");
  EXPECT_EQ(args.at("kernelParams").dump(),
            R"({"layout":"library","params":[{"size":8,"addr":"va1+4096"},{"size":8,"addr":"va1"},{"size":8,"value":4096}]})");
  EXPECT_TRUE(args.at("extra").is_null());

  const Binder b = replayBinder();
  Arena arena;
  uint64_t out[32];
  bool approximate = false;
  ASSERT_EQ(decodeInputs(d, args, b, arena, out, &approximate), "");
  EXPECT_FALSE(approximate);
  EXPECT_EQ(out[0], 0x99u);
  EXPECT_EQ(out[8], 0x77u);
  auto** p = reinterpret_cast<void**>(out[9]);
  EXPECT_EQ(u64At(p[0]), 0x5000000u + 4096);
  EXPECT_EQ(u64At(p[1]), 0x5000000u);
  EXPECT_EQ(u64At(p[2]), 4096u);
  EXPECT_EQ(out[10], 0u);
}

// A kernel the trace layer has no ABI for (a program's own, with a registered model): 8-byte values
// inside a known region are addresses, also inside a larger (struct) parameter.
bool fakeModel(uint64_t, bool, const std::string&, FunctionInfo* out) {
  out->name = "scale_struct";
  out->layout = "model";
  out->sizes = {16, 4, 8};
  out->offsets = {0, 16, 24};
  return true;
}

TEST(Codec, ExtraBufferParametersOfAnUnknownKernelFindAddressesByValue) {
  const CallDesc& d = call("cuLaunchKernel");
  const Names names = recordingNames();
  struct {
    uint64_t ptr, count;
    uint32_t dtype, pad;
    uint64_t notAnAddress;
  } packed = {kRegion + 64, 12, 3, 0, 777};
  size_t packedBytes = sizeof packed;
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &packed, CU_LAUNCH_PARAM_BUFFER_SIZE, &packedBytes, CU_LAUNCH_PARAM_END};
  const uint64_t slots[] = {kFunc, 1, 1, 1, 32, 1, 1, 0, 0, 0, toSlot(extra)};
  RecordOptions o;
  o.describeFunction = &fakeModel;
  Json args;
  encodeInputs(d, slots, names, o, &args);
  EXPECT_EQ(args.at("kernel"), "scale_struct");
  EXPECT_EQ(args.at("extra").dump(),
            R"({"layout":"model","buffer_bytes":32,"params":[{"offset":0,"size":16,"hex":"00000000000000000c00000000000000","addrs":{"0":"va1+64"}},)"
            R"({"offset":16,"size":4,"value":3},{"offset":24,"size":8,"value":777}]})");
  Arena arena;
  uint64_t out[32];
  bool approximate = false;
  ASSERT_EQ(decodeInputs(d, args, replayBinder(), arena, out, &approximate), "");
  auto** list = reinterpret_cast<void**>(out[10]);
  ASSERT_EQ(list[0], CU_LAUNCH_PARAM_BUFFER_POINTER);
  ASSERT_EQ(list[2], CU_LAUNCH_PARAM_BUFFER_SIZE);
  EXPECT_EQ(list[4], CU_LAUNCH_PARAM_END);
  EXPECT_EQ(u64At(list[3]), 32u);
  const auto* buf = static_cast<const uint8_t*>(list[1]);
  EXPECT_EQ(u64At(buf), 0x5000000u + 64);
  EXPECT_EQ(u64At(buf + 8), 12u);
  EXPECT_EQ(u64At(buf + 24), 777u);
}

TEST(Codec, LaunchConfigKeepsShapeStreamAndAttributes) {
  const CallDesc& d = call("cuLaunchKernelEx");
  Names names = recordingNames();
  EXPECT_EQ(names.outHandle(HandleKind::kEvent, 0xe1, true), "event1");
  CUlaunchAttribute attrs[2];
  std::memset(attrs, 0, sizeof attrs);
  attrs[0].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
  attrs[0].value.cooperative = 1;
  attrs[1].id = CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT;
  attrs[1].value.launchCompletionEvent.event = reinterpret_cast<CUevent>(0xe1);
  attrs[1].value.launchCompletionEvent.flags = 2;
  CUlaunchConfig config{};
  config.gridDimX = 3;
  config.gridDimY = config.gridDimZ = config.blockDimY = config.blockDimZ = 1;
  config.blockDimX = 64;
  config.sharedMemBytes = 128;
  config.hStream = reinterpret_cast<CUstream>(kStream);
  config.attrs = attrs;
  config.numAttrs = 2;
  uint64_t dst = kRegion, src = kRegion + 8, bytes = 8;
  void* params[] = {&dst, &src, &bytes};
  const uint64_t slots[] = {toSlot(&config), kFunc, toSlot(params), 0};
  Json args;
  encodeInputs(d, slots, names, RecordOptions{}, &args);
  EXPECT_EQ(args.at("config").dump(),
            R"({"gridDimX":3,"gridDimY":1,"gridDimZ":1,"blockDimX":64,"blockDimY":1,"blockDimZ":1,"sharedMemBytes":128,)"
            R"("hStream":"stream1","attrs":[{"id":2,"value":"01"},{"id":12,"event":"event1","value":"000000000000000002"}],"numAttrs":2})");
  Binder b = replayBinder();
  b.bind("event1", 0xe2);
  Arena arena;
  uint64_t out[32];
  bool approximate = false;
  ASSERT_EQ(decodeInputs(d, args, b, arena, out, &approximate), "");
  const auto* c = reinterpret_cast<const CUlaunchConfig*>(out[0]);
  EXPECT_EQ(c->gridDimX, 3u);
  EXPECT_EQ(c->sharedMemBytes, 128u);
  EXPECT_EQ(c->hStream, reinterpret_cast<CUstream>(0x77));
  ASSERT_EQ(c->numAttrs, 2u);
  EXPECT_EQ(c->attrs[0].value.cooperative, 1);
  EXPECT_EQ(c->attrs[1].value.launchCompletionEvent.event, reinterpret_cast<CUevent>(0xe2));
  EXPECT_EQ(c->attrs[1].value.launchCompletionEvent.flags, 2);
}

TEST(Codec, ImagesAreCopiedOrNamedWhenTheyAreTheKernelLibrary) {
  const CallDesc& d = call("cuModuleLoadData");
  Names names;
  static const char ptx[] = ".version 8.0\n.target sm_90\n.visible .entry k() { ret; }\n";
  uint64_t slots[] = {0, toSlot(ptx)};
  Json args;
  encodeInputs(d, slots, names, RecordOptions{}, &args);
  EXPECT_EQ(args.at("image").at("format"), "text");
  EXPECT_EQ(args.at("image").at("bytes"), sizeof ptx);  // the NUL included
  Arena arena;
  uint64_t out[32];
  bool approximate = false;
  ASSERT_EQ(decodeInputs(d, args, Binder{}, arena, out, &approximate), "");
  EXPECT_STREQ(reinterpret_cast<const char*>(out[1]), ptx);

  // mcsim's own kernel library is named, not copied; MCSIM_RECORD_IMAGES=full copies it.
  slots[1] = toSlot(mcsim_kernel_image);
  encodeInputs(d, slots, names, RecordOptions{}, &args);
  EXPECT_EQ(args.at("image").at("library"), "mcsim_kernels");
  EXPECT_FALSE(args.at("image").contains("data"));
  ASSERT_EQ(decodeInputs(d, args, Binder{}, arena, out, &approximate), "");
  EXPECT_EQ(reinterpret_cast<const void*>(out[1]), kernelLibraryImage());
  RecordOptions full;
  full.imagesInFull = true;
  encodeInputs(d, slots, names, full, &args);
  EXPECT_TRUE(args.at("image").contains("data"));
  EXPECT_EQ(args.at("image").at("bytes"), kernelLibraryRead().bytes.size());

  // A pointer to nothing readable: recorded as unreadable, not a crash.
  slots[1] = 0x10;
  encodeInputs(d, slots, names, RecordOptions{}, &args);
  EXPECT_EQ(args.at("image").dump(), R"({"unreadable":true})");
}

TEST(Diff, FindsAChangedKernelParameter) {
  const CallDesc& d = call("cuLaunchKernel");
  const Names names = recordingNames();
  uint64_t dst = kRegion, src = kRegion + 64, bytes = 64;
  void* params[] = {&dst, &src, &bytes};
  const uint64_t slots[] = {kFunc, 1, 1, 1, 32, 1, 1, 0, 0, toSlot(params), 0};
  Record r;
  r.call = findCall("cuLaunchKernel");
  r.result = "CUDA_SUCCESS";
  encodeInputs(d, slots, names, RecordOptions{}, &r.args);
  Trace a, b;
  a.target = b.target = "real";
  a.records.push_back(r);
  b = a;
  b.records[0].args["kernelParams"]["params"][2]["value"] = 60;
  const DiffResult res = diffTraces(a, b, DiffOptions{});  // across targets, yet a difference
  ASSERT_EQ(res.differences.size(), 1u);
  EXPECT_NE(res.differences[0].what.find(R"(kernel mcsim_copy, kernelParams parameter 2: {"size":8,"value":64} vs {"size":8,"value":60})"),
            std::string::npos) << res.differences[0].what;
  DiffOptions resultsOnly;
  resultsOnly.compareLaunches = false;
  EXPECT_TRUE(diffTraces(a, b, resultsOnly).differences.empty());
}

TEST(Names, AddressesAreRegionPlusOffset) {
  Names n;
  EXPECT_EQ(n.newRegion(false, 0x1000, 0x100), "va1");
  EXPECT_EQ(n.address(false, 0x1000), "va1");
  EXPECT_EQ(n.address(false, 0x1010), "va1+16");
  EXPECT_EQ(n.address(false, 0x1100), "va1+256");  // one past the end: an end pointer
  EXPECT_EQ(n.address(false, 0x1101), "");
  EXPECT_EQ(n.address(true, 0x1000), "");  // host regions are separate
  // A region handed out again replaces the old one.
  EXPECT_EQ(n.newRegion(false, 0x1080, 0x100), "va2");
  EXPECT_EQ(n.address(false, 0x1000), "");
  EXPECT_EQ(n.address(false, 0x1090), "va2+16");
  EXPECT_EQ(n.outHandle(HandleKind::kMem, 7, true), "mem1");
  EXPECT_EQ(n.outHandle(HandleKind::kMem, 7, false), "mem1");
  EXPECT_EQ(n.outHandle(HandleKind::kMem, 7, true), "mem2");
  ASSERT_TRUE(parseName("va12+4096"));
  EXPECT_EQ(parseName("va12+4096")->base, "va12");
  EXPECT_EQ(parseName("va12+4096")->offset, 4096u);
  for (const char* junk : {"", "va", "12", "va1+", "va1+x", "out", "legacy", "va1-3", "VA1"}) {
    EXPECT_FALSE(parseName(junk)) << junk;
  }
}

TEST(Conditions, Parse) {
  Condition c;
  EXPECT_EQ(parseCondition("result=CUDA_ERROR_ILLEGAL_STATE@cuMulticastBindMem", &c), "");
  EXPECT_EQ(c.result, "CUDA_ERROR_ILLEGAL_STATE");
  EXPECT_EQ(c.call, "cuMulticastBindMem");
  EXPECT_EQ(parseCondition("deadlock", &c), "");
  EXPECT_EQ(c.kind, Condition::Kind::kDeadlock);
  EXPECT_NE(parseCondition("result=CUDA_ERROR_NOPE", &c), "");
  EXPECT_NE(parseCondition("result=CUDA_SUCCESS@cuNothing", &c), "");
  EXPECT_NE(parseCondition("sometimes", &c), "");
}

TEST(Diff, ResultsCountOutputsOnlyWhenExact) {
  Trace a, b;
  ASSERT_EQ(readTrace(kDir + "/good.jsonl", &a), "");
  b = a;
  b.records[1].out["pctx"] = "ctx9";
  DiffOptions loose;
  EXPECT_TRUE(diffTraces(a, b, loose).differences.empty());
  EXPECT_EQ(diffTraces(a, b, loose).notes.size(), 1u);
  DiffOptions exact;
  exact.exact = true;
  EXPECT_EQ(diffTraces(a, b, exact).differences.size(), 1u);
  b.records[2].result = "CUDA_ERROR_INVALID_CONTEXT";
  const DiffResult r = diffTraces(a, b, loose);
  ASSERT_EQ(r.differences.size(), 1u);
  EXPECT_NE(r.differences[0].what.find("result CUDA_SUCCESS vs CUDA_ERROR_INVALID_CONTEXT"), std::string::npos);
}

// An import of a descriptor another process exported is compared by the handle `shared` names,
// not by the importer's descriptor number, which no two runs share (issue 21).
TEST(Diff, ImportsOfAnotherProcesssHandleCompareByTheSharedName) {
  Trace a, b;
  ASSERT_EQ(readTrace(kDir + "/good.jsonl", &a), "");
  Record import;
  import.call = findCall("cuMemImportFromShareableHandle");
  import.result = "CUDA_SUCCESS";
  import.args = Json{{"handle", "out"}, {"osHandle", Json{{"raw_fd", 7}}}, {"shHandleType", 1}};
  import.shared = "file:12:3456";
  a.records.push_back(import);
  b = a;
  b.records.back().args["osHandle"]["raw_fd"] = 5;
  b.records.back().shared = "file:12:9999";  // the replay's own file: never compared
  DiffOptions exact;
  exact.exact = true;
  EXPECT_TRUE(diffTraces(a, b, exact).differences.empty()) << diffTraces(a, b, exact).differences[0].what;
  // Without a shared name the descriptor is all the trace has, and it differs.
  a.records.back().shared.clear();
  b.records.back().shared.clear();
  ASSERT_EQ(diffTraces(a, b, exact).differences.size(), 1u);
  EXPECT_NE(diffTraces(a, b, exact).differences[0].what.find("osHandle {\"raw_fd\":7} vs {\"raw_fd\":5}"), std::string::npos);
}

// A minimised trace's names are renumbered as a recording of just its calls would name them.
TEST(Minimize, RenumbersNamesInTheOrderTheyFirstAppear) {
  std::vector<Record> recs(3);
  recs[0].call = findCall("cuEventCreate");
  recs[1].call = findCall("cuLaunchKernelEx");
  recs[2].call = findCall("cuKernelGetFunction");
  recs[0].line = 2;
  recs[0].args = Json{{"phEvent", "out"}};
  recs[0].out = Json{{"phEvent", "event3"}};
  recs[1].line = 3;
  recs[1].args = Json{{"dptr", "va4+64"}, {"hEvent", "event3"}, {"kernel", "kernel7"},
                      {"config", Json{{"attrs", Json::array({Json{{"event", "event3"}}})}}},
                      {"srcHost", Json{{"bytes", 4}, {"digest", "va12"}, {"data", "va12"}}}};
  recs[2].line = 4;
  recs[2].args = Json{{"a", "va2"}, {"b", "va4"}, {"s", "legacy"}, {"kernel", "kernel7"}};
  renumberNames(&recs);
  EXPECT_EQ(recs[0].out.at("phEvent"), "event1");
  EXPECT_EQ(recs[1].args.at("dptr"), "va1+64");
  EXPECT_EQ(recs[1].args.at("hEvent"), "event1");
  EXPECT_EQ(recs[1].args.at("kernel"), "kernel7");  // the launched kernel's own name, not a handle
  EXPECT_EQ(recs[1].args.at("config").at("attrs")[0].at("event"), "event1");
  EXPECT_EQ(recs[1].args.at("srcHost").at("data"), "va12");  // data, not a name
  EXPECT_EQ(recs[2].args.at("a"), "va2");
  EXPECT_EQ(recs[2].args.at("b"), "va1");
  EXPECT_EQ(recs[2].args.at("s"), "legacy");
  EXPECT_EQ(recs[2].args.at("kernel"), "kernel1");  // cuKernelGetFunction's handle is a name
}

// The end record's kernel times go onto their launches, are written back, and are checked.
TEST(TraceReader, KernelTimesOfTheEndRecord) {
  Trace t;
  ASSERT_EQ(readTrace(kDir + "/../../traces/samples/kernel-launches.sim.jsonl", &t), "");
  size_t launch = 0;
  while (launch < t.records.size() && !isLaunch(callTable()[t.records[launch].call])) ++launch;
  ASSERT_LT(launch, t.records.size());
  t.records[launch].hasKernelTime = true;
  t.records[launch].kernelStartPs = 1000;
  t.records[launch].kernelEndPs = 5000;
  const std::string text = writeTrace(t.header, t.records);
  EXPECT_NE(text.find("\"kernels\":[[" + std::to_string(launch) + ",1000,5000]]"), std::string::npos);
  Trace again;
  ASSERT_EQ(parseTrace(text, "again", &again), "");
  EXPECT_TRUE(again.records[launch].hasKernelTime);
  EXPECT_EQ(again.records[launch].kernelEndPs - again.records[launch].kernelStartPs, 4000u);
  // Two traces whose kernel ran for different times: an exact diff says so, and the durations
  // table counts the kernel's time, not the launch call's (which takes none).
  Trace b = again;
  b.records[launch].kernelEndPs = 9000;
  DiffOptions exact;
  exact.exact = true;
  const DiffResult r = diffTraces(again, b, exact);
  ASSERT_EQ(r.differences.size(), 1u);
  EXPECT_NE(r.differences[0].what.find("kernel ran [1000, 5000] ps vs [1000, 9000] ps"), std::string::npos);
  const std::string kernel = "cuLaunchKernel " + again.records[launch].args.at("kernel").get<std::string>();
  bool found = false;
  for (const DurationRow& row : r.durations) {
    if (row.call != kernel) continue;
    found = true;
    EXPECT_GE(row.aNs, 4.0);
    EXPECT_GE(row.bNs - row.aNs, 4.0 - 1e-9);
  }
  EXPECT_TRUE(found) << kernel;
  const std::string end = "{\"end\":true,\"calls\":" + std::to_string(t.records.size());
  for (const auto& [kernels, why] : std::vector<std::pair<std::string, std::string>>{
           {"[[0,1,2]]", "is no launch of the trace"},
           {"[[" + std::to_string(launch) + ",5,2]]", "ends before it starts"},
           {"[[" + std::to_string(launch) + ",1]]", "is not [seq, start_ps, end_ps]"}}) {
    std::string bad = text.substr(0, text.rfind("{\"end\""));
    bad += end + ",\"kernels\":" + kernels + "}\n";
    EXPECT_NE(parseTrace(bad, "x", &again).find(why), std::string::npos) << kernels;
  }
}

// The recording library forwards to MCSIM_REAL_LIBCUDA (mcsim's driver here) and refuses every
// cuMulticast* call, direct or through cuGetProcAddress, unless MCSIM_REAL_MULTICAST=1.
TEST(RecordReal, RefusesMulticastUnlessAllowed) {
  ::setenv("MCSIM_REAL_LIBCUDA", MCSIM_TEST_LIB_DIR "/libcuda.so.1", 1);
  ::unsetenv("MCSIM_REAL_MULTICAST");
  ::unsetenv("MCSIM_RECORD");
  void* lib = ::dlopen(MCSIM_TEST_LIB_DIR "/record-real/libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib, nullptr) << ::dlerror();
  auto init = reinterpret_cast<CUresult (*)(unsigned)>(::dlsym(lib, "cuInit"));
  auto create = reinterpret_cast<CUresult (*)(CUmemGenericAllocationHandle*, const CUmulticastObjectProp*)>(
      ::dlsym(lib, "cuMulticastCreate"));
  auto proc = reinterpret_cast<CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*)>(
      ::dlsym(lib, "cuGetProcAddress_v2"));
  ASSERT_TRUE(init && create && proc);
  ASSERT_EQ(init(0), CUDA_SUCCESS);
  CUmulticastObjectProp prop{};
  prop.numDevices = 2;
  prop.size = 2u << 20;
  prop.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  CUmemGenericAllocationHandle h = 0;
  EXPECT_EQ(create(&h, &prop), CUDA_ERROR_NOT_PERMITTED);
  EXPECT_EQ(h, 0u);
  void* fn = nullptr;
  CUdriverProcAddressQueryResult found;
  ASSERT_EQ(proc("cuMulticastCreate", &fn, 12010, 0, &found), CUDA_SUCCESS);
  ASSERT_NE(fn, nullptr);
  EXPECT_EQ(fn, reinterpret_cast<void*>(create));  // the recording library's own wrapper
  EXPECT_EQ(reinterpret_cast<decltype(create)>(fn)(&h, &prop), CUDA_ERROR_NOT_PERMITTED);
}

// A call given a host buffer shorter than its count fails in the driver; the recorder, which reads
// the buffer first, must not crash on it and records it as unreadable.
TEST(RecordReal, ShortHostBufferIsRecordedUnreadable) {
  const std::string trace = ::testing::TempDir() + "short_buffer.jsonl";
  ::setenv("MCSIM_REAL_LIBCUDA", MCSIM_TEST_LIB_DIR "/libcuda.so.1", 1);
  ::setenv("MCSIM_RECORD", trace.c_str(), 1);
  void* lib = ::dlopen(MCSIM_TEST_LIB_DIR "/record-real/libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  ::unsetenv("MCSIM_RECORD");
  ASSERT_NE(lib, nullptr) << ::dlerror();
  auto init = reinterpret_cast<CUresult (*)(unsigned)>(::dlsym(lib, "cuInit"));
  auto retain = reinterpret_cast<CUresult (*)(CUcontext*, CUdevice)>(::dlsym(lib, "cuDevicePrimaryCtxRetain"));
  auto setCurrent = reinterpret_cast<CUresult (*)(CUcontext)>(::dlsym(lib, "cuCtxSetCurrent"));
  auto alloc = reinterpret_cast<CUresult (*)(CUdeviceptr*, size_t)>(::dlsym(lib, "cuMemAlloc_v2"));
  auto htod = reinterpret_cast<CUresult (*)(CUdeviceptr, const void*, size_t)>(::dlsym(lib, "cuMemcpyHtoD_v2"));
  auto close = reinterpret_cast<void (*)()>(::dlsym(lib, "mcsim_trace_close"));
  ASSERT_TRUE(init && retain && setCurrent && alloc && htod && close);
  CUcontext ctx = nullptr;
  CUdeviceptr d = 0;
  ASSERT_EQ(init(0), CUDA_SUCCESS);
  ASSERT_EQ(retain(&ctx, 0), CUDA_SUCCESS);
  ASSERT_EQ(setCurrent(ctx), CUDA_SUCCESS);
  ASSERT_EQ(alloc(&d, 4096), CUDA_SUCCESS);
  const char small[16] = {};
  EXPECT_NE(htod(d, small, uint64_t{1} << 40), CUDA_SUCCESS);
  close();
  Trace t;
  ASSERT_EQ(readTrace(trace, &t), "");
  ASSERT_EQ(t.records.size(), 5u);
  EXPECT_EQ(t.records[4].args.at("srcHost").value("unreadable", false), true) << t.records[4].args.dump();
}

}  // namespace
}  // namespace mcsim::trace
