// SPDX-License-Identifier: Apache-2.0
// The network check: probe results judged by role, the "is it only me?" verdict from
// comparing near targets (gateway, loopback) with far ones, NIC saturation, errors, drops and
// links that are down, and slow or failing name resolution.
//
// Thresholds, and why:
//  loss     warning at >= 1 % (any loss in fewer than 100 probes); critical at >= 10 % with at
//           least 2 probes lost: a single lost probe can be an ICMP rate limit, two are not;
//  latency  median RTT by role: loopback 1 ms / 10 ms, gateway 2 ms / 20 ms (a LAN hop answers
//           well under 1 ms), far target 150 ms / 500 ms (beyond an intercontinental round
//           trip, which a data-centre peer never needs) — warning / critical;
//  jitter   mean |rtt[i] - rtt[i-1]|: loopback 1 ms, gateway 2 ms, far 30 ms and at least half
//           the median; warning only, from 3 answers up;
//  DNS      warning > 100 ms, critical > 1 s; a name that does not resolve is a warning when
//           the resolver answered within 1 s (the name is wrong or missing), critical after;
//  NIC      rx or tx >= 90 % of the link speed: warning; any new rx/tx error: warning,
//           critical at >= 0.1 % of the packets; drops >= 1/s: warning; a link that is down
//           but has carried traffic: warning, critical when it went down within the window.
//
// The verdict ("is it only me?") compares near targets (gateway, loopback) with far ones:
//  local        a bad loopback, or a bad gateway while far targets are bad too or none ran;
//  gateway-self a bad gateway while every far target, reached through it, is clean: only the
//               router's own replies suffer (ICMP rate limits, a busy control plane);
//  path         a clean gateway and every far target bad (with one far target this cannot be
//               told from the remote end, so the confidence is low and the text says so);
//  remote       a clean gateway (or none) and some far targets clean, others bad;
//  unknown      no near target ran — unless this host's NIC counters show trouble: local, low.
// Local and path findings group every affected target; remote and unknown ones are per target.
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/format.h"
#include "core/units.h"
#include "doctor/checks/checks.h"
#include "doctor/checks/network_util.h"
#include "host/network.h"

