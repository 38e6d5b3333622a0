// SPDX-License-Identifier: Apache-2.0
// /proc/meminfo reader.
#include "host/memory.h"

#include "core/format.h"
#include "core/strings.h"
#include "host/parse_util.h"

namespace cardiac::host {
namespace {

using detail::excerpt;
using detail::line_error;

std::optional<std::uint64_t>* slot(MemInfo& m, std::string_view key) {
  if (key == "MemFree") return &m.free;
  if (key == "MemAvailable") return &m.available;
  if (key == "Buffers") return &m.buffers;
  if (key == "Cached") return &m.cached;
  if (key == "SwapTotal") return &m.swap_total;
  if (key == "SwapFree") return &m.swap_free;
  return nullptr;
}

}  // namespace

Result<MemInfo> parse_meminfo(std::string_view text) {
  MemInfo out;
  std::optional<std::uint64_t> total;
  auto lines = split_lines(text);
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::size_t line = i + 1;
    if (trim(lines[i]).empty()) continue;
    const auto colon = lines[i].find(':');
    if (colon == std::string_view::npos || colon == 0) {
      return fail(
          line_error(line, fmt::format("expected 'Key: value', got '{}'", excerpt(lines[i]))));
    }
    const std::string_view key = lines[i].substr(0, colon);
    auto f = split_ws(lines[i].substr(colon + 1));
    const bool shape_ok = (f.size() == 1) || (f.size() == 2 && f[1] == "kB");
    auto value = shape_ok ? parse_u64(f[0]) : std::nullopt;
    if (!value) {
      return fail(line_error(line, fmt::format("bad value for {}: '{}'", excerpt(key),
                                               excerpt(lines[i].substr(colon + 1)))));
    }
    if (f.size() == 2) {
      value = detail::mul_checked(*value, 1024);
      if (!value) return fail(line_error(line, fmt::format("{} overflows", excerpt(key))));
    }
    if (key == "MemTotal") {
      total = value;
    } else if (auto* s = slot(out, key)) {
      *s = value;
    }
  }
  if (!total) return fail(Error::parse(lines.empty() ? "empty" : "no MemTotal line"));
  out.total = *total;
  return out;
}

Result<MemInfo> collect_meminfo(const FileSystem& fs) {
  return detail::read_and_parse(fs, "/proc/meminfo", parse_meminfo);
}

}  // namespace cardiac::host
