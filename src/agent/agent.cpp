// SPDX-License-Identifier: Apache-2.0
// Agent start-up and shutdown.
#include "agent/agent.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "agent/agent_state.h"
#include "agent/api_token.h"
#include "agent/control.h"
#include "config/agent_config.h"
#include "core/format.h"
#include "core/log.h"
#include "platform/subprocess.h"
#include "queue/job_store.h"
#include "rules/defaults.h"
#include "rules/parse.h"
#include "server/params.h"
#include "store/access.h"
#include "store/schema.h"

namespace cardiac::agent {
namespace {

std::string local_hostname() {
  char buf[256] = {};
  if (gethostname(buf, sizeof(buf) - 1) != 0) return "localhost";
  return buf;
}

Result<std::vector<rules::Rule>> load_rules(const config::AgentSettings& a) {
  std::vector<rules::Rule> all;
  if (a.default_rules) {
    auto defaults = rules::default_rules();
    if (!defaults) return fail(defaults.error());
    all = std::move(*defaults);
  }
  if (!a.rules_file.empty()) {
    std::ifstream in(a.rules_file);
    if (!in) return fail(Error::io(a.rules_file, errno));
    std::stringstream text;
    text << in.rdbuf();
    auto extra = rules::parse_rules(text.str(), a.rules_file);
    if (!extra) return fail(extra.error());
    for (auto& r : *extra) all.push_back(std::move(r));
  }
  if (a.expected_gpus > 0) {
    auto r = rules::parse_rules(
        fmt::format("[[rule]]\nname = \"gpu_count_below_expected\"\nkind = \"absence\"\n"
                    "expected_gpus = {}\nfor = \"1m\"\n"
                    "severity = \"critical\"\nscope = \"host\"\n"
                    "description = \"fewer GPUs than the {} expected: {{value}} seen\"\n",
                    a.expected_gpus, a.expected_gpus),
        "[agent] expected_gpus");
    if (!r) return fail(r.error());
    for (auto& rule : *r) all.push_back(std::move(rule));
  }
  return all;
}

// The store holds every job's environment: the state directory and the store files are
// the agent user's alone (or readable by [agent] group), and a directory left too open by an
// older cardiac or by hand is tightened now.
Status secure_state(const config::Config& c) {
  std::optional<gid_t> gid;
  if (!c.agent.group.empty()) {
    auto g = store::group_id(c.agent.group);
    if (!g) return fail(g.error().with_context("[agent] group"));
    gid = *g;
  }
  // The queue's clients reach <state>/queue.sock by name, so they need search permission.
  auto changes =
      store::secure_state_dir(c.agent.state_dir, store::store_access(gid, c.queue.enabled));
  if (!changes) return fail(changes.error());
  for (const auto& change : *changes) log::warn("state directory permissions: {}", change);
  return {};
}

// The queue's view of the machine: the latest report, the Xids seen, whether any GPU was ever
// seen and the GPUs with a critical alert firing, from the snapshot.
queue::MachineView machine_view(AgentState& s) {
  std::lock_guard lock(s.snap_mu);
  return {s.snap.report, s.snap.xid_counts, s.snap.gpus_seen, s.snap.critical_alerts};
}

Status start_queue(AgentState& s) {
  const config::Config& c = s.options.config;
  if (!c.queue.enabled) return {};
  queue::QueueOptions q;
  q.state_dir = c.agent.state_dir;
  q.executable = s.options.executable;
  if (q.executable.empty()) {
    auto self = self_executable();
    if (!self) return fail(self.error());
    q.executable = *self;
  }
  q.settings = c.queue;
  q.hostname = s.options.hostname;
  // Fences become alerts on the sampler thread, which owns the alert book.
  q.on_fence = [&s](const queue::FenceNotice& n) {
    std::lock_guard lock(s.kmsg_mu);
    s.fence_queue.push_back(n);
  };
  s.queue = std::make_unique<queue::Queue>(q, s.clock, [&s] { return machine_view(s); });
  return s.queue->start();
}

// Alerts left open by the previous run: the rule engine continues or closes its own, and a
// "gpu_fenced" alert closes through the fence path when its fence was cleared meanwhile (fences
// are rows in the same database, so a still-fenced GPU keeps its alert as it is).
void resume_open_alerts(AgentState& s, const std::vector<alerts::Alert>& open) {
  std::optional<std::vector<queue::Fence>> fences;
  for (const alerts::Alert& a : open) {
    const auto state = a.state == rules::AlertState::kFiring ? rules::AlertState::kFiring
                                                             : rules::AlertState::kPending;
    if (a.rule != "gpu_fenced") {
      if (!s.engine->adopt(a.rule, a.labels, state, a.started_ns, a.last_value.value_or(0))) {
        log::warn("alert {} ({}) stays open: no rule of that name is loaded", a.id, a.rule);
      }
      continue;
    }
    if (!fences) {
      auto f = queue::list_fences(*s.writer_db, false);
      if (!f) {
        log::warn("fences: {}; fence alerts stay as they are", f.error().what());
        fences.emplace();
        continue;
      }
      fences = std::move(*f);
    }
    auto gpu = a.labels.find("gpu");
    if (gpu == a.labels.end()) continue;
    const bool still = std::any_of(fences->begin(), fences->end(), [&](const queue::Fence& f) {
      return std::to_string(f.gpu) == gpu->second;
    });
    if (still) continue;
    queue::FenceNotice n;
    n.fenced = false;
    n.gpu = static_cast<unsigned>(std::stoul(gpu->second));
    n.reason = "cleared while the agent was stopped";
    n.at = s.clock.now();
    std::lock_guard lock(s.kmsg_mu);
    s.fence_queue.push_back(std::move(n));
  }
}

}  // namespace

bool AgentState::sleep_for(DurationNs d) {
  std::unique_lock lock(stop_mu);
  stop_cv.wait_for(lock, std::chrono::nanoseconds(d), [&] { return stopping; });
  return !stopping;
}

Agent::Agent(AgentOptions options, const Clock& clock)
    : state_(std::make_unique<AgentState>(std::move(options), clock)) {
  if (state_->options.hostname.empty()) state_->options.hostname = local_hostname();
}

Agent::~Agent() {
  stop();
}

int Agent::port() const {
  return state_->port;
}

Status Agent::start() {
  AgentState& s = *state_;
  const config::Config& c = s.options.config;

  CARDIAC_TRY(secure_state(c));
  std::string db_path = c.agent.state_dir + "/cardiac.db";
  auto writer_db = store::open_store(db_path);
  if (!writer_db) return fail(store::explain_store_error(writer_db.error(), db_path));
  s.writer_db.emplace(std::move(*writer_db));
  auto reader_db = store::Db::open(db_path);
  if (!reader_db) return fail(store::explain_store_error(reader_db.error(), db_path));
  s.reader_db.emplace(std::move(*reader_db));
  s.writer = std::make_unique<store::SampleWriter>(*s.writer_db);
  s.alerts = std::make_unique<alerts::AlertBook>(*s.writer_db, s.clock);
  auto open_alerts = s.alerts->load();
  if (!open_alerts) return fail(open_alerts.error());

  auto rules = load_rules(c.agent);
  if (!rules) return fail(rules.error());
  s.engine = std::make_unique<rules::RuleEngine>(std::move(*rules));
  resume_open_alerts(s, *open_alerts);

  auto dispatcher = make_dispatcher(c, false);
  if (!dispatcher) return fail(dispatcher.error());
  s.dispatcher = std::move(*dispatcher);
  auto am = make_dispatcher(c, true);
  if (!am) return fail(am.error());
  s.am_dispatcher = std::move(*am);

  s.fs = std::make_shared<RootFs>(c.host.root);
  telemetry::GpuCollectorOptions copts;
  copts.executable = s.options.executable;
  copts.nvml_lib = c.nvml.library;
  copts.timeout = c.nvml.timeout;
  copts.retry_min = c.nvml.retry;
  copts.env = s.options.worker_env;
  s.collector = std::make_unique<telemetry::GpuCollector>(copts, s.clock);

  // Positioned before the server answers: a line logged once /healthz says 200 is never
  // mistaken for the backlog and skipped.
  if (c.kmsg.enabled) {
    kmsg::KmsgReaderOptions kopts;
    // Records carry µs since boot; wall time at boot turns them into timestamps.
    kopts.boot_time_ns = s.clock.now() - SystemClock::instance().monotonic();
    s.kmsg_reader = std::make_unique<kmsg::KmsgReader>(c.kmsg.source, kopts);
    s.file_reader = std::make_unique<kmsg::FileTailReader>(c.kmsg.source);
    if (c.kmsg.source.starts_with("/dev/")) {
      s.kmsg_open = s.kmsg_reader->open().has_value();
      s.kmsg_up = s.kmsg_open;
    } else if (c.kmsg.source != "journal") {
      auto first = s.file_reader->poll();  // skips what the file already holds
      s.kmsg_open = true;
      s.kmsg_up = first && s.file_reader->reading();
    }
  }
  auto listen = config::split_listen(c.agent.listen);
  if (!listen) return fail(listen.error());
  server::ServerOptions sopts;
  sopts.address = listen->first;
  sopts.port = listen->second;
  sopts.token = c.agent.token;
  // Mutations always need a token, on loopback too: without one in the configuration, the
  // agent's own (made at first start, readable only by the agent's user). A non-loopback
  // listen still needs one configured on purpose, to be handed to remote clients.
  if (sopts.token.empty() && server::is_loopback_host(sopts.address)) {
    auto token = load_or_create_api_token(c.agent.state_dir);
    if (!token) return fail(token.error());
    sopts.token = std::move(*token);
  }
  sopts.tls_cert = c.agent.tls_cert;
  sopts.tls_key = c.agent.tls_key;
  s.backend = make_backend(s);
  s.http = std::make_unique<server::HttpServer>(*s.backend, sopts);
  auto port = s.http->start();
  if (!port) return fail(port.error().with_context("listen " + c.agent.listen));
  s.port = *port;

  auto control = start_control(s);
  if (!control) return fail(control.error());
  s.control = std::move(*control);
  CARDIAC_TRY(start_queue(s));
  s.threads.emplace_back([&s] { run_host(s); });
  s.threads.emplace_back([&s] { run_sampler(s); });
  if (c.kmsg.enabled) s.threads.emplace_back([&s] { run_kmsg(s); });
  s.threads.emplace_back([&s] { run_nvml_events(s); });
  s.threads.emplace_back([&s] { run_maintenance(s); });
  log::info("agent listening on {}:{}, state in {}", sopts.address, s.port, c.agent.state_dir);
  return {};
}

void Agent::stop() {
  AgentState& s = *state_;
  {
    std::lock_guard lock(s.stop_mu);
    if (s.stopping) return;
    s.stopping = true;
  }
  s.stop_cv.notify_all();
  // Jobs keep running: the next agent adopts them.
  if (s.queue) s.queue->stop();
  if (s.control) s.control->stop();
  if (s.http) s.http->stop();
  for (auto& t : s.threads) {
    if (t.joinable()) t.join();
  }
  s.threads.clear();
  if (s.dispatcher) s.dispatcher->stop();
  if (s.am_dispatcher) s.am_dispatcher->stop();
  std::lock_guard lock(s.writer_mu);
  if (s.writer) {
    if (auto st = s.writer->flush(); !st) log::error("final flush failed: {}", st.error().what());
  }
}

}  // namespace cardiac::agent
