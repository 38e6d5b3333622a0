// SPDX-License-Identifier: Apache-2.0
// Queue start-up, shutdown, the request dispatcher, the loop thread, the API and metrics.
#include "queue/queue.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "core/format.h"
#include "core/log.h"
#include "core/time.h"
#include "queue/share_inputs.h"
#include "queue/proc.h"
#include "queue/protocol.h"
#include "store/schema.h"

namespace cardiac::queue {

const std::vector<double>& wait_bounds_seconds() {
  static const std::vector<double> kBounds = {0.1, 1,    5,     15,    60,    300,
                                              900, 3600, 14400, 43200, 86400, 259200};
  return kBounds;
}

Queue::Queue(QueueOptions options, const Clock& clock, ViewSource view)
    : options_(std::move(options)), clock_(clock), view_(std::move(view)) {
  wait_counts_.assign(wait_bounds_seconds().size() + 1, 0);
}

Queue::~Queue() {
  stop();
}

Status Queue::start() {
  const auto& s = options_.settings;
  auto policy = sched::parse_policy(s.policy);
  if (!policy) {
    Error e = policy.error().with_context("[queue] policy");
    e.code = ErrorCode::kInvalidArgument;
    return fail(e);
  }
  policy_ = policy_config(*policy, s);
  auto auth = make_auth_policy(s.admin_group);
  if (!auth) return fail(auth.error());
  auth_ = *auth;

  std::error_code ec;
  std::filesystem::create_directories(jobs_dir(options_.state_dir), ec);
  if (ec) {
    return fail(Error::invalid(fmt::format("cannot create the jobs directory: {}", ec.message()),
                               jobs_dir(options_.state_dir)));
  }
  // Readable by nobody else: the spec files hold environments, the logs are private.
  ::chmod(jobs_dir(options_.state_dir).c_str(), 0700);
  auto db = store::open_store(options_.state_dir + "/cardiac.db");
  if (!db) return fail(db.error());
  {
    std::lock_guard lock(mu_);
    db_.emplace(std::move(*db));
    adopt();
  }
  inotify_fd_ = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (inotify_fd_ >= 0) {
    inotify_add_watch(inotify_fd_, jobs_dir(options_.state_dir).c_str(), IN_MOVED_TO);
  }
  if (pipe2(wake_pipe_, O_CLOEXEC | O_NONBLOCK) != 0) return fail(Error::io("pipe", errno));
  server_ = std::make_unique<SocketServer>(
      socket_path(options_.state_dir),
      [this](const Principal& who, const nlohmann::json& req) { return handle(who, req); });
  CARDIAC_TRY(server_->start());
  started_ = true;
  thread_ = std::thread([this] { run_loop(); });
  log::info("queue: policy {}, socket {}", s.policy, socket_path(options_.state_dir));
  return {};
}

void Queue::stop() {
  if (stopping_.exchange(true)) return;
  if (server_) server_->stop();
  wake();
  if (thread_.joinable()) thread_.join();
  for (int fd : {inotify_fd_, wake_pipe_[0], wake_pipe_[1]}) {
    if (fd >= 0) ::close(fd);
  }
  inotify_fd_ = wake_pipe_[0] = wake_pipe_[1] = -1;
}

void Queue::wake() {
  if (wake_pipe_[1] >= 0) (void)!::write(wake_pipe_[1], "w", 1);
}

void Queue::run_loop() {
  const int tick_ms = static_cast<int>(options_.tick / kNsPerMs);
  while (!stopping_) {
    tick();
    pollfd fds[2] = {{wake_pipe_[0], POLLIN, 0}, {inotify_fd_, POLLIN, 0}};
    int n = poll(fds, inotify_fd_ >= 0 ? 2 : 1, tick_ms);
    if (n > 0) {
      char buf[4096];
      while (::read(wake_pipe_[0], buf, sizeof(buf)) > 0) {
      }
      if (inotify_fd_ >= 0) {
        while (::read(inotify_fd_, buf, sizeof(buf)) > 0) {
        }
      }
    }
  }
}

nlohmann::json Queue::handle(const Principal& who, const nlohmann::json& req) {
  if (auto st = may_use(auth_, who); !st) return error_response(st.error());
  std::string op = req.value("op", std::string());
  Result<nlohmann::json> r = fail(Error::invalid(fmt::format("unknown op '{}'", op)));
  if (op == "submit") {
    // Waiting for the first GPU sample happens without the lock, in real time (the sampler
    // runs in real time whatever clock the queue is given).
    const Clock& real = SystemClock::instance();
    TimeNs until = real.monotonic() + options_.first_sample_wait;
    while (view_ && !view_().report && real.monotonic() < until && !stopping_) {
      timespec ts{0, 20 * kNsPerMs};
      nanosleep(&ts, nullptr);
    }
  }
  bool woke = false;
  {
    std::lock_guard lock(mu_);
    if (!db_) return error_response(Error::unavailable("the queue is not started"));
    if (op == "submit") {
      r = op_submit(who, req);
      woke = true;
    } else if (op == "list") {
      r = op_list(req);
    } else if (op == "jobs") {
      r = op_jobs(req);
    } else if (op == "cancel") {
      r = op_cancel(who, req);
      woke = true;
    } else if (op == "hold" || op == "release") {
      r = op_hold(who, req, op == "hold");
      woke = true;
    } else if (op == "logs") {
      r = op_logs(who, req);
    } else if (op == "why") {
      r = op_why(req);
    } else if (op == "share") {
      r = op_share();
    } else if (op == "fence") {
      r = op_fence(who, req);
      woke = true;
    } else if (op == "ping") {
      r = nlohmann::json{{"policy", options_.settings.policy},
                         {"agent_uid", auth_.agent_uid},
                         {"user", who.user},
                         {"admin", is_admin(auth_, who)}};
    }
  }
  if (woke) wake();
  if (!r) return error_response(r.error());
  return ok_response(std::move(*r));
}

Result<nlohmann::json> Queue::api_json() {
  std::lock_guard lock(mu_);
  if (!db_) return fail(Error::unavailable("the queue is not started"));
  auto counts = count_by_state(*db_);
  if (!counts) return fail(counts.error());
  auto list = op_list(nlohmann::json::object());
  if (!list) return fail(list.error());
  auto fences = list_fences(*db_, false);
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
  for (const auto& [gpu, who] : busy_outside_) outside[std::to_string(gpu)] = who;
  nlohmann::json alerting = nlohmann::json::object();
  for (const auto& [gpu, why] : alerting_) alerting[std::to_string(gpu)] = why;
  auto m = metrics_locked();
  return nlohmann::json{{"policy", options_.settings.policy},
                        {"counts", c},
                        {"jobs", (*list)["jobs"]},
                        {"fences", f},
                        {"busy_outside", outside},
                        {"critical_alerts", alerting},
                        {"gpus_allocated", m.gpus_allocated},
                        {"gpus_allocated_idle", m.gpus_allocated_idle},
                        {"blocked", blocked_}};
}

metrics::QueueMetrics Queue::metrics() {
  std::lock_guard lock(mu_);
  return metrics_locked();
}

metrics::QueueMetrics Queue::metrics_locked() {
  metrics::QueueMetrics m;
  if (!db_) return m;
  if (auto counts = count_by_state(*db_)) {
    for (const auto& [state, n] : *counts) {
      m.jobs_by_state[std::string(job_state_name(state))] = static_cast<double>(n);
    }
  }
  m.wait_bounds = wait_bounds_seconds();
  m.wait_counts = wait_counts_;
  m.wait_sum_seconds = wait_sum_;
  m.gpus_fenced = static_cast<double>(fenced_.size());
  if (auto usage = load_usage(*db_)) {
    for (const auto& [user, row] : *usage) m.user_gpu_seconds[user] = row.total_gpu_seconds;
  }
  std::set<unsigned> allocated;
  TimeNs now = clock_.now();
  if (auto running = jobs_in_states(*db_, {JobState::kRunning})) {
    for (const auto& j : *running) {
      for (unsigned g : j.gpu_indices) allocated.insert(g);
      // Running attempts count as they go, so the counter moves during a long job.
      if (j.start_ns && now > *j.start_ns) {
        m.user_gpu_seconds[j.user] += static_cast<double>(j.gpu_indices.size()) *
                                      static_cast<double>(now - *j.start_ns) / 1e9;
      }
    }
  }
  m.gpus_allocated = static_cast<double>(allocated.size());
  for (unsigned g : allocated) {
    auto it = utilization_.find(g);
    if (it != utilization_.end() && it->second < 10) m.gpus_allocated_idle += 1;
  }
  return m;
}

void Queue::adopt() {
  auto running = jobs_in_states(*db_, {JobState::kRunning});
  if (!running) {
    log::error("queue: cannot read running jobs: {}", running.error().what());
    return;
  }
  for (auto& j : *running) {
    if (!j.runner_pid) {
      // The agent died between recording the start and recording the runner: find it.
      if (auto found = find_runner(options_.state_dir, j.id, j.attempt)) {
        j.runner_pid = found->pid;
        j.runner_start = found->start_ticks;
        (void)update_job(*db_, j);
      }
    }
    if (j.runner_pid && process_alive(*j.runner_pid, j.runner_start.value_or(-1))) {
      log::info("queue: adopted job {} (runner pid {})", j.id, *j.runner_pid);
    }
  }
  // Runners that ended or vanished while no agent was watching are settled by the first tick.
}

}  // namespace cardiac::queue
