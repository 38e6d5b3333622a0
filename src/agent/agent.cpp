// SPDX-License-Identifier: Apache-2.0
// Agent start-up and shutdown.
#include "agent/agent.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "agent/api_token.h"
#include "agent/backend.h"
#include "agent/control.h"
#include "agent/loops.h"
#include "agent/notifiers.h"
#include "agent/reload.h"
#include "agent/sampler.h"
#include "config/agent_config.h"
#include "core/format.h"
#include "core/log.h"
#include "core/thread_name.h"
#include "doctor/finding_ids.h"
#include "host/bounded.h"
#include "platform/subprocess.h"
#include "queue/job_store.h"
#include "rules/defaults.h"
#include "rules/parse.h"
#include "server/params.h"
#include "store/access.h"
#include "store/lock.h"
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
queue::MachineView machine_view(const Latest<Snapshot>& board) {
  Snapshot snap = board.get();
  return {snap.report, snap.faults.xid_counts, snap.gpus_seen, snap.critical_alerts};
}

// Alerts left open by the previous run: the rule engine continues or closes its own, and a
// "gpu_fenced" alert closes through the fence path when its fence was cleared meanwhile (fences
// are rows in the same database, so a still-fenced GPU keeps its alert as it is).
void resume_open_alerts(rules::RuleEngine& engine, AgentStore& store, Inbox& inbox,
                        const std::vector<alerts::Alert>& open, const Clock& clock) {
  std::optional<std::vector<queue::Fence>> fences;
  for (const alerts::Alert& a : open) {
    const auto state = a.state == rules::AlertState::kFiring ? rules::AlertState::kFiring
                                                             : rules::AlertState::kPending;
    if (a.rule != "gpu_fenced") {
      if (!engine.adopt(a.rule, a.labels, state, a.started_ns, a.last_value.value_or(0))) {
        log::warn("alert {} ({}) stays open: no rule of that name is loaded", a.id, a.rule);
      }
      continue;
    }
    if (!fences) {
      auto f = store.with([](AgentStore::Access& s) { return queue::list_fences(s.db, false); });
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
    n.at = clock.now();
    inbox.add_fence(std::move(n));
  }
}

}  // namespace

// Everything the agent owns, in the order it is built (and so destroyed in reverse).
struct Agent::Parts {
  Parts(AgentOptions o, const Clock& c) : options(std::move(o)), clock(c) {}

  AgentOptions options;
  const Clock& clock;
  Stopper stopper;
  Inbox inbox;
  KmsgStatus kmsg;
  Latest<HostView> host;
  Latest<Snapshot> snapshot;
  Latest<EngineReads> engines;  // [serving] engines, read on their own thread
  std::shared_ptr<const FileSystem> fs;
  // Held while the agent runs: `cardiac restore` refuses to swap the store under it.
  std::optional<store::StoreLock> store_lock;
  std::unique_ptr<AgentStore> store;
  std::optional<Guarded<store::Db>> reader;
  std::unique_ptr<Sampler> sampler;
  std::unique_ptr<KernelLogFollower> kernel_log;
  std::optional<host::HostSnapshot> last_host;  // sample_now()'s previous host reading
  // The host's reads, on one kept thread: the host thread's, or sample_now()'s.
  std::unique_ptr<host::HostReader> host_reader;
  HeapTrimmer trimmer{clock};  // run by the sampler thread after a sample
  // The GPU job queue ([queue] enabled): its own threads, store connection and socket; it
  // reads the snapshot through a view callback.
  std::unique_ptr<queue::Queue> queue;
  ConfigInfo config_info;  // /metrics' configuration facts; reset on reload
  std::unique_ptr<server::Backend> backend;
  std::unique_ptr<server::HttpServer> http;
  // <state-dir>/agent.sock: alert acks and silences from the CLI, by SO_PEERCRED (control.h).
  std::unique_ptr<queue::SocketServer> control;
  int port = 0;
  bool stopped = false;
  // The configuration last taken over (at start, then by each reload) and its rules' inputs.
  config::Config live;
  std::string rules_fingerprint;
  std::vector<std::thread> threads;
};

