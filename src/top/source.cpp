// SPDX-License-Identifier: Apache-2.0
#include "top/source.h"

#include <pwd.h>

#include <filesystem>
#include <fstream>

#include <httplib.h>

#include "config/agent_config.h"
#include "core/format.h"
#include "core/strings.h"
#include "health/report.h"
#include "host/bounded.h"
#include "platform/fs.h"
#include "telemetry/gpu_collector.h"

namespace cardiac::top {
namespace {

// The agent is on this machine: an answer that takes longer than this means it is stuck, and
// the view samples for itself rather than wait.
constexpr DurationNs kAgentTimeout = 2 * kNsPerSec;
// The sparklines' first values, read from the agent's store once.
constexpr const char* kSeedSince = "10m";

nlohmann::json parse_body(const httplib::Result& r) {
  if (!r || r->status != 200) return nlohmann::json();
  return nlohmann::json::parse(r->body, nullptr, false);
}

const char* metric_name(Metric m) {
  switch (m) {
    case Metric::kUtil:
      return "gpu_utilization_gpu";
    case Metric::kMem:
      return "gpu_memory_used";
    case Metric::kTemp:
      return "gpu_temperature";
    case Metric::kPower:
      return "gpu_power_usage_mw";
  }
  return "";
}

}  // namespace

struct Source::Local {
  Local(const SourceOptions& o, const Clock& clock, std::shared_ptr<const FileSystem> fs)
      : host(std::move(fs)),
        collector(
            [&] {
              telemetry::GpuCollectorOptions c;
              c.nvml_lib = o.nvml_lib.empty() ? o.config.nvml.library : o.nvml_lib;
              c.timeout = o.timeout;
              return c;
            }(),
            clock) {}
  host::HostReader host;  // a frame a second: one kept thread for the host's reads
  telemetry::GpuCollector collector;
};

Source::Source(SourceOptions o, const Clock& clock)
    : o_(std::move(o)), clock_(clock), fs_(std::make_shared<RootFs>(o_.config.host.root)) {}
Source::~Source() = default;

Update Source::fetch() {
  std::string why_not;
  if (o_.use_agent) {
    if (auto u = from_agent(why_not)) {
      name_users(u->snapshot);
      return std::move(*u);
    }
  }
  Update u = from_local();
  if (!why_not.empty()) u.snapshot.notes.push_back(why_not + "; sampling locally");
  name_users(u.snapshot);
  return u;
}

std::optional<Update> Source::from_agent(std::string& why_not) {
  auto ep = config::agent_address(o_.config.agent.listen);
  if (!ep) {
    why_not = "agent.listen '" + o_.config.agent.listen + "' is not host:port";
    return std::nullopt;
  }
  const std::string where = fmt::format("{}:{}", ep->host, ep->port);
  if (!o_.config.agent.tls_cert.empty()) {
    why_not = "the agent at " + where + " serves TLS only";
    return std::nullopt;
  }
  httplib::Client cli(ep->host, ep->port);
  const DurationNs t = std::min(o_.timeout, kAgentTimeout);
  const auto secs = static_cast<time_t>(t / kNsPerSec);
  const auto usecs = static_cast<time_t>((t % kNsPerSec) / 1000);
  cli.set_connection_timeout(secs, usecs);
  cli.set_read_timeout(secs, usecs);
  cli.set_write_timeout(secs, usecs);
  // A connection per request: reusing one made each request wait about 40 ms here (the first
  // fetch, with its 4 history requests per GPU, took a second longer in top_e2e_tests).
  cli.set_keep_alive(false);
  if (const std::string token = config::agent_client_token(o_.config.agent, o_.state_dir);
      !token.empty())
    cli.set_bearer_token_auth(token);
  auto health = cli.Get("/healthz");
  if (!health) {
    why_not = "no agent at " + where;
    return std::nullopt;
  }
  // A stalled agent's verdicts are old: look for ourselves. NVML unusable is its verdict.
  if (health->status != 200 && !starts_with(health->body, "NVML unavailable")) {
    why_not = fmt::format("the agent at {} is not sampling ({})", where, trim(health->body));
    return std::nullopt;
  }
  auto status = parse_body(cli.Get("/api/v1/status"));
  if (!status.is_object() || !status.contains("gpus")) {
    why_not = "the agent at " + where + " has no sample yet";
    return std::nullopt;
  }
  Update u;
  u.snapshot = from_status_json(status);
  u.snapshot.source = "agent " + where;
  if (auto alerts = parse_body(cli.Get("/api/v1/alerts")); alerts.is_array()) {
    u.snapshot.alerts = alerts_from_json(alerts);
  } else {
    u.snapshot.notes.push_back("the agent at " + where + " did not list its alerts");
  }
  // 501: the agent runs no queue ([queue] enabled = false).
  if (auto queue = cli.Get("/api/v1/queue"); queue && queue->status == 200) {
    auto q = nlohmann::json::parse(queue->body, nullptr, false);
    u.snapshot.jobs = jobs_from_json(q);
    u.snapshot.queue_blocked = blocked_from_json(q);
  }
  if (!seeded_) {
    seeded_ = true;
    const auto step = fmt::format("{}ms", std::max<DurationNs>(o_.interval / kNsPerMs, 1000));
    for (const auto& g : u.snapshot.gpus) {
      for (Metric m : {Metric::kUtil, Metric::kMem, Metric::kTemp, Metric::kPower}) {
        auto h = parse_body(cli.Get(fmt::format("/api/v1/history?metric={}&gpu={}&since={}&step={}",
                                                metric_name(m), g.index, kSeedSince, step)));
        if (!h.is_object() || !h.contains("points") || !h["points"].is_array()) continue;
        for (const auto& p : h["points"]) {
          if (!p.is_object() || !p.contains("avg") || !p["avg"].is_number() ||
              !p.contains("time_ns") || !p["time_ns"].is_number_integer()) {
            continue;
          }
          double v = p["avg"].get<double>();
          if (m == Metric::kPower) v /= 1000.0;  // mW in the store, W on screen
          u.seed.push_back({g.index, m, p["time_ns"].get<TimeNs>(), v});
        }
      }
    }
  }
  return u;
}

Update Source::from_local() {
  if (!local_) local_ = std::make_unique<Local>(o_, clock_, fs_);
  nvml::GpuSnapshot gpus = local_->collector.sample();
  health::name_gpu_processes(*fs_, gpus);
  host::HostSnapshot host;
  if (auto snap = local_->host.collect(clock_.now(), o_.timeout)) {
    host = std::move(*snap);
  } else {
    host.taken_at = clock_.now();
    host.timed_out = true;
  }
  auto report = health::build_report(std::move(gpus), std::move(host), nullptr);
  Update u;
  u.snapshot = from_status_json(health::to_json(report));
  u.snapshot.source = "local sample";
  return u;
}

void Source::name_users(Snapshot& s) {
  for (auto& g : s.gpus) {
    for (auto& p : g.processes) {
      // A queue job's user, when the process belongs to one.
      if (s.jobs && starts_with(p.job, "cardiac ")) {
        for (const auto& j : *s.jobs) {
          if (p.job == fmt::format("cardiac {}", j.id)) p.user = j.user;
        }
      }
      if (!p.user.empty()) continue;
      auto text = fs_->read_file(fmt::format("/proc/{}/status", p.pid));
      if (!text) continue;
      auto uid = uid_from_proc_status(*text);
      if (!uid) continue;
      auto it = users_.find(*uid);
      if (it == users_.end()) {
        std::string name = std::to_string(*uid);
        passwd pw{};
        passwd* found = nullptr;
        std::vector<char> buf(4096);
        if (getpwuid_r(*uid, &pw, buf.data(), buf.size(), &found) == 0 && found) {
          name = found->pw_name;
        }
        it = users_.emplace(*uid, name).first;
      }
      p.user = it->second;
    }
  }
}

Poller::Poller(SourceOptions o, const Clock& clock)
    : interval_(o.interval), source_(std::move(o), clock), thread_([this] { run(); }) {}

Poller::~Poller() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

std::optional<Update> Poller::take() {
  std::lock_guard lock(mu_);
  std::optional<Update> out = std::move(latest_);
  latest_.reset();
  return out;
}

void Poller::run() {
  while (true) {
    Update u;
    try {
      u = source_.fetch();
    } catch (const std::exception& e) {
      // Said on screen; an exception must not end this thread with the terminal still taken.
      u.snapshot.message = std::string("could not read the GPUs: ") + e.what();
      u.snapshot.notes.push_back(u.snapshot.message);
    }
    std::unique_lock lock(mu_);
    if (latest_) {
      // Not taken yet: keep its history seed with the newer snapshot.
      for (auto& p : latest_->seed) u.seed.push_back(p);
    }
    latest_ = std::move(u);
    // The pause is real time whatever clock the source was given.
    if (cv_.wait_for(lock, std::chrono::nanoseconds(interval_), [&] { return stop_; })) return;
  }
}

}  // namespace cardiac::top
