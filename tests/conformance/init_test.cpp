// Before cuInit, cuInit's flags, the driver version, and every error name and string. Every TEST
// runs in a process of its own (ctest), so the PreInit cases really run before any cuInit.
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "tests/conformance/conformance.h"

namespace {

using conformance::libcudaSymbol;

// probe: preinit.cuDriverGetVersion, dev.cuDriverGetVersion
TEST(PreInit, DriverVersionAnswersBeforeInit) {
  int v = -12345;
  EXPECT_CU(CUDA_SUCCESS, cuDriverGetVersion(&v));
  EXPECT_EQ(13000, v);
}

// probe: preinit.cuDeviceGetCount, preinit.cuDeviceGet, preinit.cuCtxGetCurrent
TEST(PreInit, DeviceAndContextCallsAnswerNotInitialized) {
  int n = -12345;
  EXPECT_CU(CUDA_ERROR_NOT_INITIALIZED, cuDeviceGetCount(&n));
  EXPECT_EQ(-12345, n);
  CUdevice d = -12345;
  EXPECT_CU(CUDA_ERROR_NOT_INITIALIZED, cuDeviceGet(&d, 0));
  EXPECT_EQ(-12345, d);
  CUcontext c = reinterpret_cast<CUcontext>(uintptr_t{0xdeadbeef});
  EXPECT_CU(CUDA_ERROR_NOT_INITIALIZED, cuCtxGetCurrent(&c));
  EXPECT_EQ(reinterpret_cast<CUcontext>(uintptr_t{0xdeadbeef}), c);
}

// probe: preinit.cuGetErrorName.0, preinit.cuGetErrorString.0, preinit.cuGetErrorName.3
TEST(PreInit, ErrorNamesAndStringsAnswerBeforeInit) {
  const char* s = nullptr;
  EXPECT_CU(CUDA_SUCCESS, cuGetErrorName(CUDA_SUCCESS, &s));
  ASSERT_NE(nullptr, s);
  EXPECT_STREQ("CUDA_SUCCESS", s);
  s = nullptr;
  EXPECT_CU(CUDA_SUCCESS, cuGetErrorString(CUDA_SUCCESS, &s));
  ASSERT_NE(nullptr, s);
  EXPECT_STREQ("no error", s);
  s = nullptr;
  EXPECT_CU(CUDA_SUCCESS, cuGetErrorName(CUDA_ERROR_NOT_INITIALIZED, &s));
  ASSERT_NE(nullptr, s);
  EXPECT_STREQ("CUDA_ERROR_NOT_INITIALIZED", s);
}

// probe: preinit.cuGetProcAddress_v2.cuInit.13000, preinit.cuGetProcAddress_v2.cuMemAlloc.13000,
// preinit.cuGetProcAddress_v2.cuNotAThing.13000, null.gpa_preinit_null_status
TEST(PreInit, GetProcAddressAnswersBeforeInit) {
  void* pfn = nullptr;
  auto st = static_cast<CUdriverProcAddressQueryResult>(77);
  EXPECT_CU(CUDA_SUCCESS, cuGetProcAddress_v2("cuInit", &pfn, 13000, 0, &st));
  EXPECT_EQ(CU_GET_PROC_ADDRESS_SUCCESS, st);
  EXPECT_EQ(libcudaSymbol("cuInit"), pfn);
  pfn = nullptr;
  st = static_cast<CUdriverProcAddressQueryResult>(77);
  EXPECT_CU(CUDA_SUCCESS, cuGetProcAddress_v2("cuMemAlloc", &pfn, 13000, 0, &st));
  EXPECT_EQ(CU_GET_PROC_ADDRESS_SUCCESS, st);
  EXPECT_EQ(libcudaSymbol("cuMemAlloc_v2"), pfn);
  pfn = reinterpret_cast<void*>(uintptr_t{1});
  st = static_cast<CUdriverProcAddressQueryResult>(77);
  EXPECT_CU(CUDA_SUCCESS, cuGetProcAddress_v2("cuNotAThing", &pfn, 13000, 0, &st));
  EXPECT_EQ(CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND, st);
  EXPECT_EQ(nullptr, pfn);
  // A NULL status pointer is allowed.
  pfn = nullptr;
  EXPECT_CU(CUDA_SUCCESS, cuGetProcAddress_v2("cuInit", &pfn, 13000, 0, nullptr));
  EXPECT_EQ(libcudaSymbol("cuInit"), pfn);
}

// probe: preinit.cuInit.flags1_before_any_init, preinit.cuDeviceGetCount.after_failed_init,
// preinit.cuInit.flags0, preinit.cuInit.flags0_again, preinit.cuInit.flags1_after_init,
// preinit.cuInit.flagsFFFFFFFF_after_init, preinit.cuDeviceGetCount.after_init,
// preinit.cuCtxGetCurrent.after_init
TEST(Init, FlagsMustBeZeroBeforeAndAfterInit) {
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuInit(1));
  int n = -12345;
  EXPECT_CU(CUDA_ERROR_NOT_INITIALIZED, cuDeviceGetCount(&n));
  EXPECT_EQ(-12345, n);
  EXPECT_CU(CUDA_SUCCESS, cuInit(0));
  EXPECT_CU(CUDA_SUCCESS, cuInit(0));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuInit(1));
  EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuInit(0xFFFFFFFFu));
  n = -12345;
  EXPECT_CU(CUDA_SUCCESS, cuDeviceGetCount(&n));
  EXPECT_GE(n, 1);
  CUcontext c = reinterpret_cast<CUcontext>(uintptr_t{0xdeadbeef});
  EXPECT_CU(CUDA_SUCCESS, cuCtxGetCurrent(&c));
  EXPECT_EQ(nullptr, c);
}

