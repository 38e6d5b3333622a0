// SPDX-License-Identifier: Apache-2.0
// Probe targets as the user writes them, and the default route from /proc/net.
#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>

#include "core/format.h"
#include "core/strings.h"
#include "doctor/live/probe.h"

namespace cardiac::doctor {
namespace {

bool is_hex_zero(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c == '0'; });
}

constexpr std::uint64_t kRtfUp = 0x1;
constexpr std::uint64_t kRtfGateway = 0x2;
constexpr std::uint64_t kRtfReject = 0x200;

bool usable_gateway_flags(std::uint64_t flags) {
  return (flags & kRtfUp) != 0 && (flags & kRtfGateway) != 0 && (flags & kRtfReject) == 0;
}

void keep_lowest(std::optional<DefaultRoute>& best, DefaultRoute candidate) {
  if (!best || candidate.metric < best->metric) best = std::move(candidate);
}

}  // namespace

Result<ProbeTarget> parse_probe_target(std::string_view text) {
  auto bad = [&](std::string_view why) {
    return fail(Error::invalid(std::string(why), fmt::format("probe target '{}'", text)));
  };
  std::string_view s = trim(text);
  if (s.empty()) return bad("empty");
  ProbeTarget t;
  auto scheme = s.find("://");
  if (scheme == std::string_view::npos) {
    if (s.size() > 2 && s.front() == '[' && s.back() == ']') s = s.substr(1, s.size() - 2);
    t.host = std::string(s);
    return t;
  }
  std::string_view name = s.substr(0, scheme);
  if (name != "tcp" && name != "udp") {
    return bad("unknown scheme (expected a host, tcp://host:port or udp://host:port)");
  }
  t.kind = name == "tcp" ? ProbeKind::kTcp : ProbeKind::kUdp;
  std::string_view rest = s.substr(scheme + 3);
  std::string_view host;
  std::string_view port;
  if (rest.starts_with('[')) {
    auto close = rest.find("]:");
    if (close == std::string_view::npos) return bad("expected [address]:port");
    host = rest.substr(1, close - 1);
    port = rest.substr(close + 2);
  } else {
    auto colon = rest.rfind(':');
    if (colon == std::string_view::npos) return bad("missing :port");
    host = rest.substr(0, colon);
    port = rest.substr(colon + 1);
    if (host.find(':') != std::string_view::npos) return bad("an IPv6 address needs [brackets]");
  }
  auto p = parse_u64(port);
  if (host.empty()) return bad("missing host");
  if (!p || *p == 0 || *p > 65535) return bad("port must be 1-65535");
  t.host = std::string(host);
  t.port = static_cast<std::uint16_t>(*p);
  return t;
}

std::optional<DefaultRoute> parse_proc_net_route(std::string_view text) {
  std::optional<DefaultRoute> best;
  for (std::string_view line : split_lines(text)) {
    auto f = split_ws(line);
    if (f.size() < 8 || f[0] == "Iface") continue;
    auto dest = parse_u64(f[1], 16);
    auto gw = parse_u64(f[2], 16);
    auto flags = parse_u64(f[3], 16);
    auto metric = parse_u64(f[6]);
    auto mask = parse_u64(f[7], 16);
    if (!dest || !gw || !flags || !metric || !mask) continue;
    if (*dest != 0 || *mask != 0 || *gw == 0 || *gw > 0xffffffffULL) continue;
    if (!usable_gateway_flags(*flags) || *metric > 0xffffffffULL) continue;
    // The kernel prints the address's network-order bytes as a little-endian word.
    std::string addr = fmt::format("{}.{}.{}.{}", *gw & 0xff, (*gw >> 8) & 0xff, (*gw >> 16) & 0xff,
                                   (*gw >> 24) & 0xff);
    keep_lowest(best, {std::move(addr), std::string(f[0]), static_cast<std::uint32_t>(*metric)});
  }
  return best;
}

std::optional<DefaultRoute> parse_proc_net_ipv6_route(std::string_view text) {
  std::optional<DefaultRoute> best;
  for (std::string_view line : split_lines(text)) {
    auto f = split_ws(line);
    if (f.size() < 10 || f[0].size() != 32 || f[4].size() != 32) continue;
    if (!is_hex_zero(f[0]) || !is_hex_zero(f[1]) || is_hex_zero(f[4])) continue;
    auto metric = parse_u64(f[5], 16);
    auto flags = parse_u64(f[8], 16);
    if (!metric || !flags || !usable_gateway_flags(*flags) || *metric > 0xffffffffULL) continue;
    in6_addr a{};
    bool ok = true;
    for (std::size_t i = 0; i < 16 && ok; ++i) {
      auto byte = parse_u64(f[4].substr(i * 2, 2), 16);
      ok = byte.has_value();
      if (ok) a.s6_addr[i] = static_cast<std::uint8_t>(*byte);
    }
    char buf[INET6_ADDRSTRLEN] = {};
    if (!ok || inet_ntop(AF_INET6, &a, buf, sizeof buf) == nullptr) continue;
    std::string addr = buf;
    // A link-local next hop means nothing without the interface it is reached through.
    if (a.s6_addr[0] == 0xfe && (a.s6_addr[1] & 0xc0) == 0x80) addr += "%" + std::string(f[9]);
    keep_lowest(best, {std::move(addr), std::string(f[9]), static_cast<std::uint32_t>(*metric)});
  }
  return best;
}

std::optional<std::string> default_gateway(const FileSystem& fs) {
  if (auto v4 = fs.read_file("/proc/net/route")) {
    if (auto r = parse_proc_net_route(*v4)) return r->gateway;
  }
  if (auto v6 = fs.read_file("/proc/net/ipv6_route")) {
    if (auto r = parse_proc_net_ipv6_route(*v6)) return r->gateway;
  }
  return std::nullopt;
}

}  // namespace cardiac::doctor
