// SPDX-License-Identifier: Apache-2.0
// The /proc side of a snapshot, all through the FileSystem seam.
#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "core/strings.h"
#include "host/processes.h"
#include "netproc/parse.h"
#include "netproc/snapshot.h"

namespace cardiac::netproc {
namespace {

// A command line longer than this is cut: a report names the process, it does not archive it.
constexpr std::size_t kMaxCmdline = 200;

std::string shorten(std::string s) {
  if (s.size() <= kMaxCmdline) return s;
  std::size_t cut = kMaxCmdline;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;  // UTF-8
  s.resize(cut);
  return s + "…";
}

}  // namespace

void read_udp_sockets(const FileSystem& fs, Snapshot& s) {
  for (bool v6 : {false, true}) {
    const std::string path = v6 ? "/proc/net/udp6" : "/proc/net/udp";
    auto text = fs.read_file(path);
    if (!text) continue;  // no IPv6, or no /proc/net in a captured tree
    auto parsed = parse_proc_net_udp(*text, v6, path);
    if (!parsed) {
      s.notes.push_back(parsed.error().what());
      continue;
    }
    for (auto& sock : *parsed) s.sockets.push_back(std::move(sock));
  }
}

void read_owners(const FileSystem& fs, Snapshot& s) {
  std::set<std::uint64_t> wanted;
  for (const auto& sock : s.sockets) {
    if (sock.inode != 0) wanted.insert(sock.inode);
  }
  if (wanted.empty()) return;
  auto entries = fs.list_dir("/proc");
  if (!entries) {
    s.notes.push_back("/proc: " + entries.error().what());
    return;
  }
  std::vector<std::uint32_t> pids;
  for (const auto& e : *entries) {
    auto pid = parse_u64(e);
    if (pid && *pid > 0 && *pid <= 0xffffffffULL) pids.push_back(static_cast<std::uint32_t>(*pid));
  }
  // Lowest pid first, so an inherited socket goes to the parent that opened it.
  std::sort(pids.begin(), pids.end());
  std::map<std::uint32_t, std::string> users;
  if (auto passwd = fs.read_file("/etc/passwd")) users = parse_passwd(*passwd);
  std::size_t unreadable = 0;
  for (auto pid : pids) {
    const std::string dir = fmt::format("/proc/{}/fd", pid);
    auto fds = fs.list_dir(dir);
    if (!fds) {
      if (fs.exists(fmt::format("/proc/{}", pid))) ++unreadable;
      continue;
    }
    bool owns = false;
    for (const auto& fd : *fds) {
      std::string path = dir;
      path += '/';
      path += fd;
      auto link = fs.read_link(path);
      if (!link) continue;
      auto inode = socket_inode(*link);
      if (!inode || !wanted.contains(*inode)) continue;
      if (s.owners.emplace(*inode, pid).second) owns = true;
    }
    if (!owns) continue;
    Process p;
    p.pid = pid;
    if (auto comm = host::read_process_name(fs, pid)) p.comm = *comm;
    if (auto status = fs.read_file(fmt::format("/proc/{}/status", pid))) {
      p.uid = status_uid(*status).value_or(0);
    }
    auto user = users.find(p.uid);
    p.user = user != users.end() ? user->second : std::to_string(p.uid);
    if (auto cmd = fs.read_file(fmt::format("/proc/{}/cmdline", pid), 64 * 1024)) {
      p.cmdline = shorten(host::parse_cmdline(*cmd));
    }
    s.processes.emplace(pid, std::move(p));
  }
  if (unreadable > 0) {
    s.notes.push_back(fmt::format(
        "{} processes' /proc/<pid>/fd could not be listed (run as root to see every owner)",
        unreadable));
  }
}

Snapshot take_snapshot(const FileSystem& fs, TimeNs taken_at) {
  Snapshot s;
  s.taken_at = taken_at;
  if (auto tcp = tcp_sockets()) {
    s.sockets = std::move(*tcp);
  } else {
    s.notes.push_back("tcp: " + tcp.error().what());
  }
  read_udp_sockets(fs, s);
  read_owners(fs, s);
  return s;
}

Link pick_link(const FileSystem& fs, const std::vector<host::NetDevice>& nics,
               const std::vector<host::NetRates>& rates, const std::string& wanted) {
  auto find = [&](const std::string& name) -> std::optional<Link> {
    for (const auto& d : nics) {
      if (d.name == name) return Link{d.name, d.speed_mbps};
    }
    return std::nullopt;
  };
  if (!wanted.empty()) return find(wanted).value_or(Link{wanted, std::nullopt});
  if (auto route = fs.read_file("/proc/net/route")) {
    if (auto name = default_route_interface(*route)) {
      if (auto l = find(*name)) return *l;
    }
  }
  const host::NetRates* busiest = nullptr;
  for (const auto& r : rates) {
    if (busiest == nullptr ||
        r.rx_bytes_per_s + r.tx_bytes_per_s > busiest->rx_bytes_per_s + busiest->tx_bytes_per_s) {
      busiest = &r;
    }
  }
  if (busiest != nullptr) {
    if (auto l = find(busiest->name)) return *l;
  }
  for (const auto& d : nics) {
    if (d.speed_mbps) return Link{d.name, d.speed_mbps};
  }
  return {};
}

}  // namespace cardiac::netproc
