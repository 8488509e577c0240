// The private tables the CUDA runtime asks cuGetExportTable for (docs/runtime.md, "The private
// tables"): which are given and when, their size slots, the context-local storage's answers and its
// destructors at a primary context reset, the runtime interface's primary context, and the
// integrity check's fixed answers. The answers are the real driver's (real-driver/
// runtime-h100-2026-11-25-export-tables.txt); the runtime programs of tests/runtime use them all.
#include <cuda.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

namespace {

CUuuid uuidOf(std::initializer_list<uint8_t> bytes) {
  CUuuid u{};
  size_t i = 0;
  for (uint8_t b : bytes) u.bytes[i++] = static_cast<char>(b);
  return u;
}

const CUuuid kRuntimeInterface = uuidOf({0x6b, 0xd5, 0xfb, 0x6c, 0x5b, 0xf4, 0xe7, 0x4a, 0x89, 0x87, 0xd9, 0x39, 0x12, 0xfd, 0x9d, 0xf9});
const CUuuid kContextStorage = uuidOf({0xc6, 0x93, 0x33, 0x6e, 0x11, 0x21, 0xdf, 0x11, 0xa8, 0xc3, 0x68, 0xf3, 0x55, 0xd8, 0x95, 0x93});
const CUuuid kIntegrity = uuidOf({0xd4, 0x08, 0x20, 0x55, 0xbd, 0xe6, 0x70, 0x4b, 0x8d, 0x34, 0xba, 0x12, 0x3c, 0x66, 0xe1, 0xf2});
// The one CUDA 13.0's runtime asks for first and does without.
const CUuuid kRefused = uuidOf({0xf8, 0xcf, 0xf9, 0x51, 0x21, 0x46, 0x8b, 0x4e, 0xb9, 0xe2, 0xfb, 0x46, 0x9e, 0x7c, 0x0d, 0xd9});

using Destructor = void (*)(CUcontext, void*, void*);
using Put = CUresult (*)(CUcontext, void*, void*, Destructor);
using Delete = CUresult (*)(CUcontext, void*);
using Get = CUresult (*)(void**, CUcontext, void*);

const void* const* table(const CUuuid& id) {
  const void* t = nullptr;
  EXPECT_EQ(CUDA_SUCCESS, cuGetExportTable(&t, &id));
  return static_cast<const void* const*>(t);
}

// First in its process (ctest runs each test alone): the tables are given before cuInit.
TEST(ExportTables, GivenBeforeInitAndUnknownOnesRefused) {
  const void* t = nullptr;
  ASSERT_EQ(CUDA_SUCCESS, cuGetExportTable(&t, &kRuntimeInterface));
  const auto* slots = static_cast<const void* const*>(t);
  EXPECT_EQ(13 * sizeof(void*), reinterpret_cast<uintptr_t>(slots[0])) << "slot 0 holds the table's size";
  const void* again = nullptr;
  ASSERT_EQ(CUDA_SUCCESS, cuGetExportTable(&again, &kRuntimeInterface));
  EXPECT_EQ(t, again) << "one table for every runtime of the process";
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuGetExportTable(&t, &kRefused));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuGetExportTable(nullptr, &kRuntimeInterface));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, cuGetExportTable(&t, nullptr));
}

struct Destroyed {
  CUcontext ctx;
  void* key;
  void* value;
  CUresult freeInIt;  // the context still works while its destructors run
};
std::vector<Destroyed> gDestroyed;
CUdeviceptr gMadeInContext = 0;

void CUDAAPI recordDestruction(CUcontext ctx, void* key, void* value) {
  CUresult r = CUDA_SUCCESS;
  if (gMadeInContext != 0) {
    r = cuMemFree(gMadeInContext);
    gMadeInContext = 0;
  }
  gDestroyed.push_back(Destroyed{ctx, key, value, r});
}

