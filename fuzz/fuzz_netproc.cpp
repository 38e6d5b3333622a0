// SPDX-License-Identifier: Apache-2.0
// Fuzz target for the pure readers of traffic per process (src/netproc/parse.h): the first
// input byte picks the reader (modulo the table below), the rest is its input. The most exposed
// is parse_inet_diag, which walks netlink message and attribute lengths that come from the
// kernel. Every socket a reader returns must be whole: an address with a port, a remote address
// that is the remote's address part, byte counters only for TCP.
//
// CARDIAC_FUZZ_LIST_PARSERS=1 prints the table (index, fixture globs) that scripts/fuzz.sh seeds
// from; CARDIAC_FUZZ_WRITE_SEEDS=DIR writes well-formed sock_diag answers into DIR and exits.
#include <arpa/inet.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <linux/tcp.h>
#include <netinet/in.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "check.h"
#include "netproc/parse.h"

namespace {

using namespace cardiac;
using netproc::Protocol;
using netproc::Socket;

// "a.b.c.d:port" or "[v6]:port": the text after the last ':' is a port number.
bool has_port(std::string_view endpoint) {
  const auto colon = endpoint.rfind(':');
  if (colon == std::string_view::npos || colon + 1 == endpoint.size()) return false;
  const std::string_view port = endpoint.substr(colon + 1);
  return port.size() <= 5 &&
         std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; });
}

void check_socket(const Socket& s) {
  CARDIAC_FUZZ_CHECK(has_port(s.local));
  if (s.remote.empty()) {
    CARDIAC_FUZZ_CHECK(s.remote_address.empty());
  } else {
    CARDIAC_FUZZ_CHECK(has_port(s.remote));
    CARDIAC_FUZZ_CHECK(s.remote.starts_with(s.remote_address) ||
                       s.remote.starts_with("[" + s.remote_address + "]"));
  }
  if (s.protocol == Protocol::kUdp) {
    CARDIAC_FUZZ_CHECK(!s.bytes_sent && !s.bytes_received);
  } else {
    CARDIAC_FUZZ_CHECK(s.drops == 0);
  }
}

template <class T>
void touch(const Result<T>& r) {
  if (!r) CARDIAC_FUZZ_CHECK(!r.error().what().empty());
}

std::size_t line_count(std::string_view text) {
  return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')) + 1;
}

void udp(std::string_view text, bool v6) {
  auto sockets = netproc::parse_proc_net_udp(text, v6, "/proc/net/udp");
  touch(sockets);
  if (!sockets) {
    CARDIAC_FUZZ_CHECK(sockets.error().what().find("/proc/net/udp line ") != std::string::npos);
    return;
  }
  CARDIAC_FUZZ_CHECK(sockets->size() < line_count(text));  // the header is no socket
  for (const auto& s : *sockets) {
    check_socket(s);
    CARDIAC_FUZZ_CHECK(s.protocol == Protocol::kUdp);
    // An IPv6 table's address is bracketed unless it is IPv4-mapped (written as IPv4).
    if (!v6) CARDIAC_FUZZ_CHECK(s.local.find('[') == std::string::npos);
  }
}

void udp4(std::string_view text) {
  udp(text, false);
}

void udp6(std::string_view text) {
  udp(text, true);
}

void passwd(std::string_view text) {
  const auto users = netproc::parse_passwd(text);
  CARDIAC_FUZZ_CHECK(users.size() <= line_count(text));
  for (const auto& [uid, name] : users) {
    CARDIAC_FUZZ_CHECK(!name.empty());
    CARDIAC_FUZZ_CHECK(name.find_first_of(":\n") == std::string::npos);
  }
}

// A netlink dump as one recv() returns it. libFuzzer's buffer is exactly the input's size, so
// ASan sees a read past the last message or attribute.
void inet_diag(std::string_view text) {
  const std::span<const std::uint8_t> bytes(reinterpret_cast<const std::uint8_t*>(text.data()),
                                            text.size());
  auto batch = netproc::parse_inet_diag(bytes);
  touch(batch);
  if (!batch) return;
  // Each socket is a header and an inet_diag_msg inside the buffer.
  CARDIAC_FUZZ_CHECK(batch->sockets.size() <=
                     bytes.size() / (NLMSG_HDRLEN + sizeof(inet_diag_msg)));
  for (const auto& s : batch->sockets) {
    check_socket(s);
    CARDIAC_FUZZ_CHECK(s.protocol == Protocol::kTcp);
    CARDIAC_FUZZ_CHECK(!s.remote.empty());
  }
  // The address helpers on raw bytes of every length the input offers (4 and 16 are addresses).
  for (std::size_t n = 0; n <= std::min<std::size_t>(bytes.size(), 17); ++n) {
    const auto a = bytes.first(n);
    CARDIAC_FUZZ_CHECK(!netproc::address_text(a).empty());
    CARDIAC_FUZZ_CHECK(has_port(netproc::endpoint_text(a, 65535)));
    (void)netproc::loopback_address(a);
    (void)netproc::unspecified_address(a);
  }
}

void route(std::string_view text) {
  if (auto name = netproc::default_route_interface(text)) {
    CARDIAC_FUZZ_CHECK(!name->empty());
    CARDIAC_FUZZ_CHECK(name->find_first_of(" \t\n") == std::string::npos);
  }
}

void status(std::string_view text) {
  (void)netproc::status_uid(text);
}

// /proc/<pid>/fd link texts, one a line.
void fd_links(std::string_view text) {
  fuzz::for_each_line(text, [](std::string_view line) {
    if (netproc::socket_inode(line)) CARDIAC_FUZZ_CHECK(line.starts_with("socket:["));
  });
}

