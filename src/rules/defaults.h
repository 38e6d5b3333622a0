// SPDX-License-Identifier: Apache-2.0
// The built-in alert rules, kept as TOML text so users can print, copy and edit them.
#pragma once

#include <string_view>
#include <vector>

#include "core/result.h"
#include "rules/rule.h"

namespace cardiac::rules {

// The default rule set as TOML; each rule's comment names where its threshold comes from.
std::string_view default_rules_text();

// default_rules_text() parsed (origin "<default rules>").
[[nodiscard]] Result<std::vector<Rule>> default_rules();

}  // namespace cardiac::rules
