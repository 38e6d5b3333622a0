// SPDX-License-Identifier: Apache-2.0
// Fuzz target for what the doctor's security checks read (src/doctor/security_facts.cpp,
// compiled in on its own): the first byte (modulo 5) picks
//   0-3  doctor::parse_proc_net on the rest as /proc/net/tcp, tcp6, udp, udp6: every row it
//        keeps has an address inet_pton reads back, ports that fit 16 bits, a state that fits
//        the byte the kernel prints and its table's name;
//   4    doctor::read_security_facts over a MemFs whose /etc/passwd, /proc/net/tcp and
//        ip_local_port_range all hold the rest, and one process of UID 0: each UID 0 account is
//        its line's first field, the process's user is a name passwd gives UID 0 (or none),
//        and the ephemeral range is a range of ports.
#include <arpa/inet.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "check.h"
#include "doctor/security_facts.h"
#include "platform/fs.h"

namespace {

using namespace cardiac;

constexpr std::array<std::string_view, 4> kTables = {"tcp", "tcp6", "udp", "udp6"};

bool is_address(const std::string& text) {
  std::array<unsigned char, 16> buf{};
  const int af = text.find(':') == std::string::npos ? AF_INET : AF_INET6;
  return inet_pton(af, text.c_str(), buf.data()) == 1;
}

void table(std::string_view text, std::string_view proto) {
  const auto rows = doctor::parse_proc_net(text, proto);
  CARDIAC_FUZZ_CHECK(rows.size() <=
                     static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')) + 1);
  for (const auto& e : rows) {
    CARDIAC_FUZZ_CHECK(e.proto == proto);
    CARDIAC_FUZZ_CHECK(e.family() == proto.substr(0, 3));
    CARDIAC_FUZZ_CHECK(is_address(e.local_address));
    CARDIAC_FUZZ_CHECK(is_address(e.remote_address));
    CARDIAC_FUZZ_CHECK(e.local_port <= 65535 && e.remote_port <= 65535);
    CARDIAC_FUZZ_CHECK(e.state <= 0xFF);  // the kernel prints a byte
    (void)e.listening();
  }
}

// True when a line of `passwd` gives `name` exactly the UID `uid` (no other number that
// wraps to it).
bool passwd_names(std::string_view passwd, const std::string& name, unsigned uid) {
  const std::string want = name + ":";
  bool found = false;
  fuzz::for_each_line(passwd, [&](std::string_view line) {
    if (!line.starts_with(want)) return;
    const auto colon = line.find(':', want.size());  // after the password field
    if (colon == std::string_view::npos) return;
    const auto end = line.find(':', colon + 1);
    const std::string field(line.substr(
        colon + 1, end == std::string_view::npos ? std::string_view::npos : end - colon - 1));
    char* rest = nullptr;
    errno = 0;
    const unsigned long long v = std::strtoull(field.c_str(), &rest, 10);
    if (errno == 0 && v == uid) found = true;
  });
  return found;
}

void facts(std::string_view text) {
  MemFs fs;
  fs.add_file("/etc/passwd", std::string(text));
  fs.add_file("/proc/net/tcp", std::string(text));
  fs.add_file("/proc/sys/net/ipv4/ip_local_port_range", std::string(text));
  // One process of UID 0: its user is the name passwd gives UID 0, or none.
  fs.add_file("/proc/1/stat", "1 (init) S 0 1 1 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 1 0 0\n");
  fs.add_file("/proc/1/status", "Name:\tinit\nUid:\t0\t0\t0\t0\n");
  const auto f = doctor::read_security_facts(fs, {});
  CARDIAC_FUZZ_CHECK(f.passwd_read);
  CARDIAC_FUZZ_CHECK(f.processes.size() == 1 && f.processes[0].uid == 0U);
  if (!f.processes[0].user.empty()) CARDIAC_FUZZ_CHECK(passwd_names(text, f.processes[0].user, 0));
  CARDIAC_FUZZ_CHECK(f.ephemeral_low <= f.ephemeral_high && f.ephemeral_high <= 65535);
  for (const auto& a : f.uid0_accounts) {
    CARDIAC_FUZZ_CHECK(a.line >= 1);
    CARDIAC_FUZZ_CHECK(a.text.starts_with(a.name + ":"));
  }
  for (const auto& s : f.sockets)
    CARDIAC_FUZZ_CHECK(f.owner(s.inode) == nullptr);  // no /proc/<pid>
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string_view text = fuzz::as_text(data + 1, size - 1);
  const std::size_t pick = data[0] % (kTables.size() + 1);
  if (pick < kTables.size()) {
    table(text, kTables[pick]);
  } else {
    facts(text);
  }
  return 0;
}
