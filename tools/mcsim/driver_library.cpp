#include "driver_library.h"
#include "tool_settings.h"

#include <cstdlib>
#include <filesystem>
#include <system_error>

namespace mcsim::tools {

namespace fs = std::filesystem;

namespace {

DriverLibraryDir check(const fs::path& dir, const std::string& origin) {
  std::error_code ec;
  const fs::path lib = dir / kDriverLibraryName;
  if (!fs::exists(lib, ec)) {
    return {"", std::string(kDriverLibraryName) + " is not in " + dir.string() + " (" + origin + ")"};
  }
  // An absolute path, so that the program finds the library whatever directory it moves to.
  const fs::path canonical = fs::weakly_canonical(dir, ec);
  return {ec ? dir.string() : canonical.string(), ""};
}

fs::path selfPath(std::error_code& ec) { return fs::read_symlink("/proc/self/exe", ec); }

}  // namespace

DriverLibraryDir findDriverLibraryDir(const std::string& subdir) {
  if (const std::string& env = toolSettings().libDir; !env.empty()) {
    return check(fs::path(env) / subdir, "from MCSIM_LIB_DIR");
  }
  std::error_code ec;
  const fs::path self = selfPath(ec);
  if (ec) return {"", "cannot locate the mcsim executable (" + ec.message() + "); set MCSIM_LIB_DIR"};
  const fs::path bin = self.parent_path();
  std::string problems;
#ifdef MCSIM_DRIVER_DIR_FROM_BIN
  // An installed prefix keeps the driver in a directory of its own (cmake/McsimInstall.cmake).
  const DriverLibraryDir installed = check(bin / MCSIM_DRIVER_DIR_FROM_BIN / subdir, "the installed layout");
  if (!installed.dir.empty()) return installed;
  problems = installed.problem + "; ";
#endif
  DriverLibraryDir found = check(bin.parent_path() / "lib" / subdir, "next to " + self.string());
  if (found.dir.empty()) found.problem = problems + found.problem + "; set MCSIM_LIB_DIR to the directory that holds it";
  return found;
}

CompanionProgram findCompanionProgram(const std::string& name) {
  std::error_code ec;
  const fs::path self = selfPath(ec);
  if (ec) return {"", "cannot locate the mcsim executable (" + ec.message() + ")"};
  const fs::path program = self.parent_path() / name;
  if (!fs::exists(program, ec)) return {"", name + " is not in " + self.parent_path().string() + ", beside mcsim"};
  return {program.string(), ""};
}

}  // namespace mcsim::tools
