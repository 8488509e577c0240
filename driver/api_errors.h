// The C API's failure reporting (include/mcsim/mcsim.h): each failing mcsim_* call leaves its
// reason for mcsim_last_error on the calling thread.
#pragma once

#include <string>

#include "mcsim/mcsim.h"

namespace mcsim::driver {

// Records `why` as the calling thread's last error and returns `status`.
mcsim_status apiFailure(mcsim_status status, std::string why);
// Clears the calling thread's last error and returns MCSIM_SUCCESS.
mcsim_status apiSuccess();

}  // namespace mcsim::driver
