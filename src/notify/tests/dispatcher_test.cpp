// SPDX-License-Identifier: Apache-2.0
// Tests for the dispatcher: isolation between notifiers, retries, overflow, bounded stop.
#include "notify/dispatcher.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>

#include "notify/tests/support.h"

namespace cardiac::notify {
namespace {

using namespace std::chrono_literals;
using testing::eventually;
using testing::sample;
using testing::TestServer;

// A gate that a blocked party waits on until the test opens it.
struct Gate {
  std::mutex mu;
  std::condition_variable cv;
  bool open = false;
  int entered = 0;
  void release() {
    {
      std::lock_guard lock(mu);
      open = true;
    }
    cv.notify_all();
  }
  void pass() {
    std::unique_lock lock(mu);
    ++entered;
    cv.notify_all();
    cv.wait(lock, [&] { return open; });
  }
  int count() {
    std::lock_guard lock(mu);
    return entered;
  }
};

// Records batches; optionally blocks on a gate or fails. State is shared so that it outlives a
// dispatcher that abandoned a worker.
struct FakeState {
  Gate gate;
  bool fail = false;
  std::mutex mu;
  std::vector<std::string> received;
};

class FakeNotifier final : public Notifier {
 public:
  explicit FakeNotifier(std::shared_ptr<FakeState> s) : s_(std::move(s)) {}
  std::string name() const override { return "fake"; }
  Status deliver(const std::vector<Notification>& batch) override {
    s_->gate.pass();
    std::lock_guard lock(s_->mu);
    if (s_->fail) return fail(Error::unavailable("fake receiver down"));
    for (const auto& n : batch) s_->received.push_back(n.alertname);
    return {};
  }

