// SPDX-License-Identifier: Apache-2.0
// Helpers shared by the /proc and /sys readers: line-numbered errors and guarded file reads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/result.h"
#include "platform/fs.h"

namespace cardiac::host::detail {

// A parse error at 1-based `line`; its context reads "line N" until in_file() adds the path.
[[nodiscard]] Error line_error(std::size_t line, std::string message);

// Names the file in a parse error: context "line 3" becomes "/proc/meminfo line 3".
// I/O errors already carry their path and are returned unchanged.
[[nodiscard]] Error in_file(Error e, std::string_view path);

// True when the error only says that the file (or a directory above it) does not exist.
[[nodiscard]] bool is_missing(const Error& e);

// A short printable copy of untrusted text for error messages: control and non-ASCII bytes
// become "\xNN" and the result is cut at 40 characters.
[[nodiscard]] std::string excerpt(std::string_view s);

// Reads `path` through `fs` (at most `max_bytes`) and hands the text to `parse`; a parse
// error gets the path added to its context. A missing file stays a kNotFound error.
template <class Parse>
[[nodiscard]] auto read_and_parse(const FileSystem& fs, std::string_view path, Parse parse,
                                  std::size_t max_bytes = 4u << 20)
    -> decltype(parse(std::string_view{})) {
  auto text = fs.read_file(path, max_bytes);
  if (!text) return fail(text.error());
  auto parsed = parse(std::string_view(*text));
  if (!parsed) return fail(in_file(parsed.error(), path));
  return parsed;
}

// A one-line sysfs/procfs attribute, trimmed; nullopt when it is missing, unreadable
// (sysfs answers EINVAL for a link that is down) or empty.
[[nodiscard]] std::optional<std::string> read_attr(const FileSystem& fs, std::string_view path);

// Checked a * b for unit conversions (kB -> bytes); nullopt on overflow.
[[nodiscard]] std::optional<std::uint64_t> mul_checked(std::uint64_t a, std::uint64_t b);

}  // namespace cardiac::host::detail
