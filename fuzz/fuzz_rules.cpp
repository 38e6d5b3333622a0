// SPDX-License-Identifier: Apache-2.0
// Fuzz target for alert-rule files (rules::parse_rules, [[rule]] tables in TOML); rules that
// parse are also exported as Prometheus alerting rules, as `cardiac export prometheus-rules`
// does with a user's rules file.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "check.h"
#include "promrules/prometheus_rules.h"
#include "rules/parse.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace cardiac;
  auto r = rules::parse_rules(fuzz::as_text(data, size), "fuzz-rules.toml");
  if (!r) {
    CARDIAC_FUZZ_CHECK(!r.error().what().empty());
    return 0;
  }
  std::vector<std::string> skipped;
  (void)promrules::export_prometheus_rules(*r, &skipped);
  return 0;
}
