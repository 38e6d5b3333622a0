// SPDX-License-Identifier: Apache-2.0
// The queue's requests: submit, list, jobs, cancel, hold/release, logs, why, share, fence.
#include <fcntl.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>

#include "core/format.h"
#include "core/strings.h"
#include "core/time.h"
#include "core/units.h"
#include "nvml/pci.h"
#include "queue/share_inputs.h"
#include "queue/queue.h"

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

Result<Job> Queue::load_job(const nlohmann::json& req) {
  auto id = id_of(req);
  if (!id) return fail(id.error());
  auto j = get_job(*db_, *id);
  if (!j) return fail(j.error());
  if (!*j) return fail(Error::not_found(fmt::format("no job {}", *id)));
  return std::move(**j);
}

nlohmann::json Queue::job_row(const Job& j) {
  nlohmann::json row = to_json(j);
  if (j.state == JobState::kPending || j.state == JobState::kHeld) {
    auto it = reasons_.find(j.id);
    if (j.state == JobState::kHeld) {
      row["why"] = j.reason.empty() ? "held" : j.reason;
    } else if (it != reasons_.end()) {
      row["why"] = it->second;
    } else if (!blocked_.empty()) {
      row["why"] = blocked_;
    } else {
      row["why"] = "waiting for the next scheduling pass";
    }
    for (std::size_t i = 0; i < last_.order.size(); ++i) {
      if (last_.order[i] == j.id) row["position"] = i + 1;
    }
  }
  return row;
}

Result<nlohmann::json> Queue::op_submit(const Principal& who, const nlohmann::json& req) {
  auto r = parse_submit(req.contains("job") ? req["job"] : nlohmann::json());
  if (!r) return fail(r.error());
  CARDIAC_TRY(may_set_priority(auth_, who, r->priority));
  for (JobId dep : r->after) {
    auto d = get_job(*db_, dep);
    if (!d) return fail(d.error());
    if (!*d) return fail(Error::invalid(fmt::format("--after {}: no such job", dep)));
  }
  Job j;
  j.state = JobState::kPending;
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
  auto account = resolve_account(options_.settings, who.user, r->account);
  if (!account) return fail(account.error());
  j.account = std::move(*account);
  // Impossible requests are refused here, not left pending forever; one too large for the
  // GPUs not fenced now is queued with a warning (it starts once they are healthy again).
  MachineView view = view_ ? view_() : MachineView{};
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
    in.hostname = options_.hostname;
    auto v = build_cluster(in);
    if (auto ok = sched::feasible(v.cluster, to_sched_job(j)); !ok) {
      return fail(Error::invalid("this job can never run here: " + ok.error().message));
    }
    for (auto& g : v.cluster.nodes.front().gpus) {
      if (fenced_.count(g.index)) g.health = sched::GpuHealth::kFenced;
    }
    if (auto ok = sched::fits_healthy(v.cluster, to_sched_job(j)); !ok) {
      warning = ok.error().message + ": it waits until enough GPUs are healthy again";
    }
  }
  j.submit_ns = clock_.now();
  auto tx = store::Transaction::begin(*db_);
  if (!tx) return fail(tx.error());
  auto id = insert_job(*db_, j);
  if (!id) return fail(id.error());
  CARDIAC_TRY(tx->commit());
  j.id = *id;
  nlohmann::json reply{{"id", j.id}, {"job", to_json(j)}};
  if (!warning.empty()) reply["warning"] = warning;
  return reply;
}

Result<nlohmann::json> Queue::op_list(const nlohmann::json& req) {
  auto jobs = jobs_in_states(*db_, {JobState::kRunning, JobState::kPending, JobState::kHeld});
  if (!jobs) return fail(jobs.error());
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& j : *jobs) rows.push_back(job_row(j));
  if (req.value("all", false)) {
    auto ended = jobs_ended_since(*db_, 0, 1000);
    if (!ended) return fail(ended.error());
    for (const auto& j : *ended) rows.push_back(job_row(j));
  }
  return nlohmann::json{{"jobs", std::move(rows)}, {"blocked", blocked_}};
}

