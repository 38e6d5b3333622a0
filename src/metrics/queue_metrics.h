// SPDX-License-Identifier: Apache-2.0
// The job queue's numbers for /metrics, filled by the queue (src/queue) and rendered with the
// rest of the registry (Scope::kQueue*).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace cardiac::metrics {

struct QueueMetrics {
  std::map<std::string, double> jobs_by_state;  // "pending" → 3, every state present
  // Wait from submit to first start, as a histogram: upper bounds in seconds (ascending) and
  // the count of waits in each bucket (not cumulative; the renderer accumulates, +Inf last).
  std::vector<double> wait_bounds;
  std::vector<std::uint64_t> wait_counts;  // wait_bounds.size() + 1 entries (the last: +Inf)
  double wait_sum_seconds = 0;
  double gpus_allocated = 0;
  double gpus_allocated_idle = 0;  // allocated, and utilization below 10 % in the last sample
  double gpus_fenced = 0;
  std::map<std::string, double> user_gpu_seconds;  // user → GPU-seconds served, never decays
  // GPU index → the ids of the running jobs holding it: cardiac_gpu_job_info{source="cardiac"}
  // even where a job's processes cannot be read or have not opened the GPU yet.
  std::map<unsigned, std::vector<std::int64_t>> gpu_jobs;

  bool operator==(const QueueMetrics&) const = default;
};

}  // namespace cardiac::metrics