struct Parser {
  void (*run)(std::string_view);
  // Fixture files (globs under a captured root such as tests/fixtures/hosts/sec-listen) whose
  // contents seed this reader; space-separated.
  const char* fixtures;
};

// Append only: saved inputs (build-fuzz/crashes, fuzz/crashes-found) start with the index.
constexpr Parser kParsers[] = {
    {udp4, "proc/net/udp"},    {udp6, "proc/net/udp6"},        {passwd, "etc/passwd"},
    {inet_diag, ""},  // seeds: CARDIAC_FUZZ_WRITE_SEEDS
    {route, "proc/net/route"}, {status, "proc/[0-9]*/status"}, {fd_links, ""},
};
constexpr std::size_t kParserCount = sizeof(kParsers) / sizeof(kParsers[0]);
constexpr std::uint8_t kInetDiag = 3;

// ---- well-formed sock_diag answers, laid out as the kernel does (seeds) -----------------------

void append(std::vector<std::uint8_t>& out, const void* p, std::size_t n) {
  const auto* b = static_cast<const std::uint8_t*>(p);
  out.insert(out.end(), b, b + n);
  out.resize(NLMSG_ALIGN(out.size()), 0);
}

// One SOCK_DIAG_BY_FAMILY message with `info_len` bytes of tcp_info (0: no attribute).
std::vector<std::uint8_t> diag_message(int family, const std::vector<std::uint8_t>& src,
                                       const std::vector<std::uint8_t>& dst, std::size_t info_len) {
  inet_diag_msg m{};
  m.idiag_family = static_cast<std::uint8_t>(family);
  m.idiag_state = 1;
  m.id.idiag_sport = htons(41000);
  m.id.idiag_dport = htons(443);
  std::memcpy(m.id.idiag_src, src.data(), src.size());
  std::memcpy(m.id.idiag_dst, dst.data(), dst.size());
  m.idiag_uid = 1000;
  m.idiag_inode = 9001;
  tcp_info info{};
  info.tcpi_bytes_acked = 123456789012ULL;
  info.tcpi_bytes_received = 42;
  std::vector<std::uint8_t> body;
  append(body, &m, sizeof(m));
  if (info_len > 0) {
    rtattr a{};
    a.rta_type = INET_DIAG_INFO;
    a.rta_len = static_cast<unsigned short>(RTA_LENGTH(info_len));
    std::vector<std::uint8_t> attr(sizeof(a) + info_len);
    std::memcpy(attr.data(), &a, sizeof(a));
    std::memcpy(attr.data() + sizeof(a), &info, info_len);
    append(body, attr.data(), attr.size());
  }
  nlmsghdr h{};
  h.nlmsg_len = static_cast<std::uint32_t>(NLMSG_HDRLEN + body.size());
  h.nlmsg_type = SOCK_DIAG_BY_FAMILY;
  std::vector<std::uint8_t> out;
  append(out, &h, sizeof(h));
  out.insert(out.end(), body.begin(), body.end());
  return out;
}

std::vector<std::uint8_t> control(std::uint16_t type, int error) {
  nlmsghdr h{};
  h.nlmsg_type = type;
  h.nlmsg_len = NLMSG_HDRLEN + sizeof(int);
  std::vector<std::uint8_t> out;
  append(out, &h, sizeof(h));
  append(out, &error, sizeof(error));
  return out;
}

bool write_seed(const std::string& dir, const std::string& name,
                const std::vector<std::vector<std::uint8_t>>& messages) {
  std::ofstream out(dir + "/" + name, std::ios::binary);
  out.put(static_cast<char>(kInetDiag));
  for (const auto& m : messages) {
    out.write(reinterpret_cast<const char*>(m.data()), static_cast<std::streamsize>(m.size()));
  }
  return static_cast<bool>(out);
}

int write_seeds(const std::string& dir) {
  const std::vector<std::uint8_t> v4_src{10, 0, 0, 5};
  const std::vector<std::uint8_t> v4_dst{203, 0, 113, 7};
  std::vector<std::uint8_t> v6_src(16, 0);
  v6_src[15] = 1;  // ::1
  std::vector<std::uint8_t> v6_dst(16, 0);
  v6_dst[0] = 0x20;
  v6_dst[1] = 0x01;
  v6_dst[2] = 0x0d;
  v6_dst[3] = 0xb8;
  v6_dst[15] = 1;  // 2001:db8::1
  const auto v4 = diag_message(AF_INET, v4_src, v4_dst, sizeof(tcp_info));
  const auto v6 = diag_message(AF_INET6, v6_src, v6_dst, sizeof(tcp_info));
  // An old kernel's tcp_info that ends before tcpi_bytes_acked.
  const auto short_info =
      diag_message(AF_INET, v4_src, v4_dst, offsetof(tcp_info, tcpi_bytes_acked));
  const auto no_info = diag_message(AF_INET, v4_src, v4_dst, 0);
  bool ok = write_seed(dir, "diag-v4-v6", {v4, v6});
  ok = write_seed(dir, "diag-done", {v4, short_info, no_info, control(NLMSG_DONE, 0)}) && ok;
  ok = write_seed(dir, "diag-error", {control(NLMSG_ERROR, -1)}) && ok;
  return ok ? 0 : 1;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  if (std::getenv("CARDIAC_FUZZ_LIST_PARSERS") != nullptr) {
    for (std::size_t i = 0; i < kParserCount; ++i) {
      if (*kParsers[i].fixtures != '\0') std::printf("%zu\t0\t%s\n", i, kParsers[i].fixtures);
    }
    std::exit(0);
  }
  cardiac::fuzz::write_seeds_if_asked(write_seeds);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const Parser& parser = kParsers[data[0] % kParserCount];
  parser.run(fuzz::as_text(data + 1, size - 1));
  return 0;
}
