// The driver's side of the kernel-model registry.
#pragma once

#include <functional>
#include <string>

#include "mcsim/kernel_model.h"

namespace mcsim::driver {

// A copy of the model registered under `name`; false when there is none.
bool findKernelModel(const std::string& name, KernelModel* out);
// Registers the models of mcsim's kernel library (include/mcsim/kernels.h) through `add`.
void registerLibraryKernels(const std::function<void(const std::string&, KernelModel)>& add);

}  // namespace mcsim::driver