// probe: dev.cuInit, dev.cuDriverGetVersion (after init the version is unchanged)
TEST(Init, DriverVersionAfterInit) {
  ASSERT_OK(cuInit(0));
  int v = -1;
  EXPECT_CU(CUDA_SUCCESS, cuDriverGetVersion(&v));
  EXPECT_EQ(13000, v);
}

// probe: null.drvver
TEST(Init, DriverVersionNullOut) { EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuDriverGetVersion(nullptr)); }

// edge probe (docs/real-driver/edge-probe-h100-2026-11-25.txt): fork.child.*, fork.parent.*.
// A child forked without exec after cuInit gets NOT_INITIALIZED from every call, cuInit too, at
// once; the parent carries on. The child reports its answers through a pipe and leaves with
// _exit, as a child of a threaded process must.
TEST(Init, AChildForkedAfterInitIsNotInitialized) {
  ASSERT_CU(CUDA_SUCCESS, cuInit(0));
  CUdevice dev = 0;
  CUcontext ctx = nullptr;
  ASSERT_CU(CUDA_SUCCESS, cuDeviceGet(&dev, 0));
  ASSERT_CU(CUDA_SUCCESS, cuDevicePrimaryCtxRetain(&ctx, dev));
  ASSERT_CU(CUDA_SUCCESS, cuCtxSetCurrent(ctx));
  CUdeviceptr d = 0;
  ASSERT_CU(CUDA_SUCCESS, cuMemAlloc(&d, 1 << 20));
  int fds[2];
  ASSERT_EQ(0, pipe(fds));
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    char host[64] = {};
    CUdeviceptr d2 = 0;
    int count = -1;
    CUcontext current = nullptr;
    const int answers[] = {
        static_cast<int>(cuInit(0)),
        static_cast<int>(cuDeviceGetCount(&count)),
        static_cast<int>(cuCtxGetCurrent(&current)),
        static_cast<int>(cuMemcpyHtoD(d, host, sizeof host)),
        static_cast<int>(cuMemAlloc(&d2, 1 << 20)),
        static_cast<int>(cuCtxSynchronize()),
    };
    const ssize_t n = write(fds[1], answers, sizeof answers);
    _exit(n == static_cast<ssize_t>(sizeof answers) ? 0 : 1);
  }
  close(fds[1]);
  int answers[6] = {};
  size_t got = 0;
  while (got < sizeof answers) {
    const ssize_t n = read(fds[0], reinterpret_cast<char*>(answers) + got, sizeof answers - got);
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  close(fds[0]);
  int status = 0;
  ASSERT_EQ(child, waitpid(child, &status, 0));
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the child did not finish its calls";
  ASSERT_EQ(sizeof answers, got);
  const char* const calls[] = {"cuInit", "cuDeviceGetCount", "cuCtxGetCurrent", "cuMemcpyHtoD", "cuMemAlloc",
                               "cuCtxSynchronize"};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(CUDA_ERROR_NOT_INITIALIZED, answers[i]) << "the child's " << calls[i];
  const char host[64] = {};
  EXPECT_CU(CUDA_SUCCESS, cuMemcpyHtoD(d, host, sizeof host));
  EXPECT_CU(CUDA_SUCCESS, cuMemFree(d));
  EXPECT_CU(CUDA_SUCCESS, cuDevicePrimaryCtxRelease(dev));
}

