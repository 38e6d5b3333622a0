// SPDX-License-Identifier: Apache-2.0
// End-to-end tests of the HTTP server on 127.0.0.1 with a fake Backend.
#include "server/http_server.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <mutex>
#include <stdexcept>

#include "server/tests/decode.h"
#include "server/tests/fake_backend.h"

namespace cardiac::server {
namespace {

using test_support::FakeBackend;

using nlohmann::json;

constexpr TimeNs kServerNow = 1'700'000'000LL * kNsPerSec;
constexpr const char* kToken = "s3cret";

// Designated initializers would trip -Wmissing-field-initializers; edit a default instead.
template <class F>
ServerOptions options(F edit) {
  ServerOptions o;
  o.port = 0;
  edit(o);
  return o;
}

class ServerTest : public ::testing::Test {
 protected:
  void start(ServerOptions opt = {}) {
    opt.address = "127.0.0.1";
    opt.port = 0;
    server = std::make_unique<HttpServer>(backend, opt, clock);
    auto port = server->start();
    ASSERT_TRUE(port) << port.error().what();
    client = std::make_unique<httplib::Client>("127.0.0.1", *port);
    client->set_connection_timeout(2, 0);
    client->set_read_timeout(5, 0);
  }
  httplib::Result post(const std::string& path, const std::string& body,
                       const std::string& token = "") {
    httplib::Headers h;
    if (!token.empty()) h.emplace("Authorization", "Bearer " + token);
    return client->Post(path.c_str(), h, body, "application/json");
  }
  static json body_of(const httplib::Result& r) { return json::parse(r->body); }

  FakeBackend backend;
  ManualClock clock{kServerNow};
  std::unique_ptr<HttpServer> server;
  std::unique_ptr<httplib::Client> client;
};

TEST_F(ServerTest, MetricsUsesPrometheusContentType) {
  start();
  auto r = client->Get("/metrics");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->get_header_value("Content-Type"), "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_EQ(r->body, "cardiac_up 1\n");
}

// An exposition-sized text, so that compressing it is worthwhile.
std::string big_exposition(int value) {
  std::string s;
  for (int gpu = 0; gpu < 8; ++gpu) {
    for (int m = 0; m < 40; ++m) {
      s += "cardiac_gpu_reading_" + std::to_string(m) + "{gpu=\"" + std::to_string(gpu) +
           "\",hostname=\"node-17\"} " + std::to_string(value + m) + "\n";
    }
  }
  return s;
}

TEST_F(ServerTest, MetricsAnswersEachAcceptedCodingWithTheSameText) {
  const std::string text = big_exposition(1);
  backend.metrics = std::make_shared<const std::string>(text);
  start();
  client->set_decompress(false);  // check the bytes as sent
  auto plain = client->Get("/metrics");
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->body, text);
  EXPECT_FALSE(plain->has_header("Content-Encoding"));
  EXPECT_EQ(plain->get_header_value("Vary"), "Accept-Encoding");

  auto br = client->Get("/metrics", {{"Accept-Encoding", "gzip, deflate, br"}});
  ASSERT_TRUE(br);
  EXPECT_EQ(br->get_header_value("Content-Encoding"), "br");
  EXPECT_EQ(br->get_header_value("Vary"), "Accept-Encoding");
  EXPECT_EQ(br->get_header_value("Content-Type"), kMetricsContentType);
  EXPECT_EQ(br->get_header_value("Content-Length"), std::to_string(br->body.size()));
  EXPECT_EQ(test_support::unbrotli(br->body), text);

  auto gz = client->Get("/metrics", {{"Accept-Encoding", "gzip"}});
  ASSERT_TRUE(gz);
  EXPECT_EQ(gz->get_header_value("Content-Encoding"), "gzip");
  EXPECT_EQ(test_support::gunzip(gz->body), text);

  // q=0 refuses a coding; cpp-httplib's own check only looked for the substring "br".
  auto no_br = client->Get("/metrics", {{"Accept-Encoding", "br;q=0, gzip"}});
  ASSERT_TRUE(no_br);
  EXPECT_EQ(no_br->get_header_value("Content-Encoding"), "gzip");
  EXPECT_EQ(test_support::gunzip(no_br->body), text);

