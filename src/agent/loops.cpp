// SPDX-License-Identifier: Apache-2.0
// The agent's threads: GPU sampling with rules and alerts, host collection, kernel log, and
// store maintenance. Each runs on its own schedule so a slow source never delays another.
#include <algorithm>
#include <ctime>
#include <optional>
#include <set>

#include "agent/agent_state.h"
#include "core/log.h"
#include "core/strings.h"
#include "health/faults.h"
#include "host/bounded.h"
#include "kmsg/reader.h"
#include "rules/sample_view.h"
#include "store/events.h"
#include "store/incidents.h"
#include "store/retention.h"
#include "store/schema.h"

namespace cardiac::agent {
namespace {

TimeNs mono() {
  return SystemClock::instance().monotonic();
}

// Kernel-log events queued by the kmsg thread: stored, and Xids counted (once even when the
// kernel log and NVML both report the same one).
void store_event(AgentState& s, const store::Event& ev) {
  auto inserted = store::insert_event(*s.writer_db, ev);
  if (!inserted) log::warn("storing an event failed: {}", inserted.error().what());
}

void take_kernel_events(AgentState& s, Snapshot& next, TimeNs now) {
  std::vector<kmsg::KernelEvent> events;
  std::vector<telemetry::GpuEvent> nvml_events;
  {
    std::lock_guard lock(s.kmsg_mu);
    events.swap(s.kmsg_queue);
    nvml_events.swap(s.nvml_queue);
  }
  // NVML reports the same Xids the kernel logs: each occurrence is counted and stored once,
  // whichever source tells first.
  for (const auto& e : nvml_events) {
    if (e.kind != "xid" || !e.xid) continue;
    if (!s.xids.record(e.pci_bus_id, *e.xid, e.time_ns, kmsg::XidSource::kNvml)) continue;
    ++next.xid_counts[{e.pci_bus_id, *e.xid}];
    next.last_xid[e.pci_bus_id] = *e.xid;
    if (auto c = health::lookup_xid(*e.xid).fault_class; c != health::FaultClass::kNone) {
      ++next.fault_counts[{e.pci_bus_id, c}];
    }
    store::Event ev;
    ev.time_ns = e.time_ns;
    ev.kind = "xid";
    ev.gpu = e.gpu;
    ev.pci_bus_id = e.pci_bus_id;
    ev.xid = *e.xid;
    ev.message = fmt::format("Xid {} reported by NVML", *e.xid);
    ev.source = "nvml";
    ev.dedup_key = fmt::format("nvml|{}|{}|{}", e.time_ns, e.pci_bus_id, *e.xid);
    store_event(s, ev);
  }
  for (const auto& e : events) {
    TimeNs t = e.time_ns.value_or(now);
    if (e.kind == kmsg::EventKind::kXid && e.xid) {
      if (!s.xids.record(e, now)) continue;  // NVML told us already
      ++next.xid_counts[{e.pci_bus_id, *e.xid}];
      next.last_xid[e.pci_bus_id] = *e.xid;
    }
    // Counted per class for the fault rules: one alert per (GPU, class), not per line.
    if (auto c = health::fault_class_of(e); c != health::FaultClass::kNone) {
      ++next.fault_counts[{e.pci_bus_id, c}];
    }
    store::Event ev;
    ev.time_ns = t;
    ev.kind = kmsg::event_kind_name(e.kind);
    ev.pci_bus_id = e.pci_bus_id;
    if (e.xid) ev.xid = *e.xid;
    ev.message = e.message;
    ev.source = s.options.config.kmsg.source;
    ev.dedup_key = fmt::format("{}|{}|{}", t, kmsg::event_kind_name(e.kind), e.raw);
    store_event(s, ev);
  }
}

// Fences added or cleared by the job queue, as transitions of a "gpu_fenced" alert per GPU:
// a fence fires it with its reason, a clear resolves it and says who cleared it.
std::vector<rules::Transition> take_fence_notices(AgentState& s) {
  std::vector<queue::FenceNotice> notices;
  {
    std::lock_guard lock(s.kmsg_mu);
    notices.swap(s.fence_queue);
  }
  std::vector<rules::Transition> out;
  for (const auto& n : notices) {
    rules::Transition t;
    t.rule = "gpu_fenced";
    t.labels = {{"gpu", std::to_string(n.gpu)}};
    t.from = n.fenced ? rules::AlertState::kInactive : rules::AlertState::kFiring;
    t.to = n.fenced ? rules::AlertState::kFiring : rules::AlertState::kResolved;
    t.value = n.fenced ? 1 : 0;
    t.at = n.at;
    t.severity = n.automatic ? Severity::kCritical : Severity::kWarning;
    const std::string gpu =
        n.uuid.empty() ? fmt::format("GPU {}", n.gpu) : fmt::format("GPU {} ({})", n.gpu, n.uuid);
    if (!n.fenced) {
      t.description = fmt::format("{} unfenced, {}: it takes new jobs again", gpu, n.reason);
    } else if (n.automatic) {
      t.description =
          fmt::format("{} fenced automatically: {}; its jobs are requeued", gpu, n.reason);
    } else {
      t.description = fmt::format("{} fenced by {}: {}", gpu, n.who, n.reason);
    }
    out.push_back(std::move(t));
  }
  return out;
}

// GPUs with a critical alert firing, whichever rule raised it: the queue places new work on
// other GPUs while they are free.
std::map<unsigned, std::string> critical_gpu_alerts(const alerts::AlertBook& book) {
  std::map<unsigned, std::string> out;
  auto open = book.list(false);
  if (!open) return out;
  for (const auto& a : *open) {
    if (a.state != rules::AlertState::kFiring || a.severity != Severity::kCritical) {
      continue;
    }
    auto gpu = a.labels.find("gpu");
    if (gpu == a.labels.end()) continue;
    if (auto idx = parse_u64(gpu->second); idx && *idx <= 0xffffffffULL) {
      out.emplace(static_cast<unsigned>(*idx), fmt::format("{}: {}", a.rule, a.description));
    }
  }
  return out;
}

// Opens an incident when a GPU turns faulty and closes it when it answers normally again.
void track_incidents(AgentState& s, const nvml::GpuSnapshot& gpus, TimeNs now,
                     std::set<unsigned>& open) {
  for (const auto& g : gpus.gpus) {
    using nvml::DeviceHealth;
    bool faulty = g.health == DeviceHealth::kLost || g.health == DeviceHealth::kUnresponsive ||
                  g.health == DeviceHealth::kResetRequired || g.health == DeviceHealth::kError;
    if (faulty && !open.count(g.index)) {
      store::Incident i{0,        g.index, g.uuid,       g.pci_bus_id,
                        g.health, now,     std::nullopt, g.health_detail};
      if (auto r = store::open_incident(*s.writer_db, i); r) {
        open.insert(g.index);
      } else {
        log::warn("incident: {}", r.error().what());
      }
    } else if (g.health == DeviceHealth::kOk && open.count(g.index)) {
      if (auto r = store::close_incident(*s.writer_db, g.index, now); r) {
        open.erase(g.index);
      } else {
        log::warn("incident: {}", r.error().what());
      }
    }
  }
}

// A person reading the log learns at start, and whenever it changes, that NVML cannot be
// used and why; not once per sample.
void note_nvml_change(const nvml::GpuSnapshot& gpus, std::optional<bool>& was_available) {
  if (was_available && *was_available == gpus.available) return;
  if (!gpus.available) {
    log::warn("NVML unavailable ({}): {}; no GPU is monitored, /healthz answers 503",
              gpus.error_kind, gpus.error);
  } else if (was_available) {
    log::info("NVML available again: {} GPUs", gpus.gpus.size());
  }
  was_available = gpus.available;
}

}  // namespace

void run_sampler(AgentState& s) {
  const auto& c = s.options.config;
  const DurationNs interval = c.agent.interval;
  TimeNs next_tick = mono();
  TimeNs last_flush = mono();
  TimeNs last_host_written = 0;
  TimeNs last_resend = mono();
  std::set<unsigned> open_incidents;  // GPUs with an open incident, from before a restart too
  std::optional<bool> nvml_was_available;
  bool critical_alerts_read = false;
  {
    std::lock_guard lock(s.writer_mu);
    if (auto open = store::incidents_since(*s.writer_db, s.clock.now())) {
      for (const auto& i : *open) {
        if (!i.ended_ns) open_incidents.insert(i.gpu);
      }
    }
  }
  while (true) {
    TimeNs started = mono();
    nvml::GpuSnapshot gpus = s.collector->sample();
    health::name_gpu_processes(*s.fs, gpus);
    note_nvml_change(gpus, nvml_was_available);
    TimeNs now = s.clock.now();
    HostView hv;
    {
      std::lock_guard lock(s.host_mu);
      hv = s.host;
    }
    host::HostSnapshot host = hv.snapshot.value_or(host::HostSnapshot{});
    const host::HostRates* rates = hv.rates ? &*hv.rates : nullptr;

    Snapshot next;
    {
      std::lock_guard lock(s.snap_mu);
      next = s.snap;
    }
    std::vector<notify::Notification> outgoing;
    {
      std::lock_guard lock(s.writer_mu);
      if (auto st = s.writer->add_gpus(gpus, now); !st) {
        log::warn("store: {}", st.error().what());
      }
      if (hv.snapshot && hv.snapshot->taken_at != last_host_written) {
        last_host_written = hv.snapshot->taken_at;
        if (auto st = s.writer->add_host(*hv.snapshot, hv.snapshot->taken_at); !st) {
          log::warn("store: {}", st.error().what());
        }
      }
      take_kernel_events(s, next, now);
      track_incidents(s, gpus, now, open_incidents);
      auto view =
          rules::build_sample_view(gpus, host, rates, now, {&next.xid_counts, &next.fault_counts});
      if (c.kmsg.enabled) view.points.push_back({"kmsg_up", {}, s.kmsg_up ? 1.0 : 0.0});
      auto transitions = s.engine->evaluate(view, now);
      for (auto& t : take_fence_notices(s)) transitions.push_back(std::move(t));
      for (const auto& e : s.engine->take_errors()) {
        log::error("rule {} disabled: {}", e.rule, e.error.what());
      }
      if (!transitions.empty()) {
        auto changes = s.alerts->apply(transitions);
        if (!changes) {
          log::error("alerts: {}", changes.error().what());
        } else {
          outgoing = to_notifications(*changes, s.options.hostname);
        }
      }
      // The open alerts change only with a transition: read them from the store then (and once
      // at start, for alerts taken up from before a restart), not on every sample.
      if (!transitions.empty() || !critical_alerts_read) {
        next.critical_alerts = critical_gpu_alerts(*s.alerts);
        critical_alerts_read = true;
      }
      if (mono() - last_flush >= c.store.flush_interval) {
        last_flush = mono();
        if (auto st = s.writer->flush(); !st) log::warn("store flush: {}", st.error().what());
      }
    }
    if (!outgoing.empty() && s.am_dispatcher) s.am_dispatcher->submit(outgoing);
    if (!outgoing.empty() && s.dispatcher) s.dispatcher->submit(std::move(outgoing));
    if (s.am_dispatcher && mono() - last_resend >= kAlertmanagerResend) {
      last_resend = mono();
      std::vector<notify::Notification> again;
      {
        std::lock_guard lock(s.writer_mu);
        if (auto open = s.alerts->list(false)) {
          again = firing_notifications(*open, s.options.hostname);
        }
      }
      if (!again.empty()) s.am_dispatcher->submit(std::move(again));
    }

    auto report = std::make_shared<health::StatusReport>(
        health::build_report(std::move(gpus), std::move(host), rates));
    TimeNs finished = mono();
    next.report = std::move(report);
    ++next.samples;
    next.worker_restarts = s.collector->stats().worker_restarts;
    next.last_sample_seconds = static_cast<double>(finished - started) / 1e9;
    next.last_sample_at = now;
    next.last_sample_mono = finished;
    if (next.report->nvml.available && !next.report->gpus.empty()) next.gpus_seen = true;

    // A sample that overran its interval skips the ticks it covered; count them.
    next_tick += interval;
    if (finished > next_tick) {
      auto behind = static_cast<std::uint64_t>((finished - next_tick) / interval) + 1;
      next.missed_samples += behind;
      next_tick += static_cast<TimeNs>(behind) * interval;
    }
    {
      std::lock_guard lock(s.snap_mu);
      s.snap = std::move(next);
    }
    if (!s.sleep_for(std::max<DurationNs>(0, next_tick - mono()))) return;
  }
}

void run_host(AgentState& s) {
  const auto& c = s.options.config;
  std::optional<host::HostSnapshot> previous;
  while (true) {
    TimeNs now = s.clock.now();
    HostView view;
    if (auto snap = host::collect_host_within(s.fs, now, c.nvml.timeout)) {
      if (previous) view.rates = host::compute_rates(*previous, *snap);
      previous = *snap;
      view.snapshot = std::move(*snap);
    } else {
      host::HostSnapshot late;
      late.taken_at = now;
      late.timed_out = true;
      view.snapshot = std::move(late);
    }
    {
      std::lock_guard lock(s.host_mu);
      s.host = std::move(view);
    }
    if (!s.sleep_for(c.agent.host_interval)) return;
  }
}

namespace {

// `journalctl -k -f` for machines where /dev/kmsg is not readable by us but the journal is
// (containers, restricted dmesg). Lines come in syslog's short-iso form.
std::optional<Child> start_journal(const std::string& journalctl) {
  SpawnOptions o;
  o.argv = {journalctl, "-k", "-f", "-n", "0", "-o", "short-iso-precise", "--no-pager"};
  o.pipe_stdin = false;
  auto c = Child::spawn(o);
  if (!c) return std::nullopt;
  return std::move(*c);
}

int current_year(TimeNs now) {
  std::time_t secs = static_cast<std::time_t>(now / kNsPerSec);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  return tm.tm_year + 1900;
}

}  // namespace

void run_kmsg(AgentState& s) {
  const auto& source = s.options.config.kmsg.source;
  const bool device = source.starts_with("/dev/");
  const bool journal_only = source == "journal";
  const std::int64_t boot_time_ns = s.clock.now() - SystemClock::instance().monotonic();
  kmsg::KmsgReader& kmsg_reader = *s.kmsg_reader;
  kmsg::FileTailReader& file_reader = *s.file_reader;
  std::optional<Child> journal;
  bool open = s.kmsg_open;
  bool warned = false;
  std::optional<bool> was_up;
  // Says once when the log stops or starts being read: the fault counts depend on it.
  auto report = [&](bool up, const std::string& why) {
    s.kmsg_up = up;
    {
      std::lock_guard lock(s.kmsg_mu);
      s.kmsg_error = up ? "" : why;
    }
    if (was_up == up) return;
    if (!up && !device && !journal_only) {
      log::warn("kernel log {} cannot be read ({}); no kernel-log faults are counted until it can",
                source, why);
    } else if (up && was_up) {
      log::info("kernel log {} is read again", source);
    }
    was_up = up;
  };
  auto queue = [&](std::vector<kmsg::KernelEvent> events) {
    if (events.empty()) return;
    std::lock_guard lock(s.kmsg_mu);
    for (auto& e : events) s.kmsg_queue.push_back(std::move(e));
  };
  while (true) {
    if (!open && !journal) {
      auto st = journal_only ? fail(Error::unavailable("journal requested")) : kmsg_reader.open();
      if (st) {
        open = true;
        report(true, "");
      } else if ((journal = start_journal("/usr/bin/journalctl"))) {
        log::info("kernel log: {} unavailable ({}); following journalctl -k", source,
                  st.error().what());
        report(true, "");
      } else {
        if (!warned) {
          log::warn("kernel log {} unavailable ({}) and no journal; retrying every 30 s", source,
                    st.error().what());
          warned = true;
        }
        report(false, st.error().what());
      }
    }
    if (journal) {
      // Lines as they come, at most a quarter second of waiting per round.
      TimeNs until = mono() + 250 * kNsPerMs;
      std::vector<kmsg::KernelEvent> events;
      while (auto line = journal->read_line(until)) {
        if (auto e = kmsg::classify_line(*line, current_year(s.clock.now()), boot_time_ns)) {
          events.push_back(std::move(*e));
        }
      }
      queue(std::move(events));
      if (journal->try_wait()) {
        // journalctl ended (no journal on this machine?): try again later, not in a loop.
        journal.reset();
        report(false, "journalctl -k ended");
        if (!s.sleep_for(30 * kNsPerSec)) return;
        continue;
      }
      std::lock_guard lock(s.stop_mu);
      if (s.stopping) return;
      continue;
    }
    if (open) {
      auto events = device ? kmsg_reader.poll() : file_reader.poll();
      if (events) queue(std::move(*events));
      // A file is tried again at every poll (an open() of a missing file is cheap), so a log
      // that appears is followed from its first line.
      if (!device) {
        if (!events) {
          report(false, events.error().what());
        } else if (!file_reader.reading()) {
          report(false, "no such file");
        } else {
          report(true, "");
        }
      }
    }
    if (!s.sleep_for(open ? 250 * kNsPerMs : 30 * kNsPerSec)) return;
  }
}

void run_nvml_events(AgentState& s) {
  const auto& c = s.options.config;
  telemetry::GpuEventStream stream(s.options.executable, c.nvml.library, s.options.worker_env);
  while (true) {
    {
      std::lock_guard lock(s.stop_mu);
      if (s.stopping) return;
    }
    auto e = stream.next(500 * kNsPerMs);
    if (e) {
      std::lock_guard lock(s.kmsg_mu);
      s.nvml_queue.push_back(std::move(*e));
    } else if (!s.sleep_for(50 * kNsPerMs)) {
      return;
    }
  }
}

void run_maintenance(AgentState& s) {
  const auto& c = s.options.config;
  // Its own connection: a long first roll-up must not hold the sampler's writer.
  auto db = store::Db::open(c.agent.state_dir + "/cardiac.db");
  if (!db) {
    log::error("store maintenance disabled: {}", db.error().what());
    return;
  }
  store::RetentionPolicy policy{c.store.raw_retention, c.store.minute_retention,
                                c.store.hour_retention};
  TimeNs last_prune = 0;
  while (s.sleep_for(60 * kNsPerSec)) {
    TimeNs now = s.clock.now();
    if (auto r = store::roll_up(*db, now); !r) log::warn("roll-up: {}", r.error().what());
    if (now - last_prune >= 3600 * kNsPerSec) {
      last_prune = now;
      if (auto p = store::prune(*db, now, policy); !p) log::warn("prune: {}", p.error().what());
    }
  }
}

}  // namespace cardiac::agent
