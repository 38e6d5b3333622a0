// SPDX-License-Identifier: Apache-2.0
// The queue's requests: submit, list, jobs, cancel, hold/release, logs, why, share, fence;
// the dispatcher and the API view.
#include "queue/queue_requests.h"

#include <fcntl.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>

#include "core/format.h"
#include "core/strings.h"
#include "core/time.h"
#include "core/units.h"
#include "nvml/pci.h"
#include "queue/cluster_view.h"
#include "queue/job_store.h"
#include "queue/runner.h"
#include "queue/share_inputs.h"

namespace cardiac::queue {
namespace {

constexpr std::int64_t kMaxLogChunk = 1 << 20;

Result<JobId> id_of(const nlohmann::json& req) {
  if (!req.contains("id") || !req["id"].is_number_integer() || req["id"].get<JobId>() <= 0) {
    return fail(Error::invalid("a job id (a positive integer) is required"));
  }
  return req["id"].get<JobId>();
}

std::string basename_of(const std::string& path) {
  return std::filesystem::path(path).filename().string();
}

}  // namespace

Result<nlohmann::json> Requests::handle(const std::string& op, const Principal& who,
                                        const nlohmann::json& req, bool& wakes) {
  wakes = op == "submit" || op == "cancel" || op == "hold" || op == "release" || op == "fence";
  if (op == "submit") return submit(who, req);
  if (op == "list") return list(req);
  if (op == "jobs") return jobs(req);
  if (op == "cancel") return cancel(who, req);
  if (op == "hold" || op == "release") return hold(who, req, op == "hold");
  if (op == "logs") return logs(who, req);
  if (op == "why") return why(req);
  if (op == "share") return share();
  if (op == "fence") return fence(who, req);
  if (op == "ping") {
    return nlohmann::json{{"policy", q_.options.settings.policy},
                          {"agent_uid", q_.auth.agent_uid},
                          {"user", who.user},
                          {"admin", is_admin(q_.auth, who)}};
  }
  wakes = false;
  return fail(Error::invalid(fmt::format("unknown op '{}'", op)));
}

Result<nlohmann::json> Requests::api() {
  auto counts = count_by_state(*q_.db);
  if (!counts) return fail(counts.error());
  auto rows = list(nlohmann::json::object());
  if (!rows) return fail(rows.error());
  auto fences = list_fences(*q_.db, false);
  if (!fences) return fail(fences.error());
  nlohmann::json c = nlohmann::json::object();
  for (const auto& [state, n] : *counts) c[std::string(job_state_name(state))] = n;
  nlohmann::json f = nlohmann::json::array();
  for (const auto& fe : *fences) {
    f.push_back({{"gpu", fe.gpu},
                 {"uuid", fe.uuid},
                 {"reason", fe.reason},
                 {"who", fe.who},
                 {"automatic", fe.automatic},
                 {"since", format_iso8601(fe.created_ns)}});
  }
  nlohmann::json outside = nlohmann::json::object();
  for (const auto& [gpu, who] : q_.busy_outside) outside[std::to_string(gpu)] = who;
  nlohmann::json alerting = nlohmann::json::object();
  for (const auto& [gpu, why] : q_.alerting) alerting[std::to_string(gpu)] = why;
  auto m = q_.metrics_locked();
  return nlohmann::json{{"policy", q_.options.settings.policy},
                        {"counts", c},
                        {"jobs", (*rows)["jobs"]},
                        {"fences", f},
                        {"busy_outside", outside},
                        {"critical_alerts", alerting},
                        {"gpus_allocated", m.gpus_allocated},
                        {"gpus_allocated_idle", m.gpus_allocated_idle},
                        {"blocked", q_.blocked}};
}

Result<Job> Requests::load_job(const nlohmann::json& req) {
  auto id = id_of(req);
  if (!id) return fail(id.error());
  auto j = get_job(*q_.db, *id);
  if (!j) return fail(j.error());
  if (!*j) return fail(Error::not_found(fmt::format("no job {}", *id)));
  return std::move(**j);
}

nlohmann::json Requests::job_row(const Job& j) {
  nlohmann::json row = to_json(j);
  if (j.state == JobState::kPending || j.state == JobState::kHeld) {
    if (j.state == JobState::kHeld) {
      row["why"] = j.reason.empty() ? "held" : j.reason;
    } else if (auto why = q_.reason(j.id)) {
      row["why"] = std::move(*why);
    } else if (!q_.blocked.empty()) {
      row["why"] = q_.blocked;
    } else {
      row["why"] = "waiting for the next scheduling pass";
    }
    for (std::size_t i = 0; i < q_.last.order.size(); ++i) {
      if (q_.last.order[i] == j.id) row["position"] = i + 1;
    }
  }
  return row;
}

Result<nlohmann::json> Requests::submit(const Principal& who, const nlohmann::json& req) {
  auto r = parse_submit(req.contains("job") ? req["job"] : nlohmann::json());
  if (!r) return fail(r.error());
  CARDIAC_TRY(may_set_priority(q_.auth, who, r->priority));
  for (JobId dep : r->after) {
    auto d = get_job(*q_.db, dep);
    if (!d) return fail(d.error());
    if (!*d) return fail(Error::invalid(fmt::format("--after {}: no such job", dep)));
  }
  Job j;
  j.user = who.user;
  j.uid = who.uid;
  j.gid = who.gid;
  j.groups = who.groups;
  j.name = r->name.empty() ? basename_of(r->argv[0]) : r->name;
  j.argv = std::move(r->argv);
  j.env = std::move(r->env);
  j.cwd = r->cwd;
  j.gpus = r->gpus;
  j.gpu_mem = r->gpu_mem;
  j.shared = r->shared;
  j.priority = r->priority;
  j.time_limit = r->time_limit;
  j.after = r->after;
  auto account = resolve_account(q_.options.settings, who.user, r->account);
  if (!account) return fail(account.error());
  j.account = std::move(*account);
  // Impossible requests are refused here, not left pending forever; one too large for the
  // GPUs not fenced now is queued with a warning (it starts once they are healthy again).
  MachineView view = q_.machine();
  if (view.report && !view.report->nvml.available && !view.gpus_seen) {
    return fail(Error::unavailable(
        fmt::format("no GPU has been seen since the agent started: NVML is unavailable ({}: {}); "
                    "the job could never start",
                    view.report->nvml.error_kind, view.report->nvml.error)));
  }
  std::string warning;
  if (view.report && view.report->nvml.available) {
    ClusterInput in;
    in.report = view.report.get();
    in.count_outside = false;
    in.hostname = q_.options.hostname;
    auto v = build_cluster(in);
    if (auto ok = sched::feasible(v.cluster, to_sched_job(j)); !ok) {
      return fail(Error::invalid("this job can never run here: " + ok.error().message));
    }
    for (auto& g : v.cluster.nodes.front().gpus) {
      if (q_.fenced.count(g.index)) g.health = sched::GpuHealth::kFenced;
    }
    if (auto ok = sched::fits_healthy(v.cluster, to_sched_job(j)); !ok) {
      warning = ok.error().message + ": it waits until enough GPUs are healthy again";
    }
  }
  CARDIAC_TRY(q_.jobs->submit(j));
  nlohmann::json reply{{"id", j.id}, {"job", to_json(j)}};
  if (!warning.empty()) reply["warning"] = warning;
  return reply;
}

Result<nlohmann::json> Requests::list(const nlohmann::json& req) {
  auto jobs = jobs_in_states(*q_.db, {JobState::kRunning, JobState::kPending, JobState::kHeld});
  if (!jobs) return fail(jobs.error());
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& j : *jobs) rows.push_back(job_row(j));
  if (req.value("all", false)) {
    auto ended = jobs_ended_since(*q_.db, 0, 1000);
    if (!ended) return fail(ended.error());
    for (const auto& j : *ended) rows.push_back(job_row(j));
  }
  return nlohmann::json{{"jobs", std::move(rows)}, {"blocked", q_.blocked}};
}

