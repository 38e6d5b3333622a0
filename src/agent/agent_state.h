// SPDX-License-Identifier: Apache-2.0
// What the agent's threads share, and who may touch what:
//  - `sampler` thread: the GPU collector, rules, alerts and the writer connection;
//  - `host` thread: host collection, publishes into `snap`;
//  - `kmsg` thread: kernel log, queues events for the sampler;
//  - HTTP threads: read `snap` and the reader connection; mutations take `writer_mu`.
#pragma once

#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "agent/agent.h"
#include "alerts/alert_book.h"
#include "health/faults.h"
#include "health/report.h"
#include "host/host.h"
#include "kmsg/event.h"
#include "kmsg/reader.h"
#include "kmsg/xid_counter.h"
#include "notify/dispatcher.h"
#include "platform/fs.h"
#include "queue/queue.h"
#include "queue/socket_server.h"
#include "rules/engine.h"
#include "server/http_server.h"
#include "store/db.h"
#include "store/writer.h"
#include "telemetry/event_worker.h"
#include "telemetry/gpu_collector.h"

namespace cardiac::agent {

// The latest view of the machine, replaced as a whole by the sampler.
struct Snapshot {
  std::shared_ptr<const health::StatusReport> report;  // null before the first sample
  std::map<std::pair<std::string, int>, std::uint64_t> xid_counts;
  std::map<std::string, int> last_xid;
  // GPU index → a critical alert firing on it, for the queue's placement.
  std::map<unsigned, std::string> critical_alerts;
  health::FaultCounts fault_counts;  // kernel-log faults by (bus, class), for rules and /metrics
  std::uint64_t samples = 0;
  std::uint64_t missed_samples = 0;
  std::uint64_t worker_restarts = 0;
  double last_sample_seconds = 0;
  TimeNs last_sample_at = 0;    // wall clock
  TimeNs last_sample_mono = 0;  // monotonic, for /healthz
  bool gpus_seen = false;       // some sample since the start listed a GPU
};

struct HostView {
  std::optional<host::HostSnapshot> snapshot;
  std::optional<host::HostRates> rates;
};

struct AgentState {
  AgentState(AgentOptions o, const Clock& c) : options(std::move(o)), clock(c) {}

  AgentOptions options;
  const Clock& clock;
  std::shared_ptr<RootFs> fs;

  std::unique_ptr<telemetry::GpuCollector> collector;
  std::unique_ptr<rules::RuleEngine> engine;

  std::mutex writer_mu;  // guards writer_db, writer, alerts
  std::optional<store::Db> writer_db;
  std::unique_ptr<store::SampleWriter> writer;
  std::unique_ptr<alerts::AlertBook> alerts;

  std::mutex reader_mu;  // guards reader_db (HTTP reads)
  std::optional<store::Db> reader_db;

  std::mutex snap_mu;
  Snapshot snap;

  std::mutex host_mu;
  HostView host;

  std::mutex kmsg_mu;
  std::vector<kmsg::KernelEvent> kmsg_queue;
  std::vector<telemetry::GpuEvent> nvml_queue;  // from the NVML event worker
  std::vector<queue::FenceNotice> fence_queue;  // from the job queue: alerts of their own
  // Created (and positioned at the end of the log) by start(), so that "lines written after
  // the agent started" means after start() returned, not after a thread got going.
  std::unique_ptr<kmsg::KmsgReader> kmsg_reader;
  std::unique_ptr<kmsg::FileTailReader> file_reader;
  bool kmsg_open = false;
  // Whether the configured kernel log is being read now (kmsg thread writes, readers copy);
  // its last error under kmsg_mu. Set by start() first, so the first sample is right.
  std::atomic<bool> kmsg_up{false};
  std::string kmsg_error;
  kmsg::XidCounter xids;  // sampler thread only

  std::unique_ptr<notify::Dispatcher> dispatcher;     // webhook, exec, log: once per change
  std::unique_ptr<notify::Dispatcher> am_dispatcher;  // Alertmanager: changes + re-sends
  std::unique_ptr<server::Backend> backend;
  std::unique_ptr<server::HttpServer> http;
  int port = 0;

  // The GPU job queue ([queue] enabled): its own threads, store connection and socket; it
  // reads `snap` through a view callback.
  std::unique_ptr<queue::Queue> queue;
  // <state-dir>/agent.sock: alert acks and silences from the CLI, by SO_PEERCRED (control.h).
  std::unique_ptr<queue::SocketServer> control;

  std::mutex stop_mu;
  std::condition_variable stop_cv;
  bool stopping = false;
  std::vector<std::thread> threads;

  // Waits up to `d` or until stop; returns false when stopping.
  bool sleep_for(DurationNs d);
};

// Loops (loops.cpp).
void run_sampler(AgentState& s);
void run_host(AgentState& s);
void run_kmsg(AgentState& s);
void run_nvml_events(AgentState& s);
void run_maintenance(AgentState& s);

// The HTTP backend over the shared state (backend.cpp).
std::unique_ptr<server::Backend> make_backend(AgentState& s);

// Builds the notifiers named in the configuration (notifiers.cpp).
// Alertmanager forgets a firing alert it has not heard of for its resolve_timeout (5 m by
// default), so firing alerts are sent to it again on this period, as Prometheus does.
constexpr DurationNs kAlertmanagerResend = 60 * kNsPerSec;

// The notifiers of one group: `alertmanager` selects the Alertmanager ones, otherwise all the
// others (the log when none is configured at all). Null when the group is empty.
Result<std::unique_ptr<notify::Dispatcher>> make_dispatcher(const config::Config& c,
                                                            bool alertmanager);
// Notifications for the alerts firing now (not silenced), for the periodic re-send.
std::vector<notify::Notification> firing_notifications(const std::vector<alerts::Alert>& open,
                                                       const std::string& hostname);
std::vector<notify::Notification> to_notifications(const std::vector<alerts::AlertChange>& changes,
                                                   const std::string& hostname);

}  // namespace cardiac::agent
