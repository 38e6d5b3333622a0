// SPDX-License-Identifier: Apache-2.0
// Subcommands run in-process through cli::Context: output captured, time from a ManualClock.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/tests/run_command.h"
#include "core/tests/temp_dir.h"
#include "core/time.h"
#include "store/events.h"
#include "store/schema.h"

namespace cardiac::cli {
namespace {

using cardiac::testing::TempDir;

TEST(CliInProcess, CheckpointPlanIsJsonOnTheContextsStream) {
  ManualClock clock;
  Ran r = run(register_sim, "sim",
              {"checkpoint", "--gpus", "16384", "--failures", "llama3", "--write", "30s",
               "--restart", "10m", "--json"},
              clock);
  ASSERT_EQ(r.rc, 0) << r.err;
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << r.out;
  EXPECT_EQ(j.value("gpus", 0.0), 16384.0);
  EXPECT_GT(j.value("daly_interval_s", 0.0), 0.0);
}

TEST(CliInProcess, BadFlagValueIsAUsageErrorNamingTheFlag) {
  ManualClock clock;
  Ran r = run(register_sim, "sim", {"checkpoint", "--gpus", "0"}, clock);
  EXPECT_EQ(r.rc, kExitUsage);
  EXPECT_NE((r.err + r.out).find("--gpus"), std::string::npos) << r.err;
}

TEST(CliInProcess, NetTopRefusesAWindowTooShortToRate) {
  ManualClock clock;
  Ran r = run(register_net, "net", {"top", "--window", "0"}, clock);
  EXPECT_EQ(r.rc, kExitUsage);
  EXPECT_NE(r.err.find("--window"), std::string::npos) << r.err;
}

TEST(CliInProcess, NetTopJsonHasTheTalkersAndTheLink) {
  Ran r = run(register_net, "net", {"top", "--window", "200ms", "--count", "3", "--json"},
              SystemClock::instance());
  ASSERT_EQ(r.rc, 0) << r.err;
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << r.out;
  EXPECT_EQ(j.value("schema", ""), "cardiac.net_top/v1");
  const auto& t = j["traffic"];
  EXPECT_GT(t.value("window_s", 0.0), 0.1);
  ASSERT_TRUE(t["talkers"].is_array());
  EXPECT_LE(t["talkers"].size(), 3U);
  EXPECT_TRUE(t["link"].contains("name"));
  EXPECT_FALSE(t.value("loopback_included", true));
}

TEST(CliInProcess, PrometheusRulesExportHasTheFaultRules) {
  ManualClock clock;
  Ran r = run(register_export, "export", {"prometheus-rules"}, clock);
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("groups:"), std::string::npos);
  EXPECT_NE(r.out.find("gpu_xid_critical"), std::string::npos);
}

TEST(CliInProcess, EventsWindowIsMeasuredOnTheContextsClock) {
  TempDir dir;
  ManualClock clock(1'800'000'000LL * kNsPerSec);
  {
    auto db = store::open_store(dir.path() + "/cardiac.db");
    ASSERT_TRUE(db) << db.error().what();
    store::Event recent;
    recent.time_ns = clock.now() - 3600 * kNsPerSec;
    recent.kind = "xid";
    recent.xid = 79;
    recent.pci_bus_id = "0000:3b:00.0";
    recent.message = "GPU has fallen off the bus";
    recent.source = "/dev/kmsg";
    recent.dedup_key = "recent";
    store::Event old = recent;
    old.time_ns = clock.now() - 48 * 3600 * kNsPerSec;
    old.xid = 48;
    old.dedup_key = "old";
    ASSERT_TRUE(store::insert_event(*db, recent));
    ASSERT_TRUE(store::insert_event(*db, old));
  }
  Ran r = run(register_events, "events", {"--state-dir", dir.path(), "--json"}, clock);
  ASSERT_EQ(r.rc, 0) << r.err;
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  std::string text = j.dump();
  EXPECT_NE(text.find("fallen off the bus"), std::string::npos) << text;
  EXPECT_EQ(text.find("\"xid\":48"), std::string::npos) << "48 h ago is outside the 24 h default";
}

}  // namespace
}  // namespace cardiac::cli
