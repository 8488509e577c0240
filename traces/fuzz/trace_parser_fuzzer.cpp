// libFuzzer target for the trace reader: any bytes must be either a trace or a FILE:LINE refusal,
// never a crash, a hang or undefined behaviour (built with ASan/UBSan). A trace that is accepted
// must also survive being written back and read again. Built only with -DMCSIM_BUILD_FUZZERS=ON
// and clang; run by traces/fuzz.sh, not by the default test suite.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "traces/lib/trace_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mcsim::trace;
  Trace t;
  const std::string text(reinterpret_cast<const char*>(data), size);
  const std::string problem = parseTrace(text, "fuzz", &t);
  if (!problem.empty()) {
    if (problem.rfind("fuzz:", 0) != 0) std::abort();  // every refusal names file and line
    return 0;
  }
  Trace again;
  if (!parseTrace(writeTrace(t.header, t.records), "again", &again).empty()) std::abort();
  if (again.records.size() != t.records.size()) std::abort();
  return 0;
}