TEST(ExportTables, ContextLocalStorageAnswersAsTheRealDriver) {
  ASSERT_EQ(CUDA_SUCCESS, cuInit(0));
  const void* const* cls = table(kContextStorage);
  const auto put = reinterpret_cast<Put>(cls[0]);
  const auto del = reinterpret_cast<Delete>(cls[1]);
  const auto get = reinterpret_cast<Get>(cls[2]);
  int keyA = 0, keyB = 0, keyC = 0;
  void* value = nullptr;
  // No context current, none named.
  EXPECT_EQ(CUDA_ERROR_INVALID_CONTEXT, get(&value, nullptr, &keyA));
  CUcontext ctx = nullptr;
  ASSERT_EQ(CUDA_SUCCESS, cuDevicePrimaryCtxRetain(&ctx, 0));
  ASSERT_EQ(CUDA_SUCCESS, cuCtxSetCurrent(ctx));
  EXPECT_EQ(CUDA_ERROR_INVALID_HANDLE, get(&value, ctx, &keyA)) << "a key not present";
  ASSERT_EQ(CUDA_SUCCESS, put(ctx, &keyA, reinterpret_cast<void*>(0xa), recordDestruction));
  EXPECT_EQ(CUDA_ERROR_INVALID_HANDLE, put(ctx, &keyA, reinterpret_cast<void*>(0xbad), recordDestruction));
  ASSERT_EQ(CUDA_SUCCESS, get(&value, nullptr, &keyA)) << "NULL is the current context";
  EXPECT_EQ(reinterpret_cast<void*>(0xa), value) << "the first value stays";
  // Delete removes without calling the destructor.
  ASSERT_EQ(CUDA_SUCCESS, put(nullptr, &keyC, reinterpret_cast<void*>(0xc), recordDestruction));
  EXPECT_EQ(CUDA_SUCCESS, del(ctx, &keyC));
  EXPECT_EQ(CUDA_ERROR_INVALID_HANDLE, del(ctx, &keyC));
  EXPECT_EQ(CUDA_ERROR_INVALID_HANDLE, get(&value, ctx, &keyC));
  EXPECT_TRUE(gDestroyed.empty());
  // At the reset the destructors run, last put first, while the context still works.
  ASSERT_EQ(CUDA_SUCCESS, put(ctx, &keyB, reinterpret_cast<void*>(0xb), recordDestruction));
  ASSERT_EQ(CUDA_SUCCESS, cuMemAlloc(&gMadeInContext, 4096));
  ASSERT_EQ(CUDA_SUCCESS, cuDevicePrimaryCtxReset(0));
  ASSERT_EQ(2u, gDestroyed.size());
  EXPECT_EQ(&keyB, gDestroyed[0].key);
  EXPECT_EQ(reinterpret_cast<void*>(0xb), gDestroyed[0].value);
  EXPECT_EQ(ctx, gDestroyed[0].ctx);
  EXPECT_EQ(CUDA_SUCCESS, gDestroyed[0].freeInIt) << "cuMemFree in a destructor";
  EXPECT_EQ(&keyA, gDestroyed[1].key);
  EXPECT_EQ(reinterpret_cast<void*>(0xa), gDestroyed[1].value);
  // The entries went with the context.
  CUcontext again = nullptr;
  ASSERT_EQ(CUDA_SUCCESS, cuDevicePrimaryCtxRetain(&again, 0));
  ASSERT_EQ(CUDA_SUCCESS, cuCtxSetCurrent(again));
  EXPECT_EQ(CUDA_ERROR_INVALID_HANDLE, get(&value, again, &keyA));
  EXPECT_EQ(CUDA_SUCCESS, cuDevicePrimaryCtxRelease(0));
}

// Runtime interface slot 2: the device's primary context object, neither retained nor made
// active (the runtime retains it itself).
TEST(ExportTables, RuntimeInterfaceGivesThePrimaryContextUnretained) {
  ASSERT_EQ(CUDA_SUCCESS, cuInit(0));
  const auto primary = reinterpret_cast<CUresult (*)(CUcontext*, CUdevice)>(table(kRuntimeInterface)[2]);
  CUcontext ctx = nullptr;
  ASSERT_EQ(CUDA_SUCCESS, primary(&ctx, 0));
  EXPECT_NE(nullptr, ctx);
  unsigned flags = 0;
  int active = 1;
  ASSERT_EQ(CUDA_SUCCESS, cuDevicePrimaryCtxGetState(0, &flags, &active));
  EXPECT_EQ(0, active);
  CUcontext retained = nullptr;
  ASSERT_EQ(CUDA_SUCCESS, cuDevicePrimaryCtxRetain(&retained, 0));
  EXPECT_EQ(ctx, retained);
  EXPECT_EQ(CUDA_SUCCESS, cuDevicePrimaryCtxRelease(0));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, primary(nullptr, 0));
}

// Arguments ending in 0 and 1 get a constant answer: the real driver's for 13000 and 13001 (the
// H100's record); the CUDA 12.4 and 11.8 runtimes, whose arguments are 12040 and 11080, accept it
// (runtime.other_runtime.*).
TEST(ExportTables, IntegrityCheckConstantAnswers) {
  ASSERT_EQ(CUDA_SUCCESS, cuInit(0));
  const auto check = reinterpret_cast<CUresult (*)(unsigned, unsigned long long, uint8_t*)>(table(kIntegrity)[1]);
  const uint8_t constant[16] = {0x5c, 0x67, 0xcb, 0x03, 0x1c, 0x18, 0x41, 0x33,
                                0xe8, 0xd1, 0x4c, 0x1f, 0xaa, 0x83, 0xd3, 0x8e};
  uint8_t out[16] = {};
  for (unsigned arg : {13000u, 12040u, 11080u}) {
    ASSERT_EQ(CUDA_SUCCESS, check(arg, 1700000000ull, out));
    EXPECT_EQ(0, std::memcmp(out, constant, 16)) << arg;
  }
  ASSERT_EQ(CUDA_SUCCESS, check(13001, 1700000000ull, out));
  EXPECT_EQ(24, out[7]);
  out[7] = constant[7];
  EXPECT_EQ(0, std::memcmp(out, constant, 16));
  EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, check(13002, 0, nullptr));
}

}  // namespace
