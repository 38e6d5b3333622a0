// SPDX-License-Identifier: Apache-2.0
// Typed reads from a toml++ table with errors that name file:line:column and the full key.
#pragma once

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <toml++/toml.h>

#include "core/clock.h"
#include "core/result.h"

namespace cardiac::config {

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
  [[nodiscard]] Status get_duration(std::string_view key, DurationNs& out) const;
  [[nodiscard]] Status get(std::string_view key, std::vector<std::string>& out) const;
  [[nodiscard]] Status get(std::string_view key, std::map<std::string, std::string>& out) const;

  [[nodiscard]] std::string where(const toml::source_region& r) const;
  [[nodiscard]] std::string key_name(std::string_view key) const;

 private:
  [[nodiscard]] Error bad(std::string_view key, const toml::node& n, std::string_view what) const;
  const toml::table& table_;
  std::string name_;
  std::string_view origin_;
};

}  // namespace cardiac::config