  // HEAD announces the length of what GET would send, in the same coding.
  auto head = client->Head("/metrics", {{"Accept-Encoding", "br"}});
  ASSERT_TRUE(head);
  EXPECT_EQ(head->get_header_value("Content-Length"), std::to_string(br->body.size()));
}

TEST_F(ServerTest, MetricsCompressesOncePerSample) {
  backend.metrics = std::make_shared<const std::string>(big_exposition(1));
  start();
  client->set_decompress(false);
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(client->Get("/metrics", {{"Accept-Encoding", "br"}}));
    ASSERT_TRUE(client->Get("/metrics", {{"Accept-Encoding", "gzip"}}));
    ASSERT_TRUE(client->Get("/metrics"));
  }
  EXPECT_EQ(server->metrics_compressions(), 2U);  // br and gzip, once each

  // A new sample: a new text, compressed anew.
  const std::string next = big_exposition(2);
  {
    std::lock_guard lock(backend.mu);
    backend.metrics = std::make_shared<const std::string>(next);
  }
  auto br = client->Get("/metrics", {{"Accept-Encoding", "br"}});
  ASSERT_TRUE(br);
  EXPECT_EQ(test_support::unbrotli(br->body), next);
  EXPECT_EQ(server->metrics_compressions(), 3U);
}

TEST_F(ServerTest, JsonAnswersAreCompressedWhenAccepted) {
  start();
  client->set_decompress(false);
  // Small answers go out plain; the events list is large enough to compress.
  auto small = client->Get("/api/v1/status", {{"Accept-Encoding", "br"}});
  ASSERT_TRUE(small);
  EXPECT_FALSE(small->has_header("Content-Encoding"));
  EXPECT_EQ(body_of(small), json({{"gpus", json::array()}}));
  {
    std::lock_guard lock(backend.mu);
    backend.status_body = json::array();
    for (int i = 0; i < 200; ++i) backend.status_body.push_back({{"gpu", i % 8}, {"ok", true}});
  }
  auto big = client->Get("/api/v1/status", {{"Accept-Encoding", "br;q=0.5, gzip;q=0.9"}});
  ASSERT_TRUE(big);
  EXPECT_EQ(big->get_header_value("Content-Encoding"), "gzip");
  EXPECT_EQ(big->get_header_value("Content-Type"), "application/json");
  auto text = test_support::gunzip(big->body);
  ASSERT_TRUE(text);
  EXPECT_EQ(json::parse(*text), backend.status_body);
  // Errors keep their status and body.
  auto missing = client->Get("/api/v1/history?metric=missing", {{"Accept-Encoding", "gzip"}});
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
  EXPECT_EQ(body_of(missing)["error"], "unknown metric");
}

TEST_F(ServerTest, HealthzReflectsBackend) {
  start();
  auto ok = client->Get("/healthz");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
  EXPECT_EQ(ok->body, "ok\n");
  backend.is_healthy = false;
  auto bad = client->Get("/healthz");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 503);
  EXPECT_NE(bad->body.find("no sample for 30 s"), std::string::npos);
}

TEST_F(ServerTest, StatusIsBackendJson) {
  start();
  auto r = client->Get("/api/v1/status");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->get_header_value("Content-Type"), "application/json");
  EXPECT_TRUE(body_of(r).contains("gpus"));
}

TEST_F(ServerTest, HistoryParsesParameters) {
  start();
  auto r = client->Get("/api/v1/history?metric=gpu_temp&gpu=2&since=2h&until=1700000000&step=1m");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(backend.last_history.metric, "gpu_temp");
  EXPECT_EQ(backend.last_history.gpu, 2);
  EXPECT_EQ(backend.last_history.since, kServerNow - 7200 * kNsPerSec);
  EXPECT_EQ(backend.last_history.until, kServerNow);
  EXPECT_EQ(backend.last_history.step, 60 * kNsPerSec);

  ASSERT_TRUE(client->Get("/api/v1/history?metric=gpu_temp"));
  EXPECT_FALSE(backend.last_history.gpu.has_value());
  EXPECT_EQ(backend.last_history.since, kServerNow - 3600 * kNsPerSec);  // default window: 1 h
  EXPECT_EQ(backend.last_history.until, kServerNow);
  EXPECT_EQ(backend.last_history.step, 60 * kNsPerSec);  // default step: 1 min (docs/api.md)
}

