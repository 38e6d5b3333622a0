// SPDX-License-Identifier: Apache-2.0
// What a re-read configuration changes: the rules' inputs, the notifiers, and the keys that
// wait for a restart.
#include <gtest/gtest.h>

#include "agent/reload.h"
#include "core/tests/temp_dir.h"

namespace cardiac::agent {
namespace {

config::Config parse(const std::string& text) {
  auto c = config::parse_config(text, "test.toml");
  EXPECT_TRUE(c.has_value()) << (c ? "" : c.error().what());
  return c ? *c : config::Config{};
}

TEST(ReloadDiff, LiveKeysAndMovedTablesNeedNoRestart) {
  const config::Config running = parse("[agent]\ninterval = \"1s\"\n");
  const config::Config next = parse(
      "[agent]\ninterval = \"1s\"\nrules = \"/etc/cardiac/rules.toml\"\ndefault_rules = false\n"
      "expected_gpus = 8\n\n[[notifier]]\ntype = \"log\"\n");
  EXPECT_TRUE(restart_keys(running, next).empty());
  EXPECT_TRUE(notifiers_changed(running, next));

  // The same notifier further down the file is the same notifier.
  const config::Config moved =
      parse("\n\n[agent]\ninterval = \"1s\"\n\n[[notifier]]\ntype = \"log\"\n");
  EXPECT_FALSE(notifiers_changed(next, moved));
  const config::Config accounts = parse("[[queue.account]]\nname = \"a\"\n");
  const config::Config accounts_moved = parse("\n\n\n[[queue.account]]\nname = \"a\"\n");
  EXPECT_TRUE(restart_keys(accounts, accounts_moved).empty());
}

TEST(ReloadDiff, EveryOtherChangedKeyIsNamed) {
  const config::Config running = parse("");
  const config::Config next = parse(
      "[nvml]\ntimeout = \"2s\"\n[agent]\nlisten = \"127.0.0.1:9999\"\nhost_interval = \"7s\"\n"
      "[kmsg]\nenabled = false\n[store]\nraw_retention = \"1d\"\n[queue]\npolicy = \"backfill\"\n"
      "[doctor]\nwindow = \"1s\"\n[fleet]\nprometheus = \"http://p:9090\"\n"
      "[security]\nwatch_interval = \"5m\"\n");
  EXPECT_EQ(restart_keys(running, next),
            (std::vector<std::string>{"[nvml]", "[agent] listen", "[agent] host_interval", "[kmsg]",
                                      "[store]", "[security]", "[fleet]", "[queue]"}));
}

TEST(ReloadDiff, RulesFingerprintFollowsTheFileContents) {
  cardiac::testing::TempDir dir;
  config::AgentSettings a;
  a.rules_file = dir.write("rules.toml", "[[rule]]\nname = \"x\"\n");
  const std::string before = rules_fingerprint(a);
  EXPECT_EQ(rules_fingerprint(a), before);
  dir.write("rules.toml", "[[rule]]\nname = \"y\"\n");
  EXPECT_NE(rules_fingerprint(a), before);
  config::AgentSettings b = a;
  b.default_rules = false;
  EXPECT_NE(rules_fingerprint(b), rules_fingerprint(a));
  b = a;
  b.expected_gpus = 4;
  EXPECT_NE(rules_fingerprint(b), rules_fingerprint(a));
}

}  // namespace
}  // namespace cardiac::agent
