// SPDX-License-Identifier: Apache-2.0
// How bad something is, shared by alert rules and the doctor's findings so that a rule's
// "critical" and a finding's "critical" are one thing with one spelling.
#pragma once

#include <optional>
#include <string_view>

namespace cardiac {

enum class Severity { kInfo = 0, kWarning = 1, kCritical = 2 };

std::string_view severity_name(Severity s);  // "info", "warning", "critical"
std::optional<Severity> parse_severity(std::string_view s);

}  // namespace cardiac
