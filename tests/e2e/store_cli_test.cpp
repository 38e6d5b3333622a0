// SPDX-License-Identifier: Apache-2.0
// The read commands over a store written by the store's own code (no agent): `history`,
// `events` and `incidents` refuse what can only be a mistake and print what they have honestly;
// `export` says why it cannot write.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/clock.h"
#include "store/incidents.h"
#include "store/schema.h"
#include "store/writer.h"
#include "tests/e2e/run_cardiac.h"

namespace cardiac::e2e {
namespace {

// A state directory whose store holds a minute of GPU 0 temperatures and host load, ending now,
// and one open incident whose PCI address, UUID and evidence are unknown.
class StoreCli : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/cardiac-store-cli-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    auto db = store::open_store(dir_ + "/cardiac.db");
    ASSERT_TRUE(db) << db.error().what();
    store::SampleWriter w(*db);
    const TimeNs now = SystemClock::instance().now();
    for (int s = 60; s > 0; s -= 10) {
      ASSERT_TRUE(w.append("gpu_temperature", 0u, now - s * kNsPerSec, 50 + s / 10));
      ASSERT_TRUE(w.append(store::kHostLoad1, std::nullopt, now - s * kNsPerSec, 1.5));
    }
    ASSERT_TRUE(w.flush());
    store::Incident i;
    i.gpu = 3;
    i.kind = nvml::DeviceHealth::kLost;
    i.started_ns = now - 30 * kNsPerSec;
    ASSERT_TRUE(store::open_incident(*db, i));
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  RunResult cardiac(std::vector<std::string> args) {
    args.insert(args.end(), {"--state-dir", dir_});
    return run_cardiac(args);
  }

  std::string dir_;
};

TEST_F(StoreCli, HistoryAnswersAValidQueryWithTheDefaultStep) {
  auto r =
      cardiac({"history", "--metric", "gpu_temperature", "--gpu", "0", "--since", "5m", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["resolution"], "1m");  // the default step, 1 min
  EXPECT_FALSE(j["points"].empty());
  r = cardiac({"history", "--metric", "host_load1", "--since", "5m", "--csv"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.substr(0, r.out.find('\n')), "time,avg,min,max,count");
}

TEST_F(StoreCli, HistoryRefusesQueriesThatCanOnlyBeEmptyByMistake) {
  auto r = cardiac({"history", "--metric", "gpu_temp", "--gpu", "0"});
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.err.find("unknown metric 'gpu_temp'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("gpu_temperature"), std::string::npos) << r.err;  // what it may mean
  EXPECT_TRUE(r.out.empty()) << r.out;

  r = cardiac({"history", "--metric", "gpu_temperature"});
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.err.find("GPU metric"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--gpu"), std::string::npos) << r.err;

  r = cardiac({"history", "--metric", "host_load1", "--gpu", "0"});
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.err.find("host metric"), std::string::npos) << r.err;

  r = cardiac(
      {"history", "--metric", "gpu_temperature", "--gpu", "0", "--since", "1h", "--until", "2h"});
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.err.find("--until"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("before --since"), std::string::npos) << r.err;

  r = cardiac({"history", "--metric", "gpu_temperature", "--gpu", "0", "--csv", "--json"});
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.err.find("--json"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
}

// A GPU index below 0 is a mistake; one the store never saw printed an empty table as if the
// GPU had been quiet.
TEST_F(StoreCli, HistoryRefusesANegativeGpuAndNamesAGpuWithNoSamples) {
  auto r = cardiac({"history", "--metric", "gpu_temperature", "--gpu", "-1"});
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.err.find("--gpu -1"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;

  r = cardiac({"history", "--metric", "gpu_temperature", "--gpu", "99"});
  EXPECT_EQ(r.exit_code, 0) << r.err;  // an empty answer, as for a range with no data
  EXPECT_NE(r.err.find("no samples for GPU 99 in " + dir_ + "/cardiac.db"), std::string::npos)
      << r.err;
  EXPECT_EQ(r.out, "time  avg  min  max  count\n");

  // A GPU the store knows, over a range without data: the empty table, and no such note.
  r = cardiac(
      {"history", "--metric", "gpu_temperature", "--gpu", "0", "--since", "3h", "--until", "2h"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("no samples"), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "time  avg  min  max  count\n");
}

TEST_F(StoreCli, EventsLimitMustBePositive) {
  auto r = cardiac({"events", "--limit", "0"});
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.err.find("--limit"), std::string::npos) << r.err;
  EXPECT_EQ(cardiac({"events", "--limit", "-5"}).exit_code, 2);
  EXPECT_EQ(cardiac({"events", "--limit", "1"}).exit_code, 0);
}

TEST_F(StoreCli, IncidentsHaveAHeaderAndUnknownsAreDashesOrNull) {
  auto r = cardiac({"incidents"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string header = r.out.substr(0, r.out.find('\n'));
  for (const char* column : {"ID", "GPU", "PCI", "KIND", "STARTED", "ENDED", "EVIDENCE"}) {
    EXPECT_NE(header.find(column), std::string::npos) << column << " in " << header;
  }
  const std::string row = r.out.substr(r.out.find('\n') + 1);
  EXPECT_NE(row.find("  3  - "), std::string::npos) << row;  // GPU 3, PCI address unknown
  EXPECT_NE(row.find("open "), std::string::npos) << row;
  EXPECT_TRUE(row.ends_with("  -\n")) << row;  // no evidence
  EXPECT_EQ(r.out.find("\"\""), std::string::npos) << r.out;

  r = cardiac({"incidents", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j.size(), 1u);
  EXPECT_EQ(j[0]["gpu"], 3);
  for (const char* key : {"uuid", "pci_bus_id", "evidence", "ended"}) {
    EXPECT_TRUE(j[0][key].is_null()) << key << ": " << j[0][key];
  }
}

TEST(ExportCli, CannotWriteSaysWhy) {
  auto r = run_cardiac({"export", "prometheus-rules", "-o", "/nonexistent-dir/rules.yml"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("cannot write /nonexistent-dir/rules.yml: No such file or directory"),
            std::string::npos)
      << r.err;
  r = run_cardiac({"export", "prometheus-rules", "--rules", "/nonexistent-dir/extra.toml"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("No such file or directory"), std::string::npos) << r.err;
}

// `cardiac backup` and `cardiac restore` as a user runs them: the backup is 0600 and says what it
// holds, a text file is refused by name with the store untouched, and the restored store answers
// `history` as the original did.
TEST_F(StoreCli, BackupAndRestoreThroughTheCommands) {
  const std::string backup = dir_ + "/b.db";
  auto r = cardiac({"backup", "-o", backup, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["backup"], backup);
  EXPECT_EQ(j["schema_version"], store::latest_schema_version());
  struct stat st {};
  ASSERT_EQ(::stat(backup.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600U);

  std::ofstream(dir_ + "/notes.txt") << "not a store\n";
  r = cardiac({"restore", dir_ + "/notes.txt"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(dir_ + "/notes.txt: not a SQLite database"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/cardiac.db.before-restore"));

  r = cardiac({"restore", backup});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("kept as " + dir_ + "/cardiac.db.before-restore"), std::string::npos)
      << r.out;
  r = cardiac({"history", "--metric", "gpu_temperature", "--gpu", "0", "--since", "5m", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(nlohmann::json::parse(r.out)["points"].empty());
}

}  // namespace
}  // namespace cardiac::e2e
