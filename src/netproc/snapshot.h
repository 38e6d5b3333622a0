// SPDX-License-Identifier: Apache-2.0
// Taking a Snapshot: TCP sockets through netlink sock_diag (live only: the kernel of the
// machine this runs on, in its network namespace), UDP sockets and the owners through the
// FileSystem seam (/proc/net/udp{,6}, /proc/<pid>/fd, /proc/<pid>/status, /etc/passwd), so
// the /proc parts also read a captured tree.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/result.h"
#include "host/network.h"
#include "netproc/traffic.h"
#include "platform/fs.h"

namespace cardiac::netproc {

// Every TCP socket (IPv4 and IPv6) but listening, time-wait and half-open ones, with its
// byte counters. Fails when the netlink socket cannot be opened or the kernel refuses.
[[nodiscard]] Result<std::vector<Socket>> tcp_sockets();

// The UDP sockets of /proc/net/udp and /proc/net/udp6; a missing file adds nothing, a
// malformed one a note.
void read_udp_sockets(const FileSystem& fs, Snapshot& s);

// Fills owners and processes from /proc/<pid>/fd links to the snapshot's socket inodes. A
// socket shared by several processes (inherited over fork) goes to the lowest pid. Processes
// that exit during the scan are skipped.
void read_owners(const FileSystem& fs, Snapshot& s);

// All of the above, stamped `taken_at` (monotonic). Never fails: what could not be read is a
// note.
[[nodiscard]] Snapshot take_snapshot(const FileSystem& fs, TimeNs taken_at);

// The NIC the shares are taken of: `wanted` when named, else the default route's interface
// (/proc/net/route), else the busiest NIC in `rates`, else the first with a known speed.
[[nodiscard]] Link pick_link(const FileSystem& fs, const std::vector<host::NetDevice>& nics,
                             const std::vector<host::NetRates>& rates,
                             const std::string& wanted = {});

}  // namespace cardiac::netproc
