// SPDX-License-Identifier: Apache-2.0
// The client's errors against a loopback server that answers as a broken Prometheus would:
// refused, an HTTP error with Prometheus' error body, a body that is not the API's, a stall.
// The answers of a real Prometheus are checked in tests/integration/fleet_test.cpp.
#include <gtest/gtest.h>
#include <httplib.h>

#include <future>
#include <thread>

#include "fleet/prometheus.h"

namespace cardiac::fleet {
namespace {

PrometheusOptions opts(std::string url, DurationNs timeout = 10 * kNsPerSec,
                       std::string token = "") {
  return PrometheusOptions{
      .url = std::move(url), .timeout = timeout, .bearer_token = std::move(token)};
}

class Server {
 public:
  explicit Server(std::function<void(const httplib::Request&, httplib::Response&)> h) {
    svr_.Get(".*", std::move(h));
    port_ = svr_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { svr_.listen_after_bind(); });
    // A stop() before the accept loop runs would be lost and the join below hang.
    while (!svr_.is_running()) std::this_thread::yield();
  }
  ~Server() {
    svr_.stop();
    thread_.join();
  }
  [[nodiscard]] std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  httplib::Server svr_;
  int port_ = 0;
  std::thread thread_;
};

TEST(Prometheus, RefusesABadUrl) {
  auto p = Prometheus::connect(opts("127.0.0.1:9090"));
  ASSERT_FALSE(p.has_value());
  EXPECT_NE(p.error().what().find("Prometheus URL"), std::string::npos) << p.error().what();
}

TEST(Prometheus, AnswersAndPathPrefix) {
  std::string seen;
  Server s([&](const httplib::Request& req, httplib::Response& res) {
    seen = req.path + " q=" + req.get_param_value("query") +
           " auth=" + req.get_header_value("Authorization");
    res.set_content(R"({"status":"success","data":{"resultType":"vector","result":[]}})",
                    "application/json");
  });
  auto p = Prometheus::connect(opts(s.url() + "/prom/", 10 * kNsPerSec, "t0k"));
  ASSERT_TRUE(p.has_value()) << p.error().what();
  auto r = p->query(R"(up{job="a b"})");
  ASSERT_TRUE(r.has_value()) << r.error().what();
  EXPECT_TRUE(r->is_array());
  EXPECT_EQ(seen, R"(/prom/api/v1/query q=up{job="a b"} auth=Bearer t0k)");
}

TEST(Prometheus, ErrorsSayWhatFailed) {
  Server s([](const httplib::Request& req, httplib::Response& res) {
    if (req.path == "/api/v1/query") {
      res.status = 400;
      res.set_content(R"({"status":"error","errorType":"bad_data","error":"parse error at 3"})",
                      "application/json");
    } else if (req.path == "/api/v1/alerts") {
      res.set_content("<html>proxy login</html>", "text/html");
    } else {
      res.set_content(R"({"status":"success","data":{}})", "application/json");
    }
  });
  auto p = Prometheus::connect(opts(s.url()));
  ASSERT_TRUE(p.has_value());
  auto q = p->query("up{");
  ASSERT_FALSE(q.has_value());
  EXPECT_NE(q.error().what().find("HTTP 400: parse error at 3"), std::string::npos)
      << q.error().what();
  EXPECT_NE(q.error().what().find("query up{"), std::string::npos) << q.error().what();
  auto a = p->alerts();
  ASSERT_FALSE(a.has_value());
  EXPECT_NE(a.error().what().find("not a Prometheus API answer"), std::string::npos)
      << a.error().what();
  auto t = p->targets();
  ASSERT_FALSE(t.has_value());
  EXPECT_NE(t.error().what().find("no activeTargets"), std::string::npos) << t.error().what();
}

TEST(Prometheus, RefusedAndSilentServers) {
  int port = 0;
  {
    Server gone([](const httplib::Request&, httplib::Response&) {});
    port = std::stoi(gone.url().substr(gone.url().rfind(':') + 1));
  }
  auto p = Prometheus::connect(opts("http://127.0.0.1:" + std::to_string(port)));
  ASSERT_TRUE(p.has_value());
  auto r = p->targets();
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().what().find("could not connect"), std::string::npos) << r.error().what();

  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  Server slow([released](const httplib::Request&, httplib::Response& res) {
    released.wait();
    res.set_content("{}", "application/json");
  });
  auto q = Prometheus::connect(opts(slow.url(), 200 * kNsPerMs));
  ASSERT_TRUE(q.has_value());
  auto stalled = q->targets();
  release.set_value();
  ASSERT_FALSE(stalled.has_value());
  EXPECT_NE(stalled.error().what().find("no answer within"), std::string::npos)
      << stalled.error().what();
}

}  // namespace
}  // namespace cardiac::fleet
