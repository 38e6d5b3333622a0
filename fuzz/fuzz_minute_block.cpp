// SPDX-License-Identifier: Apache-2.0
// Fuzz target for the store's minute blocks (src/store/minute_blocks.h): decode_minute_block on
// arbitrary bytes, in either layout (packed, or the first one of varints and doubles). It must
// fail or decode without a sanitizer report; what decodes has ascending minutes of its hour, and
// encodes again to a packed block that decodes to the same buckets, bit for bit.
//
// The input is the block itself, decoded for the hour 2023-11-14T22:00Z.
//
// CARDIAC_FUZZ_WRITE_SEEDS=DIR build-fuzz/fuzz/fuzz_minute_block writes seed blocks (both
// layouts) into DIR and exits (scripts/fuzz.sh).
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "check.h"
#include "store/minute_blocks.h"
#include "store/retention.h"

namespace {

using cardiac::TimeNs;
using cardiac::store::MinuteBucket;

constexpr TimeNs kHour = 1'700'000'000LL / 3600 * 3600 * cardiac::kNsPerSec;

bool same_bits(double a, double b) {
  return std::bit_cast<std::uint64_t>(a) == std::bit_cast<std::uint64_t>(b);
}

void put_double(std::string& out, double d) {
  const auto u = std::bit_cast<std::uint64_t>(d);
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((u >> (8 * i)) & 0xff));
}

int write_seeds(const std::string& dir) {
  std::vector<MinuteBucket> flat;
  std::vector<MinuteBucket> varied;
  for (int m = 0; m < 60; ++m) {
    const TimeNs t = kHour + m * cardiac::store::kMinuteNs;
    flat.push_back({t, 700, 700, 700, 60});
    if (m % 7 != 3) {
      varied.push_back({t, 55.0 + m % 2, 56.0 + (m * 7 % 23) / 22.0, 57.0 + m % 3, 60 - m % 4});
    }
  }
  // Minute 59 (left out above) with odd values.
  varied.push_back({kHour + 59 * cardiac::store::kMinuteNs, -0.0,
                    std::numeric_limits<double>::quiet_NaN(),
                    std::numeric_limits<double>::infinity(), 1});
  std::string first_layout = "\x02\x06\x3c\x03";  // minutes 3 and 5, the first layout
  put_double(first_layout, 41.5);
  first_layout += "\x0a\x3b";
  first_layout += '\0';
  put_double(first_layout, 40);
  put_double(first_layout, 44);
  put_double(first_layout, 42.25);
  const std::vector<std::string> seeds = {cardiac::store::encode_minute_block(kHour, flat),
                                          cardiac::store::encode_minute_block(kHour, varied),
                                          first_layout};
  for (std::size_t i = 0; i < seeds.size(); ++i) {
    std::ofstream(dir + "/seed-" + std::to_string(i), std::ios::binary) << seeds[i];
  }
  return 0;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  cardiac::fuzz::write_seeds_if_asked(write_seeds);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view in = cardiac::fuzz::as_text(data, size);
  auto got = cardiac::store::decode_minute_block(in, kHour);
  if (!got) return 0;
  for (std::size_t i = 0; i < got->size(); ++i) {
    const MinuteBucket& b = (*got)[i];
    CARDIAC_FUZZ_CHECK(b.bucket > kHour - cardiac::store::kHourNs &&
                       b.bucket < kHour + cardiac::store::kHourNs);
    CARDIAC_FUZZ_CHECK(i == 0 || (*got)[i - 1].bucket < b.bucket);
  }
  const std::string again = cardiac::store::encode_minute_block(kHour, *got);
  auto back = cardiac::store::decode_minute_block(again, kHour);
  CARDIAC_FUZZ_CHECK(back.has_value() && back->size() == got->size());
  for (std::size_t i = 0; i < got->size(); ++i) {
    const MinuteBucket& a = (*got)[i];
    const MinuteBucket& b = (*back)[i];
    CARDIAC_FUZZ_CHECK(a.bucket == b.bucket && a.count == b.count);
    CARDIAC_FUZZ_CHECK(same_bits(a.min, b.min) && same_bits(a.avg, b.avg) &&
                       same_bits(a.max, b.max));
  }
  return 0;
}
