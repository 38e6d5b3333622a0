// SPDX-License-Identifier: Apache-2.0
// Log level selection.
#include "core/log.h"

#include <spdlog/sinks/stdout_color_sinks.h>

namespace cardiac::log {

void set_level(std::string_view name) {
  static const bool kInstalled = [] {
    auto logger = spdlog::stderr_color_mt("cardiac");
    spdlog::set_default_logger(logger);
    spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");
    return true;
  }();
  (void)kInstalled;
  auto level = spdlog::level::from_str(std::string(name));
  if (level == spdlog::level::off && name != "off") level = spdlog::level::warn;
  spdlog::set_level(level);
}

}  // namespace cardiac::log
