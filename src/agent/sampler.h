// SPDX-License-Identifier: Apache-2.0
// One agent sample as a pipeline of stages, each owning its own state and handing the next a
// plain value:
//
//   collect   GPUs (GpuSource), GPU process names, the latest host reading, the inbox
//   persist   samples, host readings, kernel/NVML events (de-duplicated), incidents → FaultTally
//   evaluate  rules over the sample view, fence notices → alert changes, GPUs with a critical
//   publish   the Snapshot for HTTP and the queue, notifications, Alertmanager re-sends
//
// The Sampler runs them in that order; persist and evaluate run with the store held, so an
// HTTP ack never lands between a sample's rows and its alerts. Time comes from the Clock it is
// given, so tests drive it with a ManualClock and call step() instead of sleeping.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "agent/parts.h"
#include "agent/security_watch.h"
#include "agent/serving_watch.h"
#include "core/clock.h"
#include "kmsg/xid_counter.h"
#include "notify/dispatcher.h"
#include "nvml/gpu.h"
#include "platform/fs.h"
#include "rules/engine.h"
#include "store/incidents.h"
#include "store/listen_ports.h"
#include "telemetry/gpu_collector.h"

namespace cardiac::agent {

// Where GPU readings come from: the isolated NVML worker in production, a scripted source in
// tests. Called from the sampler thread only.
class GpuSource {
 public:
  virtual ~GpuSource() = default;
  virtual nvml::GpuSnapshot sample() = 0;
  [[nodiscard]] virtual std::uint64_t worker_restarts() const = 0;
  // NVML events (Xid, ECC) that came with the samples so far; none from sources without them.
  virtual std::vector<telemetry::GpuEvent> take_events() { return {}; }
};

// The production source: telemetry::GpuCollector and its worker process.
std::unique_ptr<GpuSource> worker_gpu_source(telemetry::GpuCollectorOptions options,
                                             const Clock& clock);

// How often the sampler records the listening ports (store/listen_ports.h): the doctor's
// baseline for "a port that began to listen" needs minutes, not seconds.
constexpr DurationNs kListenPortsEvery = 60 * kNsPerSec;
// A port already in the store has its last_seen refreshed this often, not at every look: a
// commit a minute that changed nothing but that time wrote about 23 MB a day for 8 GPUs.
// A new port is written when it is first seen.
constexpr DurationNs kListenPortsRefresh = 3600 * kNsPerSec;

struct Collected {
  nvml::GpuSnapshot gpus;
  HostView host;
  Inbox::Batch inbox;
  bool kmsg_up = false;
  TimeNs now = 0;      // wall clock: the sample's timestamp
  TimeNs started = 0;  // monotonic
  // The serving view's rule points (ServingWatch): processes' time to OOM, engines.
  std::vector<rules::Point> serving_points;
  // The ports listening now, read about once a minute (kListenPortsEvery); unset otherwise.
  std::optional<std::vector<store::ListenPort>> listen_ports;
  // The security watch's rule points (SecurityWatch): the last scan's signs of compromise.
  std::vector<rules::Point> security_points;
};

class CollectStage {
 public:
  CollectStage(std::unique_ptr<GpuSource> gpus, std::shared_ptr<const FileSystem> fs,
               const Latest<HostView>& host, Inbox& inbox, const KmsgStatus& kmsg,
               const Clock& clock);
  Collected run();
  [[nodiscard]] std::uint64_t worker_restarts() const { return gpus_->worker_restarts(); }
  // The serving view, fed with every sample from now on (null: none).
  void watch_serving(std::unique_ptr<ServingWatch> watch) { serving_ = std::move(watch); }
  // The security watch, fed with every sample from now on (null: none).
  void watch_security(std::unique_ptr<SecurityWatch> watch) { security_ = std::move(watch); }
  // Saves its per-process book (at stop; the sampler thread has ended).
  void save_serving() {
    if (serving_) serving_->save(true);
  }

 private:
  std::unique_ptr<GpuSource> gpus_;
  std::shared_ptr<const FileSystem> fs_;
  const Latest<HostView>& host_;
  Inbox& inbox_;
  const KmsgStatus& kmsg_;
  const Clock& clock_;
  std::optional<bool> nvml_was_available_;
  std::unique_ptr<ServingWatch> serving_;
  std::unique_ptr<SecurityWatch> security_;
  std::optional<TimeNs> listen_ports_read_;  // monotonic
};

// The alert a card raises when it faults again within a week of its return to service
// (docs/incidents.md); the doctor's history.repeat_offender tells the whole story.
inline constexpr const char* kRepeatOffenderRule = "gpu_repeat_offender";
inline constexpr DurationNs kRepeatOffenderAlertWindow = 7 * 24 * 3600 * kNsPerSec;

class PersistStage {
 public:
  // `hostname` is recorded with every incident, so that a node's history can be told apart
  // from a card's when stores are compared.
  PersistStage(std::string kmsg_source, DurationNs flush_interval, const Clock& clock,
               std::string hostname = {});
  // The GPUs with an incident left open by the previous run, so that it is closed, not
  // opened twice.
  void resume(AgentStore::Access& store);
  const FaultTally& run(AgentStore::Access& store, const Collected& in);
  // Alert transitions the incidents raised since the last call (a repeat offender firing,
  // then resolved when the card returns to service), for the evaluate stage.
  std::vector<rules::Transition> take_alerts() { return std::exchange(alerts_, {}); }

