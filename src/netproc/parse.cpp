// SPDX-License-Identifier: Apache-2.0
#include "netproc/parse.h"

#include <arpa/inet.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <linux/tcp.h>
#include <netinet/in.h>

#include <array>
#include <cstddef>
#include <cstring>
#include <limits>

#include <fmt/format.h>

#include "core/strings.h"

namespace cardiac::netproc {
namespace {

bool v4_mapped(std::span<const std::uint8_t> a) {
  static constexpr std::array<std::uint8_t, 12> kPrefix{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  return a.size() == 16 && std::equal(kPrefix.begin(), kPrefix.end(), a.begin());
}

// Hex words as /proc/net/udp prints them: each 32-bit word of the address as the CPU holds
// it, so copying the parsed value back into memory gives the bytes in network order.
std::optional<std::vector<std::uint8_t>> hex_address(std::string_view hex) {
  if (hex.size() != 8 && hex.size() != 32) return std::nullopt;
  std::vector<std::uint8_t> out(hex.size() / 2);
  for (std::size_t w = 0; w < hex.size() / 8; ++w) {
    auto v = parse_u64(hex.substr(w * 8, 8), 16);
    if (!v) return std::nullopt;
    auto word = static_cast<std::uint32_t>(*v);
    std::memcpy(out.data() + w * 4, &word, 4);
  }
  return out;
}

struct Endpoint {
  std::vector<std::uint8_t> addr;
  std::uint16_t port = 0;
};

std::optional<Endpoint> hex_endpoint(std::string_view text) {
  auto colon = text.find(':');
  if (colon == std::string_view::npos) return std::nullopt;
  auto addr = hex_address(text.substr(0, colon));
  auto port = parse_u64(text.substr(colon + 1), 16);
  if (!addr || !port || *port > 0xffff) return std::nullopt;
  return Endpoint{std::move(*addr), static_cast<std::uint16_t>(*port)};
}

template <typename T>
T read_at(std::span<const std::uint8_t> bytes, std::size_t offset) {
  T v{};
  std::memcpy(&v, bytes.data() + offset, sizeof(T));
  return v;
}

constexpr std::size_t align4(std::size_t n) {
  return (n + 3) & ~static_cast<std::size_t>(3);
}

// The inet_diag_msg's attributes: INET_DIAG_INFO carries struct tcp_info, whose length is
// the kernel's; the byte counters are read only when it reaches them.
void read_attributes(std::span<const std::uint8_t> attrs, Socket& s) {
  std::size_t off = 0;
  while (off + sizeof(rtattr) <= attrs.size()) {
    auto a = read_at<rtattr>(attrs, off);
    if (a.rta_len < sizeof(rtattr) || off + a.rta_len > attrs.size()) return;
    const std::size_t payload = off + RTA_LENGTH(0);
    const std::size_t len = a.rta_len - RTA_LENGTH(0);
    if (a.rta_type == INET_DIAG_INFO) {
      constexpr std::size_t kAcked = offsetof(tcp_info, tcpi_bytes_acked);
      constexpr std::size_t kReceived = offsetof(tcp_info, tcpi_bytes_received);
      if (len >= kAcked + 8) s.bytes_sent = read_at<std::uint64_t>(attrs, payload + kAcked);
      if (len >= kReceived + 8) {
        s.bytes_received = read_at<std::uint64_t>(attrs, payload + kReceived);
      }
    }
    off += align4(a.rta_len);
  }
}

}  // namespace

std::string address_text(std::span<const std::uint8_t> addr) {
  std::array<char, INET6_ADDRSTRLEN> buf{};
  if (addr.size() == 4 || v4_mapped(addr)) {
    const std::uint8_t* p = addr.size() == 4 ? addr.data() : addr.data() + 12;
    return fmt::format("{}.{}.{}.{}", p[0], p[1], p[2], p[3]);
  }
  if (addr.size() != 16 || inet_ntop(AF_INET6, addr.data(), buf.data(), buf.size()) == nullptr) {
    return "?";
  }
  return buf.data();
}

std::string endpoint_text(std::span<const std::uint8_t> addr, std::uint16_t port) {
  std::string a = address_text(addr);
  if (addr.size() == 16 && !v4_mapped(addr)) return fmt::format("[{}]:{}", a, port);
  return fmt::format("{}:{}", a, port);
}

bool loopback_address(std::span<const std::uint8_t> addr) {
  if (addr.size() == 4) return addr[0] == 127;
  if (v4_mapped(addr)) return addr[12] == 127;
  if (addr.size() != 16) return false;
  for (std::size_t i = 0; i < 15; ++i) {
    if (addr[i] != 0) return false;
  }
  return addr[15] == 1;
}

bool unspecified_address(std::span<const std::uint8_t> addr) {
  return std::all_of(addr.begin(), addr.end(), [](std::uint8_t b) { return b == 0; });
}

Result<std::vector<Socket>> parse_proc_net_udp(std::string_view text, bool v6,
                                               std::string_view source) {
  std::vector<Socket> out;
  auto lines = split_lines(text);
  for (std::size_t i = 1; i < lines.size(); ++i) {
    auto f = split_ws(lines[i]);
    if (f.empty()) continue;
    auto where = [&](std::string_view field) {
      return fmt::format("{} line {}: {}", source, i + 1, field);
    };
    if (f.size() < 13) {
      return fail(Error::parse(fmt::format("{} fields, expected 13", f.size()), where("line")));
    }
    auto local = hex_endpoint(f[1]);
    auto remote = hex_endpoint(f[2]);
    const std::size_t want = v6 ? 16 : 4;
    if (!local || local->addr.size() != want) {
      return fail(Error::parse(fmt::format("not an address: '{}'", f[1]), where("local_address")));
    }
    if (!remote || remote->addr.size() != want) {
      return fail(Error::parse(fmt::format("not an address: '{}'", f[2]), where("rem_address")));
    }
    auto uid = parse_u64(f[7]);
    auto inode = parse_u64(f[9]);
    auto drops = parse_u64(f[12]);
    if (!uid || *uid > 0xffffffffULL) {
      return fail(Error::parse(fmt::format("not a uid: '{}'", f[7]), where("uid")));
    }
    if (!inode) return fail(Error::parse(fmt::format("not a number: '{}'", f[9]), where("inode")));
    if (!drops) return fail(Error::parse(fmt::format("not a number: '{}'", f[12]), where("drops")));
    Socket s;
    s.protocol = Protocol::kUdp;
    s.inode = *inode;
    s.uid = static_cast<std::uint32_t>(*uid);
    s.drops = *drops;
    s.local = endpoint_text(local->addr, local->port);
    const bool connected = !unspecified_address(remote->addr) || remote->port != 0;
    if (connected) {
      s.remote = endpoint_text(remote->addr, remote->port);
      s.remote_address = address_text(remote->addr);
      s.loopback = loopback_address(remote->addr);
    } else {
      s.loopback = loopback_address(local->addr);
    }
    out.push_back(std::move(s));
  }
  return out;
}

std::optional<std::uint64_t> socket_inode(std::string_view link) {
  constexpr std::string_view kPrefix = "socket:[";
  if (!link.starts_with(kPrefix) || !link.ends_with("]")) return std::nullopt;
  return parse_u64(link.substr(kPrefix.size(), link.size() - kPrefix.size() - 1));
}

std::map<std::uint32_t, std::string> parse_passwd(std::string_view text) {
  std::map<std::uint32_t, std::string> out;
  for (auto line : split_lines(text)) {
    if (line.empty() || line.front() == '#') continue;
    auto f = split(line, ':');
    if (f.size() < 3 || f[0].empty()) continue;
    auto uid = parse_u64(f[2]);
    if (!uid || *uid > 0xffffffffULL) continue;
    out.emplace(static_cast<std::uint32_t>(*uid), std::string(f[0]));  // the first name wins
  }
  return out;
}

std::optional<std::string> default_route_interface(std::string_view text) {
  std::optional<std::string> best;
  std::uint64_t best_metric = 0;
  auto lines = split_lines(text);
  for (std::size_t i = 1; i < lines.size(); ++i) {
    auto f = split_ws(lines[i]);
    if (f.size() < 8) continue;
    auto dest = parse_u64(f[1], 16);
    auto metric = parse_u64(f[6]);
    auto mask = parse_u64(f[7], 16);
    if (!dest || !metric || !mask || *dest != 0 || *mask != 0) continue;
    if (!best || *metric < best_metric) {
      best = std::string(f[0]);
      best_metric = *metric;
    }
  }
  return best;
}

std::optional<std::uint32_t> status_uid(std::string_view text) {
  for (auto line : split_lines(text)) {
    if (!line.starts_with("Uid:")) continue;
    auto f = split_ws(line.substr(4));
    if (f.empty()) return std::nullopt;
    auto v = parse_u64(f[0]);
    if (!v || *v > 0xffffffffULL) return std::nullopt;
    return static_cast<std::uint32_t>(*v);
  }
  return std::nullopt;
}

Result<DiagBatch> parse_inet_diag(std::span<const std::uint8_t> bytes) {
  DiagBatch out;
  std::size_t off = 0;
  while (off + sizeof(nlmsghdr) <= bytes.size()) {
    auto h = read_at<nlmsghdr>(bytes, off);
    if (h.nlmsg_len < sizeof(nlmsghdr) || off + h.nlmsg_len > bytes.size()) {
      return fail(Error::parse(fmt::format("message of {} bytes at offset {} runs past the {} read",
                                           h.nlmsg_len, off, bytes.size()),
                               "sock_diag"));
    }
    auto body = bytes.subspan(off + NLMSG_HDRLEN, h.nlmsg_len - NLMSG_HDRLEN);
    if (h.nlmsg_type == NLMSG_DONE) {
      out.done = true;
      return out;
    }
    if (h.nlmsg_type == NLMSG_ERROR) {
      // The kernel sends -errno. Negated in 64 bits: a damaged INT_MIN has no negation in int.
      const std::int64_t err =
          body.size() >= sizeof(int) ? -static_cast<std::int64_t>(read_at<int>(body, 0)) : 0;
      const bool errno_value = err >= 0 && err <= std::numeric_limits<int>::max();
      return fail(Error::unavailable(
          fmt::format("the kernel answered error {} ({})", err,
                      errno_value ? std::strerror(static_cast<int>(err)) : "not an errno"),
          "sock_diag"));
    }
    if (h.nlmsg_type == SOCK_DIAG_BY_FAMILY && body.size() >= sizeof(inet_diag_msg)) {
      auto m = read_at<inet_diag_msg>(body, 0);
      const std::size_t len = m.idiag_family == AF_INET6 ? 16 : 4;
      std::span<const std::uint8_t> src(reinterpret_cast<const std::uint8_t*>(m.id.idiag_src), len);
      std::span<const std::uint8_t> dst(reinterpret_cast<const std::uint8_t*>(m.id.idiag_dst), len);
      Socket s;
      s.protocol = Protocol::kTcp;
      s.inode = m.idiag_inode;
      s.uid = m.idiag_uid;
      s.local = endpoint_text(src, ntohs(m.id.idiag_sport));
      s.remote = endpoint_text(dst, ntohs(m.id.idiag_dport));
      s.remote_address = address_text(dst);
      s.loopback = loopback_address(dst);
      read_attributes(body.subspan(NLMSG_ALIGN(sizeof(inet_diag_msg))), s);
      out.sockets.push_back(std::move(s));
    }
    off += NLMSG_ALIGN(h.nlmsg_len);
  }
  return out;
}

}  // namespace cardiac::netproc
