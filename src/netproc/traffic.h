// SPDX-License-Identifier: Apache-2.0
// Traffic per process: the sockets of one moment (TCP byte counters, UDP drops), who owns
// them, and the pure step from two such snapshots to rates per process ("top talkers").
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/clock.h"

namespace cardiac::netproc {

enum class Protocol { kTcp, kUdp };

// One socket at one moment.
struct Socket {
  Protocol protocol = Protocol::kTcp;
  std::uint64_t inode = 0;  // 0: the kernel has no file for it (time-wait, orphaned)
  std::uint32_t uid = 0;
  std::string local{};           // "10.0.0.5:41234", "[2001:db8::1]:443"
  std::string remote{};          // "" when not connected
  std::string remote_address{};  // `remote` without its port: what "distinct remotes" counts
  // The remote is on this host (127/8, ::1, or an unconnected socket bound to loopback):
  // its bytes never reach a NIC.
  bool loopback = false;
  // TCP only (tcp_info): bytes the peer acknowledged (tcpi_bytes_acked) and bytes received
  // (tcpi_bytes_received). Absent for UDP and on kernels whose tcp_info predates them.
  std::optional<std::uint64_t> bytes_sent{};
  std::optional<std::uint64_t> bytes_received{};
  std::uint64_t drops = 0;  // UDP only: datagrams dropped on receive (/proc/net/udp)
};

// A process that holds sockets.
struct Process {
  std::uint32_t pid = 0;
  std::uint32_t uid = 0;
  std::string user{};  // from /etc/passwd, or the uid as text
  std::string comm{};
  std::string cmdline{};  // arguments joined by spaces, shortened
  bool operator==(const Process&) const = default;
};

// The sockets of one moment and who owns them.
struct Snapshot {
  TimeNs taken_at = 0;  // monotonic
  std::vector<Socket> sockets{};
  std::map<std::uint64_t, std::uint32_t> owners{};  // socket inode → pid
  std::map<std::uint32_t, Process> processes{};     // every owning pid
  std::vector<std::string> notes{};                 // what could not be read, and why
};

// The NIC the shares are taken of.
struct Link {
  std::string name{};
  std::optional<std::uint64_t> speed_mbps{};
};

// One process's traffic over the window.
struct Talker {
  Process process{};
  std::uint64_t sent_bytes = 0;  // over the window
  std::uint64_t received_bytes = 0;
  double sent_bytes_per_s = 0;
  double received_bytes_per_s = 0;
  // Of the link's speed, in percent; absent when the speed is unknown.
  std::optional<double> sent_link_percent{};
  std::optional<double> received_link_percent{};
  std::size_t sockets = 0;       // its sockets counted (TCP and UDP)
  std::size_t remote_count = 0;  // distinct remote addresses its TCP sockets moved bytes with
  std::vector<std::string> top_remotes{};  // those addresses, most bytes first
  std::uint64_t udp_drops = 0;             // new drops on its UDP sockets over the window
};

// Every process's traffic over one window, busiest first.
struct Traffic {
  double window_s = 0;
  Link link{};
  bool loopback_included = false;
  // All counted sockets, owned or not.
  std::uint64_t sent_bytes = 0;
  std::uint64_t received_bytes = 0;
  double sent_bytes_per_s = 0;
  double received_bytes_per_s = 0;
  std::size_t sockets = 0;
  std::uint64_t unowned_bytes = 0;  // moved by sockets no process was found for
  std::vector<Talker> talkers{};
  std::vector<std::string> notes{};
};

struct RateOptions {
  bool include_loopback = false;  // loopback traffic never reaches a NIC: left out by default
  std::size_t top_remotes = 5;
};

// Rates per socket and per process between two snapshots. A TCP socket in `after` only was
// opened during the window: all its bytes count. A socket whose counters went backwards is a
// new socket that reused the inode: likewise. Sockets closed during the window are not seen
// (their last bytes are lost to the figures). The owner of a socket is taken from `after`,
// else from `before`. Talkers that moved no bytes and dropped nothing are left out; the rest
// are ranked by bytes sent plus received, then by pid.
[[nodiscard]] Traffic rate(const Snapshot& before, const Snapshot& after, const Link& link,
                           const RateOptions& options = {});

// The talkers re-ranked by one direction (sent or received), busiest first, at most `n`.
[[nodiscard]] std::vector<Talker> top_by(const Traffic& t, bool sent, std::size_t n);

// "pid 4242 (alice) rsync -a /data host:: sent 940 Mb/s (94 % of eth0), received 1 Mb/s,
// 3 remotes": one talker on one line, for reports.
[[nodiscard]] std::string talker_text(const Talker& t, const Link& link);

// "1.2 Gb/s", "340 Mb/s", "12 kb/s" from bytes per second.
[[nodiscard]] std::string bits_per_s(double bytes_per_s);

}  // namespace cardiac::netproc
