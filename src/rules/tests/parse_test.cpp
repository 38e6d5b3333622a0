// SPDX-License-Identifier: Apache-2.0
// Rule parsing: every field, and errors that name file:line:column and the key.
#include "rules/parse.h"

#include <gtest/gtest.h>

namespace cardiac::rules {
namespace {

// The error text of parsing `toml`, or "" when it parsed.
std::string error_of(std::string_view toml) {
  auto r = parse_rules(toml, "rules.toml");
  return r ? std::string() : r.error().what();
}

TEST(Parse, ReadsEveryField) {
  auto r = parse_rules(R"([[rule]]
name = "mem"
metric = "gpu_memory_used_pct"
op = ">="
threshold = 95
clear = 90
for = "1h30m"
severity = "critical"
scope = "gpu"
labels = { team = "ml" }
description = "GPU {gpu} memory {value} %"

[[rule]]
name = "replay"
kind = "rate"
metric = "gpu_pcie_replay_counter"
op = ">"
threshold_metric = "gpu_pcie_replay_limit_per_min"
per = "1m"
window = "5m"

[[rule]]
name = "count"
kind = "absence"
expected_gpus = 4
)",
                       "rules.toml");
  ASSERT_TRUE(r) << r.error().what();
  ASSERT_EQ(r->size(), 3u);
  const Rule& m = (*r)[0];
  EXPECT_EQ(m.name, "mem");
  EXPECT_EQ(m.kind, RuleKind::kThreshold);
  EXPECT_EQ(m.op, Op::kGe);
  EXPECT_EQ(m.threshold, 95);
  EXPECT_EQ(m.clear, 90);
  EXPECT_EQ(m.for_ns, 5400 * kNsPerSec);
  EXPECT_EQ(m.severity, Severity::kCritical);
  EXPECT_EQ(m.scope, Scope::kGpu);
  EXPECT_EQ(m.labels.at("team"), "ml");
  EXPECT_EQ(m.origin, "rules.toml:1:1");
  const Rule& p = (*r)[1];
  EXPECT_EQ(p.kind, RuleKind::kRate);
  EXPECT_FALSE(p.threshold);
  EXPECT_EQ(p.threshold_metric, "gpu_pcie_replay_limit_per_min");
  EXPECT_EQ(p.per_ns, 60 * kNsPerSec);
  EXPECT_EQ(p.window_ns, 300 * kNsPerSec);
  EXPECT_EQ(p.severity, Severity::kWarning);  // the default
  const Rule& c = (*r)[2];
  EXPECT_EQ(c.kind, RuleKind::kAbsence);
  EXPECT_EQ(c.expected_gpus, 4u);
}

TEST(Parse, EmptyTextIsNoRules) {
  auto r = parse_rules("", "rules.toml");
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->empty());
}

TEST(Parse, UnknownKeyNamesLineColumnAndKey) {
  const std::string e = error_of(R"([[rule]]
name = "a"
metric = "gpu_temperature"
  thresold = 3
)");
  EXPECT_NE(e.find("rules.toml:4:3"), std::string::npos) << e;
  EXPECT_NE(e.find("unknown key 'rule[0].thresold'"), std::string::npos) << e;
}

TEST(Parse, UnknownTopLevelKey) {
  const std::string e = error_of("\nrules = 1\n");
  EXPECT_NE(e.find("rules.toml:2:1"), std::string::npos) << e;
  EXPECT_NE(e.find("'rules'"), std::string::npos) << e;
}

TEST(Parse, SyntaxErrorNamesLineAndColumn) {
  const std::string e = error_of("[[rule]]\nname = \"a\nmetric = 1\n");
  EXPECT_NE(e.find("rules.toml:2:"), std::string::npos) << e;
}

TEST(Parse, BadValueNamesTheKeyAndItsPosition) {
  std::string e = error_of("[[rule]]\nname = \"a\"\nmetric = \"m\"\nop = \"=>\"\nthreshold = 1\n");
  EXPECT_NE(e.find("rules.toml:4:6"), std::string::npos) << e;
  EXPECT_NE(e.find("'rule[0].op'"), std::string::npos) << e;
  e = error_of("[[rule]]\nname = \"a\"\nmetric = \"m\"\nop = \">\"\nthreshold = \"9\"\n");
  EXPECT_NE(e.find("'rule[0].threshold' must be a number"), std::string::npos) << e;
  e = error_of("[[rule]]\nname = \"a\"\nmetric = \"m\"\nop = \">\"\nthreshold = 1\nfor = \"5x\"\n");
  EXPECT_NE(e.find("rules.toml:6:7"), std::string::npos) << e;
  EXPECT_NE(e.find("'rule[0].for'"), std::string::npos) << e;
  e = error_of(
      "[[rule]]\nname = \"a\"\nmetric = \"m\"\nop = \">\"\nthreshold = 1\n"
      "labels = { team = 3 }\n");
  EXPECT_NE(e.find("'rule[0].labels.team' must be a string"), std::string::npos) << e;
  e = error_of(
      "[[rule]]\nname = \"a\"\nmetric = \"m\"\nop = \">\"\nthreshold = 1\n"
      "severity = \"fatal\"\n");
  EXPECT_NE(e.find("'rule[0].severity'"), std::string::npos) << e;
}

