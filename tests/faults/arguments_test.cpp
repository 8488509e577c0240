// Argument filters (`cuMulticastBindMem size>=64MiB`, docs/faults.md "Argument filters"): how
// they parse and are refused, that every argument fabric/fault_arguments.def lists reaches the plan
// with the value the call was given, and how filters combine with prefixes, lists, bit masks,
// cuda.h constant names, absent struct fields and the counting triggers.
#include <fstream>
#include <map>
#include <set>

#include "fabric/fault_arguments.h"
#include "fabric/fault_plan.h"
#include "fabric/json_source.h"
#include "tests/faults/fault_test.h"

namespace {

using namespace faulttest;
using mcsim::fabric::ArgOp;
using mcsim::fabric::FaultRule;
using mcsim::fabric::InputError;
using mcsim::fabric::parseArgumentNumber;
using mcsim::fabric::parseFaultPlan;

std::string refusal(const std::string& text) {
  try {
    parseFaultPlan(text, "args.plan");
  } catch (const InputError& e) {
    return e.what();
  }
  return "accepted";
}

// --- Parsing ------------------------------------------------------------------------------------

TEST(ArgumentFilters, ParseOperatorsUnitsListsAndConstants) {
  const auto rules = parseFaultPlan(
      "cuMulticastBindMem size>=64MiB mcOffset=0,2MiB flags!=0 : always -> return CUDA_ERROR_OUT_OF_MEMORY\n"
      "cuMemCreate handleTypes&CU_MEM_HANDLE_TYPE_FABRIC size<1.5GiB : nth=2 -> return CUDA_ERROR_NOT_PERMITTED\n"
      "cuMulticastCreate device=3 numDevices>4 size<=0x400000 : always -> return CUDA_ERROR_NOT_SUPPORTED\n"
      "cuGetProcAddress symbol=cuMulticast*,cuMemCreate : always -> return CUDA_ERROR_NOT_FOUND",
      "args.plan");
  ASSERT_EQ(4u, rules.size());
  const FaultRule& bind = rules[0];
  ASSERT_EQ(3u, bind.args.size());
  EXPECT_EQ("size", bind.args[0].name);
  EXPECT_EQ(ArgOp::kGe, bind.args[0].op);
  EXPECT_EQ(64u << 20, bind.args[0].values[0].number);
  EXPECT_EQ(ArgOp::kEq, bind.args[1].op);
  ASSERT_EQ(2u, bind.args[1].values.size());
  EXPECT_EQ(2u << 20, bind.args[1].values[1].number);
  EXPECT_EQ(ArgOp::kNe, bind.args[2].op);
  const FaultRule& create = rules[1];
  EXPECT_EQ(ArgOp::kBits, create.args[0].op);
  EXPECT_EQ("CU_MEM_HANDLE_TYPE_FABRIC", create.args[0].values[0].symbol);  // the driver resolves it
  EXPECT_EQ(ArgOp::kLt, create.args[1].op);
  EXPECT_EQ(3u << 29, create.args[1].values[0].number);
  const FaultRule& mc = rules[2];
  EXPECT_EQ(std::vector<int>{3}, mc.devices);
  EXPECT_EQ(ArgOp::kGt, mc.args[0].op);
  EXPECT_EQ(ArgOp::kLe, mc.args[1].op);
  EXPECT_EQ(0x400000u, mc.args[1].values[0].number);
  const FaultRule& proc = rules[3];
  EXPECT_TRUE(proc.args[0].text);
  EXPECT_EQ("cuMulticast*", proc.args[0].values[0].symbol);
}

TEST(ArgumentFilters, Numbers) {
  uint64_t v = 0;
  EXPECT_TRUE(parseArgumentNumber("4096", &v));
  EXPECT_EQ(4096u, v);
  EXPECT_TRUE(parseArgumentNumber("0x1F", &v));
  EXPECT_EQ(31u, v);
  EXPECT_TRUE(parseArgumentNumber("4KiB", &v));
  EXPECT_EQ(4096u, v);
  EXPECT_TRUE(parseArgumentNumber("2MiB", &v));
  EXPECT_EQ(2u << 20, v);
  EXPECT_TRUE(parseArgumentNumber("1TiB", &v));
  EXPECT_EQ(uint64_t{1} << 40, v);
  EXPECT_TRUE(parseArgumentNumber("512B", &v));
  EXPECT_EQ(512u, v);
  EXPECT_TRUE(parseArgumentNumber("0.5KiB", &v));
  EXPECT_EQ(512u, v);
  // The grammar `mcsim bench --sizes` shares (settings/byte_size.h): short units, fractions.
  EXPECT_TRUE(parseArgumentNumber("1.5M", &v));
  EXPECT_EQ(3u << 19, v);
  EXPECT_TRUE(parseArgumentNumber("4k", &v));
  EXPECT_EQ(4096u, v);
  EXPECT_TRUE(parseArgumentNumber("2MB", &v));  // binary, as the benchmark always read it
  EXPECT_EQ(2u << 20, v);
  EXPECT_TRUE(parseArgumentNumber("18446744073709551615", &v));
  EXPECT_EQ(UINT64_MAX, v);
  for (const char* bad : {"", "-1", "2XB", "2BB", "2 MiB", "0x", "0xG", "1.5", "0.3B", "1.2.3KiB", ".5KiB", "16777216TiB",
                          "18446744073709551616", "0x10000000000000000"}) {
    EXPECT_FALSE(parseArgumentNumber(bad, &v)) << bad;
  }
}

TEST(ArgumentFilters, RefusedWithFileLineAndTheProblem) {
  struct Case {
    const char* plan;
    const char* problem;
  };
  const Case cases[] = {
      {"cuMemCreate sizes>=1 : always -> return CUDA_ERROR_UNKNOWN",
       "args.plan:1: cuMemCreate reports no argument 'sizes' (it reports size, handleTypes, flags)"},
      {"cuCtxSynchronize size=1 : always -> return CUDA_ERROR_UNKNOWN",
       "args.plan:1: cuCtxSynchronize reports no arguments to fault plans, so 'size=1' cannot filter it"},
      {"cuMulticast* symbol=x : always -> return CUDA_ERROR_UNKNOWN",
       "args.plan:1: no entry point matching cuMulticast* reports an argument 'symbol'"},
      {"fabric-manager size=1 : always -> state ready", "args.plan:1: argument filters such as 'size=1' apply to driver entry points only"},
      {"cuMemCreate size=big : always -> return CUDA_ERROR_UNKNOWN", "'big' is not a value for size"},
      {"cuMemCreate size= : always -> return CUDA_ERROR_UNKNOWN", "has no value"},
      {"cuMemCreate size=1,,2 : always -> return CUDA_ERROR_UNKNOWN", "has an empty value"},
      {"cuMemCreate size<1,2 : always -> return CUDA_ERROR_UNKNOWN", "'<' takes one value (lists go with = and !=)"},
      {"cuMemCreate flags&0 : always -> return CUDA_ERROR_UNKNOWN", "& takes a non-zero mask"},
      {"cuGetProcAddress symbol>=cuA : always -> return CUDA_ERROR_UNKNOWN", "'symbol' is text: it takes = or != only"},
      {"cuMemCreate device>=1 : always -> return CUDA_ERROR_UNKNOWN", "device takes '=': device=..."},
      {"cuMemCreate =5 : always -> return CUDA_ERROR_UNKNOWN", "filter '=5' is not NAME OP VALUE"},
      {"\n\ncuMemMap size~4 : always -> return CUDA_ERROR_UNKNOWN", "args.plan:3: filter 'size~4' is not NAME OP VALUE"},
  };
  for (const Case& c : cases) {
    const std::string what = refusal(c.plan);
    EXPECT_NE(std::string::npos, what.find(c.problem)) << c.plan << "\n  -> " << what;
    EXPECT_EQ(0u, what.find("args.plan:")) << what;
  }
}

// Constants are cuda.h's names; the driver resolves them when it installs the plan, and refuses an
// unknown one with the rule's line, keeping the plan in force.
TEST_F(McTest, ArgumentConstantsResolveWhenThePlanIsInstalled) {
  INIT();
  ASSERT_EQ("", mcsim::api::installFaultPlan("cuDeviceGetAttribute attribute=CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED : "
                                             "always -> return CUDA_ERROR_INVALID_DEVICE"));
  const std::string err = mcsim::api::installFaultPlan(
      "cuMemCreate size=2MiB : always -> return CUDA_ERROR_UNKNOWN\n"
      "cuMemCreate handleTypes&CU_MEM_HANDLE_TYPE_FABRC : always -> return CUDA_ERROR_UNKNOWN");
  EXPECT_EQ(0u, err.find("MCSIM_API:2: 'CU_MEM_HANDLE_TYPE_FABRC' in the filter on 'handleTypes' is no cuda.h constant")) << err;
  EXPECT_NE(std::string::npos, mcsim::api::installFaultPlan("cuMemCreate flags&CU_MEM_HANDLE_TYPE_NONE : always -> "
                                                            "return CUDA_ERROR_UNKNOWN").find("is 0, and & takes a non-zero mask"));
  // The first plan is still in force.
  int v = 0;
  EXPECT_CU(CUDA_ERROR_INVALID_DEVICE, cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED, 0));
  EXPECT_OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_WARP_SIZE, 0));
  EXPECT_EQ(32, v);
}

