// SPDX-License-Identifier: Apache-2.0
// PendingQueue: the pending jobs in policy order, lanes per association under fair share.
#include "sim/pending_queue.h"

#include <algorithm>
#include <limits>

namespace cardiac::sim::detail {

// Reads the lanes in the queue's order: a merge of the lanes by (lane key, job key), so a
// pass pays a heap step per job it reads, whatever waits behind.
class PendingQueue::Cursor final : public sched::OrderedPending {
 public:
  explicit Cursor(const PendingQueue& q) : q_(q) {}

  void reset() {
    heads_.clear();
    for (unsigned l = 0; l < q_.lanes_.size(); ++l) {
      if (!q_.lanes_[l].jobs.empty()) heads_.push_back(Head{l, q_.lanes_[l].jobs.begin()});
    }
    std::make_heap(heads_.begin(), heads_.end(), After{&q_});
  }

  const sched::Job* next() override {
    if (heads_.empty()) return nullptr;
    std::pop_heap(heads_.begin(), heads_.end(), After{&q_});
    Head& h = heads_.back();
    const sched::Job* job = &h.at->second;
    if (++h.at == q_.lanes_[h.lane].jobs.end()) {
      heads_.pop_back();
    } else {
      std::push_heap(heads_.begin(), heads_.end(), After{&q_});
    }
    return job;
  }

  [[nodiscard]] Least least() const override {
    return Least{.gpus = q_.smallest_gpus(),
                 .shared_memory = q_.shared_memory_.empty()
                                      ? std::numeric_limits<std::uint64_t>::max()
                                      : q_.shared_memory_.begin()->first};
  }

  [[nodiscard]] bool contains(sched::JobId id) const override {
    return id >= 0 && static_cast<std::size_t>(id) < q_.where_.size() &&
           q_.where_[static_cast<std::size_t>(id)].queued;
  }

 private:
  struct Head {
    unsigned lane = 0;
    Jobs::const_iterator at;
  };
  // Heap order: a comes after b (the heap's top is the first in queue order).
  struct After {
    const PendingQueue* q;
    bool operator()(const Head& a, const Head& b) const {
      const double ka = q->lanes_[a.lane].key;
      const double kb = q->lanes_[b.lane].key;
      if (ka != kb) return ka < kb;
      return Before{}(b.at->first, a.at->first);
    }
  };

