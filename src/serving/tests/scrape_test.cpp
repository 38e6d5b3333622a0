// SPDX-License-Identifier: Apache-2.0
// The scraper against a loopback HTTP server serving vLLM-shaped metrics.
#include "serving/scrape.h"

#include <httplib.h>

#include <thread>

#include <gtest/gtest.h>

#include "serving/tests/vllm_metrics.h"

namespace cardiac::serving {
namespace {

class Engine : public ::testing::Test {
 protected:
  void SetUp() override {
    server_.Get("/metrics", [](const httplib::Request&, httplib::Response& res) {
      res.set_content(testing::vllm_metrics(0.96, 5, 31, 2), "text/plain; version=0.0.4");
    });
    server_.Get("/broken", [](const httplib::Request&, httplib::Response& res) {
      res.set_content("vllm:num_requests_waiting{model_name=\"m\" 3\n", "text/plain");
    });
    server_.Get("/other", [](const httplib::Request&, httplib::Response& res) {
      res.set_content("go_goroutines 12\n", "text/plain");
    });
    server_.Get("/missing",
                [](const httplib::Request&, httplib::Response& res) { res.status = 404; });
    port_ = server_.bind_to_any_port("127.0.0.1");
    ASSERT_GT(port_, 0);
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::yield();
  }
  void TearDown() override {
    server_.stop();
    if (thread_.joinable()) thread_.join();
  }
  std::string url(const std::string& path) const {
    return "http://127.0.0.1:" + std::to_string(port_) + path;
  }
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
};

TEST_F(Engine, ReadsTheFigures) {
  auto s = scrape_engine(url("/metrics"), {}, 42);
  ASSERT_TRUE(s.ok()) << s.error;
  EXPECT_EQ(s.engine, "vLLM");
  EXPECT_EQ(s.at, 42);
  EXPECT_DOUBLE_EQ(*s.kv_cache_usage, 0.96);
  EXPECT_DOUBLE_EQ(*s.requests_waiting, 5);
}

TEST_F(Engine, FailuresAreReportedWithTheReason) {
  auto broken = scrape_engine(url("/broken"), {}, 0);
  EXPECT_NE(broken.error.find(":1"), std::string::npos) << broken.error;
  EXPECT_NE(scrape_engine(url("/other"), {}, 0).error.find("no vLLM"), std::string::npos);
  EXPECT_NE(scrape_engine(url("/missing"), {}, 0).error.find("HTTP 404"), std::string::npos);
  EXPECT_NE(scrape_engine("ftp://x/metrics", {}, 0).error.find("http://"), std::string::npos);
  EXPECT_TRUE(check_engine_url("http://127.0.0.1:8000/metrics").empty());
  EXPECT_FALSE(check_engine_url("127.0.0.1:8000").empty());
}

TEST_F(Engine, NothingListeningIsAnError) {
  const std::string dead = url("/metrics");
  server_.stop();
  thread_.join();
  auto s = scrape_engine(dead, {.timeout = kNsPerSec}, 0);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.error.find("could not connect"), std::string::npos) << s.error;
}

}  // namespace
}  // namespace cardiac::serving
