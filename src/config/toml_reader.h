// SPDX-License-Identifier: Apache-2.0
// Typed reads from a toml++ table with errors that name file:line:column and the full key: the
// one reader of cardiac.toml's sections and of alert-rule files' [[rule]] tables.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <toml++/toml.h>

#include "core/clock.h"
#include "core/result.h"

namespace cardiac::config {

// `name` prefixes keys in messages ("queue" -> 'queue.policy', "rule[2]" -> 'rule[2].for'); empty
// for the top level. `origin` names the file. The table and origin must outlive the reader.
class TableReader {
 public:
  TableReader(const toml::table& table, std::string name, std::string_view origin)
      : table_(table), name_(std::move(name)), origin_(origin) {}

  // Every key of the table must be in `allowed`.
  [[nodiscard]] Status only(const std::set<std::string_view>& allowed) const;
  // Each reader leaves `out` alone when the key is absent.
  [[nodiscard]] Status get(std::string_view key, std::string& out) const;
  [[nodiscard]] Status get(std::string_view key, bool& out) const;
  [[nodiscard]] Status get(std::string_view key, unsigned& out) const;
  // An integer or a float, at least `min`.
  [[nodiscard]] Status get_number(std::string_view key, double& out, double min = 0) const;
  // `zero_ok`: 0 ("0", "0s" or 0) is a value too, for a setting where it means "every time".
  [[nodiscard]] Status get_duration(std::string_view key, DurationNs& out,
                                    bool zero_ok = false) const;
  [[nodiscard]] Status get(std::string_view key, std::vector<std::string>& out) const;
  [[nodiscard]] Status get(std::string_view key, std::map<std::string, std::string>& out) const;

  // The same reads for a caller that tells absent from present: nullopt when the key is absent,
  // an error ("'rule[0].metric' must be a string") when it has another type.
  [[nodiscard]] Result<std::optional<std::string>> string(std::string_view key) const;
  [[nodiscard]] Result<std::optional<double>> number(std::string_view key) const;

  [[nodiscard]] bool has(std::string_view key) const { return table_.contains(key); }
  // The value of `key`, null when absent.
  [[nodiscard]] const toml::node* node(std::string_view key) const { return table_.get(key); }
  // "'<name>.<key>' <what>" at the key's value, or at the table when the key is absent.
  [[nodiscard]] Error invalid(std::string_view key, std::string_view what) const;
  // The same at `at`, for a value inside the key's value ('rule[0].labels.gpu').
  [[nodiscard]] Error invalid_at(std::string_view key, const toml::node& at,
                                 std::string_view what) const;
  // "'<name>' needs '<key>' <why>" at the table.
  [[nodiscard]] Error missing(std::string_view key, std::string_view why) const;

  [[nodiscard]] std::string where(const toml::source_region& r) const;
  // Where the table itself starts ("rules.toml:3:1").
  [[nodiscard]] std::string origin() const { return where(table_.source()); }
  [[nodiscard]] std::string key_name(std::string_view key) const;

 private:
  [[nodiscard]] Error bad(std::string_view key, const toml::node& n, std::string_view what) const;
  const toml::table& table_;
  std::string name_;
  std::string_view origin_;
};

}  // namespace cardiac::config
