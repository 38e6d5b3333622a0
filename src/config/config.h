// SPDX-License-Identifier: Apache-2.0
// cardiac.toml: the settings every command and the agent share. Missing file → defaults;
// a malformed file → an error naming the file, line and key. Unknown keys are errors, so a
// typo never silently falls back to a default.
#pragma once

#include <optional>
#include <string>

#include "core/clock.h"
#include "core/result.h"

namespace cardiac::config {

inline constexpr const char* kDefaultConfigPath = "/etc/cardiac/cardiac.toml";

struct NvmlSettings {
  std::string library;                 // empty: libnvidia-ml.so.1, then libnvidia-ml.so
  DurationNs timeout = 5 * kNsPerSec;  // deadline for each NVML answer
};

struct HostSettings {
  std::string root = "/";  // where /proc and /sys are read
};

struct Config {
  std::string source;  // the file it came from, or "" for built-in defaults
  NvmlSettings nvml;
  HostSettings host;
};

// Parses TOML text; `origin` names the file in errors ("cardiac.toml:3:9: …").
[[nodiscard]] Result<Config> parse_config(std::string_view text, std::string_view origin);
// Loads `path`. When `path` is the default and does not exist, returns the defaults; an
// explicitly named file that does not exist is an error.
[[nodiscard]] Result<Config> load_config(const std::string& path, bool explicitly_named);
// The commented default file, with every key at its built-in value.
[[nodiscard]] std::string default_config_text();

}  // namespace cardiac::config
