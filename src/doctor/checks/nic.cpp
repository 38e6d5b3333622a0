// SPDX-License-Identifier: Apache-2.0
// The network check's view of this host's NICs: links down, errors and drops rising over the
// window, saturation against the link speed (thresholds in network.cpp's header).
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/format.h"
#include "core/units.h"
#include "doctor/checks/network_util.h"
#include "doctor/checks/traffic.h"
#include "host/network.h"

namespace cardiac::doctor::network_detail {

constexpr double kSaturatedPercent = 90;
constexpr double kErrorCritShare = 0.001;
constexpr double kDropsWarnPerS = 1.0;
constexpr std::size_t kTalkersNamed = 3;  // top talkers named by network.nic_saturated

// ---- NICs ---------------------------------------------------------------------------------

bool virtual_nic(std::string_view name) {
  static constexpr std::string_view kPrefixes[] = {
      "docker", "veth", "virbr", "br-",  "cni",   "flannel", "cali",  "vxlan", "tun",
      "tap",    "ifb",  "dummy", "kube", "weave", "genev",   "nlmon", "lxc"};
  if (name == "lo") return true;
  return std::any_of(std::begin(kPrefixes), std::end(kPrefixes),
                     [&](std::string_view p) { return name.starts_with(p); });
}

bool infiniband(std::string_view name) {
  return name.starts_with("ib");
}

const host::NetDevice* nic_in(const host::HostSnapshot& s, std::string_view name) {
  for (const auto& d : s.nics) {
    if (d.name == name) return &d;
  }
  return nullptr;
}

std::string bits_per_s(double bytes_per_s) {
  double b = bytes_per_s * 8;
  if (b >= 1e9) return fmt::format("{:.2f} Gb/s", b / 1e9);
  if (b >= 1e6) return fmt::format("{:.1f} Mb/s", b / 1e6);
  return fmt::format("{:.0f} kb/s", b / 1e3);
}

std::string link_speed(std::uint64_t mbps) {
  if (mbps >= 1000 && mbps % 1000 == 0) return fmt::format("{} Gb/s", mbps / 1000);
  return fmt::format("{} Mb/s", mbps);
}

std::vector<std::string> nic_tool_actions(const std::string& nic) {
  if (infiniband(nic)) {
    return {fmt::format("`ibstat` and `perfquery -x` for the port behind {}: SymbolErrorCounter, "
                        "LinkDownedCounter and PortRcvErrors that rise point at the cable or "
                        "transceiver",
                        nic),
            "`iblinkinfo` to see the link's width and speed against what it should be"};
  }
  return {fmt::format("`ethtool -S {} | grep -Ei 'err|drop|crc|discard|fifo'` to see which "
                      "counter moves",
                      nic),
          fmt::format("`ethtool {}` (speed, duplex, link detected) and `ethtool -m {}` (optical "
                      "power); reseat or swap the cable or transceiver if CRC errors rise",
                      nic, nic)};
}

// Utilisation over each consecutive pair of host samples, for a chart.
std::vector<std::pair<TimeNs, double>> util_series(const DoctorInput& in, const std::string& nic,
                                                   bool rx) {
  std::vector<std::pair<TimeNs, double>> out;
  for (std::size_t i = 1; i < in.host_samples.size(); ++i) {
    const auto& a = in.host_samples[i - 1];
    const auto& b = in.host_samples[i];
    double dt = static_cast<double>(b.taken_at - a.taken_at) / 1e9;
    for (const auto& r : host::compute_net_rates(a.nics, b.nics, dt)) {
      auto u = rx ? r.rx_util_percent : r.tx_util_percent;
      if (r.name == nic && u) out.emplace_back(b.taken_at, *u);
    }
  }
  return out;
}

void check_saturation(const DoctorInput& in, std::vector<Finding>& out,
                      std::vector<Evidence>& local) {
  if (!in.rates) return;
  const auto* last = in.last_host();
  for (const auto& r : in.rates->nics) {
    if (virtual_nic(r.name)) continue;
    const auto* dev = last != nullptr ? nic_in(*last, r.name) : nullptr;
    bool rx = r.rx_util_percent.value_or(0) >= kSaturatedPercent;
    bool tx = r.tx_util_percent.value_or(0) >= kSaturatedPercent;
    if (!rx && !tx) continue;
    std::string speed = dev != nullptr && dev->speed_mbps ? link_speed(*dev->speed_mbps) : "?";
    std::string figures;
    if (rx) {
      figures =
          fmt::format("receive {} ({:.0f} %)", bits_per_s(r.rx_bytes_per_s), *r.rx_util_percent);
    }
    if (tx) {
      figures += fmt::format("{}transmit {} ({:.0f} %)", rx ? ", " : "",
                             bits_per_s(r.tx_bytes_per_s), *r.tx_util_percent);
    }
    Finding f = make(
        "network.nic_saturated", Severity::kWarning, Confidence::kMedium,
        fmt::format("{} is saturated: {} of its {} link", r.name, figures, speed),
        fmt::format("Over the {:.1f} s window {} carried {} of a {} link. At that level packets "
                    "queue and drop, so latency and loss rise for every flow on it; if a job "
                    "reads its data or exchanges gradients over {}, the link is a likely "
                    "bottleneck. The figure is an average over the window.",
                    in.rates->interval_s, r.name, figures, speed, r.name));
    Evidence e = evidence("reading", fmt::format("{}: {} of {}", r.name, figures, speed), in.now,
                          "/proc/net/dev");
    e.metric = rx ? "rx_util" : "tx_util";
    e.unit = "%";
    e.threshold = kSaturatedPercent;
    e.series = util_series(in, r.name, rx);
    local.push_back(e);
    f.evidence.push_back(std::move(e));
    // Who: the processes that moved the most bytes in the saturated direction. Sockets are
    // not tied to one NIC, so these are the host's top talkers over the same window.
    const bool sent = tx && (!rx || r.tx_bytes_per_s >= r.rx_bytes_per_s);
    if (auto who = traffic_detail::by_whom(in, sent, kTalkersNamed); !who.empty()) {
      f.explanation += " " + who;
      for (auto& t : traffic_detail::talker_evidence(in, sent, kTalkersNamed)) {
        f.evidence.push_back(std::move(t));
      }
    }
    f.actions = {
        fmt::format("See who sends and receives now: `cardiac net top`, `iftop -i {}`, "
                    "`nethogs {}` or `ss -tinp`",
                    r.name, r.name),
        fmt::format("Check that the link negotiated its full speed (`ethtool {}`)", r.name),
        "If the traffic is expected: a faster link, bonding, or moving bulk traffic to "
        "another NIC (or to RDMA over InfiniBand/RoCE)"};
    out.push_back(std::move(f));
  }
}

void check_nic_errors(const DoctorInput& in, std::vector<Finding>& out,
                      std::vector<Evidence>& local) {
  if (!in.rates || in.host_samples.size() < 2 || !(in.rates->interval_s > 0)) return;
  const auto& first = in.host_samples.front();
  const auto& last = in.host_samples.back();
  const double dt = in.rates->interval_s;
  for (const auto& r : in.rates->nics) {
    if (virtual_nic(r.name)) continue;
    const std::uint64_t errors = r.rx_errors + r.tx_errors;
    const std::uint64_t drops = r.rx_drops + r.tx_drops;
    const double drop_rate = static_cast<double>(drops) / dt;
    if (errors == 0 && drop_rate < kDropsWarnPerS) continue;
    const auto* a = nic_in(first, r.name);
    const auto* b = nic_in(last, r.name);
    std::uint64_t packets = 0;
    if (a != nullptr && b != nullptr && b->rx_packets >= a->rx_packets &&
        b->tx_packets >= a->tx_packets) {
      packets = (b->rx_packets - a->rx_packets) + (b->tx_packets - a->tx_packets);
    }
    const double share =
        packets > 0 ? static_cast<double>(errors) / static_cast<double>(packets) : 0;
    Severity sev =
        errors > 0 && share >= kErrorCritShare ? Severity::kCritical : Severity::kWarning;
    std::string what;
    if (errors > 0)
      what = fmt::format("{} errors (rx {}, tx {})", errors, r.rx_errors, r.tx_errors);
    if (drop_rate >= kDropsWarnPerS) {
      what += fmt::format("{}{} drops, {:.1f}/s (rx {}, tx {})", what.empty() ? "" : " and ", drops,
                          drop_rate, r.rx_drops, r.tx_drops);
    }
    Finding f = make(
        "network.nic_errors", sev, errors > 0 ? Confidence::kHigh : Confidence::kMedium,
        fmt::format("{}{}: {} in {:.1f} s", infiniband(r.name) ? "InfiniBand " : "", r.name, what,
                    dt),
        fmt::format("{}'s counters rose during the window{}. Receive errors usually mean a bad "
                    "cable, transceiver or switch port (CRC and symbol errors); drops mean the "
                    "host could not take packets in fast enough (ring buffer full, CPU busy in "
                    "softirq) or discarded traffic it has no use for, which is why drops alone "
                    "are a weaker sign than errors.",
                    r.name,
                    packets > 0 ? fmt::format(" ({} packets moved, errors {:.3f} % of them)",
                                              packets, share * 100)
                                : ""));
    auto add_counter = [&](std::string_view name, std::uint64_t delta,
                           std::uint64_t host::NetDevice::*m) {
      if (delta == 0) return;
      Evidence e = evidence("counter",
                            fmt::format("{} {} +{} over {:.1f} s (now {})", r.name, name, delta, dt,
                                        b != nullptr ? std::to_string(b->*m) : "?"),
                            in.now, "/proc/net/dev");
      e.metric = std::string(name);
      e.unit = "count";
      for (const auto& s : in.host_samples) {
        if (const auto* d = nic_in(s, r.name)) {
          e.series.emplace_back(s.taken_at, static_cast<double>(d->*m));
        }
      }
      local.push_back(e);
      f.evidence.push_back(std::move(e));
    };
    add_counter("rx_errors", r.rx_errors, &host::NetDevice::rx_errors);
    add_counter("tx_errors", r.tx_errors, &host::NetDevice::tx_errors);
    add_counter("rx_drops", r.rx_drops, &host::NetDevice::rx_drops);
    add_counter("tx_drops", r.tx_drops, &host::NetDevice::tx_drops);
    f.actions = nic_tool_actions(r.name);
    if (drop_rate >= kDropsWarnPerS && !infiniband(r.name)) {
      f.actions.push_back(
          fmt::format("For drops: ring sizes (`ethtool -g {}`) and softirq load "
                      "(`mpstat -P ALL 1`, /proc/softirqs)",
                      r.name));
    }
    f.actions.emplace_back("Compare with the switch port's error counters");
    out.push_back(std::move(f));
  }
}

bool down(const std::optional<std::string>& operstate) {
  return operstate && (*operstate == "down" || *operstate == "lowerlayerdown");
}

void check_links(const DoctorInput& in, std::vector<Finding>& out, std::vector<Evidence>& local) {
  const auto* last = in.last_host();
  if (last == nullptr) return;
  const auto& first = in.host_samples.front();
  for (const auto& d : last->nics) {
    if (virtual_nic(d.name) || !down(d.operstate) || d.rx_bytes + d.tx_bytes == 0) continue;
    const auto* before = in.host_samples.size() > 1 ? nic_in(first, d.name) : nullptr;
    const bool went_down = before != nullptr && before->operstate == "up";
    Finding f =
        make("network.link_down", went_down ? Severity::kCritical : Severity::kWarning,
             went_down ? Confidence::kHigh : Confidence::kMedium,
             fmt::format("{}{} link is {}{}", infiniband(d.name) ? "InfiniBand " : "", d.name,
                         *d.operstate, went_down ? " (it went down during the window)" : ""),
             fmt::format("{} has carried traffic since boot ({} received, {} sent) but its link is "
                         "{} now: its cable, transceiver, switch port or{} peer is gone, or it was "
                         "taken down on purpose. Traffic that used it is on another path or lost.",
                         d.name, format_bytes(d.rx_bytes), format_bytes(d.tx_bytes), *d.operstate,
                         infiniband(d.name) ? " subnet manager" : ""));
    Evidence e =
        evidence("reading",
                 fmt::format("{} operstate {} ({} rx, {} tx since boot)", d.name, *d.operstate,
                             format_bytes(d.rx_bytes), format_bytes(d.tx_bytes)),
                 last->taken_at, "/sys/class/net/" + d.name + "/operstate");
    local.push_back(e);
    f.evidence.push_back(std::move(e));
    if (infiniband(d.name)) {
      f.actions = {
          "`ibstat`: a port in Down or Polling has no link; Initializing means no "
          "subnet manager answers (`sminfo`)",
          "Reseat or swap the cable/transceiver; check the switch port"};
    } else {
      f.actions = {
          fmt::format("`ip link show {}` and `ethtool {}` (Link detected)", d.name, d.name),
          "Reseat or swap the cable/transceiver; check the switch port and its logs",
          fmt::format("If it was taken down on purpose: `ip link set {} up` when wanted", d.name)};
    }
    out.push_back(std::move(f));
  }
}

}  // namespace cardiac::doctor::network_detail
