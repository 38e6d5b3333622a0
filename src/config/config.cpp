// SPDX-License-Identifier: Apache-2.0
// TOML configuration loading with precise errors.
#include "config/config.h"

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <toml++/toml.h>

#include "config/agent_config.h"
#include "config/queue_config.h"
#include "config/security_config.h"
#include "config/slurm_config.h"
#include "config/toml_reader.h"

#include "core/format.h"
#include "core/strings.h"

namespace cardiac::config {
namespace {

Result<const toml::table*> sub_table(const toml::table& root, std::string_view name,
                                     std::string_view origin) {
  const toml::node* n = root.get(name);
  if (!n) return nullptr;
  const toml::table* t = n->as_table();
  if (!t) {
    return fail(Error::invalid(fmt::format("'{}' must be a table", name),
                               TableReader(root, "", origin).where(n->source())));
  }
  return t;
}

Status read_nvml(const toml::table& t, std::string_view origin, NvmlSettings& s) {
  TableReader r(t, "nvml", origin);
  CARDIAC_TRY(r.only({"library", "timeout", "retry"}));
  CARDIAC_TRY(r.get("library", s.library));
  CARDIAC_TRY(r.get_duration("retry", s.retry));
  return r.get_duration("timeout", s.timeout);
}

Status read_host(const toml::table& t, std::string_view origin, HostSettings& s) {
  TableReader r(t, "host", origin);
  CARDIAC_TRY(r.only({"root"}));
  return r.get("root", s.root);
}

Status read_kmsg(const toml::table& t, std::string_view origin, KmsgSettings& s) {
  TableReader r(t, "kmsg", origin);
  CARDIAC_TRY(r.only({"enabled", "source"}));
  CARDIAC_TRY(r.get("enabled", s.enabled));
  return r.get("source", s.source);
}

Status read_store(const toml::table& t, std::string_view origin, StoreSettings& s) {
  TableReader r(t, "store", origin);
  CARDIAC_TRY(r.only({"raw_retention", "minute_retention", "hour_retention", "flush_interval"}));
  CARDIAC_TRY(r.get_duration("raw_retention", s.raw_retention));
  CARDIAC_TRY(r.get_duration("minute_retention", s.minute_retention));
  CARDIAC_TRY(r.get_duration("hour_retention", s.hour_retention));
  return r.get_duration("flush_interval", s.flush_interval);
}

Status read_doctor(const toml::table& t, std::string_view origin, DoctorSettings& s) {
  TableReader r(t, "doctor", origin);
  CARDIAC_TRY(r.only({"window", "probe"}));
  CARDIAC_TRY(r.get_duration("window", s.window));
  return r.get("probe", s.probe);
}

Status read_serving(const toml::table& t, std::string_view origin, ServingSettings& s) {
  TableReader r(t, "serving", origin);
  CARDIAC_TRY(r.only({"engines", "scrape_interval", "scrape_timeout", "vram_window", "vram_step",
                      "vram_min_span", "vram_min_growth_mib"}));
  CARDIAC_TRY(r.get("engines", s.engines));
  if (const auto* list = r.node("engines"); list != nullptr && list->is_array()) {
    std::size_t i = 0;
    for (const auto& url : s.engines) {
      const auto& at = *list->as_array()->get(i++);
      const bool http = url.starts_with("http://") || url.starts_with("https://");
      const auto host_at = url.find("//") + 2;
      if (!http || host_at >= url.size() || url[host_at] == '/') {
        return fail(r.invalid_at("engines", at,
                                 fmt::format("\"{}\" is not an http:// or https:// URL with a "
                                             "host (e.g. \"http://127.0.0.1:8000/metrics\")",
                                             url)));
      }
    }
  }
  CARDIAC_TRY(r.get_duration("scrape_interval", s.scrape_interval));
  CARDIAC_TRY(r.get_duration("scrape_timeout", s.scrape_timeout));
  CARDIAC_TRY(r.get_duration("vram_window", s.vram_window));
  CARDIAC_TRY(r.get_duration("vram_step", s.vram_step));
  CARDIAC_TRY(r.get_duration("vram_min_span", s.vram_min_span));
  CARDIAC_TRY(r.get_number("vram_min_growth_mib", s.vram_min_growth_mib));
  if (s.vram_min_span > s.vram_window) {
    return fail(r.invalid("vram_min_span", "must not be longer than vram_window"));
  }
  if (s.vram_step > s.vram_min_span) {
    return fail(r.invalid("vram_step", "must not be longer than vram_min_span"));
  }
  return {};
}

}  // namespace

Result<Config> parse_config(std::string_view text, std::string_view origin) {
  toml::table root;
  try {
    root = toml::parse(text, origin);
  } catch (const toml::parse_error& e) {
    return fail(Error::parse(
        std::string(e.description()),
        fmt::format("{}:{}:{}", origin, e.source().begin.line, e.source().begin.column)));
  }
  Config c;
  c.source = std::string(origin);
  CARDIAC_TRY(TableReader(root, "", origin)
                  .only({"nvml", "host", "agent", "kmsg", "store", "doctor", "serving", "security",
                         "queue", "slurm", "fleet", "notifier"}));
  auto section = [&](std::string_view name, auto&& read) -> Status {
    auto t = sub_table(root, name, origin);
    if (!t) return fail(t.error());
    if (*t) return read(**t);
    return {};
  };
  CARDIAC_TRY(section("nvml", [&](const toml::table& t) { return read_nvml(t, origin, c.nvml); }));
  CARDIAC_TRY(section("host", [&](const toml::table& t) { return read_host(t, origin, c.host); }));
  CARDIAC_TRY(
      section("agent", [&](const toml::table& t) { return read_agent(t, origin, c.agent); }));
  CARDIAC_TRY(section("kmsg", [&](const toml::table& t) { return read_kmsg(t, origin, c.kmsg); }));
  CARDIAC_TRY(
      section("store", [&](const toml::table& t) { return read_store(t, origin, c.store); }));
  CARDIAC_TRY(
      section("doctor", [&](const toml::table& t) { return read_doctor(t, origin, c.doctor); }));
  CARDIAC_TRY(
      section("serving", [&](const toml::table& t) { return read_serving(t, origin, c.serving); }));
  CARDIAC_TRY(section("security",
                      [&](const toml::table& t) { return read_security(t, origin, c.security); }));
  CARDIAC_TRY(
      section("queue", [&](const toml::table& t) { return read_queue(t, origin, c.queue); }));
  CARDIAC_TRY(
      section("slurm", [&](const toml::table& t) { return read_slurm(t, origin, c.slurm); }));
  CARDIAC_TRY(
      section("fleet", [&](const toml::table& t) { return read_fleet(t, origin, c.fleet); }));
  CARDIAC_TRY(read_notifiers(root, origin, c.notifiers));
  return c;
}

Result<Config> load_config(const std::string& path, bool explicitly_named) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return fail(Error::invalid("is a directory, not a configuration file", path));
  }
  std::ifstream in(path);
  if (!in) {
    if (!explicitly_named && errno == ENOENT) return Config{};
    return fail(Error::io(path, errno));
  }
  std::stringstream buf;
  buf << in.rdbuf();
  return parse_config(buf.str(), path);
}

