// SPDX-License-Identifier: Apache-2.0
// The pure readers: /proc/net/udp{,6} tables, /proc/<pid>/fd socket links, /etc/passwd,
// /proc/net/route, and the sock_diag netlink answer as bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "netproc/traffic.h"

namespace cardiac::netproc {

// "1.2.3.4:80", "[2001:db8::1]:443"; an IPv4-mapped IPv6 address is written as IPv4 so that
// one remote is counted once. `addr` is 4 or 16 bytes in network order.
[[nodiscard]] std::string endpoint_text(std::span<const std::uint8_t> addr, std::uint16_t port);
// The address part alone ("1.2.3.4", "2001:db8::1").
[[nodiscard]] std::string address_text(std::span<const std::uint8_t> addr);
[[nodiscard]] bool loopback_address(std::span<const std::uint8_t> addr);
[[nodiscard]] bool unspecified_address(std::span<const std::uint8_t> addr);

// /proc/net/udp (v6 = false) or /proc/net/udp6: a header line, then one socket a line with
// hex addresses as the kernel prints them (each 32-bit word in host order), uid, inode and
// drops. A line that does not parse is an error naming `source`, the line and the field.
[[nodiscard]] Result<std::vector<Socket>> parse_proc_net_udp(std::string_view text, bool v6,
                                                             std::string_view source);

// The inode of a /proc/<pid>/fd link "socket:[12345]"; nullopt for any other file.
[[nodiscard]] std::optional<std::uint64_t> socket_inode(std::string_view link);

// /etc/passwd: uid → name. Lines that are not "name:x:uid:..." are skipped.
[[nodiscard]] std::map<std::uint32_t, std::string> parse_passwd(std::string_view text);

// /proc/net/route: the interface of the default route (destination 0, mask 0), lowest
// metric first; nullopt when there is none.
[[nodiscard]] std::optional<std::string> default_route_interface(std::string_view text);

// The "Uid:" line of /proc/<pid>/status: the real uid.
[[nodiscard]] std::optional<std::uint32_t> status_uid(std::string_view text);

// One read of a NETLINK_SOCK_DIAG dump: netlink messages, each an inet_diag_msg and its
// attributes; INET_DIAG_INFO's struct tcp_info gives bytes acked and received. `done` is set
// at NLMSG_DONE. An NLMSG_ERROR or a message that runs past the buffer is an error.
struct DiagBatch {
  std::vector<Socket> sockets{};
  bool done = false;
};
[[nodiscard]] Result<DiagBatch> parse_inet_diag(std::span<const std::uint8_t> bytes);

}  // namespace cardiac::netproc
