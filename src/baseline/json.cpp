// SPDX-License-Identifier: Apache-2.0
// `cardiac.baseline/v1` JSON and the text form of `cardiac baseline show`.
#include "baseline/json.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "baseline/capture_util.h"
#include "core/format.h"
#include "core/time.h"

namespace cardiac::baseline {
namespace {

using nlohmann::json;

Error field_error(std::string_view file, const std::string& field, const std::string& why) {
  return Error::parse(why, fmt::format("{}: {}", file, field));
}

// An optional string member; a member of another type is an error naming it.
Result<std::string> opt_string(const json& obj, const char* name, std::string_view file,
                               const std::string& where) {
  auto it = obj.find(name);
  if (it == obj.end() || it->is_null()) return std::string();
  if (!it->is_string()) {
    return fail(
        field_error(file, where + name, fmt::format("expected a string, got {}", it->type_name())));
  }
  return it->get<std::string>();
}

Result<Fact> parse_fact(const json& j, std::string_view file, const std::string& where) {
  if (!j.is_object()) {
    return fail(field_error(file, where, fmt::format("expected an object, got {}", j.type_name())));
  }
  const std::string at = where + ".";
  auto key = j.find("key");
  if (key == j.end()) return fail(field_error(file, at + "key", "missing"));
  if (!key->is_string() || key->get<std::string>().empty()) {
    return fail(field_error(file, at + "key", "expected a non-empty string"));
  }
  auto value = j.find("value");
  if (value == j.end()) {
    return fail(field_error(file, at + "value", "missing (null when it could not be read)"));
  }
  if (!value->is_string() && !value->is_null()) {
    return fail(field_error(file, at + "value",
                            fmt::format("expected a string or null, got {}", value->type_name())));
  }
  auto source = opt_string(j, "source", file, at);
  if (!source) return fail(source.error());
  Fact f = make_fact(key->get<std::string>(),
                     value->is_null() ? std::nullopt : std::optional(value->get<std::string>()),
                     std::move(*source));
  auto family = opt_string(j, "family", file, at);
  if (!family) return fail(family.error());
  if (!family->empty()) f.family = std::move(*family);
  auto severity = opt_string(j, "severity", file, at);
  if (!severity) return fail(severity.error());
  if (!severity->empty()) {
    auto s = parse_severity(*severity);
    if (!s) {
      return fail(field_error(file, at + "severity",
                              fmt::format("'{}' is not info, warning or critical", *severity)));
    }
    f.severity = *s;
  }
  auto risk = opt_string(j, "risk", file, at);
  if (!risk) return fail(risk.error());
  if (!risk->empty()) f.risk = std::move(*risk);
  return f;
}

}  // namespace

json to_json(const Baseline& b) {
  json facts = json::array();
  for (const auto& f : b.facts) {
    facts.push_back({{"key", f.key},
                     {"value", f.value ? json(*f.value) : json(nullptr)},
                     {"family", f.family},
                     {"severity", severity_name(f.severity)},
                     {"source", f.source},
                     {"risk", f.risk}});
  }
  return {{"schema", b.schema},
          {"hostname", b.hostname},
          {"taken_at", format_iso8601(b.taken_at)},
          {"taken_at_ns", b.taken_at},
          {"facts", std::move(facts)}};
}

Result<Baseline> parse_baseline(std::string_view text, std::string_view file) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded()) {
    return fail(Error::parse("not JSON", std::string(file)));
  }
  if (!j.is_object()) return fail(Error::parse("expected a JSON object", std::string(file)));
  Baseline b;
  auto schema = j.find("schema");
  if (schema == j.end()) return fail(field_error(file, "schema", "missing"));
  if (!schema->is_string() || schema->get<std::string>() != kSchema) {
    return fail(field_error(file, "schema",
                            fmt::format("expected \"{}\", got {}", kSchema, schema->dump())));
  }
  auto hostname = opt_string(j, "hostname", file, "");
  if (!hostname) return fail(hostname.error());
  b.hostname = std::move(*hostname);
  if (auto t = j.find("taken_at_ns"); t != j.end()) {
    if (!t->is_number_integer()) {
      return fail(field_error(file, "taken_at_ns",
                              fmt::format("expected an integer, got {}", t->type_name())));
    }
    b.taken_at = t->get<TimeNs>();
  }
  auto facts = j.find("facts");
  if (facts == j.end()) return fail(field_error(file, "facts", "missing"));
  if (!facts->is_array()) {
    return fail(
        field_error(file, "facts", fmt::format("expected an array, got {}", facts->type_name())));
  }
  for (std::size_t i = 0; i < facts->size(); ++i) {
    auto f = parse_fact((*facts)[i], file, fmt::format("facts[{}]", i));
    if (!f) return fail(f.error());
    if (b.find(f->key) != nullptr) {
      return fail(field_error(file, fmt::format("facts[{}].key", i),
                              fmt::format("'{}' appears twice", f->key)));
    }
    b.facts.push_back(std::move(*f));
  }
  // Sorted as capture() sorts them, whatever order a hand-edited file has.
  std::sort(b.facts.begin(), b.facts.end(),
            [](const Fact& x, const Fact& y) { return key_less(x.key, y.key); });
  return b;
}

Result<Baseline> load_baseline(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail(Error::not_found("cannot open the baseline file", path));
  std::ostringstream s;
  s << in.rdbuf();
  if (in.bad()) return fail(Error::io(path, EIO));
  return parse_baseline(s.str(), path);
}

std::string render_text(const Baseline& b) {
  std::string out =
      fmt::format("baseline of {} taken {} ({})\n", b.hostname.empty() ? "?" : b.hostname,
                  format_iso8601(b.taken_at), b.schema);
  std::size_t width = 0;
  for (const auto& f : b.facts) width = std::max(width, f.key.size());
  for (const auto& f : b.facts) {
    out += fmt::format("  {:<{}}  {}\n", f.key, width,
                       f.value ? *f.value : fmt::format("(could not read: {})", f.source));
  }
  return out;
}

}  // namespace cardiac::baseline
