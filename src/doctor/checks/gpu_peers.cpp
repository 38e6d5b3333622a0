// SPDX-License-Identifier: Apache-2.0
// GPU peers: a GPU whose SM clock lags the other GPUs of its model on this node while all of
// them are busy (gpu.fail_slow). A fail-slow card keeps answering and passes every health
// query, but a synchronous job goes at the pace of its slowest GPU; only a comparison with
// its peers under the same load shows it.
#include <algorithm>
#include <map>
#include <set>

#include "doctor/checks/checks.h"
#include "doctor/checks/util.h"
#include "nvml/clock_events.h"
#include "nvml/types.h"

namespace cardiac::doctor {
namespace {

using check_util::describe;
using check_util::evidence;
using check_util::make_finding;
using check_util::smi_target;

// A sample compares GPUs only when both are this busy: an idle GPU drops its clocks.
constexpr unsigned kLoadedUtilization = 80;
// Lagging: an SM clock below this share of the peers' median.
constexpr double kLagRatio = 0.85;
// For most of the window: more than this share of the comparable samples, and at least
// kMinComparable of them (one slow sample is a clock ramping, not a card).
constexpr double kMostOfWindow = 0.5;
constexpr std::size_t kMinComparable = 3;

// Reasons that slow a GPU down for a cause the hardware checks report on their own: a peer
// with one is not a fair yardstick, and a GPU that lags only with one is their finding.
constexpr std::uint64_t kPeerThrottleBits =
    nvml::kReasonHwSlowdown | nvml::kReasonSwThermalSlowdown | nvml::kReasonHwThermalSlowdown |
    nvml::kReasonHwPowerBrakeSlowdown;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

bool loaded(const nvml::GpuReading& r) {
  return r.health == nvml::DeviceHealth::kOk && r.clock_sm_mhz &&
         r.utilization_gpu.value_or(0) >= kLoadedUtilization;
}

// One GPU's comparison over the window.
struct Lag {
  const nvml::GpuReading* last = nullptr;  // its latest reading
  std::size_t comparable = 0, lagging = 0;
  std::vector<double> own_mhz, peers_mhz, own_w, peers_w;  // in lagging samples
  std::uint64_t reasons = 0;                               // seen while lagging
  std::size_t explained = 0;  // lagging samples with a thermal, brake or HW slowdown reason
  std::set<unsigned> peers;   // NVML indices compared with
  Evidence own_series, peer_series;
};

std::string reasons_text(std::uint64_t mask) {
  std::vector<std::string> names;
  for (const auto& r : nvml::decode_clock_event_reasons(mask & ~nvml::kReasonGpuIdle)) {
    names.emplace_back(r.text);
  }
  return fmt::format("{}", fmt::join(names, ", "));
}

Finding lag_finding(const Lag& l, const GpuRef& g, std::size_t group_size) {
  const std::string who = describe(g);
  const double own = median(l.own_mhz);
  const double peers = median(l.peers_mhz);
  const std::string reasons = reasons_text(l.reasons);
  const std::string cause =
      reasons.empty()
          ? "It reports no throttle reason while it lags: the cause is hidden from the driver's "
            "view — a failing card (silicon, VRM, memory), not the settings."
          : fmt::format(
                "It reports these throttle reasons while it lags: {}. Look at those "
                "first; the peers report none of them.",
                reasons);
  Finding f = make_finding(
      "gpu.fail_slow", Category::kHardware, Severity::kWarning,
      group_size >= 3 ? Confidence::kMedium : Confidence::kLow, g,
      fmt::format("{} runs at {:.0f} MHz, {:.0f} % of its peers' {:.0f} MHz under the same load",
                  who, own, 100 * own / peers, peers),
      fmt::format("In {} of {} samples in which this GPU and its peers ({} {} of this node: "
                  "GPU {}) were all at least {} % busy, its SM clock was below {:.0f} % of the "
                  "peers' median while they were not throttled. A slow GPU fails nothing, but "
                  "every synchronous job on it (data-parallel training, tensor-parallel "
                  "inference) runs at its pace, on every GPU. {}",
                  l.lagging, l.comparable, l.peers.size(), l.last->name, fmt::join(l.peers, ", "),
                  kLoadedUtilization, 100 * kLagRatio, cause));
  f.evidence.push_back(l.own_series);
  f.evidence.push_back(l.peer_series);
  std::string power;
  if (!l.own_w.empty() && !l.peers_w.empty()) {
    power = fmt::format(", power {:.0f} W against the peers' {:.0f} W", median(l.own_w),
                        median(l.peers_w));
  }
  f.evidence.push_back(evidence(
      "reading",
      fmt::format("while lagging: SM clock {:.0f} MHz against the peers' median {:.0f} MHz{}, "
                  "clock event reasons {}",
                  own, peers, power, reasons.empty() ? "none" : reasons),
      l.last->sampled_at));
  const std::string target = smi_target(g);
  f.actions = {
      fmt::format("Check the throttle reasons and clocks: `nvidia-smi -q -d PERFORMANCE,CLOCK -i "
                  "{}` next to a peer's; `cardiac doctor --window 2m` again under load to see "
                  "whether it lasts",
                  target),
      fmt::format("Check the power cap: `nvidia-smi -q -d POWER -i {}` — an enforced limit below "
                  "the peers' is a setting (`nvidia-smi -i {} -pl <W>`), not a fault",
                  target, target),
      fmt::format("Check the temperature and the PCIe link against the peers: `nvidia-smi -q -d "
                  "TEMPERATURE,PCIE -i {}`",
                  target),
      fmt::format("Run a burn test on it alone and on a peer, and compare: `dcgmi diag -r 3 -i "
                  "{}` (or a fixed GEMM loop); a healthy card matches its peers' clocks and "
                  "speed",
                  g.index ? std::to_string(*g.index) : target),
      "Cross-check: swap the card with a peer's slot; if the slowness follows the card, replace "
      "the card (RMA); if it stays with the slot, look at the riser, the power cables and the "
      "cooling there",
      fmt::format("Until then keep jobs off it: `cardiac fence add {} --reason \"fail-slow: "
                  "SM clock {:.0f} of {:.0f} MHz\"` (or drain it in Slurm); every job placed on "
                  "it pays for it",
                  g.index ? std::to_string(*g.index) : target, own, peers),
  };
  return f;
}

}  // namespace

void check_gpu_peers(const DoctorInput& in, std::vector<Finding>& out) {
  GpuMap map(in);
  // NVML index → the GPU's model, from any reading that names it.
  std::map<unsigned, std::string> model;
  for (const auto& snap : in.gpu_samples) {
    for (const auto& r : snap.gpus) {
      if (!r.name.empty()) model[r.index] = r.name;
    }
  }
  std::map<std::string, std::size_t> group_size;
  for (const auto& [index, name] : model) ++group_size[name];

  std::map<unsigned, Lag> lags;
  for (const auto& snap : in.gpu_samples) {
    if (!snap.available) continue;
    for (const auto& r : snap.gpus) {
      if (!loaded(r) || !model.contains(r.index)) continue;
      const std::string& name = model[r.index];
      // The peers: the other busy GPUs of the same model, not throttled for causes of their own.
      std::vector<double> mhz, watts;
      std::set<unsigned> who;
      for (const auto& p : snap.gpus) {
        if (p.index == r.index || !loaded(p) || model[p.index] != name) continue;
        if ((p.clock_event_reasons.value_or(0) & kPeerThrottleBits) != 0) continue;
        mhz.push_back(*p.clock_sm_mhz);
        if (p.power_usage_mw) watts.push_back(*p.power_usage_mw / 1000.0);
        who.insert(p.index);
      }
      if (mhz.empty()) continue;
      const TimeNs t = r.sampled_at != 0 ? r.sampled_at : snap.taken_at;
      Lag& l = lags[r.index];
      if (l.comparable == 0) {
        l.own_series = evidence("reading", "SM clock of this GPU, busy samples", std::nullopt);
        l.peer_series =
            evidence("reading", "median SM clock of its busy peers (same model)", std::nullopt);
        for (Evidence* e : {&l.own_series, &l.peer_series}) {
          e->metric = "clock_sm";
          e->unit = "MHz";
        }
      }
      const double peers = median(mhz);
      l.own_series.series.emplace_back(t, *r.clock_sm_mhz);
      l.peer_series.series.emplace_back(t, peers);
      l.last = &r;
      ++l.comparable;
      if (*r.clock_sm_mhz >= kLagRatio * peers) continue;
      ++l.lagging;
      l.own_mhz.push_back(*r.clock_sm_mhz);
      l.peers_mhz.push_back(peers);
      if (r.power_usage_mw && !watts.empty()) {
        l.own_w.push_back(*r.power_usage_mw / 1000.0);
        l.peers_w.push_back(median(watts));
      }
      l.reasons |= r.clock_event_reasons.value_or(0);
      if ((r.clock_event_reasons.value_or(0) & kPeerThrottleBits) != 0) ++l.explained;
      l.peers.insert(who.begin(), who.end());
    }
  }
  for (const auto& [index, l] : lags) {
    if (l.comparable < kMinComparable) continue;
    if (static_cast<double>(l.lagging) <= kMostOfWindow * static_cast<double>(l.comparable)) {
      continue;
    }
    // A lag the GPU explains in every sample (thermal slowdown, power brake, HW slowdown) is
    // gpu.thermal.*, gpu.power.brake or gpu.hw_slowdown, with their own steps.
    if (l.explained == l.lagging) continue;
    GpuRef g = check_util::gpu_ref(*l.last, map);
    out.push_back(lag_finding(l, g, group_size[model[index]]));
  }
}

}  // namespace cardiac::doctor