Result<nlohmann::json> Requests::jobs(const nlohmann::json& req) {
  TimeNs since = req.value("since_ns", TimeNs{0});
  auto limit = req.value("limit", std::int64_t{10000});
  auto jobs =
      jobs_ended_since(*q_.db, since, static_cast<std::size_t>(std::max<std::int64_t>(limit, 1)));
  if (!jobs) return fail(jobs.error());
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& j : *jobs) rows.push_back(to_json(j));
  return nlohmann::json{{"jobs", std::move(rows)}};
}

Result<nlohmann::json> Requests::cancel(const Principal& who, const nlohmann::json& req) {
  if (!req.contains("ids") || !req["ids"].is_array() || req["ids"].empty()) {
    return fail(Error::invalid("at least one job id is required"));
  }
  nlohmann::json results = nlohmann::json::array();
  std::optional<Error> only_error;
  for (const auto& idj : req["ids"]) {
    auto one = [&]() -> Result<std::string> {
      auto j = load_job({{"id", idj}});
      if (!j) return fail(j.error());
      CARDIAC_TRY(may_control(q_.auth, who, *j, "cancel"));
      std::string reason = "cancelled by " + who.user;
      switch (j->state) {
        case JobState::kPending:
        case JobState::kHeld:
          CARDIAC_TRY(q_.jobs->cancel(*j, reason));
          return std::string("cancelled");
        case JobState::kRunning:
          if (j->stop_action != StopAction::kCancel) q_.stop_job(*j, StopAction::kCancel, reason);
          return std::string("cancelling");
        default:
          return fail(Error::invalid(
              fmt::format("job {} already ended ({})", j->id, job_state_name(j->state))));
      }
    }();
    if (one) {
      results.push_back({{"id", idj}, {"ok", true}, {"state", *one}});
    } else {
      results.push_back({{"id", idj}, {"ok", false}, {"error", one.error().what()}});
      only_error = one.error();
    }
  }
  if (req["ids"].size() == 1 && only_error) return fail(*only_error);
  return nlohmann::json{{"results", std::move(results)}};
}

