// libFuzzer target for module images (what cuModuleLoadData, cuLibraryLoadData and cuModuleLoad
// hand the driver, and the host objects and libraries cuLinkAddData takes): any bytes of known size are an image with its entry names or a refusal with a
// reason; never a read outside them, a crash or undefined behaviour (built with ASan/UBSan, the
// input in a buffer of exactly its size). Run by scripts/fuzz.sh (docs/reliability.md, "Fuzzing").
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "driver/module_image.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mcsim::driver;
  // A copy of exactly `size` bytes, so that ASan sees any read past the end.
  std::unique_ptr<uint8_t[]> copy(new uint8_t[size == 0 ? 1 : size]);
  if (size != 0) std::memcpy(copy.get(), data, size);
  // The same bytes as a host object or static library (cuLinkAddData's CU_JIT_INPUT_OBJECT and
  // _LIBRARY): fatbins inside the bytes, or a refusal with a reason.
  {
    std::vector<EmbeddedFatbin> fatbins;
    std::string why;
    if (!hostFatbins(copy.get(), size, &fatbins, &why)) {
      if (why.empty()) std::abort();
    } else {
      for (const EmbeddedFatbin& f : fatbins) {
        if (f.offset > size || f.bytes > size - f.offset || f.bytes == 0) std::abort();
        readModuleImage(copy.get() + f.offset, static_cast<size_t>(f.bytes));
      }
    }
  }
  const ModuleImage m = readModuleImage(copy.get(), size);
  if (!m.ok) {
    if (m.error.empty()) std::abort();  // every refusal says why
    return 0;
  }
  if (m.bytes > size) std::abort();
  if (!std::is_sorted(m.entries.begin(), m.entries.end())) std::abort();
  if (std::adjacent_find(m.entries.begin(), m.entries.end()) != m.entries.end()) std::abort();
  if (m.format == ImageFormat::kFatbin && (m.namesFrom < 0 || m.namesFrom >= static_cast<int>(m.variants.size()))) {
    std::abort();
  }
  return 0;
}
