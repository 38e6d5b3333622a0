// SPDX-License-Identifier: Apache-2.0
// Tests for the `journalctl -o json` line scanner.
#include <gtest/gtest.h>

#include <string>

#include "kmsg/record.h"

namespace cardiac::kmsg {
namespace {

TEST(JournalJson, KernelRecord) {
  auto e = parse_journal_json(
      R"({"__CURSOR":"s=abc;i=1","__REALTIME_TIMESTAMP":"1709677436123456",)"
      R"("__MONOTONIC_TIMESTAMP":"219471000","_BOOT_ID":"8f3a","_TRANSPORT":"kernel",)"
      R"("PRIORITY":"4","SYSLOG_IDENTIFIER":"kernel","_SOURCE_MONOTONIC_TIMESTAMP":"219470994",)"
      R"("MESSAGE":"NVRM: Xid (PCI:0000:07:00): 48, pid='<unknown>', name=<unknown>, DBE"})");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->message, "NVRM: Xid (PCI:0000:07:00): 48, pid='<unknown>', name=<unknown>, DBE");
  EXPECT_EQ(e->time_ns, 1709677436123456000LL);
  EXPECT_EQ(e->monotonic_us, 219470994);
  EXPECT_EQ(e->boot_id, "8f3a");
  EXPECT_TRUE(e->kernel);
}

TEST(JournalJson, EscapesByteArraysAndFallbackMonotonic) {
  auto e = parse_journal_json(
      R"({"MESSAGE":"a\nb \"q\" \u00e9 \ud83d\ude00 \\","__MONOTONIC_TIMESTAMP":"5","x":null})");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->message, "a\nb \"q\" \xc3\xa9 \xf0\x9f\x98\x80 \\");
  EXPECT_EQ(e->monotonic_us, 5);
  EXPECT_FALSE(e->time_ns);
  e = parse_journal_json(R"({"MESSAGE":[78,86,82,77,255],"n":[1,[2,{"a":"b"}]]})");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->message, std::string("NVRM\xff"));
}

TEST(JournalJson, UserSpaceIsNotKernel) {
  auto e = parse_journal_json(
      R"({"_TRANSPORT":"syslog","SYSLOG_IDENTIFIER":"kernel","MESSAGE":"NVRM: Xid fake"})");
  ASSERT_TRUE(e);
  EXPECT_FALSE(e->kernel);
  e = parse_journal_json(R"({"SYSLOG_IDENTIFIER":"sshd","MESSAGE":"x"})");
  ASSERT_TRUE(e);
  EXPECT_FALSE(e->kernel);
}

TEST(JournalJson, ImplausibleRealtimeIsLeftOut) {
  // fuzz/crashes-found/kmsg-journal-json-realtime-overflow: µs → ns used to overflow.
  auto e = parse_journal_json(R"({"__REALTIME_TIMESTAMP":"100000000000000000","MESSAGE":"x"})");
  ASSERT_TRUE(e);
  EXPECT_FALSE(e->time_ns);
}

TEST(JournalJson, RejectsNonObjectsAndBrokenLines) {
  for (const char* bad :
       {"", "{}", "[1,2]", "NVRM: Xid", R"({"MESSAGE":"cut)", R"({"MESSAGE" "x"})", R"({"a":"b"})",
        R"({"MESSAGE":"x",})", R"({"MESSAGE":"\q"})", R"({"MESSAGE":[300]})"}) {
    EXPECT_FALSE(parse_journal_json(bad)) << bad;
  }
}

TEST(JournalJson, GarbageNeverCrashes) {
  std::string s = R"({"MESSAGE":)";
  for (int i = 0; i < 3000; ++i) {
    s.push_back(static_cast<char>((i * 61 + 11) % 256));
    (void)parse_journal_json(s);
  }
  std::string deep(5000, '[');
  (void)parse_journal_json("{\"a\":" + deep);
  SUCCEED();
}

}  // namespace
}  // namespace cardiac::kmsg
