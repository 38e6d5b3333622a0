// SPDX-License-Identifier: Apache-2.0
// Host verdict: memory, swap, disks, CPU, D-state processes and NIC errors.
#include "core/format.h"
#include "core/units.h"
#include "health/verdict.h"

namespace cardiac::health {
namespace {

constexpr double kMemAvailableWarnPct = 5;  // default rule: memory available < 5 %
constexpr double kDiskWarnPct = 90;         // default rule: disk > 90 % full
constexpr double kDiskFailPct = 97;
constexpr double kCpuWarnPct = 95;
// A little swap in use is normal (idle pages pushed out); a tenth of it means real pressure.
constexpr double kSwapUsedWarnFraction = 0.10;
constexpr double kNicWarnPct = 90;

void judge_memory(const host::HostSnapshot& h, Verdict& v) {
  if (!h.memory || h.memory->total == 0) return;
  const auto& m = *h.memory;
  if (m.available) {
    double pct = 100.0 * static_cast<double>(*m.available) / static_cast<double>(m.total);
    if (pct < kMemAvailableWarnPct) {
      v.add(Level::kWarn, "memory_low",
            fmt::format("only {} of {} memory available ({:.1f} %)", format_bytes(*m.available),
                        format_bytes(m.total), pct));
    }
  }
  if (m.swap_total && m.swap_free && *m.swap_total > 0) {
    std::uint64_t used = *m.swap_total - std::min(*m.swap_free, *m.swap_total);
    if (static_cast<double>(used) > kSwapUsedWarnFraction * static_cast<double>(*m.swap_total)) {
      v.add(Level::kWarn, "swapping",
            fmt::format("{} of swap in use: the host is short of memory", format_bytes(used)));
    }
  }
}

void judge_disks(const host::HostSnapshot& h, Verdict& v) {
  for (const auto& fs : h.filesystems) {
    auto pct = host::used_percent(fs);
    if (!pct || !fs.available) continue;
    double used = *pct;
    if (used >= kDiskFailPct) {
      v.add(Level::kFail, "disk_full",
            fmt::format("{} is {:.0f} % full ({} left)", fs.mount_point, used,
                        format_bytes(*fs.available)));
    } else if (used >= kDiskWarnPct) {
      v.add(Level::kWarn, "disk_nearly_full",
            fmt::format("{} is {:.0f} % full ({} left)", fs.mount_point, used,
                        format_bytes(*fs.available)));
    }
  }
}

void judge_processes(const host::HostSnapshot& h, Verdict& v) {
  for (const auto& p : h.dstate_processes) {
    std::string wchan = p.wchan.value_or("");
    bool in_nvidia = in_nvidia_driver(wchan);
    std::string what = p.cmdline.empty() ? p.comm : p.cmdline;
    v.add(in_nvidia ? Level::kFail : Level::kWarn, in_nvidia ? "dstate_in_driver" : "dstate",
          fmt::format("process {} ({}) stuck in uninterruptible sleep{}", p.pid, what,
                      wchan.empty() ? "" : " in " + wchan));
  }
}

void judge_rates(const host::HostRates& r, Verdict& v) {
  if (r.cpu.total && r.cpu.total->busy >= kCpuWarnPct) {
    v.add(Level::kWarn, "cpu_saturated", fmt::format("CPU {:.0f} % busy", r.cpu.total->busy));
  }
  for (const auto& n : r.nics) {
    double util = std::max(n.rx_util_percent.value_or(0), n.tx_util_percent.value_or(0));
    if (util >= kNicWarnPct) {
      v.add(Level::kWarn, "nic_saturated",
            fmt::format("{} at {:.0f} % of link speed", n.name, util));
    }
    if (n.rx_errors + n.tx_errors + n.rx_drops + n.tx_drops > 0) {
      v.add(Level::kWarn, "nic_errors",
            fmt::format("{}: {} errors, {} drops in the last {:.1f} s", n.name,
                        n.rx_errors + n.tx_errors, n.rx_drops + n.tx_drops, r.interval_s));
    }
  }
}

// A host file that could not be read or parsed leaves its readings out; without this the
// verdict would say OK about exactly the parts it could not see.
void judge_reads(const host::HostSnapshot& h, Verdict& v) {
  for (const auto& e : h.errors) v.add(Level::kWarn, "host_read_error", "could not read " + e);
}

}  // namespace

bool in_nvidia_driver(std::string_view wchan) {
  return wchan.starts_with("nv_") || wchan.starts_with("_nv") || wchan.starts_with("os_") ||
         wchan.starts_with("uvm_") || wchan.find("nvidia") != std::string_view::npos;
}

Verdict judge_host(const host::HostSnapshot& h, const host::HostRates* rates) {
  Verdict v;
  if (h.timed_out) {
    v.add(Level::kWarn, "host_unresponsive",
          "host readings did not finish in time: a file system (NFS?) or /proc is not answering");
  }
  judge_reads(h, v);
  judge_memory(h, v);
  judge_disks(h, v);
  judge_processes(h, v);
  if (rates) judge_rates(*rates, v);
  return v;
}

}  // namespace cardiac::health
