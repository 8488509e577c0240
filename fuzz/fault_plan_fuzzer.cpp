// libFuzzer target for fault plans: any text is a plan or an InputError naming "fuzz" and a line,
// after the same checks cuInit makes (cuda.h names, entry points, devices, links and switches of hgx-h100);
// never another exception, a crash, a hang or undefined behaviour (built with ASan/UBSan). Run by
// scripts/fuzz.sh, not by the default suite (docs/reliability.md, "Fuzzing").
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "driver/cuda_names.h"
#include "fabric/fault_plan.h"
#include "fabric/json_source.h"
#include "fabric/preset.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mcsim;
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    std::vector<fabric::FaultRule> rules = fabric::parseFaultPlan(text, "fuzz");
    driver::resolveFaultPlanNames(&rules);
    static const fabric::Preset preset = fabric::loadPreset("hgx-h100");
    fabric::checkFaultPlanFor(rules, preset);
    for (const fabric::FaultRule& r : rules) {
      if (r.file != "fuzz" || r.line < 1) std::abort();  // every rule knows where it came from
    }
  } catch (const fabric::InputError& e) {
    if (e.file() != "fuzz" || e.line() < 0) std::abort();
  }
  return 0;
}
