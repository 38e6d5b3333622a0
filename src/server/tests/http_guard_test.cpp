// SPDX-License-Identifier: Apache-2.0
// What the HTTP server refuses: cross-site and non-JSON mutations, wrong methods, and clients
// that hold connections open to starve it. On 127.0.0.1 (and 127.0.0.2 as a second peer).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

#include "server/http_server.h"
#include "server/tests/fake_backend.h"

namespace cardiac::server {
namespace {

using nlohmann::json;
using test_support::FakeBackend;

constexpr const char* kGuardToken = "s3cret";

// A socket connected from `source` (any 127.0.0.0/8 address works on Linux without setup).
int connect_from(const char* source, int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in local{};
  local.sin_family = AF_INET;
  inet_pton(AF_INET, source, &local.sin_addr);
  sockaddr_in remote{};
  remote.sin_family = AF_INET;
  remote.sin_port = htons(static_cast<std::uint16_t>(port));
  inet_pton(AF_INET, "127.0.0.1", &remote.sin_addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&local), sizeof(local)) != 0 ||
      ::connect(fd, reinterpret_cast<sockaddr*>(&remote), sizeof(remote)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

void send_text(int fd, const std::string& s) {
  (void)!::send(fd, s.data(), s.size(), MSG_NOSIGNAL);
}

// Everything the server sends until it closes the connection or `deadline` passes.
std::string read_until_closed(int fd, std::chrono::milliseconds deadline, bool* closed) {
  auto until = std::chrono::steady_clock::now() + deadline;
  std::string out;
  *closed = false;
  while (std::chrono::steady_clock::now() < until) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    char buf[4096];
    ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) {
      *closed = true;
      break;
    }
    out.append(buf, static_cast<std::size_t>(n));
  }
  return out;
}

// One request on a fresh connection from `source`; the raw answer.
std::string raw_get(const char* source, int port, const std::string& path) {
  int fd = connect_from(source, port);
  if (fd < 0) return "connect failed";
  send_text(fd, "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
  bool closed = false;
  std::string out = read_until_closed(fd, std::chrono::seconds(10), &closed);
  ::close(fd);
  return out;
}

class GuardTest : public ::testing::Test {
 protected:
  void start(ServerOptions opt = {}) {
    opt.address = "127.0.0.1";
    opt.port = 0;
    opt.token = kGuardToken;
    server = std::make_unique<HttpServer>(backend, opt, clock);
    auto p = server->start();
    ASSERT_TRUE(p) << p.error().what();
    port = *p;
    client = std::make_unique<httplib::Client>("127.0.0.1", port);
    client->set_connection_timeout(5, 0);
    client->set_read_timeout(10, 0);
  }
  void TearDown() override {
    if (server) server->stop();
    for (int fd : held) ::close(fd);
  }
  httplib::Headers bearer(const std::string& scheme = "Bearer") {
    return {{"Authorization", scheme + " " + kGuardToken}};
  }

  FakeBackend backend;
  ManualClock clock{1'700'000'000LL * kNsPerSec};
  std::unique_ptr<HttpServer> server;
  std::unique_ptr<httplib::Client> client;
  int port = 0;
  std::vector<int> held;
};

TEST_F(GuardTest, BearerSchemeIsCaseInsensitive) {
  start();
  for (const char* scheme : {"Bearer", "bearer", "BEARER", "bEaReR"}) {
    auto r = client->Post("/api/v1/alerts/3/ack", bearer(scheme), "", "application/json");
    ASSERT_TRUE(r) << scheme;
    EXPECT_EQ(r->status, 200) << scheme << " " << r->body;
  }
  auto basic = client->Post("/api/v1/alerts/3/ack", bearer("Basic"), "", "application/json");
  ASSERT_TRUE(basic);
  EXPECT_EQ(basic->status, 401);
}

TEST_F(GuardTest, BodylessAckWorks) {
  start();
  // curl -X POST -H 'Authorization: Bearer …' …/ack: no body, no Content-Type.
  auto r = client->Post("/api/v1/alerts/9/ack", bearer());
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(backend.last_ack_id, 9);
  EXPECT_EQ(backend.last_who, kTokenPrincipal);
}

// One whole response (head and Content-Length body) read from a connection that stays open,
// as curl's does; empty when none arrives within `deadline`.
std::string read_response(int fd, std::chrono::milliseconds deadline) {
  auto until = std::chrono::steady_clock::now() + deadline;
  std::string out;
  while (std::chrono::steady_clock::now() < until) {
    auto end = out.find("\r\n\r\n");
    if (end != std::string::npos) {
      auto cl = out.find("Content-Length: ");
      std::size_t body = cl < end ? std::stoul(out.substr(cl + 16)) : 0;
      if (out.size() >= end + 4 + body) return out;
    }
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    char buf[4096];
    ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  return {};
}

// Exactly what `curl -s -X POST -H "Authorization: Bearer $TOKEN" …/ack` sends, the command in
// docs/api.md: no Content-Length, no Transfer-Encoding, so no body (RFC 9112), and the
// connection stays open. The token decides, not the missing length.
TEST_F(GuardTest, CurlBodylessPostWithoutContentLengthIsAnsweredByTheTokenCheck) {
  start();
  auto curl_ack = [&](int id, const std::string& auth) {
    int fd = connect_from("127.0.0.1", port);
    if (fd < 0) return std::string("connect failed");
    held.push_back(fd);
    send_text(fd, "POST /api/v1/alerts/" + std::to_string(id) +
                      "/ack HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) +
                      "\r\nUser-Agent: curl/7.88.1\r\nAccept: */*\r\n" + auth + "\r\n");
    std::string r = read_response(fd, std::chrono::seconds(20));
    return r.substr(0, r.find("\r\n"));
  };
  EXPECT_EQ(curl_ack(2, "Authorization: Bearer " + std::string(kGuardToken) + "\r\n"),
            "HTTP/1.1 200 OK");
  EXPECT_EQ(backend.last_ack_id, 2);
  EXPECT_EQ(backend.last_who, kTokenPrincipal);
  EXPECT_EQ(curl_ack(5, ""), "HTTP/1.1 401 Unauthorized");
  EXPECT_EQ(curl_ack(6, "Authorization: Bearer wrong\r\n"), "HTTP/1.1 403 Forbidden");
  EXPECT_EQ(backend.last_ack_id, 2);
}

TEST_F(GuardTest, ForeignOriginIsRefused) {
  start();
  auto h = bearer();
  h.emplace("Origin", "http://evil.example");
  auto r = client->Post("/api/v1/alerts/3/ack", h, "", "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 403);
  EXPECT_EQ(json::parse(r->body).value("field", ""), "Origin");
  auto null_origin = bearer();
  null_origin.emplace("Origin", "null");
  EXPECT_EQ(client
                ->Post("/api/v1/silences", null_origin, R"({"matcher":"a","duration":"1h"})",
                       "application/json")
                ->status,
            403);
  EXPECT_EQ(backend.last_ack_id, -1);
  EXPECT_TRUE(backend.last_matcher.empty());

  // A page served from this very address is not cross-site.
  auto same = bearer();
  same.emplace("Origin", "http://127.0.0.1:" + std::to_string(port));
  auto ok = client->Post("/api/v1/alerts/3/ack", same, "", "application/json");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200) << ok->body;
}

TEST_F(GuardTest, NonJsonBodyIs415) {
  start();
  const std::string body = R"({"matcher":"a","duration":"1h"})";
  // What an HTML form or a "simple" cross-site fetch can send without a preflight.
  for (const char* type : {"text/plain", "application/x-www-form-urlencoded", "text/plain; a=b"}) {
    auto r = client->Post("/api/v1/silences", bearer(), body, type);
    ASSERT_TRUE(r) << type;
    EXPECT_EQ(r->status, 415) << type << " " << r->body;
  }
  EXPECT_EQ(client->Post("/api/v1/alerts/1/ack", bearer(), "{}", "text/plain")->status, 415);
  EXPECT_TRUE(backend.last_matcher.empty());
  EXPECT_EQ(backend.last_ack_id, -1);
  auto ok = client->Post("/api/v1/silences", bearer(), body, "Application/JSON; charset=utf-8");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200) << ok->body;
}

TEST_F(GuardTest, WrongMethodOnAKnownPathIs405WithAllow) {
  start();
  auto del = client->Delete("/api/v1/silences", bearer());
  ASSERT_TRUE(del);
  EXPECT_EQ(del->status, 405);
  EXPECT_EQ(del->get_header_value("Allow"), "POST");
  auto get = client->Get("/api/v1/alerts/4/ack");
  ASSERT_TRUE(get);
  EXPECT_EQ(get->status, 405);
  EXPECT_EQ(get->get_header_value("Allow"), "POST");
  auto put = client->Put("/api/v1/status", bearer(), "{}", "application/json");
  ASSERT_TRUE(put);
  EXPECT_EQ(put->status, 405);
  EXPECT_EQ(put->get_header_value("Allow"), "GET, HEAD");
  auto post = client->Post("/metrics", bearer(), "", "application/json");
  ASSERT_TRUE(post);
  EXPECT_EQ(post->status, 405);
  EXPECT_TRUE(json::parse(post->body).contains("error"));
  // Unknown paths stay 404.
  EXPECT_EQ(client->Delete("/api/v1/nothing", bearer())->status, 404);
}

// The slowloris case: a request that keeps trickling in is cut at the request deadline, where
// a per-read timeout would wait for ever.
TEST_F(GuardTest, ATricklingRequestIsCutAtTheRequestDeadline) {
  ServerOptions opt;
  opt.limits.request_timeout = 300 * kNsPerMs;
  start(opt);
  int fd = connect_from("127.0.0.1", port);
  ASSERT_GE(fd, 0);
  held.push_back(fd);
  const std::string request =
      "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pad: " + std::string(4000, 'a') + "\r\n\r\n";
  bool closed = false;
  std::string answer;
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  for (std::size_t i = 0; i < request.size() - 4 && std::chrono::steady_clock::now() < until; ++i) {
    send_text(fd, request.substr(i, 1));
    answer += read_until_closed(fd, std::chrono::milliseconds(20), &closed);
    if (closed) break;
  }
  EXPECT_TRUE(closed) << "the server kept a trickling request open";
  EXPECT_NE(answer.find("408"), std::string::npos) << answer;
}

// 256 connections that never finish (or never start) a request cost the server nothing that
// /healthz and /metrics need.
TEST_F(GuardTest, HealthzAndMetricsAnswerWhile256ConnectionsHangOpen) {
  start();
  for (int i = 0; i < 256; ++i) {
    int fd = connect_from("127.0.0.1", port);
    ASSERT_GE(fd, 0) << "connection " << i;
    held.push_back(fd);
    // Half of them send half a request, the other half nothing at all.
    if (i % 2 == 0) send_text(fd, "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n");
  }
  auto health = client->Get("/healthz");
  ASSERT_TRUE(health) << "no answer from /healthz: " << httplib::to_string(health.error());
  EXPECT_EQ(health->status, 200);
  auto metrics = client->Get("/metrics");
  ASSERT_TRUE(metrics) << "no answer from /metrics: " << httplib::to_string(metrics.error());
  EXPECT_EQ(metrics->status, 200);
  EXPECT_EQ(metrics->body, "cardiac_up 1\n");
}

TEST_F(GuardTest, OneAddressMayHoldOnlyItsShareOfConnections) {
  ServerOptions opt;
  opt.limits.per_peer = 4;
  start(opt);
  for (int i = 0; i < 4; ++i) {
    int fd = connect_from("127.0.0.2", port);
    ASSERT_GE(fd, 0);
    held.push_back(fd);
  }
  // The fifth from the same address is answered 503 and closed ...
  std::string refused = raw_get("127.0.0.2", port, "/healthz");
  EXPECT_NE(refused.find("503"), std::string::npos) << refused;
  EXPECT_NE(refused.find("too many connections"), std::string::npos) << refused;
  // ... while another address is served.
  std::string other = raw_get("127.0.0.1", port, "/healthz");
  EXPECT_NE(other.find("200 OK"), std::string::npos) << other;
  // Closing one frees its place.
  ::close(held.back());
  held.pop_back();
  std::string again;
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < until) {
    again = raw_get("127.0.0.2", port, "/healthz");
    if (again.find("200 OK") != std::string::npos) break;
  }
  EXPECT_NE(again.find("200 OK"), std::string::npos) << again;
}

TEST_F(GuardTest, KeptAliveAndPipelinedRequestsAreServed) {
  start();
  client->set_keep_alive(true);
  for (int i = 0; i < 5; ++i) {
    auto r = client->Get("/healthz");
    ASSERT_TRUE(r) << i;
    EXPECT_EQ(r->status, 200);
  }
  int fd = connect_from("127.0.0.1", port);
  ASSERT_GE(fd, 0);
  held.push_back(fd);
  send_text(fd,
            "GET /healthz HTTP/1.1\r\nHost: a\r\n\r\nGET /metrics HTTP/1.1\r\nHost: a\r\n"
            "Connection: close\r\n\r\n");
  bool closed = false;
  std::string both = read_until_closed(fd, std::chrono::seconds(10), &closed);
  EXPECT_TRUE(closed);
  EXPECT_NE(both.find("ok\n"), std::string::npos) << both;
  EXPECT_NE(both.find("cardiac_up 1"), std::string::npos) << both;
}

// curl sends "Expect: 100-continue" before a larger body and waits for the go-ahead: the head
// alone must reach httplib, which answers 100.
TEST_F(GuardTest, ABodyAwaitingContinueIsAskedFor) {
  start();
  int fd = connect_from("127.0.0.1", port);
  ASSERT_GE(fd, 0);
  held.push_back(fd);
  const std::string body = R"({"matcher":"rule=a","duration":"1h"})";
  send_text(fd, "POST /api/v1/silences HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " +
                    std::string(kGuardToken) +
                    "\r\nContent-Type: application/json\r\nExpect: 100-continue\r\n"
                    "Connection: close\r\nContent-Length: " +
                    std::to_string(body.size()) + "\r\n\r\n");
  std::string got;
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  bool closed = false;
  while (got.find("100 Continue") == std::string::npos && !closed &&
         std::chrono::steady_clock::now() < until) {
    got += read_until_closed(fd, std::chrono::milliseconds(50), &closed);
  }
  ASSERT_NE(got.find("100 Continue"), std::string::npos) << got;
  send_text(fd, body);
  got += read_until_closed(fd, std::chrono::seconds(10), &closed);
  EXPECT_NE(got.find("200 OK"), std::string::npos) << got;
  EXPECT_EQ(backend.last_matcher, "rule=a");
}

}  // namespace
}  // namespace cardiac::server
