// SPDX-License-Identifier: Apache-2.0
// A small client of Prometheus' HTTP API: the three reads the fleet view makes (targets, an
// instant query, alerts), each under a deadline, each error naming the server and what failed.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "core/clock.h"
#include "core/result.h"

namespace cardiac::fleet {

struct PrometheusOptions {
  std::string url;  // "http://host:9090", a path prefix kept ("http://h/prometheus")
  DurationNs timeout = 10 * kNsPerSec;
  std::string bearer_token;  // sent as Authorization: Bearer when set
};

// The options for `url` with the [fleet] table's timeout and bearer token file (read now, its
// content trimmed; an empty path: no token). Fails when the file cannot be read.
Result<PrometheusOptions> prometheus_options(std::string url, DurationNs timeout,
                                             const std::string& bearer_token_file);

class Prometheus {
 public:
  // Fails on a URL that is not http(s)://host[:port][/prefix].
  static Result<Prometheus> connect(PrometheusOptions options);

  // GET /api/v1/targets?state=active: `data.activeTargets`.
  [[nodiscard]] Result<nlohmann::json> targets() const;
  // GET /api/v1/query: `data.result` of an instant vector query.
  [[nodiscard]] Result<nlohmann::json> query(const std::string& promql) const;
  // GET /api/v1/alerts: `data.alerts` (pending and firing).
  [[nodiscard]] Result<nlohmann::json> alerts() const;

  [[nodiscard]] const std::string& url() const { return options_.url; }

 private:
  explicit Prometheus(PrometheusOptions options) : options_(std::move(options)) {}
  // The `data` member of a {"status":"success"} answer.
  [[nodiscard]] Result<nlohmann::json> get(const std::string& path,
                                           const std::string& query_string) const;

  PrometheusOptions options_;
  std::string origin_;  // scheme://host:port
  std::string prefix_;  // path prefix without a trailing slash
};

}  // namespace cardiac::fleet
