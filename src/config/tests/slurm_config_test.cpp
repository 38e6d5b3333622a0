// SPDX-License-Identifier: Apache-2.0
// The [slurm] table: defaults, values, and errors that name the key and line.
#include <gtest/gtest.h>

#include "config/config.h"

namespace cardiac::config {
namespace {

TEST(SlurmConfig, DefaultTextGivesTheDefaults) {
  auto c = parse_config(default_config_text(), "default");
  ASSERT_TRUE(c) << c.error().what();
  const SlurmSettings d;
  EXPECT_EQ(c->slurm.scontrol, "scontrol");
  EXPECT_EQ(c->slurm.scontrol_timeout, d.scontrol_timeout);
  EXPECT_EQ(c->slurm.drain_limit_percent, 10);
  EXPECT_EQ(c->slurm.drain_limit_min_nodes, 1u);
  EXPECT_EQ(c->slurm.drain_limit_max_nodes, 0u);
  EXPECT_EQ(c->slurm.drain_window, 600 * kNsPerSec);
}

TEST(SlurmConfig, ReadsValues) {
  auto c = parse_config(
      "[slurm]\nscontrol = \"/opt/slurm/bin/scontrol\"\nscontrol_timeout = \"3s\"\n"
      "drain_limit_percent = 5\ndrain_limit_min_nodes = 2\ndrain_limit_max_nodes = 20\n"
      "drain_window = \"1h\"\n",
      "cardiac.toml");
  ASSERT_TRUE(c) << c.error().what();
  EXPECT_EQ(c->slurm.scontrol, "/opt/slurm/bin/scontrol");
  EXPECT_EQ(c->slurm.scontrol_timeout, 3 * kNsPerSec);
  EXPECT_EQ(c->slurm.drain_limit_percent, 5);
  EXPECT_EQ(c->slurm.drain_limit_min_nodes, 2u);
  EXPECT_EQ(c->slurm.drain_limit_max_nodes, 20u);
  EXPECT_EQ(c->slurm.drain_window, 3600 * kNsPerSec);
}

TEST(SlurmConfig, BadValuesNameTheKeyAndLine) {
  auto pct = parse_config("[slurm]\n\ndrain_limit_percent = 150\n", "cardiac.toml");
  ASSERT_FALSE(pct);
  EXPECT_NE(pct.error().what().find("slurm.drain_limit_percent"), std::string::npos)
      << pct.error().what();
  EXPECT_NE(pct.error().what().find("cardiac.toml:3"), std::string::npos) << pct.error().what();
  auto window = parse_config("[slurm]\ndrain_window = \"soon\"\n", "cardiac.toml");
  ASSERT_FALSE(window);
  EXPECT_NE(window.error().what().find("slurm.drain_window"), std::string::npos);
  auto typo = parse_config("[slurm]\ndrain_limit = 3\n", "cardiac.toml");
  ASSERT_FALSE(typo);
  EXPECT_NE(typo.error().what().find("drain_limit"), std::string::npos);
  auto empty = parse_config("[slurm]\nscontrol = \"\"\n", "cardiac.toml");
  ASSERT_FALSE(empty);
  EXPECT_NE(empty.error().what().find("slurm.scontrol"), std::string::npos);
}

}  // namespace
}  // namespace cardiac::config

namespace cardiac::config {
namespace {

TEST(FleetConfig, DefaultsAndValues) {
  auto d = parse_config(default_config_text(), "default");
  ASSERT_TRUE(d) << d.error().what();
  EXPECT_EQ(d->fleet, FleetSettings{});
  EXPECT_EQ(d->fleet.job, "cardiac");
  auto c = parse_config(
      "[fleet]\nprometheus = \"http://prom:9090\"\njob = \"gpu\"\ntimeout = \"3s\"\n"
      "bearer_token_file = \"/etc/cardiac/prom-token\"\n",
      "cardiac.toml");
  ASSERT_TRUE(c) << c.error().what();
  EXPECT_EQ(c->fleet.prometheus, "http://prom:9090");
  EXPECT_EQ(c->fleet.job, "gpu");
  EXPECT_EQ(c->fleet.timeout, 3 * kNsPerSec);
  EXPECT_EQ(c->fleet.bearer_token_file, "/etc/cardiac/prom-token");
}

TEST(FleetConfig, BadValuesNameTheKeyAndLine) {
  auto job = parse_config("[fleet]\n\njob = \"\"\n", "cardiac.toml");
  ASSERT_FALSE(job);
  EXPECT_NE(job.error().what().find("fleet.job"), std::string::npos) << job.error().what();
  EXPECT_NE(job.error().what().find("cardiac.toml:3"), std::string::npos) << job.error().what();
  auto zero = parse_config("[fleet]\ntimeout = \"0s\"\n", "cardiac.toml");
  ASSERT_FALSE(zero);
  EXPECT_NE(zero.error().what().find("fleet.timeout"), std::string::npos) << zero.error().what();
  auto unknown = parse_config("[fleet]\nurl = \"x\"\n", "cardiac.toml");
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().what().find("url"), std::string::npos) << unknown.error().what();
}

}  // namespace
}  // namespace cardiac::config
