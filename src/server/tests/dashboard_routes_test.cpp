// SPDX-License-Identifier: Apache-2.0
// The dashboard's routes on 127.0.0.1: the embedded page and uPlot (content types, CSP, ETag,
// gzip, 404), /api/v1/dashboard/{overview,chart} and their parameters, auth unchanged.
#include <gtest/gtest.h>
#include <httplib.h>

#include <regex>

#include "server/http_server.h"
#include "server/static_assets.h"
#include "server/tests/decode.h"
#include "server/tests/fake_backend.h"

namespace cardiac::server {
namespace {

using nlohmann::json;
using test_support::FakeBackend;

constexpr TimeNs kRoutesNow = 1'700'000'000LL * kNsPerSec;

class DashboardRoutes : public ::testing::Test {
 protected:
  void start(const std::string& token = "s3cret") {
    ServerOptions o;
    o.address = "127.0.0.1";
    o.port = 0;
    o.token = token;
    server = std::make_unique<HttpServer>(backend, o, clock);
    auto port = server->start();
    ASSERT_TRUE(port) << port.error().what();
    client = std::make_unique<httplib::Client>("127.0.0.1", *port);
    client->set_read_timeout(5, 0);
    client->set_decompress(false);
  }
  FakeBackend backend;
  ManualClock clock{kRoutesNow};
  std::unique_ptr<HttpServer> server;
  std::unique_ptr<httplib::Client> client;
};

TEST_F(DashboardRoutes, PageIsHtmlWithAStrictPolicy) {
  start();
  auto r = client->Get("/");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->get_header_value("Content-Type"), "text/html; charset=utf-8");
  EXPECT_EQ(r->get_header_value("Content-Security-Policy"), kDashboardCsp);
  EXPECT_NE(std::string(kDashboardCsp).find("script-src 'self';"), std::string::npos);
  EXPECT_EQ(std::string(kDashboardCsp).find("unsafe-inline"), std::string::npos);
  EXPECT_EQ(r->get_header_value("X-Content-Type-Options"), "nosniff");
  EXPECT_EQ(r->get_header_value("Cache-Control"), "no-cache");
  EXPECT_FALSE(r->get_header_value("ETag").empty());
  EXPECT_NE(r->body.find("<script src=\"/app.js\""), std::string::npos);
  // No inline script: every script element names its source.
  EXPECT_FALSE(std::regex_search(r->body, std::regex("<script(?![^>]*\\ssrc=)")));
  // No inline event handler attribute either (CSP would block it).
  EXPECT_FALSE(std::regex_search(r->body, std::regex("\\son[a-z]+=")));
}

TEST_F(DashboardRoutes, ScriptsAndStylesHaveTheirTypes) {
  start();
  for (const auto& [path, type] : std::vector<std::pair<std::string, std::string>>{
           {"/app.js", "text/javascript; charset=utf-8"},
           {"/charts.js", "text/javascript; charset=utf-8"},
           {"/fleet.js", "text/javascript; charset=utf-8"},
           {"/app.css", "text/css; charset=utf-8"},
           {"/favicon.svg", "image/svg+xml"},
           {"/vendor/uPlot.iife.min.js", "text/javascript; charset=utf-8"},
           {"/vendor/uPlot.min.css", "text/css; charset=utf-8"}}) {
    auto r = client->Get(path);
    ASSERT_TRUE(r) << path;
    EXPECT_EQ(r->status, 200) << path;
    EXPECT_EQ(r->get_header_value("Content-Type"), type) << path;
    EXPECT_FALSE(r->body.empty()) << path;
  }
  // uPlot itself, not a placeholder.
  auto u = client->Get("/vendor/uPlot.iife.min.js");
  EXPECT_NE(u->body.find("uPlot"), std::string::npos);
  EXPECT_GT(u->body.size(), 20000U);
}

TEST_F(DashboardRoutes, UnknownAssetIs404AndPostIs405) {
  start();
  auto r = client->Get("/nope.js");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);
  EXPECT_EQ(r->get_header_value("Content-Type"), "application/json");
  // The dot in "/app.js" is not a wildcard.
  EXPECT_EQ(client->Get("/appxjs")->status, 404);
  EXPECT_EQ(client->Get("/vendor/")->status, 404);
  auto p = client->Post("/", "", "application/json");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->status, 405);
}