TEST(Parse, MissingPiecesAreNamed) {
  EXPECT_NE(error_of("[[rule]]\nmetric = \"m\"\n").find("needs 'name'"), std::string::npos);
  EXPECT_NE(error_of("[[rule]]\nname = \"a\"\nop = \">\"\n").find("needs 'metric'"),
            std::string::npos);
  EXPECT_NE(error_of("[[rule]]\nname = \"a\"\nmetric = \"m\"\nthreshold = 1\n").find("needs 'op'"),
            std::string::npos);
  const std::string both = error_of(
      "[[rule]]\nname = \"a\"\nmetric = \"m\"\nop = \">\"\nthreshold = 1\n"
      "threshold_metric = \"n\"\n");
  EXPECT_NE(both.find("exactly one"), std::string::npos) << both;
  EXPECT_NE(error_of("[[rule]]\nname = \"a\"\nmetric = \"m\"\nop = \">\"\n").find("exactly one"),
            std::string::npos);
}

TEST(Parse, KeysThatDoNotFitTheKindAreErrors) {
  std::string e =
      error_of("[[rule]]\nname = \"a\"\nmetric = \"m\"\nop = \">\"\nthreshold = 1\nper = \"1m\"\n");
  EXPECT_NE(e.find("rules.toml:6:7"), std::string::npos) << e;
  EXPECT_NE(e.find("'rule[0].per' only applies to kind = \"rate\""), std::string::npos) << e;
  e = error_of(
      "[[rule]]\nname = \"a\"\nkind = \"absence\"\nmetric = \"m\"\nfor = \"1m\"\n"
      "op = \">\"\n");
  EXPECT_NE(e.find("'rule[0].op' does not apply"), std::string::npos) << e;
  e = error_of("[[rule]]\nname = \"a\"\nkind = \"absence\"\nmetric = \"m\"\n");
  EXPECT_NE(e.find("needs 'for'"), std::string::npos) << e;
  e = error_of(
      "[[rule]]\nname = \"a\"\nmetric = \"m\"\nop = \">\"\nthreshold = 1\n"
      "threshold_offset = 2\n");
  EXPECT_NE(e.find("threshold_offset"), std::string::npos) << e;
  e = error_of("[[rule]]\nname = \"a\"\nkind = \"sometimes\"\n");
  EXPECT_NE(e.find("'rule[0].kind'"), std::string::npos) << e;
}

TEST(Parse, ClearMustBeOnTheClearSide) {
  EXPECT_NE(error_of("[[rule]]\nname = \"a\"\nmetric = \"m\"\nop = \">\"\nthreshold = 90\n"
                     "clear = 95\n")
                .find("clear side"),
            std::string::npos);
  EXPECT_NE(error_of("[[rule]]\nname = \"a\"\nmetric = \"m\"\nop = \"<\"\nthreshold = 5\n"
                     "clear = 1\n")
                .find("clear side"),
            std::string::npos);
  EXPECT_NE(error_of("[[rule]]\nname = \"a\"\nmetric = \"m\"\nop = \"==\"\nthreshold = 5\n"
                     "clear = 5\n")
                .find("needs op"),
            std::string::npos);
  EXPECT_EQ(error_of("[[rule]]\nname = \"a\"\nmetric = \"m\"\nop = \"<\"\nthreshold = 5\n"
                     "clear = 10\n"),
            "");
}

TEST(Parse, DuplicateNamesAreRejected) {
  const std::string e = error_of(
      "[[rule]]\nname = \"a\"\nmetric = \"m\"\nop = \">\"\nthreshold = 1\n\n"
      "[[rule]]\nname = \"a\"\nmetric = \"m\"\nop = \">\"\nthreshold = 2\n");
  EXPECT_NE(e.find("duplicate rule name 'a'"), std::string::npos) << e;
  EXPECT_NE(e.find("rules.toml:7:1"), std::string::npos) << e;
}

TEST(Parse, RuleMustBeAnArrayOfTables) {
  EXPECT_NE(error_of("rule = 3\n").find("array of tables"), std::string::npos);
  EXPECT_NE(error_of("[rule]\nname = \"a\"\n").find("array of tables"), std::string::npos);
}

}  // namespace
TEST(ParseRules, HugeExpectedGpusIsAnError) {
  auto r = parse_rules(R"([[rule]]
name = "gpus"
kind = "absence"
expected_gpus = 8e9
)",
                       "rules.toml");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().what().find("expected_gpus"), std::string::npos) << r.error().what();
}

}  // namespace cardiac::rules
