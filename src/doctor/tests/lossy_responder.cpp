// SPDX-License-Identifier: Apache-2.0
// The loopback test peers: poll loops on their own threads, woken by a pipe to stop.
#include "doctor/tests/lossy_responder.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>

#include "core/format.h"

namespace cardiac::doctor::loopback {
namespace {

struct Bound {
  int fd = -1;
  std::uint16_t port = 0;
};

// A socket of `type` bound to the loopback address, port chosen by the kernel.
Result<Bound> bind_loopback(int type, bool ipv6) {
  int fd = ::socket(ipv6 ? AF_INET6 : AF_INET, type | SOCK_CLOEXEC, 0);
  if (fd < 0) return fail(Error::io("socket", errno));
  sockaddr_storage ss{};
  socklen_t len = 0;
  if (ipv6) {
    auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
    a->sin6_family = AF_INET6;
    a->sin6_addr = in6addr_loopback;
    len = sizeof *a;
  } else {
    auto* a = reinterpret_cast<sockaddr_in*>(&ss);
    a->sin_family = AF_INET;
    a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    len = sizeof *a;
  }
  if (::bind(fd, reinterpret_cast<sockaddr*>(&ss), len) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) {
    int err = errno;
    ::close(fd);
    return fail(Error::io("bind", err));
  }
  std::uint16_t port = ipv6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port)
                            : ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
  return Bound{fd, port};
}

Result<std::pair<int, int>> wake_pipe() {
  int p[2];
  if (::pipe2(p, O_CLOEXEC | O_NONBLOCK) != 0) return fail(Error::io("pipe", errno));
  return std::make_pair(p[0], p[1]);
}

std::string loopback_target(const char* scheme, bool ipv6, std::uint16_t port) {
  return fmt::format("{}://{}:{}", scheme, ipv6 ? "[::1]" : "127.0.0.1", port);
}

void stop(int wake_write, std::thread& thread) {
  char byte = 1;
  while (::write(wake_write, &byte, 1) < 0 && errno == EINTR) {
  }
  if (thread.joinable()) thread.join();
}

struct Reply {
  std::string data;
  sockaddr_storage peer{};
  socklen_t peer_len = 0;
};

}  // namespace

std::vector<bool> EchoBehaviour::drop_every(unsigned n) {
  if (n == 0) return {};
  std::vector<bool> pattern(n, false);
  pattern.back() = true;
  return pattern;
}

Result<std::unique_ptr<UdpEchoResponder>> UdpEchoResponder::start(EchoBehaviour behaviour,
                                                                  const Clock& clock, bool ipv6) {
  auto bound = bind_loopback(SOCK_DGRAM | SOCK_NONBLOCK, ipv6);
  if (!bound) return fail(bound.error());
  auto wake = wake_pipe();
  if (!wake) {
    ::close(bound->fd);
    return fail(wake.error());
  }
  std::unique_ptr<UdpEchoResponder> r(new UdpEchoResponder(
      bound->fd, wake->first, wake->second, bound->port, ipv6, std::move(behaviour), clock));
  r->thread_ = std::thread([raw = r.get()] { raw->run(); });
  return r;
}

UdpEchoResponder::UdpEchoResponder(int fd, int wake_read, int wake_write, std::uint16_t port,
                                   bool ipv6, EchoBehaviour behaviour, const Clock& clock)
    : clock_(clock),
      fd_(fd),
      wake_read_(wake_read),
      wake_write_(wake_write),
      port_(port),
      ipv6_(ipv6),
      behaviour_(std::move(behaviour)) {}

UdpEchoResponder::~UdpEchoResponder() {
  stop(wake_write_, thread_);
  ::close(fd_);
  ::close(wake_read_);
  ::close(wake_write_);
}

std::string UdpEchoResponder::target() const {
  return loopback_target("udp", ipv6_, port_);
}

