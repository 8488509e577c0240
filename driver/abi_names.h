// cuda.h maps some base names to their newest symbols with macros (`#define cuCtxDestroy
// cuCtxDestroy_v2`). The translation units that define or list the older variants under their
// exact names include this after cuda.h to lift those mappings.
#pragma once

#include <cuda.h>

#undef cuCtxCreate
#undef cuCtxDestroy
#undef cuCtxPopCurrent
#undef cuCtxPushCurrent
#undef cuDevicePrimaryCtxRelease
#undef cuDevicePrimaryCtxReset
#undef cuDevicePrimaryCtxSetFlags
#undef cuDeviceGetUuid
#undef cuGetProcAddress
#undef cuMemAlloc
#undef cuStreamDestroy
#undef cuEventDestroy
#undef cuEventElapsedTime

// In the driver's sources the lifted names are renamed again (driver/driver.h).
#ifdef MCSIM_DRIVER_IMPL
#include "mcsim_internal_names.h"
#endif
