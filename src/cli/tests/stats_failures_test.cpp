// SPDX-License-Identifier: Apache-2.0
// `cardiac stats failures` on a real store with a made-up incident history, and `cardiac sim
// --failures-out / --failures-from`: the round trip through the commands.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/tests/run_command.h"
#include "core/tests/temp_dir.h"
#include "failstats/classes.h"
#include "failstats/intervals.h"
#include "sim/failures.h"
#include "store/incidents.h"
#include "store/retention.h"
#include "store/schema.h"
#include "store/sealed.h"
#include "store/writer.h"

namespace cardiac::cli {
namespace {

using cardiac::testing::TempDir;

constexpr DurationNs kHour = 3600 * kNsPerSec;
constexpr DurationNs kDay = 24 * kHour;

std::int64_t scalar_of(const store::Db& db, const char* sql) {
  auto v = db.query_int64(sql);
  return v && *v ? **v : -1;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// A node with 4 GPUs sampled for 30 days, and its faults: GPU 1 lost (Xid 79) and back after
// 6 h, GPU 2 needing a reset for 2 h, GPU 1 again with a double-bit ECC error for 19 h, GPU 3
// lost a day ago and not back.
class MadeUpStore : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = dir_.path() + "/cardiac.db";
    auto db = store::open_store(path_);
    ASSERT_TRUE(db) << db.error().what();
    const TimeNs t0 = now_ - 30 * kDay;
    {
      store::SampleWriter w(*db);
      for (unsigned g = 0; g < 4; ++g) {
        for (TimeNs t : {t0, now_ - kHour}) ASSERT_TRUE(w.append("gpu_temperature", g, t, 40));
      }
      ASSERT_TRUE(w.flush());
    }
    auto incident = [&](unsigned gpu, nvml::DeviceHealth kind, TimeNs start,
                        std::optional<DurationNs> repair, const char* evidence) {
      store::Incident i;
      i.gpu = gpu;
      i.uuid = "GPU-000" + std::to_string(gpu);
      i.kind = kind;
      i.started_ns = start;
      i.evidence = evidence;
      auto opened = store::open_incident(*db, i);
      ASSERT_TRUE(opened && *opened);
      if (repair) {
        ASSERT_TRUE(store::close_incident(*db, gpu, start + *repair));
      }
    };
    incident(1, nvml::DeviceHealth::kLost, t0 + 2 * kDay, 6 * kHour, "Xid 79: fallen off the bus");
    incident(2, nvml::DeviceHealth::kResetRequired, t0 + 10 * kDay, 2 * kHour, "");
    incident(1, nvml::DeviceHealth::kError, t0 + 20 * kDay, 19 * kHour, "Xid 48: DBE");
    incident(3, nvml::DeviceHealth::kLost, now_ - kDay, std::nullopt, "GPU is lost");
  }

  Ran stats(std::vector<std::string> args) {
    args.insert(args.begin(), {"failures", "--db", path_, "--node", "gpu-node-7"});
    return run(register_stats, "stats", args, clock_);
  }

