// SPDX-License-Identifier: Apache-2.0
// The HTTP API over the agent's shared state. Reads come from the latest snapshot or the
// reader connection; nothing here calls NVML or waits for a sample.
#include "agent/agent_state.h"
#include "alerts/alert_json.h"
#include "core/format.h"
#include "core/time.h"
#include "metrics/exposition.h"
#include "store/events.h"
#include "store/query.h"

namespace cardiac::agent {
namespace {

nlohmann::json event_json(const store::Event& e) {
  nlohmann::json j{{"id", e.id},           {"time", format_iso8601(e.time_ns)},
                   {"time_ns", e.time_ns}, {"kind", e.kind},
                   {"message", e.message}, {"source", e.source}};
  if (e.gpu) j["gpu"] = *e.gpu;
  if (!e.pci_bus_id.empty()) j["pci_bus_id"] = e.pci_bus_id;
  if (e.xid) j["xid"] = *e.xid;
  return j;
}

class AgentBackend final : public server::Backend {
 public:
  explicit AgentBackend(AgentState& s) : s_(s) {}

  std::string metrics_text() override {
    Snapshot snap = copy();
    metrics::ExpositionInput in;
    in.report = snap.report.get();
    in.xid_counts = snap.xid_counts;
    in.fault_counts = snap.fault_counts;
    in.last_xid = snap.last_xid;
    in.xids_watched = s_.options.config.kmsg.enabled;
    if (in.xids_watched) in.agent.kmsg_up = s_.kmsg_up ? 1.0 : 0.0;
    in.agent.samples_total = snap.samples;
    in.agent.missed_samples_total = snap.missed_samples;
    in.agent.worker_restarts_total = snap.worker_restarts;
    if (snap.samples > 0) {
      in.agent.sample_duration_seconds = snap.last_sample_seconds;
      in.agent.last_sample_timestamp_seconds = static_cast<double>(snap.last_sample_at) / 1e9;
    }
    if (s_.queue) in.queue = s_.queue->metrics();
    metrics::ExpositionOptions opt;
    opt.hostname = s_.options.hostname;
    opt.compat_dcgm = s_.options.config.agent.metrics_compat == "dcgm";
    return metrics::render_metrics(in, opt);
  }

  nlohmann::json status() override {
    Snapshot snap = copy();
    if (!snap.report)
      return {
          {"schema", "cardiac.status/v1"}, {"verdict", "UNKNOWN"}, {"message", "no sample yet"}};
    nlohmann::json j = health::to_json(*snap.report);
    const auto& k = s_.options.config.kmsg;
    if (k.enabled) {
      // Not part of the verdict (the GPUs are what it judges), but a person must see that
      // kernel-log faults are not being counted.
      nlohmann::json kl = {{"source", k.source}, {"readable", s_.kmsg_up.load()}};
      std::lock_guard lock(s_.kmsg_mu);
      if (!s_.kmsg_error.empty()) kl["error"] = s_.kmsg_error;
      j["kernel_log"] = std::move(kl);
    }
    return j;
  }

  bool healthy(std::string* why) override {
    Snapshot snap = copy();
    const auto& a = s_.options.config.agent;
    DurationNs stale = a.stale_after > 0 ? a.stale_after : std::max(5 * a.interval, 5 * kNsPerSec);
    // The first sample may take a worker start and an NVML init deadline.
    stale += s_.options.config.nvml.timeout;
    TimeNs now = SystemClock::instance().monotonic();
    if (snap.samples == 0) {
      if (why) *why = "no GPU sample yet";
      return now - started_ < stale;
    }
    if (snap.report && !snap.report->nvml.available) {
      // Sampling goes on, but it sees no GPU: a monitor that monitors nothing is not healthy.
      if (why) {
        *why = fmt::format("NVML unavailable ({}): {}", snap.report->nvml.error_kind,
                           snap.report->nvml.error);
      }
      return false;
    }
    if (now - snap.last_sample_mono > stale) {
      if (why) {
        *why = fmt::format("sampling stalled: last sample {} ago",
                           format_duration(now - snap.last_sample_mono));
      }
      return false;
    }
    return true;
  }

  Result<nlohmann::json> history(const server::HistoryQuery& q) override {
    store::HistoryQuery sq;
    sq.metric = q.metric;
    if (q.gpu) sq.gpu = static_cast<unsigned>(*q.gpu);
    sq.since = q.since;
    sq.until = q.until;
    sq.step = q.step;
    std::lock_guard lock(s_.reader_mu);
    CARDIAC_TRY(store::check_history_query(*s_.reader_db, sq));
    auto h = store::history(*s_.reader_db, sq);
    if (!h) return fail(h.error());
    nlohmann::json points = nlohmann::json::array();
    for (const auto& p : h->points) {
      points.push_back({{"time", format_iso8601(p.time)},
                        {"time_ns", p.time},
                        {"avg", p.avg},
                        {"min", p.min},
                        {"max", p.max},
                        {"count", p.count}});
    }
    return nlohmann::json{{"metric", q.metric},
                          {"resolution", store::resolution_name(h->resolution)},
                          {"points", std::move(points)}};
  }

  Result<nlohmann::json> events(TimeNs since, int limit) override {
    std::lock_guard lock(s_.reader_mu);
    auto evs = store::events_since(*s_.reader_db, since, static_cast<std::size_t>(limit));
    if (!evs) return fail(evs.error());
    nlohmann::json out = nlohmann::json::array();
    for (const auto& e : *evs) out.push_back(event_json(e));
    return out;
  }

  Result<nlohmann::json> alerts(bool include_resolved) override {
    std::lock_guard lock(s_.writer_mu);
    auto list = s_.alerts->list(include_resolved);
    if (!list) return fail(list.error());
    nlohmann::json out = nlohmann::json::array();
    for (const auto& a : *list) out.push_back(alerts::to_json(a));
    return out;
  }

  Result<nlohmann::json> ack_alert(std::int64_t id, const std::string& who) override {
    std::lock_guard lock(s_.writer_mu);
    auto a = s_.alerts->ack(id, who);
    if (!a) return fail(a.error());
    return alerts::to_json(*a);
  }

  Result<nlohmann::json> silence(const std::string& matcher, DurationNs duration,
                                 const std::string& who, const std::string& comment) override {
    std::lock_guard lock(s_.writer_mu);
    auto si = s_.alerts->add_silence(matcher, duration, who, comment);
    if (!si) return fail(si.error());
    return alerts::to_json(*si);
  }

  Result<nlohmann::json> queue() override {
    if (!s_.queue) return server::Backend::queue();
    return s_.queue->api_json();
  }

 private:
  Snapshot copy() {
    std::lock_guard lock(s_.snap_mu);
    return s_.snap;
  }
  AgentState& s_;
  TimeNs started_ = SystemClock::instance().monotonic();
};

}  // namespace

std::unique_ptr<server::Backend> make_backend(AgentState& s) {
  return std::make_unique<AgentBackend>(s);
}

}  // namespace cardiac::agent
