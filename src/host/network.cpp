// SPDX-License-Identifier: Apache-2.0
// /proc/net/dev and /sys/class/net readers and network rates.
#include "host/network.h"

#include <algorithm>

#include "core/format.h"
#include "core/strings.h"
#include "host/parse_util.h"

namespace cardiac::host {
namespace {

using detail::excerpt;
using detail::line_error;

constexpr std::size_t kCounters = 16;

bool is_header(std::string_view line) {
  return line.find('|') != std::string_view::npos && line.find(':') == std::string_view::npos;
}

Result<NetDevice> parse_row(std::string_view row, std::size_t line) {
  // The name may be glued to the first counter ("eth0:123") when the number is wide.
  const auto colon = row.find(':');
  if (colon == std::string_view::npos) {
    return fail(line_error(line, fmt::format("expected 'name: counters', got '{}'", excerpt(row))));
  }
  NetDevice d;
  d.name = std::string(trim(row.substr(0, colon)));
  auto f = split_ws(row.substr(colon + 1));
  if (d.name.empty() || d.name.find('/') != std::string::npos || f.size() < kCounters) {
    return fail(line_error(
        line, fmt::format("expected a name and {} counters, got '{}'", kCounters, excerpt(row))));
  }
  std::uint64_t v[kCounters] = {};
  for (std::size_t i = 0; i < kCounters; ++i) {
    auto n = parse_u64(f[i]);
    if (!n) return fail(line_error(line, fmt::format("bad counter '{}'", excerpt(f[i]))));
    v[i] = *n;
  }
  d.rx_bytes = v[0];
  d.rx_packets = v[1];
  d.rx_errors = v[2];
  d.rx_drops = v[3];
  d.tx_bytes = v[8];
  d.tx_packets = v[9];
  d.tx_errors = v[10];
  d.tx_drops = v[11];
  return d;
}

std::optional<double> util(double bytes_per_s, std::optional<std::uint64_t> speed_mbps) {
  if (!speed_mbps || *speed_mbps == 0) return std::nullopt;
  const double link_bytes_per_s = static_cast<double>(*speed_mbps) * 1e6 / 8.0;
  return std::min(100.0, bytes_per_s / link_bytes_per_s * 100.0);
}

std::optional<NetRates> rates_between(const NetDevice& a, const NetDevice& b, double seconds) {
  const bool backwards = b.rx_bytes < a.rx_bytes || b.tx_bytes < a.tx_bytes ||
                         b.rx_packets < a.rx_packets || b.tx_packets < a.tx_packets ||
                         b.rx_errors < a.rx_errors || b.tx_errors < a.tx_errors ||
                         b.rx_drops < a.rx_drops || b.tx_drops < a.tx_drops;
  if (backwards) return std::nullopt;
  NetRates r;
  r.name = b.name;
  r.rx_bytes_per_s = static_cast<double>(b.rx_bytes - a.rx_bytes) / seconds;
  r.tx_bytes_per_s = static_cast<double>(b.tx_bytes - a.tx_bytes) / seconds;
  r.rx_util_percent = util(r.rx_bytes_per_s, b.speed_mbps);
  r.tx_util_percent = util(r.tx_bytes_per_s, b.speed_mbps);
  r.rx_errors = b.rx_errors - a.rx_errors;
  r.tx_errors = b.tx_errors - a.tx_errors;
  r.rx_drops = b.rx_drops - a.rx_drops;
  r.tx_drops = b.tx_drops - a.tx_drops;
  return r;
}

}  // namespace

Result<std::vector<NetDevice>> parse_net_dev(std::string_view text) {
  std::vector<NetDevice> out;
  auto lines = split_lines(text);
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (trim(lines[i]).empty() || is_header(lines[i])) continue;
    auto d = parse_row(lines[i], i + 1);
    if (!d) return fail(d.error());
    if (d->name != "lo") out.push_back(std::move(*d));
  }
  return out;
}

std::optional<std::uint64_t> parse_link_speed_mbps(std::string_view text) {
  auto v = parse_u64(text);
  if (!v || *v == 0 || *v > 100'000'000) return std::nullopt;
  return v;
}

std::vector<NetRates> compute_net_rates(const std::vector<NetDevice>& prev,
                                        const std::vector<NetDevice>& cur, double seconds) {
  std::vector<NetRates> out;
  if (!(seconds > 0)) return out;
  for (const NetDevice& c : cur) {
    auto p = std::find_if(prev.begin(), prev.end(),
                          [&](const NetDevice& d) { return d.name == c.name; });
    if (p == prev.end()) continue;
    if (auto r = rates_between(*p, c, seconds)) out.push_back(std::move(*r));
  }
  return out;
}

Result<std::vector<NetDevice>> collect_net_devices(const FileSystem& fs) {
  auto devices = detail::read_and_parse(fs, "/proc/net/dev", parse_net_dev);
  if (!devices) return fail(devices.error());
  for (NetDevice& d : *devices) {
    const std::string dir = "/sys/class/net/" + d.name;
    if (auto speed = detail::read_attr(fs, dir + "/speed"))
      d.speed_mbps = parse_link_speed_mbps(*speed);
    d.operstate = detail::read_attr(fs, dir + "/operstate");
  }
  return devices;
}

}  // namespace cardiac::host