std::string default_config_text() {
  return R"(# cardiac configuration (/etc/cardiac/cardiac.toml).
# Every key is optional; the values below are the built-in defaults.

[nvml]
# NVML library to load. Empty: libnvidia-ml.so.1, then libnvidia-ml.so.
library = ""
# Deadline for each answer from NVML. A call that takes longer marks its GPU unresponsive
# (a hung driver) instead of blocking cardiac.
timeout = "5s"
# A GPU that stopped answering is asked again after this long, doubling up to 10 minutes.
retry = "30s"

[host]
# Where /proc and /sys are read: "/" on a live machine, or a captured tree.
root = "/"

[agent]
# The history database (cardiac.db) lives here. It holds every job's environment: the store
# is 0600 and the directory 0701 (others may only reach queue.sock; 0700 without the queue).
state_dir = "/var/lib/cardiac"
# A group whose members may read the store (directory 0751, files 0640), e.g. "cardiac".
group = ""
# HTTP API, /metrics and /healthz. A non-loopback address needs a token.
listen = "127.0.0.1:9847"
# GPU sampling interval (100ms works) and host collectors' interval.
interval = "1s"
host_interval = "5s"
# "dcgm": also export dcgm-exporter's metric names so its Grafana dashboard works unchanged.
metrics_compat = ""
# Bearer token for mutating API calls, and for every API call on a non-loopback listen.
# Empty on a loopback listen: the agent's own, made in <state_dir>/api-token (mode 0600).
token = ""
tls_cert = ""
tls_key = ""
# Extra alert rules (TOML, [[rule]] tables) on top of the defaults.
rules = ""
default_rules = true
# Alert when NVML sees fewer GPUs than this (0: not checked).
expected_gpus = 0
# /healthz fails when no GPU sample came for this long (unset: 5 intervals, at least 5 s,
# plus the NVML timeout).
# stale_after = "30s"

[kmsg]
# Kernel log: /dev/kmsg (journalctl -k -f when it cannot be read), "journal", or a log file
# to follow (e.g. /var/log/kern.log).
enabled = true
source = "/dev/kmsg"

[store]
raw_retention = "7d"
minute_retention = "90d"
hour_retention = "730d"
flush_interval = "5s"

[doctor]
# `cardiac doctor` samples this long when no agent history is at hand.
window = "10s"
# Far targets to probe besides the default gateway ("host", "tcp://host:port", "udp://host:port").
probe = []

[serving]
# Inference engines' Prometheus metrics, scraped by the agent and the doctor (vLLM, SGLang, TGI;
# docs/serving.md), e.g. ["http://127.0.0.1:8000/metrics"]. An engine that cannot be read is
# reported (serving_engine_up 0), never taken for an idle one.
engines = []
scrape_interval = "15s"
scrape_timeout = "2s"
# Each GPU process's memory is kept this far back, a point per vram_step; a steady growth over
# at least vram_min_span, by at least vram_min_growth_mib, projects its time to out-of-memory.
vram_window = "30m"
vram_step = "15s"
vram_min_span = "10m"
vram_min_growth_mib = 256

[security]
# Signs of compromise (docs/security.md), looked for by `cardiac doctor` and by the agent.
# Commands that may keep a GPU busy outside a Slurm or cardiac queue job: a glob
# ("/opt/render/bin/*", "*jupyter*") or "re:" and an extended regular expression, matched against
# the command line, the executable and the name.
allowed_gpu_commands = []
# Ports that may listen (22, "udp/53", "tcp/8000-8100"): others are reported as new, unless the
# agent's store saw them listening before. Empty and no store: listening ports are not judged.
allowed_listen_ports = []
# How often the agent looks ("0s": never); the default rules (security_*) page on what it finds.
watch_interval = "1m"

[queue]
# The GPU job queue (`cardiac submit`, `cardiac queue`; docs/queue.md). Clients reach it over
# <state_dir>/queue.sock; the peer's credentials say who they are.
enabled = true
# Scheduling policy: "fcfs", "priority", "fairshare", "backfill", "backfill:priority", "sjf", "las".
policy = "fcfs"
# Members of this Unix group (and root) may cancel, hold and release anyone's jobs and fence GPUs.
admin_group = ""
# A job stopped by a fenced GPU or lost with its runner is requeued this many times, then failed.
retry_limit = 3
# Wait before a requeued job may start again; doubles with each requeue (at most 10 minutes).
backoff = "10s"
# Between SIGTERM and SIGKILL when a job is cancelled, reaches its time limit or loses its GPU.
grace = "10s"
# A GPU running a process the queue did not start counts as busy.
count_outside_processes = true
# Return an automatically fenced GPU to service once its fault has cleared on its own (an NVML
# error or an unresponsive GPU): NVML answers it normally with no memory repair pending and no
# new Xid, for auto_unfence_after in a row. Never for a fault that needs a reset, a reboot or RMA.
auto_unfence = true
auto_unfence_after = "10m"
# Fair share and the multifactor priority (policies "priority", "fairshare", "backfill:priority").
# Fair Tree ranking of users; false: the classic factor 2^(-usage / shares / dampening).
fair_tree = true
# Classic only: 1 is none, larger softens the penalty for usage.
dampening = 1.0
# Usage (GPU-seconds of every attempt) halves every half_life.
half_life = "7d"
# The age factor grows from 0 to 1 over this long, counted from when a job became eligible.
max_age = "7d"
# Priority and fair-share factors are recomputed this often; in between the queue keeps its
# order (a job submitted meanwhile is placed by the last factors). 0: before every pass.
priority_calc_period = "5m"
# The job size factor favours small jobs instead of large ones.
favor_small = false
# Placement spreads jobs over nodes instead of packing them (one machine: no difference).
spread = false

[queue.weights]
# priority = age + fairshare + job_size + qos, each weight times its factor in [0, 1]; qos is
# the job's --priority.
age = 1000
fairshare = 5000
job_size = 1000
qos = 1000

# The fair-share tree: accounts with shares under a parent ("" or absent: the root), and users
# with shares in an account. A user's first listed account is their default and carries their
# usage; `cardiac submit --account` picks another of theirs. Users not listed get one share in
# an account of their own.
# [[queue.account]]
# name = "physics"
# shares = 40
# [[queue.account]]
# name = "theory"
# parent = "physics"
# shares = 1
# [[queue.user]]
# name = "alice"
# account = "theory"
# shares = 1

[slurm]
# `cardiac slurm healthcheck|prolog|epilog` (docs/slurm.md). The scontrol program (a bare name
# is looked up in PATH) and the deadline for each of its answers.
scontrol = "scontrol"
scontrol_timeout = "10s"
# The blast-radius limit: within drain_window, cardiac drains at most
# max(drain_limit_min_nodes, drain_limit_percent % of the nodes Slurm lists, rounded down)
# nodes, and never more than drain_limit_max_nodes (0: no such cap). A drain past the limit is
# held and a critical alert goes to the notifiers below instead.
drain_limit_percent = 10.0
drain_limit_min_nodes = 1
drain_limit_max_nodes = 0
drain_window = "10m"

[fleet]
# `cardiac fleet` (docs/fleet.md): every node's GPUs, verdicts, alerts and Xids, read from the
# Prometheus that scrapes the agents. Its URL (empty: no fleet view), the scrape job the agents
# are in, the deadline for each answer, and a file holding a bearer token, if it wants one.
prometheus = ""
job = "cardiac"
timeout = "10s"
bearer_token_file = ""

# Notifiers: any number of [[notifier]] tables.
# [[notifier]]
# type = "alertmanager"          # Alertmanager API v2
# url = "http://127.0.0.1:9093"
# [[notifier]]
# type = "webhook"
# url = "http://127.0.0.1:8080/hook"
# headers = { Authorization = "Bearer …" }
# [[notifier]]
# type = "exec"                  # argv, never a shell; the alert is JSON on stdin
# argv = ["/usr/local/bin/page-oncall", "--team", "gpu"]
# [[notifier]]
# type = "log"
# Every notifier also takes timeout = "10s".
)";
}

}  // namespace cardiac::config
