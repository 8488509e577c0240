// mcsim's C API for kernel models (include/mcsim/mcsim.h): a model registered through C function
// pointers becomes a KernelModel of the driver's registry (kernel_registry.cpp), whose expand
// function hands the launch to the C function and collects the steps it adds.
#include <memory>
#include <string>
#include <vector>

#include "driver/api_errors.h"
#include "driver/kernel_registry.h"
#include "mcsim/kernel_model.h"
#include "mcsim/mcsim.h"

// What mcsim_kernel_steps points at during one expand call.
struct mcsim_kernel_steps {
  mcsim::KernelSteps* steps;
  std::string rejected;  // the reason given to mcsim_kernel_steps_reject; "" while valid
};

namespace mcsim::driver {
namespace {

// The registration's C side; `release` runs once the last copy of the model is gone (a launch
// holds a copy while it expands, so a replaced model outlives its replacement's registration).
struct CModel {
  mcsim_kernel_expand_fn expand = nullptr;
  void* user = nullptr;
  void (*release)(void*) = nullptr;
  CModel(mcsim_kernel_expand_fn e, void* u, void (*r)(void*)) : expand(e), user(u), release(r) {}
  CModel(const CModel&) = delete;
  CModel& operator=(const CModel&) = delete;
  ~CModel() {
    if (release != nullptr) release(user);
  }
};

std::string expandThroughC(const CModel& model, const KernelLaunch& l, KernelSteps& steps) {
  std::vector<const void*> params;
  std::vector<size_t> sizes;
  for (const std::vector<uint8_t>& p : l.params) {
    params.push_back(p.data());
    sizes.push_back(p.size());
  }
  mcsim_kernel_launch launch{};
  launch.name = l.name.c_str();
  launch.device = l.device;
  launch.grid = mcsim_dim3{l.grid.x, l.grid.y, l.grid.z};
  launch.block = mcsim_dim3{l.block.x, l.block.y, l.block.z};
  launch.shared_mem_bytes = l.sharedMemBytes;
  launch.param_count = params.size();
  launch.params = params.data();
  launch.param_bytes = sizes.data();
  mcsim_kernel_steps out{&steps, ""};
  model.expand(model.user, &launch, &out);
  return out.rejected;
}

}  // namespace
}  // namespace mcsim::driver

using mcsim::driver::apiFailure;
using mcsim::driver::apiSuccess;

extern "C" {

mcsim_status mcsim_kernel_steps_add(mcsim_kernel_steps* steps, const mcsim_kernel_step* step) {
  if (steps == nullptr || step == nullptr) {
    return apiFailure(MCSIM_ERROR_INVALID_VALUE, steps == nullptr ? "steps is NULL" : "step is NULL");
  }
  mcsim::KernelSteps& s = *steps->steps;
  const mcsim_kernel_step& t = *step;
  switch (t.kind) {
    case MCSIM_STEP_COPY: s.copy(t.dst, t.src, t.bytes); break;
    case MCSIM_STEP_REDUCE: s.reduce(t.dst, t.src, t.src2, t.count, t.dtype, t.op); break;
    case MCSIM_STEP_MULTIMEM_STORE: s.multimemStore(t.mc, t.src, t.count, t.dtype); break;
    case MCSIM_STEP_MULTIMEM_REDUCE: s.multimemReduce(t.mc, t.src, t.count, t.dtype); break;
    case MCSIM_STEP_MULTIMEM_LOAD_REDUCE: s.multimemLoadReduce(t.dst, t.mc, t.count, t.dtype, t.op); break;
    case MCSIM_STEP_MULTIMEM_LOAD_REDUCE_STORE: s.multimemLoadReduceStore(t.mc, t.count, t.dtype, t.op); break;
    case MCSIM_STEP_SIGNAL: s.signal(t.mc, t.value); break;
    case MCSIM_STEP_WAIT: s.waitAtLeast(t.dst, t.value); break;
    default: return apiFailure(MCSIM_ERROR_INVALID_VALUE, "unknown step kind " + std::to_string(t.kind));
  }
  return apiSuccess();
}

mcsim_status mcsim_kernel_steps_set_bytes_in_flight_per_thread(mcsim_kernel_steps* steps, uint32_t bytes) {
  if (steps == nullptr) return apiFailure(MCSIM_ERROR_INVALID_VALUE, "steps is NULL");
  steps->steps->setBytesInFlightPerThread(bytes);
  return apiSuccess();
}

mcsim_status mcsim_kernel_steps_reject(mcsim_kernel_steps* steps, const char* why) {
  if (steps == nullptr) return apiFailure(MCSIM_ERROR_INVALID_VALUE, "steps is NULL");
  steps->rejected = why != nullptr && *why != '\0' ? why : "the model rejected the launch";
  return apiSuccess();
}

mcsim_status mcsim_register_kernel_model(const char* name, const size_t* param_bytes, size_t param_count,
                                         mcsim_kernel_expand_fn expand, void* user, void (*release)(void*)) {
  if (name == nullptr || *name == '\0') return apiFailure(MCSIM_ERROR_INVALID_VALUE, "the kernel name is empty");
  if (expand == nullptr) return apiFailure(MCSIM_ERROR_INVALID_VALUE, "expand is NULL");
  if (param_count != 0 && param_bytes == nullptr) {
    return apiFailure(MCSIM_ERROR_INVALID_VALUE, "param_bytes is NULL for " + std::to_string(param_count) + " parameters");
  }
  for (size_t i = 0; i < param_count; ++i) {
    if (param_bytes[i] == 0) {
      return apiFailure(MCSIM_ERROR_INVALID_VALUE, "parameter " + std::to_string(i) + " has 0 bytes");
    }
  }
  mcsim::KernelModel model;
  model.paramBytes.assign(param_bytes, param_bytes + param_count);
  auto held = std::make_shared<mcsim::driver::CModel>(expand, user, release);
  model.expand = [held](const mcsim::KernelLaunch& l, mcsim::KernelSteps& s) {
    return mcsim::driver::expandThroughC(*held, l, s);
  };
  mcsim::driver::registerKernelModel(name, std::move(model));
  return apiSuccess();
}

int mcsim_has_kernel_model(const char* name) {
  return name != nullptr && mcsim::driver::hasKernelModel(name) ? 1 : 0;
}

}  // extern "C"
