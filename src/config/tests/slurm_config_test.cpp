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