  TempDir dir_;
  std::string path_;
  ManualClock clock_;
  TimeNs now_ = clock_.now();
};

TEST_F(MadeUpStore, JsonIsTheStatsFileWithCountsExposureAndRepairs) {
  Ran r = stats({"--json"});
  ASSERT_EQ(r.rc, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["format"], "cardiac.failure-stats/v1");
  EXPECT_EQ(j["exposure"]["gpus"], 4);
  EXPECT_NEAR(j["exposure"]["gpu_days"].get<double>(), 120, 1e-9);
  EXPECT_EQ(j["classes"]["gpu_lost"]["count"], 2);
  EXPECT_EQ(j["classes"]["gpu_lost"]["repair"]["n"], 1);  // the open one has no repair yet
  EXPECT_EQ(j["classes"]["gpu_lost"]["repair"]["sum_hours"], 6.0);
  EXPECT_EQ(j["classes"]["reset_required"]["count"], 1);
  EXPECT_EQ(j["classes"]["gpu_memory"]["count"], 1);
  EXPECT_EQ(j["classes"]["gpu_memory"]["repair"]["sum_hours"], 19.0);
  EXPECT_EQ(j["open_incidents"], 1);
  ASSERT_EQ(j["nodes"].size(), 1u);
  EXPECT_EQ(j["nodes"][0]["node"], "gpu-node-7");
  EXPECT_EQ(j["gpus"].size(), 3u);
  // 4 failures in 120 GPU-days.
  EXPECT_NEAR(j["derived"]["overall"]["per_1000_gpu_days"].get<double>(), 1000.0 * 4 / 120, 1e-9);
  EXPECT_NEAR(j["derived"]["overall"]["per_1000_gpu_days_ci95"][1].get<double>(),
              1000.0 * failstats::poisson_interval(4).high / 120, 1e-9);
}

TEST_F(MadeUpStore, SinceNarrowsTheIncidentsAndTheExposure) {
  Ran r = stats({"--since", "15d", "--json"});
  ASSERT_EQ(r.rc, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_NEAR(j["exposure"]["gpu_days"].get<double>(), 60, 1e-9);
  EXPECT_EQ(j["classes"]["gpu_lost"]["count"], 1);
  EXPECT_EQ(j["classes"]["gpu_memory"]["count"], 1);
  EXPECT_EQ(j["classes"]["reset_required"]["count"], 0);
}

TEST_F(MadeUpStore, TextAndCsvHaveARowPerClassGpuOrNode) {
  Ran text = stats({});
  ASSERT_EQ(text.rc, 0) << text.err;
  EXPECT_NE(text.out.find("1 node, 4 GPUs"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("4 incidents (1 still open)"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("PER 1000 GPU-DAYS"), std::string::npos);
  EXPECT_NE(text.out.find("\ngpu_lost "), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("\nall "), std::string::npos) << text.out;
  Ran csv = stats({"--csv", "--by", "gpu"});
  ASSERT_EQ(csv.rc, 0) << csv.err;
  EXPECT_NE(csv.out.find("\ngpu,GPU-0001,gpu-node-7,2,30,"), std::string::npos) << csv.out;
  EXPECT_NE(csv.out.find("\nall,all,All classes,4,120,"), std::string::npos) << csv.out;
  Ran nodes = stats({"--by", "node"});
  EXPECT_NE(nodes.out.find("\ngpu-node-7 "), std::string::npos) << nodes.out;
}

TEST_F(MadeUpStore, OutputFileFeedsTheSimulator) {
  const std::string file = dir_.path() + "/node7.json";
  Ran r = stats({"--json", "-o", file});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(r.out.empty());
  Ran s = run(register_sim, "sim",
              {"--synth", "seren", "--jobs", "20", "--cluster", "4x8", "--days", "10",
               "--failures-from", file, "-q"},
              clock_);
  ASSERT_EQ(s.rc, 0) << s.err;
  EXPECT_NE(s.out.find("Failure model fitted from " + file), std::string::npos) << s.out;
  EXPECT_NE(s.out.find("GPU lost / off the bus"), std::string::npos) << s.out;
}

TEST_F(MadeUpStore, BadSinceAndMissingStoreAreClearErrors) {
  Ran bad = stats({"--since", "yesterday"});
  EXPECT_EQ(bad.rc, kExitUsage);
  EXPECT_NE(bad.err.find("--since"), std::string::npos) << bad.err;
  Ran future = stats({"--since", "2099-01-01T00:00:00Z"});
  EXPECT_EQ(future.rc, kExitUsage);
  Ran missing =
      run(register_stats, "stats", {"failures", "--db", dir_.path() + "/nope.db"}, clock_);
  EXPECT_EQ(missing.rc, kExitCannotRun);
  EXPECT_NE(missing.err.find("nope.db"), std::string::npos) << missing.err;
  Ran by = stats({"--by", "rack"});
  EXPECT_EQ(by.rc, kExitUsage);
}

// The per-class rates of a preset: its components summed by the class they map onto.
std::map<std::string, double> class_rates(const sim::FailureModel& m) {
  std::map<std::string, double> out;
  for (const auto& c : m.components) {
    out[std::string(failstats::class_name(failstats::classify_component(c)))] += c.per_gpu_day;
  }
  return out;
}

// A store started at 23 minutes past an hour and rolled up: its minute blocks and hour rows are
// keyed by 11:00-like buckets, but it observed its GPUs from its first sample on.
TEST(StatsFailuresExposure, BeginsAtTheFirstSampleNotItsRollUpsBucket) {
  TempDir dir;
  const std::string path = dir.path() + "/cardiac.db";
  ManualClock clock;
  const TimeNs hour = clock.now() / kHour * kHour - 3 * kHour;
  const TimeNs first = hour + 23 * 60 * kNsPerSec;
  {
    auto db = store::open_store(path);
    ASSERT_TRUE(db) << db.error().what();
    store::SampleWriter w(*db);
    for (TimeNs t = first; t < clock.now(); t += 10 * kNsPerSec) {
      ASSERT_TRUE(w.append("gpu_temperature", 0u, t, 40));
    }
    ASSERT_TRUE(w.flush());
    ASSERT_TRUE(store::seal_tail(*db));
    const auto horizon = store::rollup_horizon(clock.now() + kDay);
    ASSERT_TRUE(store::roll_up(*db, horizon.minutes, horizon.hours));
    ASSERT_EQ(scalar_of(*db, "SELECT min(bucket_ns) FROM rollup_1h"), hour);
    // The raw samples go: only the roll-ups remember the start.
    ASSERT_TRUE(store::prune(*db, clock.now() + 30 * kDay, {kDay, 365 * kDay, 365 * kDay}));
    ASSERT_EQ(scalar_of(*db, "SELECT count(*) FROM sample_seals"), 0);
  }
  Ran r = run(register_stats, "stats", {"failures", "--db", path, "--node", "n", "--json"}, clock);
  ASSERT_EQ(r.rc, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["window"]["start_ns"].get<TimeNs>(), first);
  EXPECT_NEAR(j["exposure"]["gpu_days"].get<double>(),
              static_cast<double>(clock.now() - first) / kDay, 1e-9);
}

TEST(SimFailuresRoundTrip, ExportedHistoryRefitsWithinTheIntervals) {
  TempDir dir;
  ManualClock clock;
  const std::string preset = "llama3:corr=0,maint=off";
  const std::string a = dir.path() + "/a.json";
  const std::string b = dir.path() + "/b.json";
  for (const auto& [file, seed] : {std::pair{a, "11"}, std::pair{b, "12"}}) {
    Ran r = run(register_sim, "sim",
                {"--synth", "seren", "--jobs", "20", "--cluster", "250x8", "--days", "365",
                 "--failures", preset, "--seed", seed, "--failures-out", file, "-q"},
                clock);
    ASSERT_EQ(r.rc, 0) << r.err;
  }
  auto exported = nlohmann::json::parse(slurp(a));
  EXPECT_EQ(exported["format"], "cardiac.failure-stats/v1");
  EXPECT_DOUBLE_EQ(exported["exposure"]["gpu_days"].get<double>(), 250.0 * 8 * 365);

  Ran fit = run(register_sim, "sim",
                {"--synth", "seren", "--jobs", "20", "--cluster", "250x8", "--days", "30",
                 "--failures-from", a, b, "--json", "-q"},
                clock);
  ASSERT_EQ(fit.rc, 0) << fit.err;
  auto j = nlohmann::json::parse(fit.out);
  const auto& model = j["fitted_failure_model"];
  EXPECT_DOUBLE_EQ(model["gpu_days"].get<double>(), 2 * 250.0 * 8 * 365);  // the files add
  auto truth = sim::failure_preset(preset);
  ASSERT_TRUE(truth);
  const auto want = class_rates(*truth);
  ASSERT_EQ(model["components"].size(), want.size());
  for (const auto& c : model["components"]) {
    const std::string cls = c["class"];
    ASSERT_TRUE(want.count(cls)) << cls;
    const double low = c["per_1000_gpu_days_ci95"][0].get<double>() / 1000;
    const double high = c["per_1000_gpu_days_ci95"][1].get<double>() / 1000;
    EXPECT_LE(low, want.at(cls)) << cls;
    EXPECT_GE(high, want.at(cls)) << cls;
  }
  // A class lumps components with different repair means (node: 8 h host maintenance beside
  // 24-72 h parts), which widens its spread of log repair times beyond the preset's sigma of 1.
  EXPECT_GE(model["repair_sigma"].get<double>(), truth->repair_sigma - 0.05);
  EXPECT_LE(model["repair_sigma"].get<double>(), truth->repair_sigma + 0.3);
  EXPECT_EQ(model["lemon_fraction"], 0.0);  // llama3 has none
  // The simulation ran with the fitted model.
  EXPECT_EQ(j["runs"].size(), 1u);
}

TEST(SimFailuresRoundTrip, BadFilesAreRefusedByFileAndField) {
  TempDir dir;
  ManualClock clock;
  const std::string empty = dir.path() + "/empty.json";
  std::ofstream(empty) << R"({"format": "cardiac.failure-stats/v1",
    "window": {"start_ns": 0, "end_ns": 0}, "exposure": {"gpu_days": 0, "gpus": 0},
    "classes": {}, "nodes": [], "gpus": []})";
  std::vector<std::string> base = {"--synth", "seren", "--jobs", "5", "--cluster", "2x8", "-q"};
  auto sim_with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = base;
    args.insert(args.end(), extra.begin(), extra.end());
    return run(register_sim, "sim", args, clock);
  };
  Ran zero = sim_with({"--failures-from", empty});
  EXPECT_EQ(zero.rc, kExitUsage);
  EXPECT_NE(zero.err.find("empty.json"), std::string::npos) << zero.err;
  EXPECT_NE(zero.err.find("exposure.gpu_days is 0"), std::string::npos) << zero.err;
  const std::string bad = dir.path() + "/bad.json";
  std::ofstream(bad) << R"({"format": "cardiac.failure-stats/v1",
    "window": {"start_ns": 0, "end_ns": 1}, "exposure": {"gpu_days": 5, "gpus": 1},
    "classes": {"gpu_lost": {"count": -2}}, "nodes": [], "gpus": []})";
  Ran field = sim_with({"--failures-from", bad});
  EXPECT_EQ(field.rc, kExitUsage);
  EXPECT_NE(field.err.find("bad.json: classes.gpu_lost.count"), std::string::npos) << field.err;
  Ran missing = sim_with({"--failures-from", dir.path() + "/none.json"});
  EXPECT_NE(missing.err.find("none.json"), std::string::npos) << missing.err;
  Ran both = sim_with({"--failures-from", bad, "--failures", "llama3"});
  EXPECT_NE(both.err.find("not both"), std::string::npos) << both.err;
  // A configuration file's presets give way to the flag, as every flag wins over the file.
  const std::string config = dir.path() + "/sim.toml";
  std::ofstream(config) << "failures = [\"llama3\"]\n";
  Ran from_file = sim_with({"--config", config, "--failures-from", empty});
  EXPECT_NE(from_file.err.find("exposure.gpu_days is 0"), std::string::npos) << from_file.err;
  Ran no_days = sim_with({"--failures", "llama3", "--failures-out", dir.path() + "/o.json"});
  EXPECT_EQ(no_days.rc, kExitUsage);
  EXPECT_NE(no_days.err.find("--days"), std::string::npos) << no_days.err;
}

}  // namespace
}  // namespace cardiac::cli
