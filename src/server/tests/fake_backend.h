// SPDX-License-Identifier: Apache-2.0
// A Backend with canned answers that records what the server asked for.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>

#include "server/http_server.h"

namespace cardiac::server::test_support {

using nlohmann::json;

// Records what the server asked for; answers are canned. Locked: handlers run on pool threads.
class FakeBackend final : public Backend {
 public:
  std::shared_ptr<const std::string> metrics_text() override {
    std::lock_guard lock(mu);
    return metrics;
  }
  json status() override {
    if (throw_in_status) throw std::runtime_error("status exploded");
    std::lock_guard lock(mu);
    return status_body;
  }
  bool healthy(std::string* why) override {
    if (!is_healthy) *why = "no sample for 30 s";
    return is_healthy;
  }
  Result<json> history(const HistoryQuery& q) override {
    std::lock_guard lock(mu);
    last_history = q;
    if (q.metric == "missing") return fail(Error::not_found("unknown metric"));
    return json{{"points", json::array()}};
  }
  Result<json> events(TimeNs since, int limit) override {
    std::lock_guard lock(mu);
    last_since = since;
    last_limit = limit;
    return json::array();
  }
  Result<json> alerts(bool include_resolved) override {
    std::lock_guard lock(mu);
    last_include_resolved = include_resolved;
    return json::array();
  }
  Result<json> ack_alert(std::int64_t id, const std::string& who) override {
    std::lock_guard lock(mu);
    last_ack_id = id;
    last_who = who;
    return json{{"acked", id}};
  }
  Result<json> silence(const std::string& matcher, DurationNs duration, const std::string& who,
                       const std::string& comment) override {
    std::lock_guard lock(mu);
    last_matcher = matcher;
    last_duration = duration;
    last_who = who;
    last_comment = comment;
    return json{{"id", 7}};
  }

  Result<json> fleet() override {
    std::lock_guard lock(mu);
    if (!fleet_answer) return Backend::fleet();
    return *fleet_answer;
  }
  Result<json> dashboard_overview() override {
    std::lock_guard lock(mu);
    return json{{"schema", "cardiac.dashboard.overview/v1"}};
  }
  Result<json> dashboard_chart(std::optional<int> gpu,
                               const dashboard::ChartRange& range) override {
    std::lock_guard lock(mu);
    last_chart_gpu = gpu;
    last_chart_range = range.name;
    if (gpu && *gpu == 99) return fail(Error::not_found("no GPU 99"));
    return json{{"range", range.name}};
  }

  std::mutex mu;
  json status_body = {{"gpus", json::array()}};
  // What /metrics answers; tests replace it to stand for a new sample.
  std::shared_ptr<const std::string> metrics =
      std::make_shared<const std::string>("cardiac_up 1\n");
  bool is_healthy = true;
  bool throw_in_status = false;
  HistoryQuery last_history;
  TimeNs last_since = 0;
  int last_limit = 0;
  bool last_include_resolved = false;
  std::int64_t last_ack_id = -1;
  std::string last_who, last_matcher, last_comment;
  DurationNs last_duration = 0;
  std::optional<int> last_chart_gpu;
  std::string last_chart_range;
  std::optional<Result<json>> fleet_answer;  // unset: the default answer (no [fleet])
};

}  // namespace cardiac::server::test_support