 private:
  std::shared_ptr<FakeState> s_;
};

DispatcherOptions fast_options() {
  DispatcherOptions o;
  o.retry_initial = 1ms;
  o.retry_max = 4ms;
  return o;
}

template <class T>
std::vector<std::unique_ptr<Notifier>> one(T notifier) {
  std::vector<std::unique_ptr<Notifier>> v;
  v.push_back(std::move(notifier));
  return v;
}

TEST(Dispatcher, HungReceiverDoesNotDelayAnother) {
  Gate hung;
  std::atomic<int> healthy_hits{0};
  TestServer hung_server([&](httplib::Server& s) {
    s.Post("/hook", [&](const httplib::Request&, httplib::Response& res) {
      hung.pass();
      res.status = 200;
    });
  });
  TestServer healthy_server([&](httplib::Server& s) {
    s.Post("/hook", [&](const httplib::Request&, httplib::Response& res) {
      ++healthy_hits;
      res.status = 200;
    });
  });
  // Released on every path out of the test, so the server threads can finish.
  struct Releaser {
    Gate& g;
    ~Releaser() { g.release(); }
  } releaser{hung};

  std::vector<std::unique_ptr<Notifier>> notifiers;
  notifiers.push_back(*WebhookNotifier::create(hung_server.url("/hook"), {}, 60 * kNsPerSec));
  notifiers.push_back(*WebhookNotifier::create(healthy_server.url("/hook"), {}, 60 * kNsPerSec));
  Dispatcher d(std::move(notifiers), fast_options());
  d.submit({sample("GpuHot")});

  ASSERT_TRUE(eventually([&] { return hung.count() == 1 && healthy_hits == 1; }));
  auto stats = d.stats();
  EXPECT_EQ(stats[0].delivered, 0u);  // still stuck inside the hung handler
  EXPECT_EQ(stats[0].in_flight, 1u);
  ASSERT_TRUE(eventually([&] { return d.stats()[1].delivered == 1; }));

  hung.release();
  ASSERT_TRUE(eventually([&] { return d.stats()[0].delivered == 1; }));
  EXPECT_TRUE(d.stop(10s));
}

TEST(Dispatcher, RetriesUntilReceiverComesBack) {
  std::atomic<int> requests{0};
  TestServer server([&](httplib::Server& s) {
    s.Post("/api/v2/alerts", [&](const httplib::Request&, httplib::Response& res) {
      res.status = ++requests <= 2 ? 500 : 200;
    });
  });
  Dispatcher d(one(*AlertmanagerNotifier::create(server.url())), fast_options());
  d.submit({sample("GpuHot")});
  ASSERT_TRUE(eventually([&] { return d.stats()[0].delivered == 1; }));
  auto s = d.stats()[0];
  EXPECT_EQ(s.failed_attempts, 2u);
  EXPECT_EQ(s.given_up, 0u);
  EXPECT_NE(s.last_error.find("HTTP 500"), std::string::npos) << s.last_error;
  EXPECT_EQ(requests, 3);
}

TEST(Dispatcher, ExecFailureIsRetriedThenGivenUp) {
  auto o = fast_options();
  o.max_attempts = 3;
  Dispatcher d(one(*ExecNotifier::create({"/bin/false"})), o);
  d.submit({sample("GpuHot")});
  ASSERT_TRUE(eventually([&] { return d.stats()[0].given_up == 1; }));
  auto s = d.stats()[0];
  EXPECT_EQ(s.failed_attempts, 3u);
  EXPECT_EQ(s.delivered, 0u);
  EXPECT_NE(s.last_error.find("exited with status 1"), std::string::npos) << s.last_error;
}

TEST(Dispatcher, FullQueueDropsOldest) {
  auto state = std::make_shared<FakeState>();
  auto o = fast_options();
  o.queue_capacity = 3;
  Dispatcher d(one(std::make_unique<FakeNotifier>(state)), o);
  d.submit({sample("n0")});
  ASSERT_TRUE(eventually([&] { return state->gate.count() == 1; }));  // n0 is in flight
  for (const char* name : {"n1", "n2", "n3", "n4", "n5"}) d.submit({sample(name)});
  auto s = d.stats()[0];
  EXPECT_EQ(s.dropped, 2u);
  EXPECT_EQ(s.queued, 3u);
  EXPECT_EQ(s.in_flight, 1u);

  state->gate.release();
  ASSERT_TRUE(eventually([&] { return d.stats()[0].delivered == 4; }));
  std::lock_guard lock(state->mu);
  EXPECT_EQ(state->received, (std::vector<std::string>{"n0", "n3", "n4", "n5"}));
}

TEST(Dispatcher, StopDeliversWhatIsQueued) {
  auto state = std::make_shared<FakeState>();
  state->gate.release();
  Dispatcher d(one(std::make_unique<FakeNotifier>(state)), fast_options());
  d.submit({sample("a"), sample("b")});
  d.submit({sample("c")});
  EXPECT_TRUE(d.stop(10s));
  EXPECT_EQ(d.stats()[0].delivered, 3u);
  d.submit({sample("late")});  // after stop: counted, not queued
  EXPECT_EQ(d.stats()[0].dropped, 1u);
  EXPECT_EQ(d.stats()[0].queued, 0u);
}

TEST(Dispatcher, StopWakesBackoffWait) {
  auto state = std::make_shared<FakeState>();
  state->gate.release();
  state->fail = true;
  auto o = fast_options();
  o.retry_initial = std::chrono::hours(1);
  o.retry_max = std::chrono::hours(1);
  Dispatcher d(one(std::make_unique<FakeNotifier>(state)), o);
  d.submit({sample("a")});
  ASSERT_TRUE(eventually([&] { return d.stats()[0].failed_attempts == 1; }));
  auto started = std::chrono::steady_clock::now();
  EXPECT_TRUE(d.stop(30s));
  EXPECT_LT(std::chrono::steady_clock::now() - started, 10s);  // not the hour of backoff
  EXPECT_EQ(d.stats()[0].given_up, 1u);
}

TEST(Dispatcher, StopIsBoundedWhenDeliveryHangs) {
  auto state = std::make_shared<FakeState>();
  {
    Dispatcher d(one(std::make_unique<FakeNotifier>(state)), fast_options());
    d.submit({sample("a")});
    ASSERT_TRUE(eventually([&] { return state->gate.count() == 1; }));
    EXPECT_FALSE(d.stop(20ms));  // the worker is abandoned, not joined
  }
  // The abandoned worker still owns its notifier; letting it finish must be safe.
  state->gate.release();
  EXPECT_TRUE(eventually([&] {
    std::lock_guard lock(state->mu);
    return state->received.size() == 1;
  }));
}

}  // namespace
}  // namespace cardiac::notify
