// Where mcsim's libcuda.so.1 lives, for commands that start programs against it, and the
// programs mcsim ships beside itself.
#pragma once

#include <string>

namespace mcsim::tools {

constexpr const char* kDriverLibraryName = "libcuda.so.1";

struct DriverLibraryDir {
  std::string dir;      // empty when not found
  std::string problem;  // why not, for the user
};

// MCSIM_LIB_DIR when set; otherwise the installed layout, <prefix>/lib/mcsim beside
// <prefix>/bin (the lib directory is the install's CMAKE_INSTALL_LIBDIR), and then the build
// tree's, <directory of this executable>/../lib. With `subdir` ("record-real"), the directory of
// that name inside it.
DriverLibraryDir findDriverLibraryDir(const std::string& subdir = "");

struct CompanionProgram {
  std::string path;     // empty when not found
  std::string problem;  // why not, for the user
};

// A program built and installed beside mcsim, in the same bin/ directory (the benchmarks):
// <directory of this executable>/<name>.
CompanionProgram findCompanionProgram(const std::string& name);

}  // namespace mcsim::tools