Result<nlohmann::json> Requests::hold(const Principal& who, const nlohmann::json& req, bool hold) {
  auto j = load_job(req);
  if (!j) return fail(j.error());
  CARDIAC_TRY(may_control(q_.auth, who, *j, hold ? "hold" : "release"));
  if (hold) {
    if (j->state != JobState::kPending) {
      return fail(Error::invalid(fmt::format(
          "job {} is {}: only pending jobs can be held{}", j->id, job_state_name(j->state),
          j->state == JobState::kRunning ? " (cancel a running one)" : "")));
    }
    CARDIAC_TRY(q_.jobs->hold(*j, "held by " + who.user));
  } else {
    if (j->state != JobState::kHeld) {
      return fail(
          Error::invalid(fmt::format("job {} is {}, not held", j->id, job_state_name(j->state))));
    }
    CARDIAC_TRY(q_.jobs->release(*j));
  }
  return nlohmann::json{{"job", to_json(*j)}};
}

Result<nlohmann::json> Requests::logs(const Principal& who, const nlohmann::json& req) {
  auto j = load_job(req);
  if (!j) return fail(j.error());
  CARDIAC_TRY(may_read_logs(q_.auth, who, *j));
  std::string stream = req.value("stream", std::string("out"));
  if (stream != "out" && stream != "err") return fail(Error::invalid("stream is out or err"));
  auto offset = req.value("offset", std::int64_t{0});
  auto max = std::clamp<std::int64_t>(req.value("max", kMaxLogChunk), 1, kMaxLogChunk);
  if (offset < 0) return fail(Error::invalid("offset must not be negative"));
  const JobPaths paths = job_paths(q_.options.state_dir, j->id);
  const std::string& path = stream == "out" ? paths.out : paths.err;
  std::string data;
  std::int64_t size = 0;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd >= 0) {
    size = ::lseek(fd, 0, SEEK_END);
    if (offset < size) {
      data.resize(static_cast<std::size_t>(std::min(max, size - offset)));
      ssize_t n = ::pread(fd, data.data(), data.size(), offset);
      data.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
    }
    ::close(fd);
  }
  std::int64_t next = offset + static_cast<std::int64_t>(data.size());
  return nlohmann::json{{"data", std::move(data)},
                        {"offset", next},
                        {"size", size},
                        {"state", job_state_name(j->state)},
                        {"done", is_terminal(j->state) && next >= size}};
}

