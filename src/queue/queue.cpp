// SPDX-License-Identifier: Apache-2.0
// The Queue facade: start-up, shutdown, the socket, the loop thread, and the lock around the
// request handlers (queue_requests.cpp) and the scheduling loop (queue_loop.cpp); the state
// they share and the metrics.
#include "queue/queue.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <set>
#include <thread>

#include "core/format.h"
#include "core/log.h"
#include "core/thread_name.h"
#include "core/time.h"
#include "queue/job_store.h"
#include "queue/proc.h"
#include "queue/protocol.h"
#include "queue/queue_loop.h"
#include "queue/queue_requests.h"
#include "queue/queue_shared.h"
#include "queue/runner.h"
#include "queue/share_inputs.h"
#include "queue/socket_server.h"
#include "store/schema.h"

namespace cardiac::queue {

const std::vector<double>& wait_bounds_seconds() {
  static const std::vector<double> kBounds = {0.1, 1,    5,     15,    60,    300,
                                              900, 3600, 14400, 43200, 86400, 259200};
  return kBounds;
}

QueueShared::QueueShared(QueueOptions o, const Clock& c, ViewSource v)
    : options(std::move(o)), clock(c), view(std::move(v)) {
  wait_counts.assign(wait_bounds_seconds().size() + 1, 0);
}

std::optional<std::string> QueueShared::reason(JobId id) const {
  if (auto it = reasons.find(id); it != reasons.end()) return it->second;
  return last.reasons.text(id);
}

MachineView QueueShared::machine() const {
  return view ? view() : MachineView{};
}

void QueueShared::stop_job(Job& j, StopAction action, const std::string& reason) {
  if (auto st = jobs->request_stop(j, action, reason); !st) {
    log::error("queue: job {}: {}", j.id, st.error().what());
    return;
  }
  if (j.runner_pid && process_alive(*j.runner_pid, j.runner_start.value_or(-1))) {
    ::kill(*j.runner_pid, SIGTERM);
  }
  log::info("queue: stopping job {} ({}): {}", j.id, stop_action_name(action), reason);
}

metrics::QueueMetrics QueueShared::metrics_locked() {
  metrics::QueueMetrics m;
  if (!db) return m;
  StoredMetrics& s = stored_metrics;
  if (s.changes != db->total_changes()) {
    s = {};
    bool read = true;
    if (auto counts = count_by_state(*db)) {
      for (const auto& [state, n] : *counts) {
        s.jobs_by_state[std::string(job_state_name(state))] = static_cast<double>(n);
      }
    } else {
      read = false;
    }
    if (auto usage = load_usage(*db)) {
      for (const auto& [user, row] : *usage) s.usage[user] = row.total_gpu_seconds;
    } else {
      read = false;
    }
    if (auto running = jobs_in_states(*db, {JobState::kRunning})) {
      s.running = std::move(*running);
    } else {
      read = false;
    }
    // A failed read is tried again at the next scrape.
    if (read) s.changes = db->total_changes();
  }
  m.jobs_by_state = s.jobs_by_state;
  m.user_gpu_seconds = s.usage;
  m.wait_bounds = wait_bounds_seconds();
  m.wait_counts = wait_counts;
  m.wait_sum_seconds = wait_sum;
  m.gpus_fenced = static_cast<double>(fenced.size());
  std::set<unsigned> allocated;
  TimeNs now = clock.now();
  for (const auto& j : s.running) {
    for (unsigned g : j.gpu_indices) {
      allocated.insert(g);
      m.gpu_jobs[g].push_back(j.id);
    }
    // Running attempts count as they go, so the counter moves during a long job.
    if (j.start_ns && now > *j.start_ns) {
      m.user_gpu_seconds[j.user] +=
          static_cast<double>(j.gpu_indices.size()) * static_cast<double>(now - *j.start_ns) / 1e9;
    }
  }
  m.gpus_allocated = static_cast<double>(allocated.size());
  for (unsigned g : allocated) {
    auto it = utilization.find(g);
    if (it != utilization.end() && it->second < 10) m.gpus_allocated_idle += 1;
  }
  return m;
}

struct Queue::Impl {
  Impl(QueueOptions o, const Clock& c, ViewSource v)
      : shared(std::move(o), c, std::move(v)), requests(shared), loop(shared) {}

  void wake() {
    if (wake_pipe[1] >= 0) (void)!::write(wake_pipe[1], "w", 1);
  }
  void run_loop();

