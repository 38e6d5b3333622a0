// SPDX-License-Identifier: Apache-2.0
// Failure model of the cluster simulator: presets calibrated on published studies, the failure
// arrival stream and the planned-maintenance schedule.
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "core/result.h"

namespace cardiac::sim {

// What a failure takes out of service.
enum class Scope {
  kGpu,     // one GPU
  kNode,    // the whole node (host parts: PSU, CPU, memory, NIC, SSD, chassis...)
  kDomain,  // every node under one switch / rack / power domain
  kJob,     // kills the job on the node; no hardware goes out of service
};

std::string_view scope_name(Scope scope);

struct Component {
  std::string name;
  // GPU, Network, Host, Dependency, Unplanned maintenance, Unknown (Llama 3 table 5 categories).
  std::string category;
  double per_gpu_day = 0;  // failures per GPU per day, averaged over the fleet
  Scope scope = Scope::kGpu;
  DurationNs repair = 0;  // mean time the hardware is out; 0 for job scope
};

// Fail-slow ("gray") GPUs: a GPU keeps answering but runs slower, and every synchronous job
// holding it goes at its pace until the straggler is found and taken out. Off while the rate is
// 0, which leaves every other draw of the model as it was.
struct FailSlow {
  double per_gpu_day = 0;  // GPUs turning into stragglers, per GPU per day
  // How many times longer a job takes while a straggler is in its allocation (a job goes at the
  // pace of its slowest GPU, so a second straggler in the same job changes nothing).
  double factor = 1.5;
  // From the GPU turning slow to the scheduler knowing: then its jobs are stopped, as for a
  // drain, and requeued from their last checkpoint, and the GPU goes out for `repair`.
  DurationNs detection = DurationNs{30} * 60 * kNsPerSec;
  DurationNs repair = DurationNs{24} * 3600 * kNsPerSec;  // mean; log-normal as the others

  [[nodiscard]] bool on() const { return per_gpu_day > 0; }
};

// An assumed straggler rate (docs/sim-failures.md, "Fail-slow"): no study in our references
// publishes stragglers per GPU-day; this is a third of Llama 3's GPU fail-stop rate.
inline constexpr double kTypicalFailSlowPerGpuDay = 1e-4;

struct FailureModel {
  std::string name;
  std::vector<Component> components;
  // Lemon nodes: this fraction of nodes has `lemon_factor` times the hardware hazard of the
  // others. The component rates stay fleet averages: lemons move failures, they do not add any.
  double lemon_fraction = 0;
  double lemon_factor = 1;
  // Chance that a GPU- or node-scope hardware failure also takes another node of its domain.
  double correlated_fraction = 0;
  // From failure to the scheduler knowing: jobs die at failure time, the node is fenced only
  // after this.
  DurationNs detection = 0;
  // Planned maintenance: every node is drained once per interval (0: none) for this long.
  DurationNs maintenance_interval = 0;
  DurationNs maintenance_duration = 0;
  // Multiplies every unplanned fail-stop rate (not maintenance, not stragglers).
  double rate_scale = 1;
  // Shape of the log-normal repair time (sigma of the underlying normal); 0: exactly the mean.
  double repair_sigma = 1.0;
  // Stragglers (off by default): drawn from their own random stream, so turning them on moves
  // no fail-stop failure, repair or maintenance.
  FailSlow slow{};
};

// Checks ranges: rates finite and >= 0, fractions in [0, 1], lemon_factor >= 1, durations >= 0,
// the fail-slow factor finite and >= 1.
[[nodiscard]] Status validate_model(const FailureModel& model);

// The preset names failure_preset accepts before the ':'.
[[nodiscard]] std::vector<std::string_view> failure_preset_names();

// "name" or "name:key=value,key=value", e.g. "llama3:lemons=0.02x12,scale=2". Keys: lemons=FxK,
// scale=S, corr=F, detect=DUR, maint=DUR|off, maint_len=DUR, repair_sigma=S, and the fail-slow
// ones slow=RATE|typical, slow_factor=F, slow_detect=DUR, slow_repair=DUR (DUR as in
// parse_duration_ns). Returns a parse error naming the offending text.
[[nodiscard]] Result<FailureModel> failure_preset(std::string_view text);

struct Topology {
  unsigned nodes = 0;
  unsigned gpus_per_node = 8;
  unsigned nodes_per_domain = 16;  // e.g. nodes under one leaf switch; 0 is taken as 1
};

struct FailureEvent {
  TimeNs time = 0;
  std::uint32_t component = 0;  // index into model.components
  Scope scope = Scope::kGpu;
  std::uint32_t node = 0;  // for kDomain: the node the fault was seen on
  std::int32_t gpu = -1;   // -1: whole node (node, domain and job scope)
  std::uint32_t domain = 0;
  DurationNs repair = 0;    // sampled; 0 for job scope
  bool correlated = false;  // a secondary failure, at the time of the primary
};

// The unplanned failure arrivals of a whole cluster: a superposed Poisson process, one event per
// interruption. It does not know what is down: a failure on hardware already out of service is
// the engine's to ignore. Deterministic for (model, topology, seed). O(log components) per event.
class FailureProcess {
 public:
  // Preconditions: validate_model(model) passes, topology.nodes and gpus_per_node >= 1 (otherwise
  // the process yields nothing). Events have 0 <= time < horizon.
  FailureProcess(const FailureModel& model, const Topology& topology, std::uint64_t seed,
                 TimeNs horizon);

