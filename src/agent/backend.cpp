// SPDX-License-Identifier: Apache-2.0
// The HTTP API over the agent's shared state. Reads come from the latest snapshot or the
// reader connection; nothing here calls NVML or waits for a sample.
#include "agent/backend.h"

#include <mutex>
#include <optional>

#include "alerts/alert_json.h"
#include "baseline/baseline.h"
#include "core/format.h"
#include "core/time.h"
#include "dashboard/fleet.h"
#include "dashboard/overview.h"
#include "fleet/read.h"
#include "health/report.h"
#include "metrics/exposition_cache.h"
#include "store/events.h"
#include "store/incidents.h"
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
  explicit AgentBackend(BackendParts p) : p_(p), started_(p.clock.monotonic()) {}

  std::shared_ptr<const std::string> metrics_text() override {
    Snapshot snap = copy();
    metrics::ExpositionInput in;
    in.report = snap.report.get();
    in.xid_counts = snap.faults.xid_counts;
    in.fault_counts = snap.faults.fault_counts;
    in.last_xid = snap.faults.last_xid;
    in.xids_watched = p_.options.config.kmsg.enabled;
    if (in.xids_watched) in.agent.kmsg_up = p_.kmsg.up() ? 1.0 : 0.0;
    in.agent.samples_total = snap.samples;
    in.agent.missed_samples_total = snap.missed_samples;
    in.agent.worker_restarts_total = snap.worker_restarts;
    if (snap.memory) {
      in.agent.heap_in_use_bytes = snap.memory->heap_in_use;  // absent: not glibc's malloc
      in.agent.heap_free_bytes = snap.memory->heap_free;
      in.agent.sqlite_memory_bytes = snap.memory->sqlite;
    }
    if (snap.samples > 0) {
      in.agent.sample_duration_seconds = snap.last_sample_seconds;
      in.agent.last_sample_timestamp_seconds = static_cast<double>(snap.last_sample_at) / 1e9;
    }
    if (p_.queue) in.queue = p_.queue->metrics();
    if (snap.report && p_.fs) in.config = p_.config_info.get(*p_.fs, *snap.report);
    metrics::ExpositionOptions opt;
    opt.hostname = p_.options.hostname;
    opt.compat_dcgm = p_.options.config.agent.metrics_compat == "dcgm";
    return exposition_.render(in, opt, snap.report);
  }

  nlohmann::json status() override {
    Snapshot snap = copy();
    if (!snap.report)
      return {
          {"schema", "cardiac.status/v1"}, {"verdict", "UNKNOWN"}, {"message", "no sample yet"}};
    nlohmann::json j = health::to_json(*snap.report);
    const auto& k = p_.options.config.kmsg;
    if (k.enabled) {
      // Not part of the verdict (the GPUs are what it judges), but a person must see that
      // kernel-log faults are not being counted.
      nlohmann::json kl = {{"source", k.source}, {"readable", p_.kmsg.up()}};
      if (auto error = p_.kmsg.error(); !error.empty()) kl["error"] = std::move(error);
      j["kernel_log"] = std::move(kl);
    }
    return j;
  }

  bool healthy(std::string* why) override {
    Snapshot snap = copy();
    const auto& a = p_.options.config.agent;
    DurationNs stale = a.stale_after > 0 ? a.stale_after : std::max(5 * a.interval, 5 * kNsPerSec);
    // The first sample may take a worker start and an NVML init deadline.
    stale += p_.options.config.nvml.timeout;
    TimeNs now = p_.clock.monotonic();
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
    auto h = p_.reader.with([&](store::Db& db) -> Result<store::History> {
      CARDIAC_TRY(store::check_history_query(db, sq));
      return store::history(db, sq);
    });
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
    auto evs = p_.reader.with([&](store::Db& db) {
      return store::events_since(db, since, static_cast<std::size_t>(limit));
    });
    if (!evs) return fail(evs.error());
    nlohmann::json out = nlohmann::json::array();
    for (const auto& e : *evs) out.push_back(event_json(e));
    return out;
  }

  Result<nlohmann::json> alerts(bool include_resolved) override {
    auto list =
        p_.store.with([&](AgentStore::Access& a) { return a.alerts.list(include_resolved); });
    if (!list) return fail(list.error());
    nlohmann::json out = nlohmann::json::array();
    for (const auto& a : *list) out.push_back(alerts::to_json(a));
    return out;
  }

  Result<nlohmann::json> ack_alert(std::int64_t id, const std::string& who) override {
    auto a = p_.store.with([&](AgentStore::Access& s) { return s.alerts.ack(id, who); });
    if (!a) return fail(a.error());
    return alerts::to_json(*a);
  }

  Result<nlohmann::json> silence(const std::string& matcher, DurationNs duration,
                                 const std::string& who, const std::string& comment) override {
    auto si = p_.store.with([&](AgentStore::Access& s) {
      return s.alerts.add_silence(matcher, duration, who, comment);
    });
    if (!si) return fail(si.error());
    return alerts::to_json(*si);
  }

  Result<nlohmann::json> queue() override {
    if (!p_.queue) return server::Backend::queue();
    return p_.queue->api_json();
  }

  // Read on request from the Prometheus of [fleet], under its timeout. An answer (or an error)
  // is kept for a few seconds: every open dashboard asks on each refresh, and Prometheus should
  // not be read once per page. One read at a time; the others wait for it.
  Result<nlohmann::json> fleet() override {
    const config::FleetSettings& f = p_.options.config.fleet;
    if (f.prometheus.empty()) return server::Backend::fleet();
    std::lock_guard lock(fleet_mu_);
    if (fleet_answer_ && p_.clock.monotonic() - fleet_read_ < kFleetCacheAge) {
      return *fleet_answer_;
    }
    fleet_answer_ = read_fleet(f);
    fleet_read_ = p_.clock.monotonic();
    return *fleet_answer_;
  }

  Result<nlohmann::json> dashboard_overview() override {
    dashboard::OverviewInput in;
    in.now = p_.clock.now();
    in.hostname = p_.options.hostname;
    in.fleet = !p_.options.config.fleet.prometheus.empty();
    in.status = status();
    in.alerts = part(alerts(false));
    // The store gives events oldest first: read the whole day (up to the API's cap) and let
    // the view keep the newest.
    in.events = part(events(in.now - kEventSpan, kEventCap));
    in.incidents = part(incidents(in.now - kIncidentSpan));
    if (p_.queue) in.queue = part(p_.queue->api_json());
    return dashboard::overview(in);
  }

  Result<nlohmann::json> dashboard_chart(std::optional<int> gpu,
                                         const dashboard::ChartRange& range) override {
    dashboard::ChartInput in;
    in.gpu = gpu;
    in.range = range;
    in.until = p_.clock.now();
    Snapshot snap = copy();
    if (snap.report) {
      nlohmann::json st = health::to_json(*snap.report);
      if (!gpu) {
        in.now = st.value("host", nlohmann::json::object());
      } else {
        for (const auto& g : st.value("gpus", nlohmann::json::array())) {
          if (g.value("index", -1) == *gpu) in.now = g;
        }
      }
    }
    store::HistoryQuery q;
    if (gpu) q.gpu = static_cast<unsigned>(*gpu);
    q.since = dashboard::grid_start(in.until, range);
    q.until = in.until;
    q.step = range.step;
    // One reader-lock for all series: a chart is one consistent read, and the reader is not
    // taken and released a dozen times per request.
    auto read = p_.reader.with([&](store::Db& db) -> Result<bool> {
      if (gpu) {
        auto seen = store::has_gpu_series(db, "gpu_temperature", q.gpu.value());
        if (!seen) return fail(seen.error());
        if (!*seen && in.now.is_null()) {
          return fail(Error::not_found(fmt::format("no GPU {} in this agent's store", *gpu)));
        }
      }
      // The tail decoded once for the chart's series, not once per series.
      store::TailCache tail{
          .gpu = gpu ? std::int64_t{*gpu} : store::kHostGpu, .loaded = false, .series = {}};
      for (const auto& metric : dashboard::chart_metrics(!gpu)) {
        q.metric = metric;
        auto& series = in.series[metric];
        auto h = store::history(db, q, &tail);
        if (!h) {
          series.error = h.error().what();
          continue;
        }
        series.points.reserve(h->points.size());
        for (const auto& pt : h->points) series.points.push_back({pt.time, pt.avg, pt.min, pt.max});
      }
      return true;
    });
    if (!read) return fail(read.error());
    return dashboard::chart(in);
  }

 private:
  // How far back the overview's timeline reaches: a day of events, a week of incidents (open
  // ones whenever they started).
  static constexpr DurationNs kEventSpan = 24 * 3600 * kNsPerSec;
  static constexpr int kEventCap = 10000;
  static constexpr DurationNs kIncidentSpan = 7 * 24 * 3600 * kNsPerSec;

  static dashboard::Part part(Result<nlohmann::json> r) {
    return r ? dashboard::Part::ok(std::move(*r)) : dashboard::Part::failed(r.error().what());
  }

  Result<nlohmann::json> incidents(TimeNs since) {
    auto list = p_.reader.with([&](store::Db& db) { return store::incidents_since(db, since); });
    if (!list) return fail(list.error());
    nlohmann::json out = nlohmann::json::array();
    for (const auto& i : *list) {
      nlohmann::json j{{"id", i.id},
                       {"gpu", i.gpu},
                       {"kind", nvml::device_health_name(i.kind)},
                       {"started_ns", i.started_ns},
                       {"evidence", i.evidence}};
      if (i.ended_ns) j["ended_ns"] = *i.ended_ns;
      out.push_back(std::move(j));
    }
    return out;
  }

  static constexpr DurationNs kFleetCacheAge = 5 * kNsPerSec;

  // Every failure is 503 with its reason: the page shows the fleet as unreadable, never empty.
  Result<nlohmann::json> read_fleet(const config::FleetSettings& f) {
    auto unavailable = [](const Error& e) {
      return tl::unexpected(Error::unavailable(std::string(e.what())));
    };
    auto opts = fleet::prometheus_options(f.prometheus, f.timeout, f.bearer_token_file);
    if (!opts) return unavailable(opts.error().with_context("[fleet] bearer_token_file"));
    auto prom = fleet::Prometheus::connect(*opts);
    if (!prom) return unavailable(prom.error().with_context("[fleet] prometheus"));
    auto view = fleet::read_fleet(*prom, f.job);
    if (!view) return unavailable(view.error());
    return dashboard::fleet_answer(*view, p_.clock.now());
  }

  Snapshot copy() { return p_.snapshot.get(); }
  BackendParts p_;
  TimeNs started_;
  metrics::ExpositionCache exposition_;  // one render per sample, not per scrape
  std::mutex fleet_mu_;
  std::optional<Result<nlohmann::json>> fleet_answer_;
  TimeNs fleet_read_ = 0;  // monotonic
};

}  // namespace

std::shared_ptr<const metrics::ConfigLabels> ConfigInfo::get(const FileSystem& fs,
                                                             const health::StatusReport& r) {
  std::lock_guard lock(mu_);
  if (!labels_) {
    nvml::GpuSnapshot gpus = r.nvml;
    for (const auto& g : r.gpus) gpus.gpus.push_back(g.reading);
    labels_ = std::make_shared<const metrics::ConfigLabels>(
        metrics::config_labels(baseline::capture(fs, &gpus, r.nvml.taken_at)));
  }
  return labels_;
}

void ConfigInfo::reset() {
  std::lock_guard lock(mu_);
  labels_.reset();
}

std::unique_ptr<server::Backend> make_backend(BackendParts parts) {
  return std::make_unique<AgentBackend>(parts);
}

}  // namespace cardiac::agent