  QueueShared shared;
  Requests requests;
  SchedulingLoop loop;
  std::unique_ptr<SocketServer> server;
  std::thread thread;
  std::atomic<bool> stopping{false};
  int inotify_fd = -1;
  int wake_pipe[2] = {-1, -1};
};

Queue::Queue(QueueOptions options, const Clock& clock, ViewSource view)
    : impl_(std::make_unique<Impl>(std::move(options), clock, std::move(view))) {}

Queue::~Queue() {
  stop();
}

Status Queue::start() {
  QueueShared& q = impl_->shared;
  const auto& s = q.options.settings;
  auto policy = sched::parse_policy(s.policy);
  if (!policy) {
    Error e = policy.error().with_context("[queue] policy");
    e.code = ErrorCode::kInvalidArgument;
    return fail(e);
  }
  q.policy = policy_config(*policy, s);
  auto auth = make_auth_policy(s.admin_group);
  if (!auth) return fail(auth.error());
  q.auth = *auth;

  const std::string& state_dir = q.options.state_dir;
  std::error_code ec;
  std::filesystem::create_directories(jobs_dir(state_dir), ec);
  if (ec) {
    return fail(Error::invalid(fmt::format("cannot create the jobs directory: {}", ec.message()),
                               jobs_dir(state_dir)));
  }
  // Readable by nobody else: the spec files hold environments, the logs are private.
  ::chmod(jobs_dir(state_dir).c_str(), 0700);
  auto db = store::open_store(state_dir + "/cardiac.db", store::kept_options());
  if (!db) return fail(db.error());
  {
    std::lock_guard lock(q.mu);
    q.db.emplace(std::move(*db));
    LifecycleOptions lo;
    lo.retry_limit = s.retry_limit;
    lo.backoff = s.backoff;
    lo.charge = [&q](const Job& j, TimeNs end) {
      record_usage(*q.db, q.policy, q.options.settings, j, end, q.clock.now());
    };
    q.jobs.emplace(*q.db, q.clock, std::move(lo));
    impl_->loop.adopt();
  }
  int& inotify_fd = impl_->inotify_fd;
  inotify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (inotify_fd >= 0) inotify_add_watch(inotify_fd, jobs_dir(state_dir).c_str(), IN_MOVED_TO);
  if (pipe2(impl_->wake_pipe, O_CLOEXEC | O_NONBLOCK) != 0) return fail(Error::io("pipe", errno));
  impl_->server = std::make_unique<SocketServer>(
      socket_path(state_dir),
      [this](const Principal& who, const nlohmann::json& req) { return handle(who, req); });
  CARDIAC_TRY(impl_->server->start());
  impl_->thread = std::thread([this] {
    name_this_thread("cardiac-queue");
    impl_->run_loop();
  });
  log::info("queue: policy {}, socket {}", s.policy, socket_path(state_dir));
  return {};
}

void Queue::stop() {
  Impl& i = *impl_;
  if (i.stopping.exchange(true)) return;
  if (i.server) i.server->stop();
  i.wake();
  if (i.thread.joinable()) i.thread.join();
  for (int fd : {i.inotify_fd, i.wake_pipe[0], i.wake_pipe[1]}) {
    if (fd >= 0) ::close(fd);
  }
  i.inotify_fd = i.wake_pipe[0] = i.wake_pipe[1] = -1;
}

void Queue::Impl::run_loop() {
  const int tick_ms = static_cast<int>(shared.options.tick / kNsPerMs);
  bool woken = true;  // the first pass is always made
  while (!stopping) {
    loop.tick(woken);
    pollfd fds[2] = {{wake_pipe[0], POLLIN, 0}, {inotify_fd, POLLIN, 0}};
    int n = poll(fds, inotify_fd >= 0 ? 2 : 1, tick_ms);
    woken = n > 0;
    if (n > 0) {
      char buf[4096];
      while (::read(wake_pipe[0], buf, sizeof(buf)) > 0) {
      }
      if (inotify_fd >= 0) {
        while (::read(inotify_fd, buf, sizeof(buf)) > 0) {
        }
      }
    }
  }
}

void Queue::tick() {
  impl_->loop.tick();
}

nlohmann::json Queue::handle(const Principal& who, const nlohmann::json& req) {
  QueueShared& q = impl_->shared;
  if (auto st = may_use(q.auth, who); !st) return error_response(st.error());
  std::string op = req.value("op", std::string());
  if (op == "submit") {
    // Waits for the first GPU sample without the lock, in 20 ms naps counted against the
    // bound rather than timed on the queue's clock: the sampler runs in real time whatever
    // clock the queue is given.
    constexpr DurationNs kNap = 20 * kNsPerMs;
    for (DurationNs waited = 0;
         waited < q.options.first_sample_wait && !impl_->stopping && q.view && !q.view().report;
         waited += kNap) {
      timespec ts{0, kNap};
      nanosleep(&ts, nullptr);
    }
  }
  bool wakes = false;
  Result<nlohmann::json> r = nlohmann::json();
  {
    std::lock_guard lock(q.mu);
    if (!q.db) return error_response(Error::unavailable("the queue is not started"));
    r = impl_->requests.handle(op, who, req, wakes);
    impl_->loop.note_request();
  }
  if (wakes) impl_->wake();
  if (!r) return error_response(r.error());
  return ok_response(std::move(*r));
}

Result<nlohmann::json> Queue::api_json() {
  QueueShared& q = impl_->shared;
  std::lock_guard lock(q.mu);
  if (!q.db) return fail(Error::unavailable("the queue is not started"));
  return impl_->requests.api();
}

metrics::QueueMetrics Queue::metrics() {
  std::lock_guard lock(impl_->shared.mu);
  return impl_->shared.metrics_locked();
}

}  // namespace cardiac::queue
