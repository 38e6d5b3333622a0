// SPDX-License-Identifier: Apache-2.0
// The live path end to end, in a network namespace of the test's own: a child process sends a
// known number of bytes over loopback TCP to this process; two snapshots (netlink sock_diag
// and /proc/<pid>/fd) must give each end its socket, its process and the right direction.
#include <arpa/inet.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "netproc/snapshot.h"
#include "netproc/traffic.h"

namespace cardiac::netproc {
namespace {

constexpr std::size_t kBytes = 3 * 1024 * 1024 + 17;

// Moves this process into a new network namespace with only `lo`, up; back on destruction.
class OwnNetns {
 public:
  OwnNetns() {
    saved_ = ::open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
    if (saved_ < 0) {
      why_ = std::string("open /proc/self/ns/net: ") + std::strerror(errno);
      return;
    }
    if (::unshare(CLONE_NEWNET) != 0) {
      why_ = std::string("unshare(CLONE_NEWNET): ") + std::strerror(errno) +
             " (needs root or CAP_SYS_ADMIN)";
      return;
    }
    entered_ = true;
    int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    ifreq ifr{};
    std::strncpy(ifr.ifr_name, "lo", IFNAMSIZ - 1);
    if (fd < 0 || ::ioctl(fd, SIOCGIFFLAGS, &ifr) != 0 ||
        (ifr.ifr_flags = static_cast<short>(ifr.ifr_flags | IFF_UP),
         ::ioctl(fd, SIOCSIFFLAGS, &ifr) != 0)) {
      up_error_ = std::string("bringing lo up: ") + std::strerror(errno);
    }
    if (fd >= 0) ::close(fd);
  }
  OwnNetns(const OwnNetns&) = delete;
  OwnNetns& operator=(const OwnNetns&) = delete;
  ~OwnNetns() {
    if (entered_) ::setns(saved_, CLONE_NEWNET);
    if (saved_ >= 0) ::close(saved_);
  }
  [[nodiscard]] bool entered() const { return entered_; }
  [[nodiscard]] const std::string& why() const { return why_; }
  [[nodiscard]] const std::string& up_error() const { return up_error_; }

 private:
  int saved_ = -1;
  bool entered_ = false;
  std::string why_;
  std::string up_error_;
};

bool write_all(int fd, const char* p, std::size_t n) {
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<std::size_t>(w);
  }
  return true;
}

char wait_byte(int fd) {
  char c = 0;
  while (::read(fd, &c, 1) < 0 && errno == EINTR) {
  }
  return c;
}

// The child: connect, wait for "go", send kBytes, then hold the socket open until told to
// exit so that the second snapshot still sees it.
[[noreturn]] void sender(std::uint16_t port, int go_fd, int exit_fd) {
  int s = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (s < 0 || ::connect(s, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) ::_exit(2);
  wait_byte(go_fd);
  std::vector<char> chunk(64 * 1024, 'x');
  std::size_t left = kBytes;
  while (left > 0) {
    std::size_t n = std::min(left, chunk.size());
    if (!write_all(s, chunk.data(), n)) ::_exit(3);
    left -= n;
  }
  wait_byte(exit_fd);
  ::_exit(0);
}

const Socket* owned_by(const Snapshot& s, std::uint32_t pid, Protocol proto) {
  for (const auto& sock : s.sockets) {
    auto o = s.owners.find(sock.inode);
    if (sock.protocol == proto && o != s.owners.end() && o->second == pid) return &sock;
  }
  return nullptr;
}

const Talker* talker(const Traffic& t, std::uint32_t pid) {
  for (const auto& x : t.talkers) {
    if (x.process.pid == pid) return &x;
  }
  return nullptr;
}

TEST(LiveNetns, BytesOverLoopbackTcpAreFoundPerSocketAndPerProcess) {
  OwnNetns ns;
  if (!ns.entered()) GTEST_SKIP() << ns.why();
  ASSERT_TRUE(ns.up_error().empty()) << ns.up_error();

  int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(listener, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0)
      << std::strerror(errno);
  ASSERT_EQ(::listen(listener, 1), 0);
  socklen_t len = sizeof(a);
  ASSERT_EQ(::getsockname(listener, reinterpret_cast<sockaddr*>(&a), &len), 0);
  const std::uint16_t port = ntohs(a.sin_port);

  // A UDP socket with the smallest receive buffer, sent more than it holds: drops.
  int udp = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(udp, 0);
  int tiny = 1;
  ASSERT_EQ(::setsockopt(udp, SOL_SOCKET, SO_RCVBUF, &tiny, sizeof(tiny)), 0);
  sockaddr_in u{};
  u.sin_family = AF_INET;
  u.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(udp, reinterpret_cast<sockaddr*>(&u), sizeof(u)), 0);
  len = sizeof(u);
  ASSERT_EQ(::getsockname(udp, reinterpret_cast<sockaddr*>(&u), &len), 0);

  int go[2];
  int bye[2];
  ASSERT_EQ(::pipe2(go, O_CLOEXEC), 0);
  ASSERT_EQ(::pipe2(bye, O_CLOEXEC), 0);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) sender(port, go[0], bye[0]);
  struct Reap {
    pid_t pid;
    int fd;
    ~Reap() {
      char c = 'q';
      (void)::write(fd, &c, 1);
      int st = 0;
      ::waitpid(pid, &st, 0);
    }
  } reap{child, bye[1]};

