// SPDX-License-Identifier: Apache-2.0
// The live TCP read: one NETLINK_SOCK_DIAG dump per address family.
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "netproc/parse.h"
#include "netproc/snapshot.h"

namespace cardiac::netproc {
namespace {

// TCP states as the kernel numbers them (include/net/tcp_states.h): listening sockets move
// no bytes, time-wait and new-syn-recv ones are minisockets without tcp_info or an inode.
constexpr unsigned kTcpListen = 10;
constexpr unsigned kTcpTimeWait = 6;
constexpr unsigned kTcpNewSynRecv = 12;
constexpr unsigned kStates = ~((1U << kTcpListen) | (1U << kTcpTimeWait) | (1U << kTcpNewSynRecv));

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  [[nodiscard]] int get() const { return fd_; }

 private:
  int fd_;
};

Status dump(int family, std::vector<Socket>& out) {
  Fd fd(::socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG));
  if (fd.get() < 0) return fail(Error::io("netlink sock_diag", errno));
  struct Request {
    nlmsghdr header;
    inet_diag_req_v2 body;
  } req{};
  req.header.nlmsg_len = sizeof(req);
  req.header.nlmsg_type = SOCK_DIAG_BY_FAMILY;
  req.header.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
  req.header.nlmsg_seq = 1;
  req.body.sdiag_family = static_cast<std::uint8_t>(family);
  req.body.sdiag_protocol = IPPROTO_TCP;
  req.body.idiag_ext = 1U << (INET_DIAG_INFO - 1);
  req.body.idiag_states = kStates;
  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  if (::sendto(fd.get(), &req, sizeof(req), 0, reinterpret_cast<sockaddr*>(&kernel),
               sizeof(kernel)) < 0) {
    return fail(Error::io("netlink sock_diag", errno));
  }
  // A dump comes in reads of up to a page or so of messages each; 32 KiB holds several.
  std::vector<std::uint8_t> buf(32768);
  for (;;) {
    ssize_t n = ::recv(fd.get(), buf.data(), buf.size(), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail(Error::io("netlink sock_diag", errno));
    if (n == 0) return {};
    auto batch =
        parse_inet_diag(std::span<const std::uint8_t>(buf.data(), static_cast<std::size_t>(n)));
    if (!batch) return fail(batch.error());
    for (auto& s : batch->sockets) out.push_back(std::move(s));
    if (batch->done) return {};
  }
}

}  // namespace

Result<std::vector<Socket>> tcp_sockets() {
  std::vector<Socket> out;
  for (int family : {AF_INET, AF_INET6}) {
    if (auto st = dump(family, out); !st) return fail(st.error());
  }
  return out;
}

}  // namespace cardiac::netproc
