// SPDX-License-Identifier: Apache-2.0
// Silence matcher parsing, matching and (de)serialisation.
#include "alerts/silence.h"

#include <algorithm>
#include <cctype>

#include <nlohmann/json.hpp>

#include "core/format.h"
#include "core/strings.h"

namespace cardiac::alerts {
namespace {

bool valid_key(std::string_view k) {
  if (k.empty() || std::isdigit(static_cast<unsigned char>(k.front())) != 0) return false;
  return std::all_of(k.begin(), k.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
  });
}

Error bad_part(std::string_view part, std::string_view why, std::string_view text) {
  return Error::parse(fmt::format("bad matcher \"{}\": {}", part, why),
                      fmt::format("silence \"{}\"", text));
}

}  // namespace

Result<Matchers> parse_matchers(std::string_view text) {
  if (trim(text).empty()) {
    return fail(Error::parse("empty matcher: expected key=value[,key=value...]", "silence \"\""));
  }
  Matchers out;
  for (std::string_view raw : split(text, ',')) {
    const std::string_view part = trim(raw);
    if (part.empty()) return fail(bad_part(raw, "empty part (stray comma?)", text));
    const auto eq = part.find('=');
    if (eq == std::string_view::npos) {
      return fail(bad_part(part, "expected key=value", text));
    }
    std::string key(trim(part.substr(0, eq)));
    const std::string_view value = trim(part.substr(eq + 1));
    if (!value.empty() && value.front() == '~') {
      return fail(bad_part(part, "regex matchers (=~) are not supported, use key=value", text));
    }
    if (!key.empty() && key.back() == '!') {
      return fail(bad_part(part, "negative matchers (!=) are not supported", text));
    }
    if (!valid_key(key)) {
      return fail(bad_part(part, "key must be letters, digits and '_'", text));
    }
    if (value.empty()) return fail(bad_part(part, "empty value", text));
    if (key == "alertname") key = "rule";  // Alertmanager's spelling of the same thing
    const bool dup =
        std::any_of(out.begin(), out.end(), [&](const Matcher& m) { return m.key == key; });
    if (dup) return fail(bad_part(part, fmt::format("key \"{}\" given twice", key), text));
    out.push_back(Matcher{std::move(key), std::string(value)});
  }
  return out;
}

std::string matchers_text(const Matchers& matchers) {
  std::string s;
  for (const Matcher& m : matchers) {
    if (!s.empty()) s += ',';
    s += m.key;
    s += '=';
    s += m.value;
  }
  return s;
}

bool matches(const Matchers& matchers, std::string_view rule, std::string_view severity,
             const rules::Labels& labels) {
  return std::all_of(matchers.begin(), matchers.end(), [&](const Matcher& m) {
    if (m.key == "rule") return m.value == rule;
    if (m.key == "severity") return m.value == severity;
    auto it = labels.find(m.key);
    return it != labels.end() && it->second == m.value;
  });
}

std::string matchers_to_json(const Matchers& matchers) {
  // An array of pairs rather than an object so that the order the user wrote survives.
  nlohmann::json j = nlohmann::json::array();
  for (const Matcher& m : matchers) j.push_back({m.key, m.value});
  return j.dump();
}

Result<Matchers> matchers_from_json(std::string_view json) {
  const auto j = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (!j.is_array()) return fail(Error::parse("matchers_json is not an array", std::string(json)));
  Matchers out;
  for (const auto& pair : j) {
    if (!pair.is_array() || pair.size() != 2 || !pair[0].is_string() || !pair[1].is_string()) {
      return fail(Error::parse("matchers_json entry is not [key, value]", std::string(json)));
    }
    out.push_back(Matcher{pair[0].get<std::string>(), pair[1].get<std::string>()});
  }
  return out;
}

}  // namespace cardiac::alerts