  int conn = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
  ASSERT_GE(conn, 0) << std::strerror(errno);
  RootFs fs("/");
  auto clock_ns = [] {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  };
  Snapshot before = take_snapshot(fs, clock_ns());
  EXPECT_TRUE(before.notes.empty()) << before.notes.front();
  // The connecting end's tcpi_bytes_acked counts its SYN as one byte acked: the window's
  // figures are differences, so that byte stays out of them.
  const std::uint32_t child_pid = static_cast<std::uint32_t>(child);
  const std::uint32_t self = static_cast<std::uint32_t>(::getpid());
  const Socket* at_start = owned_by(before, child_pid, Protocol::kTcp);
  ASSERT_NE(at_start, nullptr) << "the child's socket was not found through /proc/" << child
                               << "/fd";
  const std::uint64_t syn = at_start->bytes_sent.value_or(0);
  EXPECT_LE(syn, 1U);

  char c = 'g';
  ASSERT_EQ(::write(go[1], &c, 1), 1);
  std::vector<char> buf(64 * 1024);
  std::size_t got = 0;
  while (got < kBytes) {
    ssize_t n = ::read(conn, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    ASSERT_GT(n, 0) << "the sender stopped after " << got << " bytes";
    got += static_cast<std::size_t>(n);
  }
  ASSERT_EQ(got, kBytes);
  std::vector<char> datagram(1000, 'd');
  for (int i = 0; i < 64; ++i) {
    (void)::sendto(udp, datagram.data(), datagram.size(), 0, reinterpret_cast<sockaddr*>(&u),
                   sizeof(u));
  }

  // The sender's bytes are counted when the receiver's ACKs come back: poll for them.
  Snapshot after;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (;;) {
    after = take_snapshot(fs, clock_ns());
    const Socket* s = owned_by(after, child_pid, Protocol::kTcp);
    if ((s != nullptr && s->bytes_sent.value_or(0) >= syn + kBytes) ||
        std::chrono::steady_clock::now() > deadline) {
      break;
    }
  }
  EXPECT_TRUE(after.notes.empty()) << after.notes.front();

  // Per socket: the child's end sent everything and received nothing, ours the reverse.
  const Socket* sent = owned_by(after, child_pid, Protocol::kTcp);
  ASSERT_NE(sent, nullptr) << "the child's socket was not found through /proc/" << child << "/fd";
  EXPECT_EQ(sent->bytes_sent, syn + kBytes);
  EXPECT_EQ(sent->bytes_received, 0U);
  EXPECT_EQ(sent->remote, "127.0.0.1:" + std::to_string(port));
  EXPECT_TRUE(sent->loopback);
  const Socket* received = owned_by(after, self, Protocol::kTcp);
  ASSERT_NE(received, nullptr) << "this process's socket was not found through /proc/self/fd";
  EXPECT_EQ(received->bytes_received, kBytes);
  EXPECT_EQ(received->bytes_sent, 0U);
  EXPECT_EQ(received->local, "127.0.0.1:" + std::to_string(port));
  const Socket* udp_sock = owned_by(after, self, Protocol::kUdp);
  ASSERT_NE(udp_sock, nullptr);
  EXPECT_GT(udp_sock->drops, 0U);

  // Per process, over the window: loopback is left out by default, counted when asked for.
  EXPECT_EQ(talker(rate(before, after, Link{}), child_pid), nullptr);
  auto t = rate(before, after, Link{"lo", std::nullopt}, {.include_loopback = true});
  const Talker* tc = talker(t, child_pid);
  ASSERT_NE(tc, nullptr);
  EXPECT_EQ(tc->sent_bytes, kBytes);
  EXPECT_EQ(tc->received_bytes, 0U);
  EXPECT_EQ(tc->remote_count, 1U);
  EXPECT_EQ(tc->top_remotes, std::vector<std::string>{"127.0.0.1"});
  EXPECT_GT(tc->sent_bytes_per_s, 0);
  const Talker* ts = talker(t, self);
  ASSERT_NE(ts, nullptr);
  EXPECT_EQ(ts->received_bytes, kBytes);
  EXPECT_EQ(ts->sent_bytes, 0U);
  EXPECT_GT(ts->udp_drops, 0U);
  EXPECT_FALSE(ts->process.cmdline.empty());
  EXPECT_EQ(ts->process.uid, ::getuid());
  ::close(conn);
  ::close(listener);
  ::close(udp);
}

}  // namespace
}  // namespace cardiac::netproc
