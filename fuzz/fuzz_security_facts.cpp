// SPDX-License-Identifier: Apache-2.0
// Fuzz target for what the doctor's security checks read (src/doctor/security_facts.cpp,
// compiled in on its own): the first byte (modulo 5) picks
//   0-3  doctor::parse_proc_net on the rest as /proc/net/tcp, tcp6, udp, udp6: every row it
//        keeps has an address inet_pton reads back, ports that fit 16 bits and its table's name;
//   4    doctor::read_security_facts over a MemFs whose /etc/passwd, /proc/net/tcp and
//        ip_local_port_range all hold the rest: each UID 0 account is its line's first field,
//        and the ephemeral range is a range of ports.
#include <arpa/inet.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
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
    (void)e.listening();
  }
}

void facts(std::string_view text) {
  MemFs fs;
  fs.add_file("/etc/passwd", std::string(text));
  fs.add_file("/proc/net/tcp", std::string(text));
  fs.add_file("/proc/sys/net/ipv4/ip_local_port_range", std::string(text));
  const auto f = doctor::read_security_facts(fs, {});
  CARDIAC_FUZZ_CHECK(f.passwd_read);
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