namespace {

Status start_queue(Agent::Parts& p) {
  const config::Config& c = p.options.config;
  if (!c.queue.enabled) return {};
  queue::QueueOptions q;
  q.state_dir = c.agent.state_dir;
  q.executable = p.options.executable;
  if (q.executable.empty()) {
    auto self = self_executable();
    if (!self) return fail(self.error());
    q.executable = *self;
  }
  q.settings = c.queue;
  q.hostname = p.options.hostname;
  // Fences become alerts in the sampler's evaluate stage, which owns the alert changes.
  q.on_fence = [&p](const queue::FenceNotice& n) { p.inbox.add_fence(n); };
  p.queue = std::make_unique<queue::Queue>(q, p.clock, [&p] { return machine_view(p.snapshot); });
  return p.queue->start();
}

// The signs of compromise looked for every [security] watch_interval, with the ports the store
// saw listening before this start (so that a restart makes no port "new").
std::unique_ptr<SecurityWatch> make_security_watch(Agent::Parts& p) {
  const config::SecuritySettings& s = p.options.config.security;
  if (s.watch_interval <= 0) return nullptr;
  SecurityWatchOptions o;
  o.every = s.watch_interval;
  o.doctor.allowed_gpu_commands = s.allowed_gpu_commands;
  for (const auto& r : s.allowed_listen_ports) {
    o.doctor.allowed_listen_ports.push_back({r.proto, r.low, r.high});
  }
  // The alerts link the runbook a person reads on this host: a site's own (as for the doctor),
  // else the package's.
  const char* base = std::getenv("CARDIAC_RUNBOOK_BASE");
  o.doctor.runbook_base = base != nullptr && *base != '\0'
                              ? std::string(base)
                              : std::string(doctor::kInstalledRunbooks);
  auto watch = std::make_unique<SecurityWatch>(std::move(o), p.fs, p.clock);
  auto seen = p.store->with([](AgentStore::Access& a) { return store::listen_ports(a.db); });
  if (seen) {
    watch->seed_ports(*seen);
  } else {
    log::warn("store: listening ports seen before: {}; every port counts as known for an hour",
              seen.error().what());
  }
  return watch;
}

std::unique_ptr<Sampler> make_sampler(Agent::Parts& p, std::unique_ptr<rules::RuleEngine> engine,
                                      PublishOptions publish) {
  const config::Config& c = p.options.config;
  std::unique_ptr<GpuSource> gpus;
  if (p.options.gpu_source) {
    gpus = p.options.gpu_source();
  } else {
    telemetry::GpuCollectorOptions copts;
    copts.executable = p.options.executable;
    copts.nvml_lib = c.nvml.library;
    copts.timeout = c.nvml.timeout;
    copts.retry_min = c.nvml.retry;
    copts.env = p.options.worker_env;
    copts.events = p.options.nvml_events;
    gpus = worker_gpu_source(std::move(copts), p.clock);
  }
  CollectStage collect(std::move(gpus), p.fs, p.host, p.inbox, p.kmsg, p.clock);
  collect.watch_serving(
      std::make_unique<ServingWatch>(c.serving, c.agent.state_dir + "/gpu-processes.json", p.fs,
                                     c.serving.engines.empty() ? nullptr : &p.engines, p.clock));
  collect.watch_security(make_security_watch(p));
  return std::make_unique<Sampler>(
      std::move(collect),
      PersistStage(c.kmsg.source, c.store.flush_interval, p.clock, p.options.hostname),
      EvaluateStage(std::move(engine), c.kmsg.enabled),
      PublishStage(std::move(publish), *p.store, p.snapshot, p.clock), *p.store, c.agent.interval,
      p.clock);
}

}  // namespace

Agent::Agent(AgentOptions options, const Clock& clock)
    : parts_(std::make_unique<Parts>(std::move(options), clock)) {
  if (parts_->options.hostname.empty()) parts_->options.hostname = local_hostname();
}

Agent::~Agent() {
  stop();
}

int Agent::port() const {
  return parts_->port;
}

