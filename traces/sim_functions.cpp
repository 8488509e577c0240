// What mcsim's recorder learns of a launched function: its name and the parameter layout of its
// behavioural model (the layout the driver itself reads kernelParams and `extra` with). Compiled
// into the driver, beside it; asks the driver's tables directly, so recording a launch makes no
// driver call (no fault point counts it, no timeline notes it).
#include "driver/kernel_registry.h"
#include "traces/lib/codec.h"
#include "traces/lib/kernel_abi.h"

namespace mcsim::trace {

bool describeSimFunction(uint64_t f, bool /*isKernel*/, const std::string& /*label*/, FunctionInfo* out) {
  std::vector<size_t> sizes;
  bool haveModel = false;
  if (!driver::describeForTrace(reinterpret_cast<const void*>(static_cast<uintptr_t>(f)), &out->name, &sizes, &haveModel)) {
    return false;
  }
  if (haveModel) {
    out->layout = "model";
    out->sizes.assign(sizes.begin(), sizes.end());
    out->offsets = packedOffsets(out->sizes);  // the driver's own packing of `extra` buffers
  }
  return true;
}

}  // namespace mcsim::trace
