// SPDX-License-Identifier: Apache-2.0
// From the agent's view of the machine to the scheduler's: which GPUs exist, how much memory
// each has, which are fenced (a fence row, or a critical finding right now) and which are busy
// with work the queue did not start. Pure apart from the process check it is handed.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "health/report.h"
#include "queue/job.h"
#include "queue/job_store.h"
#include "queue/machine_view.h"
#include "sched/sched.h"

namespace cardiac::queue {

// Xids after which a GPU gets no new work until someone clears its fence (health/faults.h).
const std::set<int>& fencing_xids();

// Why this GPU must not get work, from the agent's view (nullopt: nothing critical):
// health::fence_reason.
std::optional<std::string> critical_finding(
    const nvml::GpuReading& g, const std::map<std::pair<std::string, int>, std::uint64_t>& xids);

// True when the fence names this GPU: by UUID when both have one, by index otherwise.
bool fence_matches(const Fence& f, unsigned index, const std::string& uuid);

// Whether the fault behind a critical_finding() text may clear without a person ([queue]
// auto_unfence): an NVML error or an unresponsive GPU, and an Xid whose catalog action
// (health/faults) is neither a reset, a reboot nor the hardware. Never a lost GPU, a reset
// required, a double-bit ECC error, a row-remap failure or a reason it does not recognise.
bool fence_may_lift(std::string_view reason);

struct ClusterInput {
  const health::StatusReport* report = nullptr;
  std::map<std::pair<std::string, int>, std::uint64_t> xid_counts;
  std::vector<Fence> fences;  // active ones
  std::vector<Job> running;
  // GPUs with a critical alert firing (MachineView::critical_alerts): new work goes elsewhere
  // while other GPUs are free; they are not fenced.
  std::map<unsigned, std::string> critical_alerts;
  bool count_outside = true;
  // Whether a pid is (part of) a queue job. A pid that no longer exists must answer true (a
  // process that has gone holds no GPU).
  std::function<bool(std::uint32_t pid)> is_queue_or_gone;
  std::string hostname = "localhost";
};

struct ClusterView {
  sched::Cluster cluster;                        // one node, this machine
  std::map<unsigned, std::string> uuid_of;       // index → UUID
  std::map<unsigned, std::string> fenced;        // index → why (fence row or finding)
  std::map<unsigned, std::string> critical;      // index → critical finding right now
  std::map<unsigned, std::string> busy_outside;  // index → "pid 4242 (python)"
  std::map<unsigned, std::string> alerting;      // index → critical alert firing (used last)
  std::map<unsigned, unsigned> utilization;      // index → %, when known
};

ClusterView build_cluster(const ClusterInput& in);

// The current index of a GPU a job was given: by UUID (indices can change), else the index.
std::optional<unsigned> current_index(const ClusterView& v, const std::string& uuid,
                                      unsigned index);

// The scheduler's form of a queued job.
sched::Job to_sched_job(const Job& j);

}  // namespace cardiac::queue