TEST_F(ServerTest, BadParametersAre400NamingTheField) {
  start();
  const std::pair<const char*, const char*> cases[] = {
      {"/api/v1/history", "metric"},
      {"/api/v1/history?metric=x&since=yesterday", "since"},
      {"/api/v1/history?metric=x&until=2024-13-01T00:00:00Z", "until"},
      {"/api/v1/history?metric=x&since=1h&until=2h", "since"},
      {"/api/v1/history?metric=x&gpu=abc", "gpu"},
      {"/api/v1/history?metric=x&step=fast", "step"},
      {"/api/v1/events?limit=0", "limit"},
      {"/api/v1/events?since=later", "since"},
  };
  for (auto [path, field] : cases) {
    auto r = client->Get(path);
    ASSERT_TRUE(r) << path;
    EXPECT_EQ(r->status, 400) << path;
    EXPECT_EQ(body_of(r).value("field", ""), field) << path << " " << r->body;
    EXPECT_FALSE(body_of(r).value("error", "").empty()) << path;
  }
}

TEST_F(ServerTest, BackendErrorsMapToStatus) {
  start();
  auto r = client->Get("/api/v1/history?metric=missing");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);
  EXPECT_NE(body_of(r)["error"].get<std::string>().find("unknown metric"), std::string::npos);
}

TEST_F(ServerTest, EventsAndAlerts) {
  start();
  ASSERT_EQ(client->Get("/api/v1/events?since=10m&limit=5")->status, 200);
  EXPECT_EQ(backend.last_since, kServerNow - 600 * kNsPerSec);
  EXPECT_EQ(backend.last_limit, 5);
  ASSERT_EQ(client->Get("/api/v1/events")->status, 200);
  EXPECT_EQ(backend.last_limit, 100);

  ASSERT_EQ(client->Get("/api/v1/alerts")->status, 200);
  EXPECT_FALSE(backend.last_include_resolved);
  ASSERT_EQ(client->Get("/api/v1/alerts?all=1")->status, 200);
  EXPECT_TRUE(backend.last_include_resolved);
}

TEST_F(ServerTest, MutationsWithoutAConfiguredTokenAreRefusedEvenOnLoopback) {
  start();
  auto r = post("/api/v1/alerts/42/ack", "");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 403) << r->body;
  EXPECT_EQ(post("/api/v1/silences", R"({"matcher":"a","duration":"1h"})", "x")->status, 403);
  EXPECT_EQ(backend.last_ack_id, -1);
  EXPECT_TRUE(backend.last_matcher.empty());
}

TEST_F(ServerTest, MutationsNeedTheTokenWhenConfigured) {
  start(options([](auto& o) { o.token = kToken; }));
  auto missing = post("/api/v1/alerts/42/ack", R"({"by":"ana"})");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 401);
  EXPECT_EQ(missing->get_header_value("WWW-Authenticate"), "Bearer");
  EXPECT_EQ(post("/api/v1/alerts/42/ack", R"({"by":"ana"})", "wrong")->status, 403);
  EXPECT_EQ(post("/api/v1/silences", R"({"matcher":"a","duration":"1h"})")->status, 401);
  EXPECT_EQ(backend.last_ack_id, -1);  // the backend never saw the refused calls

  auto ok = post("/api/v1/alerts/42/ack", R"({"by":"ana"})", kToken);
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
  // Recorded under the token, whatever name the caller wrote.
  EXPECT_EQ(backend.last_who, "api-token (says ana)");

  // Reads on a loopback bind stay open even when a token exists.
  EXPECT_EQ(client->Get("/api/v1/status")->status, 200);
  EXPECT_EQ(client->Get("/metrics")->status, 200);
}

TEST_F(ServerTest, MetricsCanRequireToken) {
  start(options([](auto& o) {
    o.token = kToken;
    o.metrics_need_token = true;
  }));
  EXPECT_EQ(client->Get("/metrics")->status, 401);
  EXPECT_EQ(client->Get("/metrics", {{"Authorization", "Bearer nope"}})->status, 403);
  EXPECT_EQ(client->Get("/metrics", {{"Authorization", std::string("Bearer ") + kToken}})->status,
            200);
}

TEST_F(ServerTest, SilenceParsesBody) {
  start(options([](auto& o) { o.token = kToken; }));
  auto r = post("/api/v1/silences",
                R"({"matcher":"rule=gpu_thermal","duration":"2h","comment":"fan"})", kToken);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(backend.last_matcher, "rule=gpu_thermal");
  EXPECT_EQ(backend.last_duration, 7200 * kNsPerSec);
  EXPECT_EQ(backend.last_who, "api-token");
  EXPECT_EQ(backend.last_comment, "fan");
}

