// SPDX-License-Identifier: Apache-2.0
// TableReader implementation.
#include "config/toml_reader.h"

#include <utility>

#include "core/format.h"
#include "core/strings.h"

namespace cardiac::config {

std::string TableReader::where(const toml::source_region& r) const {
  return fmt::format("{}:{}:{}", origin_, r.begin.line, r.begin.column);
}

std::string TableReader::key_name(std::string_view key) const {
  return name_.empty() ? std::string(key) : fmt::format("{}.{}", name_, key);
}

Error TableReader::bad(std::string_view key, const toml::node& n, std::string_view what) const {
  return invalid_at(key, n, fmt::format("must be {}", what));
}

Error TableReader::invalid_at(std::string_view key, const toml::node& at,
                              std::string_view what) const {
  return Error::invalid(fmt::format("'{}' {}", key_name(key), what), where(at.source()));
}

Error TableReader::invalid(std::string_view key, std::string_view what) const {
  const toml::node* n = table_.get(key);
  return invalid_at(key, n ? *n : static_cast<const toml::node&>(table_), what);
}

Error TableReader::missing(std::string_view key, std::string_view why) const {
  return Error::invalid(fmt::format("'{}' needs '{}' {}", name_, key, why), origin());
}

Result<std::optional<std::string>> TableReader::string(std::string_view key) const {
  const toml::node* n = table_.get(key);
  if (!n) return std::optional<std::string>{};
  if (auto s = n->value<std::string>()) return std::optional<std::string>{std::move(s)};
  return fail(bad(key, *n, "a string"));
}

Result<std::optional<double>> TableReader::number(std::string_view key) const {
  const toml::node* n = table_.get(key);
  if (!n) return std::optional<double>{};
  if (n->is_number()) return std::optional<double>{n->value<double>()};
  return fail(bad(key, *n, "a number"));
}

Status TableReader::only(const std::set<std::string_view>& allowed) const {
  for (const auto& [key, node] : table_) {
    (void)node;
    if (!allowed.count(key.str())) {
      return fail(Error::invalid(fmt::format("unknown key '{}'", key_name(key.str())),
                                 where(key.source())));
    }
  }
  return {};
}

Status TableReader::get(std::string_view key, std::string& out) const {
  const toml::node* n = table_.get(key);
  if (!n) return {};
  auto v = n->value<std::string>();
  if (!v) return fail(bad(key, *n, "a string"));
  out = *v;
  return {};
}

Status TableReader::get(std::string_view key, bool& out) const {
  const toml::node* n = table_.get(key);
  if (!n) return {};
  auto v = n->value<bool>();
  if (!v) return fail(bad(key, *n, "true or false"));
  out = *v;
  return {};
}

Status TableReader::get(std::string_view key, unsigned& out) const {
  const toml::node* n = table_.get(key);
  if (!n) return {};
  auto v = n->value<std::int64_t>();
  if (!v || *v < 0 || *v > 1'000'000) return fail(bad(key, *n, "a non-negative integer"));
  out = static_cast<unsigned>(*v);
  return {};
}

Status TableReader::get_number(std::string_view key, double& out, double min) const {
  const toml::node* n = table_.get(key);
  if (!n) return {};
  auto v = n->is_number() ? n->value<double>() : std::nullopt;
  if (!v || !(*v >= min) || *v > 1e15) {
    return fail(bad(key, *n, fmt::format("a number of at least {}", min)));
  }
  out = *v;
  return {};
}

Status TableReader::get_duration(std::string_view key, DurationNs& out, bool zero_ok) const {
  const toml::node* n = table_.get(key);
  if (!n) return {};
  std::optional<std::int64_t> ns;
  if (auto s = n->value<std::string>()) ns = parse_duration_ns(*s);
  if (n->is_number()) {
    // Beyond ~292 years the nanoseconds do not fit in int64: rejected below as not a duration.
    if (auto d = n->value<double>(); d && *d * 1e9 <= 9.2e18 && *d * 1e9 >= -9.2e18) {
      ns = static_cast<std::int64_t>(*d * 1e9);
    }
  }
  if (zero_ok && n->value<std::string>() == "0") ns = 0;
  if (!ns || *ns < 0 || (*ns == 0 && !zero_ok)) {
    return fail(bad(key, *n,
                    zero_ok ? "0 or a positive duration such as \"5m\" or \"30s\""
                            : "a positive duration such as \"5s\" or \"500ms\""));
  }
  out = *ns;
  return {};
}

Status TableReader::get(std::string_view key, std::vector<std::string>& out) const {
  const toml::node* n = table_.get(key);
  if (!n) return {};
  const toml::array* arr = n->as_array();
  if (!arr) return fail(bad(key, *n, "an array of strings"));
  std::vector<std::string> items;
  for (const auto& item : *arr) {
    auto s = item.value<std::string>();
    if (!s) return fail(bad(key, item, "an array of strings"));
    items.push_back(*s);
  }
  out = std::move(items);
  return {};
}

Status TableReader::get(std::string_view key, std::map<std::string, std::string>& out) const {
  const toml::node* n = table_.get(key);
  if (!n) return {};
  const toml::table* t = n->as_table();
  if (!t) return fail(bad(key, *n, "a table of strings"));
  for (const auto& [k, v] : *t) {
    auto s = v.value<std::string>();
    if (!s) return fail(bad(key, v, "a table of strings"));
    out[std::string(k.str())] = *s;
  }
  return {};
}

}  // namespace cardiac::config