  const PendingQueue& q_;
  std::vector<Head> heads_;
};

PendingQueue::PendingQueue(const sched::PolicyConfig& policy, DurationNs calc_period,
                           double cluster_gpus)
    : policy_(policy),
      period_(std::max<DurationNs>(calc_period, 0)),
      cluster_gpus_(cluster_gpus),
      lanes_(1),
      cursor_(std::make_unique<Cursor>(*this)) {}

PendingQueue::~PendingQueue() = default;

bool PendingQueue::uses_factors() const {
  return policy_.order == sched::Order::kPriority || policy_.order == sched::Order::kFairshare;
}

bool PendingQueue::by_association() const {
  return policy_.order == sched::Order::kFairshare;
}

unsigned PendingQueue::association(const sched::Job& job) {
  auto [it, added] =
      assoc_of_.try_emplace({job.user, job.account}, static_cast<unsigned>(assocs_.size()));
  if (added) {
    assocs_.push_back(it->first);
    live_.push_back(0);
    factor_.emplace_back();
    if (by_association()) lanes_.resize(assocs_.size());
  }
  return it->second;
}

void PendingQueue::compute_factors(const sched::Usage& usage) {
  std::vector<std::pair<std::string, std::string>> live;
  std::vector<unsigned> index;
  for (unsigned a = 0; a < assocs_.size(); ++a) {
    if (live_[a] == 0) continue;  // keeps the factor it had when it last had jobs
    live.push_back(assocs_[a]);
    index.push_back(a);
  }
  const std::vector<double> f = sched::fairshare_factors(usage, policy_, live);
  for (std::size_t i = 0; i < index.size(); ++i) factor_[index[i]] = f[i];
  ++recomputations_;
}

sched::PriorityScale PendingQueue::current_scale() const {
  sched::PriorityScale s{.total_gpus = cluster_gpus_, .lowest = 0, .highest = 0};
  if (!qos_.empty()) {
    s.lowest = std::min(0, qos_.begin()->first);
    s.highest = std::max(0, qos_.rbegin()->first);
  }
  return s;
}

double PendingQueue::key_of(const sched::Job& job, unsigned assoc, TimeNs now,
                            const sched::PriorityScale& scale) const {
  switch (policy_.order) {
    case sched::Order::kPriority:
      return sched::priority_of(job, factor_[assoc].value_or(0), scale, policy_.weights, now).total;
    case sched::Order::kFairshare:
      return 0;  // the lane's key orders it
    default:
      return sched::order_key(policy_.order, job, 0, 0);
  }
}

bool PendingQueue::push(sched::Job job, const sched::Usage& usage, TimeNs now) {
  const unsigned a = association(job);
  ++live_[a];
  // A new association has no factor yet: computed now, for it and (from now on) the rest.
  // One that had jobs before keeps its last factor until the next recomputation.
  if (uses_factors() && !factor_[a]) compute_factors(usage);
  const auto id = static_cast<std::size_t>(job.id);
  if (where_.size() <= id) where_.resize(std::max(id + 1, where_.size() * 2));
  const unsigned lane = by_association() ? a : 0;
  Lane& l = lanes_[lane];
  if (by_association() && l.jobs.empty()) l.key = factor_[a].value_or(0);
  ++gpus_[job.gpus];
  ++qos_[job.priority];  // the QOS range it is placed by includes it
  if (job.shared) ++shared_memory_[job.gpu_memory];
  const Key k{.key = key_of(job, a, now, current_scale()), .submit = job.submit_time, .id = job.id};
  const auto it = l.jobs.emplace(k, std::move(job)).first;
  where_[id] = Where{.pushed = true, .queued = true, .lane = lane, .assoc = a, .key = k};
  ++size_;
  return lanes_.size() > 1 || std::next(it) != l.jobs.end();
}

void PendingQueue::erase(sched::JobId id) {
  if (id < 0 || static_cast<std::size_t>(id) >= where_.size()) return;
  Where& w = where_[static_cast<std::size_t>(id)];
  if (!w.queued) return;
  Jobs& jobs = lanes_[w.lane].jobs;
  const auto it = jobs.find(w.key);
  const sched::Job& job = it->second;
  if (auto g = gpus_.find(job.gpus); --g->second == 0) gpus_.erase(g);
  if (auto q = qos_.find(job.priority); --q->second == 0) qos_.erase(q);
  if (job.shared) {
    if (auto m = shared_memory_.find(job.gpu_memory); --m->second == 0) shared_memory_.erase(m);
  }
  jobs.erase(it);
  w.queued = false;
  --size_;
}

void PendingQueue::left(sched::JobId id) {
  // The association it was pushed with, kept after it left the queue: no lookup by name.
  if (id < 0 || static_cast<std::size_t>(id) >= where_.size()) return;
  const Where& w = where_[static_cast<std::size_t>(id)];
  if (w.pushed && live_[w.assoc] > 0) --live_[w.assoc];
}

void PendingQueue::refresh(const sched::Usage& usage, TimeNs now) {
  if (!uses_factors()) return;
  if (period_ > 0 && computed_at_ && now - *computed_at_ < period_) return;
  computed_at_ = now;
  compute_factors(usage);
  if (by_association()) {
    for (unsigned a = 0; a < assocs_.size(); ++a) lanes_[a].key = factor_[a].value_or(0);
    return;
  }
  // Every job re-keyed: the nodes move to a fresh map, so job addresses stay the same.
  const sched::PriorityScale scale = current_scale();
  Jobs fresh;
  Jobs& jobs = lanes_[0].jobs;
  while (!jobs.empty()) {
    auto node = jobs.extract(jobs.begin());
    Where& w = where_[static_cast<std::size_t>(node.key().id)];
    w.key.key = key_of(node.mapped(), w.assoc, now, scale);
    node.key() = w.key;
    fresh.insert(std::move(node));
  }
  jobs = std::move(fresh);
}

sched::OrderedPending& PendingQueue::ordered() {
  cursor_->reset();
  return *cursor_;
}

std::vector<sched::Job> PendingQueue::jobs() const {
  std::vector<sched::Job> out;
  out.reserve(size_);
  for (const Lane& l : lanes_) {
    for (const auto& [key, job] : l.jobs) out.push_back(job);
  }
  return out;
}

unsigned PendingQueue::smallest_gpus() const {
  return gpus_.empty() ? std::numeric_limits<unsigned>::max() : gpus_.begin()->first;
}

}  // namespace cardiac::sim::detail
