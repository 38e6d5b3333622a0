// SPDX-License-Identifier: Apache-2.0
#include "dashboard/overview.h"

#include <gtest/gtest.h>

namespace cardiac::dashboard {
namespace {

using nlohmann::json;

json lost_status() {
  return json::parse(R"J({
    "schema": "cardiac.status/v1", "verdict": "FAIL", "taken_at": "2026-01-01T00:00:00.000Z",
    "nvml": {"available": true, "device_count": 2, "driver_version": "550.54.15"},
    "gpus": [
      {"index": 0, "name": "H100", "verdict": "OK", "health": "ok", "reasons": [],
       "utilization_gpu": 97, "memory_used": 100, "memory_total": 200, "temperature": 56,
       "temperature_slowdown": 87, "power_usage_mw": 652000, "power_limit_mw": 700000,
       "clock_event_reason_names": ["sw_power_cap"]},
      {"index": 1, "verdict": "FAIL", "health": "lost",
       "health_detail": "nvmlDeviceGetUUID returned GPU_IS_LOST",
       "reasons": [{"code": "gpu_lost", "level": "FAIL", "text": "lost from the bus (GPU_IS_LOST)"}]}
    ],
    "host": {"verdict": "WARN", "reasons": [{"text": "disk / 95 % full"}, {"text": "swapping"}],
             "system": {"hostname": "node1"}, "cpu": {"cores": 64},
             "memory": {"total_bytes": 1000, "available_bytes": 400},
             "filesystems": [{"mount_point": "/", "used_pct": 95.0, "total_bytes": 10}],
             "nics": [{"name": "eth0", "operstate": "up", "speed_mbps": 25000,
                       "rx_bytes_per_s": 5, "tx_bytes_per_s": 6, "util_pct": 0.1},
                      {"name": "ifb0", "operstate": "down"}]}
  })J");
}

TEST(VerdictWords, ClassAndReason) {
  EXPECT_EQ(verdict_class("OK"), "ok");
  EXPECT_EQ(verdict_class("WARN"), "warn");
  EXPECT_EQ(verdict_class("FAIL"), "fail");
  EXPECT_EQ(verdict_class("UNKNOWN"), "unknown");
  EXPECT_EQ(verdict_class(nullptr), "unknown");
  EXPECT_EQ(reason_words({{"verdict", "OK"}}), "healthy");
  EXPECT_EQ(reason_words({{"verdict", "FAIL"}, {"health_detail", "gone"}}), "gone");
  EXPECT_EQ(reason_words({{"verdict", "FAIL"}}), "no reading");
  EXPECT_EQ(reason_words(lost_status()["host"]), "disk / 95 % full; swapping");
}

TEST(Overview, CardsPerGpuWithVerdictAndReason) {
  OverviewInput in;
  in.status = lost_status();
  in.alerts = Part::ok(json::array());
  in.events = Part::ok(json::array());
  in.incidents = Part::ok(json::array());
  in.hostname = "node1";
  json o = overview(in);
  EXPECT_EQ(o["schema"], "cardiac.dashboard.overview/v1");
  EXPECT_EQ(o["verdict"], "FAIL");
  EXPECT_EQ(o["class"], "fail");
  const json& cards = o["gpus"]["cards"];
  ASSERT_EQ(cards.size(), 2U);
  EXPECT_EQ(cards[0]["class"], "ok");
  EXPECT_EQ(cards[0]["reason"], "healthy");
  EXPECT_EQ(cards[0]["power_w"], 652.0);
  EXPECT_EQ(cards[0]["power_limit_w"], 700.0);
  EXPECT_EQ(cards[0]["throttle"], json({"sw_power_cap"}));
  EXPECT_EQ(cards[1]["class"], "fail");
  EXPECT_EQ(cards[1]["health"], "lost");
  EXPECT_EQ(cards[1]["reason"], "lost from the bus (GPU_IS_LOST)");
  // A lost GPU has no readings: null ("n/a"), never 0.
  EXPECT_TRUE(cards[1]["utilization_pct"].is_null());
  EXPECT_TRUE(cards[1]["temperature_c"].is_null());
  EXPECT_EQ(o["host"]["class"], "warn");
  EXPECT_EQ(o["host"]["hostname"], "node1");
  ASSERT_EQ(o["host"]["nics"].size(), 1U);  // the down link left out
  EXPECT_EQ(o["host"]["nics"][0]["speed_mbps"], 25000);
  EXPECT_TRUE(o["queue"].is_null());
  EXPECT_EQ(o["errors"], json::array());
}

TEST(Overview, FiringAlertsOnlyAndFences) {
  OverviewInput in;
  in.status = lost_status();
  in.alerts = Part::ok(json::parse(R"([
    {"id": 2, "rule": "gpu_fenced", "state": "firing", "severity": "critical",
     "labels": {"gpu": "1"}, "acked": null, "silenced": false},
    {"id": 3, "rule": "host_cpu_saturated", "state": "pending"},
    {"id": 4, "rule": "gpu_thermal", "state": "resolved"}])"));
  in.events = Part::ok(json::array());
  in.incidents = Part::ok(json::array());
  in.queue =
      Part::ok({{"fences", {{{"gpu", 1}, {"reason", "GPU lost"}}}}, {"jobs", json::array()}});
  json o = overview(in);
  ASSERT_EQ(o["alerts"]["firing"].size(), 1U);
  EXPECT_EQ(o["alerts"]["firing"][0]["id"], 2);
  EXPECT_EQ(o["alerts"]["pending"], 1);
  EXPECT_FALSE(o["gpus"]["cards"][0]["fenced"]);
  EXPECT_TRUE(o["gpus"]["cards"][1]["fenced"]);
  EXPECT_EQ(o["queue"]["fences"][0]["gpu"], 1);
}

TEST(Overview, TimelineMergesNewestFirst) {
  OverviewInput in;
  in.status = lost_status();
  in.alerts = Part::ok(json::array());
  in.events = Part::ok(json::parse(R"([
    {"time_ns": 1000000000, "kind": "xid", "xid": 79, "gpu": 1, "message": "fell off the bus"},
    {"time_ns": 3000000000, "kind": "kmsg", "message": "AER"}])"));
  in.incidents = Part::ok(json::parse(R"([
    {"id": 1, "gpu": 1, "kind": "lost", "started_ns": 2000000000, "evidence": "GPU_IS_LOST"}])"));
  json o = overview(in);
  const json& t = o["timeline"];
  ASSERT_EQ(t.size(), 3U);
  EXPECT_EQ(t[0]["kind"], "kmsg");
  EXPECT_EQ(t[1]["type"], "incident");
  EXPECT_TRUE(t[1]["open"]);
  EXPECT_EQ(t[1]["time"], "1970-01-01T00:00:02.000Z");
  EXPECT_EQ(t[2]["xid"], 79);
}

TEST(Overview, UnreadablePartsAreErrorsNotEmpty) {
  OverviewInput in;
  in.status = {
      {"schema", "cardiac.status/v1"}, {"verdict", "UNKNOWN"}, {"message", "no sample yet"}};
  in.alerts = Part::failed("database is locked");
  in.events = Part::failed("disk I/O error");
  in.incidents = Part::ok(json::array());
  in.queue = Part::failed("queue stopped");
  json o = overview(in);
  EXPECT_EQ(o["class"], "unknown");
  EXPECT_EQ(o["alerts"]["error"], "database is locked");
  EXPECT_EQ(o["queue"]["error"], "queue stopped");
  EXPECT_EQ(o["host"]["error"], "no host reading");
  std::vector<std::string> parts;
  for (const auto& e : o["errors"]) parts.push_back(e["part"]);
  EXPECT_EQ(parts, (std::vector<std::string>{"status", "alerts", "events", "queue"}));
  EXPECT_EQ(o["errors"][0]["error"], "no sample yet");
}

TEST(Overview, NvmlUnavailableIsAnError) {
  OverviewInput in;
  in.status = {
      {"verdict", "FAIL"},
      {"nvml", {{"available", false}, {"error_kind", "driver_not_loaded"}, {"error", "x"}}},
      {"gpus", json::array()}};
  json o = overview(in);
  EXPECT_EQ(o["gpus"]["error"], "NVML unavailable (driver_not_loaded): x");
}

}  // namespace
}  // namespace cardiac::dashboard
