// SPDX-License-Identifier: Apache-2.0
// /proc/pressure/* readers.
#include "host/pressure.h"

#include <string>

#include "core/format.h"
#include "core/strings.h"
#include "host/parse_util.h"

namespace cardiac::host {
namespace {

using detail::excerpt;
using detail::line_error;

Result<PressureLine> parse_line(const std::vector<std::string_view>& f, std::size_t line) {
  if (f.size() != 5) {
    return fail(line_error(line, fmt::format("expected 4 fields after '{}'", excerpt(f[0]))));
  }
  PressureLine out;
  const std::string_view keys[] = {"avg10=", "avg60=", "avg300=", "total="};
  for (std::size_t i = 0; i < 4; ++i) {
    const std::string_view field = f[i + 1];
    const bool key_ok = field.starts_with(keys[i]);
    const std::string_view value = key_ok ? field.substr(keys[i].size()) : std::string_view{};
    if (i == 3) {
      auto total = key_ok ? parse_u64(value) : std::nullopt;
      if (!total) return fail(line_error(line, fmt::format("bad field '{}'", excerpt(field))));
      out.total_us = *total;
      continue;
    }
    auto avg = key_ok ? parse_double(value) : std::nullopt;
    if (!avg || *avg < 0) {
      return fail(line_error(line, fmt::format("bad field '{}'", excerpt(field))));
    }
    (i == 0 ? out.avg10 : i == 1 ? out.avg60 : out.avg300) = *avg;
  }
  return out;
}

}  // namespace

Result<PressureStat> parse_pressure(std::string_view text) {
  PressureStat out;
  auto lines = split_lines(text);
  for (std::size_t i = 0; i < lines.size(); ++i) {
    auto f = split_ws(lines[i]);
    if (f.empty()) continue;
    if (f[0] != "some" && f[0] != "full") {
      return fail(line_error(i + 1, fmt::format("unexpected text '{}'", excerpt(lines[i]))));
    }
    auto parsed = parse_line(f, i + 1);
    if (!parsed) return fail(parsed.error());
    (f[0] == "some" ? out.some : out.full) = *parsed;
  }
  if (!out.some && !out.full) return fail(Error::parse("empty"));
  return out;
}

Result<Pressure> collect_pressure(const FileSystem& fs) {
  Pressure out;
  const std::pair<const char*, std::optional<PressureStat>*> files[] = {
      {"/proc/pressure/cpu", &out.cpu},
      {"/proc/pressure/memory", &out.memory},
      {"/proc/pressure/io", &out.io},
  };
  for (const auto& [path, dest] : files) {
    auto stat = detail::read_and_parse(fs, path, parse_pressure, 4096);
    if (stat) {
      *dest = *stat;
    } else if (!detail::is_missing(stat.error())) {
      return fail(stat.error());
    }
  }
  return out;
}

}  // namespace cardiac::host
