// SPDX-License-Identifier: Apache-2.0
// The cluster as the placement sees it during one pass: per-GPU use, per-node free counts and
// the indexes that find a node for a job without walking the cluster.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sched/node_set.h"
#include "sched/sched.h"

namespace cardiac::sched::detail {

// What a pass reads and changes of a GPU on every start, end and search. 32 bytes: a slot
// never straddles two cache lines, and a 100,000-GPU cluster's slots are 3.2 MB. Where it
// sits (GpuPlace) is read only when GPUs are chosen on a node.
struct alignas(32) GpuSlot {
  std::uint64_t cap = 0;          // memory a job may declare: memory_bytes - memory_used_outside
  std::uint64_t shared_used = 0;  // declared memory of the shared jobs on it
  std::uint32_t shared_jobs = 0;
  std::uint32_t exclusive = 0;  // a count, so releasing one of two bad overlapping inputs is safe
  bool usable = false;          // not fenced, not busy outside, not masked for a reservation
  bool degraded = false;

  [[nodiscard]] bool is_free() const { return usable && exclusive == 0 && shared_jobs == 0; }
  [[nodiscard]] bool is_shared() const { return usable && exclusive == 0 && shared_jobs > 0; }
  [[nodiscard]] std::uint64_t room() const { return cap > shared_used ? cap - shared_used : 0; }
};
static_assert(sizeof(GpuSlot) == 32);

struct GpuPlace {
  unsigned index = 0;  // Gpu::index
  int domain = -1;
  int numa = -1;
};

struct NodeSlot {
  unsigned begin = 0;  // first GPU in ClusterState::gpus()
  unsigned count = 0;
  unsigned free = 0;     // GPUs with is_free()
  unsigned free_ok = 0;  // of those, not degraded
  unsigned shared = 0;   // GPUs with is_shared()
  unsigned cls = 0;      // memory class: every usable GPU has cap >= class_cap(cls)
  std::uint64_t max_cap = 0;
};

// A running job's expected end when it has no time limit: never, as far as planning knows.
inline constexpr TimeNs kNoEnd = std::numeric_limits<TimeNs>::max();

// GPUs by flat index (ClusterState::gpus()), with how the job uses them.
struct Alloc {
  std::vector<unsigned> gpus{};
  bool shared = false;
  std::uint64_t memory = 0;
  // A running job's start + time limit (kNoEnd without a limit), kept here so that a
  // reservation reads the ends from the state's own list rather than from every Running.
  TimeNs end = kNoEnd;
};

struct Need {
  unsigned gpus = 1;
  unsigned max_nodes = 1;
  std::uint64_t memory = 0;
  bool shared = false;
  // The nodes of the models the job accepts; null: every node. Owned by the ClusterState that
  // made it (ClusterState::need_of) and the same in every copy of it: models never change.
  const NodeSet* allowed = nullptr;
};

// Degraded GPUs are used last: a first pass (kOk) sees only healthy ones.
enum class Phase { kOk, kAll };

class ClusterState {
 public:
  // Applies every running job; placements naming unknown nodes or GPUs are ignored.
  explicit ClusterState(const Cluster& cluster);

  // The job's request, with its model list resolved to a node set (built on first use of each
  // distinct list and kept for the state's lifetime, copies included).
  [[nodiscard]] Need need_of(const Job& job) const;

  // Where the job would go now, or nullopt. Never over a GPU's memory, never on an unusable GPU,
  // exclusive jobs only on GPUs nothing uses.
  [[nodiscard]] std::optional<Alloc> find(const Need& need, bool spread) const;
  // A reservation at a future time, with `released` (the running jobs that end by then)
  // already released: `found` (find's answer) redone to overlap the GPUs idle now as little as
  // possible, so that jobs which cannot delay the reserved job may still use them. GPUs of
  // `released` come first; a single-node job may move to the node where that leaves the
  // fewest idle GPUs in the reservation.
  [[nodiscard]] Alloc prefer_busy(const Need& need, const Alloc& found,
                                  const std::vector<const Alloc*>& released);
  // find(need).has_value(), without choosing GPUs.
  [[nodiscard]] bool fits(const Need& need) const;
  void apply(const Alloc& a);
  void release(const Alloc& a);
  // A running job's GPUs by flat index (unknown nodes or GPUs left out) and its end; nothing
  // is applied.
  [[nodiscard]] Alloc alloc_of(const Running& r) const;
  // Across passes (Session): records an allocation already applied as a running job, index-
  // aligned with the caller's Cluster::running; end_running releases one and moves the last
  // into its place, as the caller's swap-remove does.
  void adopt(Alloc a);
  void end_running(std::size_t i);
  // Replaces the running jobs' allocations, all applied already (a caller that diffs a
  // cluster read afresh against the state: KeptOrder), index-aligned with its new
  // Cluster::running.
  void set_running(std::vector<Alloc> running) {
    running_ = std::move(running);
    ++version_;  // the running jobs' limits may have changed with them
  }
  // The running jobs' allocations, moved out (still applied): set_running puts them back.
  std::vector<Alloc> take_running() {
    ++version_;
    return std::move(running_);
  }
  // Whether alloc_of(r) would equal `a` (GPUs in the same order, the same end), without
  // building it.
  [[nodiscard]] bool same_alloc(const Running& r, const Alloc& a) const;
  // The flat position of GPU index `idx` of `node`, or ~0u when the node has no such GPU.
  [[nodiscard]] unsigned flat_index(const NodeSlot& node, unsigned idx) const;
  // A GPU fenced, busy outside, healthy again or degraded, with the indexes kept right. Only
  // for GPUs that were usable when the state was built: memory classes count those.
  void set_usable(unsigned g, bool usable, bool degraded);
  // Makes GPUs unusable (backfill hides the head job's reserved GPUs) and usable again; unmask
  // only GPUs that were usable before mask.
  void mask(const std::vector<unsigned>& gpus);
  void unmask(const std::vector<unsigned>& gpus);
  // GPUs the placement takes first on the node it chose (before NVLink and NUMA grouping),
  // for exclusive jobs: backfill plans the head's reservation on GPUs busy now, and puts jobs
  // that end by the reservation on the reserved GPUs that are idle now, so that what stays
  // free is free beyond the reservation too. prefer(gpus, false) clears them again.
  void prefer(const std::vector<unsigned>& gpus, bool on);