struct ResultText {
  int code;
  const char* name;
  const char* text;
};

// Every CUresult cuda.h 13.0 defines, with the name and string the real driver returned.
const ResultText kResults[] = {
    {0, "CUDA_SUCCESS", "no error"},
    {1, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {2, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {3, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {4, "CUDA_ERROR_DEINITIALIZED", "driver shutting down"},
    {5, "CUDA_ERROR_PROFILER_DISABLED", "profiler disabled while using external profiling tool"},
    {6, "CUDA_ERROR_PROFILER_NOT_INITIALIZED", "profiler not initialized: call cudaProfilerInitialize()"},
    {7, "CUDA_ERROR_PROFILER_ALREADY_STARTED", "profiler already started"},
    {8, "CUDA_ERROR_PROFILER_ALREADY_STOPPED", "profiler already stopped"},
    {34, "CUDA_ERROR_STUB_LIBRARY", "CUDA driver is a stub library"},
    {36, "CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER", "API call is not supported in the installed CUDA driver"},
    {46, "CUDA_ERROR_DEVICE_UNAVAILABLE", "CUDA-capable device(s) is/are busy or unavailable"},
    {100, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {101, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {102, "CUDA_ERROR_DEVICE_NOT_LICENSED", "device doesn't have valid Grid license"},
    {200, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
    {201, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {202, "CUDA_ERROR_CONTEXT_ALREADY_CURRENT", "context already current"},
    {205, "CUDA_ERROR_MAP_FAILED", "mapping of buffer object failed"},
    {206, "CUDA_ERROR_UNMAP_FAILED", "unmapping of buffer object failed"},
    {207, "CUDA_ERROR_ARRAY_IS_MAPPED", "array is mapped"},
    {208, "CUDA_ERROR_ALREADY_MAPPED", "resource already mapped"},
    {209, "CUDA_ERROR_NO_BINARY_FOR_GPU", "no kernel image is available for execution on the device"},
    {210, "CUDA_ERROR_ALREADY_ACQUIRED", "resource already acquired"},
    {211, "CUDA_ERROR_NOT_MAPPED", "resource not mapped"},
    {212, "CUDA_ERROR_NOT_MAPPED_AS_ARRAY", "resource not mapped as array"},
    {213, "CUDA_ERROR_NOT_MAPPED_AS_POINTER", "resource not mapped as pointer"},
    {214, "CUDA_ERROR_ECC_UNCORRECTABLE", "uncorrectable ECC error encountered"},
    {215, "CUDA_ERROR_UNSUPPORTED_LIMIT", "limit is not supported on this architecture"},
    {216, "CUDA_ERROR_CONTEXT_ALREADY_IN_USE", "exclusive-thread device already in use by a different thread"},
    {217, "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED", "peer access is not supported between these two devices"},
    {218, "CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed"},
    {219, "CUDA_ERROR_INVALID_GRAPHICS_CONTEXT", "invalid OpenGL or DirectX context"},
    {220, "CUDA_ERROR_NVLINK_UNCORRECTABLE", "uncorrectable NVLink error detected during the execution"},
    {221, "CUDA_ERROR_JIT_COMPILER_NOT_FOUND", "PTX JIT compiler library not found"},
    {222, "CUDA_ERROR_UNSUPPORTED_PTX_VERSION", "the provided PTX was compiled with an unsupported toolchain."},
    {223, "CUDA_ERROR_JIT_COMPILATION_DISABLED", "PTX JIT compilation was disabled"},
    {224, "CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY", "the provided execution affinity is not supported"},
    {225, "CUDA_ERROR_UNSUPPORTED_DEVSIDE_SYNC", "the provided PTX contains unsupported call to cudaDeviceSynchronize"},
    {226, "CUDA_ERROR_CONTAINED", "Invalid access of peer GPU memory over nvlink or a hardware error"},
    {300, "CUDA_ERROR_INVALID_SOURCE", "device kernel image is invalid"},
    {301, "CUDA_ERROR_FILE_NOT_FOUND", "file not found"},
    {302, "CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND", "shared object symbol not found"},
    {303, "CUDA_ERROR_SHARED_OBJECT_INIT_FAILED", "shared object initialization failed"},
    {304, "CUDA_ERROR_OPERATING_SYSTEM", "OS call failed or operation not supported on this OS"},
    {400, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {401, "CUDA_ERROR_ILLEGAL_STATE", "the operation cannot be performed in the present state"},
    {402, "CUDA_ERROR_LOSSY_QUERY", "attempted introspection would be semantically lossy"},
    {500, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {600, "CUDA_ERROR_NOT_READY", "device not ready"},
    {700, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"},
    {701, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", "too many resources requested for launch"},
    {702, "CUDA_ERROR_LAUNCH_TIMEOUT", "the launch timed out and was terminated"},
    {703, "CUDA_ERROR_LAUNCH_INCOMPATIBLE_TEXTURING", "launch uses incompatible texturing mode"},
    {704, "CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED", "peer access is already enabled"},
    {705, "CUDA_ERROR_PEER_ACCESS_NOT_ENABLED", "peer access has not been enabled"},
    {708, "CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE", "cannot set while device is active in this process"},
    {709, "CUDA_ERROR_CONTEXT_IS_DESTROYED", "context is destroyed"},
    {710, "CUDA_ERROR_ASSERT", "device-side assert triggered"},
    {711, "CUDA_ERROR_TOO_MANY_PEERS", "peer mapping resources exhausted"},
    {712, "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED", "part or all of the requested memory range is already mapped"},
    {713, "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED", "pointer does not correspond to a registered memory region"},
    {714, "CUDA_ERROR_HARDWARE_STACK_ERROR", "hardware stack error"},
    {715, "CUDA_ERROR_ILLEGAL_INSTRUCTION", "an illegal instruction was encountered"},
    {716, "CUDA_ERROR_MISALIGNED_ADDRESS", "misaligned address"},
    {717, "CUDA_ERROR_INVALID_ADDRESS_SPACE", "operation not supported on global/shared address space"},
    {718, "CUDA_ERROR_INVALID_PC", "invalid program counter"},
    {719, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
    {720, "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE", "too many blocks in cooperative launch"},
    {721, "CUDA_ERROR_TENSOR_MEMORY_LEAK", "tensor memory not completely freed"},
    {800, "CUDA_ERROR_NOT_PERMITTED", "operation not permitted"},
    {801, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
    {802, "CUDA_ERROR_SYSTEM_NOT_READY", "system not yet initialized"},
    {803, "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH", "system has unsupported display driver / cuda driver combination"},
    {804, "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE", "forward compatibility was attempted on non supported HW"},
    {805, "CUDA_ERROR_MPS_CONNECTION_FAILED", "MPS client failed to connect to the MPS control daemon or the MPS server"},
    {806, "CUDA_ERROR_MPS_RPC_FAILURE", "the remote procedural call between the MPS server and the MPS client failed"},
    {807, "CUDA_ERROR_MPS_SERVER_NOT_READY", "MPS server is not ready to accept new MPS client requests"},
    {808, "CUDA_ERROR_MPS_MAX_CLIENTS_REACHED", "the hardware resources required to create MPS client have been exhausted"},
    {809, "CUDA_ERROR_MPS_MAX_CONNECTIONS_REACHED", "the hardware resources required to support device connections have been exhausted"},
    {810, "CUDA_ERROR_MPS_CLIENT_TERMINATED", "the MPS client has been terminated by the server"},
    {811, "CUDA_ERROR_CDP_NOT_SUPPORTED", "is using CUDA Dynamic Parallelism, but the current configuration, like MPS, does not support it"},
    {812, "CUDA_ERROR_CDP_VERSION_MISMATCH", "unsupported interaction between different versions of CUDA Dynamic Parallelism"},
    {900, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED", "operation not permitted when stream is capturing"},
    {901, "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED", "operation failed due to a previous error during capture"},
    {902, "CUDA_ERROR_STREAM_CAPTURE_MERGE", "operation would result in a merge of separate capture sequences"},
    {903, "CUDA_ERROR_STREAM_CAPTURE_UNMATCHED", "capture was not ended in the same stream as it began"},
    {904, "CUDA_ERROR_STREAM_CAPTURE_UNJOINED", "capturing stream has unjoined work"},
    {905, "CUDA_ERROR_STREAM_CAPTURE_ISOLATION", "dependency created on uncaptured work in another stream"},
    {906, "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT", "operation would make the legacy stream depend on a capturing blocking stream"},
    {907, "CUDA_ERROR_CAPTURED_EVENT", "operation not permitted on an event last recorded in a capturing stream"},
    {908, "CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD", "attempt to terminate a thread-local capture sequence from another thread"},
    {909, "CUDA_ERROR_TIMEOUT", "wait operation timed out"},
    {910, "CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE", "the graph update was not performed because it included changes which violated constraints specific to instantiated graph update"},
    {911, "CUDA_ERROR_EXTERNAL_DEVICE", "an async error has occured in external entity outside of CUDA"},
    {912, "CUDA_ERROR_INVALID_CLUSTER_SIZE", "a kernel launch error has occurred due to cluster misconfiguration"},
    {913, "CUDA_ERROR_FUNCTION_NOT_LOADED", "the function handle is not loaded when calling an API that requires a loaded function"},
    {914, "CUDA_ERROR_INVALID_RESOURCE_TYPE", "one or more resources passed in are not valid resource types for the operation"},
    {915, "CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION", "one or more resources are insufficient or non-applicable for the operation"},
    {916, "CUDA_ERROR_KEY_ROTATION", "an error happened during the key rotation sequence"},
    {999, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

// probe: errname.*, errstr.* (every code cuda.h defines)
TEST(ErrorStrings, EveryCodeHasTheRealNameAndString) {
  ASSERT_OK(cuInit(0));
  for (const ResultText& r : kResults) {
    const char* s = reinterpret_cast<const char*>(uintptr_t{1});
    EXPECT_CU(CUDA_SUCCESS, cuGetErrorName(static_cast<CUresult>(r.code), &s)) << r.code;
    ASSERT_NE(nullptr, s) << r.code;
    EXPECT_STREQ(r.name, s) << r.code;
    s = reinterpret_cast<const char*>(uintptr_t{1});
    EXPECT_CU(CUDA_SUCCESS, cuGetErrorString(static_cast<CUresult>(r.code), &s)) << r.code;
    ASSERT_NE(nullptr, s) << r.code;
    EXPECT_STREQ(r.text, s) << r.code;
  }
}

// probe: errname.9999, errstr.9999, errname.-1, errstr.-1, errname.10, errstr.10
TEST(ErrorStrings, UnknownCodesAreInvalidValueWithNullString) {
  ASSERT_OK(cuInit(0));
  for (int code : {9999, -1, 10}) {
    const char* s = reinterpret_cast<const char*>(uintptr_t{1});
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuGetErrorName(static_cast<CUresult>(code), &s)) << code;
    EXPECT_EQ(nullptr, s) << code;
    s = reinterpret_cast<const char*>(uintptr_t{1});
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuGetErrorString(static_cast<CUresult>(code), &s)) << code;
    EXPECT_EQ(nullptr, s) << code;
  }
}

}  // namespace
