// SPDX-License-Identifier: Apache-2.0
// Configuration parsing: defaults, values, and errors that point at the line.
#include <gtest/gtest.h>

#include "config/agent_config.h"
#include "config/config.h"

namespace cardiac::config {
namespace {

TEST(Config, EmptyTextGivesDefaults) {
  auto c = parse_config("", "cardiac.toml");
  ASSERT_TRUE(c) << c.error().what();
  EXPECT_EQ(c->nvml.library, "");
  EXPECT_EQ(c->nvml.timeout, 5 * kNsPerSec);
  EXPECT_EQ(c->host.root, "/");
}

TEST(Config, TheDefaultTextParsesToTheDefaults) {
  auto c = parse_config(default_config_text(), "default");
  ASSERT_TRUE(c) << c.error().what();
  EXPECT_EQ(c->nvml.timeout, Config{}.nvml.timeout);
}

TEST(Config, ReadsValues) {
  auto c = parse_config("[nvml]\nlibrary = \"/opt/nv/libnvidia-ml.so.1\"\ntimeout = \"750ms\"\n",
                        "cardiac.toml");
  ASSERT_TRUE(c) << c.error().what();
  EXPECT_EQ(c->nvml.library, "/opt/nv/libnvidia-ml.so.1");
  EXPECT_EQ(c->nvml.timeout, 750 * kNsPerMs);
}

TEST(Config, QueueSection) {
  auto d = parse_config(default_config_text(), "default");
  ASSERT_TRUE(d) << d.error().what();
  EXPECT_EQ(d->queue.policy, "fcfs");
  EXPECT_EQ(d->queue.retry_limit, QueueSettings{}.retry_limit);
  EXPECT_EQ(d->queue.grace, QueueSettings{}.grace);
  auto c = parse_config(
      "[queue]\npolicy = \"backfill:priority\"\nadmin_group = \"gpu-admins\"\n"
      "retry_limit = 5\nbackoff = \"1m\"\ngrace = \"30s\"\ncount_outside_processes = false\n"
      "enabled = false\n",
      "cardiac.toml");
  ASSERT_TRUE(c) << c.error().what();
  EXPECT_EQ(c->queue.policy, "backfill:priority");
  EXPECT_EQ(c->queue.admin_group, "gpu-admins");
  EXPECT_EQ(c->queue.retry_limit, 5u);
  EXPECT_EQ(c->queue.backoff, 60 * kNsPerSec);
  EXPECT_EQ(c->queue.grace, 30 * kNsPerSec);
  EXPECT_FALSE(c->queue.count_outside_processes);
  EXPECT_FALSE(c->queue.enabled);
  auto bad = parse_config("[queue]\nretries = 2\n", "cardiac.toml");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().what().find("queue.retries"), std::string::npos);
}

TEST(Config, UnknownKeyNamesFileLineAndKey) {
  auto c = parse_config("[nvml]\n\ntimout = \"5s\"\n", "/etc/cardiac/cardiac.toml");
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().what(), "/etc/cardiac/cardiac.toml:3:1: unknown key 'nvml.timout'");
}

TEST(Config, SyntaxErrorNamesTheLine) {
  auto c = parse_config("[nvml]\nlibrary = \"unterminated\n", "x.toml");
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().code, ErrorCode::kParse);
  EXPECT_TRUE(c.error().context.starts_with("x.toml:2:")) << c.error().what();
}

TEST(Config, WrongTypesAreRejected) {
  EXPECT_FALSE(parse_config("[nvml]\ntimeout = \"soon\"\n", "x"));
  EXPECT_FALSE(parse_config("[nvml]\ntimeout = -1.0\n", "x"));
  EXPECT_FALSE(parse_config("[nvml]\nlibrary = 3\n", "x"));
  EXPECT_FALSE(parse_config("nvml = 3\n", "x"));
  EXPECT_TRUE(parse_config("[nvml]\ntimeout = 2.5\n", "x"));
}

TEST(Config, MissingDefaultFileIsDefaultsButANamedOneIsAnError) {
  EXPECT_TRUE(load_config("/nonexistent/cardiac.toml", false));
  EXPECT_FALSE(load_config("/tmp", true));
  auto named = load_config("/nonexistent/cardiac.toml", true);
  ASSERT_FALSE(named);
  EXPECT_NE(named.error().what().find("/nonexistent/cardiac.toml"), std::string::npos);
}

}  // namespace
}  // namespace cardiac::config

