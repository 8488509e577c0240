// The driver's side of the kernel-model registry.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "mcsim/kernel_model.h"

namespace mcsim::driver {

// Registers (or replaces) the model of kernels named `name` (the C API's
// mcsim_register_kernel_model, api_kernel_models.cpp). Thread-safe; takes effect for launches made
// after it returns.
void registerKernelModel(const std::string& name, KernelModel model);
// Whether a model is registered under `name`.
bool hasKernelModel(const std::string& name);
// A copy of the model registered under `name`; false when there is none.
bool findKernelModel(const std::string& name, KernelModel* out);
// Registers the models of mcsim's kernel library (include/mcsim/kernels.h) through `add`.
void registerLibraryKernels(const std::function<void(const std::string&, KernelModel)>& add);

// For the trace recorder (traces/sim_functions.cpp): the name of the function or kernel handle
// `f`, and the parameter sizes of its registered model (`haveModel` false when it has none).
// False when `f` is no function or kernel mcsim made. Makes no driver call: no fault point, no
// timeline entry, nothing changed.
bool describeForTrace(const void* f, std::string* name, std::vector<size_t>* paramBytes, bool* haveModel);

}  // namespace mcsim::driver
