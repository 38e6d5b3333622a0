// SPDX-License-Identifier: Apache-2.0
// Network interface counters (/proc/net/dev), link state and speed (/sys/class/net), rates.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "platform/fs.h"

namespace cardiac::host {

struct NetDevice {
  std::string name;
  std::uint64_t rx_bytes = 0;
  std::uint64_t rx_packets = 0;
  std::uint64_t rx_errors = 0;
  std::uint64_t rx_drops = 0;
  std::uint64_t tx_bytes = 0;
  std::uint64_t tx_packets = 0;
  std::uint64_t tx_errors = 0;
  std::uint64_t tx_drops = 0;
  // From /sys/class/net/<name>/: absent when the file is missing, unreadable (EINVAL while
  // the link is down) or says -1 / "unknown".
  std::optional<std::uint64_t> speed_mbps;
  std::optional<std::string> operstate;  // "up", "down", "lowerlayerdown", ...
};

struct NetRates {
  std::string name;
  double rx_bytes_per_s = 0;
  double tx_bytes_per_s = 0;
  // Percent of the link speed (at the second sample); absent when the speed is unknown.
  std::optional<double> rx_util_percent;
  std::optional<double> tx_util_percent;
  // New errors and drops in the interval.
  std::uint64_t rx_errors = 0;
  std::uint64_t tx_errors = 0;
  std::uint64_t rx_drops = 0;
  std::uint64_t tx_drops = 0;
};

// Parses /proc/net/dev: two header lines, then "name: 8 rx counters 8 tx counters" per
// interface. The loopback interface "lo" is dropped. A row with fewer than 16 counters or a
// non-numeric one is a parse error naming the line; empty text is no interfaces.
[[nodiscard]] Result<std::vector<NetDevice>> parse_net_dev(std::string_view text);

// Parses a sysfs speed attribute (Mb/s); nullopt for -1, 0, "unknown" or garbage.
[[nodiscard]] std::optional<std::uint64_t> parse_link_speed_mbps(std::string_view text);

// Rates between two samples `seconds` apart for interfaces present in both. An interface
// whose byte, packet, error or drop counters went backwards (driver reload, 32-bit counter
// wrap) is left out. Empty when `seconds` <= 0.
[[nodiscard]] std::vector<NetRates> compute_net_rates(const std::vector<NetDevice>& prev,
                                                      const std::vector<NetDevice>& cur,
                                                      double seconds);

// Reads /proc/net/dev and, per interface, /sys/class/net/<name>/{speed,operstate}. A missing
// /proc/net/dev is a kNotFound error; missing sysfs files leave the fields absent.
[[nodiscard]] Result<std::vector<NetDevice>> collect_net_devices(const FileSystem& fs);

}  // namespace cardiac::host