namespace cardiac::config {
namespace {

TEST(AgentConfig, ReadsAgentStoreKmsgAndNotifiers) {
  auto c = parse_config(R"(
[agent]
listen = "127.0.0.1:19847"
interval = "100ms"
metrics_compat = "dcgm"
expected_gpus = 8
[store]
raw_retention = "2d"
[kmsg]
source = "/var/log/kern.log"
[[notifier]]
type = "alertmanager"
url = "http://127.0.0.1:9093"
[[notifier]]
type = "exec"
argv = ["/usr/bin/logger", "-t", "cardiac"]
)",
                        "a.toml");
  ASSERT_TRUE(c) << c.error().what();
  EXPECT_EQ(c->agent.interval, 100 * kNsPerMs);
  EXPECT_EQ(c->agent.metrics_compat, "dcgm");
  EXPECT_EQ(c->agent.expected_gpus, 8u);
  EXPECT_EQ(c->store.raw_retention, 2 * 86400 * kNsPerSec);
  EXPECT_EQ(c->kmsg.source, "/var/log/kern.log");
  ASSERT_EQ(c->notifiers.size(), 2u);
  EXPECT_EQ(c->notifiers[1].argv.at(2), "cardiac");
}

TEST(AgentConfig, BadNotifiersAndListenAreNamed) {
  auto no_url = parse_config("[[notifier]]\ntype = \"webhook\"\n", "n.toml");
  ASSERT_FALSE(no_url);
  EXPECT_EQ(no_url.error().what(), "n.toml:1:1: 'notifier[0].type' needs a url");
  auto shell = parse_config("[[notifier]]\ntype = \"exec\"\nargv = [\"notify.sh\"]\n", "n.toml");
  ASSERT_FALSE(shell);
  EXPECT_NE(shell.error().what().find("absolute program path"), std::string::npos);
  auto kind = parse_config("[[notifier]]\ntype = \"pager\"\n", "n.toml");
  EXPECT_FALSE(kind);
  auto listen = parse_config("[agent]\nlisten = \"localhost\"\n", "l.toml");
  ASSERT_FALSE(listen);
  EXPECT_NE(listen.error().what().find("l.toml:2:"), std::string::npos) << listen.error().what();
  EXPECT_FALSE(parse_config("[agent]\nmetrics_compat = \"dcmg\"\n", "x"));
  EXPECT_FALSE(parse_config("[agent]\ninterval = \"0s\"\n", "x"));
}

}  // namespace
TEST(Config, NumericDurationTooLargeIsAnErrorNotAWrappedValue) {
  auto c = parse_config("[agent]\ninterval = 10000000000\n", "cardiac.toml");
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().what().find("interval"), std::string::npos) << c.error().what();
  auto d = parse_config("[agent]\ninterval = \"200000d\"\n", "cardiac.toml");
  ASSERT_FALSE(d);
}

}  // namespace cardiac::config

namespace cardiac::config {
namespace {

TEST(Config, ServingSection) {
  auto c = parse_config(
      "[serving]\nengines = [\"http://127.0.0.1:8000/metrics\", \"https://h:30000/metrics\"]\n"
      "scrape_interval = \"5s\"\nvram_min_span = \"2s\"\nvram_step = \"1s\"\n"
      "vram_min_growth_mib = 1.5\n",
      "c.toml");
  ASSERT_TRUE(c) << c.error().what();
  EXPECT_EQ(c->serving.engines.size(), 2U);
  EXPECT_EQ(c->serving.scrape_interval, 5 * kNsPerSec);
  EXPECT_EQ(c->serving.vram_min_span, 2 * kNsPerSec);
  EXPECT_DOUBLE_EQ(c->serving.vram_min_growth_mib, 1.5);
  EXPECT_EQ(c->serving.vram_window, 30 * 60 * kNsPerSec);  // default kept
}

TEST(Config, ServingErrorsNameTheEntry) {
  auto c =
      parse_config("[serving]\nengines = [\"http://a/metrics\", \"127.0.0.1:8000\"]\n", "c.toml");
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().what().find("c.toml:2"), std::string::npos) << c.error().what();
  EXPECT_NE(c.error().what().find("127.0.0.1:8000"), std::string::npos) << c.error().what();
  c = parse_config("[serving]\nvram_window = \"5m\"\n", "c.toml");
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().what().find("vram_min_span"), std::string::npos) << c.error().what();
  c = parse_config("[serving]\nengine = []\n", "c.toml");
  ASSERT_FALSE(c);
}

}  // namespace
}  // namespace cardiac::config

namespace cardiac::config {
namespace {

TEST(AgentAddress, WildcardsMeanThisHostsLoopback) {
  auto a = agent_address("0.0.0.0:9847");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->host, "127.0.0.1");
  EXPECT_EQ(a->port, 9847);
  EXPECT_EQ(agent_address("[::]:1")->host, "::1");
  EXPECT_EQ(agent_address("[fe80::1]:80")->host, "fe80::1");
  EXPECT_EQ(agent_address("10.0.0.2:9847")->host, "10.0.0.2");
  EXPECT_FALSE(agent_address("localhost"));
  EXPECT_FALSE(agent_address("h:0"));
  EXPECT_FALSE(agent_address("h:70000"));
}

}  // namespace
}  // namespace cardiac::config