Result<nlohmann::json> Requests::why(const nlohmann::json& req) {
  auto j = load_job(req);
  if (!j) return fail(j.error());
  std::vector<std::string> lines;
  switch (j->state) {
    case JobState::kRunning:
      lines.push_back(fmt::format("running since {} on GPU {} (attempt {})",
                                  format_iso8601(j->start_ns.value_or(0)),
                                  fmt::join(j->gpu_indices, ", "), j->attempt));
      if (j->stop_action != StopAction::kNone) lines.push_back("being stopped: " + j->reason);
      break;
    case JobState::kHeld:
      lines.push_back(fmt::format("held ({}): `cardiac release {}` lets it run", j->reason, j->id));
      break;
    case JobState::kPending: {
      auto why = q_.reason(j->id);
      lines.push_back(why                  ? std::move(*why)
                      : q_.blocked.empty() ? "waiting for the next scheduling pass"
                                           : q_.blocked);
      for (std::size_t i = 0; i < q_.last.order.size(); ++i) {
        if (q_.last.order[i] != j->id) continue;
        lines.push_back(fmt::format("position {} of {} in the {} order", i + 1,
                                    q_.last.order.size(), q_.options.settings.policy));
      }
      for (const auto& p : q_.last.priorities) {
        if (p.job != j->id) continue;
        lines.push_back(fmt::format(
            "priority {:.1f} = age {:.1f} + fair share {:.1f} + size {:.1f} + qos {:.1f}", p.total,
            p.age, p.fairshare, p.job_size, p.qos));
      }
      if (!j->after.empty()) {
        lines.push_back(
            fmt::format("starts only after job {} completed", fmt::join(j->after, ", ")));
      }
      break;
    }
    default:
      lines.push_back(fmt::format("ended {} at {}{}", job_state_name(j->state),
                                  format_iso8601(j->end_ns.value_or(0)),
                                  j->reason.empty() ? "" : ": " + j->reason));
  }
  if (j->restarts > 0) {
    lines.push_back(fmt::format("requeued {} time(s) (retry limit {})", j->restarts,
                                q_.options.settings.retry_limit));
  }
  if (j->state == JobState::kPending) {
    for (const auto& [gpu, why] : q_.fenced) lines.push_back(fmt::format("GPU {}: {}", gpu, why));
    for (const auto& [gpu, who] : q_.busy_outside) {
      lines.push_back(fmt::format("GPU {} is busy outside the queue: {}", gpu, who));
    }
    for (const auto& [gpu, why] : q_.alerting) {
      lines.push_back(fmt::format("GPU {} has a critical alert firing (used last): {}", gpu, why));
    }
  }
  auto attempts = attempts_of(*q_.db, j->id);
  if (!attempts) return fail(attempts.error());
  nlohmann::json a = nlohmann::json::array();
  for (const auto& at : *attempts) a.push_back(to_json(at));
  nlohmann::json out{{"job", to_json(*j, true)}, {"explanation", lines}, {"attempts", a}};
  if (j->state == JobState::kPending) {
    for (const auto& p : q_.last.priorities) {
      if (p.job != j->id) continue;
      out["priority"] = {{"total", p.total},
                         {"age", p.age},
                         {"fairshare", p.fairshare},
                         {"job_size", p.job_size},
                         {"qos", p.qos},
                         {"age_factor", p.age_factor},
                         {"fairshare_factor", p.fairshare_factor},
                         {"job_size_factor", p.job_size_factor},
                         {"qos_factor", p.qos_factor}};
    }
  }
  return out;
}

Result<nlohmann::json> Requests::share() {
  TimeNs now = q_.clock.now();
  std::vector<std::string> users;
  auto active = jobs_in_states(*q_.db, {JobState::kRunning, JobState::kPending, JobState::kHeld});
  if (!active) return fail(active.error());
  for (const auto& j : *active) users.push_back(j.user);
  auto rows =
      sched::shares(usage_now(*q_.db, q_.policy, q_.options.settings, now), q_.policy, users);
  nlohmann::json out = nlohmann::json::array();
  for (const auto& r : rows) {
    out.push_back(
        {{"account", r.account},
         {"user", r.user},
         {"raw_shares", r.raw_shares},
         {"norm_shares", r.norm_shares},
         {"raw_usage", r.raw_usage},
         {"norm_usage", r.norm_usage},
         {"level_fs", std::isinf(r.level_fs) ? nlohmann::json("inf") : nlohmann::json(r.level_fs)},
         {"factor", r.factor},
         {"depth", r.depth}});
  }
  return nlohmann::json{
      {"policy", q_.options.settings.policy}, {"fair_tree", q_.policy.fair_tree}, {"rows", out}};
}

