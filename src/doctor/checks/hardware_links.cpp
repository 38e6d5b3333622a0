// SPDX-License-Identifier: Apache-2.0
// GPU hardware checks, second half: thermal, power, PCIe link and replays, NVLink.
#include <algorithm>
#include <cmath>
#include <set>

#include "doctor/checks/hardware.h"

namespace cardiac::doctor::hardware_detail {

Evidence temperature_series(const GpuWindow& w, std::optional<unsigned> slowdown) {
  Evidence e = evidence("reading", "GPU temperature over the window", std::nullopt);
  e.metric = "temperature";
  e.unit = "°C";
  if (slowdown) e.threshold = *slowdown;
  for (const auto& s : w.ok) {
    if (s.reading->temperature) e.series.emplace_back(s.time, *s.reading->temperature);
  }
  return e;
}

// The other GPUs' temperatures tell the room (all hot) from the card or its airflow (one hot).
std::string neighbours(const std::vector<GpuWindow>& all, const GpuWindow& w) {
  std::vector<unsigned> temps;
  for (const auto& o : all) {
    if (o.index == w.index || o.ok.empty()) continue;
    if (auto t = o.ok.back().reading->temperature) temps.push_back(*t);
  }
  if (temps.empty()) return "";
  auto [lo, hi] = std::minmax_element(temps.begin(), temps.end());
  if (*lo == *hi) return fmt::format("the other GPUs are at {} °C", *lo);
  return fmt::format("the other GPUs are at {}–{} °C", *lo, *hi);
}

std::vector<std::string> thermal_actions(const GpuRef& g, std::optional<unsigned> fan) {
  std::string who = describe(g);
  return {
      fmt::format("Check the airflow through {}: nothing blocking the intake, blanking panels in "
                  "empty slots, no cable bundle in front of it, every chassis fan spinning "
                  "(`ipmitool sdr type Fan`)",
                  who),
      "Check the room: the inlet air at the front of the server should be 16–25 °C for air "
      "cooling, with no hot-aisle air coming back to the front",
      fan ? fmt::format("Check the fans: this GPU's fan runs at {} %; a failed chassis fan shows "
                        "0 RPM in the BMC",
                        *fan)
          : "Check the fans: a failed chassis fan shows 0 RPM in the BMC",
      "Clean dust out of the heatsink fins, filters and fan grilles",
      "If this GPU runs hotter than its neighbours under the same load, its heatsink may be "
      "loose or its thermal paste dried out: reseat the heatsink and repaste it (or RMA it "
      "under warranty)",
      "Then cross-check: swap the card with a cooler neighbour's slot; if the heat follows the "
      "card the card is at fault, if it stays with the slot the airflow there is",
  };
}

void check_thermal(const DoctorInput& in, const std::vector<GpuWindow>& all, const GpuWindow& w,
                   const GpuRef& g, std::vector<Finding>& out) {
  const auto& last = *w.ok.back().reading;
  TimeNs t = w.ok.back().time;
  std::optional<unsigned> slowdown;
  std::optional<unsigned> shutdown;
  std::optional<unsigned> hottest;
  std::size_t throttled = 0;
  for (const auto& s : w.ok) {
    const auto& r = *s.reading;
    if (r.temperature_slowdown) slowdown = r.temperature_slowdown;
    if (r.temperature_shutdown) shutdown = r.temperature_shutdown;
    if (r.temperature) hottest = std::max(hottest.value_or(0), *r.temperature);
  }
  for (const auto& s : w.ok) {
    const auto& r = *s.reading;
    bool over = r.temperature && slowdown && *r.temperature >= *slowdown;
    if ((reasons(r) & kThermalBits) != 0 || over) ++throttled;
  }
  std::string who = describe(g);
  std::string others = neighbours(all, w);
  std::string compare = others.empty() ? "" : fmt::format(" For comparison, {}.", others);

  // One severity mapping (docs/severity.md): near shutdown is critical; throttling, at or near
  // the slowdown threshold, is a warning, as in `cardiac status` and the default alert rules.
  // Severity::kInfo: not hot (a plain value: GCC misreads an optional here as uninitialized).
  const Severity hot = hottest ? health::judge_temperature(*hottest, slowdown, shutdown)
                                     .value_or(health::Thermal{Severity::kInfo, ""})
                                     .severity
                               : Severity::kInfo;
  Finding f;
  if (hot == Severity::kCritical) {
    f = make_finding(
        "gpu.thermal.near_shutdown", Category::kHardware, hot, Confidence::kHigh, g,
        fmt::format("{} reached {} °C, {} °C from its shutdown threshold ({} °C)", who, *hottest,
                    *shutdown - std::min(*hottest, *shutdown), *shutdown),
        "At the shutdown threshold the GPU powers itself off to protect the silicon, killing its "
        "jobs and usually falling off the bus. The cooling is failing now." +
            compare);
  } else if (throttled > 0) {
    f = make_finding(
        "gpu.thermal.slowdown", Category::kHardware, Severity::kWarning, Confidence::kHigh, g,
        fmt::format("{} is thermally throttling ({} °C, slowdown at {})", who,
                    hottest ? std::to_string(*hottest) : "n/a",
                    slowdown ? fmt::format("{} °C", *slowdown) : "n/a"),
        fmt::format("The GPU cut its clocks to stay under its temperature limit in {} of {} "
                    "samples{}; a thermally throttled GPU runs at half speed or less, and a whole "
                    "training job waits for its slowest GPU.{}",
                    throttled, w.ok.size(),
                    w.ok_span_s() > 0 ? fmt::format(" over {:.0f} s", w.ok_span_s()) : "",
                    compare));
  } else if (hot != Severity::kInfo) {
    f = make_finding("gpu.thermal.near_slowdown", Category::kHardware, hot, Confidence::kMedium, g,
                     fmt::format("{} reached {} °C, close to its slowdown threshold ({} °C)", who,
                                 *hottest, *slowdown),
                     "A few degrees more and the GPU will throttle its clocks." + compare);
  } else {
    if (last.fan_speed.value_or(0) >= 100) {
      Finding fan = make_finding(
          "gpu.fan.max", Category::kHardware, Severity::kInfo, Confidence::kLow, g,
          fmt::format("The fan of {} runs at 100 %", who),
          "The GPU is not hot, but its fan has no headroom left: a warmer room or a dusty "
          "heatsink will make it throttle.");
      fan.evidence.push_back(evidence("reading", fmt::format("fan {} %", *last.fan_speed), t));
      fan.actions = {"Check the room temperature (16–25 °C inlet) and clean the heatsink of dust",
                     "If the fan is set to 100 % by hand (`nvidia-settings`), this is expected"};
      out.push_back(std::move(fan));
    }
    return;
  }
  f.evidence.push_back(temperature_series(w, slowdown));
  std::string mask =
      last.clock_event_reasons ? fmt::format("0x{:x}", *last.clock_event_reasons) : "n/a";
  f.evidence.push_back(evidence(
      "reading",
      fmt::format("last reading: {} °C (slowdown {} °C, shutdown {} °C), clock event reasons {}, "
                  "SM clock {} of {} MHz, fan {}",
                  last.temperature ? std::to_string(*last.temperature) : "n/a",
                  slowdown ? std::to_string(*slowdown) : "n/a",
                  shutdown ? std::to_string(*shutdown) : "n/a", mask,
                  last.clock_sm_mhz ? std::to_string(*last.clock_sm_mhz) : "n/a",
                  last.clock_sm_max_mhz ? std::to_string(*last.clock_sm_max_mhz) : "n/a",
                  last.fan_speed ? fmt::format("{} %", *last.fan_speed) : "n/a"),
      t));
  if (last.fan_speed.value_or(0) >= 100) {
    f.explanation += " The fan already runs at 100 %: the cooling has no headroom left.";
  }
  if (const auto* h = history_series(in, g, "temperature"); h && h->size() > 1) {
    Evidence e =
        evidence("reading", "GPU temperature from the agent's history", std::nullopt, "store");
    e.metric = "temperature";
    e.unit = "°C";
    if (slowdown) e.threshold = *slowdown;
    e.series = *h;
    f.evidence.push_back(std::move(e));
  }
  f.actions = thermal_actions(g, last.fan_speed);
  out.push_back(std::move(f));
}

// --- Power.

std::string reasons_text(std::uint64_t mask) {
  std::vector<std::string> names;
  for (const auto& r : nvml::decode_clock_event_reasons(mask)) names.emplace_back(r.text);
  return fmt::format("0x{:x} ({})", mask,
                     names.empty() ? "none" : fmt::format("{}", fmt::join(names, ", ")));
}

std::string power_text(const nvml::GpuReading& r) {
  return fmt::format("power {} of {} enforced limit (default {}), utilization {}",
                     r.power_usage_mw ? watts(*r.power_usage_mw) : "n/a",
                     r.power_limit_mw ? watts(*r.power_limit_mw) : "n/a",
                     r.power_default_limit_mw ? watts(*r.power_default_limit_mw) : "n/a",
                     r.utilization_gpu ? fmt::format("{} %", *r.utilization_gpu) : "n/a");
}

void check_power(const GpuWindow& w, const GpuRef& g, std::vector<Finding>& out) {
  const auto& last = *w.ok.back().reading;
  TimeNs t = w.ok.back().time;
  std::string who = describe(g);
  const Sample* brake = nullptr;
  const Sample* unexplained = nullptr;
  std::size_t n_brake = 0;
  std::size_t n_busy = 0;
  std::size_t n_capped = 0;
  for (const auto& s : w.ok) {
    std::uint64_t rs = reasons(*s.reading);
    if ((rs & nvml::kReasonHwPowerBrakeSlowdown) != 0) {
      ++n_brake;
      brake = &s;
    } else if ((rs & nvml::kReasonHwSlowdown) != 0 && (rs & kThermalBits) == 0) {
      unexplained = &s;
    }
    if (s.reading->utilization_gpu.value_or(0) >= kBusyUtilization) {
      ++n_busy;
      if ((rs & nvml::kReasonSwPowerCap) != 0) ++n_capped;
    }
  }
  if (brake) {
    bool sustained = n_brake == w.ok.size() && w.ok.size() >= 2;
    Finding f = make_finding(
        "gpu.power.brake", Category::kHardware,
        sustained ? Severity::kCritical : Severity::kWarning, Confidence::kHigh, g,
        fmt::format("{} is held back by the power brake", who),
        fmt::format("The board's external power brake forced the GPU's clocks down in {} of {} "
                    "samples. The brake is asserted by the system when its power supply cannot "
                    "carry the load: a failed or unplugged PSU, lost PSU redundancy, or a power "
                    "cap from the BMC or the rack.",
                    n_brake, w.ok.size()));
    f.evidence.push_back(evidence("reading",
                                  "clock event reasons " + reasons_text(reasons(*brake->reading)) +
                                      "; " + power_text(*brake->reading),
                                  brake->time));
    f.actions = {
        "Check the power supplies: every PSU present, plugged in and healthy (`ipmitool sdr "
        "type 'Power Supply'`, the BMC event log `ipmitool sel list`)",
        "Check the GPU power cables and connectors: fully seated, not melted, discoloured or "
        "burnt",
        "Check for a power cap set in the BMC or by the rack's PDU",
        "If only this GPU brakes, do the cross-check below",
    };
    out.push_back(std::move(f));
  } else if (unexplained) {
    Finding f = make_finding(
        "gpu.hw_slowdown", Category::kHardware, Severity::kWarning, Confidence::kMedium, g,
        fmt::format("{} had a hardware slowdown", who),
        "The GPU halved (or more) its clocks in hardware without naming heat or the power "
        "brake as the cause: this is the GPU's fast protection against power spikes or an "
        "overheating sensor.");
    f.evidence.push_back(evidence("reading",
                                  "clock event reasons " +
                                      reasons_text(reasons(*unexplained->reading)) + "; " +
                                      power_text(*unexplained->reading),
                                  unexplained->time));
    f.actions = {"Check the GPU's power cables and the PSUs (`ipmitool sel list`)",
                 "Check the cooling as for a hot GPU: airflow, 16–25 °C inlet, fans, dust"};
    out.push_back(std::move(f));
  }
  bool lowered = last.power_limit_mw && last.power_default_limit_mw &&
                 *last.power_limit_mw < *last.power_default_limit_mw;
  if (lowered) {
    Finding f = make_finding(
        "gpu.power.limit_below_default", Category::kConfiguration, Severity::kWarning,
        Confidence::kHigh, g,
        fmt::format("The power limit of {} ({}) is below its default ({})", who,
                    watts(*last.power_limit_mw), watts(*last.power_default_limit_mw)),
        "Someone or something lowered the power limit; under load the GPU then runs slower than "
        "it can. It may be deliberate (a power budget for the rack).");
    f.evidence.push_back(evidence("reading", power_text(last), t));
    f.actions = {
        fmt::format("Restore the default limit: `sudo nvidia-smi -i {} -pl {}`", smi_target(g),
                    *last.power_default_limit_mw / 1000),
        "Find what lowers it at boot (a startup script, `dcgmi config`, a tuning service) if "
        "it comes back",
    };
    out.push_back(std::move(f));
  }
  if (n_capped > 0 && 2 * n_capped >= n_busy) {
    Finding f = make_finding(
        "gpu.power.capped", Category::kHardware, lowered ? Severity::kWarning : Severity::kInfo,
        Confidence::kMedium, g, fmt::format("{} runs at its power limit while busy", who),
        fmt::format("In {} of {} busy samples the GPU lowered its clocks to stay within its power "
                    "limit. At the default limit this is how a fully loaded GPU normally runs{}",
                    n_capped, n_busy,
                    lowered ? "; here the limit was lowered, which costs throughput."
                            : "; nothing is wrong unless the limit was lowered."));
    f.evidence.push_back(evidence("reading", power_text(last), t));
    f.actions = {lowered ? "Restore the default power limit (see the power limit finding)"
                         : "Nothing to do; a higher limit is not available above the default"};
    out.push_back(std::move(f));
  }
}

// --- PCIe.

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

// --- Inventory: GPUs on the bus but not in NVML, fewer GPUs than expected.

}  // namespace cardiac::doctor::hardware_detail
