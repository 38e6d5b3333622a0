// SPDX-License-Identifier: Apache-2.0
#include "serving/prom_text.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>

#include <fmt/format.h>

namespace cardiac::serving {
namespace {

bool name_start(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) != 0 || c == '_' || c == ':';
}
bool name_char(char c) {
  return name_start(c) || std::isdigit(static_cast<unsigned char>(c)) != 0;
}

void skip_blanks(std::string_view s, std::size_t& i) {
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
}

std::string_view take_name(std::string_view s, std::size_t& i, bool colons) {
  const std::size_t start = i;
  if (i >= s.size() || !name_start(s[i]) || (!colons && s[i] == ':')) return {};
  ++i;
  while (i < s.size() && name_char(s[i]) && (colons || s[i] != ':')) ++i;
  return s.substr(start, i - start);
}

// A float as Prometheus writes one: Go's ParseFloat accepts NaN, +Inf, -Inf and Inf.
bool parse_value(std::string_view t, double& out) {
  if (t == "NaN") {
    out = std::numeric_limits<double>::quiet_NaN();
    return true;
  }
  if (t == "+Inf" || t == "Inf") {
    out = std::numeric_limits<double>::infinity();
    return true;
  }
  if (t == "-Inf") {
    out = -std::numeric_limits<double>::infinity();
    return true;
  }
  if (!t.empty() && t.front() == '+') t.remove_prefix(1);
  if (t.empty()) return false;
  auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), out);
  return ec == std::errc() && end == t.data() + t.size();
}

// Reads `{a="x",b="y"}` from s[i] == '{'; returns the problem, or "" when it went well.
std::string read_labels(std::string_view s, std::size_t& i,
                        std::map<std::string, std::string>& out) {
  ++i;  // '{'
  while (true) {
    skip_blanks(s, i);
    if (i < s.size() && s[i] == '}') {
      ++i;
      return {};
    }
    std::string_view key = take_name(s, i, false);
    if (key.empty()) return "expected a label name";
    skip_blanks(s, i);
    if (i >= s.size() || s[i] != '=') return fmt::format("expected = after label {}", key);
    ++i;
    skip_blanks(s, i);
    if (i >= s.size() || s[i] != '"')
      return fmt::format("expected a quoted value for label {}", key);
    ++i;
    std::string value;
    bool closed = false;
    while (i < s.size()) {
      char c = s[i++];
      if (c == '"') {
        closed = true;
        break;
      }
      if (c == '\\' && i < s.size()) {
        char e = s[i++];
        value += e == 'n' ? '\n' : e;  // \\ and \" stand for themselves
        continue;
      }
      value += c;
    }
    if (!closed) return fmt::format("unterminated value of label {}", key);
    out[std::string(key)] = std::move(value);
    skip_blanks(s, i);
    if (i < s.size() && s[i] == ',') {
      ++i;
      continue;
    }
    if (i < s.size() && s[i] == '}') {
      ++i;
      return {};
    }
    return "expected , or } after a label";
  }
}

}  // namespace

Result<std::vector<PromSample>> parse_prom_text(std::string_view text, std::string_view origin) {
  std::vector<PromSample> out;
  std::size_t line_no = 0;
  while (!text.empty()) {
    ++line_no;
    const std::size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    std::size_t i = 0;
    skip_blanks(line, i);
    if (i == line.size() || line[i] == '#') continue;
    auto bad = [&](std::string_view what) {
      return fail(Error::parse(std::string(what), fmt::format("{}:{}", origin, line_no)));
    };
    PromSample s;
    s.name = std::string(take_name(line, i, true));
    if (s.name.empty()) return bad("expected a metric name");
    if (i < line.size() && line[i] == '{') {
      if (auto problem = read_labels(line, i, s.labels); !problem.empty()) return bad(problem);
    }
    if (i >= line.size() || (line[i] != ' ' && line[i] != '\t')) {
      return bad(fmt::format("expected a blank and a value after {}", s.name));
    }
    skip_blanks(line, i);
    std::size_t end = i;
    while (end < line.size() && line[end] != ' ' && line[end] != '\t') ++end;
    if (!parse_value(line.substr(i, end - i), s.value)) {
      return bad(fmt::format("{}: not a number: \"{}\"", s.name, line.substr(i, end - i)));
    }
    // An optional timestamp (ms) follows; it is not needed, but must be a number.
    i = end;
    skip_blanks(line, i);
    if (i < line.size()) {
      std::int64_t ts = 0;
      auto [p, ec] = std::from_chars(line.data() + i, line.data() + line.size(), ts);
      if (ec != std::errc()) return bad(fmt::format("{}: bad timestamp", s.name));
      i = static_cast<std::size_t>(p - line.data());
      skip_blanks(line, i);
      if (i != line.size()) return bad(fmt::format("{}: unexpected text after the value", s.name));
    }
    if (out.size() >= kMaxPromSamples) {
      return bad(fmt::format("more than {} samples", kMaxPromSamples));
    }
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace cardiac::serving
