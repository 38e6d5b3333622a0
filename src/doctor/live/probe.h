// SPDX-License-Identifier: Apache-2.0
// Live network probes for the doctor: ICMP echo (or a TCP connect where ICMP is not allowed),
// TCP connect time and UDP echo, each bounded by deadlines so that a hung resolver or a
// black-holed route never hangs the run; and the default gateway from /proc/net/*route.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "core/result.h"
#include "doctor/input.h"
#include "platform/fs.h"

namespace cardiac::doctor {

enum class ProbeKind {
  kHost,  // "10.0.0.1", "example.org", "::1": ICMP echo, else TCP connect to 443 then 22
  kTcp,   // "tcp://host:port": TCP connect time
  kUdp,   // "udp://host:port": UDP echo (the peer sends each datagram back unchanged)
};

struct ProbeTarget {
  ProbeKind kind = ProbeKind::kHost;
  std::string host;  // name or address literal, without brackets ("fe80::1%eth0" keeps its scope)
  std::uint16_t port = 0;  // 0 for kHost
};

// Parses a target as written on the command line. IPv6 literals take brackets when a port
// follows ("tcp://[::1]:22"); a bare "::1" or "[::1]" is a plain host. Errors (kInvalidArgument,
// naming the text): empty, an unknown scheme, a missing or out-of-range port.
[[nodiscard]] Result<ProbeTarget> parse_probe_target(std::string_view text);

struct ProbeOptions {
  unsigned count = 10;                     // probes per target
  DurationNs interval = 100 * kNsPerMs;    // between probe starts (they are paced, not bursts)
  DurationNs timeout = kNsPerSec;          // per probe: a later answer counts as lost
  DurationNs dns_timeout = 2 * kNsPerSec;  // name resolution
  // Per target, from its start, resolution included. A probe is only started while its whole
  // timeout fits before the deadline (the first one always is), so the deadline never turns
  // an answer into a loss; probes that did not fit are not counted as sent.
  DurationNs deadline = 6 * kNsPerSec;
  bool allow_icmp = true;  // false: plain hosts go straight to the TCP fallback
};

// Probes one target with `role` ("gateway", "target", "loopback") copied into the result.
// Never fails and never blocks past options.deadline (a resolver that hangs is left behind
// on its own thread). Fields are filled as in input.h, and in detail:
//  - method: "icmp", "tcp" or "udp" — a plain host falls back to "tcp" when this process may
//    open neither an ICMP datagram socket (net.ipv4.ping_group_range) nor a raw one
//    (CAP_NET_RAW); a plain-host TCP probe counts a refused connection (RST) as an answer,
//    because the host did answer;
//  - address: the address probed, with the port for tcp/udp ("127.0.0.1:443", "[::1]:22");
//    empty when the name did not resolve;
//  - dns_ms: set whenever the target was a name, also when resolution failed or timed out;
//  - error with sent == 0: why nothing could be sent (the message names the target);
//    error with sent > 0: a note explaining losses ("connection refused", "deadline reached
//    after 4 of 10 probes").
// Times (round trips, deadlines, DNS) are read from `clock`'s monotonic time; the caller passes
// the system clock, since the answers come in real time. Thread-safe: probes of different
// targets may run at once.
[[nodiscard]] ProbeResult probe(const std::string& target, const std::string& role,
                                const ProbeOptions& options, const Clock& clock);

// A default route: the gateway address as text ("192.168.2.1", "fe80::1%eth0").
struct DefaultRoute {
  std::string gateway;
  std::string iface;
  std::uint32_t metric = 0;
};

// Parses /proc/net/route: the up, gateway-flagged route to 0.0.0.0/0 with the lowest metric
// (the gateway column is the address in network order printed as a little-endian hex word).
// nullopt when there is none; malformed rows are skipped.
[[nodiscard]] std::optional<DefaultRoute> parse_proc_net_route(std::string_view text);
// Parses /proc/net/ipv6_route: the same for ::/0; a link-local gateway carries "%iface".
[[nodiscard]] std::optional<DefaultRoute> parse_proc_net_ipv6_route(std::string_view text);
// The IPv4 default gateway, else the IPv6 one, read through `fs`; nullopt when neither.
[[nodiscard]] std::optional<std::string> default_gateway(const FileSystem& fs);

// Called with the fraction of targets finished (0..1], never by two threads at once.
using ProbeProgress = std::function<void(double fraction)>;

// Probes the gateway (role "gateway", first in the result) and every target (role "target",
// in order; a target equal to the gateway is probed once, as the gateway) concurrently, one
// thread each. Returns when every probe has finished, which options.deadline bounds.
[[nodiscard]] std::vector<ProbeResult> run_probes(const std::vector<std::string>& targets,
                                                  const std::optional<std::string>& gateway,
                                                  const ProbeOptions& options, const Clock& clock,
                                                  const ProbeProgress& progress = {});

}  // namespace cardiac::doctor
