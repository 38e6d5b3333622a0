// SPDX-License-Identifier: Apache-2.0
// Tests for the notifiers against a loopback HTTP server and real child processes.
#include "notify/notifier.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <mutex>
#include <sstream>

#include "notify/tests/support.h"

namespace cardiac::notify {
namespace {

using testing::sample;
using testing::TestServer;

struct Captured {
  std::mutex mu;
  std::vector<std::string> paths;
  std::vector<std::string> bodies;
  std::vector<std::string> auth;
  std::vector<std::string> content_types;
};

TEST(AlertmanagerNotifier, PostsV2AlertsBody) {
  Captured cap;
  TestServer server([&](httplib::Server& s) {
    s.Post(".*", [&](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard lock(cap.mu);
      cap.paths.push_back(req.path);
      cap.bodies.push_back(req.body);
      cap.content_types.push_back(req.get_header_value("Content-Type"));
      res.status = 200;
    });
  });
  auto am = AlertmanagerNotifier::create(server.url());
  ASSERT_TRUE(am) << am.error().what();
  EXPECT_EQ((*am)->name(), "alertmanager " + server.url());
  auto st = (*am)->deliver({sample("GpuHot"), sample("XidError", "resolved")});
  ASSERT_TRUE(st) << st.error().what();

  std::lock_guard lock(cap.mu);
  ASSERT_EQ(cap.paths.size(), 1u);
  EXPECT_EQ(cap.paths[0], "/api/v2/alerts");
  EXPECT_EQ(cap.content_types[0], "application/json");
  auto body = nlohmann::json::parse(cap.bodies[0]);
  ASSERT_TRUE(body.is_array());
  ASSERT_EQ(body.size(), 2u);
  EXPECT_EQ(body[0]["labels"]["alertname"], "GpuHot");
  EXPECT_EQ(body[0]["startsAt"], "2023-11-14T22:13:20.000Z");
  EXPECT_FALSE(body[0].contains("endsAt"));
  EXPECT_EQ(body[1]["labels"]["alertname"], "XidError");
  EXPECT_EQ(body[1]["endsAt"], "2023-11-14T22:14:20.000Z");
}

TEST(AlertmanagerNotifier, KeepsPathPrefix) {
  Captured cap;
  TestServer server([&](httplib::Server& s) {
    s.Post(".*", [&](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard lock(cap.mu);
      cap.paths.push_back(req.path);
      res.status = 200;
    });
  });
  auto am = AlertmanagerNotifier::create(server.url("/am/"));
  ASSERT_TRUE(am);
  ASSERT_TRUE((*am)->deliver({sample("A")}));
  std::lock_guard lock(cap.mu);
  ASSERT_EQ(cap.paths.size(), 1u);
  EXPECT_EQ(cap.paths[0], "/am/api/v2/alerts");
}

TEST(AlertmanagerNotifier, Non200IsAnErrorWithStatusAndBody) {
  TestServer server([](httplib::Server& s) {
    s.Post(".*", [](const httplib::Request&, httplib::Response& res) {
      res.status = 400;
      res.set_content("bad alert: startsAt missing", "text/plain");
    });
  });
  auto am = AlertmanagerNotifier::create(server.url());
  ASSERT_TRUE(am);
  auto st = (*am)->deliver({sample("A")});
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().what().find("HTTP 400"), std::string::npos) << st.error().what();
  EXPECT_NE(st.error().what().find("startsAt missing"), std::string::npos) << st.error().what();
}

TEST(AlertmanagerNotifier, ConnectionRefusedIsAnError) {
  int port = 0;
  {
    TestServer closed([](httplib::Server&) {});
    port = closed.port();
  }
  auto am = AlertmanagerNotifier::create("http://127.0.0.1:" + std::to_string(port), kNsPerSec);
  ASSERT_TRUE(am);
  auto st = (*am)->deliver({sample("A")});
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().code, ErrorCode::kUnavailable);
}

TEST(WebhookNotifier, ErrorsSayWhatWentWrongInFull) {
  int port = 0;
  {
    TestServer closed([](httplib::Server&) {});
    port = closed.port();
  }
  auto hook = WebhookNotifier::create("http://127.0.0.1:" + std::to_string(port) + "/hook", {});
  ASSERT_TRUE(hook);
  auto st = (*hook)->deliver({sample("A")});
  ASSERT_FALSE(st);
  const std::string what = st.error().what();
  // Not httplib's one word ("Connection"): what failed, where, and the possible causes.
  EXPECT_NE(what.find("could not connect: refused"), std::string::npos) << what;
  EXPECT_NE(what.find("127.0.0.1:" + std::to_string(port)), std::string::npos) << what;
  EXPECT_EQ(what.find("/hook"), std::string::npos) << what;  // paths may hold tokens
}

