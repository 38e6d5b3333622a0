// SPDX-License-Identifier: Apache-2.0
// The scheduling core shared by the live queue (src/queue) and the simulator (src/sim): the
// job and cluster model, the policies and placement. Pure code: no I/O, no clock reads (time
// comes in as `now`), deterministic for equal inputs.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/clock.h"
#include "core/result.h"

namespace cardiac::sched {

using JobId = std::int64_t;

enum class GpuHealth { kOk, kDegraded, kFenced };

struct Gpu {
  unsigned index = 0;              // index on its node (NVML index)
  std::uint64_t memory_bytes = 0;  // total frame-buffer memory
  int nvlink_domain = -1;          // GPUs with the same domain share NVLink/NVSwitch (-1: none)
  int numa_node = -1;              // host NUMA node (-1: unknown)
  GpuHealth health = GpuHealth::kOk;
  // Busy with work outside the queue (a process the queue did not start holds it); the
  // placement treats it like an exclusive allocation.
  bool busy_outside = false;
  std::uint64_t memory_used_outside = 0;
};

struct Node {
  std::string name{};
  std::vector<Gpu> gpus{};
  // GPU model ("V100M32", "A10"); "" = unknown, so only jobs that accept any model go there.
  std::string model{};
};

// Where a job runs: GPUs per node.
struct NodeGpus {
  unsigned node = 0;             // index into Cluster::nodes
  std::vector<unsigned> gpus{};  // GPU indices on that node
};

struct Job {
  JobId id = 0;
  std::string user{};
  std::string account{};  // fair-share account ("" = the user's default)
  unsigned gpus = 1;      // in total, over all its nodes (0: needs no GPU)
  // 1 (or 0): one node. More: the most nodes it may span; the placement uses the fewest nodes
  // that hold it now and spreads the GPUs evenly over them (counts differ by at most one).
  unsigned nodes = 1;
  std::uint64_t gpu_memory = 0;  // bytes per GPU needed (0: any)
  bool shared = false;           // may share GPUs with other shared jobs (packed by memory)
  int priority = 0;              // user/QOS priority (larger runs sooner)
  std::string qos{};
  TimeNs submit_time = 0;
  DurationNs time_limit = 0;             // 0 = none (backfill then treats it as infinite)
  std::optional<DurationNs> estimate{};  // expected run time, when given (SJF)
  std::vector<JobId> after{};            // dependencies: start only after these succeeded
  unsigned restarts = 0;
  bool held = false;
  DurationNs attained = 0;  // GPU-seconds already served (least-attained-service)
  // When the job became eligible (released from hold, dependencies met): the age factor counts
  // from here, like Slurm's accrue time. Unset: from submit_time.
  std::optional<TimeNs> eligible_time{};
  // Node models it may run on (Node::model); empty: any node. A node of another model, or of
  // an unknown one, never gets it.
  std::vector<std::string> models{};
};

// A job that is running, for placement and backfill's view of the future.
struct Running {
  JobId id = 0;
  std::string user{};
  std::string account{};
  std::vector<NodeGpus> placement{};
  bool shared = false;
  std::uint64_t gpu_memory = 0;
  TimeNs start_time = 0;
  DurationNs time_limit = 0;  // 0 = none
};

struct Cluster {
  std::vector<Node> nodes{};
  std::vector<Running> running{};
};

// The fair-share tree: accounts with shares and parents, users with shares in an account, and
// decayed usage (GPU-seconds) per user.
struct Account {
  std::string name{};
  std::string parent{};  // "" for children of the root
  double shares = 1;
};
struct UserShare {
  std::string user{};
  std::string account{};
  double shares = 1;
};
struct Usage {
  std::vector<Account> accounts{};
  std::vector<UserShare> users{};  // users not listed get one share in an account named after them
  std::map<std::string, double> usage{};  // user → decayed GPU-seconds
  TimeNs updated_at = 0;
};

// usage(t + dt) = usage(t) * 2^(-dt / half_life) + new usage.
// decay_usage multiplies every user's usage by 2^(-(now - updated_at) / half_life) and sets
// updated_at = now; half_life <= 0 means no decay (Slurm's PriorityDecayHalfLife=0) and a `now`
// before updated_at changes nothing. Set updated_at when creating a Usage: the first decay
// runs from it. charge_usage adds GPU-seconds to the user (call it after decay_usage). A user
// in several accounts has one usage figure; the fair-share tree charges it to the user's
// first listed account.
void decay_usage(Usage& u, TimeNs now, DurationNs half_life);
void charge_usage(Usage& u, const std::string& user, double gpu_seconds);

struct Weights {  // Slurm multifactor weights
  double age = 1000;
  double fairshare = 5000;
  double job_size = 1000;
  double qos = 1000;  // applied to the job's priority normalised by the largest one pending
  DurationNs max_age = 7 * 24 * 3600 * kNsPerSec;
  bool favor_small = false;
};

// The order pending jobs are considered in: fcfs, priority (multifactor), fairshare (classic
// 2^(-U/S) or Fair Tree order), sjf, las.
enum class Order { kFcfs, kPriority, kFairshare, kSjf, kLas };

// The policy's spelling of an order ("fairshare"); parse_order is its inverse, nullopt for an
// unknown name. These and parse_policy/policy_text are the only places the names are written.
std::string_view order_name(Order o);
std::optional<Order> parse_order(std::string_view name);

struct PolicyConfig {
  // Backfill (EASY) on top of `order`; without it the order is kept strictly.
  bool backfill = false;
  Order order = Order::kFcfs;
  bool fair_tree = true;  // fairshare factor from Fair Tree ranking (false: classic)
  double dampening = 1;
  // For the caller's decay_usage; schedule() reads the usage as given.
  DurationNs half_life = 7 * 24 * 3600 * kNsPerSec;
  Weights weights;
  bool spread = false;  // placement: false packs onto the fullest node, true spreads
  // Fill ScheduleResult::reasons and ::priorities for every pending job. The simulator turns
  // it off: the starts and the reservation do not depend on it.
  bool explain = true;
  // Fill ScheduleResult::reserved. The simulator, which never reads it, turns it off: the
  // placement of a 4,096-GPU reservation is 512 lists, built on every backfill pass.
  bool list_reserved = true;
};

// Parses "fcfs", "priority", "fairshare", "backfill", "backfill:priority", "sjf", "las";
// errors name the text.
Result<PolicyConfig> parse_policy(std::string_view text);
// The text parse_policy reads back: "fcfs", "backfill:priority".
std::string policy_text(const PolicyConfig& policy);

// One job to start now and where.
struct Start {
  JobId job = 0;
  std::vector<NodeGpus> placement{};
};

// Priority of a pending job broken down by factor (like Slurm's sprio).
struct PriorityBreakdown {
  JobId job = 0;
  double total = 0;
  double age = 0;        // weighted
  double fairshare = 0;  // weighted
  double job_size = 0;   // weighted
  double qos = 0;        // weighted
  // The same factors unweighted, each in [0, 1].
  double age_factor = 0;
  double fairshare_factor = 0;
  double job_size_factor = 0;
  double qos_factor = 0;
};

namespace detail {
enum class Wait : std::uint8_t {
  kStarted,
  kHeld,
  kDeps,        // a dependency has not succeeded yet
  kDepsNever,   // a dependency is gone without succeeding
  kImpossible,  // feasible() fails
  kUnhealthy,   // too large for the GPUs that are not fenced
  kBehind,      // strict order: an earlier job could not start
  kShortfall,   // does not fit now
  kHead,        // backfill: the first job that cannot start; its GPUs are reserved
  kNoPlan,      // backfill: like kHead, but no start time can be planned
  kReserved,    // backfill: fits now but would delay the head job
};
struct ReasonsBuilder;
}  // namespace detail

// Why each pending job a pass read and did not start waits. The pass records a kind and an
// index per job, and formats only what depends on the request's shape (a few texts per pass);
// a job's words are formatted when asked for, so a deep queue does not cost a string and a map
// node per waiting job on every pass. The words are exactly those `cardiac why` shows.
// Lookups sort the entries by id on first use and the map-like accessors (at, find, begin,
// end, ==) format every reason once and keep them: like a std::map, not for two threads at once.
class Reasons {
 public:
  using Map = std::map<JobId, std::string>;

