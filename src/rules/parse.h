// SPDX-License-Identifier: Apache-2.0
// Reads alert rules from TOML ([[rule]] tables) with errors that name file:line:column and key.
#pragma once

#include <string_view>
#include <vector>

#include "core/result.h"
#include "rules/rule.h"

namespace cardiac::rules {

// Parses `text`; `origin` names it in errors ("/etc/cardiac/rules.toml"). Checks shape only:
// whether a metric exists is the engine's business (see RuleEngine), so that one rule naming a
// metric this build lacks does not reject the whole file.
[[nodiscard]] Result<std::vector<Rule>> parse_rules(std::string_view text, std::string_view origin);

}  // namespace cardiac::rules
