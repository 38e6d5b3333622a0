// SPDX-License-Identifier: Apache-2.0
// The fleet view from hand-written Prometheus answers: verdicts, reasons, alerts by node, and a
// node Prometheus cannot scrape shown as unknown rather than fine.
#include <gtest/gtest.h>

#include <algorithm>

#include <fmt/format.h>

#include "fleet/read.h"
#include "fleet/view.h"

namespace cardiac::fleet {
namespace {

using nlohmann::json;

json target(const std::string& instance, bool up, const std::string& error = "",
            const std::string& job = "cardiac") {
  return {{"scrapePool", job},
          {"labels", {{"instance", instance}, {"job", job}}},
          {"health", up ? "up" : "down"},
          {"lastError", error},
          {"lastScrape", "2026-12-05T04:00:00Z"}};
}

json sample(const std::string& name, const std::string& instance, double v,
            json extra = json::object()) {
  json m = {{"__name__", name}, {"instance", instance}, {"job", "cardiac"}};
  for (auto& [k, x] : extra.items()) m[k] = x;
  return {{"metric", m}, {"value", {1764907200.0, fmt::format("{}", v)}}};
}

json gpu(const std::string& name, const std::string& instance, int index, double v) {
  return sample(name, instance, v,
                {{"gpu", std::to_string(index)},
                 {"uuid", "GPU-" + std::to_string(index)},
                 {"model", "NVIDIA H100 80GB HBM3"},
                 {"hostname", instance.substr(0, instance.find(':'))}});
}

// Two healthy GPUs on a, one lost on b, c not scraped.
struct Answers {
  json targets = json::array();
  json series = json::array();
  json alerts = json::array();
};

Answers three_nodes() {
  Answers a;
  a.targets = {target("a:9847", true), target("b:9847", true),
               target("c:9847", false, "dial tcp c:9847: connect: connection refused"),
               target("node1:9100", true, "", "node")};
  for (const std::string inst : {"a:9847", "b:9847"}) {
    a.series.push_back(sample("cardiac_host_health", inst, 0, {{"hostname", inst.substr(0, 1)}}));
    a.series.push_back(sample("cardiac_inventory_health", inst, 0));
    a.series.push_back(sample("cardiac_nvml_available", inst, 1));
  }
  for (int i = 0; i < 2; ++i) {
    a.series.push_back(gpu("cardiac_gpu_health", "a:9847", i, 0));
    a.series.push_back(gpu("cardiac_gpu_up", "a:9847", i, 1));
    a.series.push_back(gpu("cardiac_gpu_utilization_ratio", "a:9847", i, 0.5));
  }
  a.series.push_back(gpu("cardiac_gpu_health", "b:9847", 0, 0));
  a.series.push_back(gpu("cardiac_gpu_up", "b:9847", 0, 1));
  a.series.push_back(gpu("cardiac_gpu_health", "b:9847", 1, 2));
  a.series.push_back(gpu("cardiac_gpu_up", "b:9847", 1, 0));
  json xid = gpu("cardiac_gpu_xid_errors_total", "b:9847", 1, 2);
  xid["metric"]["xid"] = "79";
  a.series.push_back(xid);
  a.series.push_back(gpu("cardiac_gpu_last_xid", "b:9847", 1, 79));
  a.alerts = {
      {{"labels",
        {{"alertname", "gpu_lost"},
         {"severity", "critical"},
         {"instance", "b:9847"},
         {"gpu", "1"}}},
       {"annotations", {{"description", "GPU 1 stopped answering NVML"}}},
       {"state", "firing"},
       {"activeAt", "2026-12-05T03:59:00Z"}},
      {{"labels", {{"alertname", "gpu_temperature_near_slowdown"}, {"instance", "a:9847"}}},
       {"state", "pending"}},
      {{"labels", {{"alertname", "cardiac_fleet_xid_storm"}, {"severity", "critical"}}},
       {"annotations", {{"summary", "Xids on 3 nodes"}}},
       {"state", "firing"}},
  };
  return a;
}

TEST(FleetView, NodesGpusAndAlerts) {
  const Answers in = three_nodes();
  const FleetView v = build_view("http://p:9090", "cardiac", in.targets, in.series, in.alerts);
  ASSERT_EQ(v.nodes.size(), 3u);  // node1 belongs to another job
  EXPECT_EQ(v.nodes[0].hostname, "a");
  EXPECT_EQ(v.nodes[0].verdict, Verdict::kOk);
  EXPECT_TRUE(v.nodes[0].alerts.empty());  // pending is not firing
  ASSERT_EQ(v.nodes[0].gpus.size(), 2u);
  EXPECT_DOUBLE_EQ(*v.nodes[0].gpus[1].utilization, 0.5);
  EXPECT_TRUE(v.nodes[0].gpus[1].reason.empty());

  const FleetNode& b = v.nodes[1];
  EXPECT_EQ(b.hostname, "b");
  EXPECT_EQ(b.verdict, Verdict::kFail);
  EXPECT_EQ(b.reason, "1 of 2 GPUs not OK");
  ASSERT_EQ(b.gpus.size(), 2u);
  EXPECT_FALSE(b.gpus[1].answering);
  EXPECT_EQ(b.gpus[1].reason,
            "not answering NVML (lost, hung or needing a reset); GPU 1 stopped answering NVML");
  EXPECT_EQ(b.gpus[1].last_xid, 79);
  EXPECT_DOUBLE_EQ(b.gpus[1].xids.at(79), 2);
  ASSERT_EQ(b.alerts.size(), 1u);
  EXPECT_EQ(b.alerts[0].name, "gpu_lost");
  EXPECT_EQ(b.alerts[0].gpu, 1);
  EXPECT_EQ(b.alerts[0].summary, "GPU 1 stopped answering NVML");

  const FleetNode& c = v.nodes[2];
  EXPECT_EQ(c.hostname, "c");
  EXPECT_FALSE(c.scraped);
  EXPECT_EQ(c.verdict, Verdict::kUnknown);
  EXPECT_EQ(c.reason, "not scraped: dial tcp c:9847: connect: connection refused");
  EXPECT_TRUE(c.gpus.empty());

  ASSERT_EQ(v.fleet_alerts.size(), 1u);
  EXPECT_EQ(v.fleet_alerts[0].name, "cardiac_fleet_xid_storm");
  EXPECT_EQ(v.verdict, Verdict::kFail);  // a failing node outranks the unknown one
}

TEST(FleetView, AnUnscrapedNodeKeepsTheFleetFromLookingFine) {
  Answers in = three_nodes();
  in.series.erase(std::remove_if(in.series.begin(), in.series.end(),
                                 [](const json& s) { return s["metric"]["instance"] == "b:9847"; }),
                  in.series.end());
  in.targets.erase(in.targets.begin() + 1);
  const FleetView v = build_view("u", "cardiac", in.targets, in.series, json::array());
  ASSERT_EQ(v.nodes.size(), 2u);
  EXPECT_EQ(v.nodes[0].verdict, Verdict::kOk);
  EXPECT_EQ(v.verdict, Verdict::kUnknown);
  in.targets.erase(in.targets.begin() + 1);  // c gone too: every node fine
  EXPECT_EQ(build_view("u", "cardiac", in.targets, in.series, json::array()).verdict, Verdict::kOk);
}

TEST(FleetView, AScrapedTargetWithoutCardiacSeriesIsUnknown) {
  const json targets = {target("a:9847", true)};
  const FleetView v = build_view("u", "cardiac", targets, json::array(), json::array());
  ASSERT_EQ(v.nodes.size(), 1u);
  EXPECT_EQ(v.nodes[0].verdict, Verdict::kUnknown);
  EXPECT_NE(v.nodes[0].reason.find("no cardiac health series"), std::string::npos);
  EXPECT_EQ(v.verdict, Verdict::kUnknown);
}

TEST(FleetView, NoTargetsIsUnknownAndSaysNothingWasLookedAt) {
  const FleetView v = build_view("u", "cardiac", json::array(), json::array(), json::array());
  EXPECT_EQ(v.verdict, Verdict::kUnknown);
  EXPECT_NE(render_text(v, false).find("no node was looked at"), std::string::npos);
}

TEST(FleetView, MalformedAnswersAreReadAsFarAsTheyGo) {
  const json targets = {target("a:9847", true), json("junk"), {{"scrapePool", "cardiac"}}};
  json series = {
      gpu("cardiac_gpu_health", "a:9847", 0, 1),
      json(42),
      {{"metric", {{"__name__", "cardiac_gpu_health"}, {"instance", "a:9847"}, {"gpu", "x"}}},
       {"value", {1, "1"}}},
      {{"metric", {{"__name__", "cardiac_gpu_up"}, {"instance", "a:9847"}, {"gpu", "0"}}},
       {"value", "NaN"}}};
  const FleetView v = build_view("u", "cardiac", targets, series, json("not a list"));
  ASSERT_EQ(v.nodes.size(), 1u);
  ASSERT_EQ(v.nodes[0].gpus.size(), 1u);
  EXPECT_EQ(v.nodes[0].gpus[0].verdict, Verdict::kWarn);
  EXPECT_EQ(v.nodes[0].verdict, Verdict::kWarn);
  EXPECT_EQ(v.nodes[0].gpus[0].reason, "not answering NVML (lost, hung or needing a reset)");
}

TEST(FleetView, JsonAndText) {
  const Answers in = three_nodes();
  const FleetView v = build_view("http://p:9090", "cardiac", in.targets, in.series, in.alerts);
  const json j = to_json(v);
  EXPECT_EQ(j["schema"], "cardiac.fleet/v1");
  EXPECT_EQ(j["verdict"], "fail");
  EXPECT_EQ(j["nodes_by_verdict"]["unknown"], 1);
  EXPECT_EQ(j["nodes_by_verdict"]["ok"], 1);
  EXPECT_EQ(j["gpus"], 4);
  EXPECT_EQ(j["gpus_by_verdict"]["fail"], 1);
  EXPECT_EQ(j["nodes"][1]["gpus"][1]["xids"]["79"], 2);
  EXPECT_TRUE(j["nodes"][0]["gpus"][0]["memory_used_bytes"].is_null());
  const std::string text = render_text(v, false);
  EXPECT_NE(text.find("Fleet: FAIL (3 nodes"), std::string::npos) << text;
  EXPECT_NE(text.find("c     UNKNOWN     -       0  not scraped"), std::string::npos) << text;
  EXPECT_NE(text.find("GPU 1  FAIL   "), std::string::npos) << text;
  EXPECT_NE(text.find("Xid 79 ×2"), std::string::npos) << text;
  EXPECT_NE(text.find("alert gpu_lost [critical] GPU 1"), std::string::npos) << text;
  EXPECT_EQ(text.find("GPU 0  OK"), std::string::npos) << text;  // fine GPUs only with --all
  EXPECT_NE(render_text(v, true).find("GPU 0  OK"), std::string::npos);
}

TEST(FleetView, SeriesQueryNamesTheJob) {
  const std::string q = series_query("gpu-agents");
  EXPECT_NE(q.find(R"(job="gpu-agents")"), std::string::npos);
  EXPECT_NE(q.find("cardiac_gpu_health|"), std::string::npos);
}

}  // namespace
}  // namespace cardiac::fleet