  [[nodiscard]] std::size_t size() const { return entries_.size(); }
  [[nodiscard]] bool empty() const { return entries_.empty(); }
  [[nodiscard]] bool contains(JobId id) const;
  // The job's reason, formatted now; nullopt when the pass started it or did not read it.
  [[nodiscard]] std::optional<std::string> text(JobId id) const;

  // Every reason by job id.
  [[nodiscard]] const Map& all() const;
  [[nodiscard]] const std::string& at(JobId id) const { return all().at(id); }
  [[nodiscard]] Map::const_iterator find(JobId id) const { return all().find(id); }
  [[nodiscard]] Map::const_iterator begin() const { return all().begin(); }
  [[nodiscard]] Map::const_iterator end() const { return all().end(); }
  friend bool operator==(const Reasons& a, const Reasons& b) { return a.all() == b.all(); }

 private:
  friend struct detail::ReasonsBuilder;
  struct Entry {
    JobId id = 0;
    detail::Wait wait = detail::Wait::kStarted;
    std::uint32_t arg = 0;  // index into texts_ or deps_, or whether the job has a time limit
  };
  void sort() const;
  const Entry* entry(JobId id) const;
  [[nodiscard]] std::string format(const Entry& e) const;

  mutable std::vector<Entry> entries_{};
  mutable bool sorted_ = true;
  std::vector<std::string> texts_{};  // shortfalls per request shape, impossible requests
  std::vector<std::vector<JobId>> deps_{};
  std::string behind_{};  // "behind job 7 in fcfs order"
  std::string from_{};    // the reservation's start, as when_text writes it
  JobId head_ = 0;        // backfill: the job holding the reservation
  mutable std::optional<Map> all_{};
};

struct ScheduleResult {
  std::vector<Start> starts{};  // in the order they were chosen
  std::vector<JobId> order{};   // the pending jobs in policy order
  Reasons reasons{};            // why each job that does not start waits
  // The multifactor breakdown of every pending job, in policy order, whatever the policy
  // (empty when PolicyConfig::explain is off).
  std::vector<PriorityBreakdown> priorities{};
  // Backfill: the head job's reserved start (the earliest time its resources free up).
  std::optional<std::pair<JobId, TimeNs>> reservation{};
  // Backfill: the GPUs the head job is planned to start on at the reservation time (empty
  // with PolicyConfig::list_reserved off).
  std::vector<NodeGpus> reserved{};
  // Strict order: the job that could not start, which no later job passed (none: every job
  // that did not start was skipped, so a new job may start ahead of them).
  std::optional<JobId> blocker{};
};

// What schedule() orders pending jobs by, for a caller that keeps its queue in order between
// passes (the simulator, through Session::pass_ordered) instead of handing over the whole
// queue to be ranked on every pass.
//
// The job-independent inputs of the multifactor priority: the cluster's GPU count (job size)
// and the lowest and highest pending Job::priority, each clamped to include 0 (QOS).
struct PriorityScale {
  double total_gpus = 0;
  int lowest = 0;
  int highest = 0;
};
// The job's multifactor priority at `now` with this fair-share factor: exactly what
// ScheduleResult::priorities holds for it (a priority outside the scale counts as its end).
PriorityBreakdown priority_of(const Job& job, double fairshare_factor, const PriorityScale& scale,
                              const Weights& weights, TimeNs now);
// The key schedule() sorts on, larger first, ties by submit time then id: fcfs 0, priority
// `priority_total`, fairshare `fairshare_factor`, sjf minus the estimate (else the time limit,
// else infinity), las minus the attained service.
double order_key(Order order, const Job& job, double priority_total, double fairshare_factor);
// The fair-share factor of each (user, account) association (account "": the user's default),
// index-aligned, from one tree holding `associations` and the users of `usage`: what
// schedule() gives a pending job of that association when these are the associations of the
// pending and running jobs.
std::vector<double> fairshare_factors(
    const Usage& usage, const PolicyConfig& policy,
    const std::vector<std::pair<std::string, std::string>>& associations);

// One scheduling pass: which pending jobs start now and where. `pending` excludes running jobs;
// `finished_ok` lists jobs whose dependencies are satisfied (succeeded). Never places work on a
// fenced GPU or over a GPU's memory; exclusive jobs never share a GPU.
// Every policy but backfill keeps strict order, like Slurm's main loop: once a job cannot start,
// no later job starts in this pass. Held jobs, jobs waiting on a dependency and jobs that can
// never fit (feasible() fails) or that are too large for the GPUs not fenced ("needs 8 GPUs,
// 7 healthy") are skipped with their reason instead of blocking. Backfill is
// EASY on `base`: the first job that cannot start (the head) gets a reservation from running
// jobs' time limits, on the GPUs busy now first; a later job starts now only if it fits now and
// either ends (by its time limit) by then or uses none of the reserved GPUs, i.e. no more than
// the GPUs extra at that time; when no reservation can be planned, backfill keeps strict order.
// Deterministic for equal inputs, whatever the order of `pending`.
ScheduleResult schedule(const Cluster& cluster, const std::vector<Job>& pending, const Usage& usage,
                        const PolicyConfig& policy, TimeNs now,
                        const std::vector<JobId>& finished_ok = {});

// Per user/account shares, decayed usage and factor (like Slurm's sshare).
struct ShareRow {
  std::string account{};
  std::string user{};  // "" for an account row
  double raw_shares = 0;
  double norm_shares = 0;
  double raw_usage = 0;
  double norm_usage = 0;
  double level_fs = 0;  // Fair Tree level fairshare S/U (infinity: no usage)
  double factor = 0;    // fair-share factor in [0, 1] (accounts under Fair Tree: 0, none)
  unsigned depth = 0;   // 0 for children of the root; users sit one below their account
};
std::vector<ShareRow> shares(const Usage& usage, const PolicyConfig& policy,
                             const std::vector<std::string>& extra_users = {});

// Whether any node could ever hold the job (enough GPUs, enough memory per GPU, of a model it
// accepts), ignoring what runs now and health; an error says what is impossible ("9 GPUs
// requested, the largest node has 8", "no node of model V100M32").
Status feasible(const Cluster& cluster, const Job& job);

// Whether the job could run on the GPUs that are not fenced, were nothing running; an error
// says what is short ("needs 8 GPUs, 7 healthy"). A job failing it waits without holding
// back the queue (schedule() skips it) until a fence is cleared.
Status fits_healthy(const Cluster& cluster, const Job& job);

// The earliest time the job could start if nothing else started: now when it fits now, else
// when enough running jobs reach their time limits (start + time_limit). nullopt when that is
// never (GPUs held by running jobs without a time limit, or the job cannot ever fit).
std::optional<TimeNs> expected_start(const Cluster& cluster, const Job& job, TimeNs now);

}  // namespace cardiac::sched
