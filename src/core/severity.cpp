// SPDX-License-Identifier: Apache-2.0
#include "core/severity.h"

namespace cardiac {

std::string_view severity_name(Severity s) {
  switch (s) {
    case Severity::kInfo:
      return "info";
    case Severity::kWarning:
      return "warning";
    case Severity::kCritical:
      return "critical";
  }
  return "info";
}

std::optional<Severity> parse_severity(std::string_view s) {
  for (Severity v : {Severity::kInfo, Severity::kWarning, Severity::kCritical}) {
    if (severity_name(v) == s) return v;
  }
  return std::nullopt;
}

}  // namespace cardiac