TEST(WebhookNotifier, PostsOurFormatWithHeaders) {
  Captured cap;
  TestServer server([&](httplib::Server& s) {
    s.Post("/hook", [&](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard lock(cap.mu);
      cap.bodies.push_back(req.body);
      cap.auth.push_back(req.get_header_value("Authorization"));
      res.status = 204;  // any 2xx counts
    });
  });
  auto hook = WebhookNotifier::create(server.url("/hook"), {{"Authorization", "Bearer s3cret"}});
  ASSERT_TRUE(hook) << hook.error().what();
  EXPECT_EQ((*hook)->name().find("/hook"), std::string::npos);  // paths may hold tokens
  auto st = (*hook)->deliver({sample("GpuHot")});
  ASSERT_TRUE(st) << st.error().what();
  std::lock_guard lock(cap.mu);
  ASSERT_EQ(cap.bodies.size(), 1u);
  EXPECT_EQ(cap.auth[0], "Bearer s3cret");
  auto body = nlohmann::json::parse(cap.bodies[0]);
  EXPECT_EQ(body["version"], "1");
  EXPECT_EQ(body["alerts"][0]["labels"]["alertname"], "GpuHot");
  EXPECT_EQ(body["alerts"][0]["status"], "firing");
}

TEST(ExecNotifier, WritesBatchToStdinWithoutShell) {
  std::string path = ::testing::TempDir() + "notify_exec_XXXXXX";
  int fd = ::mkstemp(path.data());
  ASSERT_GE(fd, 0);
  ::close(fd);
  auto exec = ExecNotifier::create({"/usr/bin/tee", path});
  ASSERT_TRUE(exec) << exec.error().what();
  auto st = (*exec)->deliver({sample("GpuHot"), sample("XidError", "resolved")});
  ASSERT_TRUE(st) << st.error().what();
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  ::unlink(path.c_str());
  auto body = nlohmann::json::parse(text.str());
  EXPECT_EQ(body["version"], "1");
  ASSERT_EQ(body["alerts"].size(), 2u);
  EXPECT_EQ(body["alerts"][1]["labels"]["alertname"], "XidError");
  EXPECT_EQ(body["alerts"][1]["status"], "resolved");
}

TEST(ExecNotifier, NonZeroExitIsAnError) {
  auto exec = ExecNotifier::create({"/bin/false"});
  ASSERT_TRUE(exec);
  auto st = (*exec)->deliver({sample("A")});
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().what().find("exited with status 1"), std::string::npos) << st.error().what();
}

TEST(ExecNotifier, HookThatIgnoresStdinDoesNotRaiseSigpipe) {
  // More than a pipe buffer, so the write meets EPIPE once /bin/true has exited.
  std::vector<Notification> batch(2000, sample("GpuHot"));
  auto exec = ExecNotifier::create({"/bin/true"});
  ASSERT_TRUE(exec);
  auto st = (*exec)->deliver(batch);
  EXPECT_TRUE(st) << st.error().what();
}

TEST(ExecNotifier, KilledAfterTimeout) {
  auto exec = ExecNotifier::create({"/bin/sleep", "30"}, 100 * kNsPerMs);
  ASSERT_TRUE(exec);
  auto started = std::chrono::steady_clock::now();
  auto st = (*exec)->deliver({sample("A")});
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().code, ErrorCode::kTimeout);
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(10));
}

TEST(ExecNotifier, RejectsRelativeOrMissingProgram) {
  EXPECT_FALSE(ExecNotifier::create({}));
  EXPECT_FALSE(ExecNotifier::create({"tee", "/tmp/x"}));
  EXPECT_FALSE(ExecNotifier::create({"/nonexistent/hook"}));
}

TEST(LogNotifier, AlwaysSucceeds) {
  LogNotifier log;
  EXPECT_TRUE(log.deliver({sample("GpuHot"), sample("GpuHot", "resolved")}));
}

}  // namespace
}  // namespace cardiac::notify
