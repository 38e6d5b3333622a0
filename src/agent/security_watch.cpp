// SPDX-License-Identifier: Apache-2.0
#include "agent/security_watch.h"

#include <unistd.h>

#include <algorithm>

#include "core/format.h"
#include "core/log.h"
#include "doctor/checks/checks.h"
#include "doctor/finding_ids.h"
#include "doctor/security_facts.h"
#include "netproc/snapshot.h"

namespace cardiac::agent {

std::string security_metric(const std::string& finding_id) {
  std::string m = finding_id;
  std::replace(m.begin(), m.end(), '.', '_');
  return m;
}

double severity_value(doctor::Severity s) {
  switch (s) {
    case doctor::Severity::kCritical:
      return 3;
    case doctor::Severity::kWarning:
      return 2;
    default:
      return 1;
  }
}

SecurityWatch::SecurityWatch(SecurityWatchOptions options, std::shared_ptr<const FileSystem> fs,
                             const Clock& clock)
    : options_(std::move(options)), fs_(std::move(fs)), clock_(clock) {
  // Sockets are read through netlink, which sees only the live host.
  if (fs_->root() != "/") options_.traffic = false;
}

void SecurityWatch::seed_ports(const std::vector<store::ListenPort>& seen) {
  for (const auto& p : seen) ports_[{p.proto, p.port}] = {p.first_seen, p.last_seen};
}

void SecurityWatch::add(const nvml::GpuSnapshot& gpus, const HostView& host,
                        const std::optional<std::vector<store::ListenPort>>& ports, TimeNs now,
                        std::vector<rules::Point>& out) {
  if (options_.every <= 0) return;
  const TimeNs mono = clock_.monotonic();
  // An even spread over one interval: a sample every every/kGpuSamples, the oldest dropped.
  const DurationNs stride = options_.every / static_cast<DurationNs>(kGpuSamples);
  if (!last_kept_ || mono - *last_kept_ >= stride) {
    last_kept_ = mono;
    gpu_samples_.push_back(gpus);
    while (gpu_samples_.size() > kGpuSamples) gpu_samples_.pop_front();
  }
  if (ports) {
    for (const auto& p : *ports) {
      auto [it, fresh] = ports_.try_emplace({p.proto, p.port}, now, now);
      if (!fresh) it->second.second = now;
    }
  }
  if (!last_scan_ || mono - *last_scan_ >= options_.every) {
    last_scan_ = mono;
    scan(host, now, mono);
  }
  out.insert(out.end(), points_.begin(), points_.end());
}

void SecurityWatch::scan(const HostView& host, TimeNs now, TimeNs mono) {
  doctor::DoctorInput in;
  in.now = now;
  in.fs = fs_;
  in.config = options_.doctor;
  in.gpu_samples.assign(gpu_samples_.begin(), gpu_samples_.end());
  if (host.snapshot) in.host_samples.push_back(*host.snapshot);
  in.rates = host.rates;

  // The GPU processes' jobs are looked up too (a job's process is not an intruder).
  std::vector<std::uint32_t> gpu_pids;
  if (!gpu_samples_.empty()) {
    for (const auto& g : gpu_samples_.back().gpus) {
      for (const auto& p : g.processes) gpu_pids.push_back(p.pid);
    }
  }
  in.security = doctor::read_security_facts(*fs_, gpu_pids);
  // A GPU process /proc does not show lives in another PID namespace (the agent in a container
  // without the host's PIDs): nothing about it can be judged, so it is not called an intruder.
  // (One that ended since the GPU sample is missing too; only when none of the latest sample's
  // processes is there is it worth a line in the log.)
  const bool none_seen =
      !gpu_pids.empty() && std::none_of(gpu_pids.begin(), gpu_pids.end(), [&](std::uint32_t pid) {
        return in.security->process(pid) != nullptr;
      });
  for (auto& sample : in.gpu_samples) {
    for (auto& g : sample.gpus) {
      std::erase_if(g.processes, [&](const nvml::GpuProcess& p) {
        return in.security->process(p.pid) == nullptr;
      });
    }
  }
  if (none_seen && !unseen_told_) {
    std::vector<std::uint32_t> some(
        gpu_pids.begin(), gpu_pids.begin() + std::min<std::ptrdiff_t>(3, std::ssize(gpu_pids)));
    log::warn(
        "security watch: none of the {} GPU processes NVML lists (pid {}{}) is in /proc, so they "
        "are not judged; an agent in another PID namespace (a container) sees only its own",
        gpu_pids.size(), fmt::join(some, ", "), gpu_pids.size() > some.size() ? ", …" : "");
  }
  unseen_told_ = none_seen;

  std::vector<doctor::SeenListenPort> seen;
  seen.reserve(ports_.size());
  for (const auto& [key, when] : ports_)
    seen.push_back({key.first, key.second, when.first, when.second});
  std::sort(seen.begin(), seen.end(),
            [](const auto& a, const auto& b) { return a.first_seen < b.first_seen; });
  in.seen_listen_ports = std::move(seen);

  if (options_.traffic) {
    netproc::Snapshot after = netproc::take_snapshot(*fs_, mono);
    if (sockets_ && after.taken_at - sockets_->taken_at >= kNsPerSec) {
      in.traffic = netproc::rate(
          *sockets_, after,
          netproc::pick_link(*fs_,
                             host.snapshot ? host.snapshot->nics : std::vector<host::NetDevice>{},
                             host.rates ? host.rates->nics : std::vector<host::NetRates>{}));
    }
    sockets_ = std::move(after);
  }

  std::vector<doctor::Finding> found;
  doctor::check_security(in, found);
  doctor::check_traffic(in, found);
  doctor::sort_findings(found);
  findings_ = std::move(found);
  std::vector<rules::Point> points;
  for (const auto& f : findings_) {
    points.push_back({security_metric(f.id),
                      {{"finding", f.id},
                       {"summary", f.title},
                       {"runbook", doctor::runbook_link(options_.doctor.runbook_base, f.id)}},
                      severity_value(f.severity)});
  }
  // A sign the last scan found and this one did not is told as 0 until the next scan, so that
  // its alert resolves now, not when its series goes stale.
  for (auto& old : points_) {
    if (old.value <= 0) continue;
    const bool still = std::any_of(points.begin(), points.end(), [&](const rules::Point& p) {
      return p.metric == old.metric && p.labels == old.labels;
    });
    if (!still) {
      old.value = 0;
      points.push_back(std::move(old));
    }
  }
  points_ = std::move(points);
  ++scans_;

  // Without root the executables of other users' processes cannot be read: say what the watch
  // is blind to, once (the count moves with every process that comes and goes). As root, one
  // that cannot be read ended during the scan.
  const std::size_t blind = ::geteuid() == 0 ? 0 : in.security->exe_unreadable;
  if (blind > 0 && !blind_told_) {
    log::warn(
        "security watch: the executable of {} process{} cannot be read (the agent is not "
        "root); a deleted or temporary-directory executable among them goes unseen",
        blind, blind == 1 ? "" : "es");
  }
  blind_told_ = blind > 0;
}

}  // namespace cardiac::agent
