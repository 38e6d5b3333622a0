// SPDX-License-Identifier: Apache-2.0
// `cardiac fleet` against a real Prometheus scraping three agents on the fake NVML (healthy,
// a GPU lost, an uncorrectable ECC error) and one target where nothing listens, with cardiac's
// exported alert rules loaded: each node shows its verdict, the lost GPU its reason and the
// firing gpu_lost alert, the node nobody could scrape shows as unknown, never as fine.
#include <gtest/gtest.h>

#include <filesystem>

#include "tests/e2e/run_cardiac.h"
#include "tests/e2e/support.h"
#include "tests/integration/prometheus_process.h"

namespace cardiac::e2e {
namespace {

using nlohmann::json;

class FleetView : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(kPrometheus)) {
      GTEST_SKIP() << "Prometheus not installed (apt-get install prometheus)";
    }
    for (const char* s : {"healthy-8xh100.json", "gpu-lost.json", "ecc-dbe.json"}) {
      // A captured healthy host: this machine's own load must not make a node WARN.
      auto& a = agents_.emplace_back(std::make_unique<AgentProcess>(
          scenario(s).dump(),
          "[host]\nroot = \"" + std::string(CARDIAC_FIXTURES_DIR) + "/hosts/old-kernel\"\n"));
      a->agent_keys("interval = \"200ms\"\n");
      ASSERT_TRUE(a->start()) << s;
    }
    down_port_ = free_port();  // nothing listens there
    const std::string rules = agents_[0]->dir() + "/cardiac-rules.yml";
    auto exported = run_cardiac({"export", "prometheus-rules", "-o", rules});
    ASSERT_EQ(exported.exit_code, 0) << exported.err;
    std::vector<int> ports;
    for (const auto& a : agents_) ports.push_back(a->port());
    const std::string config = loopback_scrape_config(ports, down_port_, rules);
    prom_dir_ = agents_[0]->dir() + "/prometheus";
    std::filesystem::create_directories(prom_dir_);
    prom_ = std::make_unique<PrometheusProcess>(prom_dir_, config);
    ASSERT_TRUE(eventually(
        [&] {
          return prom_->value("count(up{job=\"cardiac\"} == 1)") == 3 &&
                 prom_->value("count(up{job=\"cardiac\"} == 0)") == 1 &&
                 prom_->value("count(ALERTS{alertname=\"gpu_lost\",alertstate=\"firing\"})") == 1 &&
                 prom_->value("count(cardiac_gpu_health == 2)") >= 2;
        },
        90))
        << prom_->log();
  }

  [[nodiscard]] std::string url() const {
    return "http://127.0.0.1:" + std::to_string(prom_->port());
  }
  [[nodiscard]] std::string instance(std::size_t i) const {
    return "127.0.0.1:" + std::to_string(agents_[i]->port());
  }

  std::vector<std::unique_ptr<AgentProcess>> agents_;
  int down_port_ = 0;
  std::string prom_dir_;
  std::unique_ptr<PrometheusProcess> prom_;
};

TEST_F(FleetView, EveryNodeWithItsVerdictAlertsAndTheOneNobodyCouldRead) {
  auto r = run_cardiac({"fleet", "--prometheus", url(), "--json"});
  ASSERT_EQ(r.exit_code, 1) << r.out << r.err;  // a failing node: findings
  const json j = json::parse(r.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << r.out;
  EXPECT_EQ(j["schema"], "cardiac.fleet/v1");
  EXPECT_EQ(j["verdict"], "fail");
  ASSERT_EQ(j["nodes"].size(), 4u) << r.out;
  std::map<std::string, json> by;
  for (const auto& n : j["nodes"]) by[n["instance"]] = n;

  const json& healthy = by[instance(0)];
  EXPECT_EQ(healthy["verdict"], "ok") << healthy.dump(2);
  EXPECT_EQ(healthy["gpus"].size(), 8u);
  EXPECT_TRUE(healthy["alerts"].empty()) << healthy.dump(2);

  const json& lost = by[instance(1)];
  EXPECT_EQ(lost["verdict"], "fail") << lost.dump(2);
  int lost_gpus = 0;
  for (const auto& g : lost["gpus"]) {
    if (g["answering"] == false) {
      ++lost_gpus;
      EXPECT_EQ(g["verdict"], "fail");
      // The rule's description as Prometheus renders it: a lost GPU has no UUID label.
      EXPECT_NE(g["reason"].get<std::string>().find("(uuid unknown) stopped answering NVML"),
                std::string::npos)
          << g.dump(2);
    }
  }
  EXPECT_EQ(lost_gpus, 1) << lost.dump(2);
  bool alert = false;
  for (const auto& a : lost["alerts"]) alert = alert || a["name"] == "gpu_lost";
  EXPECT_TRUE(alert) << lost.dump(2);

  const json& ecc = by[instance(2)];
  EXPECT_EQ(ecc["verdict"], "fail") << ecc.dump(2);
  EXPECT_EQ(ecc["gpus"].size(), 8u);

  const json& down = by["127.0.0.1:" + std::to_string(down_port_)];
  EXPECT_EQ(down["verdict"], "unknown") << down.dump(2);
  EXPECT_EQ(down["scraped"], false);
  EXPECT_NE(down["reason"].get<std::string>().find("not scraped"), std::string::npos);
  EXPECT_TRUE(down["gpus"].empty());

  // The text names the down node and the lost GPU's alert.
  auto text = run_cardiac({"fleet", "--prometheus", url()});
  EXPECT_EQ(text.exit_code, 1);
  EXPECT_NE(text.out.find("Fleet: FAIL (4 nodes"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("UNKNOWN"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("alert gpu_lost [critical]"), std::string::npos) << text.out;
}

TEST_F(FleetView, AWrongJobOrServerIsAnErrorNotAnEmptyFleet) {
  auto job = run_cardiac({"fleet", "--prometheus", url(), "--job", "dcgm"});
  EXPECT_EQ(job.exit_code, 3) << job.out;
  EXPECT_NE(job.err.find("no scrape job \"dcgm\" (its jobs: cardiac)"), std::string::npos)
      << job.err;
  auto gone = run_cardiac(
      {"fleet", "--prometheus", "http://127.0.0.1:" + std::to_string(down_port_), "--json"});
  EXPECT_EQ(gone.exit_code, 3);
  EXPECT_TRUE(gone.out.empty()) << gone.out;
  EXPECT_NE(gone.err.find("could not connect"), std::string::npos) << gone.err;
}

}  // namespace
}  // namespace cardiac::e2e