  // Whether `need` takes whole nodes: exclusive, no memory asked, on exactly as many nodes
  // of the most GPUs as its GPUs fill (a 4,096-GPU job on 512 nodes of 8). Its reservation
  // is then decided by counts of whole free nodes (WholeNodes).
  [[nodiscard]] bool takes_whole_nodes(const Need& need) const;

  [[nodiscard]] std::vector<NodeGpus> to_placement(const Alloc& a) const;

  // Counts what a reservation depends on changing: jobs applied or released, GPUs' health,
  // the running jobs replaced. Not adopt (the allocation and its end were in the pass that
  // started it), nor masks and preferences, which a pass undoes before it returns.
  [[nodiscard]] std::uint64_t version() const { return version_; }
  // The last head reservation a backfill pass planned here, at version `version`: planned
  // again from the same state and ends for the same request, it comes out the same.
  struct KeptPlan {
    std::uint64_t version = 0;
    Need need{};
    bool spread = false;
    TimeNs end = 0;  // the end time at which the request fits (the start is no earlier than now)
    Alloc alloc{};
  };
  std::optional<KeptPlan>& kept_plan() { return kept_plan_; }
  // Running jobs' allocations, index-aligned with Cluster::running.
  [[nodiscard]] const std::vector<Alloc>& running() const { return running_; }
  [[nodiscard]] const std::vector<GpuSlot>& gpus() const { return gpus_; }
  [[nodiscard]] const std::vector<GpuPlace>& places() const { return places_; }
  [[nodiscard]] const std::vector<NodeSlot>& nodes() const { return nodes_; }
  [[nodiscard]] unsigned max_node_gpus() const { return max_c_; }
  [[nodiscard]] unsigned node_of(unsigned gpu) const { return node_of_[gpu]; }
  // Whether a GPU is free (usable, nothing on it): without one, no exclusive job fits.
  [[nodiscard]] bool any_free() const { return free_gpus_ > 0; }
  [[nodiscard]] unsigned free_count() const { return free_gpus_; }
  // Whether some usable GPU holds shared work.
  [[nodiscard]] bool any_shared() const { return !shared_nodes_.empty(); }
  // The most memory a shared job could declare on a GPU that only shared jobs use (a scan of
  // the nodes holding shared work); nullopt when there is no such GPU.
  [[nodiscard]] std::optional<std::uint64_t> most_shared_room() const;

  // GPUs on the node a job with this need could use (phase kAll), for the reasons.
  [[nodiscard]] unsigned eligible(unsigned node, const Need& need) const;

