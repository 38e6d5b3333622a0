// SPDX-License-Identifier: Apache-2.0
#include "store/listen_ports.h"

#include <array>
#include <set>
#include <utility>

#include "core/strings.h"

namespace cardiac::store {

std::vector<ListenPort> scan_listen_ports(const FileSystem& fs) {
  std::uint64_t ephemeral_low = 32768;
  std::uint64_t ephemeral_high = 60999;
  if (auto range = fs.read_file("/proc/sys/net/ipv4/ip_local_port_range")) {
    auto f = split_ws(*range);
    if (f.size() == 2) {
      ephemeral_low = parse_u64(f[0]).value_or(ephemeral_low);
      ephemeral_high = parse_u64(f[1]).value_or(ephemeral_high);
    }
  }
  std::set<std::pair<std::string, unsigned>> found;
  for (std::string_view table : {"tcp", "tcp6", "udp", "udp6"}) {
    auto text = fs.read_file(std::string("/proc/net/") + std::string(table));
    if (!text) continue;
    const bool tcp = table.starts_with("tcp");
    for (auto line : split_lines(*text)) {
      // sl local_address rem_address st …; addresses are HEX:PORT. A busy node has thousands of
      // sockets: the fields are read in place.
      std::array<std::string_view, 4> f;
      if (split_ws_into(line, f) < f.size() || !f[0].ends_with(':')) continue;
      auto local_colon = f[1].rfind(':');
      auto remote_colon = f[2].rfind(':');
      if (local_colon == std::string_view::npos || remote_colon == std::string_view::npos) continue;
      auto port = parse_u64(f[1].substr(local_colon + 1), 16);
      auto remote_port = parse_u64(f[2].substr(remote_colon + 1), 16);
      auto state = parse_u64(f[3], 16);
      if (!port || !remote_port || !state || *port == 0 || *port > 65535) continue;
      const bool listening = tcp ? *state == 0x0A : *state == 0x07 && *remote_port == 0;
      if (!listening) continue;
      if (!tcp && *port >= ephemeral_low && *port <= ephemeral_high) continue;
      found.emplace(tcp ? "tcp" : "udp", static_cast<unsigned>(*port));
    }
  }
  std::vector<ListenPort> out;
  for (const auto& [proto, port] : found) out.push_back({proto, port});
  return out;
}

Status record_listen_ports(Db& db, const std::vector<ListenPort>& ports, TimeNs at) {
  CARDIAC_TRY(
      db.exec("CREATE TABLE IF NOT EXISTS listen_ports ("
              " proto TEXT NOT NULL, port INTEGER NOT NULL, first_seen_ns INTEGER NOT NULL,"
              " last_seen_ns INTEGER NOT NULL, PRIMARY KEY (proto, port)) WITHOUT ROWID"));
  auto tx = Transaction::begin(db);
  if (!tx) return fail(tx.error());
  auto st = db.cached(
      "INSERT INTO listen_ports(proto, port, first_seen_ns, last_seen_ns) VALUES (?, ?, ?, ?) "
      "ON CONFLICT(proto, port) DO UPDATE SET last_seen_ns = MAX(last_seen_ns, "
      "excluded.last_seen_ns)");
  if (!st) return fail(st.error());
  for (const auto& p : ports) {
    st->reset();
    st->bind_all(p.proto, static_cast<std::int64_t>(p.port), at, at);
    CARDIAC_TRY(st->run());
  }
  return tx->commit();
}

Result<std::vector<ListenPort>> listen_ports(const Db& db) {
  auto exists = db.query_int64(
      "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'listen_ports'");
  if (!exists) return fail(exists.error());
  std::vector<ListenPort> out;
  if (!*exists || **exists == 0) return out;
  auto st = db.prepare(
      "SELECT proto, port, first_seen_ns, last_seen_ns FROM listen_ports "
      "ORDER BY first_seen_ns, proto, port");
  if (!st) return fail(st.error());
  while (true) {
    auto row = st->step();
    if (!row) return fail(row.error());
    if (!*row) break;
    out.push_back({st->column_text(0), static_cast<unsigned>(st->column_int64(1)),
                   st->column_int64(2), st->column_int64(3)});
  }
  return out;
}

}  // namespace cardiac::store
