// SPDX-License-Identifier: Apache-2.0
// Job states, the size and time-limit parsers, and submit request validation.
#include "queue/job.h"

#include <gtest/gtest.h>

namespace cardiac::queue {
namespace {

TEST(JobState, NamesRoundTrip) {
  for (auto s : {JobState::kPending, JobState::kHeld, JobState::kRunning, JobState::kCompleted,
                 JobState::kFailed, JobState::kTimeout, JobState::kCancelled, JobState::kLost}) {
    EXPECT_EQ(parse_job_state(job_state_name(s)), s);
  }
  EXPECT_FALSE(parse_job_state("finished"));
  EXPECT_FALSE(is_terminal(JobState::kRunning));
  EXPECT_TRUE(is_terminal(JobState::kLost));
}

TEST(ParseSize, BinaryUnits) {
  EXPECT_EQ(parse_size("20G").value(), 20ULL << 30);
  EXPECT_EQ(parse_size("20GiB").value(), 20ULL << 30);
  EXPECT_EQ(parse_size("512m").value(), 512ULL << 20);
  EXPECT_EQ(parse_size("1.5T").value(), 3ULL << 39);
  EXPECT_EQ(parse_size("1024").value(), 1024u);
  for (const char* bad : {"", "G", "20X", "-1G", "twenty", "1e400"}) {
    auto r = parse_size(bad);
    EXPECT_FALSE(r) << bad;
  }
  EXPECT_NE(parse_size("20X").error().what().find("20X"), std::string::npos);
}

TEST(ParseTimeLimit, PositiveDurations) {
  EXPECT_EQ(parse_time_limit("2h").value(), 2 * 3600 * kNsPerSec);
  EXPECT_EQ(parse_time_limit("1h30m").value(), 5400 * kNsPerSec);
  EXPECT_EQ(parse_time_limit("45").value(), 45 * kNsPerSec);
  EXPECT_FALSE(parse_time_limit("0s"));
  EXPECT_FALSE(parse_time_limit("soon"));
}

TEST(ParseSubmit, RoundTripsAndChecksFields) {
  SubmitRequest r;
  r.argv = {"python", "train.py"};
  r.env = {{"HOME", "/home/a"}};
  r.cwd = "/tmp";
  r.gpus = 2;
  r.gpu_mem = 20ULL << 30;
  r.shared = true;
  r.priority = -5;
  r.time_limit = 60 * kNsPerSec;
  r.after = {3, 4};
  auto back = parse_submit(to_json(r));
  ASSERT_TRUE(back) << back.error().what();
  EXPECT_EQ(back->argv, r.argv);
  EXPECT_EQ(back->env, r.env);
  EXPECT_EQ(back->gpus, 2u);
  EXPECT_EQ(back->gpu_mem, r.gpu_mem);
  EXPECT_TRUE(back->shared);
  EXPECT_EQ(back->priority, -5);
  EXPECT_EQ(back->after, r.after);

  auto bad = [&](nlohmann::json j, const std::string& field) {
    auto p = parse_submit(j);
    ASSERT_FALSE(p) << j.dump();
    EXPECT_NE(p.error().what().find(field), std::string::npos) << p.error().what();
  };
  nlohmann::json ok = to_json(r);
  bad(nlohmann::json::object(), "argv");
  auto j = ok;
  j["argv"] = nlohmann::json::array();
  bad(j, "argv");
  j = ok;
  j["gpus"] = 0;
  bad(j, "gpus");
  j = ok;
  j["priority"] = 5000;
  bad(j, "priority");
  j = ok;
  j["cwd"] = "relative";
  bad(j, "cwd");
  j = ok;
  j["after"] = {"x"};
  bad(j, "after");
  j = ok;
  j["env"] = {{"A=B", "c"}};
  bad(j, "env");
}

TEST(JobJson, NeverShowsTheEnvironment) {
  Job j;
  j.id = 7;
  j.env = {{"SECRET_TOKEN", "hunter2"}};
  j.argv = {"true"};
  EXPECT_EQ(to_json(j).dump().find("hunter2"), std::string::npos);
  EXPECT_EQ(to_json(j, true).dump().find("hunter2"), std::string::npos);
  EXPECT_EQ(to_json(j)["state"], "pending");
}

}  // namespace
}  // namespace cardiac::queue
