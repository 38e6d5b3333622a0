// SPDX-License-Identifier: Apache-2.0
// The sampler's stages one at a time, with plain values in and out and a real store.
#include "agent/sampler.h"

#include <gtest/gtest.h>

#include <fmt/format.h>
#include "agent/loops.h"
#include "agent/tests/support.h"

#include "store/events.h"
#include "store/incidents.h"
#include "store/listen_ports.h"
#include "store/schema.h"

namespace cardiac::agent {
namespace {

using testing::GpuScript;
using testing::TempDir;

struct StoreFixture {
  TempDir dir;
  ManualClock clock;
  std::unique_ptr<AgentStore> store;
  StoreFixture() {
    auto db = store::open_store(dir.path() + "/cardiac.db");
    if (!db) ADD_FAILURE() << db.error().what();
    store = std::make_unique<AgentStore>(std::move(*db), clock);
  }
  std::size_t stored_events() {
    return store->with([](AgentStore::Access& a) {
      auto e = store::events_since(a.db, 0, 1000);
      return e ? e->size() : 0;
    });
  }
};

kmsg::KernelEvent kernel_xid(int xid, TimeNs t) {
  kmsg::KernelEvent e;
  e.kind = kmsg::EventKind::kXid;
  e.xid = xid;
  e.pci_bus_id = "0000:3b:00.0";
  e.time_ns = t;
  e.message = "test";
  e.raw = fmt::format("NVRM: Xid (PCI:0000:3b:00): {}, test", xid);
  return e;
}

TEST(PersistStage, AnXidToldByNvmlAndTheKernelLogIsCountedAndStoredOnce) {
  StoreFixture f;
  PersistStage persist("/dev/kmsg", 5 * kNsPerSec, f.clock);
  Collected in;
  in.now = f.clock.now();
  telemetry::GpuEvent nvml;
  nvml.kind = telemetry::GpuEventKind::kXid;
  nvml.xid = 79;
  nvml.pci_bus_id = "00000000:3B:00.0";
  nvml.time_ns = in.now;
  in.inbox.nvml.push_back(nvml);
  in.inbox.kernel.push_back(kernel_xid(79, in.now + kNsPerSec));
  FaultTally tally = f.store->with([&](AgentStore::Access& a) { return persist.run(a, in); });
  std::uint64_t total = 0;
  for (const auto& [key, n] : tally.xid_counts) total += n;
  EXPECT_EQ(total, 1u);
  EXPECT_EQ(f.stored_events(), 1u);
  std::uint64_t faults = 0;
  for (const auto& [key, n] : tally.fault_counts) faults += n;
  EXPECT_EQ(faults, 1u) << "Xid 79 is a fault class of its own, counted once";
}

TEST(PersistStage, TalliesAccumulateAcrossSamples) {
  StoreFixture f;
  PersistStage persist("/dev/kmsg", 5 * kNsPerSec, f.clock);
  for (int i = 0; i < 3; ++i) {
    Collected in;
    in.now = f.clock.now();
    in.inbox.kernel.push_back(kernel_xid(48, in.now));
    f.store->with([&](AgentStore::Access& a) { persist.run(a, in); });
    f.clock.advance(60 * kNsPerSec);  // outside the de-duplication window
  }
  Collected none;
  none.now = f.clock.now();
  FaultTally tally = f.store->with([&](AgentStore::Access& a) { return persist.run(a, none); });
  ASSERT_EQ(tally.xid_counts.size(), 1u);
  EXPECT_EQ(tally.xid_counts.begin()->second, 3u);
  EXPECT_EQ(tally.last_xid.begin()->second, 48);
}

// One GPU, index 0 on bus 3b, with a serial: the card the incident tests follow.
nvml::GpuSnapshot one_gpu(nvml::DeviceHealth health) {
  GpuScript script;
  script.health = health;
  nvml::GpuSnapshot s = script.snapshot();
  s.gpus[0].serial = "1650000000042";
  return s;
}

queue::FenceNotice fence_notice(bool fenced, TimeNs at, std::string who = "cardiac (automatic)") {
  queue::FenceNotice n;
  n.fenced = fenced;
  n.gpu = 0;
  n.reason = fenced ? "Xid 79 on 0000:3b:00.0" : "cleared by " + who;
  n.who = std::move(who);
  n.automatic = fenced;
  n.at = at;
  return n;
}

store::Incident only_incident(StoreFixture& f) {
  return f.store->with([](AgentStore::Access& a) {
    auto list = store::incidents_since(a.db, 0);
    EXPECT_TRUE(list && list->size() == 1u);
    return list && !list->empty() ? list->front() : store::Incident{};
  });
}

// A fencing Xid, then the queue's fence, then its clear: one incident with the Xid's time as
// the fault, the sample that carried it as the detection, the fence and the return.
TEST(PersistStage, AFencedXidIsAnIncidentFromTheXidToTheClear) {
  StoreFixture f;
  PersistStage persist("/dev/kmsg", 5 * kNsPerSec, f.clock, "node7");
  const TimeNs xid_at = f.clock.now() - 3 * kNsPerSec;
  Collected in;
  in.now = f.clock.now();
  in.gpus = one_gpu(nvml::DeviceHealth::kOk);
  in.inbox.kernel.push_back(kernel_xid(79, xid_at));
  f.store->with([&](AgentStore::Access& a) { persist.run(a, in); });
  // No fence yet: no incident (the queue decides what takes a GPU out of service).
  EXPECT_TRUE(f.store->with([](AgentStore::Access& a) { return store::incidents_since(a.db, 0); })
                  ->empty());
  f.clock.advance(kNsPerSec);
  Collected fenced;
  fenced.now = f.clock.now();
  fenced.gpus = in.gpus;
  fenced.inbox.fences.push_back(fence_notice(true, fenced.now));
  f.store->with([&](AgentStore::Access& a) { persist.run(a, fenced); });
  store::Incident i = only_incident(f);
  EXPECT_EQ(i.cause, "xid_79");
  EXPECT_EQ(i.started_ns, xid_at);
  EXPECT_EQ(i.detected_ns, in.now);
  EXPECT_EQ(i.fenced_ns, fenced.now);
  EXPECT_EQ(i.serial, "1650000000042");
  EXPECT_EQ(i.hostname, "node7");
  EXPECT_FALSE(i.ended_ns);
  // Healthy samples do not end it: it is fenced.
  f.clock.advance(kNsPerSec);
  Collected healthy;
  healthy.now = f.clock.now();
  healthy.gpus = in.gpus;
  f.store->with([&](AgentStore::Access& a) { persist.run(a, healthy); });
  EXPECT_FALSE(only_incident(f).ended_ns);
  f.clock.advance(kNsPerSec);
  Collected cleared;
  cleared.now = f.clock.now();
  cleared.gpus = in.gpus;
  cleared.inbox.fences.push_back(fence_notice(false, cleared.now, "alice"));
  f.store->with([&](AgentStore::Access& a) { persist.run(a, cleared); });
  i = only_incident(f);
  EXPECT_EQ(i.ended_ns, cleared.now);
  EXPECT_EQ(i.returned_by, "alice");
}

// One sample a second later: GPU 0 in health `h`, the fence notices in its inbox; its time.
TimeNs persist_step(StoreFixture& f, PersistStage& persist, nvml::DeviceHealth h,
                    std::vector<queue::FenceNotice> fences) {
  f.clock.advance(kNsPerSec);
  Collected in;
  in.now = f.clock.now();
  in.gpus = one_gpu(h);
  in.inbox.fences = std::move(fences);
  f.store->with([&](AgentStore::Access& a) { persist.run(a, in); });
  return in.now;
}

// A lost GPU that the queue fences stays in its incident when NVML answers again, until the
// fence is cleared; auto-unfence's clear is also an event.
TEST(PersistStage, AFencedHealthFaultEndsWithItsFenceAndAnAutoUnfenceIsAnEvent) {
  StoreFixture f;
  PersistStage persist("/dev/kmsg", 5 * kNsPerSec, f.clock, "node7");
  auto step = [&](nvml::DeviceHealth h, std::vector<queue::FenceNotice> fences) {
    return persist_step(f, persist, h, std::move(fences));
  };
  const TimeNs lost = step(nvml::DeviceHealth::kLost, {});
  const TimeNs fenced = f.clock.now();
  step(nvml::DeviceHealth::kLost, {fence_notice(true, fenced)});
  step(nvml::DeviceHealth::kOk, {});
  store::Incident i = only_incident(f);
  EXPECT_EQ(i.cause, "health_lost");
  EXPECT_EQ(i.started_ns, lost);
  EXPECT_EQ(i.fenced_ns, fenced);
  EXPECT_FALSE(i.ended_ns);
  const TimeNs back =
      step(nvml::DeviceHealth::kOk,
           {fence_notice(false, f.clock.now() + kNsPerSec, queue::kAutoUnfenceWho)});
  i = only_incident(f);
  EXPECT_EQ(i.ended_ns, back);
  EXPECT_EQ(i.returned_by, queue::kAutoUnfenceWho);
  // The auto-unfence is kept as an event.
  auto events =
      f.store->with([](AgentStore::Access& a) { return store::events_since(a.db, 0, 10); });
  ASSERT_TRUE(events);
  ASSERT_EQ(events->size(), 1u);
  EXPECT_EQ((*events)[0].kind, "auto_unfence");
}

// The queue fenced the lost GPU, but its notice reached the sampler only after NVML answered
// again and the incident had ended: the fence belongs to that incident, which it opens again
// (one incident, ended by the fence's clear), not a second one that would make the card look
// like a repeat offender.
TEST(PersistStage, AFenceToldAfterTheCardAnsweredAgainBelongsToTheSameIncident) {
  StoreFixture f;
  PersistStage persist("/dev/kmsg", 5 * kNsPerSec, f.clock, "node7");
  auto step = [&](nvml::DeviceHealth h, std::vector<queue::FenceNotice> fences) {
    return persist_step(f, persist, h, std::move(fences));
  };
  const TimeNs lost = step(nvml::DeviceHealth::kLost, {});
  const TimeNs fenced = lost + kNsPerSec / 2;  // the queue's tick, between two samples
  step(nvml::DeviceHealth::kOk, {});           // the notice is not in this sample's inbox
  store::Incident i = only_incident(f);
  ASSERT_TRUE(i.ended_ns);
  step(nvml::DeviceHealth::kOk, {fence_notice(true, fenced)});
  i = only_incident(f);
  EXPECT_EQ(i.started_ns, lost);
  EXPECT_EQ(i.fenced_ns, fenced);
  EXPECT_FALSE(i.ended_ns) << "fenced: only the fence's clear ends it";
  step(nvml::DeviceHealth::kOk, {});
  EXPECT_FALSE(only_incident(f).ended_ns);
  const TimeNs cleared = f.clock.now() + kNsPerSec;
  step(nvml::DeviceHealth::kOk, {fence_notice(false, cleared, "alice")});
  i = only_incident(f);
  EXPECT_EQ(i.ended_ns, cleared);
  EXPECT_EQ(i.returned_by, "alice");

  // A fence laid after the card's return is a new fault: its own incident.
  const TimeNs again = f.clock.now() + kNsPerSec;
  step(nvml::DeviceHealth::kOk, {fence_notice(true, again)});
  auto all = f.store->with([](AgentStore::Access& a) { return store::incidents_since(a.db, 0); });
  ASSERT_TRUE(all);
  ASSERT_EQ(all->size(), 2U);
  EXPECT_EQ(all->front().started_ns, again);  // newest first
  EXPECT_EQ(all->back().ended_ns, cleared);
}

// The same card faulting again within a week of its return raises a critical alert through
// the evaluate stage, resolved when it returns to service again.
TEST(PersistStage, ACardFaultingAgainWithinAWeekRaisesTheRepeatOffenderAlert) {
  StoreFixture f;
  PersistStage persist("/dev/kmsg", 5 * kNsPerSec, f.clock, "node7");
  EvaluateStage evaluate(std::make_unique<rules::RuleEngine>(std::vector<rules::Rule>{}), false);
  auto step = [&](nvml::DeviceHealth h, DurationNs after) {
    f.clock.advance(after);
    Collected in;
    in.now = f.clock.now();
    in.gpus = one_gpu(h);
    return f.store->with([&](AgentStore::Access& a) {
      FaultTally tally = persist.run(a, in);
      return evaluate.run(a, in, tally, persist.take_alerts());
    });
  };
  step(nvml::DeviceHealth::kLost, kNsPerSec);
  EXPECT_TRUE(step(nvml::DeviceHealth::kOk, 3600 * kNsPerSec).changes.empty());
  // Eight days later: not a repeat.
  step(nvml::DeviceHealth::kLost, 8 * 24 * 3600 * kNsPerSec);
  step(nvml::DeviceHealth::kOk, 3600 * kNsPerSec);
  // Two days later: a repeat.
  Evaluated ev = step(nvml::DeviceHealth::kLost, 2 * 24 * 3600 * kNsPerSec);
  ASSERT_EQ(ev.changes.size(), 1u);
  EXPECT_EQ(ev.changes[0].rule, kRepeatOffenderRule);
  EXPECT_EQ(ev.changes[0].severity, Severity::kCritical);
  EXPECT_NE(ev.changes[0].description.find("1650000000042"), std::string::npos)
      << ev.changes[0].description;
  ASSERT_TRUE(ev.critical_alerts);
  EXPECT_EQ(ev.critical_alerts->count(0), 1u);
  ev = step(nvml::DeviceHealth::kOk, 3600 * kNsPerSec);
  ASSERT_EQ(ev.changes.size(), 1u);
  EXPECT_EQ(ev.changes[0].status, alerts::ChangeStatus::kResolved);
}

TEST(EvaluateStage, FenceNoticesAreAlertsWithTheirReason) {
  StoreFixture f;
  auto engine = std::make_unique<rules::RuleEngine>(std::vector<rules::Rule>{});
  EvaluateStage evaluate(std::move(engine), false);
  Collected in;
  in.now = f.clock.now();
  queue::FenceNotice n;
  n.gpu = 3;
  n.reason = "Xid 79: fallen off the bus";
  n.automatic = true;
  n.at = in.now;
  in.inbox.fences.push_back(n);
  FaultTally tally;
  Evaluated ev = f.store->with([&](AgentStore::Access& a) { return evaluate.run(a, in, tally); });
  ASSERT_EQ(ev.changes.size(), 1u);
  ASSERT_TRUE(ev.critical_alerts);
  ASSERT_EQ(ev.critical_alerts->count(3), 1u);
  EXPECT_NE(ev.critical_alerts->at(3).find("fallen off the bus"), std::string::npos);

  Collected quiet;
  quiet.now = f.clock.now();
  ev = f.store->with([&](AgentStore::Access& a) { return evaluate.run(a, quiet, tally); });
  EXPECT_TRUE(ev.changes.empty());
  EXPECT_FALSE(ev.critical_alerts) << "not re-read without a change";
}

// The listening ports are read about once a minute, not every sample, and stored with the time
// they were first seen (the doctor's baseline for a port that began to listen); a known port
// is written again only once an hour.
TEST(CollectStage, ListeningPortsAreReadOnceAMinuteAndStored) {
  StoreFixture f;
  auto fs = std::make_shared<MemFs>();
  fs->add_file("/proc/net/tcp",
               "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   "
               "uid  timeout inode\n"
               "   0: 00000000:0016 00000000:0000 0A 00000000:00000000 00:00000000 00000000     "
               "0        0 21001 1 0000000000000000 100 0 0 10 0\n"
               "   1: 0F02000A:0016 0100000A:D431 01 00000000:00000000 00:00000000 00000000     "
               "0        0 25006 1 0000000000000000 100 0 0 10 0\n");
  fs->add_file("/proc/net/udp",
               "   sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   "
               "uid  timeout inode ref pointer drops\n"
               "    0: 3500007F:0035 00000000:0000 07 00000000:00000000 00:00000000 00000000   "
               "101        0 23003 2 0000000000000000 0\n"
               "    1: 00000000:AFC8 00000000:0000 07 00000000:00000000 00:00000000 00000000   "
               "101        0 23004 2 0000000000000000 0\n");
  Latest<HostView> host;
  Inbox inbox;
  KmsgStatus kmsg;
  CollectStage collect(std::make_unique<testing::ScriptedGpus>(std::make_shared<GpuScript>()), fs,
                       host, inbox, kmsg, f.clock);
  PersistStage persist("/dev/kmsg", 5 * kNsPerSec, f.clock);
  Collected first = collect.run();
  ASSERT_TRUE(first.listen_ports);
  // ssh on 22; the resolver on udp 53; not the connection, not the client's udp 45000.
  EXPECT_EQ(*first.listen_ports, (std::vector<store::ListenPort>{{"tcp", 22}, {"udp", 53}}));
  f.store->with([&](AgentStore::Access& a) { persist.run(a, first); });
  f.clock.advance(30 * kNsPerSec);
  EXPECT_FALSE(collect.run().listen_ports);
  // One look at the ports, persisted; then what the store holds.
  const auto look = [&](Collected& c) {
    c = collect.run();
    EXPECT_TRUE(c.listen_ports);
    f.store->with([&](AgentStore::Access& a) { persist.run(a, c); });
    return f.store->with([](AgentStore::Access& a) { return store::listen_ports(a.db); });
  };
  f.clock.advance(30 * kNsPerSec);
  Collected later;
  auto stored = look(later);
  ASSERT_TRUE(stored) << stored.error().what();
  ASSERT_EQ(stored->size(), 2U);
  EXPECT_EQ((*stored)[0].first_seen, first.now);
  // Known ports are not written again a minute later: last_seen moves once an hour.
  EXPECT_EQ((*stored)[0].last_seen, first.now);

  // A port that begins to listen is written at the next look.
  fs->add_file("/proc/net/tcp6",
               "  sl  local_address                         remote_address                        "
               "st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
               "   0: 00000000000000000000000000000000:1F90 00000000000000000000000000000000:0000 "
               "0A 00000000:00000000 00:00000000 00000000     0        0 31001 1 0000000000000000 "
               "100 0 0 10 0\n");
  f.clock.advance(60 * kNsPerSec);
  Collected with_new;
  stored = look(with_new);
  ASSERT_TRUE(stored) << stored.error().what();
  ASSERT_EQ(stored->size(), 3U);
  EXPECT_EQ(stored->back().port, 8080U);
  EXPECT_EQ(stored->back().first_seen, with_new.now);
  EXPECT_EQ((*stored)[0].last_seen, first.now);

  // An hour after they were written, the known ports' last_seen is refreshed.
  f.clock.advance(kListenPortsRefresh);
  Collected hour_later;
  stored = look(hour_later);
  ASSERT_TRUE(stored) << stored.error().what();
  ASSERT_EQ(stored->size(), 3U);
  for (const auto& p : *stored) EXPECT_EQ(p.last_seen, hour_later.now) << p.port;
}

TEST(Sampler, AnOverrunSkipsAndCountsTheTicksItCovered) {
  StoreFixture f;
  // A source that takes 3.5 intervals of (manual) time per sample.
  class Slow final : public GpuSource {
   public:
    explicit Slow(ManualClock& c) : clock_(c) {}
    nvml::GpuSnapshot sample() override {
      clock_.advance(3500 * kNsPerMs);
      return script_.snapshot();
    }
    [[nodiscard]] std::uint64_t worker_restarts() const override { return 0; }

   private:
    ManualClock& clock_;
    GpuScript script_;
  };
  auto fs = std::make_shared<MemFs>();
  Latest<HostView> host;
  Inbox inbox;
  KmsgStatus kmsg;
  Latest<Snapshot> board;
  auto engine = std::make_unique<rules::RuleEngine>(std::vector<rules::Rule>{});
  Sampler sampler(
      CollectStage(std::make_unique<Slow>(f.clock), fs, host, inbox, kmsg, f.clock),
      PersistStage("/dev/kmsg", 5 * kNsPerSec, f.clock), EvaluateStage(std::move(engine), false),
      PublishStage(PublishOptions{}, *f.store, board, f.clock), *f.store, kNsPerSec, f.clock);
  DurationNs wait = sampler.step();
  EXPECT_EQ(wait, 500 * kNsPerMs) << "the next tick is the 4th after the start";
  Snapshot s = board.get();
  EXPECT_EQ(s.samples, 1u);
  EXPECT_EQ(s.missed_samples, 3u);
  EXPECT_DOUBLE_EQ(s.last_sample_seconds, 3.5);
  ASSERT_TRUE(s.report);
  EXPECT_TRUE(s.gpus_seen);
}

// The kernel log is read once per sample (what the sampler takes), not four times a second,
// but never less often than every second nor more often than every 250 ms.
TEST(KernelLogFollower, ReadsTheLogOncePerSampleWithinBounds) {
  EXPECT_EQ(kernel_log_poll_period(kNsPerSec), kNsPerSec);
  EXPECT_EQ(kernel_log_poll_period(500 * kNsPerMs), 500 * kNsPerMs);
  EXPECT_EQ(kernel_log_poll_period(10 * kNsPerSec), kNsPerSec);
  EXPECT_EQ(kernel_log_poll_period(100 * kNsPerMs), 250 * kNsPerMs);
}

// The heap's free pages go back once a minute of the agent's clock, not per sample.
TEST(HeapTrimmer, TrimsOncePerPeriodOfTheClock) {
  ManualClock clock;
  int trims = 0;
  HeapTrimmer trimmer(clock, HeapTrimmer::kPeriod, [&] { ++trims; });
  trimmer.maybe_trim();
  EXPECT_EQ(trims, 0);  // not at start: nothing was freed yet
  for (int second = 1; second < 60; ++second) {
    clock.advance(kNsPerSec);
    trimmer.maybe_trim();
  }
  EXPECT_EQ(trims, 0);
  clock.advance(kNsPerSec);
  trimmer.maybe_trim();
  trimmer.maybe_trim();
  EXPECT_EQ(trims, 1);
  clock.advance(3 * HeapTrimmer::kPeriod);  // a long stall: one trim, not three
  trimmer.maybe_trim();
  EXPECT_EQ(trims, 2);
  EXPECT_EQ(trimmer.trims(), 2u);
}

// The default trim is malloc_trim itself: callable, and it leaves the heap usable.
TEST(HeapTrimmer, TheDefaultTrimRuns) {
  ManualClock clock;
  HeapTrimmer trimmer(clock, 0);
  { std::vector<char> freed(1 << 20, 'x'); }
  trimmer.maybe_trim();
  EXPECT_EQ(trimmer.trims(), 1u);
  std::vector<char> again(1 << 20, 'y');
  EXPECT_EQ(again.back(), 'y');
}

}  // namespace
}  // namespace cardiac::agent
