// SPDX-License-Identifier: Apache-2.0
// The agent's HTTP API and /metrics endpoint; serves what a Backend supplies, computes nothing.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/clock.h"
#include "core/result.h"
#include "dashboard/chart.h"

namespace cardiac::server {

// The default port. Chosen away from dcgm-exporter (9400) and node_exporter (9100) so cardiac
// can run next to both on one host.
inline constexpr int kDefaultPort = 9847;

// Request bodies above this are answered 413 before a handler sees them: the API only takes
// small JSON documents, so a big body is a mistake or an attack.
inline constexpr std::size_t kMaxBodyBytes = 64 * 1024;

// Must equal metrics::kExpositionContentType; repeated here because server/ may not depend on
// metrics/ (the agent renders the text and hands it over through Backend::metrics_text).
inline constexpr const char* kMetricsContentType = "text/plain; version=0.0.4; charset=utf-8";

struct HistoryQuery {
  std::string metric;
  std::optional<int> gpu;  // nullopt: a host metric
  TimeNs since = 0;        // inclusive, ns since the UTC epoch
  TimeNs until = 0;        // inclusive
  DurationNs step = 0;     // the bucket width; the route sets 1 min when the request has none
};

// What the agent implements. Called from the server's worker threads, concurrently: an
// implementation must be thread-safe. Errors map to HTTP statuses (invalid/parse → 400,
// not found → 404, unsupported → 501, unavailable → 503, permission → 403, others → 500).
class Backend {
 public:
  virtual ~Backend() = default;
  // The Prometheus exposition. The same pointer as long as the text is unchanged (until the
  // next sample): the server keeps its compressed forms per pointer, not per request.
  virtual std::shared_ptr<const std::string> metrics_text() = 0;
  virtual nlohmann::json status() = 0;         // latest status report JSON
  virtual bool healthy(std::string* why) = 0;  // false when sampling stalled
  virtual Result<nlohmann::json> history(const HistoryQuery& query) = 0;
  virtual Result<nlohmann::json> events(TimeNs since, int limit) = 0;
  virtual Result<nlohmann::json> alerts(bool include_resolved) = 0;
  virtual Result<nlohmann::json> ack_alert(std::int64_t id, const std::string& who) = 0;
  virtual Result<nlohmann::json> silence(const std::string& matcher, DurationNs duration,
                                         const std::string& who, const std::string& comment) = 0;
  // GET /api/v1/queue: the job queue's jobs, counts and fences (unsupported without a queue).
  virtual Result<nlohmann::json> queue() {
    return tl::unexpected(Error::unsupported("this agent runs no job queue ([queue] enabled)"));
  }
  // GET /api/v1/fleet: the fleet view (`cardiac.fleet/v1`) from the Prometheus of [fleet]:
  // unsupported without one, unavailable (with why) when it cannot be read.
  virtual Result<nlohmann::json> fleet() {
    return tl::unexpected(Error::unsupported(
        "this agent has no fleet view: set [fleet] prometheus in its configuration"));
  }
  // GET /api/v1/dashboard/overview: dashboard::overview() over what the agent has now.
  virtual Result<nlohmann::json> dashboard_overview() {
    return tl::unexpected(Error::unsupported("this server has no dashboard data"));
  }
  // GET /api/v1/dashboard/chart: dashboard::chart() for a GPU (nullopt: the host) over `range`.
  virtual Result<nlohmann::json> dashboard_chart(std::optional<int> gpu,
                                                 const dashboard::ChartRange& range) {
    (void)gpu;
    (void)range;
    return tl::unexpected(Error::unsupported("this server has no dashboard data"));
  }
};

// What one client may hold of the server (see guarded_server.h for how it is enforced).
struct ConnectionLimits {
  std::size_t per_peer = 512;  // open connections one address may hold; more are answered 503
  std::size_t total = 2048;    // open connections in all (lowered to fit RLIMIT_NOFILE)
  int workers = 8;             // threads that run handlers
  // From a request's first byte until its head and body have arrived; then 408 and close.
  DurationNs request_timeout = 10 * kNsPerSec;
  // How long a connection may stay open without starting a request (new or kept alive).
  DurationNs idle_timeout = 5 * kNsPerSec;
};

struct ServerOptions {
  std::string address = "127.0.0.1";
  int port = kDefaultPort;  // 0: an ephemeral port, returned by start()
  // Bearer token. Every POST/PUT/DELETE needs it, on any address; so do reads on a
  // non-loopback address. Without one the server answers reads on loopback and refuses
  // every mutation.
  std::string token;
  std::string tls_cert;  // PEM paths; both or neither
  std::string tls_key;
  bool metrics_need_token = false;  // also guard /metrics and /healthz
  ConnectionLimits limits{};        // plain HTTP only; TLS keeps httplib's own pool
};

// Who a request that passed the token check is recorded as (acks, silences): the holder of
// the token, not a name the caller wrote.
inline constexpr const char* kTokenPrincipal = "api-token";

class HttpServer {
 public:
  HttpServer(Backend& backend, ServerOptions options, const Clock& clock);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Validates the options, binds, and serves on a thread of its own. Returns the bound port.
  // Refuses (nothing bound) a non-loopback address without a token, TLS without both files or
  // without TLS support in cpp-httplib, and a start while running.
  Result<int> start();
  // Stops accepting, waits for in-flight requests, joins the thread. Idempotent.
  void stop();

  // How many times a /metrics body has been compressed (tests: once per text and coding).
  [[nodiscard]] std::uint64_t metrics_compressions() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace cardiac::server