TEST(ArgumentFiltersFromEnvironment, UnknownConstantFailsCuInitWithTheLine) {
  ::setenv("MCSIM_FAULTS", "cuMemMap : nth=1 -> delay 1us ; cuMemMap flags=CU_NOTHING : always -> block", 1);
  StderrCapture capture;
  EXPECT_CU(CUDA_ERROR_NO_DEVICE, cuInit(0));
  const std::string err = capture.take();
  EXPECT_NE(std::string::npos, err.find("mcsim: cannot load fault plan: MCSIM_FAULTS:1: 'CU_NOTHING' in the filter on 'flags'")) << err;
}

// --- Every argument of the table reaches the plan -----------------------------------------------

constexpr CUresult kInjected = CUDA_ERROR_ASSERT;  // no call below returns it by itself

// One call of an entry point, made with arguments that make it fail by itself (or do nothing
// lasting), and the value each argument it reports must then have.
struct Row {
  const char* entry;
  std::function<CUresult()> call;
  std::vector<std::pair<const char*, std::string>> values;  // argument, value as a plan writes it
};

std::vector<Row> rows(CUcontext ctx) {
  static CUmemGenericAllocationHandle h = 0;
  static CUdeviceptr va = 0;
  static void* pfn = nullptr;
  static const char* str = nullptr;
  static int iv = 0;
  static CUdevice dev = 0;
  static size_t gran = 0;
  static CUcontext created = nullptr;
  static CUmemAllocationProp fabricProp = devicePinned(0, CU_MEM_HANDLE_TYPE_FABRIC);
  static CUmemAllocationProp posixProp = devicePinned(1, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  static CUmulticastObjectProp mp = mcProp(4, 6 * kMiB, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  static CUmulticastObjectProp badMp = mcProp(4, 3 * kMiB, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  static CUmemAccessDesc rw = readWrite(0);
  return {
      {"cuInit", [] { return cuInit(0); }, {{"flags", "0"}}},
      {"cuGetProcAddress", [] { return cuGetProcAddress_v2("cuMemCreate", &pfn, 12080, CU_GET_PROC_ADDRESS_DEFAULT, nullptr); },
       {{"symbol", "cuMemCreate"}, {"cudaVersion", "12080"}, {"flags", "CU_GET_PROC_ADDRESS_DEFAULT"}}},
      {"cuGetErrorName", [] { return cuGetErrorName(CUDA_ERROR_OUT_OF_MEMORY, &str); },
       {{"error", "CUDA_ERROR_OUT_OF_MEMORY"}}},
      {"cuGetErrorString", [] { return cuGetErrorString(CUDA_ERROR_ILLEGAL_STATE, &str); }, {{"error", "401"}}},
      {"cuMemAlloc", [] { return cuMemAlloc(&va, 0); }, {{"bytesize", "0"}}},
      {"cuDeviceGet", [] { return cuDeviceGet(&dev, 5); }, {{"ordinal", "5"}}},
      {"cuDeviceGetAttribute", [] { return cuDeviceGetAttribute(&iv, CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED, 2); },
       {{"attribute", "CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED"}}},
      {"cuDeviceCanAccessPeer", [] { return cuDeviceCanAccessPeer(&iv, 0, 6); }, {{"peer", "6"}}},
      {"cuDeviceGetP2PAttribute", [] { return cuDeviceGetP2PAttribute(&iv, CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED, 1, 2); },
       {{"attribute", "CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED"}, {"srcDevice", "1"}, {"dstDevice", "2"}}},
      {"cuDevicePrimaryCtxSetFlags", [] { return cuDevicePrimaryCtxSetFlags(3, 0xF000); }, {{"flags", "0xF000"}}},
      {"cuCtxCreate", [] { return cuCtxCreate_v4(&created, nullptr, 0xF000, 0); }, {{"flags", "0xF000"}}},
      {"cuCtxEnablePeerAccess", [ctx] { return cuCtxEnablePeerAccess(ctx, 7); }, {{"flags", "7"}}},
      {"cuMemGetAllocationGranularity",
       [] { return cuMemGetAllocationGranularity(&gran, &fabricProp, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED); },
       {{"option", "CU_MEM_ALLOC_GRANULARITY_RECOMMENDED"}, {"handleTypes", "CU_MEM_HANDLE_TYPE_FABRIC"}}},
      {"cuMemCreate", [] { return cuMemCreate(&h, 3 * kMiB, &posixProp, 0); },
       {{"size", "3MiB"}, {"handleTypes", "CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR"}, {"flags", "0"}}},
      {"cuMemAddressReserve", [] { return cuMemAddressReserve(&va, 3 * kMiB, 4 * kMiB, 0, 0); },
       {{"size", "3MiB"}, {"alignment", "4MiB"}, {"addr", "0"}, {"flags", "0"}}},
      {"cuMemAddressFree", [] { return cuMemAddressFree(0x1234, 2 * kMiB); }, {{"ptr", "0x1234"}, {"size", "2MiB"}}},
      {"cuMemMap", [] { return cuMemMap(0x2000, 2 * kMiB, 0x10, 0, 0); },
       {{"ptr", "0x2000"}, {"size", "2MiB"}, {"offset", "16"}, {"flags", "0"}}},
      {"cuMemUnmap", [] { return cuMemUnmap(0x1000, 4 * kMiB); }, {{"ptr", "4KiB"}, {"size", "4MiB"}}},
      {"cuMemSetAccess", [] { return cuMemSetAccess(0x3000, 2 * kMiB, &rw, 1); },
       {{"ptr", "0x3000"}, {"size", "2MiB"}, {"count", "1"}}},
      {"cuMemExportToShareableHandle",
       [] { return cuMemExportToShareableHandle(&iv, 0, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0); },
       {{"handleType", "CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR"}, {"flags", "0"}}},
      {"cuMemImportFromShareableHandle",
       [] { return cuMemImportFromShareableHandle(nullptr, nullptr, CU_MEM_HANDLE_TYPE_FABRIC); },
       {{"handleType", "CU_MEM_HANDLE_TYPE_FABRIC"}}},
      {"cuMulticastGetGranularity", [] { return cuMulticastGetGranularity(&gran, &mp, CU_MULTICAST_GRANULARITY_MINIMUM); },
       {{"size", "6MiB"}, {"numDevices", "4"}, {"handleTypes", "1"}, {"option", "CU_MULTICAST_GRANULARITY_MINIMUM"}}},
      {"cuMulticastCreate", [] { return cuMulticastCreate(&h, &badMp); },
       {{"size", "3MiB"}, {"numDevices", "4"}, {"handleTypes", "1"}, {"flags", "0"}}},
      {"cuMulticastBindMem", [] { return cuMulticastBindMem(0, 2 * kMiB, 0, 4 * kMiB, kMiB, 0); },
       {{"mcOffset", "2MiB"}, {"memOffset", "4MiB"}, {"size", "1MiB"}, {"flags", "0"}}},
      {"cuMulticastBindMem", [] { return cuMulticastBindMem_v2(0, 1, 2 * kMiB, 0, 4 * kMiB, kMiB, 0); },
       {{"mcOffset", "2MiB"}, {"memOffset", "4MiB"}, {"size", "1MiB"}, {"flags", "0"}}},
      {"cuMulticastBindAddr", [] { return cuMulticastBindAddr(0, 4 * kMiB, 0x5000, kMiB, 0); },
       {{"mcOffset", "4MiB"}, {"ptr", "0x5000"}, {"size", "1MiB"}, {"flags", "0"}}},
      {"cuMulticastBindAddr", [] { return cuMulticastBindAddr_v2(0, 2, 4 * kMiB, 0x5000, kMiB, 0); },
       {{"mcOffset", "4MiB"}, {"ptr", "0x5000"}, {"size", "1MiB"}, {"flags", "0"}}},
      {"cuMulticastUnbind", [] { return cuMulticastUnbind(0, 0, 2 * kMiB, kMiB); }, {{"mcOffset", "2MiB"}, {"size", "1MiB"}}},
  };
}

// For each argument of each row: a rule `ENTRY ARG=VALUE` fires (and changes nothing), and
// `ENTRY ARG!=VALUE` lets the call run (it then fails, or answers, by itself).
TEST_F(McTest, EveryTableArgumentReachesThePlanWithItsValue) {
  INIT();
  for (const Row& row : rows(ctx)) {
    for (const auto& [arg, value] : row.values) {
      const std::string filter = std::string(arg) + "=" + value;
      SCOPED_TRACE(std::string(row.entry) + " " + filter);
      ASSERT_EQ("", mcsim::api::installFaultPlan(std::string(row.entry) + " " + filter + " : always -> return CUDA_ERROR_ASSERT"));
      EXPECT_FAILS_CLEANLY(kInjected, row.call());
      ASSERT_EQ("", mcsim::api::installFaultPlan(std::string(row.entry) + " " + std::string(arg) + "!=" + value +
                                                 " : always -> return CUDA_ERROR_ASSERT"));
      EXPECT_NE(kInjected, row.call()) << "with " << arg << "!=" << value;
    }
  }
  EXPECT_TRUE(mcsim::api::initialized());  // a failing cuInit after a successful one changes nothing
}

// Every argument the table lists has a row above, so a new line in fault_arguments.def needs a test.
TEST(ArgumentTable, EveryListedArgumentIsTested) {
  std::set<std::string> tested;
  for (const Row& row : rows(nullptr)) {
    for (const auto& [arg, value] : row.values) tested.insert(std::string(row.entry) + " " + arg);
  }
  for (const auto& [entry, specs] : mcsim::fabric::faultArgumentTable()) {
    EXPECT_FALSE(specs.empty()) << entry;
    for (const auto& s : specs) EXPECT_EQ(1u, tested.count(entry + " " + s.name)) << entry << " " << s.name << " has no row";
  }
}

// docs/faults.md lists every entry point of the table with exactly its arguments.
TEST(ArgumentTable, TheUserDocumentationListsIt) {
  std::ifstream in(std::string(MCSIM_SOURCE_DIR) + "/docs/faults.md");
  std::map<std::string, std::string> rows;  // entry -> its row
  for (std::string line; std::getline(in, line);) {
    if (line.compare(0, 4, "| `c") != 0) continue;
    const auto end = line.find('`', 3);
    rows.emplace(line.substr(3, end - 3), line.substr(end));  // the first row: the argument table
  }
  for (const auto& [entry, specs] : mcsim::fabric::faultArgumentTable()) {
    ASSERT_EQ(1u, rows.count(entry)) << entry << " has no row in docs/faults.md";
    const std::string& row = rows[entry];
    for (const auto& a : specs) EXPECT_NE(std::string::npos, row.find("`" + a.name + "`")) << entry << " " << a.name;
  }
}

// --- How filters select calls -------------------------------------------------------------------

// The field report "slots run out for large buffers only": binds of 64 MiB or more fail, smaller
// ones go through; a prefix rule applies a filter to every member of the family that reports it.
TEST_F(McTest, FiltersSelectCallsByTheirArguments) {
  INIT();
  const Snapshot base = Snapshot::now();
  CUmemGenericAllocationHandle mem = makeMem(0, 64 * kMiB);
  CUmemGenericAllocationHandle mc = makeTeam({0}, 64 * kMiB);
  ASSERT_EQ("", mcsim::api::installFaultPlan("cuMulticastBindMem size>=32MiB : always -> return CUDA_ERROR_OUT_OF_MEMORY"));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_OUT_OF_MEMORY, cuMulticastBindMem(mc, 0, mem, 0, 64 * kMiB, 0));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_OUT_OF_MEMORY, cuMulticastBindMem(mc, 0, mem, 0, 32 * kMiB, 0));
  EXPECT_OK(cuMulticastBindMem(mc, 0, mem, 0, 16 * kMiB, 0));
  EXPECT_OK(cuMulticastUnbind(mc, 0, 0, 16 * kMiB));
  // Lists, != and & .
  ASSERT_EQ("", mcsim::api::installFaultPlan("cuMulticastCreate numDevices=2,4 : always -> return CUDA_ERROR_NOT_SUPPORTED\n"
                                             "cuMemCreate handleTypes&CU_MEM_HANDLE_TYPE_FABRIC : always -> return CUDA_ERROR_NOT_PERMITTED\n"
                                             "cuMemAddressReserve alignment!=0 : always -> return CUDA_ERROR_OUT_OF_MEMORY"));
  CUmemGenericAllocationHandle h = 0;
  for (unsigned n : {1u, 2u, 3u, 4u, 8u}) {
    CUmulticastObjectProp p = mcProp(n, kMin);
    SCOPED_TRACE(n);
    if (n == 2 || n == 4) {
      EXPECT_FAILS_CLEANLY(CUDA_ERROR_NOT_SUPPORTED, cuMulticastCreate(&h, &p));
    } else {
      ASSERT_OK(cuMulticastCreate(&h, &p)) << n;
      EXPECT_OK(cuMemRelease(h));
    }
  }
  CUmemAllocationProp both = devicePinned(1, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR | CU_MEM_HANDLE_TYPE_FABRIC);
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_NOT_PERMITTED, cuMemCreate(&h, kMin, &both, 0));
  CUmemAllocationProp posix = devicePinned(1, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  ASSERT_OK(cuMemCreate(&h, kMin, &posix, 0));
  EXPECT_OK(cuMemRelease(h));
  CUdeviceptr va = 0;
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_OUT_OF_MEMORY, cuMemAddressReserve(&va, kMin, 4 * kMiB, 0, 0));
  ASSERT_OK(cuMemAddressReserve(&va, kMin, 0, 0, 0));
  EXPECT_OK(cuMemAddressFree(va, kMin));
  // A prefix: calls of the family that report `size` are filtered by it; those that do not report
  // it (cuMulticastAddDevice) never match.
  ASSERT_EQ("", mcsim::api::installFaultPlan("cuMulticast* size=2MiB : always -> return CUDA_ERROR_ILLEGAL_STATE"));
  CUmulticastObjectProp small = mcProp(2, kMin), large = mcProp(2, 4 * kMiB);
  size_t gran = 0;
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_ILLEGAL_STATE, cuMulticastCreate(&h, &small));
  EXPECT_CU(CUDA_ERROR_ILLEGAL_STATE, cuMulticastGetGranularity(&gran, &small, CU_MULTICAST_GRANULARITY_MINIMUM));
  ASSERT_OK(cuMulticastCreate(&h, &large));
  EXPECT_OK(cuMulticastAddDevice(h, 0));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_ILLEGAL_STATE, cuMulticastUnbind(h, 0, 0, kMin));
  EXPECT_OK(cuMemRelease(h));
  mcsim::api::installFaultPlan("");
  EXPECT_OK(cuMemRelease(mc));
  EXPECT_OK(cuMemRelease(mem));
  expectNothingLeaked(base);
}

