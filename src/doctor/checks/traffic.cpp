// SPDX-License-Identifier: Apache-2.0
// Traffic by process over the sampling window (DoctorInput::traffic, from netproc):
//   security.uplink_flood — one process sends most of the host's bytes, at a real share of the
//     link, to many distinct remote addresses: the shape of a compromised host used in a flood
//     or for exfiltration. Warning; critical when it holds most of a saturated uplink.
#include <fmt/format.h>

#include "doctor/checks/traffic.h"
#include "host/host.h"
#include "netproc/traffic.h"

namespace cardiac::doctor {
namespace traffic_detail {

std::vector<Evidence> talker_evidence(const DoctorInput& in, bool sent, std::size_t n) {
  std::vector<Evidence> out;
  if (!in.traffic) return out;
  for (const auto& t : netproc::top_by(*in.traffic, sent, n)) {
    if ((sent ? t.sent_bytes : t.received_bytes) == 0) continue;
    Evidence e;
    e.kind = "process";
    e.text = netproc::talker_text(t, in.traffic->link);
    if (!t.top_remotes.empty()) e.text += " (" + fmt::format("{}", fmt::join(t.top_remotes, ", "));
    if (t.remote_count > t.top_remotes.size()) e.text += ", …";
    if (!t.top_remotes.empty()) e.text += ")";
    e.time = in.now;
    e.source = "sock_diag, /proc/" + std::to_string(t.process.pid) + "/fd";
    out.push_back(std::move(e));
  }
  return out;
}

std::string by_whom(const DoctorInput& in, bool sent, std::size_t n) {
  if (!in.traffic) return {};
  std::vector<std::string> who;
  for (const auto& t : netproc::top_by(*in.traffic, sent, n)) {
    if ((sent ? t.sent_bytes : t.received_bytes) == 0) continue;
    who.push_back(netproc::talker_text(t, in.traffic->link));
  }
  if (who.empty()) return {};
  return fmt::format("By whom ({} over the window): {}.", sent ? "sending" : "receiving",
                     fmt::join(who, "; "));
}

}  // namespace traffic_detail

namespace {

constexpr double kFloodShareOfSent = 0.5;   // of every byte the host's sockets sent
constexpr std::size_t kFloodRemotes = 20;   // distinct remote addresses
constexpr double kFloodLinkPercent = 20;    // of the link's speed, when it is known
constexpr double kFloodBytesPerS = 12.5e6;  // 100 Mb/s, when it is not
constexpr double kCriticalLinkPercent = 50;
constexpr double kSaturatedPercent = 90;  // as network.nic_saturated

std::optional<double> link_tx_util(const DoctorInput& in, const std::string& nic) {
  if (!in.rates) return std::nullopt;
  for (const auto& r : in.rates->nics) {
    if (r.name == nic) return r.tx_util_percent;
  }
  return std::nullopt;
}

}  // namespace

void check_traffic(const DoctorInput& in, std::vector<Finding>& out) {
  if (!in.traffic || in.traffic->talkers.empty() || !(in.traffic->window_s > 0)) return;
  const auto& tr = *in.traffic;
  auto top = netproc::top_by(tr, true, 1);
  if (top.empty() || tr.sent_bytes == 0) return;
  const auto& t = top.front();
  const double share = static_cast<double>(t.sent_bytes) / static_cast<double>(tr.sent_bytes);
  const bool big = t.sent_link_percent ? *t.sent_link_percent >= kFloodLinkPercent
                                       : t.sent_bytes_per_s >= kFloodBytesPerS;
  if (share <= kFloodShareOfSent || !big || t.remote_count < kFloodRemotes) return;

  const auto util = link_tx_util(in, tr.link.name);
  const bool saturated = util.value_or(t.sent_link_percent.value_or(0)) >= kSaturatedPercent;
  const bool critical = t.sent_link_percent.value_or(0) >= kCriticalLinkPercent && saturated;
  const std::string who = fmt::format("pid {} ({}, {})", t.process.pid, t.process.user,
                                      t.process.comm.empty() ? std::string("?") : t.process.comm);
  const std::string rate = netproc::bits_per_s(t.sent_bytes_per_s);
  const std::string of_link = t.sent_link_percent
                                  ? fmt::format(", {:.0f} % of {}'s {} Mb/s", *t.sent_link_percent,
                                                tr.link.name, tr.link.speed_mbps.value_or(0))
                                  : std::string();

  Finding f;
  f.id = "security.uplink_flood";
  f.category = Category::kSecurity;
  f.severity = critical ? Severity::kCritical : Severity::kWarning;
  f.confidence = Confidence::kMedium;
  f.title = fmt::format("{} sends {:.0f} % of this host's traffic ({}{}) to {} remote addresses",
                        who, share * 100, rate, of_link, t.remote_count);
  f.explanation = fmt::format(
      "Over the {:.1f} s window one process sent {:.0f} % of the bytes this host's sockets sent, "
      "at {}{}, to {} distinct remote addresses. A compromised host used to flood others (a "
      "DDoS bot) or to copy data out looks like this: one process, most of the uplink, many "
      "destinations{}. Legitimate fan-out looks the same (a data or checkpoint distribution "
      "job, a peer-to-peer cache, a backup to many targets), so first check that the program "
      "and its user are expected here. If they are not, treat the host as compromised: isolate "
      "it before anything else, and keep the evidence — a reboot or a kill loses what is in "
      "memory.",
      tr.window_s, share * 100, rate, of_link, t.remote_count,
      critical ? fmt::format(", here holding most of a saturated link ({:.0f} % of it in use)",
                             util.value_or(*t.sent_link_percent))
               : std::string());
  Evidence e;
  e.kind = "process";
  e.text = netproc::talker_text(t, tr.link);
  if (!t.top_remotes.empty()) {
    e.text += fmt::format("; busiest remotes: {}", fmt::join(t.top_remotes, ", "));
  }
  e.time = in.now;
  e.source = fmt::format("sock_diag, /proc/{}/fd", t.process.pid);
  f.evidence.push_back(std::move(e));
  Evidence host;
  host.kind = "reading";
  host.text =
      fmt::format("all sockets on this host: sent {}, received {} over {:.1f} s ({} sockets)",
                  netproc::bits_per_s(tr.sent_bytes_per_s),
                  netproc::bits_per_s(tr.received_bytes_per_s), tr.window_s, tr.sockets);
  host.time = in.now;
  host.source = "sock_diag";
  f.evidence.push_back(std::move(host));
  const auto pid = t.process.pid;
  f.actions = {
      "Check the program and its user: is this transfer expected here? (`ps -o "
      "pid,user,lstart,cmd -p " +
          std::to_string(pid) + "`, `ls -l /proc/" + std::to_string(pid) + "/exe`)",
      "If not: isolate the host from the network now — shut its switch port or drop its "
      "outbound traffic at the firewall, and fence it from the scheduler; do not reboot it",
      fmt::format("Preserve evidence before stopping anything: `ss -tinp > ss.txt`, `cp "
                  "/proc/{0}/exe pid{0}.exe`, `cat /proc/{0}/cmdline /proc/{0}/environ`, "
                  "`ls -l /proc/{0}/fd`, `cardiac doctor --json -o doctor.json`; then "
                  "`kill -STOP {0}` keeps its memory for analysis",
                  pid),
      "Find how it started (its parent, systemd unit, crontabs, the user's logins: `last`) and "
      "scan the host from known-good media (rkhunter, chkrootkit, clamscan); look for the same "
      "binary's hash on other hosts",
      "Reinstall the host from a known-good image and rotate every credential it held (SSH "
      "keys, tokens, cloud keys) before it rejoins the cluster"};
  out.push_back(std::move(f));
}

}  // namespace cardiac::doctor
