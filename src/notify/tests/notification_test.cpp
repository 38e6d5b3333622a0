// SPDX-License-Identifier: Apache-2.0
// Tests for the notification JSON formats and URL parsing.
#include "notify/notification.h"

#include <gtest/gtest.h>

#include "notify/notifier.h"
#include "notify/tests/support.h"

namespace cardiac::notify {
namespace {

using testing::sample;

TEST(NotificationJson, OurFormatCarriesLabelsTimesAndValue) {
  auto j = to_json(sample("GpuHot"));
  EXPECT_EQ(j["status"], "firing");
  EXPECT_EQ(j["labels"]["alertname"], "GpuHot");
  EXPECT_EQ(j["labels"]["severity"], "critical");
  EXPECT_EQ(j["labels"]["gpu"], "0");
  EXPECT_EQ(j["annotations"]["summary"], "GpuHot on GPU 0");
  EXPECT_EQ(j["startsAt"], "2023-11-14T22:13:20.000Z");
  EXPECT_FALSE(j.contains("endsAt"));
  EXPECT_EQ(j["fingerprint"], "fp-GpuHot");
  EXPECT_DOUBLE_EQ(j["value"].get<double>(), 91.5);

  auto r = to_json(sample("GpuHot", "resolved"));
  EXPECT_EQ(r["endsAt"], "2023-11-14T22:14:20.000Z");
}

TEST(NotificationJson, WebhookBodyHasVersionAndAlerts) {
  auto body = to_webhook_body({sample("A"), sample("B", "resolved")});
  EXPECT_EQ(body["version"], "1");
  ASSERT_EQ(body["alerts"].size(), 2u);
  EXPECT_EQ(body["alerts"][1]["status"], "resolved");
}

TEST(NotificationJson, AlertmanagerEndsAtOnlyWhenResolved) {
  auto n = sample("GpuHot");
  n.labels["alertname"] = "overridden";  // the field wins over a same-named label
  auto body = to_alertmanager_v2({n, sample("XidError", "resolved")});
  ASSERT_TRUE(body.is_array());
  ASSERT_EQ(body.size(), 2u);
  EXPECT_EQ(body[0]["labels"]["alertname"], "GpuHot");
  EXPECT_EQ(body[0]["labels"]["severity"], "critical");
  EXPECT_EQ(body[0]["startsAt"], "2023-11-14T22:13:20.000Z");
  EXPECT_FALSE(body[0].contains("endsAt"));
  EXPECT_FALSE(body[0].contains("status"));
  EXPECT_EQ(body[0]["annotations"]["value"], "91.5");
  EXPECT_EQ(body[0]["generatorURL"], "http://node1:9400/alerts");
  EXPECT_EQ(body[1]["endsAt"], "2023-11-14T22:14:20.000Z");

  auto no_end = sample("X", "resolved");
  no_end.ends_at.reset();
  EXPECT_EQ(to_alertmanager_v2({no_end})[0]["endsAt"], "2023-11-14T22:13:20.000Z");
}

TEST(NotificationJson, InvalidUtf8DoesNotThrow) {
  auto n = sample("A");
  n.labels["model"] = std::string("H100\xff\xfe");
  std::string text;
  EXPECT_NO_THROW(text = dump_json(to_json(n)));
  EXPECT_TRUE(nlohmann::json::accept(text));
}

TEST(HttpUrl, ParsesHostPortPath) {
  auto u = parse_http_url("http://127.0.0.1:9093/prefix/x");
  ASSERT_TRUE(u) << u.error().what();
  EXPECT_EQ(u->scheme, "http");
  EXPECT_EQ(u->host, "127.0.0.1");
  EXPECT_EQ(u->port, 9093);
  EXPECT_EQ(u->path, "/prefix/x");
  EXPECT_EQ(u->origin(), "http://127.0.0.1:9093");

  auto d = parse_http_url("HTTP://example.com");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->port, 80);
  EXPECT_EQ(d->path, "/");

  auto v6 = parse_http_url("http://[::1]:8080/hook");
  ASSERT_TRUE(v6);
  EXPECT_EQ(v6->host, "[::1]");
  EXPECT_EQ(v6->port, 8080);
}

TEST(HttpUrl, RejectsBadInput) {
  for (const char* bad :
       {"", "127.0.0.1:9093", "ftp://x/", "http://", "http://:80/", "http://h:0/",
        "http://h:70000/", "http://h:abc/", "http://h:/", "http://user:pw@h/", "http://[::1/"}) {
    auto u = parse_http_url(bad);
    ASSERT_FALSE(u) << bad;
    EXPECT_EQ(u.error().code, ErrorCode::kInvalidArgument) << bad;
  }
}

TEST(HttpUrl, HttpsDependsOnOpenSsl) {
  auto u = parse_http_url("https://am.example:9443");
#ifdef CPPHTTPLIB_OPENSSL_SUPPORT
  ASSERT_TRUE(u);
  EXPECT_EQ(u->scheme, "https");
#else
  ASSERT_FALSE(u);
  EXPECT_EQ(u.error().code, ErrorCode::kUnsupported);
#endif
}

}  // namespace
}  // namespace cardiac::notify
