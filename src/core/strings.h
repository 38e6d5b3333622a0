// SPDX-License-Identifier: Apache-2.0
// Small string helpers for parsers: splitting, trimming and strict number parsing.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace cardiac {

// Splits on a single character; keeps empty fields.
std::vector<std::string_view> split(std::string_view s, char sep);
// Splits on runs of spaces/tabs; drops empty fields (the /proc table shape).
std::vector<std::string_view> split_ws(std::string_view s);
// The same without allocating: the first out.size() fields into `out`; returns how many it
// filled (fewer when the line has fewer). For tables read line by line, thousands of lines a read.
std::size_t split_ws_into(std::string_view s, std::span<std::string_view> out);
// Splits into lines without their '\n' (a trailing '\r' is dropped too).
std::vector<std::string_view> split_lines(std::string_view s);

std::string_view trim(std::string_view s);
bool starts_with(std::string_view s, std::string_view prefix);
bool ends_with(std::string_view s, std::string_view suffix);
std::string to_lower(std::string_view s);

// Strict parsers: the whole (trimmed) input must be a number, else nullopt.
std::optional<std::uint64_t> parse_u64(std::string_view s, int base = 10);
std::optional<std::int64_t> parse_i64(std::string_view s);
std::optional<double> parse_double(std::string_view s);

// Parses "90s", "5m", "1h30m", "2d", "250ms", or a bare number of seconds; nullopt on garbage.
std::optional<std::int64_t> parse_duration_ns(std::string_view s);

}  // namespace cardiac
