// SPDX-License-Identifier: Apache-2.0
// GPU links: the PCIe link's generation and width under load, PCIe replays, NVLink errors.
#include <algorithm>
#include <cmath>
#include <set>

#include "doctor/checks/gpu_hardware.h"

namespace cardiac::doctor::hardware_detail {

const host::PciDevice* sysfs_device(const DoctorInput& in, const GpuRef& g) {
  const auto* h = in.last_host();
  if (h == nullptr || !h->pci || g.pci_bus_id.empty()) return nullptr;
  for (const auto& d : h->pci->gpus) {
    if (nvml::normalize_pci_bus_id(d.bus_id) == g.pci_bus_id) return &d;
  }
  return nullptr;
}

bool link_degraded(const nvml::GpuReading& r) {
  return r.pcie_gen_current && r.pcie_gen_max && r.pcie_width_current && r.pcie_width_max &&
         (*r.pcie_gen_current < *r.pcie_gen_max || *r.pcie_width_current < *r.pcie_width_max);
}

std::string link_text(const nvml::GpuReading& r) {
  return fmt::format("PCIe gen{} x{} (capable of gen{} x{}), utilization {}",
                     r.pcie_gen_current.value_or(0), r.pcie_width_current.value_or(0),
                     r.pcie_gen_max.value_or(0), r.pcie_width_max.value_or(0),
                     r.utilization_gpu ? fmt::format("{} %", *r.utilization_gpu) : "n/a");
}

void check_pcie_link(const DoctorInput& in, const GpuWindow& w, const GpuRef& g,
                     std::vector<Finding>& out) {
  const Sample* loaded = nullptr;
  std::size_t n_loaded = 0;
  std::size_t n_loaded_degraded = 0;
  for (const auto& s : w.ok) {
    if (s.reading->utilization_gpu.value_or(0) < kBusyUtilization) continue;
    ++n_loaded;
    if (link_degraded(*s.reading)) {
      ++n_loaded_degraded;
      loaded = &s;
    }
  }
  const Sample& last = w.ok.back();
  if (!loaded && !link_degraded(*last.reading)) return;
  std::string who = describe(g);
  Finding f;
  if (loaded) {
    f = make_finding(
        "gpu.pcie.degraded", Category::kHardware, Severity::kWarning,
        n_loaded_degraded == n_loaded ? Confidence::kHigh : Confidence::kMedium, g,
        fmt::format("The PCIe link of {} is degraded under load", who),
        fmt::format("While busy ({} of {} busy samples) the link ran slower or narrower than the "
                    "card and slot support, which cuts host-to-GPU bandwidth. A link that trains "
                    "down under load is usually a seating, riser, cable or slot fault.",
                    n_loaded_degraded, n_loaded));
    f.evidence.push_back(evidence("reading", link_text(*loaded->reading), loaded->time));
    f.actions = {
        fmt::format("Power the server off and reseat {} in its slot, and its riser or cable if "
                    "it has one",
                    who),
        "Clean the card's gold fingers with isopropyl alcohol and look for debris or bent pins "
        "in the slot",
        "Check the BIOS settings of the slot (forced PCIe generation, bifurcation)",
        "If the link stays degraded, do the cross-check below: a narrow link that follows the "
        "card is the card",
    };
  } else {
    f = make_finding(
        "gpu.pcie.degraded", Category::kHardware, Severity::kInfo, Confidence::kLow, g,
        fmt::format("The PCIe link of {} was below its maximum while idle", who),
        "GPUs lower their link speed when idle to save power, so an idle link proves nothing. "
        "A narrower link (fewer lanes) is less usual than a slower one; judge it under load.");
    f.evidence.push_back(evidence("reading", link_text(*last.reading), last.time));
    f.actions = {fmt::format("Rerun `cardiac doctor` while a job runs on {}", who)};
  }
  if (const auto* d = sysfs_device(in, g); d && d->current_link_gts && d->current_link_width) {
    f.evidence.push_back(
        evidence("reading",
                 fmt::format("sysfs: link {} GT/s x{} of {} GT/s x{}", *d->current_link_gts,
                             *d->current_link_width, d->max_link_gts.value_or(0),
                             d->max_link_width.value_or(0)),
                 std::nullopt, "/sys/bus/pci/devices/" + d->bus_id));
  }
  out.push_back(std::move(f));
}

// DCGM's expected replays per minute per lane for each generation (health-checks.md 2.2).
double replay_limit_per_lane_min(unsigned gen) {
  constexpr double kPerLane[] = {0.15, 0.3, 0.48, 0.96, 1.92, 3.84};
  if (gen == 0) return kPerLane[0];
  return kPerLane[std::min<unsigned>(gen, 6) - 1];
}

void check_pcie_replays(const GpuWindow& w, const GpuRef& g, std::vector<Finding>& out) {
  auto span = counter_span(w.ok, [](const nvml::GpuReading& r) { return r.pcie_replay_counter; });
  const auto& last = *w.ok.back().reading;
  double seconds = w.ok_span_s();
  if (!span || seconds <= 0 || !last.pcie_gen_current || !last.pcie_width_current) return;
  double per_min = replay_limit_per_lane_min(*last.pcie_gen_current) * *last.pcie_width_current;
  auto allowed = static_cast<std::uint64_t>(std::ceil(per_min * seconds / 60.0));
  std::uint64_t delta = span->second - span->first;
  if (delta <= allowed) return;
  std::string who = describe(g);
  Finding f = make_finding(
      "gpu.pcie.replays", Category::kHardware, Severity::kWarning, Confidence::kHigh, g,
      fmt::format("The PCIe link of {} keeps retransmitting ({:.0f} replays per minute)", who,
                  static_cast<double>(delta) * 60.0 / seconds),
      fmt::format("Replays are link-level retransmissions after signal errors. DCGM warns above "
                  "{:.2f} per minute for a gen{} x{} link; this one did {} in {:.0f} s. Bad "
                  "contact, a damaged riser or cable, or a failing slot cause it, and the "
                  "bandwidth suffers.",
                  per_min, *last.pcie_gen_current, *last.pcie_width_current, delta, seconds));
  f.evidence.push_back(evidence("counter",
                                fmt::format("PCIe replay counter rose from {} to {} in {:.0f} s",
                                            span->first, span->second, seconds),
                                w.ok.back().time));
  f.actions = {
      fmt::format("Power off and reseat {} (and its riser or cable); clean the gold fingers", who),
      "Look for PCIe AER errors on its port in the kernel log (`cardiac doctor` lists them)",
      "If the replays continue, do the cross-check below",
  };
  out.push_back(std::move(f));
}

// --- NVLink.

void check_nvlink(const GpuWindow& w, const GpuRef& g, std::vector<Finding>& out) {
  const auto& last = *w.ok.back().reading;
  TimeNs t = w.ok.back().time;
  std::string who = describe(g);
  std::vector<unsigned> down;
  bool any_active = false;
  for (const auto& l : last.nvlinks) {
    any_active = any_active || l.active;
    if (!l.active) down.push_back(l.link);
  }
  if (any_active && !down.empty()) {
    Finding f = make_finding(
        "gpu.nvlink.down", Category::kHardware, Severity::kWarning, Confidence::kMedium, g,
        fmt::format("{} has {} NVLink link(s) down", who, down.size()),
        "Some of this GPU's NVLinks are active and some are not: peer-to-peer traffic and "
        "collectives over the missing links slow down or fail.");
    f.evidence.push_back(
        evidence("reading", fmt::format("inactive links: {}", fmt::join(down, ", ")), t));
    f.actions = {
        "On NVSwitch systems check the Fabric Manager: `systemctl status nvidia-fabricmanager`",
        fmt::format("Reset the GPU when idle (`sudo nvidia-smi -r -i {}`) or reboot, then check "
                    "`nvidia-smi nvlink -s -i {}`",
                    smi_target(g), smi_target(g)),
        "If the links stay down, the NVLink bridge (PCIe cards) or the baseboard (SXM) needs "
        "service",
    };
    out.push_back(std::move(f));
  }
  double seconds = w.ok_span_s();
  std::uint64_t replay_recovery = 0;
  std::uint64_t crc = 0;
  std::vector<std::string> lines;
  for (const auto& l : last.nvlinks) {
    auto link_counter = [&](auto member) {
      return counter_span(w.ok, [&](const nvml::GpuReading& r) -> std::optional<std::uint64_t> {
        for (const auto& x : r.nvlinks) {
          if (x.link == l.link) return x.*member;
        }
        return std::nullopt;
      });
    };
    auto delta = [](const auto& s) { return s ? s->second - s->first : std::uint64_t{0}; };
    std::uint64_t rp = delta(link_counter(&nvml::NvLink::replay_errors));
    std::uint64_t rc = delta(link_counter(&nvml::NvLink::recovery_errors));
    std::uint64_t cf = delta(link_counter(&nvml::NvLink::crc_flit_errors));
    std::uint64_t cd = delta(link_counter(&nvml::NvLink::crc_data_errors));
    replay_recovery += rp + rc;
    crc += cf + cd;
    if (rp + rc + cf + cd > 0) {
      lines.push_back(
          fmt::format("link {}: +{} replay, +{} recovery, +{} CRC", l.link, rp, rc, cf + cd));
    }
  }
  double crc_rate = seconds > 0 ? static_cast<double>(crc) / seconds : 0;
  if (replay_recovery == 0 && crc_rate < kNvlinkCrcPerSecond) return;
  Finding f = make_finding(
      "gpu.nvlink.errors", Category::kHardware, Severity::kCritical, Confidence::kHigh, g,
      fmt::format("NVLink errors are rising on {}", who),
      fmt::format("During the window ({:.0f} s) its links logged {} replay/recovery errors and "
                  "{:.0f} CRC errors per second. DCGM fails a GPU on any new replay or recovery "
                  "error and at {:.0f} CRC errors per second: collectives over these links retry "
                  "or fail.",
                  seconds, replay_recovery, crc_rate, kNvlinkCrcPerSecond));
  for (auto& line : lines) f.evidence.push_back(evidence("counter", std::move(line), t));
  f.actions = {
      fmt::format("Drain {} and reset it (`sudo nvidia-smi -r -i {}`) or reboot, then watch "
                  "whether the counters keep rising (`nvidia-smi nvlink -e -i {}`)",
                  who, smi_target(g), smi_target(g)),
      "Test the links under load: `dcgmi diag -r 2` or nvbandwidth",
      "If the same links keep failing, reseat the NVLink bridge (PCIe cards) or have the "
      "baseboard serviced (SXM), and do the cross-check below",
  };
  out.push_back(std::move(f));
}

}  // namespace cardiac::doctor::hardware_detail