 private:
  NodeSet& bucket(Phase p, unsigned cls, unsigned c) {
    return (p == Phase::kOk ? ok_ : all_)[cls * (max_c_ + 1) + c];
  }
  [[nodiscard]] const NodeSet& bucket(Phase p, unsigned cls, unsigned c) const {
    return (p == Phase::kOk ? ok_ : all_)[cls * (max_c_ + 1) + c];
  }
  // What one GPU's change does to its node's counts.
  struct Delta {
    int free = 0, ok = 0, shared = 0;
    Delta& operator+=(const Delta& o) {
      free += o.free;
      ok += o.ok;
      shared += o.shared;
      return *this;
    }
  };
  static Delta delta(const GpuSlot& before, const GpuSlot& after);
  void adjust(unsigned node, const Delta& d);
  void update_gpu(unsigned g, const GpuSlot& before);
  template <class Change>
  void change_each(const std::vector<unsigned>& gpus, Change&& change);
  [[nodiscard]] unsigned classes_for(std::uint64_t memory) const;
  [[nodiscard]] unsigned scan_count(unsigned node, Phase p, std::uint64_t memory,
                                    bool shared) const;
  [[nodiscard]] unsigned count_at_least(Phase p, unsigned c, const Need& need,
                                        const std::vector<unsigned>& scanned) const;
  [[nodiscard]] std::optional<unsigned> best_single(Phase p, const Need& need, bool spread) const;
  [[nodiscard]] std::optional<Alloc> find_single(const Need& need, bool spread) const;
  [[nodiscard]] std::optional<Alloc> find_shared(const Need& need, bool spread) const;
  // How find_multi places an exclusive request: on how many nodes, in which phase, and the
  // odd nodes it scans; nullopt when it does not fit.
  struct MultiShape {
    unsigned nodes = 0;
    Phase phase = Phase::kOk;
    std::vector<unsigned> scanned;
  };
  [[nodiscard]] std::optional<MultiShape> multi_shape(const Need& need) const;
  [[nodiscard]] std::optional<Alloc> find_multi(const Need& need, bool spread) const;
  [[nodiscard]] std::optional<Alloc> find_multi_scan(const Need& need, bool spread) const;
  [[nodiscard]] std::vector<unsigned> pick_nodes(Phase p, const Need& need, unsigned k, bool spread,
                                                 const std::vector<unsigned>& scanned) const;
  void choose_gpus(unsigned node, unsigned n, Phase p, const Need& need,
                   std::vector<unsigned>& out) const;

  friend class WholeNodes;

  std::uint64_t version_ = 0;
  std::optional<KeptPlan> kept_plan_;

  std::vector<GpuSlot> gpus_;
  std::vector<GpuPlace> places_;  // per GPU, as gpus_
  std::vector<NodeSlot> nodes_;
  std::vector<unsigned> node_of_;      // per GPU
  std::vector<unsigned char> prefer_;  // per GPU once prefer() was used, else empty
  std::vector<Alloc> running_;
  unsigned free_gpus_ = 0;                    // GPUs with is_free()
  unsigned max_c_ = 0;                        // most GPUs on one node
  std::vector<std::uint64_t> class_cap_;      // descending
  mutable std::vector<unsigned> scratch_[3];  // choose_gpus' working lists
  // WholeNodes' GPUs freed per node, all and not degraded: zero outside its lifetime.
  mutable std::vector<std::uint16_t> freed_;
  mutable std::vector<std::uint16_t> freed_ok_;
  mutable std::vector<unsigned> whole_touched_;  // WholeNodes' lists, kept between its uses
  mutable std::vector<unsigned> whole_became_;
  std::vector<NodeSet> all_;  // [cls][free]
  std::vector<NodeSet> ok_;   // [cls][free_ok]
  NodeSet shared_nodes_;      // nodes with a GPU that shared jobs use
  // Nodes whose GPUs may hold more memory than their class says: scanned when a job asks for
  // more than the class (a live server with memory used outside the queue; mixed GPU models).
  std::vector<unsigned> scan_nodes_;
  std::map<std::string, NodeSet, std::less<>> model_nodes_;  // Node::model → its nodes
  // Union of model_nodes_ per distinct Job::models; map nodes, so Need::allowed stays valid.
  mutable std::map<std::vector<std::string>, NodeSet> allowed_;
};

// The nodes left whole (every GPU free) as running jobs end, counted without changing the
// state. For a request that takes whole nodes (ClusterState::takes_whole_nodes) the search
// asks only how many nodes have every GPU free (find's node count and phase), and find and
// prefer_busy then take every GPU of the first such nodes by index: released on the state
// itself, a 4,096-GPU reservation moved thousands of GPUs through the indexes and back on
// every backfill pass. Holds the state's scratch counts while it lives: one at a time.
class WholeNodes {
 public:
  WholeNodes(const ClusterState& state, const Need& need);
  ~WholeNodes();
  WholeNodes(const WholeNodes&) = delete;
  WholeNodes& operator=(const WholeNodes&) = delete;

  // Counts the GPUs the end of `a` frees. False when one of them has another holder too (the
  // count would then depend on which ends first): the caller releases for real instead.
  bool release(const Alloc& a);
  // Nodes with every GPU free (kOk: and none degraded) after the releases so far.
  [[nodiscard]] unsigned whole(Phase p) const { return whole_[p == Phase::kOk ? 0 : 1]; }
  // Every GPU of the first `k` nodes by index whole in phase `p`: find's choice, and
  // prefer_busy's, on the state with those releases made.
  [[nodiscard]] Alloc pick(Phase p, unsigned k) const;

 private:
  const ClusterState& s_;
  const Need& need_;
  // The state's lists, cleared here rather than allocated per reservation.
  std::vector<unsigned>& touched_;  // nodes with a GPU freed
  std::vector<unsigned>& became_;   // nodes made whole (phase kAll)
  unsigned whole_[2] = {0, 0};      // kOk, kAll
};

}  // namespace cardiac::sched::detail
