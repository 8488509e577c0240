// The codec of the structured argument kinds (codec_kernels.cpp): module images, JIT and library
// options, handle arrays, and launches (function, parameters, extra, CUlaunchConfig). Internal to
// the codec: codec.cpp dispatches to these from encodeInputs / encodeOutputs / decodeInputs.
#pragma once

#include <cstdint>
#include <string>

#include "traces/lib/codec.h"

namespace mcsim::trace {

// Recorder side.
Json encodeImage(uint64_t image, const RecordOptions& o);
Json encodeImageFile(uint64_t path, const RecordOptions& o);
Json encodeOptions(bool library, uint64_t count, uint64_t options, uint64_t values);
// The launch's function: its name in the trace (a func or kernel name), and in `info` what the
// target says of it (name, parameter layout).
Json encodeLaunchFunc(uint64_t f, const Names& names, const RecordOptions& o, FunctionInfo* info);
Json encodeKernelParams(const FunctionInfo& info, uint64_t kernelParams, const Names& names);
Json encodeKernelExtra(const FunctionInfo& info, uint64_t extra, const Names& names);
Json encodeLaunchConfig(uint64_t config, const Names& names);
Json encodeHandleArray(HandleKind k, uint64_t array, uint64_t count, Names& names);

// Replayer side: each returns the slot value; `approximate` is set when the call cannot be issued
// exactly as recorded (its data was not in the trace); `problem` names a name nothing bound.
uint64_t decodeImage(const Json& a, Arena& arena, bool* approximate);
uint64_t decodeImageFile(const Json& a, Arena& arena, bool* approximate);
// Fills the options slot and the values slot.
void decodeOptions(const Json& a, Arena& arena, uint64_t* options, uint64_t* values);
// How many options (with their values) the record holds: a count larger than this reads past them.
uint64_t optionsRecorded(const Json& a);
uint64_t decodeKernelParams(const Json& a, const Binder& b, Arena& arena, bool* approximate, std::string* problem);
uint64_t decodeKernelExtra(const Json& a, const Binder& b, Arena& arena, bool* approximate, std::string* problem);
uint64_t decodeLaunchConfig(const Json& a, const Binder& b, Arena& arena, std::string* problem);
// Room for an output array of `count` handles.
uint64_t handleArrayRoom(uint64_t count, Arena& arena);
void bindHandleArray(const Json& out, uint64_t array, uint64_t count, Binder& b);

}  // namespace mcsim::trace