TEST_F(DashboardRoutes, GzipWhenAskedAndEtagRevalidates) {
  start();
  auto plain = client->Get("/vendor/uPlot.iife.min.js");
  auto gz = client->Get("/vendor/uPlot.iife.min.js", {{"Accept-Encoding", "gzip"}});
  ASSERT_TRUE(gz);
  EXPECT_EQ(gz->get_header_value("Content-Encoding"), "gzip");
  EXPECT_EQ(gz->get_header_value("Vary"), "Accept-Encoding");
  EXPECT_LT(gz->body.size(), plain->body.size());
  EXPECT_EQ(test_support::gunzip(gz->body), plain->body);

  std::string etag = plain->get_header_value("ETag");
  auto again = client->Get("/vendor/uPlot.iife.min.js", {{"If-None-Match", etag}});
  ASSERT_TRUE(again);
  EXPECT_EQ(again->status, 304);
  EXPECT_TRUE(again->body.empty());
  EXPECT_EQ(again->get_header_value("ETag"), etag);
  // Another file's tag is no match.
  auto other = client->Get("/app.js", {{"If-None-Match", etag}});
  EXPECT_EQ(other->status, 200);
}

TEST(EtagMatches, ListsWeakAndStar) {
  EXPECT_TRUE(etag_matches("\"abc\"", "\"abc\""));
  EXPECT_TRUE(etag_matches("\"x\", W/\"abc\"", "\"abc\""));
  EXPECT_TRUE(etag_matches("*", "\"abc\""));
  EXPECT_FALSE(etag_matches("\"abcd\"", "\"abc\""));
  EXPECT_FALSE(etag_matches("", "\"abc\""));
}

TEST_F(DashboardRoutes, OverviewAndChartComeFromTheBackend) {
  start();
  client->set_decompress(true);
  auto o = client->Get("/api/v1/dashboard/overview");
  ASSERT_TRUE(o);
  EXPECT_EQ(o->status, 200);
  EXPECT_EQ(o->get_header_value("Content-Type"), "application/json");
  EXPECT_EQ(json::parse(o->body)["schema"], "cardiac.dashboard.overview/v1");

  auto c = client->Get("/api/v1/dashboard/chart?gpu=3&range=7d");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->status, 200);
  EXPECT_EQ(backend.last_chart_gpu, std::optional<int>(3));
  EXPECT_EQ(backend.last_chart_range, "7d");

  auto h = client->Get("/api/v1/dashboard/chart?gpu=host");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
  EXPECT_FALSE(backend.last_chart_gpu.has_value());
  EXPECT_EQ(backend.last_chart_range, "1h");  // the default

  EXPECT_EQ(client->Get("/api/v1/dashboard/chart?gpu=99&range=1h")->status, 404);
}