namespace cardiac::doctor {

using namespace network_detail;  // NOLINT(google-build-using-namespace): private helpers

namespace {

constexpr double kLossWarnPercent = 1.0;
constexpr double kLossCritPercent = 10.0;
constexpr unsigned kLossCritMinLost = 2;
constexpr double kDnsWarnMs = 100;
constexpr double kDnsCritMs = 1000;
constexpr double kJitterShareOfMedian = 0.5;
// Probes carry no send times; charts place answers one default interval apart from input.now.
constexpr DurationNs kChartStep = 100 * kNsPerMs;

struct Limits {
  double warn_ms;
  double crit_ms;
  double jitter_ms;
};
constexpr Limits kLoopbackLimits{1.0, 10.0, 1.0};
constexpr Limits kGatewayLimits{2.0, 20.0, 2.0};
constexpr Limits kFarLimits{150.0, 500.0, 30.0};

bool is_near(const ProbeResult& p) {
  return p.role == "gateway" || p.role == "loopback";
}

Limits limits_for(const ProbeResult& p) {
  if (p.role == "loopback") return kLoopbackLimits;
  if (p.role == "gateway") return kGatewayLimits;
  return kFarLimits;
}

std::optional<double> median(std::vector<double> v) {
  if (v.empty()) return std::nullopt;
  std::sort(v.begin(), v.end());
  std::size_t m = v.size() / 2;
  return v.size() % 2 != 0 ? v[m] : (v[m - 1] + v[m]) / 2;
}

// One probe result and what we make of it.
struct Judged {
  const ProbeResult* p = nullptr;
  bool near = false;
  bool lossy = false;
  bool slow = false;
  double loss = 0;
  unsigned lost = 0;
  std::optional<double> median_ms;
  Limits limits = kFarLimits;
  [[nodiscard]] bool bad() const { return lossy || slow; }
};

Judged judge(const ProbeResult& p) {
  Judged j;
  j.p = &p;
  j.near = is_near(p);
  j.limits = limits_for(p);
  j.loss = p.loss_percent();
  j.lost = p.sent - std::min(p.sent, p.received);
  j.lossy = p.sent > 0 && j.loss >= kLossWarnPercent;
  j.median_ms = median(p.rtt_ms);
  j.slow = j.median_ms && *j.median_ms >= j.limits.warn_ms;
  return j;
}

std::string label(const ProbeResult& p) {
  if (p.role == "gateway") return "the gateway " + p.target;
  if (p.role == "loopback") return "loopback " + p.target;
  return p.target;
}

// The host part of a target, for the commands we suggest ("tcp://[::1]:22" → "::1").
std::string host_of(const std::string& target) {
  std::string_view s = target;
  auto scheme = s.find("://");
  if (scheme == std::string_view::npos) return target;
  s.remove_prefix(scheme + 3);
  if (s.starts_with('[')) return std::string(s.substr(1, s.find(']') - 1));
  return std::string(s.substr(0, s.rfind(':')));
}

Confidence sample_confidence(unsigned sent) {
  if (sent < 5) return Confidence::kLow;
  return sent < 20 ? Confidence::kMedium : Confidence::kHigh;
}

std::string thin_note(unsigned sent) {
  if (sent >= 5) return {};
  return fmt::format(" Only {} sent: thin evidence.",
                     sent == 1 ? "1 probe was" : fmt::format("{} probes were", sent));
}

std::string describe(const Judged& j) {
  const ProbeResult& p = *j.p;
  std::string s = fmt::format("{} ({} {}): {} of {} answered", label(p), p.method, p.address,
                              p.received, p.sent);
  if (j.median_ms) s += fmt::format(", median {:.2f} ms", *j.median_ms);
  if (auto jit = p.jitter_ms()) s += fmt::format(", jitter {:.2f} ms", *jit);
  if (!p.error.empty()) s += " (" + p.error + ")";
  return s;
}

Evidence probe_evidence(const Judged& j, TimeNs now) {
  Evidence e = evidence("probe", describe(j), now, "probe");
  e.metric = "rtt";
  e.unit = "ms";
  e.threshold = j.limits.warn_ms;
  for (std::size_t i = 0; i < j.p->rtt_ms.size(); ++i) {
    e.series.emplace_back(now + static_cast<TimeNs>(i) * kChartStep, j.p->rtt_ms[i]);
  }
  return e;
}

// ---- probes and the "is it only me?" verdict ------------------------------------------------

// kGatewaySelf: the gateway answers badly but traffic through it is clean.
enum class Where { kLocal, kGatewaySelf, kPath, kRemote, kUnknown };

struct Verdict {
  Where where = Where::kUnknown;
  Confidence confidence = Confidence::kLow;
  std::string reason;
};

Verdict decide(const std::vector<Judged>& all, bool local_signs) {
  unsigned near_ran = 0;
  unsigned near_bad = 0;
  unsigned loopback_bad = 0;
  unsigned far_good = 0;
  unsigned far_bad = 0;
  for (const auto& j : all) {
    if (j.p->sent == 0) continue;
    if (j.near) {
      ++near_ran;
      near_bad += j.bad() ? 1 : 0;
      loopback_bad += j.bad() && j.p->role == "loopback" ? 1 : 0;
    } else {
      (j.bad() ? far_bad : far_good) += 1;
    }
  }
  const Confidence medium = Confidence::kMedium;
  if (near_bad > 0 && loopback_bad == 0 && far_good > 0 && far_bad == 0) {
    return {Where::kGatewaySelf, Confidence::kLow,
            "The gateway answers badly, yet traffic through it to the far targets is clean: "
            "only its own replies suffer. Routers answer probes to themselves from a busy "
            "control-plane CPU and often rate-limit ICMP, which does not touch forwarded "
            "traffic."};
  }
  if (near_bad > 0) {
    return {Where::kLocal, local_signs ? Confidence::kHigh : medium,
            "Is it only me? Yes: the nearest hop already answers badly, so everything beyond "
            "it suffers too. The fault is on this side: this host's NIC, driver, cable or load, "
            "or the switch port it plugs into."};
  }
  if (near_ran > 0 && far_bad > 0 && far_good == 0) {
    return {Where::kPath, far_bad >= 2 ? medium : Confidence::kLow,
            far_bad >= 2
                ? "Is it only me? No: the gateway answers cleanly, so this host's link works, "
                  "but every far target suffers: the network between (a router, uplink or "
                  "firewall on the way) is the likely place."
                : "Is it only me? No: the gateway answers cleanly, so this host's link works. "
                  "Only one far target was probed, so the network on the way and that host "
                  "itself cannot be told apart; probe a second far target to tell."};
  }
  if (far_bad > 0 && far_good > 0) {
    return {Where::kRemote, near_ran > 0 ? medium : Confidence::kLow,
            fmt::format("Is it only me? No: {}{} other far target{} answer{} cleanly, so the "
                        "problem sits with the affected host or service (or the route only it "
                        "takes).",
                        near_ran > 0 ? "the gateway and " : "", far_good, far_good == 1 ? "" : "s",
                        far_good == 1 ? "s" : "")};
  }
  if (near_ran == 0 && far_bad > 0 && local_signs) {
    return {Where::kLocal, Confidence::kLow,
            "Is it only me? Probably: no near target was probed, but this host's NIC counters "
            "below show trouble of its own."};
  }
  return {Where::kUnknown, Confidence::kLow,
          "No near target (the gateway) was probed, so whether this host, the path or the far "
          "end is at fault cannot be told."};
}

std::string_view where_words(Where w) {
  static constexpr std::string_view kWords[] = {
      "local: this host's NIC, driver, cable or load",
      "the gateway's own replies only: traffic through it is clean",
      "path: the network between this host and the target", "remote: that host or service", ""};
  return kWords[static_cast<int>(w)];
}

std::vector<std::string> verdict_actions(Where w, const std::vector<const Judged*>& subjects) {
  std::string host = subjects.empty() ? "<target>" : host_of(subjects.front()->p->target);
  switch (w) {
    case Where::kLocal:
      return {
          "Check this host's NIC counters: `ip -s link` and `ethtool -S <nic>` (crc, symbol, "
          "discard and drop counters that rise; see the counter findings)",
          "Check the cable, transceiver and switch port: `ethtool <nic>` (speed, duplex, link "
          "detected), `ethtool -m <nic>` (optical power); reseat or swap",
          "Check this host's load: softirq time (`mpstat -P ALL 1`), a busy ksoftirqd, a "
          "saturated NIC",
          "Probe the same gateway from another host on the switch: clean there means the "
          "fault is on this host"};
    case Where::kGatewaySelf:
      return {"Nothing to fix on this host while the far targets stay clean",
              "If something depends on the gateway itself (DNS or NTP served by it), check the "
              "router's CPU and its ICMP rate limits"};
    case Where::kPath:
      return {fmt::format("`mtr -rwzc 100 {}` (or `traceroute {}`) to find the hop where loss "
                          "or delay starts",
                          host, host),
              "Probe another far target on a different route to see how far it spreads",
              "Take the mtr report to the network team: the gateway is clean, so this host's own "
              "link is not the cause"};
    case Where::kRemote:
      return {fmt::format("Check {} itself: its load, its NIC counters (`ip -s link`), the "
                          "service on the probed port",
                          host),
              fmt::format("`mtr -rwzc 100 {}`: loss that starts only at the last hop is the host",
                          host),
              "Probe it from another host: if it is bad from there too, this host is not the "
              "cause"};
    case Where::kUnknown:
      break;
  }
  return {"Probe the default gateway as well, so near and far can be compared",
          fmt::format("`mtr -rwzc 100 {}` to see where loss or delay starts", host)};
}

// One finding about `subjects` (all lossy, or all slow), with the verdict in its title.
Finding probe_finding(const DoctorInput& in, bool loss, const std::vector<const Judged*>& subjects,
                      const std::vector<Judged>& all, const Verdict& v,
                      const std::vector<Evidence>& local) {
  Severity sev = Severity::kWarning;
  Confidence conf = v.confidence;
  unsigned fewest = ~0U;
  for (const auto* j : subjects) {
    bool crit = loss ? j->loss >= kLossCritPercent && j->lost >= kLossCritMinLost
                     : *j->median_ms >= j->limits.crit_ms;
    if (crit && v.where != Where::kGatewaySelf) sev = Severity::kCritical;
    conf = std::min(conf, sample_confidence(j->p->sent));
    if (loss && j->lost == 1) conf = Confidence::kLow;
    fewest = std::min(fewest, j->p->sent);
  }
  std::string what;
  if (subjects.size() == 1) {
    const Judged& j = *subjects.front();
    if (!loss) {
      what = fmt::format("High latency to {}: median {:.1f} ms (expected < {:.0f} ms)", label(*j.p),
                         *j.median_ms, j.limits.warn_ms);
    } else if (j.p->received == 0) {
      what = fmt::format("No answer from {} (0 of {} probes answered)", label(*j.p), j.p->sent);
    } else {
      what = fmt::format("Packet loss to {}: {:.0f} % ({} of {} probes lost)", label(*j.p), j.loss,
                         j.lost, j.p->sent);
    }
  } else {
    std::vector<std::string> names;
    for (const auto* j : subjects) names.push_back(label(*j->p));
    what = fmt::format("{} to {} targets ({})", loss ? "Packet loss" : "High latency",
                       subjects.size(), fmt::join(names, ", "));
  }
  std::string_view words = where_words(v.where);
  std::string title = words.empty() ? what : fmt::format("{} — {}", what, words);
  std::string why = v.reason;
  if (loss) {
    why += " Lost probes are ones whose answer did not come back within the probe timeout.";
  } else {
    why += " The median round trip is used, so one slow answer does not make a finding.";
  }
  for (const auto* j : subjects) {
    if (j->p->role == "gateway" && j->p->method == "icmp" && !loss) {
      why +=
          " Routers answer ICMP from a slow control-plane CPU, so the gateway's own latency "
          "can look worse than its forwarding really is.";
      break;
    }
  }
  why += thin_note(fewest);
  Finding f =
      make(loss ? "network.loss" : "network.latency", sev, conf, std::move(title), std::move(why));
  for (const auto* j : subjects) f.evidence.push_back(probe_evidence(*j, in.now));
  for (const auto& j : all) {  // the clean ones are the comparison the verdict rests on
    bool subject =
        std::any_of(subjects.begin(), subjects.end(), [&](const Judged* s) { return s->p == j.p; });
    if (!subject && j.p->sent > 0) f.evidence.push_back(probe_evidence(j, in.now));
  }
  if (v.where == Where::kLocal) f.evidence.insert(f.evidence.end(), local.begin(), local.end());
  f.actions = verdict_actions(v.where, subjects);
  return f;
}

void check_probes(const DoctorInput& in, std::vector<Finding>& out,
                  const std::vector<Evidence>& local) {
  std::vector<Judged> all;
  for (const auto& p : in.probes) all.push_back(judge(p));
  const Verdict v = decide(all, !local.empty());
  const bool grouped = v.where != Where::kRemote && v.where != Where::kUnknown;
  for (bool loss : {true, false}) {
    std::vector<const Judged*> subjects;
    for (const auto& j : all) {
      if (loss ? j.lossy : j.slow) subjects.push_back(&j);
    }
    if (subjects.empty()) continue;
    if (grouped) {
      out.push_back(probe_finding(in, loss, subjects, all, v, local));
    } else {
      for (const auto* j : subjects) out.push_back(probe_finding(in, loss, {j}, all, v, local));
    }
  }
  for (const auto& j : all) {
    auto jitter = j.p->jitter_ms();
    if (j.p->rtt_ms.size() < 3 || !jitter || *jitter < j.limits.jitter_ms) continue;
    if (!j.near && *jitter < kJitterShareOfMedian * j.median_ms.value_or(0)) continue;
    Finding f = make(
        "network.jitter", Severity::kWarning,
        j.p->rtt_ms.size() < 10 ? Confidence::kLow : Confidence::kMedium,
        fmt::format("Jitter to {}: {:.1f} ms between consecutive answers (median {:.1f} ms)",
                    label(*j.p), *jitter, j.median_ms.value_or(0)),
        fmt::format("Round trips to {} vary by {:.1f} ms from one probe to the next (limit "
                    "{:.0f} ms for a {} target). Varying delay means queues that fill and drain: "
                    "a busy link, a busy host, or a congested hop on the way; it slows "
                    "collective operations that wait for the slowest message.{}",
                    label(*j.p), *jitter, j.limits.jitter_ms, j.near ? "near" : "far",
                    thin_note(j.p->sent)));
    f.evidence.push_back(probe_evidence(j, in.now));
    f.actions = {"Check this host's load and its NICs' saturation (see other findings)",
                 fmt::format("`mtr -rwzc 100 {}`: the hop where the spread (StDev) starts",
                             host_of(j.p->target))};
    out.push_back(std::move(f));
  }
}

void check_dns(const DoctorInput& in, std::vector<Finding>& out) {
  Severity sev = Severity::kInfo;
  bool any_failed = false;
  std::vector<std::string> lines;
  Finding f = make("network.dns", Severity::kWarning, Confidence::kLow, "", "");
  for (const auto& p : in.probes) {
    if (!p.dns_ms) continue;
    const double ms = *p.dns_ms;
    const bool failed = p.address.empty();
    if (!failed && ms <= kDnsWarnMs) continue;
    any_failed = any_failed || failed;
    sev = std::max(sev, ms > kDnsCritMs ? Severity::kCritical : Severity::kWarning);
    lines.push_back(failed
                        ? fmt::format("{} did not resolve after {:.0f} ms", host_of(p.target), ms)
                        : fmt::format("{} took {:.0f} ms", host_of(p.target), ms));
    Evidence e =
        evidence("probe",
                 failed ? fmt::format("{}: {} ({:.0f} ms)", p.target, p.error, ms)
                        : fmt::format("{} resolved to {} in {:.0f} ms", p.target, p.address, ms),
                 in.now, "getaddrinfo");
    e.metric = "dns";
    e.unit = "ms";
    e.series.emplace_back(in.now, ms);
    e.threshold = kDnsWarnMs;
    f.evidence.push_back(std::move(e));
  }
  if (lines.empty()) return;
  f.severity = sev;
  // A failure is seen, not inferred; one slow lookup may be a cold cache.
  f.confidence = any_failed || sev == Severity::kCritical ? Confidence::kHigh : Confidence::kLow;
  f.title = fmt::format("{}: {}", any_failed ? "Name resolution fails" : "Name resolution is slow",
                        fmt::join(lines, "; "));
  f.explanation =
      "Names are resolved through /etc/resolv.conf's servers (and /etc/hosts). A lookup over "
      "100 ms is slow for a data centre, one over 1 s means the resolver is barely answering "
      "(every new connection waits for it), and a name that does not resolve within 1 s is "
      "either wrong or missing from DNS. Each name was looked up once, so a single slow lookup "
      "may just have been a cold cache.";
  f.actions = {"`getent hosts <name>` and `dig +stats <name>` to time a lookup again",
               "Check the nameservers in /etc/resolv.conf (`resolvectl status` under "
               "systemd-resolved) and whether each answers",
               "For a name that does not resolve: check its spelling and that the record exists"};
  out.push_back(std::move(f));
}

// tcp://host:port answered with a reset: the network is fine, the service is not there.
void check_refused(const DoctorInput& in, std::vector<Finding>& out) {
  for (const auto& p : in.probes) {
    if (p.refused == 0 || p.method != "tcp" || p.target.rfind("tcp://", 0) != 0) continue;
    Finding f =
        make("network.port_closed", Severity::kWarning, Confidence::kHigh,
             fmt::format("Connection refused by {}: nothing listens on that port", p.target),
             fmt::format("{} of {} connection attempts to {} were refused: the host answered each "
                         "one at once with a reset, so this host's link and the network path to {} "
                         "work. The service itself is not listening there (stopped, crashed, on "
                         "another port, or a firewall that rejects rather than drops).",
                         p.refused, p.sent, p.address, host_of(p.target)));
    Evidence e;
    e.kind = "probe";
    e.text =
        fmt::format("{}: {} of {} refused{}", p.address, p.refused, p.sent,
                    p.mean_ms() ? fmt::format(", answered in {:.2f} ms on average", *p.mean_ms())
                                : std::string());
    e.source = "probe";
    f.evidence.push_back(std::move(e));
    f.actions = {fmt::format("Check the service on {}: is it running and listening on that port "
                             "(`ss -ltnp` there)?",
                             host_of(p.target)),
                 "Check the port in the target you gave and the host's firewall rules (a REJECT "
                 "rule answers like a closed port)"};
    out.push_back(std::move(f));
  }
}

void check_probe_failures(const DoctorInput& in, std::vector<Finding>& out) {
  std::vector<std::string> why;
  for (const auto& p : in.probes) {
    if (p.sent > 0 || p.error.empty()) continue;
    if (p.dns_ms && p.address.empty()) continue;  // the DNS finding tells this one
    why.push_back(p.error);
  }
  if (why.empty()) return;
  Finding f =
      make("network.probe_failed", Severity::kInfo, Confidence::kHigh,
           fmt::format("{} network probe{} could not run", why.size(), why.size() == 1 ? "" : "s"),
           "No probe was sent to these targets, so nothing is known about them: " +
               fmt::format("{}.", fmt::join(why, "; ")));
  f.actions = {"Check the target's spelling (host, tcp://host:port or udp://host:port)",
               "Socket errors such as 'Address family not supported' mean this host cannot "
               "reach that address family at all"};
  out.push_back(std::move(f));
}

}  // namespace

std::string probe_summary(const ProbeResult& p) {
  if (p.sent == 0) {
    return fmt::format("{}: not probed ({})", p.target,
                       p.error.empty() ? "no probe sent" : p.error);
  }
  const Judged j = judge(p);
  std::string s = fmt::format("{} ({} {}): {} of {} answered", p.target, p.method, p.address,
                              p.received, p.sent);
  if (p.refused > 0) s += fmt::format(" ({} by a refusal)", p.refused);
  if (j.median_ms) s += fmt::format(", median {:.2f} ms", *j.median_ms);
  const bool closed = p.refused > 0 && p.target.rfind("tcp://", 0) == 0;
  s += j.bad() ? ": see the network findings" : closed ? ": path ok, port closed" : ": ok";
  return s;
}

void check_network(const DoctorInput& in, std::vector<Finding>& out) {
  std::vector<Evidence> local;  // this host's own NIC trouble, for the verdict
  check_links(in, out, local);
  check_nic_errors(in, out, local);
  check_saturation(in, out, local);
  check_probes(in, out, local);
  check_dns(in, out);
  check_probe_failures(in, out);
  check_refused(in, out);
}

}  // namespace cardiac::doctor
