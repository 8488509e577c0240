// The driver's private tables that the CUDA runtime asks for through cuGetExportTable
// (docs/runtime.md): what other parts of the driver tell them.
#pragma once

#include <cuda.h>

namespace mcsim::driver {

// Runs, last put first, the destructors that runtimes registered in `ctx`'s
// context-local storage, and forgets them: the context is going away (cuDevicePrimaryCtxReset,
// the last cuDevicePrimaryCtxRelease, cuCtxDestroy). Called without driver locks held, since a
// runtime's destructor calls back into the driver.
void runContextStorageDestructors(CUcontext ctx);

}  // namespace mcsim::driver