TEST_F(DashboardRoutes, FleetIsTheBackendsViewOrSaysWhyNot) {
  start();
  client->set_decompress(true);
  // No [fleet] prometheus: 501 with the key to set.
  auto none = client->Get("/api/v1/fleet");
  ASSERT_TRUE(none);
  EXPECT_EQ(none->status, 501);
  EXPECT_NE(json::parse(none->body)["error"].get<std::string>().find("[fleet] prometheus"),
            std::string::npos)
      << none->body;
  {
    std::lock_guard lock(backend.mu);
    backend.fleet_answer = json{{"schema", "cardiac.fleet/v1"}, {"verdict", "fail"}};
  }
  auto ok = client->Get("/api/v1/fleet");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
  EXPECT_EQ(json::parse(ok->body)["verdict"], "fail");
  // Prometheus cannot be read: 503 with its error, never an empty fleet.
  {
    std::lock_guard lock(backend.mu);
    backend.fleet_answer = Result<json>(
        tl::unexpected(Error::unavailable("Prometheus at http://127.0.0.1:1: could not connect")));
  }
  auto down = client->Get("/api/v1/fleet");
  ASSERT_TRUE(down);
  EXPECT_EQ(down->status, 503);
  EXPECT_NE(json::parse(down->body)["error"].get<std::string>().find("could not connect"),
            std::string::npos)
      << down->body;
  EXPECT_EQ(client->Post("/api/v1/fleet", "", "application/json")->status, 405);
}

TEST_F(DashboardRoutes, ChartParametersAreChecked) {
  start();
  client->set_decompress(true);
  auto bad_range = client->Get("/api/v1/dashboard/chart?gpu=0&range=2h");
  ASSERT_TRUE(bad_range);
  EXPECT_EQ(bad_range->status, 400);
  EXPECT_EQ(json::parse(bad_range->body)["field"], "range");
  auto no_gpu = client->Get("/api/v1/dashboard/chart?range=1h");
  EXPECT_EQ(no_gpu->status, 400);
  EXPECT_EQ(json::parse(no_gpu->body)["field"], "gpu");
  auto bad_gpu = client->Get("/api/v1/dashboard/chart?gpu=abc");
  EXPECT_EQ(bad_gpu->status, 400);
  EXPECT_EQ(json::parse(bad_gpu->body)["field"], "gpu");
}

TEST_F(DashboardRoutes, AuthRulesUnchanged) {
  start();
  // Reads open on loopback, page and API alike.
  EXPECT_EQ(client->Get("/")->status, 200);
  EXPECT_EQ(client->Get("/api/v1/dashboard/overview")->status, 200);
  // An ack still needs the token, and a page from another site is refused first.
  EXPECT_EQ(client->Post("/api/v1/alerts/1/ack", "", "application/json")->status, 401);
  EXPECT_EQ(
      client
          ->Post("/api/v1/alerts/1/ack", {{"Authorization", "Bearer nope"}}, "", "application/json")
          ->status,
      403);
  auto foreign = client->Post("/api/v1/alerts/1/ack",
                              {{"Authorization", "Bearer s3cret"}, {"Origin", "http://evil.test"}},
                              "", "application/json");
  EXPECT_EQ(foreign->status, 403);
  EXPECT_EQ(backend.last_ack_id, -1);
  auto ok = client->Post("/api/v1/alerts/1/ack", {{"Authorization", "Bearer s3cret"}}, "",
                         "application/json");
  EXPECT_EQ(ok->status, 200);
  EXPECT_EQ(backend.last_ack_id, 1);
}

TEST(DashboardOnNonLoopback, PageOpenApiNeedsToken) {
  FakeBackend backend;
  ManualClock clock{kRoutesNow};
  ServerOptions o;
  o.address = "0.0.0.0";
  o.port = 0;
  o.token = "s3cret";
  o.metrics_need_token = true;
  HttpServer server(backend, o, clock);
  auto port = server.start();
  ASSERT_TRUE(port) << port.error().what();
  httplib::Client client("127.0.0.1", *port);
  // The page carries no data and a browser cannot send a bearer token to load it.
  EXPECT_EQ(client.Get("/")->status, 200);
  EXPECT_EQ(client.Get("/app.js")->status, 200);
  EXPECT_EQ(client.Get("/api/v1/dashboard/overview")->status, 401);
  EXPECT_EQ(client.Get("/api/v1/dashboard/overview", {{"Authorization", "Bearer s3cret"}})->status,
            200);
}

}  // namespace
}  // namespace cardiac::server