  // The next event in non-decreasing time order; nullopt once past the horizon.
  std::optional<FailureEvent> next();

  // Lemon nodes, ascending; fixed by the seed.
  [[nodiscard]] const std::vector<std::uint32_t>& lemon_nodes() const { return lemons_; }
  // Unplanned primary events per day over the whole cluster.
  [[nodiscard]] double events_per_day() const { return total_per_day_; }

 private:
  struct Picker {  // cumulative weights over component indices
    std::vector<double> cumulative;
    std::vector<std::uint32_t> index;
  };

  std::uint32_t pick_node(bool hardware);
  DurationNs sample_repair(const Component& c, std::mt19937_64& rng);
  void maybe_add_secondary(const FailureEvent& primary);

  std::vector<Component> components_;
  Topology topo_;
  double correlated_fraction_;
  double repair_sigma_;
  TimeNs horizon_;
  double total_per_day_ = 0;
  double rate_per_ns_ = 0;
  double now_ns_ = 0;
  bool done_ = false;
  Picker all_;
  std::vector<Picker> by_category_;      // for secondaries: components of one category
  std::vector<std::uint32_t> category_;  // component -> index into by_category_
  std::vector<std::uint32_t> lemons_;
  std::vector<std::uint32_t> nominal_;
  double lemon_probability_ = 0;  // chance a hardware failure lands on the lemon class
  std::optional<FailureEvent> pending_;
  std::mt19937_64 arrivals_;
  std::mt19937_64 aux_;
  std::mt19937_64 repairs_;
};

// Expected hours between failures of a job on `gpus` GPUs, failures independent and exponential:
// 1 / (sum of rate x exposure). GPU- and job-scope components see the job's GPUs, node- and
// domain-scope ones every GPU of the nodes it touches. Ignores lemons, correlated secondaries and
// maintenance. Infinity when the total rate is zero.
[[nodiscard]] double job_mttf_hours(const FailureModel& model, unsigned gpus,
                                    unsigned gpus_per_node);

// A GPU turning into a straggler.
struct SlowEvent {
  TimeNs time = 0;
  std::uint32_t node = 0;
  std::uint32_t gpu = 0;  // position on the node, drawn as if every node had gpus_per_node
  DurationNs repair = 0;  // sampled: how long it is out once detected
};

// Straggler arrivals: a Poisson process at model.slow.per_gpu_day over every GPU, uniform over
// GPUs (lemons are a fail-stop matter), on a stream of its own. Deterministic for (model,
// topology, seed); yields nothing when the rate is 0.
class FailSlowProcess {
 public:
  FailSlowProcess(const FailureModel& model, const Topology& topology, std::uint64_t seed,
                  TimeNs horizon);
  // The next straggler in time order; nullopt once past the horizon.
  std::optional<SlowEvent> next();

 private:
  Topology topo_;
  DurationNs repair_;
  double repair_sigma_;
  TimeNs horizon_;
  double rate_per_ns_ = 0;
  double now_ns_ = 0;
  bool done_ = true;
  std::mt19937_64 rng_;
};

struct MaintenanceWindow {
  TimeNs start = 0;
  std::uint32_t node = 0;
  DurationNs duration = 0;
};

// Planned drains in [0, horizon), sorted by start: every node once per maintenance_interval,
// staggered evenly across the interval in an order fixed by the seed. Empty when the interval
// or duration is 0.
[[nodiscard]] std::vector<MaintenanceWindow> maintenance_schedule(const FailureModel& model,
                                                                  const Topology& topology,
                                                                  std::uint64_t seed,
                                                                  TimeNs horizon);

}  // namespace cardiac::sim
