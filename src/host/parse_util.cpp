// SPDX-License-Identifier: Apache-2.0
// Helpers shared by the /proc and /sys readers.
#include "host/parse_util.h"

#include "core/format.h"
#include "core/strings.h"

namespace cardiac::host::detail {

Error line_error(std::size_t line, std::string message) {
  return Error::parse(std::move(message), fmt::format("line {}", line));
}

Error in_file(Error e, std::string_view path) {
  if (e.code != ErrorCode::kParse) return e;
  e.context = e.context.empty() ? std::string(path) : fmt::format("{} {}", path, e.context);
  return e;
}

bool is_missing(const Error& e) {
  return e.code == ErrorCode::kNotFound;
}

std::string excerpt(std::string_view s) {
  constexpr std::size_t kMax = 40;
  std::string out;
  for (char c : s.substr(0, kMax)) {
    auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u >= 0x7f) {
      out += fmt::format("\\x{:02x}", u);
    } else {
      out += c;
    }
  }
  if (s.size() > kMax) out += "...";
  return out;
}

std::optional<std::string> read_attr(const FileSystem& fs, std::string_view path) {
  auto text = fs.read_file(path, 4096);
  if (!text) return std::nullopt;
  std::string_view t = trim(*text);
  if (t.empty()) return std::nullopt;
  return std::string(t);
}

std::optional<std::uint64_t> mul_checked(std::uint64_t a, std::uint64_t b) {
  std::uint64_t out = 0;
  if (__builtin_mul_overflow(a, b, &out)) return std::nullopt;
  return out;
}

}  // namespace cardiac::host::detail
