// The driver's JIT linking of relocatable PTX (driver/link.cpp): what cuLinkComplete does with the
// objects a program adds, and what loading a device-linked (-rdc) image that nvlink wrote with no
// code for any device (a PTX-only build) does with the relocatable objects it lists
// (docs/ptx.md, "Linking with cuLink*").
#pragma once

#include <cuda.h>

#include <cstdint>
#include <string>
#include <vector>

#include "driver/module_image.h"
#include "ptx/linker.h"

namespace mcsim::driver {

// Links `objects` whole (ptx::PtxLinker::linkProgram: every kernel and external variable with what
// they reach) and checks the result as a module load would parse it: `text` gets the linked
// module's PTX, `summary` (optional) a line saying what it holds. CUDA_ERROR_INVALID_PTX with
// `why` naming the symbol and object(s) or the object and line: a symbol reached that no object
// defines, one that two define, or PTX the parser refuses outside the kernels' bodies.
CUresult linkObjectsPtx(const std::vector<ptx::LinkObject>& objects, std::string* text, std::string* why,
                        std::string* summary = nullptr);

// The module a device-linked image with no code of its own runs (ModuleImage::noCode with
// relocatable objects): their PTX for compute capability `cc`, linked whole, read as a PTX image.
// CUDA_ERROR_NO_BINARY_FOR_GPU when an object has no fitting PTX; linkObjectsPtx's errors.
CUresult linkPrelinkedImage(const ModuleImage& wrapper, uint32_t cc, ModuleImage* out, std::string* why);

}  // namespace mcsim::driver
