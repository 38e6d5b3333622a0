// SPDX-License-Identifier: Apache-2.0
// Registry rows for each GPU: state and verdict here, then one per field of nvml/gpu_fields.def.
#include "metrics/registry.h"

// GCC before 13 warns about members left out of a designated initializer even when they
// have default member initializers (GCC bug 96868); the rows rely on those defaults.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace cardiac::metrics {
namespace {

using health::GpuStatus;
using MT = MetricType;

template <class T>
std::optional<double> opt(const std::optional<T>& v) {
  if (!v) return std::nullopt;
  return static_cast<double>(*v);
}

constexpr Scale kSame{};
constexpr Scale kPercentToRatio{1, 100};
constexpr Scale kMilliToBase{1, 1000};
constexpr Scale kMhzToHz{1e6, 1};
constexpr Scale kBytesToMib{1, 1024.0 * 1024.0};
constexpr Scale kKibToBytes{1024, 1};

// Shorthand for a GPU reading field, so each row below stays one line of intent.
#define CARDIAC_GPU(member) \
  [](const GpuStatus& s) -> std::optional<double> { return opt(s.reading.member); }

}  // namespace

std::vector<MetricDef> gpu_metric_rows() {
  std::vector<MetricDef> r = {
      // --- Per GPU: state and verdict.
      {.name = "cardiac_gpu_up",
       .help = "1 when the GPU answered NVML in the latest sample, 0 when it is lost, needs a "
               "reset, errored, hung or was not sampled.",
       .scope = Scope::kGpu,
       .source = "GpuReading.health",
       .gpu = [](const GpuStatus& s) -> std::optional<double> {
         return s.reading.health == nvml::DeviceHealth::kOk ? 1.0 : 0.0;
       }},
      {.name = "cardiac_gpu_health",
       .help = "Verdict of the GPU: 0 OK, 1 WARN, 2 FAIL.",
       .scope = Scope::kGpu,
       .source = "health::judge_gpu",
       .gpu = [](const GpuStatus& s) -> std::optional<double> {
         return static_cast<double>(s.verdict.level);
       }},
      {.name = "cardiac_gpu_sample_duration_seconds",
       .unit = "seconds",
       .help = "Time spent inside NVML reading this GPU in the latest sample.",
       .scope = Scope::kGpu,
       .source = "GpuReading.sample_duration_us (us)",
       .scale = {1, 1e6},
       .gpu = [](const GpuStatus& s) -> std::optional<double> {
         if (s.reading.health == nvml::DeviceHealth::kNotSampled) return std::nullopt;
         return static_cast<double>(s.reading.sample_duration_us);
       }},
      {.name = "cardiac_gpu_clock_event_reason",
       .help = "1 while the clock event (throttle) reason is active, else 0; one series per "
               "reason known to this build.",
       .scope = Scope::kClockEvent,
       .source = "GpuReading.clock_event_reasons (bit mask)"},
      {.name = "cardiac_gpu_xid_errors_total",
       .type = MT::kCounter,
       .help = "Xid errors seen in the kernel log since the agent started, per Xid code.",
       .scope = Scope::kXidCount,
       .source = "kernel log watcher"},
      {.name = "cardiac_gpu_kernel_faults_total",
       .type = MT::kCounter,
       .help = "Kernel-log faults seen since the agent started, per fault class (xid_critical, "
               "fallen_off_bus, reset_required, nvlink_fatal, sxid_fatal); 0 for every GPU and "
               "GPU class while the kernel log is read; while it cannot be (cardiac_kmsg_up 0) "
               "only non-zero counts appear.",
       .scope = Scope::kFaultCount,
       .source = "kernel log watcher and NVML Xid events, classed by health/faults"},
      {.name = "cardiac_gpu_last_xid",
       .help = "Code of the most recent Xid seen since the agent started; 0 when none.",
       .scope = Scope::kLastXid,
       .source = "kernel log watcher",
       .dcgm = {"DCGM_FI_DEV_XID_ERRORS", MT::kGauge, "Xid code", kSame}},
      {.name = "cardiac_gpu_job_info",
       .help = "1 for each job with a process on the GPU in the latest sample: job is the "
               "Slurm job id (source=\"slurm\") or the cardiac queue job id "
               "(source=\"cardiac\"). Put the job on any GPU series with "
               "`* on (hostname, gpu) group_left (job, source) cardiac_gpu_job_info`.",
       .scope = Scope::kGpuJob,
       .source = "GpuProcess.job: /proc/<pid>/cgroup (job_<id>), else SLURM_JOB_ID or "
                 "CARDIAC_JOB_ID in /proc/<pid>/environ; and the queue's running jobs"},
  };
  // One row per exported field of gpu_fields.def, in its order: a field is added there only.
#define CARDIAC_GPU_FIELD(member, metric, type_, unit_, source_unit, scale_, help_, dcgm_name, \
                          dcgm_type, dcgm_unit, dcgm_scale)                                    \
  if (!std::string_view(metric).empty()) {                                                     \
    r.push_back({.name = metric,                                                               \
                 .type = MT::type_,                                                            \
                 .unit = unit_,                                                                \
                 .help = help_,                                                                \
                 .scope = Scope::kGpu,                                                         \
                 .source = "GpuReading." #member source_unit,                                  \
                 .scale = scale_,                                                              \
                 .dcgm = {dcgm_name, MT::dcgm_type, dcgm_unit, dcgm_scale},                    \
                 .gpu = CARDIAC_GPU(member)});                                                 \
  }
#include "nvml/gpu_fields.def"
#undef CARDIAC_GPU_FIELD
  return r;
}

#undef CARDIAC_GPU

}  // namespace cardiac::metrics
