// SPDX-License-Identifier: Apache-2.0
// Scheduling passes over a cluster state kept between them, for a caller that knows every
// start, end and health change (the simulator): a pass costs what the pending queue costs,
// not a rebuild of every GPU of the cluster. The pass itself is schedule()'s, unchanged.
#pragma once

#include <memory>
#include <vector>

#include "sched/sched.h"

namespace cardiac::sched {

class Session {
 public:
  // Every GPU of `nodes` must be usable (not fenced, not busy outside) here; set_health
  // changes that afterwards.
  explicit Session(std::vector<Node> nodes);
  ~Session();
  Session(Session&&) noexcept;
  Session& operator=(Session&&) noexcept;
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // schedule() on the current cluster; the jobs it starts become running jobs (their time
  // limits from `pending`), so the next pass sees them.
  ScheduleResult pass(const std::vector<Job>& pending, const Usage& usage,
                      const PolicyConfig& policy, TimeNs now,
                      const std::vector<JobId>& finished_ok = {});
  // A running job ended, whatever the reason: its GPUs are free again. Unknown ids: no-op.
  void end(JobId id);
  // `gpu` is the GPU's position on its node.
  void set_health(unsigned node, unsigned gpu, GpuHealth health);

  [[nodiscard]] const Cluster& cluster() const;
  [[nodiscard]] bool running(JobId id) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace cardiac::sched