// A struct the call was not given has no fields: a filter on one does not match (and reading it
// does not crash); the call then fails by itself.
TEST_F(McTest, FieldsOfAMissingStructMatchNoFilter) {
  INIT();
  ASSERT_EQ("", mcsim::api::installFaultPlan("cuMulticastCreate size!=12345 : always -> return CUDA_ERROR_ASSERT\n"
                                             "cuMemCreate handleTypes=0 : always -> return CUDA_ERROR_ASSERT\n"
                                             "cuMulticastGetGranularity option=0 : always -> return CUDA_ERROR_UNKNOWN"));
  CUmemGenericAllocationHandle h = 0;
  size_t gran = 0;
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMulticastCreate(&h, nullptr));
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_INVALID_VALUE, cuMemCreate(&h, kMin, nullptr, 0));
  // Arguments passed by value are there whatever the struct: option=0 matches.
  EXPECT_CU(CUDA_ERROR_UNKNOWN, cuMulticastGetGranularity(&gran, nullptr, CU_MULTICAST_GRANULARITY_MINIMUM));
}

// Only the calls that pass a rule's filters count for its triggers: nth=2 is the second 2 MiB
// allocation, whatever came between.
TEST_F(McTest, OnlyFilteredCallsCountForTriggers) {
  INIT();
  const Snapshot base = Snapshot::now();
  ASSERT_EQ("", mcsim::api::installFaultPlan("cuMemCreate size=2MiB : nth=2 -> return CUDA_ERROR_OUT_OF_MEMORY"));
  std::vector<CUmemGenericAllocationHandle> made;
  std::vector<CUresult> results;
  for (size_t mib : {4, 2, 4, 4, 2, 2}) {
    CUmemGenericAllocationHandle h = 0;
    CUmemAllocationProp p = devicePinned(0);
    const uint64_t before = mcsim::api::stateDigest();
    const CUresult r = cuMemCreate(&h, mib * kMiB, &p, 0);
    results.push_back(r);
    if (r == CUDA_SUCCESS) made.push_back(h);
    else EXPECT_EQ(before, mcsim::api::stateDigest());
  }
  EXPECT_EQ((std::vector<CUresult>{CUDA_SUCCESS, CUDA_SUCCESS, CUDA_SUCCESS, CUDA_SUCCESS, CUDA_ERROR_OUT_OF_MEMORY,
                                   CUDA_SUCCESS}),
            results);
  EXPECT_EQ(3u, ruleReport("size=2MiB").matched);
  for (auto h : made) EXPECT_OK(cuMemRelease(h));
  expectNothingLeaked(base);
}

// cuMemCreate's device is the device it allocates on (its prop.location), for device= filters.
TEST_F(McTest, MemCreateDeviceIsTheAllocationsDevice) {
  INIT();
  ASSERT_EQ("", mcsim::api::installFaultPlan("cuMemCreate device=5 : always -> return CUDA_ERROR_OUT_OF_MEMORY"));
  CUmemGenericAllocationHandle h = 0;
  CUmemAllocationProp on5 = devicePinned(5), on0 = devicePinned(0);
  EXPECT_FAILS_CLEANLY(CUDA_ERROR_OUT_OF_MEMORY, cuMemCreate(&h, kMin, &on5, 0));  // device 0's context is current
  ASSERT_OK(cuMemCreate(&h, kMin, &on0, 0));
  EXPECT_OK(cuMemRelease(h));
}

}  // namespace
