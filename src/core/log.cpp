// SPDX-License-Identifier: Apache-2.0
// Log level selection.
#include "core/log.h"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <memory>
#include <string>

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

namespace {

// sd-daemon(3)'s "<N>" prefix: spdlog's levels as syslog priorities.
class JournalPriority : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm& /*time*/,
              spdlog::memory_buf_t& dest) override {
    std::string_view prefix = "<6>";
    switch (msg.level) {
      case spdlog::level::trace:
      case spdlog::level::debug:
        prefix = "<7>";
        break;
      case spdlog::level::warn:
        prefix = "<4>";
        break;
      case spdlog::level::err:
        prefix = "<3>";
        break;
      case spdlog::level::critical:
        prefix = "<2>";
        break;
      default:
        break;
    }
    dest.append(prefix.data(), prefix.data() + prefix.size());
  }
  [[nodiscard]] std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<JournalPriority>();
  }
};

}  // namespace

bool use_journal_format_if_connected() {
  const char* stream = std::getenv("JOURNAL_STREAM");
  struct stat st {};
  if (stream == nullptr || ::fstat(STDERR_FILENO, &st) != 0) return false;
  // A child of the service inherits the variable with its own standard error elsewhere.
  const std::string ours = std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino);
  if (ours != stream) return false;
  auto formatter = std::make_unique<spdlog::pattern_formatter>();
  formatter->add_flag<JournalPriority>('*').set_pattern("%*%l %v");
  spdlog::set_formatter(std::move(formatter));
  return true;
}

}  // namespace cardiac::log