Result<nlohmann::json> Queue::op_jobs(const nlohmann::json& req) {
  TimeNs since = req.value("since_ns", TimeNs{0});
  auto limit = req.value("limit", std::int64_t{10000});
  auto jobs =
      jobs_ended_since(*db_, since, static_cast<std::size_t>(std::max<std::int64_t>(limit, 1)));
  if (!jobs) return fail(jobs.error());
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& j : *jobs) rows.push_back(to_json(j));
  return nlohmann::json{{"jobs", std::move(rows)}};
}

Result<nlohmann::json> Queue::op_cancel(const Principal& who, const nlohmann::json& req) {
  if (!req.contains("ids") || !req["ids"].is_array() || req["ids"].empty()) {
    return fail(Error::invalid("at least one job id is required"));
  }
  nlohmann::json results = nlohmann::json::array();
  std::optional<Error> only_error;
  for (const auto& idj : req["ids"]) {
    auto one = [&]() -> Result<std::string> {
      auto j = load_job({{"id", idj}});
      if (!j) return fail(j.error());
      CARDIAC_TRY(may_control(auth_, who, *j, "cancel"));
      std::string reason = "cancelled by " + who.user;
      switch (j->state) {
        case JobState::kPending:
        case JobState::kHeld:
          j->state = JobState::kCancelled;
          j->end_ns = clock_.now();
          j->reason = reason;
          CARDIAC_TRY(update_job(*db_, *j));
          return std::string("cancelled");
        case JobState::kRunning:
          if (j->stop_action != StopAction::kCancel) stop_job(*j, StopAction::kCancel, reason);
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

Result<nlohmann::json> Queue::op_hold(const Principal& who, const nlohmann::json& req, bool hold) {
  auto j = load_job(req);
  if (!j) return fail(j.error());
  CARDIAC_TRY(may_control(auth_, who, *j, hold ? "hold" : "release"));
  if (hold) {
    if (j->state != JobState::kPending) {
      return fail(Error::invalid(fmt::format(
          "job {} is {}: only pending jobs can be held{}", j->id, job_state_name(j->state),
          j->state == JobState::kRunning ? " (cancel a running one)" : "")));
    }
    j->state = JobState::kHeld;
    j->reason = "held by " + who.user;
  } else {
    if (j->state != JobState::kHeld) {
      return fail(
          Error::invalid(fmt::format("job {} is {}, not held", j->id, job_state_name(j->state))));
    }
    j->state = JobState::kPending;
    j->reason.clear();
    // Age counts from the release: a held job accrues none (Slurm's accrue time).
    j->eligible_ns = clock_.now();
  }
  CARDIAC_TRY(update_job(*db_, *j));
  return nlohmann::json{{"job", to_json(*j)}};
}

Result<nlohmann::json> Queue::op_logs(const Principal& who, const nlohmann::json& req) {
  auto j = load_job(req);
  if (!j) return fail(j.error());
  CARDIAC_TRY(may_read_logs(auth_, who, *j));
  std::string stream = req.value("stream", std::string("out"));
  if (stream != "out" && stream != "err") return fail(Error::invalid("stream is out or err"));
  auto offset = req.value("offset", std::int64_t{0});
  auto max = std::clamp<std::int64_t>(req.value("max", kMaxLogChunk), 1, kMaxLogChunk);
  if (offset < 0) return fail(Error::invalid("offset must not be negative"));
  const JobPaths paths = job_paths(options_.state_dir, j->id);
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

Result<nlohmann::json> Queue::op_why(const nlohmann::json& req) {
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
      auto it = reasons_.find(j->id);
      lines.push_back(it != reasons_.end() ? it->second
                      : blocked_.empty()   ? "waiting for the next scheduling pass"
                                           : blocked_);
      for (std::size_t i = 0; i < last_.order.size(); ++i) {
        if (last_.order[i] != j->id) continue;
        lines.push_back(fmt::format("position {} of {} in the {} order", i + 1, last_.order.size(),
                                    options_.settings.policy));
      }
      for (const auto& p : last_.priorities) {
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
                                options_.settings.retry_limit));
  }
  if (j->state == JobState::kPending) {
    for (const auto& [gpu, why] : fenced_) lines.push_back(fmt::format("GPU {}: {}", gpu, why));
    for (const auto& [gpu, who] : busy_outside_) {
      lines.push_back(fmt::format("GPU {} is busy outside the queue: {}", gpu, who));
    }
    for (const auto& [gpu, why] : alerting_) {
      lines.push_back(fmt::format("GPU {} has a critical alert firing (used last): {}", gpu, why));
    }
  }
  auto attempts = attempts_of(*db_, j->id);
  if (!attempts) return fail(attempts.error());
  nlohmann::json a = nlohmann::json::array();
  for (const auto& at : *attempts) a.push_back(to_json(at));
  nlohmann::json out{{"job", to_json(*j, true)}, {"explanation", lines}, {"attempts", a}};
  if (j->state == JobState::kPending) {
    for (const auto& p : last_.priorities) {
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

Result<nlohmann::json> Queue::op_share() {
  TimeNs now = clock_.now();
  std::vector<std::string> users;
  auto active = jobs_in_states(*db_, {JobState::kRunning, JobState::kPending, JobState::kHeld});
  if (!active) return fail(active.error());
  for (const auto& j : *active) users.push_back(j.user);
  auto rows = sched::shares(usage_now(now), policy_, users);
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
      {"policy", options_.settings.policy}, {"fair_tree", policy_.fair_tree}, {"rows", out}};
}

Result<nlohmann::json> Queue::op_fence(const Principal& who, const nlohmann::json& req) {
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
    auto fences = list_fences(*db_, req.value("all", false));
    if (!fences) return fail(fences.error());
    nlohmann::json rows = nlohmann::json::array();
    for (const auto& f : *fences) rows.push_back(fence_json(f));
    return nlohmann::json{{"fences", rows}};
  }
  if (action != "add" && action != "clear") {
    return fail(Error::invalid(fmt::format("unknown fence action '{}'", action)));
  }
  CARDIAC_TRY(may_fence(auth_, who));
  std::string gpu = req.value("gpu", std::string());
  if (gpu.empty()) return fail(Error::invalid("a GPU (index or UUID) is required"));
  // Resolve against the latest sample: an index or a UUID.
  MachineView view = view_ ? view_() : MachineView{};
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
  TimeNs now = clock_.now();
  if (action == "add") {
    std::string reason = req.value("reason", std::string());
    if (reason.empty()) return fail(Error::invalid("a reason is required (--reason)"));
    Fence f{0, *index, uuid, reason, who.user, false, now, std::nullopt, ""};
    auto id = add_fence(*db_, f);
    if (!id) return fail(id.error());
    f.id = *id;
    if (options_.on_fence) options_.on_fence({true, *index, uuid, reason, who.user, false, now});
    return nlohmann::json{{"fence", fence_json(f)}};
  }
  auto n = clear_fences(*db_, *index, uuid, who.user, now);
  if (!n) return fail(n.error());
  if (*n == 0) return fail(Error::not_found(fmt::format("GPU {} has no active fence", gpu)));
  if (options_.on_fence) {
    options_.on_fence(
        {false, *index, uuid, fmt::format("cleared by {}", who.user), who.user, false, now});
  }
  nlohmann::json out{{"cleared", *n}};
  if (!view.report) return out;
  for (const auto& g : view.report->gpus) {
    if (g.reading.index != *index) continue;
    // The Xids seen so far are dealt with by this clear; only new ones fence it again.
    std::string bus = nvml::normalize_pci_bus_id(g.reading.pci_bus_id);
    for (const auto& [key, count] : view.xid_counts) {
      if (!bus.empty() && nvml::normalize_pci_bus_id(key.first) == bus) xid_acked_[key] = count;
    }
    if (auto why = critical_finding(g.reading, {})) {
      out["warning"] = "still critical, so it will be fenced again: " + *why;
    }
  }
  return out;
}

}  // namespace cardiac::queue
