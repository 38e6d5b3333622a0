// SPDX-License-Identifier: Apache-2.0
// The doctor's result model: findings (category, severity, GPU, evidence, explanation, next
// steps, confidence) and the report that holds them with every kernel-log event recognised.
// The JSON form is the contract in docs/doctor.md.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/clock.h"
#include "core/severity.h"
#include "kmsg/event.h"
#include "netproc/traffic.h"

namespace cardiac::doctor {

enum class Category { kHardware, kDriver, kResources, kNetwork, kConfiguration, kSecurity };
using cardiac::Severity;  // core/severity.h, shared with alert rules
// How sure the finding is: high = the evidence names the cause directly (an Xid 48 line, a
// DBE counter); medium = a strong pattern; low = consistent with the cause, but thin.
enum class Confidence { kLow = 0, kMedium = 1, kHigh = 2 };

std::string_view category_name(Category c);  // "hardware", "driver", ..., "security"
using cardiac::severity_name;
std::string_view confidence_name(Confidence c);  // "low", "medium", "high"

// The GPU a finding concerns. Every part is optional: a kernel line may name only a bus id,
// NVML may know the index and UUID, the driver's boot lines the serial.
struct GpuRef {
  std::optional<unsigned> index{};
  std::string pci_bus_id{};  // "0000:3b:00.0"
  std::string uuid{};        // "GPU-…"
  std::string serial{};
  std::string name{};  // "NVIDIA H100 80GB HBM3"
  [[nodiscard]] bool empty() const {
    return !index && pci_bus_id.empty() && uuid.empty() && serial.empty();
  }
  // "GPU 3 (0000:3b:00.0)", "GPU 0000:3b:00.0", or "" when empty.
  [[nodiscard]] std::string label() const;
};

// One piece of evidence. `kind`: "log" (a kernel-log line, `text` is the line verbatim),
// "reading" (a value read now), "counter" (a counter and how it moved), "probe" (a network
// measurement), "process" (a process and its state). `series` holds points for a chart.
struct Evidence {
  std::string kind{};
  std::string text{};
  std::optional<TimeNs> time{};
  std::string source{};  // "kmsg:/var/log/kern.log:1234", "nvml", "/proc/stat", "probe"
  // Chart data (optional): what is plotted, its unit and an optional threshold line.
  std::string metric{};
  std::string unit{};
  std::vector<std::pair<TimeNs, double>> series{};
  std::optional<double> threshold{};
};

// One outcome of a cross-check and what it means.
struct Outcome {
  std::string observation{};  // "the fault follows the card to the good server"
  std::string meaning{};      // "the card is faulty: RMA it"
};

// The swap procedure for a suspect card, its physical checks and the room.
struct CrossCheckPlan {
  std::vector<std::string> steps{};  // in order
  std::vector<Outcome> outcomes{};
  std::vector<std::string> physical_checks{};
  std::string environment{};  // the room: "16–25 °C inlet for air cooling"
};

// A job with a process on the finding's GPU when the GPU was sampled (jobmap).
struct JobOnGpu {
  std::string source{};  // "slurm" or "cardiac"
  std::string id{};
  bool operator==(const JobOnGpu&) const = default;
};

struct Finding {
  std::string id{};  // stable key: "xid.79", "gpu.ecc.dbe", "resources.data_loading", …
  Category category = Category::kHardware;
  Severity severity = Severity::kInfo;
  Confidence confidence = Confidence::kMedium;
  GpuRef gpu{};  // empty for host-wide findings
  std::string title{};
  std::string explanation{};  // plain words: what it means and why we think so
  std::vector<Evidence> evidence{};
  std::vector<std::string> actions{};  // next steps, in order
  std::optional<CrossCheckPlan> cross_check{};
  std::vector<JobOnGpu> jobs{};  // the jobs on `gpu` in the latest sample (add_gpu_jobs)
  // The runbook for `id` (finding_ids.h: "/usr/share/doc/cardiac/runbooks/xid.79.md"); set by
  // diagnose(), "" for an id the registry does not know.
  std::string runbook{};
};

// What the run looked at, so the reader knows what the absence of a finding means.
struct Sources {
  bool live = true;        // live machine (false with --offline)
  std::string root = "/";  // host tree
  std::string kmsg{};      // "/dev/kmsg", "journalctl -k", a file, or "" when none was read
  std::string db{};        // agent store used for history, or ""
  DurationNs window = 0;   // sampling window actually used
  unsigned gpu_samples = 0;
  unsigned host_samples = 0;
  std::vector<std::string> skipped{};  // "network: no targets and no default gateway", …
  // Every network probe and how it went, passed or not: "tcp://10.0.0.5:443 (tcp
  // 10.0.0.5:443): 10 of 10 answered, median 0.4 ms: ok".
  std::vector<std::string> probes{};
};

struct Report {
  // When the evidence was taken: the run's time live, the capture's (.cardiac/taken_at) on
  // captured data; 0 when a capture does not say.
  TimeNs generated_at = 0;
  std::string hostname{};
  Sources sources{};
  std::vector<GpuRef> gpus{};       // every GPU known from NVML, the PCI bus or the kernel log
  std::vector<Finding> findings{};  // worst first
  std::vector<kmsg::KernelEvent> events{};  // every kernel-log event recognised, in log order
  // The top talkers over the sampling window (live runs only).
  std::optional<netproc::Traffic> traffic{};
  [[nodiscard]] Severity worst() const;  // kInfo when there are no findings
};

// Sorts findings worst first, then by category, GPU index and id; stable for equal keys.
void sort_findings(std::vector<Finding>& findings);

}  // namespace cardiac::doctor
