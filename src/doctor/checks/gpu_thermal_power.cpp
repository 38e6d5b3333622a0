// SPDX-License-Identifier: Apache-2.0
// GPU thermal and power: temperatures against the slowdown and shutdown margins (the other GPUs
// telling the room from the card), power brakes and limits.
#include <algorithm>
#include <cmath>
#include <set>

#include "doctor/checks/gpu_hardware.h"

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

}  // namespace cardiac::doctor::hardware_detail