Status Agent::start() {
  Parts& p = *parts_;
  const config::Config& c = p.options.config;

  CARDIAC_TRY(secure_state(c));
  std::string db_path = c.agent.state_dir + "/cardiac.db";
  auto lock = store::try_lock_store(db_path, false);
  if (!lock) return fail(lock.error());
  if (!*lock) {
    return fail(Error::unavailable(
        "`cardiac restore` is replacing this store: start the agent when it is done", db_path));
  }
  p.store_lock = std::move(*lock);
  auto writer_db = store::open_store(db_path, store::kept_options());
  if (!writer_db) return fail(store::explain_store_error(writer_db.error(), db_path));
  p.store = std::make_unique<AgentStore>(std::move(*writer_db), p.clock);
  auto reader_db = store::Db::open(db_path, store::kept_options(store::query_options()));
  if (!reader_db) return fail(store::explain_store_error(reader_db.error(), db_path));
  p.reader.emplace(std::move(*reader_db));
  auto open_alerts = p.store->with([](AgentStore::Access& a) { return a.alerts.load(); });
  if (!open_alerts) return fail(open_alerts.error());

  p.live = c;
  p.rules_fingerprint = rules_fingerprint(c.agent);
  auto rules = load_rules(c.agent);
  if (!rules) return fail(rules.error());
  auto engine = std::make_unique<rules::RuleEngine>(std::move(*rules));
  resume_open_alerts(*engine, *p.store, p.inbox, *open_alerts, p.clock);

  PublishOptions publish;
  publish.hostname = p.options.hostname;
  auto dispatcher = make_dispatcher(c, false);
  if (!dispatcher) return fail(dispatcher.error());
  publish.notifiers = std::move(*dispatcher);
  auto am = make_dispatcher(c, true);
  if (!am) return fail(am.error());
  publish.alertmanager = std::move(*am);

  p.fs = p.options.fs ? p.options.fs : std::make_shared<RootFs>(c.host.root);
  p.host_reader = std::make_unique<host::HostReader>(p.fs);
  p.sampler = make_sampler(p, std::move(engine), std::move(publish));

  // Positioned before the server answers: a line logged once /healthz says 200 is never
  // mistaken for the backlog and skipped.
  if (c.kmsg.enabled) {
    p.kernel_log = std::make_unique<KernelLogFollower>(c.kmsg.source, p.clock,
                                                       kernel_log_poll_period(c.agent.interval));
    p.kernel_log->open_at_end(p.kmsg);
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
  BackendParts bp{p.options, p.clock, p.snapshot, p.kmsg,       *p.store,
                  *p.reader, p.queue, p.fs,       p.config_info};
  p.backend = make_backend(bp);
  p.http = std::make_unique<server::HttpServer>(*p.backend, sopts, p.clock);
  auto port = p.http->start();
  if (!port) return fail(port.error().with_context("listen " + c.agent.listen));
  p.port = *port;

  auto control = start_control(c, *p.store, p.clock);
  if (!control) return fail(control.error());
  p.control = std::move(*control);
  CARDIAC_TRY(start_queue(p));
  if (p.options.background_sampling) {
    p.threads.emplace_back([&p] {
      name_this_thread("cardiac-host");
      run_host(*p.host_reader, p.host, p.options.config.agent.host_interval,
               p.options.config.nvml.timeout, p.clock, p.stopper);
    });
    p.threads.emplace_back([&p] {
      name_this_thread("cardiac-sampler");
      p.sampler->run(p.stopper, [&p] { p.trimmer.maybe_trim(); });
    });
  }
  if (p.kernel_log) {
    p.threads.emplace_back([&p] {
      name_this_thread("cardiac-kmsg");
      p.kernel_log->run(p.inbox, p.kmsg, p.stopper);
    });
  }
  if (!c.serving.engines.empty()) {
    p.threads.emplace_back([&p] {
      name_this_thread("cardiac-serving");
      run_engine_scrapes(p.options.config.serving, p.engines, p.clock, p.stopper);
    });
  }
  p.threads.emplace_back([&p] {
    name_this_thread("cardiac-maint");
    run_maintenance(p.options.config, p.clock, p.stopper);
  });
  log::info("agent listening on {}:{}, state in {}", sopts.address, p.port, c.agent.state_dir);
  return {};
}

void Agent::sample_now() {
  Parts& p = *parts_;
  const auto& c = p.options.config;
  p.host.set(read_host(*p.host_reader, p.last_host, p.clock.now(), c.nvml.timeout));
  p.sampler->step();
}

namespace {

// Open alerts carry on under the new rule set, as they do across a restart; a fence alert is
// the queue's, not a rule's, and stays as it is.
void adopt_open_alerts(rules::RuleEngine& engine, AgentStore::Access& store) {
  auto open = store.alerts.load();
  if (!open) {
    log::warn("reload: open alerts cannot be read ({}); they start over", open.error().what());
    return;
  }
  for (const alerts::Alert& a : *open) {
    if (a.rule == "gpu_fenced") continue;
    const auto state = a.state == rules::AlertState::kFiring ? rules::AlertState::kFiring
                                                             : rules::AlertState::kPending;
    if (!engine.adopt(a.rule, a.labels, state, a.started_ns, a.last_value.value_or(0))) {
      log::warn("alert {} ({}) stays open: the reloaded configuration has no rule of that name",
                a.id, a.rule);
    }
  }
}

// "added a, b; removed c" between two rule sets, by name.
std::string rule_names_diff(const std::vector<rules::Rule>& before,
                            const std::vector<rules::Rule>& after) {
  std::set<std::string> old_names;
  std::set<std::string> new_names;
  for (const auto& r : before) old_names.insert(r.name);
  for (const auto& r : after) new_names.insert(r.name);
  std::vector<std::string> added;
  std::vector<std::string> removed;
  for (const auto& n : new_names) {
    if (!old_names.count(n)) added.push_back(n);
  }
  for (const auto& n : old_names) {
    if (!new_names.count(n)) removed.push_back(n);
  }
  std::string out;
  if (!added.empty()) out += fmt::format("; added {}", fmt::join(added, ", "));
  if (!removed.empty()) out += fmt::format("; removed {}", fmt::join(removed, ", "));
  return out;
}

}  // namespace

Status Agent::reload(const config::Config& next) {
  Parts& p = *parts_;
  if (!p.sampler) return fail(Error::internal("reload before start"));
  // Everything that can fail is built first, so that a failure leaves the agent as it was.
  const std::string fingerprint = rules_fingerprint(next.agent);
  std::unique_ptr<rules::RuleEngine> engine;
  if (fingerprint != p.rules_fingerprint) {
    auto rules = load_rules(next.agent);
    if (!rules) return fail(rules.error());
    engine = std::make_unique<rules::RuleEngine>(std::move(*rules));
  }
  std::optional<PublishOptions> notifiers;
  if (notifiers_changed(p.live, next)) {
    auto d = make_dispatcher(next, false);
    if (!d) return fail(d.error());
    auto am = make_dispatcher(next, true);
    if (!am) return fail(am.error());
    notifiers.emplace();
    notifiers->notifiers = std::move(*d);
    notifiers->alertmanager = std::move(*am);
  }

  if (engine) {
    p.store->with([&](AgentStore::Access& a) {
      const std::string diff =
          rule_names_diff(p.sampler->evaluate().engine().rules(), engine->rules());
      const std::size_t count = engine->rules().size();
      adopt_open_alerts(*engine, a);
      p.sampler->evaluate().replace_engine(std::move(engine));
      log::info("reload: {} alert rules{}", count, diff);
    });
  }
  if (notifiers) {
    PublishOptions old = p.sampler->publish().replace_notifiers(std::move(notifiers->notifiers),
                                                                std::move(notifiers->alertmanager));
    // Delivers what the old ones still hold, on this thread rather than the sampler's.
    if (old.notifiers) old.notifiers->stop();
    if (old.alertmanager) old.alertmanager->stop();
    log::info("reload: {} notifiers", next.notifiers.size());
  }
  // Compared with what runs: a key changed by an earlier reload still waits for the restart.
  for (const auto& key : restart_keys(p.options.config, next)) {
    log::warn("reload: {} changed in {}; it takes effect when the agent restarts", key,
              next.source.empty() ? "the configuration" : next.source);
  }
  // The configuration facts are read again with the next scrape (a driver or kernel upgrade
  // is often followed by a reload rather than a restart).
  p.config_info.reset();
  p.live = next;
  p.rules_fingerprint = fingerprint;
  log::info("reload: configuration {} taken over", next.source);
  return {};
}

void Agent::stop() {
  Parts& p = *parts_;
  if (p.stopped) return;
  p.stopped = true;
  p.stopper.stop();
  // Jobs keep running: the next agent adopts them.
  if (p.queue) p.queue->stop();
  if (p.control) p.control->stop();
  if (p.http) p.http->stop();
  for (auto& t : p.threads) {
    if (t.joinable()) t.join();
  }
  p.threads.clear();
  if (p.sampler) {
    p.sampler->publish().stop();
    p.sampler->collect().save_serving();
  }
  if (p.store) {
    p.store->with([](AgentStore::Access& a) {
      if (auto st = a.writer.flush(); !st) log::error("final flush failed: {}", st.error().what());
    });
  }
}

}  // namespace cardiac::agent
