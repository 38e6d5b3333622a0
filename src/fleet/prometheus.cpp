// SPDX-License-Identifier: Apache-2.0
#include "fleet/prometheus.h"

#include <httplib.h>

#include <cerrno>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "core/strings.h"
#include "core/time.h"
#include "notify/notifier.h"

namespace cardiac::fleet {

using nlohmann::json;

Result<PrometheusOptions> prometheus_options(std::string url, DurationNs timeout,
                                             const std::string& bearer_token_file) {
  PrometheusOptions o;
  o.url = std::move(url);
  o.timeout = timeout;
  if (!bearer_token_file.empty()) {
    std::ifstream in(bearer_token_file);
    if (!in) return fail(Error::io(bearer_token_file, errno));
    std::stringstream ss;
    ss << in.rdbuf();
    o.bearer_token = std::string(trim(ss.str()));
  }
  return o;
}

Result<Prometheus> Prometheus::connect(PrometheusOptions options) {
  auto url = notify::parse_http_url(options.url);
  if (!url) return fail(url.error().with_context("Prometheus URL"));
  Prometheus p(std::move(options));
  p.origin_ = url->origin();
  p.prefix_ = url->path;
  while (!p.prefix_.empty() && p.prefix_.back() == '/') p.prefix_.pop_back();
  return p;
}

Result<json> Prometheus::get(const std::string& path, const std::string& query_string) const {
  const std::string where = fmt::format("Prometheus at {}", options_.url);
  const std::string target = prefix_ + path + (query_string.empty() ? "" : "?" + query_string);
  try {
    httplib::Client cli(origin_);
    const auto sec = static_cast<time_t>(options_.timeout / kNsPerSec);
    const auto usec = static_cast<time_t>((options_.timeout % kNsPerSec) / kNsPerUs);
    cli.set_connection_timeout(sec, usec);
    cli.set_read_timeout(sec, usec);
    cli.set_write_timeout(sec, usec);
    httplib::Headers headers;
    if (!options_.bearer_token.empty()) {
      headers.emplace("Authorization", "Bearer " + options_.bearer_token);
    }
    auto res = cli.Get(target, headers);
    if (!res) {
      const auto err = res.error();
      const std::string msg =
          err == httplib::Error::Connection
              ? "could not connect (refused, unreachable, or the name did not resolve)"
          : err == httplib::Error::ConnectionTimeout || err == httplib::Error::Read
              ? fmt::format("no answer within {}", format_duration(options_.timeout))
              : "request failed (" + httplib::to_string(err) + ")";
      return fail(Error::unavailable(fmt::format("GET {}: {}", path, msg), where));
    }
    json body = json::parse(res->body, nullptr, false);
    if (res->status != 200) {
      std::string why = body.is_object() ? body.value("error", "") : "";
      if (why.empty()) why = res->body.substr(0, 200);
      return fail(
          Error::unavailable(fmt::format("GET {}: HTTP {}: {}", path, res->status, why), where));
    }
    if (!body.is_object() || body.value("status", "") != "success" || !body.contains("data")) {
      return fail(Error::parse(
          fmt::format("GET {}: not a Prometheus API answer (no \"status\":\"success\" and data)",
                      path),
          where));
    }
    return std::move(body["data"]);
  } catch (const std::exception& e) {
    return fail(Error::unavailable(fmt::format("GET {}: {}", path, e.what()), where));
  }
}

Result<json> Prometheus::targets() const {
  auto data = get("/api/v1/targets", "state=active");
  if (!data) return fail(data.error());
  if (!data->contains("activeTargets") || !(*data)["activeTargets"].is_array()) {
    return fail(Error::parse("GET /api/v1/targets: no activeTargets list",
                             "Prometheus at " + options_.url));
  }
  return std::move((*data)["activeTargets"]);
}

Result<json> Prometheus::query(const std::string& promql) const {
  auto data = get("/api/v1/query", "query=" + httplib::detail::encode_query_param(promql));
  if (!data) return fail(data.error().with_context("query " + promql));
  if (data->value("resultType", "") != "vector" || !(*data)["result"].is_array()) {
    return fail(Error::parse("not an instant vector", "query " + promql));
  }
  return std::move((*data)["result"]);
}

Result<json> Prometheus::alerts() const {
  auto data = get("/api/v1/alerts", "");
  if (!data) return fail(data.error());
  if (!data->contains("alerts") || !(*data)["alerts"].is_array()) {
    return fail(
        Error::parse("GET /api/v1/alerts: no alerts list", "Prometheus at " + options_.url));
  }
  return std::move((*data)["alerts"]);
}

}  // namespace cardiac::fleet
