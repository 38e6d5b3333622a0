// SPDX-License-Identifier: Apache-2.0
// TOML configuration loading with precise errors.
#include "config/config.h"

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <toml++/toml.h>

#include "core/format.h"
#include "core/strings.h"

namespace cardiac::config {
namespace {

std::string where(std::string_view origin, const toml::source_region& r) {
  return fmt::format("{}:{}:{}", origin, r.begin.line, r.begin.column);
}

Status check_keys(const toml::table& t, std::string_view table_name,
                  const std::set<std::string_view>& allowed, std::string_view origin) {
  for (const auto& [key, node] : t) {
    (void)node;
    if (!allowed.count(key.str())) {
      std::string full =
          table_name.empty() ? std::string(key.str()) : fmt::format("{}.{}", table_name, key.str());
      return fail(
          Error::invalid(fmt::format("unknown key '{}'", full), where(origin, key.source())));
    }
  }
  return {};
}

Result<std::string> get_string(const toml::table& t, std::string_view key, std::string_view table,
                               std::string_view origin, std::string fallback) {
  const toml::node* n = t.get(key);
  if (!n) return fallback;
  if (auto s = n->value<std::string>()) return *s;
  return fail(Error::invalid(fmt::format("'{}.{}' must be a string", table, key),
                             where(origin, n->source())));
}

Result<DurationNs> get_duration(const toml::table& t, std::string_view key, std::string_view table,
                                std::string_view origin, DurationNs fallback) {
  const toml::node* n = t.get(key);
  if (!n) return fallback;
  std::optional<std::int64_t> ns;
  if (auto s = n->value<std::string>()) ns = parse_duration_ns(*s);
  if (auto d = n->value<double>()) ns = static_cast<std::int64_t>(*d * 1e9);
  if (!ns || *ns <= 0) {
    return fail(Error::invalid(
        fmt::format("'{}.{}' must be a positive duration such as \"5s\" or \"500ms\"", table, key),
        where(origin, n->source())));
  }
  return *ns;
}

}  // namespace

Result<Config> parse_config(std::string_view text, std::string_view origin) {
  toml::table root;
  try {
    root = toml::parse(text, origin);
  } catch (const toml::parse_error& e) {
    return fail(Error::parse(std::string(e.description()), where(origin, e.source())));
  }
  Config c;
  c.source = std::string(origin);
  CARDIAC_TRY(check_keys(root, "", {"nvml", "host"}, origin));
  if (const toml::node* n = root.get("nvml")) {
    const toml::table* t = n->as_table();
    if (!t) return fail(Error::invalid("'nvml' must be a table", where(origin, n->source())));
    CARDIAC_TRY(check_keys(*t, "nvml", {"library", "timeout"}, origin));
    auto lib = get_string(*t, "library", "nvml", origin, c.nvml.library);
    if (!lib) return fail(lib.error());
    c.nvml.library = *lib;
    auto timeout = get_duration(*t, "timeout", "nvml", origin, c.nvml.timeout);
    if (!timeout) return fail(timeout.error());
    c.nvml.timeout = *timeout;
  }
  if (const toml::node* n = root.get("host")) {
    const toml::table* t = n->as_table();
    if (!t) return fail(Error::invalid("'host' must be a table", where(origin, n->source())));
    CARDIAC_TRY(check_keys(*t, "host", {"root"}, origin));
    auto r = get_string(*t, "root", "host", origin, c.host.root);
    if (!r) return fail(r.error());
    c.host.root = *r;
  }
  return c;
}

Result<Config> load_config(const std::string& path, bool explicitly_named) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return fail(Error::invalid("is a directory, not a configuration file", path));
  }
  std::ifstream in(path);
  if (!in) {
    if (!explicitly_named && errno == ENOENT) return Config{};
    return fail(Error::io(path, errno));
  }
  std::stringstream buf;
  buf << in.rdbuf();
  return parse_config(buf.str(), path);
}

std::string default_config_text() {
  return R"(# cardiac configuration (/etc/cardiac/cardiac.toml).
# Every key is optional; the values below are the built-in defaults.

[nvml]
# NVML library to load. Empty: libnvidia-ml.so.1, then libnvidia-ml.so.
library = ""
# Deadline for each answer from NVML. A call that takes longer marks its GPU unresponsive
# (a hung driver) instead of blocking cardiac.
timeout = "5s"

[host]
# Where /proc and /sys are read: "/" on a live machine, or a captured tree.
root = "/"
)";
}

}  // namespace cardiac::config
