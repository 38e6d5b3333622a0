// SPDX-License-Identifier: Apache-2.0
// Fuzz target for the doctor's network inputs: /proc/net/route and /proc/net/ipv6_route (the
// default gateway) and probe targets as the user writes them (parse_probe_target). The whole
// input goes to the route parsers; each line of it is also a probe target.
#include <arpa/inet.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "check.h"
#include "doctor/live/probe.h"

namespace {

using namespace cardiac;

// probe.h: an IPv4 gateway is a dotted quad that inet_pton reads back.
void check_ipv4_route(const doctor::DefaultRoute& r) {
  in_addr a{};
  CARDIAC_FUZZ_CHECK(inet_pton(AF_INET, r.gateway.c_str(), &a) == 1);
  CARDIAC_FUZZ_CHECK(!r.iface.empty());
}

// An IPv6 gateway is an address, with "%iface" only when it is link-local.
void check_ipv6_route(const doctor::DefaultRoute& r) {
  const auto pct = r.gateway.find('%');
  const std::string addr = r.gateway.substr(0, pct);
  in6_addr a{};
  CARDIAC_FUZZ_CHECK(inet_pton(AF_INET6, addr.c_str(), &a) == 1);
  const bool link_local = a.s6_addr[0] == 0xfe && (a.s6_addr[1] & 0xc0) == 0x80;
  CARDIAC_FUZZ_CHECK(link_local == (pct != std::string::npos));
  CARDIAC_FUZZ_CHECK(!r.iface.empty());
}

// A parsed target names a host; tcp:// and udp:// carry a port in 1..65535, a host none.
void check_target(std::string_view line) {
  auto t = doctor::parse_probe_target(line);
  if (!t) {
    CARDIAC_FUZZ_CHECK(t.error().code == ErrorCode::kInvalidArgument);
    return;
  }
  CARDIAC_FUZZ_CHECK(!t->host.empty());
  if (t->kind == doctor::ProbeKind::kHost) {
    CARDIAC_FUZZ_CHECK(t->port == 0);
  } else {
    CARDIAC_FUZZ_CHECK(t->port != 0);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = fuzz::as_text(data, size);
  if (auto r = doctor::parse_proc_net_route(text)) check_ipv4_route(*r);
  if (auto r = doctor::parse_proc_net_ipv6_route(text)) check_ipv6_route(*r);
  fuzz::for_each_line(text, check_target);
  return 0;
}
