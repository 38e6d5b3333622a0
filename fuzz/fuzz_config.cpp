// SPDX-License-Identifier: Apache-2.0
// Fuzz target for cardiac.toml parsing (config::parse_config) on arbitrary text: TOML syntax
// errors from toml++, then the typed reads of every table and the [[notifier]] array.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "check.h"
#include "config/agent_config.h"
#include "config/config.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace cardiac;
  auto c = config::parse_config(fuzz::as_text(data, size), "fuzz.toml");
  if (!c) {
    CARDIAC_FUZZ_CHECK(!c.error().what().empty());
    return 0;
  }
  CARDIAC_FUZZ_CHECK(c->source == "fuzz.toml");
  (void)config::split_listen(c->agent.listen);
  return 0;
}
