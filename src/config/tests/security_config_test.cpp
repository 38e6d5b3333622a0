// SPDX-License-Identifier: Apache-2.0
// [security]: allow lists read, and bad entries refused with the file, line and key.
#include <gtest/gtest.h>

#include "config/config.h"
#include "config/security_config.h"

namespace cardiac::config {
namespace {

TEST(SecurityConfig, DefaultsAreEmpty) {
  auto c = parse_config(default_config_text(), "default");
  ASSERT_TRUE(c) << c.error().what();
  EXPECT_TRUE(c->security.allowed_gpu_commands.empty());
  EXPECT_TRUE(c->security.allowed_listen_ports.empty());
  EXPECT_EQ(c->security.watch_interval, 60 * kNsPerSec);
}

TEST(SecurityConfig, WatchIntervalIsADurationAndZeroTurnsTheWatchOff) {
  auto c = parse_config("[security]\nwatch_interval = \"5m\"\n", "c.toml");
  ASSERT_TRUE(c) << c.error().what();
  EXPECT_EQ(c->security.watch_interval, 300 * kNsPerSec);
  c = parse_config("[security]\nwatch_interval = \"0s\"\n", "c.toml");
  ASSERT_TRUE(c) << c.error().what();
  EXPECT_EQ(c->security.watch_interval, 0);
  c = parse_config("[security]\n\nwatch_interval = \"soon\"\n", "c.toml");
  ASSERT_FALSE(c);
  EXPECT_NE(std::string(c.error().what()).find("c.toml:3"), std::string::npos) << c.error().what();
  EXPECT_NE(std::string(c.error().what()).find("watch_interval"), std::string::npos)
      << c.error().what();
}

TEST(SecurityConfig, ReadsGlobsRegexesPortsAndRanges) {
  auto c = parse_config(
      "[security]\n"
      "allowed_gpu_commands = [\"/opt/render/bin/*\", \"re:^python3? .*serve\\\\.py\"]\n"
      "allowed_listen_ports = [22, \"udp/53\", \"tcp/8000-8100\", \" 9847 \"]\n",
      "c.toml");
  ASSERT_TRUE(c) << c.error().what();
  EXPECT_EQ(c->security.allowed_gpu_commands,
            (std::vector<std::string>{"/opt/render/bin/*", "re:^python3? .*serve\\.py"}));
  std::vector<ListenPortRange> want = {
      {"", 22, 22}, {"udp", 53, 53}, {"tcp", 8000, 8100}, {"", 9847, 9847}};
  EXPECT_EQ(c->security.allowed_listen_ports, want);
}

// Each bad entry is refused naming the file, the line of the entry and the key.
TEST(SecurityConfig, BadEntriesNameFileLineAndField) {
  struct Case {
    std::string text;
    std::string line;
    std::string says;
  };
  const std::vector<Case> cases = {
      {"[security]\n\nallowed_gpu_commands = [\"ok\", \"re:(unclosed\"]\n", "c.toml:3",
       "is not a regular expression"},
      {"[security]\nallowed_gpu_commands = [\"\"]\n", "c.toml:2", "empty pattern"},
      {"[security]\nallowed_gpu_commands = \"xmrig\"\n", "c.toml:2", "array of strings"},
      {"[security]\nallowed_listen_ports = [22, 70000]\n", "c.toml:2", "\"70000\" is not a port"},
      {"[security]\nallowed_listen_ports = [\"sctp/22\"]\n", "c.toml:2", "tcp or udp"},
      {"[security]\nallowed_listen_ports = [\"9000-8000\"]\n", "c.toml:2", "ends below its start"},
      {"[security]\nallowed_listen_ports = [\"ssh\"]\n", "c.toml:2", "\"ssh\" is not a port"},
      {"[security]\nallowed_listen_ports = [true]\n", "c.toml:2", "a port number or a string"},
      {"[security]\nallowed_listen_ports = 22\n", "c.toml:2", "must be an array"},
      {"[security]\nallowed_ports = [22]\n", "c.toml:2", "allowed_ports"},
  };
  for (const auto& k : cases) {
    auto c = parse_config(k.text, "c.toml");
    ASSERT_FALSE(c) << k.text;
    const std::string what = c.error().what();
    EXPECT_NE(what.find(k.line), std::string::npos) << what;
    EXPECT_NE(what.find(k.says), std::string::npos) << what;
    if (k.says != "allowed_ports") {
      EXPECT_NE(what.find("security.allowed_"), std::string::npos) << what;
    }
  }
}

}  // namespace
}  // namespace cardiac::config
