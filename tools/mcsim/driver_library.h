// Where mcsim's libcuda.so.1 lives, for commands that start programs against it.
#pragma once

#include <string>

namespace mcsim::tools {

constexpr const char* kDriverLibraryName = "libcuda.so.1";

struct DriverLibraryDir {
  std::string dir;      // empty when not found
  std::string problem;  // why not, for the user
};

// MCSIM_LIB_DIR when set; otherwise <directory of this executable>/../lib, the layout of both
// the build tree (bin/ beside lib/) and an installed prefix. With `subdir` ("record-real"), the
// directory of that name inside it.
DriverLibraryDir findDriverLibraryDir(const std::string& subdir = "");

}  // namespace mcsim::tools
