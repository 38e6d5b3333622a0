// SPDX-License-Identifier: Apache-2.0
// What the security checks look at, read from a host tree through the FileSystem seam (live
// /proc or a captured tree): every process's executable link, command line, user and socket
// inodes, the TCP and UDP sockets of /proc/net, and the accounts with UID 0 in /etc/passwd.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "platform/fs.h"

namespace cardiac::doctor {

// One row of /proc/net/{tcp,tcp6,udp,udp6}.
struct SocketEntry {
  std::string proto{};  // "tcp", "tcp6", "udp", "udp6"
  std::string local_address{};
  unsigned local_port = 0;
  std::string remote_address{};
  unsigned remote_port = 0;
  unsigned state = 0;  // the kernel's TCP state: 0x0A listen, 0x01 established, 0x07 close
  unsigned uid = 0;
  std::uint64_t inode = 0;
  // TCP in LISTEN, or UDP bound to a port with no peer.
  [[nodiscard]] bool listening() const;
  // "tcp" or "udp", without the 6.
  [[nodiscard]] std::string_view family() const;
};

struct HostProcess {
  std::uint32_t pid = 0;
  std::string comm{};
  std::string cmdline{};             // NULs as blanks, shortened
  std::optional<std::string> exe{};  // the /proc/<pid>/exe link's text; unset when unreadable
  // The link ends in " (deleted)" and a file is at its path again (a package upgrade).
  bool exe_replaced = false;
  std::optional<unsigned> uid{};               // real UID from /proc/<pid>/status
  std::string user{};                          // the UID's name in /etc/passwd, or ""
  std::vector<std::uint64_t> socket_inodes{};  // sockets in /proc/net that it holds (fd links)
  std::string job{};                           // "slurm job 123", "cardiac job 7", or "" (jobmap)
};

// An /etc/passwd line with UID 0.
struct Uid0Account {
  std::string name{};
  std::size_t line = 0;  // 1-based
  std::string text{};    // the line verbatim
};

struct SecurityFacts {
  std::vector<HostProcess> processes{};  // by pid
  std::vector<SocketEntry> sockets{};
  std::vector<Uid0Account> uid0_accounts{};  // every one, root included
  bool passwd_read = false;
  // The kernel's ephemeral range (/proc/sys/net/ipv4/ip_local_port_range): clients' ports.
  unsigned ephemeral_low = 32768;
  unsigned ephemeral_high = 60999;
  std::size_t exe_unreadable = 0;  // processes whose exe link could not be read (not root)
  [[nodiscard]] const HostProcess* process(std::uint32_t pid) const;
  // The process holding the socket, or nullptr.
  [[nodiscard]] const HostProcess* owner(std::uint64_t inode) const;
};

// Parses one /proc/net table; rows that do not parse are skipped.
std::vector<SocketEntry> parse_proc_net(std::string_view text, std::string_view proto);

// Reads it all under `fs`. `job_pids` are the processes whose job to look up (jobmap) besides
// the owners of listening sockets: the GPU processes. Never fails: what cannot be read is left
// out (and exe links counted in exe_unreadable).
SecurityFacts read_security_facts(const FileSystem& fs, const std::vector<std::uint32_t>& job_pids);

}  // namespace cardiac::doctor
