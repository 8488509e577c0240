// What the trace layer knows about each driver entry point: one CallDesc per exported ABI variant,
// generated from driver/entry_points.def and traces/calls.def by traces/gen_wrappers.py. The
// recorder reads a call's arguments through it and the replayer calls the entry point through it.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>

namespace mcsim::trace {

// How a parameter travels in a 64-bit slot (and how a scalar is written in the trace).
enum class CType : uint8_t { kI32, kU32, kI64, kU64, kF32, kPtr };

// What a parameter means (docs/traces.md, "Argument kinds").
enum class Kind : uint8_t {
  kScalar,        // a number (sizes, flags, enums, device ordinals)
  kHandleIn,      // an object handle the call reads (sub: HandleKind)
  kHandleOut,     // an output handle that may name an object seen before
  kHandleNew,     // an output handle to a new object
  kAddrIn,        // a device address
  kAddrOut,       // an output device address (inside a known region, or a new unsized region)
  kAddrNew,       // an output device address that starts a new region of `ref` bytes
  kHostIn,        // a host buffer of `ref` bytes the call reads
  kHostOut,       // a host buffer of `ref` bytes the call writes
  kHostNew,       // an output pointer to a new pinned host region of `ref` bytes
  kHostPtr,       // a pointer into a pinned host region
  kStrIn,         // a C string
  kOutStr,        // an output C string of at most `ref` bytes
  kOutCStr,       // an output const char* (error strings)
  kOutScalar,     // an output number (sub: CType of the pointee)
  kOutBytes,      // an output of `sub` raw bytes (CUuuid)
  kStructIn,      // a descriptor the call reads (sub: StructKind)
  kStructOut,     // a descriptor the call writes
  kAccessDescs,   // `ref` CUmemAccessDesc
  kShareableOut,  // an OS handle written by the call, of handle type `ref` (no `ref`: an IPC handle)
  kShareableIn,   // an OS handle the call reads, of handle type `ref` (no `ref`: an IPC handle)
  kPtrAttr,       // the value of CUpointer_attribute `ref`
  kPtrAttrs,      // cuPointerGetAttributes' values: `ref` attributes listed by parameter `ref2`
  kPoolAttr,      // the value of CUmemPool_attribute `ref`
  kPfn,           // cuGetProcAddress's output function pointer (symbol in parameter `ref`)
  kAux,           // encoded with the parameter that refers to it
  kRaw,           // not described: recorded as a raw value and flagged
  kImage,         // a module image in memory (cubin, fatbin, fatbin wrapper, PTX text)
  kImageFile,     // the path of a module image file
  kOptions,       // JIT (sub 0) or library (sub 1) options: `ref` the count, `ref2` the values
  kHandleArray,   // an output array of `ref` handles (sub: HandleKind)
  kLaunchFunc,    // the function (or kernel) a launch runs; the record adds its name
  kKernelParams,  // a launch's kernelParams: pointers to each parameter (`ref`: the function)
  kKernelExtra,   // a launch's `extra` array (CU_LAUNCH_PARAM_BUFFER_POINTER form)
  kLaunchConfig,  // cuLaunchKernelEx's CUlaunchConfig
  kHostFn,        // a host function the call runs (cuLaunchHostFunc): a replay runs one that does nothing
};

enum class HandleKind : uint8_t { kNone, kCtx, kMem, kPool, kStream, kEvent, kModule, kFunction, kLibrary, kKernel, kOther };
enum class StructKind : uint8_t { kNone, kAllocProp, kLocation, kMcProp, kPoolProps };

struct ParamDesc {
  const char* name;
  CType ctype;
  Kind kind;
  uint8_t sub;
  int8_t ref;   // index of a related parameter (a count, a size, a handle type), or -1
  int8_t ref2;  // a second one, or -1
};

// The handle type of a shareable handle without a handle-type parameter: an IPC handle
// (CUipcMemHandle, CUipcEventHandle), 64 opaque bytes as a FABRIC handle is. No
// CUmemAllocationHandleType has this value.
constexpr uint64_t kIpcHandleType = ~uint64_t{0};
static_assert(sizeof(CUipcMemHandle) == sizeof(CUmemFabricHandle) && sizeof(CUipcEventHandle) == sizeof(CUmemFabricHandle),
              "IPC handles travel as FABRIC handles do: 64 bytes");
// The handle type of shareable parameter `p` of a call with arguments `slots`.
inline uint64_t shareableType(const ParamDesc& p, const uint64_t* slots) {
  return p.ref >= 0 ? slots[p.ref] : kIpcHandleType;
}

// Calls an entry point of this signature with the arguments held in 64-bit slots.
using Thunk = CUresult (*)(void* fn, const uint64_t* slots);

struct CallDesc {
  const char* symbol;  // the exported ABI symbol (cuMemAlloc_v2)
  const char* base;    // the API name (cuMemAlloc)
  int version;         // the CUDA version that introduced the variant
  int nparams;
  const ParamDesc* params;
  Thunk thunk;
  bool described;  // every parameter has a meaning (no kRaw)
};

const CallDesc* callTable();
size_t callCount();
// The index of `symbol` in the table, or -1.
int findCall(std::string_view symbol);

// Arguments to and from slots, so that one thunk type serves every signature.
template <typename T>
inline uint64_t toSlot(const T& v) {
  if constexpr (std::is_array_v<T>) {
    return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(&v[0]));  // as it decays
  } else if constexpr (std::is_pointer_v<T>) {
    return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(v));
  } else if constexpr (std::is_enum_v<T>) {
    return static_cast<uint64_t>(static_cast<std::underlying_type_t<T>>(v));
  } else if constexpr (std::is_class_v<T>) {
    // A struct by value (an IPC handle's 64 bytes) does not fit a slot: its address does, valid
    // while the wrapper that holds the argument runs.
    return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(&v));
  } else {
    return static_cast<uint64_t>(v);  // signed values sign-extend
  }
}
template <typename T>
inline T fromSlot(uint64_t s) {
  if constexpr (std::is_pointer_v<T>) {
    return reinterpret_cast<T>(static_cast<uintptr_t>(s));
  } else if constexpr (std::is_class_v<T>) {
    // A struct by value: the slot holds its address (zeros without one).
    return s == 0 ? T{} : *reinterpret_cast<const T*>(static_cast<uintptr_t>(s));
  } else {
    return static_cast<T>(s);
  }
}

}  // namespace mcsim::trace
