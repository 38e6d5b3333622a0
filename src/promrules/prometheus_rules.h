// SPDX-License-Identifier: Apache-2.0
// Exports cardiac alert rules as a Prometheus alerting-rules file over the /metrics names.
#pragma once

#include <string>
#include <vector>

#include "rules/rule.h"

namespace cardiac::promrules {

// One group "cardiac" with one alert per rule; each expr reads only the metric families of
// metrics::metric_registry(), converted back to the rule's units (ratios x100, etc.). A rule
// that cannot be expressed over exported metrics is left out and, when `skipped` is set,
// listed there as "<rule>: <reason>". Hysteresis (`clear`) is kept by the ALERTS-series
// pattern: past the threshold fires, and a firing alert holds while the clear condition does.
std::string export_prometheus_rules(const std::vector<rules::Rule>& rules,
                                    std::vector<std::string>* skipped);

// Prometheus duration text: 300 s -> "5m", 3600 s -> "1h", 1.5 s -> "1500ms".
std::string prometheus_duration(DurationNs ns);

// A YAML double-quoted scalar, with quotes, backslashes and control characters escaped.
std::string yaml_quote(std::string_view s);

}  // namespace cardiac::promrules
