// SPDX-License-Identifier: Apache-2.0
// cardiac.toml: the settings every command and the agent share. Missing file → defaults;
// a malformed file → an error naming the file, line and key. Unknown keys are errors, so a
// typo never silently falls back to a default.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/result.h"

namespace cardiac::config {

inline constexpr const char* kDefaultConfigPath = "/etc/cardiac/cardiac.toml";

struct NvmlSettings {
  std::string library;                 // empty: libnvidia-ml.so.1, then libnvidia-ml.so
  DurationNs timeout = 5 * kNsPerSec;  // deadline for each NVML answer
  DurationNs retry = 30 * kNsPerSec;   // first re-probe of a wedged GPU (doubles to 10 min)

  bool operator==(const NvmlSettings&) const = default;
};

struct HostSettings {
  std::string root = "/";  // where /proc and /sys are read

  bool operator==(const HostSettings&) const = default;
};

// How the agent runs (`cardiac agent`).
struct AgentSettings {
  std::string state_dir = "/var/lib/cardiac";
  // Group that may read the store (state directory 0750, files 0640); empty: owner only
  // (0700 / 0600). Others get search permission on the directory while the queue is on.
  std::string group;
  std::string listen = "127.0.0.1:9847";  // not 9400 (dcgm-exporter) nor 9100 (node_exporter)
  DurationNs interval = 1 * kNsPerSec;    // GPU sampling
  DurationNs host_interval = 5 * kNsPerSec;
  std::string metrics_compat;  // "" or "dcgm"
  std::string token;           // bearer token for the API; required for a non-loopback listen
  std::string tls_cert;
  std::string tls_key;
  std::string rules_file;  // extra rules (TOML); the defaults apply unless disabled
  bool default_rules = true;
  unsigned expected_gpus = 0;  // 0: not checked
  // /healthz fails when no GPU sample came for this long; 0: max(5 × interval, 5 s), plus the
  // NVML timeout (a sample may legitimately wait that long for a hung GPU).
  DurationNs stale_after = 0;

  bool operator==(const AgentSettings&) const = default;
};

struct KmsgSettings {
  bool enabled = true;
  std::string source = "/dev/kmsg";  // or a log file to follow

  bool operator==(const KmsgSettings&) const = default;
};

struct StoreSettings {
  DurationNs raw_retention = 7 * 86400 * kNsPerSec;
  DurationNs minute_retention = 90 * 86400 * kNsPerSec;
  DurationNs hour_retention = 730 * 86400 * kNsPerSec;
  DurationNs flush_interval = 5 * kNsPerSec;

  bool operator==(const StoreSettings&) const = default;
};

// `cardiac doctor`.
struct DoctorSettings {
  DurationNs window = 10 * kNsPerSec;  // live sampling window when there is no history
  std::vector<std::string> probe;      // far targets: "10.0.0.1", "tcp://host:443", "udp://h:7"

  bool operator==(const DoctorSettings&) const = default;
};

// The serving view ([serving], docs/serving.md): inference engines' /metrics to scrape and the
// per-process VRAM trend behind the time-to-OOM alert and finding.
struct ServingSettings {
  // URLs of engines' Prometheus metrics ("http://127.0.0.1:8000/metrics"); empty: none.
  std::vector<std::string> engines;
  DurationNs scrape_interval = 15 * kNsPerSec;
  DurationNs scrape_timeout = 2 * kNsPerSec;       // connect, and each read
  DurationNs vram_window = 30 * 60 * kNsPerSec;    // how far back a process's memory is kept
  DurationNs vram_step = 15 * kNsPerSec;           // one point per process this often
  DurationNs vram_min_span = 10 * 60 * kNsPerSec;  // a trend needs at least this much history
  double vram_min_growth_mib = 256;                // and at least this much growth over it

  bool operator==(const ServingSettings&) const = default;
};

// [security] (docs/security.md): the doctor's allow lists for its signs of compromise.
// A port or a range that may listen: "tcp/22", "udp/53", 9847 (both), "8000-8100".
struct ListenPortRange {
  std::string proto;  // "tcp", "udp", or "" for both
  unsigned low = 0;
  unsigned high = 0;
  bool operator==(const ListenPortRange&) const = default;
};

struct SecuritySettings {
  // Commands that may use a GPU outside a Slurm or cardiac job: a glob ("/opt/render/*",
  // "*jupyter*") or "re:" and an extended regular expression, matched against the process's
  // command line, executable path and name.
  std::vector<std::string> allowed_gpu_commands;
  std::vector<ListenPortRange> allowed_listen_ports;
  // How often the agent looks for the signs of compromise (agent/security_watch.h); 0: never.
  DurationNs watch_interval = 60 * kNsPerSec;
  bool operator==(const SecuritySettings&) const = default;
};

// A fair-share account ([[queue.account]]): Slurm's account association.
struct QueueAccount {
  std::string name;
  std::string parent;  // "" for a child of the root
  double shares = 1;
  std::string where;  // file:line:column of its table, for errors found later

  bool operator==(const QueueAccount&) const = default;
};

// A user's association with an account ([[queue.user]]); a user may be in several accounts,
// the first listed is their default (and where their usage is charged).
struct QueueUser {
  std::string name;
  std::string account;
  double shares = 1;
  std::string where;

