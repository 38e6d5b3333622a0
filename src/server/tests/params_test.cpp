// SPDX-License-Identifier: Apache-2.0
// Tests of the API's time/duration parameter parsing and loopback classification.
#include "server/params.h"

#include <gtest/gtest.h>

namespace cardiac::server {
namespace {

constexpr TimeNs kNow = 1'700'000'000LL * kNsPerSec;

TEST(Rfc3339, ParsesUtcAndOffsets) {
  EXPECT_EQ(parse_rfc3339("2023-11-14T22:13:20Z").value(), kNow);
  EXPECT_EQ(parse_rfc3339("2023-11-14T23:13:20+01:00").value(), kNow);
  EXPECT_EQ(parse_rfc3339("2023-11-14T22:13:20.5Z").value(), kNow + 500 * kNsPerMs);
  EXPECT_EQ(parse_rfc3339("1970-01-01T00:00:00Z").value(), 0);
}

TEST(Rfc3339, RejectsMalformed) {
  for (const char* bad :
       {"2023-11-14", "2023-11-14T22:13:20", "2023-02-30T00:00:00Z", "2023-11-14T25:00:00Z",
        "2023-11-14T22:13:20Zjunk", "2023-11-14T22:13:20."}) {
    EXPECT_FALSE(parse_rfc3339(bad)) << bad;
  }
}

TEST(TimeParam, AcceptsThreeForms) {
  EXPECT_EQ(parse_time_param("1h", kNow).value(), kNow - 3600 * kNsPerSec);
  EXPECT_EQ(parse_time_param("1h30m", kNow).value(), kNow - 5400 * kNsPerSec);
  EXPECT_EQ(parse_time_param("1700000000", kNow).value(), kNow);
  EXPECT_EQ(parse_time_param("1700000000.25", kNow).value(), kNow + 250 * kNsPerMs);
  EXPECT_EQ(parse_time_param("2023-11-14T22:13:20Z", kNow).value(), kNow);
}

TEST(TimeParam, RejectsGarbageAndOverflow) {
  for (const char* bad :
       {"", "yesterday", "-1h", "inf", "1e300", "1h-", "99999999999999d", "1.2.3", "12x"}) {
    EXPECT_FALSE(parse_time_param(bad, kNow)) << bad;
  }
}

TEST(DurationParam, PositiveWithUnitOrSeconds) {
  EXPECT_EQ(parse_duration_param("2h").value(), 7200 * kNsPerSec);
  EXPECT_EQ(parse_duration_param("90").value(), 90 * kNsPerSec);
  EXPECT_EQ(parse_duration_param("250ms").value(), 250 * kNsPerMs);
  EXPECT_FALSE(parse_duration_param("0s"));
  EXPECT_FALSE(parse_duration_param("soon"));
  EXPECT_FALSE(parse_duration_param("nan"));
}

TEST(Loopback, ClassifiesHosts) {
  for (const char* yes : {"127.0.0.1", "127.1.2.3", "::1", "::ffff:127.0.0.1", "localhost"}) {
    EXPECT_TRUE(is_loopback_host(yes)) << yes;
  }
  for (const char* no : {"0.0.0.0", "10.0.0.1", "::", "127.evil.com", "127.0.0.256", ""}) {
    EXPECT_FALSE(is_loopback_host(no)) << no;
  }
}

}  // namespace
}  // namespace cardiac::server
