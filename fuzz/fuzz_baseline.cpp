// SPDX-License-Identifier: Apache-2.0
// Fuzz target for the `cardiac.baseline/v1` reader (src/baseline/json.cpp): a baseline file as
// anyone may have edited it. A baseline that parses has non-empty, distinct keys; it must write
// back to JSON that parses to the same baseline (nothing lost, nothing invented), render as
// text, and compare against itself with no difference, and against a host with no facts with
// one difference for each fact the baseline could read (compare() is pure).
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>

#include "baseline/baseline.h"
#include "baseline/json.h"
#include "check.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace cardiac::baseline;
  const std::string_view text = cardiac::fuzz::as_text(data, size);
  auto b = parse_baseline(text, "base.json");
  if (!b) {
    CARDIAC_FUZZ_CHECK(b.error().what().find("base.json") != std::string::npos);
    return 0;
  }
  std::set<std::string> keys;
  std::size_t readable = 0;
  for (const auto& f : b->facts) {
    CARDIAC_FUZZ_CHECK(!f.key.empty());
    CARDIAC_FUZZ_CHECK(keys.insert(f.key).second);
    if (f.value) ++readable;
  }
  auto back = parse_baseline(to_json(*b).dump(), "back.json");
  CARDIAC_FUZZ_CHECK(back && *back == *b);
  (void)render_text(*b);

  CARDIAC_FUZZ_CHECK(compare(*b, *b).empty());
  const auto missing = compare(*b, Baseline{});
  CARDIAC_FUZZ_CHECK(missing.size() == readable);
  for (const auto& d : missing) {
    CARDIAC_FUZZ_CHECK(keys.contains(d.key) && d.expected && !d.here && !d.unreadable);
    CARDIAC_FUZZ_CHECK(!d.sentence().empty());
  }
  return 0;
}
