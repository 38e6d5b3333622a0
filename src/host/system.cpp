// SPDX-License-Identifier: Apache-2.0
// /proc/uptime, kernel release, hostname and /proc/driver/nvidia/version readers.
#include "host/system.h"

#include <cctype>
#include <vector>

#include "core/format.h"
#include "core/strings.h"
#include "host/parse_util.h"

namespace cardiac::host {
namespace {

using detail::excerpt;
using detail::line_error;

// "550.54.15", "535.104.05", "470.42": digits and at least one dot.
bool looks_like_version(std::string_view s) {
  if (s.empty() || !std::isdigit(static_cast<unsigned char>(s.front()))) return false;
  bool dot = false;
  for (char c : s) {
    if (c == '.') {
      dot = true;
    } else if (!std::isdigit(static_cast<unsigned char>(c))) {
      return false;
    }
  }
  return dot && s.back() != '.';
}

void note(std::vector<std::string>* errors, const Error& e) {
  if (errors != nullptr) errors->push_back(e.what());
}

}  // namespace

Result<Uptime> parse_uptime(std::string_view text) {
  auto f = split_ws(trim(text));
  if (f.empty()) return fail(line_error(1, "empty"));
  auto up = parse_double(f[0]);
  auto idle = f.size() == 2 ? parse_double(f[1]) : std::nullopt;
  if (!up || !idle || *up < 0 || *idle < 0) {
    return fail(
        line_error(1, fmt::format("expected 'uptime idle', got '{}'", excerpt(trim(text)))));
  }
  return Uptime{*up, *idle};
}

Result<std::string> parse_proc_version(std::string_view text) {
  auto f = split_ws(trim(text));
  if (f.size() < 3 || f[0] != "Linux" || f[1] != "version") {
    return fail(line_error(1, fmt::format("expected 'Linux version X', got '{}'", excerpt(text))));
  }
  return std::string(f[2]);
}

Result<std::string> parse_nvidia_driver_version(std::string_view text) {
  auto lines = split_lines(text);
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (!lines[i].starts_with("NVRM version:")) continue;
    const auto module = lines[i].find("Kernel Module");
    if (module == std::string_view::npos) {
      return fail(line_error(i + 1, fmt::format("no 'Kernel Module' in '{}'", excerpt(lines[i]))));
    }
    for (std::string_view field : split_ws(lines[i].substr(module))) {
      if (looks_like_version(field)) return std::string(field);
    }
    return fail(line_error(i + 1, fmt::format("no version in '{}'", excerpt(lines[i]))));
  }
  return fail(Error::parse("no 'NVRM version:' line"));
}

SystemInfo collect_system_info(const FileSystem& fs, std::vector<std::string>* errors) {
  SystemInfo out;
  auto keep_error = [&](const Error& e) {
    if (!detail::is_missing(e) && e.code != ErrorCode::kPermission) note(errors, e);
  };
  if (auto up = detail::read_and_parse(fs, "/proc/uptime", parse_uptime, 4096)) {
    out.uptime_s = up->up_s;
  } else {
    keep_error(up.error());
  }
  out.kernel = detail::read_attr(fs, "/proc/sys/kernel/osrelease");
  if (!out.kernel) {
    if (auto v = detail::read_and_parse(fs, "/proc/version", parse_proc_version, 4096)) {
      out.kernel = *v;
    } else {
      keep_error(v.error());
    }
  }
  out.hostname = detail::read_attr(fs, "/proc/sys/kernel/hostname");
  out.nvidia_module_loaded = fs.exists("/sys/module/nvidia") || fs.exists("/proc/driver/nvidia");
  auto version =
      detail::read_and_parse(fs, "/proc/driver/nvidia/version", parse_nvidia_driver_version, 4096);
  if (version) {
    out.nvidia_driver_version = *version;
  } else {
    keep_error(version.error());
  }
  return out;
}

}  // namespace cardiac::host