Result<nlohmann::json> Requests::fence(const Principal& who, const nlohmann::json& req) {
  std::string action = req.value("action", std::string("list"));
  auto fence_json = [](const Fence& f) {
    return nlohmann::json{{"id", f.id},
                          {"gpu", f.gpu},
                          {"uuid", f.uuid},
                          {"reason", f.reason},
                          {"who", f.who},
                          {"automatic", f.automatic},
                          {"since", format_iso8601(f.created_ns)},
                          {"cleared", f.cleared_ns ? nlohmann::json(format_iso8601(*f.cleared_ns))
                                                   : nlohmann::json()},
                          {"cleared_by", f.cleared_by}};
  };
  if (action == "list") {
    auto fences = list_fences(*q_.db, req.value("all", false));
    if (!fences) return fail(fences.error());
    nlohmann::json rows = nlohmann::json::array();
    for (const auto& f : *fences) rows.push_back(fence_json(f));
    return nlohmann::json{{"fences", rows}};
  }
  if (action != "add" && action != "clear") {
    return fail(Error::invalid(fmt::format("unknown fence action '{}'", action)));
  }
  CARDIAC_TRY(may_fence(q_.auth, who));
  std::string gpu = req.value("gpu", std::string());
  if (gpu.empty()) return fail(Error::invalid("a GPU (index or UUID) is required"));
  // Resolve against the latest sample: an index or a UUID.
  MachineView view = q_.machine();
  std::optional<unsigned> index;
  std::string uuid;
  if (auto n = parse_u64(gpu)) index = static_cast<unsigned>(*n);
  if (view.report) {
    bool found = false;
    for (const auto& g : view.report->gpus) {
      if ((index && g.reading.index == *index) || (!index && g.reading.uuid == gpu)) {
        index = g.reading.index;
        uuid = g.reading.uuid;
        found = true;
      }
    }
    if (!found && action == "add") {
      return fail(Error::invalid(
          fmt::format("no GPU '{}' on this machine ({} GPUs)", gpu, view.report->gpus.size())));
    }
  }
  if (!index) {
    if (gpu.rfind("GPU-", 0) != 0) return fail(Error::invalid("a GPU is an index or a UUID"));
    uuid = gpu;
    index = 0;
  }
  TimeNs now = q_.clock.now();
  if (action == "add") {
    std::string reason = req.value("reason", std::string());
    if (reason.empty()) return fail(Error::invalid("a reason is required (--reason)"));
    Fence f{0, *index, uuid, reason, who.user, false, now, std::nullopt, ""};
    auto id = add_fence(*q_.db, f);
    if (!id) return fail(id.error());
    f.id = *id;
    if (q_.options.on_fence)
      q_.options.on_fence({true, *index, uuid, reason, who.user, false, now});
    return nlohmann::json{{"fence", fence_json(f)}};
  }
  auto n = clear_fences(*q_.db, *index, uuid, who.user, now);
  if (!n) return fail(n.error());
  if (*n == 0) return fail(Error::not_found(fmt::format("GPU {} has no active fence", gpu)));
  if (q_.options.on_fence) {
    q_.options.on_fence(
        {false, *index, uuid, fmt::format("cleared by {}", who.user), who.user, false, now});
  }
  nlohmann::json out{{"cleared", *n}};
  if (!view.report) return out;
  for (const auto& g : view.report->gpus) {
    if (g.reading.index != *index) continue;
    // The Xids seen so far are dealt with by this clear; only new ones fence it again.
    std::string bus = nvml::normalize_pci_bus_id(g.reading.pci_bus_id);
    for (const auto& [key, count] : view.xid_counts) {
      if (!bus.empty() && nvml::normalize_pci_bus_id(key.first) == bus) q_.xid_acked[key] = count;
    }
    if (auto why = critical_finding(g.reading, {})) {
      out["warning"] = "still critical, so it will be fenced again: " + *why;
    }
  }
  return out;
}

}  // namespace cardiac::queue
