// SPDX-License-Identifier: Apache-2.0
// Ports seen listening on this host, kept by the agent (about once a minute) so that the doctor
// can tell a port that began to listen from the host's usual ones. The table is created by the
// first write (`listen_ports`), not by a migration: a store without it simply has no history.
#pragma once

#include <string>
#include <vector>

#include "core/clock.h"
#include "platform/fs.h"
#include "store/db.h"

namespace cardiac::store {

struct ListenPort {
  std::string proto;  // "tcp" or "udp"
  unsigned port = 0;
  TimeNs first_seen = 0;
  TimeNs last_seen = 0;
  bool operator==(const ListenPort&) const = default;
};

// The ports listening now under `fs` (/proc/net/tcp, tcp6, udp, udp6: TCP in LISTEN, UDP bound
// with no peer), each (proto, port) once. UDP ports in the kernel's ephemeral range
// (ip_local_port_range) are clients' queries, not services, and are left out.
std::vector<ListenPort> scan_listen_ports(const FileSystem& fs);

// Records that each of `ports` (proto, port; first_seen and last_seen ignored) listened at
// `at`: new ones get first_seen = at, known ones last_seen = at. One transaction.
[[nodiscard]] Status record_listen_ports(Db& db, const std::vector<ListenPort>& ports, TimeNs at);
// Every port recorded, oldest first_seen first; empty when the table does not exist (a store
// the agent never recorded ports in, or one opened read-only before it did).
[[nodiscard]] Result<std::vector<ListenPort>> listen_ports(const Db& db);

}  // namespace cardiac::store
