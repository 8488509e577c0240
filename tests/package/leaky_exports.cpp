// A library that exports what libcuda.so.1 must not (a C++ function, a driver-internal name) beside
// a driver entry point and an API function, for the export check's own test (CMakeLists.txt).
#include <string>

extern "C" int cuInit(unsigned) { return 0; }
extern "C" int mcsim_api_version() { return 1; }
extern "C" int mcsim_impl_cuInit(unsigned) { return 0; }
namespace mcsim::api {
std::string presetName() { return "leaked"; }
}  // namespace mcsim::api
