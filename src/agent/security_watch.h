// SPDX-License-Identifier: Apache-2.0
// Signs of compromise in the agent: the doctor's security checks (doctor/checks/security.cpp,
// traffic.cpp) run once per [security] watch_interval over the live host, so that a miner on a
// GPU, a second UID 0 account or a process flooding the uplink reaches a person through the
// default rules and the notifiers, not only the next `cardiac doctor` someone runs. Each
// finding becomes one rule point, repeated on every sample until the next scan:
//
//   security_<finding>{finding, summary, runbook}   the finding's severity: 1 info, 2 warning,
//                                                    3 critical
//
// e.g. security_gpu_cryptojacking{finding="security.gpu_cryptojacking", summary="pid 4242
// (xmrig) is mining cryptocurrency on 1 GPU", runbook=".../security.gpu_cryptojacking.md"} = 3.
// A sign that is gone at the next scan is told as 0 for one interval (its alert resolves at
// once), then left out.
//
// Its inputs over the interval: a dozen GPU samples (spread evenly; "busy for long" needs them),
// the processes and sockets of /proc (doctor::read_security_facts), the ports seen listening
// (seeded from the store at start, so a restart does not make every port "new"), and on the
// live root the per-process traffic between two scans (netproc).
#pragma once

#include <cstddef>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "agent/parts.h"
#include "core/clock.h"
#include "doctor/finding.h"
#include "doctor/input.h"
#include "netproc/traffic.h"
#include "nvml/gpu.h"
#include "platform/fs.h"
#include "rules/sample_view.h"
#include "store/listen_ports.h"

namespace cardiac::agent {

struct SecurityWatchOptions {
  DurationNs every = 60 * kNsPerSec;  // [security] watch_interval; 0: never scans
  doctor::DoctorConfig doctor{};      // the allow lists ([security])
  // Per-process traffic (netlink sock_diag) between two scans: only where the FileSystem is the
  // live root, since sockets cannot be read from a captured tree.
  bool traffic = true;
};

// The point's metric for a finding id: "security.gpu_cryptojacking" → "security_gpu_cryptojacking".
std::string security_metric(const std::string& finding_id);
// The severity as a point's value: 1 info, 2 warning, 3 critical.
double severity_value(doctor::Severity s);

class SecurityWatch {
 public:
  // How many GPU samples one interval keeps for the checks ("busy for most of the window").
  static constexpr std::size_t kGpuSamples = 12;

  SecurityWatch(SecurityWatchOptions options, std::shared_ptr<const FileSystem> fs,
                const Clock& clock);
  // The ports the store has recorded (store::listen_ports), read once at start.
  void seed_ports(const std::vector<store::ListenPort>& seen);
  // One sample (the sampler's thread): keeps the GPU sample when its turn comes, records the
  // listening ports when the collect stage read them, scans when the interval has passed (and at
  // the first sample), and appends the last scan's points to `out`.
  void add(const nvml::GpuSnapshot& gpus, const HostView& host,
           const std::optional<std::vector<store::ListenPort>>& ports, TimeNs now,
           std::vector<rules::Point>& out);
  // The last scan's findings, worst first.
  [[nodiscard]] const std::vector<doctor::Finding>& findings() const { return findings_; }
  [[nodiscard]] std::size_t scans() const { return scans_; }

 private:
  void scan(const HostView& host, TimeNs now, TimeNs mono);

  SecurityWatchOptions options_;
  std::shared_ptr<const FileSystem> fs_;
  const Clock& clock_;
  std::deque<nvml::GpuSnapshot> gpu_samples_;
  std::optional<TimeNs> last_kept_;  // monotonic
  std::optional<TimeNs> last_scan_;  // monotonic
  // (proto, port) → first and last seen, wall clock.
  std::map<std::pair<std::string, unsigned>, std::pair<TimeNs, TimeNs>> ports_;
  std::optional<netproc::Snapshot> sockets_;  // the previous scan's, for the traffic rates
  std::vector<doctor::Finding> findings_;
  std::vector<rules::Point> points_;
  std::size_t scans_ = 0;
  bool blind_told_ = false;   // the unreadable executables were logged
  bool unseen_told_ = false;  // GPU processes missing from /proc were logged
};

}  // namespace cardiac::agent