 private:
  // An open incident: whether a device health opened it (then health OK closes it unless the
  // queue fenced the GPU) and whether the queue fenced it (then only a clear closes it).
  struct OpenIncident {
    bool by_health = false;
    bool fenced = false;
    std::optional<rules::Labels> repeat{};  // the labels of the kRepeatOffenderRule alert it raised
  };
  // A fencing Xid seen on a GPU: the fault's time and when cardiac saw it, for the incident
  // its fence opens.
  struct PendingFault {
    TimeNs at = 0;
    TimeNs seen = 0;
    int xid = 0;
    std::string message;
  };
  void take_events(AgentStore::Access& store, const Collected& in);
  void track_incidents(AgentStore::Access& store, const Collected& in);
  void take_fences(AgentStore::Access& store, const Collected& in);
  bool open(AgentStore::Access& store, const store::Incident& i, bool by_health);
  void close(AgentStore::Access& store, unsigned gpu, TimeNs at, const std::string& by);
  void note_pending_xid(const Collected& in, const std::string& bus, int xid, TimeNs at,
                        const std::string& message);

  std::string kmsg_source_;
  DurationNs flush_interval_;
  const Clock& clock_;
  std::string hostname_;
  kmsg::XidCounter xids_;
  FaultTally tally_;
  std::map<unsigned, OpenIncident> open_incidents_;
  std::map<unsigned, PendingFault> pending_;
  std::vector<rules::Transition> alerts_;
  TimeNs last_host_written_ = 0;
  TimeNs last_flush_;
  // (proto, port) → when this stage last wrote it to the store (kListenPortsRefresh).
  std::map<std::pair<std::string, unsigned>, TimeNs> ports_written_;
};

struct Evaluated {
  std::vector<alerts::AlertChange> changes;
  // Re-read when alerts changed (and at the first sample); unset: as before.
  std::optional<std::map<unsigned, std::string>> critical_alerts;
};

class EvaluateStage {
 public:
  EvaluateStage(std::unique_ptr<rules::RuleEngine> engine, bool kmsg_watched);
  [[nodiscard]] rules::RuleEngine& engine() { return *engine_; }
  // A configuration reload's new rules. run() uses the engine with the store held, so the
  // caller holds it too (AgentStore::with) and so never swaps in the middle of an evaluation.
  void replace_engine(std::unique_ptr<rules::RuleEngine> engine) { engine_ = std::move(engine); }
  // `extra`: transitions raised outside the rules (PersistStage::take_alerts()).
  Evaluated run(AgentStore::Access& store, const Collected& in, const FaultTally& tally,
                std::vector<rules::Transition> extra = {});

 private:
  std::unique_ptr<rules::RuleEngine> engine_;
  bool kmsg_watched_;
  bool critical_read_ = false;
  rules::SampleView view_;  // kept: each sample's points are written over the last one's
};

struct PublishOptions {
  std::string hostname;
  std::unique_ptr<notify::Dispatcher> notifiers;     // webhook, exec, log: once per change
  std::unique_ptr<notify::Dispatcher> alertmanager;  // changes + periodic re-sends
};

class PublishStage {
 public:
  PublishStage(PublishOptions options, AgentStore& store, Latest<Snapshot>& board,
               const Clock& clock);
  struct Timing {
    TimeNs finished = 0;  // monotonic
    std::uint64_t missed = 0;
    std::uint64_t worker_restarts = 0;
  };
  void run(Collected in, const FaultTally& tally, Evaluated ev, const Timing& timing);
  // Stops the notifiers (after the sampler thread ended), delivering what they can.
  void stop();
  // A configuration reload's notifiers, from any thread; returns the previous ones for the
  // caller to stop (delivering what they hold) outside the sampler thread.
  PublishOptions replace_notifiers(std::unique_ptr<notify::Dispatcher> notifiers,
                                   std::unique_ptr<notify::Dispatcher> alertmanager);

 private:
  // Guards options_' dispatchers against a reload replacing them between two samples; a
  // pointer so that the stage stays movable into the Sampler.
  std::unique_ptr<std::mutex> notifiers_mu_ = std::make_unique<std::mutex>();
  PublishOptions options_;
  AgentStore& store_;
  Latest<Snapshot>& board_;
  const Clock& clock_;
  Snapshot last_;
  TimeNs last_resend_;
  std::optional<TimeNs> memory_read_at_;  // monotonic
};

class Sampler {
 public:
  Sampler(CollectStage collect, PersistStage persist, EvaluateStage evaluate, PublishStage publish,
          AgentStore& store, DurationNs interval, const Clock& clock);
  // One sample through every stage. Returns how long to wait for the next tick; a sample that
  // overran its interval skips (and counts as missed) the ticks it covered.
  DurationNs step();
  // step() until `stop`, then `after_step` (when given) after each.
  void run(Stopper& stop, const std::function<void()>& after_step = {});
  [[nodiscard]] CollectStage& collect() { return collect_; }
  [[nodiscard]] EvaluateStage& evaluate() { return evaluate_; }
  [[nodiscard]] PublishStage& publish() { return publish_; }

 private:
  CollectStage collect_;
  PersistStage persist_;
  EvaluateStage evaluate_;
  PublishStage publish_;
  AgentStore& store_;
  DurationNs interval_;
  const Clock& clock_;
  std::optional<TimeNs> next_tick_;
  std::uint64_t missed_ = 0;
};

}  // namespace cardiac::agent
