// SPDX-License-Identifier: Apache-2.0
// Registry rows for the GPU job queue (src/queue), present when the agent runs one.
#include "metrics/registry.h"

// GCC before 13 warns about members left out of a designated initializer even when they
// have default member initializers (GCC bug 96868); the rows rely on those defaults.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace cardiac::metrics {

std::vector<MetricDef> queue_metric_rows() {
  return {
      {.name = "cardiac_queue_jobs",
       .help = "Jobs in the queue's store by state (pending, held, running, completed, failed, "
               "timeout, cancelled, lost).",
       .scope = Scope::kQueueState,
       .source = "queue: jobs table"},
      {.name = "cardiac_queue_wait_seconds",
       .type = MetricType::kHistogram,
       .unit = "seconds",
       .help = "Time from submit to a job's first start, for jobs started since the agent "
               "started.",
       .scope = Scope::kQueueWait,
       .source = "queue: scheduling loop"},
      {.name = "cardiac_queue_gpus_allocated",
       .help = "GPUs held by running queue jobs.",
       .scope = Scope::kQueue,
       .source = "queue: running jobs",
       .queue = [](const QueueMetrics& q) -> std::optional<double> { return q.gpus_allocated; }},
      {.name = "cardiac_queue_gpus_allocated_idle",
       .help = "GPUs held by running queue jobs whose utilization was below 10 % in the latest "
               "sample: allocated but not used (\"busy but idle\").",
       .scope = Scope::kQueue,
       .source = "queue: running jobs and GpuReading.utilization_gpu",
       .queue = [](const QueueMetrics& q) -> std::optional<double> {
         return q.gpus_allocated_idle;
       }},
      {.name = "cardiac_queue_gpus_fenced",
       .help = "GPUs that get no new jobs: fenced by a person or by a critical finding.",
       .scope = Scope::kQueue,
       .source = "queue: fences and health",
       .queue = [](const QueueMetrics& q) -> std::optional<double> { return q.gpus_fenced; }},
      {.name = "cardiac_queue_user_gpu_seconds_total",
       .type = MetricType::kCounter,
       .unit = "seconds",
       .help = "GPU-seconds served to each user's queue jobs (GPUs × run time), never decayed.",
       .scope = Scope::kQueueUser,
       .source = "queue: queue_usage table and running jobs"},
  };
}

}  // namespace cardiac::metrics
