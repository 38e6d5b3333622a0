// SPDX-License-Identifier: Apache-2.0
#include "doctor/security_facts.h"

#include <arpa/inet.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <limits>
#include <map>
#include <set>

#include <fmt/format.h>

#include "core/strings.h"
#include "host/processes.h"
#include "jobmap/jobmap.h"
#include "serving/engines.h"

namespace cardiac::doctor {
namespace {

// Enough for any real process; a process with more descriptors is read up to here.
constexpr std::size_t kMaxFdsPerProcess = 65536;

// /proc/net prints each 32-bit word of the address as the number the kernel holds in memory
// ("%08X" of the network-order bytes read as a native word): copying the word back to memory
// restores the network-order bytes on either endianness.
std::optional<std::string> decode_address(std::string_view hex) {
  if (hex.size() != 8 && hex.size() != 32) return std::nullopt;
  std::array<unsigned char, 16> bytes{};
  for (std::size_t w = 0; w < hex.size() / 8; ++w) {
    auto word = parse_u64(hex.substr(w * 8, 8), 16);
    if (!word) return std::nullopt;
    auto v = static_cast<std::uint32_t>(*word);
    std::memcpy(bytes.data() + w * 4, &v, 4);
  }
  std::array<char, INET6_ADDRSTRLEN> text{};
  const int af = hex.size() == 8 ? AF_INET : AF_INET6;
  if (inet_ntop(af, bytes.data(), text.data(), text.size()) == nullptr) return std::nullopt;
  return std::string(text.data());
}

bool parse_endpoint(std::string_view s, std::string& address, unsigned& port) {
  const auto colon = s.find(':');
  if (colon == std::string_view::npos) return false;
  auto a = decode_address(s.substr(0, colon));
  auto p = parse_u64(s.substr(colon + 1), 16);
  if (!a || !p || *p > 65535) return false;
  address = std::move(*a);
  port = static_cast<unsigned>(*p);
  return true;
}

// A UID is 32 bits. A larger number is no UID: cast, 4294967296 would pass for root.
std::optional<unsigned> parse_uid(std::string_view s) {
  auto v = parse_u64(s);
  if (!v || *v > std::numeric_limits<std::uint32_t>::max()) return std::nullopt;
  return static_cast<unsigned>(*v);
}

std::map<unsigned, std::string> read_user_names(const std::string& passwd) {
  std::map<unsigned, std::string> names;
  for (auto line : split_lines(passwd)) {
    auto f = split(line, ':');
    if (f.size() < 3) continue;
    if (auto uid = parse_uid(f[2])) names.emplace(*uid, std::string(f[0]));  // the first wins
  }
  return names;
}

std::vector<Uid0Account> uid0_accounts(const std::string& passwd) {
  std::vector<Uid0Account> out;
  std::size_t n = 0;
  for (auto line : split_lines(passwd)) {
    ++n;
    auto f = split(line, ':');
    if (f.size() < 3 || trim(f[0]).starts_with('#')) continue;
    if (auto uid = parse_u64(f[2]); uid && *uid == 0) {
      out.push_back({std::string(f[0]), n, std::string(line)});
    }
  }
  return out;
}

std::optional<unsigned> real_uid(const std::string& status) {
  for (auto line : split_lines(status)) {
    if (!line.starts_with("Uid:")) continue;
    auto f = split_ws(line.substr(4));
    if (f.empty()) return std::nullopt;
    return parse_uid(f[0]);
  }
  return std::nullopt;
}

// "socket:[12345]" → 12345.
std::optional<std::uint64_t> socket_inode(std::string_view link) {
  if (!link.starts_with("socket:[") || !link.ends_with(']')) return std::nullopt;
  return parse_u64(link.substr(8, link.size() - 9));
}

}  // namespace

bool SocketEntry::listening() const {
  if (family() == "tcp") return state == 0x0A;
  return state == 0x07 && remote_port == 0 && local_port != 0;
}

std::string_view SocketEntry::family() const {
  return std::string_view(proto).substr(0, 3);
}

const HostProcess* SecurityFacts::process(std::uint32_t pid) const {
  auto it = std::lower_bound(processes.begin(), processes.end(), pid,
                             [](const HostProcess& p, std::uint32_t v) { return p.pid < v; });
  return it != processes.end() && it->pid == pid ? &*it : nullptr;
}

const HostProcess* SecurityFacts::owner(std::uint64_t inode) const {
  if (inode == 0) return nullptr;
  for (const auto& p : processes) {
    if (std::find(p.socket_inodes.begin(), p.socket_inodes.end(), inode) != p.socket_inodes.end()) {
      return &p;
    }
  }
  return nullptr;
}

std::vector<SocketEntry> parse_proc_net(std::string_view text, std::string_view proto) {
  std::vector<SocketEntry> out;
  for (auto line : split_lines(text)) {
    // sl local rem st tx:rx tr:when retrnsmt uid timeout inode …; read in place (thousands of
    // lines on a busy node).
    std::array<std::string_view, 10> f;
    if (split_ws_into(line, f) < f.size() || !f[0].ends_with(':')) continue;
    SocketEntry e;
    e.proto = std::string(proto);
    auto st = parse_u64(f[3], 16);
    auto uid = parse_uid(f[7]);
    auto inode = parse_u64(f[9]);
    // The state is a byte ("%02X"): a wider number must not wrap to 0x0A and pass for LISTEN.
    if (!st || *st > 0xFF || !uid || !inode) continue;
    if (!parse_endpoint(f[1], e.local_address, e.local_port)) continue;
    if (!parse_endpoint(f[2], e.remote_address, e.remote_port)) continue;
    e.state = static_cast<unsigned>(*st);
    e.uid = *uid;
    e.inode = *inode;
    out.push_back(std::move(e));
  }
  return out;
}

SecurityFacts read_security_facts(const FileSystem& fs,
                                  const std::vector<std::uint32_t>& job_pids) {
  SecurityFacts facts;
  for (std::string_view proto : {"tcp", "tcp6", "udp", "udp6"}) {
    if (auto text = fs.read_file(fmt::format("/proc/net/{}", proto))) {
      auto rows = parse_proc_net(*text, proto);
      facts.sockets.insert(facts.sockets.end(), rows.begin(), rows.end());
    }
  }
  std::set<std::uint64_t> known_inodes;
  std::set<std::uint64_t> listening_inodes;
  for (const auto& s : facts.sockets) {
    if (s.inode == 0) continue;
    known_inodes.insert(s.inode);
    if (s.listening()) listening_inodes.insert(s.inode);
  }

  if (auto range = fs.read_file("/proc/sys/net/ipv4/ip_local_port_range")) {
    auto f = split_ws(*range);
    auto low = f.size() == 2 ? parse_u64(f[0]) : std::nullopt;
    auto high = f.size() == 2 ? parse_u64(f[1]) : std::nullopt;
    if (low && high && *low <= *high && *high <= 65535) {
      facts.ephemeral_low = static_cast<unsigned>(*low);
      facts.ephemeral_high = static_cast<unsigned>(*high);
    }
  }

  std::map<unsigned, std::string> users;
  if (auto passwd = fs.read_file("/etc/passwd")) {
    facts.passwd_read = true;
    users = read_user_names(*passwd);
    facts.uid0_accounts = uid0_accounts(*passwd);
  }

  auto entries = fs.list_dir("/proc");
  if (!entries) return facts;
  std::vector<std::uint32_t> pids;
  for (const auto& name : *entries) {
    auto pid = parse_u64(name);
    if (pid && *pid > 0 && *pid <= UINT32_MAX) pids.push_back(static_cast<std::uint32_t>(*pid));
  }
  std::sort(pids.begin(), pids.end());
  const std::set<std::uint32_t> wanted_jobs(job_pids.begin(), job_pids.end());
  for (auto pid : pids) {
    HostProcess p;
    p.pid = pid;
    const std::string dir = fmt::format("/proc/{}", pid);
    auto stat = fs.read_file(dir + "/stat");
    if (!stat) continue;  // gone, or not a process
    if (auto parsed = host::parse_proc_pid_stat(*stat)) p.comm = parsed->comm;
    if (auto raw = fs.read_file(dir + "/cmdline"); raw && !raw->empty()) {
      p.cmdline = serving::cmdline_text(*raw);
    }
    if (auto exe = fs.read_link(dir + "/exe")) {
      p.exe = std::move(*exe);
      constexpr std::string_view kDeleted = " (deleted)";
      if (p.exe->ends_with(kDeleted)) {
        p.exe_replaced = fs.exists(p.exe->substr(0, p.exe->size() - kDeleted.size()));
      }
    } else if (exe.error().code == ErrorCode::kPermission) {
      ++facts.exe_unreadable;  // another user's process, and this run is not root
    }
    if (auto status = fs.read_file(dir + "/status")) p.uid = real_uid(*status);
    if (p.uid) {
      if (auto it = users.find(*p.uid); it != users.end()) p.user = it->second;
    }
    if (!known_inodes.empty()) {
      if (auto fds = fs.list_dir(dir + "/fd")) {
        std::size_t n = 0;
        for (const auto& fd : *fds) {
          if (++n > kMaxFdsPerProcess) break;
          auto link = fs.read_link(fmt::format("{}/fd/{}", dir, fd));
          if (!link) continue;
          auto inode = socket_inode(*link);
          if (inode && known_inodes.contains(*inode)) p.socket_inodes.push_back(*inode);
        }
        std::sort(p.socket_inodes.begin(), p.socket_inodes.end());
        p.socket_inodes.erase(std::unique(p.socket_inodes.begin(), p.socket_inodes.end()),
                              p.socket_inodes.end());
      }
    }
    const bool listens = std::any_of(p.socket_inodes.begin(), p.socket_inodes.end(),
                                     [&](std::uint64_t i) { return listening_inodes.contains(i); });
    if (listens || wanted_jobs.contains(pid)) {
      if (auto job = jobmap::find_job(fs, pid).job) p.job = jobmap::describe(job->source, job->id);
    }
    facts.processes.push_back(std::move(p));
  }
  return facts;
}

}  // namespace cardiac::doctor
