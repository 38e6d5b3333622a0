// SPDX-License-Identifier: Apache-2.0
#include "agent/sampler.h"

#include <algorithm>
#include <utility>

#include "agent/notifiers.h"
#include "core/log.h"
#include "core/strings.h"
#include "core/time.h"
#include "health/faults.h"
#include "nvml/pci.h"
#include "rules/sample_view.h"
#include "store/events.h"
#include "store/incidents.h"

namespace cardiac::agent {
namespace {

constexpr DurationNs kDayNs = 24 * 3600 * kNsPerSec;

class WorkerGpuSource final : public GpuSource {
 public:
  WorkerGpuSource(telemetry::GpuCollectorOptions o, const Clock& c) : collector_(std::move(o), c) {}
  nvml::GpuSnapshot sample() override { return collector_.sample(); }
  [[nodiscard]] std::uint64_t worker_restarts() const override {
    return collector_.stats().worker_restarts;
  }
  std::vector<telemetry::GpuEvent> take_events() override { return collector_.take_events(); }

 private:
  telemetry::GpuCollector collector_;
};

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

void store_event(store::Db& db, const store::Event& ev) {
  auto inserted = store::insert_event(db, ev);
  if (!inserted) log::warn("storing an event failed: {}", inserted.error().what());
}

// Fences added or cleared by the job queue, as transitions of a "gpu_fenced" alert per GPU:
// a fence fires it with its reason, a clear resolves it and says who cleared it.
std::vector<rules::Transition> fence_transitions(const std::vector<queue::FenceNotice>& notices) {
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

}  // namespace

std::unique_ptr<GpuSource> worker_gpu_source(telemetry::GpuCollectorOptions options,
                                             const Clock& clock) {
  return std::make_unique<WorkerGpuSource>(std::move(options), clock);
}

// --- collect -----------------------------------------------------------------------------------

CollectStage::CollectStage(std::unique_ptr<GpuSource> gpus, std::shared_ptr<const FileSystem> fs,
                           const Latest<HostView>& host, Inbox& inbox, const KmsgStatus& kmsg,
                           const Clock& clock)
    : gpus_(std::move(gpus)),
      fs_(std::move(fs)),
      host_(host),
      inbox_(inbox),
      kmsg_(kmsg),
      clock_(clock) {}

Collected CollectStage::run() {
  Collected c;
  c.started = clock_.monotonic();
  c.gpus = gpus_->sample();
  for (auto& e : gpus_->take_events()) inbox_.add_nvml(std::move(e));
  health::name_gpu_processes(*fs_, c.gpus);
  note_nvml_change(c.gpus, nvml_was_available_);
  c.now = clock_.now();
  if (serving_) serving_->add(c.gpus, c.now, c.serving_points);
  c.host = host_.get();
  // After the GPU read: events logged while it ran belong to this sample.
  c.inbox = inbox_.take();
  c.kmsg_up = kmsg_.up();
  if (!listen_ports_read_ || c.started - *listen_ports_read_ >= kListenPortsEvery) {
    listen_ports_read_ = c.started;
    c.listen_ports = store::scan_listen_ports(*fs_);
  }
  if (security_) security_->add(c.gpus, c.host, c.listen_ports, c.now, c.security_points);
  return c;
}

// --- persist -----------------------------------------------------------------------------------

PersistStage::PersistStage(std::string kmsg_source, DurationNs flush_interval, const Clock& clock,
                           std::string hostname)
    : kmsg_source_(std::move(kmsg_source)),
      flush_interval_(flush_interval),
      clock_(clock),
      hostname_(std::move(hostname)),
      last_flush_(clock.monotonic()) {}

void PersistStage::resume(AgentStore::Access& store) {
  if (auto open = store::incidents_since(store.db, clock_.now())) {
    for (const auto& i : *open) {
      if (i.ended_ns) continue;
      // Rows from before schema 8 have no cause: a device health opened them.
      const bool by_health = i.cause.empty() || i.cause.starts_with("health_");
      open_incidents_[i.gpu] = {by_health, i.fenced_ns.has_value(), std::nullopt};
    }
  }
}

const FaultTally& PersistStage::run(AgentStore::Access& store, const Collected& in) {
  if (auto st = store.writer.add_gpus(in.gpus, in.now); !st) {
    log::warn("store: {}", st.error().what());
  }
  const auto& h = in.host.snapshot;
  if (h && h->taken_at != last_host_written_) {
    last_host_written_ = h->taken_at;
    if (auto st = store.writer.add_host(*h, h->taken_at); !st) {
      log::warn("store: {}", st.error().what());
    }
  }
  take_events(store, in);
  track_incidents(store, in);
  if (in.listen_ports) {
    std::vector<store::ListenPort> due;
    for (const auto& p : *in.listen_ports) {
      auto it = ports_written_.find({p.proto, p.port});
      if (it == ports_written_.end() || in.now - it->second >= kListenPortsRefresh) {
        due.push_back(p);
      }
    }
    if (!due.empty()) {
      if (auto st = store::record_listen_ports(store.db, due, in.now); !st) {
        log::warn("store: listening ports: {}", st.error().what());
      } else {
        for (const auto& p : due) ports_written_[{p.proto, p.port}] = in.now;
      }
    }
  }
  take_fences(store, in);
  if (clock_.monotonic() - last_flush_ >= flush_interval_) {
    last_flush_ = clock_.monotonic();
    if (auto st = store.writer.flush(); !st) log::warn("store flush: {}", st.error().what());
  }
  return tally_;
}

// NVML reports the same Xids the kernel logs: each occurrence is counted and stored once,
// whichever source tells first.
void PersistStage::take_events(AgentStore::Access& store, const Collected& in) {
  for (const auto& e : in.inbox.nvml) {
    if (e.kind != telemetry::GpuEventKind::kXid || !e.xid) continue;
    if (!xids_.record(e.pci_bus_id, *e.xid, e.time_ns, kmsg::XidSource::kNvml)) continue;
    ++tally_.xid_counts[{e.pci_bus_id, *e.xid}];
    tally_.last_xid[e.pci_bus_id] = *e.xid;
    if (auto c = health::lookup_xid(*e.xid).fault_class; c != health::FaultClass::kNone) {
      ++tally_.fault_counts[{e.pci_bus_id, c}];
    }
    note_pending_xid(in, e.pci_bus_id, *e.xid, e.time_ns,
                     fmt::format("Xid {} reported by NVML", *e.xid));
    store::Event ev;
    ev.time_ns = e.time_ns;
    ev.kind = "xid";
    ev.gpu = e.gpu;
    ev.pci_bus_id = e.pci_bus_id;
    ev.xid = *e.xid;
    ev.message = fmt::format("Xid {} reported by NVML", *e.xid);
    ev.source = "nvml";
    ev.dedup_key = fmt::format("nvml|{}|{}|{}", e.time_ns, e.pci_bus_id, *e.xid);
    store_event(store.db, ev);
  }
  for (const auto& e : in.inbox.kernel) {
    TimeNs t = e.time_ns.value_or(in.now);
    if (e.kind == kmsg::EventKind::kXid && e.xid) {
      if (!xids_.record(e, in.now)) continue;  // NVML told us already
      ++tally_.xid_counts[{e.pci_bus_id, *e.xid}];
      tally_.last_xid[e.pci_bus_id] = *e.xid;
      note_pending_xid(in, e.pci_bus_id, *e.xid, t, e.raw.empty() ? e.message : e.raw);
    }
    // Counted per class for the fault rules: one alert per (GPU, class), not per line.
    if (auto c = health::fault_class_of(e); c != health::FaultClass::kNone) {
      ++tally_.fault_counts[{e.pci_bus_id, c}];
    }
    store::Event ev;
    ev.time_ns = t;
    ev.kind = kmsg::event_kind_name(e.kind);
    ev.pci_bus_id = e.pci_bus_id;
    if (e.xid) ev.xid = *e.xid;
    ev.message = e.message;
    ev.source = kmsg_source_;
    ev.dedup_key = fmt::format("{}|{}|{}", t, kmsg::event_kind_name(e.kind), e.raw);
    store_event(store.db, ev);
  }
}

// A fencing Xid is the fault of the incident its fence opens: its time is the fault's, the
// sample that carried it the detection. The first one per GPU counts until the fence comes.
void PersistStage::note_pending_xid(const Collected& in, const std::string& bus, int xid, TimeNs at,
                                    const std::string& message) {
  if (!health::lookup_xid(xid).fences) return;
  const std::string id = nvml::normalize_pci_bus_id(bus);
  for (const auto& g : in.gpus.gpus) {
    if (id.empty() || nvml::normalize_pci_bus_id(g.pci_bus_id) != id) continue;
    if (open_incidents_.count(g.index) || pending_.count(g.index)) return;
    pending_[g.index] = {at, in.now, xid, message};
    return;
  }
}

bool PersistStage::open(AgentStore::Access& store, const store::Incident& i, bool by_health) {
  auto r = store::open_incident(store.db, i);
  if (!r) {
    log::warn("incident: {}", r.error().what());
    return false;
  }
  OpenIncident state{by_health, false, std::nullopt};
  // The same card (serial, else UUID; any slot) back in service within the window: the fix
  // did not hold.
  const std::string card = i.serial.empty() ? i.uuid : i.serial;
  std::vector<store::Incident> history;
  if (!card.empty()) {
    auto past = store::incidents_since(store.db, i.started_ns - 90 * kDayNs);
    if (past) {
      history = std::move(*past);
    } else {
      log::warn("incident history: {}", past.error().what());
    }
  }
  const store::Incident* before = nullptr;
  for (const auto& p : history) {
    if (!p.ended_ns || (p.serial.empty() ? p.uuid : p.serial) != card) continue;
    if (*p.ended_ns > i.started_ns || i.started_ns - *p.ended_ns > kRepeatOffenderAlertWindow) {
      continue;
    }
    if (before == nullptr || *p.ended_ns > *before->ended_ns) before = &p;
  }
  if (before != nullptr) {
    rules::Transition t;
    t.rule = kRepeatOffenderRule;
    t.labels = {{"gpu", std::to_string(i.gpu)}};
    if (!i.serial.empty()) t.labels["serial"] = i.serial;
    t.from = rules::AlertState::kInactive;
    t.to = rules::AlertState::kFiring;
    t.value = 1;
    t.at = i.detected_ns.value_or(i.started_ns);
    t.severity = Severity::kCritical;
    t.description = fmt::format(
        "GPU {} ({}) faulted again ({}) {} after incident {} returned it to service: a repeat "
        "offender; open a hardware ticket with `cardiac incident list --gpu {}`",
        i.gpu, card, i.cause, format_duration(i.started_ns - *before->ended_ns), before->id, card);
    log::warn("{}", t.description);
    state.repeat = t.labels;
    alerts_.push_back(std::move(t));
  }
  open_incidents_[i.gpu] = state;
  return true;
}

void PersistStage::close(AgentStore::Access& store, unsigned gpu, TimeNs at,
                         const std::string& by) {
  auto it = open_incidents_.find(gpu);
  if (auto r = store::close_incident(store.db, gpu, at, by); !r) {
    log::warn("incident: {}", r.error().what());
    return;
  }
  if (it == open_incidents_.end()) return;
  if (it->second.repeat) {
    rules::Transition t;
    t.rule = kRepeatOffenderRule;
    t.labels = *it->second.repeat;
    t.from = rules::AlertState::kFiring;
    t.to = rules::AlertState::kResolved;
    t.at = at;
    t.severity = Severity::kCritical;
    t.description = fmt::format("GPU {} returned to service ({})", gpu, by);
    alerts_.push_back(std::move(t));
  }
  open_incidents_.erase(it);
}

// Opens an incident when a GPU turns faulty and closes it when it answers normally again,
// unless the queue fenced it: then its fence's clear is the return to service.
void PersistStage::track_incidents(AgentStore::Access& store, const Collected& in) {
  for (const auto& g : in.gpus.gpus) {
    using nvml::DeviceHealth;
    bool faulty = g.health == DeviceHealth::kLost || g.health == DeviceHealth::kUnresponsive ||
                  g.health == DeviceHealth::kResetRequired || g.health == DeviceHealth::kError;
    auto it = open_incidents_.find(g.index);
    if (faulty && it == open_incidents_.end()) {
      store::Incident i{0,        g.index, g.uuid,       g.pci_bus_id,
                        g.health, in.now,  std::nullopt, g.health_detail};
      i.serial = g.serial;
      i.hostname = hostname_;
      i.cause = fmt::format("health_{}", nvml::device_health_name(g.health));
      i.detected_ns = in.now;
      open(store, i, true);
    } else if (faulty) {
      it->second.by_health = true;
    } else if (g.health == DeviceHealth::kOk && it != open_incidents_.end() &&
               it->second.by_health && !it->second.fenced) {
      close(store, g.index, in.now, std::string(store::kReturnedByHealth));
    }
  }
}

// The queue's fences: a fence opens the GPU's incident (with the fencing Xid's time when one
// came before it), or marks the open one fenced, or opens again the one that ended after the
// fence was laid (the notice arrived a sample late); a clear returns the GPU to service, unless
// NVML still calls it faulty. An auto-unfence is also kept as an event.
void PersistStage::take_fences(AgentStore::Access& store, const Collected& in) {
  for (const auto& n : in.inbox.fences) {
    const nvml::GpuReading* g = nullptr;
    for (const auto& r : in.gpus.gpus) {
      if (r.index == n.gpu) g = &r;
    }
    if (n.fenced) {
      // Laid while the incident was open, told after the card answered again: the same fault.
      if (!open_incidents_.count(n.gpu)) {
        auto again = store::reopen_for_fence(store.db, n.gpu, n.at);
        if (!again) {
          log::warn("incident: {}", again.error().what());
        } else if (*again) {
          open_incidents_[n.gpu] = OpenIncident{true, false, std::nullopt};
        }
      }
      if (!open_incidents_.count(n.gpu)) {
        store::Incident i;
        i.gpu = n.gpu;
        i.uuid = n.uuid.empty() && g != nullptr ? g->uuid : n.uuid;
        if (g != nullptr) {
          i.pci_bus_id = g->pci_bus_id;
          i.serial = g->serial;
        }
        i.hostname = hostname_;
        i.kind = nvml::DeviceHealth::kError;
        i.evidence = n.reason;
        if (auto p = pending_.find(n.gpu); p != pending_.end()) {
          i.started_ns = p->second.at;
          i.detected_ns = p->second.seen;
          i.cause = fmt::format("xid_{}", p->second.xid);
          i.evidence = p->second.message;
        } else {
          i.started_ns = n.at;
          i.detected_ns = n.at;
          i.cause = "fence";
        }
        open(store, i, false);
      }
      pending_.erase(n.gpu);
      if (auto r = store::mark_incident_fenced(store.db, n.gpu, n.at); !r) {
        log::warn("incident: {}", r.error().what());
      }
      if (auto it = open_incidents_.find(n.gpu); it != open_incidents_.end()) {
        it->second.fenced = true;
      }
      continue;
    }
    if (n.who == queue::kAutoUnfenceWho) {
      store::Event ev;
      ev.time_ns = n.at;
      ev.kind = "auto_unfence";
      ev.gpu = n.gpu;
      if (g != nullptr) ev.pci_bus_id = g->pci_bus_id;
      ev.message = fmt::format("GPU {} returned to service by {}", n.gpu, n.reason);
      ev.source = "queue";
      ev.dedup_key = fmt::format("auto_unfence|{}|{}", n.gpu, n.at);
      store_event(store.db, ev);
    }
    auto it = open_incidents_.find(n.gpu);
    if (it == open_incidents_.end()) continue;
    it->second.fenced = false;
    const bool still_faulty = g != nullptr && g->health != nvml::DeviceHealth::kOk &&
                              g->health != nvml::DeviceHealth::kNotSampled;
    if (!still_faulty) close(store, n.gpu, n.at, n.who.empty() ? n.reason : n.who);
  }
}

// --- evaluate ----------------------------------------------------------------------------------

EvaluateStage::EvaluateStage(std::unique_ptr<rules::RuleEngine> engine, bool kmsg_watched)
    : engine_(std::move(engine)), kmsg_watched_(kmsg_watched) {}

Evaluated EvaluateStage::run(AgentStore::Access& store, const Collected& in,
                             const FaultTally& tally, std::vector<rules::Transition> extra) {
  Evaluated out;
  static const host::HostSnapshot kNoHost;
  const host::HostSnapshot& host = in.host.snapshot ? *in.host.snapshot : kNoHost;
  const host::HostRates* rates = in.host.rates ? &*in.host.rates : nullptr;
  rules::SampleView& view = view_;
  rules::build_sample_view(view, in.gpus, host, rates, in.now,
                           {&tally.xid_counts, &tally.fault_counts});
  if (kmsg_watched_) view.points.push_back({"kmsg_up", {}, in.kmsg_up ? 1.0 : 0.0});
  view.points.insert(view.points.end(), in.serving_points.begin(), in.serving_points.end());
  view.points.insert(view.points.end(), in.security_points.begin(), in.security_points.end());
  auto transitions = engine_->evaluate(view, in.now);
  for (auto& t : fence_transitions(in.inbox.fences)) transitions.push_back(std::move(t));
  for (auto& t : extra) transitions.push_back(std::move(t));
  for (const auto& e : engine_->take_errors()) {
    log::error("rule {} disabled: {}", e.rule, e.error.what());
  }
  if (!transitions.empty()) {
    auto changes = store.alerts.apply(transitions);
    if (!changes) {
      log::error("alerts: {}", changes.error().what());
    } else {
      out.changes = std::move(*changes);
    }
  }
  // The open alerts change only with a transition: read them from the store then (and once at
  // start, for alerts taken up from before a restart), not on every sample.
  if (!transitions.empty() || !critical_read_) {
    out.critical_alerts = critical_gpu_alerts(store.alerts);
    critical_read_ = true;
  }
  return out;
}

// --- publish -----------------------------------------------------------------------------------

PublishStage::PublishStage(PublishOptions options, AgentStore& store, Latest<Snapshot>& board,
                           const Clock& clock)
    : options_(std::move(options)),
      store_(store),
      board_(board),
      clock_(clock),
      last_resend_(clock.monotonic()) {}

void PublishStage::run(Collected in, const FaultTally& tally, Evaluated ev, const Timing& timing) {
  std::unique_lock notifiers_lock(*notifiers_mu_);
  if (!ev.changes.empty()) {
    auto outgoing = to_notifications(ev.changes, options_.hostname);
    if (options_.alertmanager) options_.alertmanager->submit(outgoing);
    if (options_.notifiers) options_.notifiers->submit(outgoing);
  }
  if (options_.alertmanager && clock_.monotonic() - last_resend_ >= kAlertmanagerResend) {
    last_resend_ = clock_.monotonic();
    auto again = store_.with([&](AgentStore::Access& s) {
      auto open = s.alerts.list(false);
      return open ? firing_notifications(*open, options_.hostname)
                  : std::vector<notify::Notification>{};
    });
    if (!again.empty()) options_.alertmanager->submit(again);
  }
  notifiers_lock.unlock();

  Snapshot next = last_;
  const host::HostRates* rates = in.host.rates ? &*in.host.rates : nullptr;
  next.report = std::make_shared<health::StatusReport>(health::build_report(
      std::move(in.gpus), in.host.snapshot ? std::move(*in.host.snapshot) : host::HostSnapshot{},
      rates));
  next.faults = tally;
  if (ev.critical_alerts) next.critical_alerts = std::move(*ev.critical_alerts);
  ++next.samples;
  next.missed_samples = timing.missed;
  next.worker_restarts = timing.worker_restarts;
  next.last_sample_seconds = static_cast<double>(timing.finished - in.started) / 1e9;
  next.last_sample_at = in.now;
  next.last_sample_mono = timing.finished;
  if (next.report->nvml.available && !next.report->gpus.empty()) next.gpus_seen = true;
  // mallinfo2 walks every bin of every arena under its lock: 3 % of the agent's CPU when it ran
  // at every sample. Memory moves slowly; a reading every kMemoryReadPeriod says as much.
  if (!memory_read_at_ || timing.finished - *memory_read_at_ >= kMemoryReadPeriod) {
    memory_read_at_ = timing.finished;
    next.memory = read_process_memory();
  }
  last_ = next;
  board_.set(std::move(next));
}

void PublishStage::stop() {
  std::lock_guard lock(*notifiers_mu_);
  if (options_.notifiers) options_.notifiers->stop();
  if (options_.alertmanager) options_.alertmanager->stop();
}

PublishOptions PublishStage::replace_notifiers(std::unique_ptr<notify::Dispatcher> notifiers,
                                               std::unique_ptr<notify::Dispatcher> alertmanager) {
  PublishOptions old;
  std::lock_guard lock(*notifiers_mu_);
  old.notifiers = std::exchange(options_.notifiers, std::move(notifiers));
  old.alertmanager = std::exchange(options_.alertmanager, std::move(alertmanager));
  return old;
}

// --- the sampler -------------------------------------------------------------------------------

Sampler::Sampler(CollectStage collect, PersistStage persist, EvaluateStage evaluate,
                 PublishStage publish, AgentStore& store, DurationNs interval, const Clock& clock)
    : collect_(std::move(collect)),
      persist_(std::move(persist)),
      evaluate_(std::move(evaluate)),
      publish_(std::move(publish)),
      store_(store),
      interval_(interval),
      clock_(clock) {
  store_.with([&](AgentStore::Access& a) { persist_.resume(a); });
}

DurationNs Sampler::step() {
  if (!next_tick_) next_tick_ = clock_.monotonic();
  Collected in = collect_.run();
  FaultTally tally;
  Evaluated ev = store_.with([&](AgentStore::Access& a) {
    tally = persist_.run(a, in);
    return evaluate_.run(a, in, tally, persist_.take_alerts());
  });
  PublishStage::Timing timing;
  timing.finished = clock_.monotonic();
  *next_tick_ += interval_;
  if (timing.finished > *next_tick_) {
    auto behind = static_cast<std::uint64_t>((timing.finished - *next_tick_) / interval_) + 1;
    missed_ += behind;
    *next_tick_ += static_cast<TimeNs>(behind) * interval_;
  }
  timing.missed = missed_;
  timing.worker_restarts = collect_.worker_restarts();
  publish_.run(std::move(in), tally, std::move(ev), timing);
  return std::max<DurationNs>(0, *next_tick_ - clock_.monotonic());
}

void Sampler::run(Stopper& stop, const std::function<void()>& after_step) {
  while (true) {
    const DurationNs wait = step();
    if (after_step) after_step();
    if (!stop.sleep_for(wait)) return;
  }
}

}  // namespace cardiac::agent