void UdpEchoResponder::run() {
  std::multimap<TimeNs, Reply> queue;  // by due time; equal times keep arrival order
  for (;;) {
    TimeNs now = clock_.monotonic();
    while (!queue.empty() && queue.begin()->first <= now) {
      const Reply& r = queue.begin()->second;
      if (::sendto(fd_, r.data.data(), r.data.size(), 0, reinterpret_cast<const sockaddr*>(&r.peer),
                   r.peer_len) >= 0) {
        ++echoed_;
      }
      queue.erase(queue.begin());
    }
    int wait_ms = -1;
    if (!queue.empty()) {
      wait_ms = static_cast<int>((queue.begin()->first - now + kNsPerMs - 1) / kNsPerMs);
    }
    pollfd fds[2] = {{fd_, POLLIN, 0}, {wake_read_, POLLIN, 0}};
    if (::poll(fds, 2, wait_ms) < 0 && errno != EINTR) return;
    if (fds[1].revents != 0) return;
    if ((fds[0].revents & POLLIN) == 0) continue;
    for (;;) {
      char buf[2048];
      Reply r;
      r.peer_len = sizeof r.peer;
      ssize_t n =
          ::recvfrom(fd_, buf, sizeof buf, 0, reinterpret_cast<sockaddr*>(&r.peer), &r.peer_len);
      if (n < 0) break;
      const unsigned i = received_++;
      const auto& drops = behaviour_.drop_pattern;
      if (!drops.empty() && drops[i % drops.size()]) {
        ++dropped_;
        continue;
      }
      const auto& delays = behaviour_.delays;
      DurationNs delay = delays.empty() ? 0 : delays[i % delays.size()];
      r.data.assign(buf, static_cast<std::size_t>(n));
      queue.emplace(clock_.monotonic() + delay, std::move(r));
    }
  }
}

Result<std::unique_ptr<TcpAcceptor>> TcpAcceptor::start(bool ipv6) {
  auto bound = bind_loopback(SOCK_STREAM | SOCK_NONBLOCK, ipv6);
  if (!bound) return fail(bound.error());
  if (::listen(bound->fd, 128) != 0) {
    int err = errno;
    ::close(bound->fd);
    return fail(Error::io("listen", err));
  }
  auto wake = wake_pipe();
  if (!wake) {
    ::close(bound->fd);
    return fail(wake.error());
  }
  std::unique_ptr<TcpAcceptor> a(
      new TcpAcceptor(bound->fd, wake->first, wake->second, bound->port, ipv6));
  a->thread_ = std::thread([raw = a.get()] { raw->run(); });
  return a;
}

TcpAcceptor::TcpAcceptor(int fd, int wake_read, int wake_write, std::uint16_t port, bool ipv6)
    : fd_(fd), wake_read_(wake_read), wake_write_(wake_write), port_(port), ipv6_(ipv6) {}

TcpAcceptor::~TcpAcceptor() {
  stop(wake_write_, thread_);
  ::close(fd_);
  ::close(wake_read_);
  ::close(wake_write_);
}

std::string TcpAcceptor::target() const {
  return loopback_target("tcp", ipv6_, port_);
}

void TcpAcceptor::run() {
  for (;;) {
    pollfd fds[2] = {{fd_, POLLIN, 0}, {wake_read_, POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0 && errno != EINTR) return;
    if (fds[1].revents != 0) return;
    for (;;) {
      int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) break;
      ++accepted_;
      ::close(c);
    }
  }
}

Result<std::unique_ptr<ClosedTcpPort>> ClosedTcpPort::reserve() {
  auto bound = bind_loopback(SOCK_STREAM, false);
  if (!bound) return fail(bound.error());
  return std::unique_ptr<ClosedTcpPort>(new ClosedTcpPort(bound->fd, bound->port));
}

ClosedTcpPort::~ClosedTcpPort() {
  ::close(fd_);
}

std::string ClosedTcpPort::target() const {
  return loopback_target("tcp", false, port_);
}

}  // namespace cardiac::doctor::loopback
