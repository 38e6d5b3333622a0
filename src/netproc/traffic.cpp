// SPDX-License-Identifier: Apache-2.0
#include "netproc/traffic.h"

#include <algorithm>

#include <fmt/format.h>

namespace cardiac::netproc {
namespace {

struct Key {
  Protocol protocol;
  std::uint64_t inode;
  std::string local;
  std::string remote;
  auto operator<=>(const Key&) const = default;
};

// Inode 0 sockets (orphans) have no owner; local and remote keep two of them apart.
Key key_of(const Socket& s) {
  return {s.protocol, s.inode, s.local, s.remote};
}

// What moved since `before` (nullptr: the socket is new). Counters that went backwards mean a
// new socket reused the inode and addresses: everything counts.
std::uint64_t moved(const std::optional<std::uint64_t>& now,
                    const std::optional<std::uint64_t>& then, bool have_then) {
  if (!now) return 0;
  if (!have_then || !then || *then > *now) return *now;
  return *now - *then;
}

struct Acc {
  Talker t;
  std::map<std::string, std::uint64_t> remotes;  // address → bytes both ways
};

std::optional<double> link_percent(double bytes_per_s, const Link& link) {
  if (!link.speed_mbps || *link.speed_mbps == 0) return std::nullopt;
  return 100.0 * bytes_per_s * 8.0 / (static_cast<double>(*link.speed_mbps) * 1e6);
}

}  // namespace

Traffic rate(const Snapshot& before, const Snapshot& after, const Link& link,
             const RateOptions& options) {
  Traffic out;
  out.link = link;
  out.loopback_included = options.include_loopback;
  out.notes = after.notes;
  if (after.taken_at > before.taken_at) {
    out.window_s = static_cast<double>(after.taken_at - before.taken_at) / 1e9;
  }
  std::map<Key, const Socket*> earlier;
  for (const auto& s : before.sockets) earlier.emplace(key_of(s), &s);

  std::map<std::uint32_t, Acc> by_pid;
  for (const auto& s : after.sockets) {
    if (s.loopback && !options.include_loopback) continue;
    auto found = earlier.find(key_of(s));
    const Socket* then = found == earlier.end() ? nullptr : found->second;
    const bool have = then != nullptr;
    const std::uint64_t sent = moved(s.bytes_sent, have ? then->bytes_sent : std::nullopt, have);
    const std::uint64_t received =
        moved(s.bytes_received, have ? then->bytes_received : std::nullopt, have);
    const std::uint64_t drops = have && then->drops <= s.drops ? s.drops - then->drops : 0;
    ++out.sockets;
    out.sent_bytes += sent;
    out.received_bytes += received;

    std::optional<std::uint32_t> pid;
    if (auto o = after.owners.find(s.inode); s.inode != 0 && o != after.owners.end()) {
      pid = o->second;
    } else if (auto b = before.owners.find(s.inode); s.inode != 0 && b != before.owners.end()) {
      pid = b->second;
    }
    if (!pid) {
      out.unowned_bytes += sent + received;
      continue;
    }
    Acc& a = by_pid[*pid];
    if (a.t.process.pid == 0) {
      a.t.process.pid = *pid;
      if (auto p = after.processes.find(*pid); p != after.processes.end()) {
        a.t.process = p->second;
      } else if (auto q = before.processes.find(*pid); q != before.processes.end()) {
        a.t.process = q->second;
      }
      a.t.process.pid = *pid;
    }
    a.t.sent_bytes += sent;
    a.t.received_bytes += received;
    a.t.udp_drops += drops;
    ++a.t.sockets;
    if (sent + received > 0 && !s.remote_address.empty()) {
      a.remotes[s.remote_address] += sent + received;
    }
  }

  const double dt = out.window_s;
  auto per_s = [dt](std::uint64_t b) { return dt > 0 ? static_cast<double>(b) / dt : 0.0; };
  out.sent_bytes_per_s = per_s(out.sent_bytes);
  out.received_bytes_per_s = per_s(out.received_bytes);
  for (auto& [pid, a] : by_pid) {
    Talker& t = a.t;
    if (t.sent_bytes + t.received_bytes == 0 && t.udp_drops == 0) continue;
    t.sent_bytes_per_s = per_s(t.sent_bytes);
    t.received_bytes_per_s = per_s(t.received_bytes);
    t.sent_link_percent = link_percent(t.sent_bytes_per_s, link);
    t.received_link_percent = link_percent(t.received_bytes_per_s, link);
    t.remote_count = a.remotes.size();
    std::vector<std::pair<std::string, std::uint64_t>> remotes(a.remotes.begin(), a.remotes.end());
    std::stable_sort(remotes.begin(), remotes.end(),
                     [](const auto& x, const auto& y) { return x.second > y.second; });
    for (std::size_t i = 0; i < remotes.size() && i < options.top_remotes; ++i) {
      t.top_remotes.push_back(remotes[i].first);
    }
    out.talkers.push_back(std::move(t));
  }
  std::stable_sort(out.talkers.begin(), out.talkers.end(), [](const Talker& x, const Talker& y) {
    return x.sent_bytes + x.received_bytes > y.sent_bytes + y.received_bytes;
  });
  return out;
}

std::vector<Talker> top_by(const Traffic& t, bool sent, std::size_t n) {
  std::vector<Talker> out = t.talkers;
  std::stable_sort(out.begin(), out.end(), [sent](const Talker& x, const Talker& y) {
    return sent ? x.sent_bytes > y.sent_bytes : x.received_bytes > y.received_bytes;
  });
  if (out.size() > n) out.resize(n);
  return out;
}

std::string talker_text(const Talker& t, const Link& link) {
  const std::string& what = t.process.cmdline.empty() ? t.process.comm : t.process.cmdline;
  auto share = [&](const std::optional<double>& pct) {
    return pct ? fmt::format(" ({:.0f} % of {})", *pct, link.name) : std::string();
  };
  std::string out =
      fmt::format("pid {} ({}) {}: sent {}{}, received {}{}", t.process.pid, t.process.user, what,
                  bits_per_s(t.sent_bytes_per_s), share(t.sent_link_percent),
                  bits_per_s(t.received_bytes_per_s), share(t.received_link_percent));
  out += fmt::format(", {} remote{}", t.remote_count, t.remote_count == 1 ? "" : "s");
  if (t.udp_drops > 0) out += fmt::format(", {} UDP drops", t.udp_drops);
  return out;
}

std::string bits_per_s(double bytes_per_s) {
  const double b = bytes_per_s * 8;
  if (b >= 1e9) return fmt::format("{:.1f} Gb/s", b / 1e9);
  if (b >= 1e6) return fmt::format("{:.0f} Mb/s", b / 1e6);
  if (b >= 1e3) return fmt::format("{:.0f} kb/s", b / 1e3);
  return fmt::format("{:.0f} b/s", b);
}

}  // namespace cardiac::netproc