  bool operator==(const QueueUser&) const = default;
};

// Multifactor weights ([queue.weights]), as Slurm's PriorityWeight*.
struct QueueWeights {
  double age = 1000;
  double fairshare = 5000;
  double job_size = 1000;
  double qos = 1000;  // the job's --priority, normalised by the largest pending one

  bool operator==(const QueueWeights&) const = default;
};

// The GPU job queue the agent runs (`cardiac submit`, docs/queue.md).
struct QueueSettings {
  bool enabled = true;
  // "fcfs", "priority", "fairshare", "backfill", "backfill:priority", "sjf", "las"; checked
  // by the agent at start (sched::parse_policy).
  std::string policy = "fcfs";
  std::string admin_group;   // members may cancel, hold, release any job and manage fences
  unsigned retry_limit = 3;  // requeues after a fenced GPU or a lost runner, then failed
  DurationNs backoff = 10 * kNsPerSec;  // wait before a requeued job may start; doubles
  DurationNs grace = 10 * kNsPerSec;    // SIGTERM to SIGKILL on cancel, time limit, fence
  // A GPU running a process the queue did not start counts as busy.
  bool count_outside_processes = true;
  // Auto-unfence (docs/queue.md): an automatic fence whose fault may clear on its own
  // (queue::fence_may_lift) is cleared once the GPU has passed the health probe (NVML answers
  // it normally, no memory repair pending, nothing critical) for auto_unfence_after in a row.
  bool auto_unfence = true;
  DurationNs auto_unfence_after = 10 * 60 * kNsPerSec;
  // Fair share and the multifactor priority (sched::PolicyConfig).
  bool fair_tree = true;                             // false: classic 2^(-UE/S/d)
  double dampening = 1;                              // classic: FairShareDampeningFactor
  DurationNs half_life = 7 * 24 * 3600 * kNsPerSec;  // usage decay
  DurationNs max_age = 7 * 24 * 3600 * kNsPerSec;    // age factor reaches 1 here
  // Priority and fair-share factors are recomputed this often (Slurm's PriorityCalcPeriod);
  // between recomputations the queue keeps its order. 0: before every pass.
  DurationNs priority_calc_period = 5 * 60 * kNsPerSec;
  bool favor_small = false;  // job size factor favours small jobs
  bool spread = false;       // placement spreads instead of packing
  QueueWeights weights;
  // The account tree; empty: every user has an account of their own with one share.
  std::vector<QueueAccount> accounts;
  std::vector<QueueUser> users;

  bool operator==(const QueueSettings&) const = default;
};

// `cardiac slurm healthcheck|prolog|epilog` (docs/slurm.md).
struct SlurmSettings {
  std::string scontrol = "scontrol";  // a bare name is looked up in PATH
  DurationNs scontrol_timeout = 10 * kNsPerSec;
  // The blast-radius limit: within drain_window cardiac drains at most
  // max(drain_limit_min_nodes, floor(drain_limit_percent % of the nodes)), and never more than
  // drain_limit_max_nodes when that is not 0.
  double drain_limit_percent = 10;
  unsigned drain_limit_min_nodes = 1;
  unsigned drain_limit_max_nodes = 0;
  DurationNs drain_window = 10 * 60 * kNsPerSec;
};

// `cardiac fleet` and the fleet views (docs/fleet.md): the Prometheus that scrapes the agents.
struct FleetSettings {
  std::string prometheus;       // "http://prometheus:9090"; empty: no fleet view
  std::string job = "cardiac";  // the scrape job of the agents
  DurationNs timeout = 10 * kNsPerSec;
  std::string bearer_token_file;  // read at use; empty: no Authorization header

  bool operator==(const FleetSettings&) const = default;
};

struct NotifierSettings {
  std::string type;  // "alertmanager", "webhook", "exec", "log"
  std::string url;
  std::vector<std::string> argv;
  std::map<std::string, std::string> headers;
  DurationNs timeout = 10 * kNsPerSec;
  std::string where;  // file:line of its table, for later errors

  bool operator==(const NotifierSettings&) const = default;
};

// Compared section by section (==) when the agent re-reads its configuration on SIGHUP, to
// tell what changed.
struct Config {
  std::string source;  // the file it came from, or "" for built-in defaults
  NvmlSettings nvml;
  HostSettings host;
  AgentSettings agent;
  KmsgSettings kmsg;
  StoreSettings store;
  DoctorSettings doctor;
  ServingSettings serving;
  SecuritySettings security;
  QueueSettings queue;
  SlurmSettings slurm;
  FleetSettings fleet;
  std::vector<NotifierSettings> notifiers;
};

// Parses TOML text; `origin` names the file in errors ("cardiac.toml:3:9: …").
[[nodiscard]] Result<Config> parse_config(std::string_view text, std::string_view origin);
// Loads `path`. When `path` is the default and does not exist, returns the defaults; an
// explicitly named file that does not exist is an error.
[[nodiscard]] Result<Config> load_config(const std::string& path, bool explicitly_named);
// The commented default file, with every key at its built-in value.
[[nodiscard]] std::string default_config_text();

}  // namespace cardiac::config
