// The cuda.h names that mcsim reads from text: CUresults, and the constants a fault plan's
// argument filters may name. A small library of their own (mcsim_cuda_names), so that the shared
// node's process (tools/node) resolves a plan exactly as the driver does.
#pragma once

#include <cuda.h>

#include <string>
#include <vector>

#include "fabric/fault_plan.h"

namespace mcsim::driver {

// The CUresult with this name (CUDA_ERROR_...), for fault plans; false when there is none.
bool resultByName(const std::string& name, CUresult* out);
// cuGetErrorName's and cuGetErrorString's answers; nullptr for a code cuda.h does not define.
const char* resultName(CUresult code);
const char* resultDescription(CUresult code);
// Resolves what a parsed plan names by cuda.h name (the CUresults of `return` rules, constants in
// argument filters); throws fabric::InputError with the rule's file and line for an unknown name.
void resolveFaultPlanNames(std::vector<fabric::FaultRule>* rules);

}  // namespace mcsim::driver