TEST_F(ServerTest, MalformedBodiesAre400) {
  start(options([](auto& o) { o.token = kToken; }));
  const std::tuple<const char*, const char*, const char*> cases[] = {
      {"/api/v1/silences", "{not json", "body"},
      {"/api/v1/silences", "", "body"},
      {"/api/v1/silences", "[1,2]", "body"},
      {"/api/v1/silences", R"({"duration":"2h"})", "matcher"},
      {"/api/v1/silences", R"({"matcher":"a","duration":"forever"})", "duration"},
      {"/api/v1/silences", R"({"matcher":"a","duration":"1h","by":3})", "by"},
      {"/api/v1/alerts/x/ack", "", "id"},
      {"/api/v1/alerts/1/ack", "{", "body"},
  };
  for (auto [path, body, field] : cases) {
    auto r = post(path, body, kToken);
    ASSERT_TRUE(r) << path;
    EXPECT_EQ(r->status, 400) << path << " " << body;
    EXPECT_EQ(body_of(r).value("field", ""), field) << path << " " << body << " " << r->body;
  }
  EXPECT_NE(post("/api/v1/silences", "{not json", kToken)->body.find("not valid JSON"),
            std::string::npos);
}

TEST_F(ServerTest, HugeBodyIs413) {
  start();
  std::string big(200 * 1024, 'x');
  auto r = post("/api/v1/silences", big);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 413);
  EXPECT_TRUE(backend.last_matcher.empty());
}

TEST_F(ServerTest, BackendExceptionIs500AndServerKeepsServing) {
  start();
  backend.throw_in_status = true;
  auto r = client->Get("/api/v1/status");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 500);
  EXPECT_NE(body_of(r)["error"].get<std::string>().find("status exploded"), std::string::npos);
  backend.throw_in_status = false;
  auto again = client->Get("/api/v1/status");
  ASSERT_TRUE(again);
  EXPECT_EQ(again->status, 200);
}

TEST_F(ServerTest, UnknownPathIsJson404) {
  start();
  auto r = client->Get("/api/v1/nope");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);
  EXPECT_TRUE(body_of(r).contains("error"));
}

TEST_F(ServerTest, StopIsPromptAndIdempotent) {
  start();
  ASSERT_EQ(client->Get("/healthz")->status, 200);
  auto t0 = std::chrono::steady_clock::now();
  server->stop();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(1));
  server->stop();
  EXPECT_FALSE(client->Get("/healthz"));
}

TEST_F(ServerTest, SecondStartWhileRunningRefused) {
  start();
  EXPECT_FALSE(server->start());
}

// Start-up checks read no time.
const ManualClock kClock;

TEST(ServerStart, NonLoopbackWithoutTokenRefused) {
  FakeBackend backend;
  HttpServer server(backend, options([](auto& o) { o.address = "0.0.0.0"; }), kClock);
  auto r = server.start();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(r.error().what().find("without a token"), std::string::npos);
}

TEST(ServerStart, MetricsTokenWithoutTokenRefused) {
  FakeBackend backend;
  HttpServer server(backend, options([](auto& o) { o.metrics_need_token = true; }), kClock);
  EXPECT_FALSE(server.start());
}

TEST(ServerStart, TlsNeedsValidCertAndKey) {
  FakeBackend backend;
  HttpServer half(backend, options([](auto& o) { o.tls_cert = "/nonexistent/cert.pem"; }), kClock);
  auto r = half.start();
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().what().find("both"), std::string::npos);
  HttpServer missing(backend, options([](auto& o) {
                       o.tls_cert = "/nonexistent/c.pem";
                       o.tls_key = "/nonexistent/k.pem";
                     }),
                     kClock);
  EXPECT_FALSE(missing.start());
}

TEST(ServerStart, PortInUseIsAnError) {
  FakeBackend backend;
  HttpServer first(backend, options([](auto&) {}), kClock);
  auto port = first.start();
  ASSERT_TRUE(port);
  HttpServer second(backend, options([&](auto& o) { o.port = *port; }), kClock);
  auto r = second.start();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::kUnavailable);
}

}  // namespace
}  // namespace cardiac::server
