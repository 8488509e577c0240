#include "tool_settings.h"

namespace mcsim::tools {

const settings::Settings& toolSettings() {
  static const settings::Settings s = settings::fromEnvironment();
  return s;
}

}  // namespace mcsim::tools
