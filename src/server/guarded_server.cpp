// SPDX-License-Identifier: Apache-2.0
// The connection gate of the HTTP server: deadlines, per-peer limits and a poll set in front of
// a small pool of handler threads.
#include "server/guarded_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "core/log.h"
#include "core/strings.h"
#include "core/thread_name.h"

namespace cardiac::server {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// A head longer than this is handed over as it is; httplib refuses it (400).
constexpr std::size_t kMaxHeadBytes = 16 * 1024;

struct Conn {
  int fd = -1;
  std::string peer;
  int peer_port = 0;
  std::string buf;                  // bytes received and not yet consumed by httplib
  Clock::time_point deadline;       // buf non-empty: the request must be complete by then
  Clock::time_point idle_deadline;  // buf empty: a request must start by then
  std::size_t served = 0;
};

std::string peer_of(int fd, int* port) {
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  *port = 0;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return "?";
  char text[INET6_ADDRSTRLEN] = {};
  if (ss.ss_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&ss);
    inet_ntop(AF_INET, &a->sin_addr, text, sizeof(text));
    *port = ntohs(a->sin_port);
  } else if (ss.ss_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&ss);
    inet_ntop(AF_INET6, &a->sin6_addr, text, sizeof(text));
    *port = ntohs(a->sin6_port);
  }
  return text;
}

Clock::duration span(DurationNs ns) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::nanoseconds(ns));
}

void close_fd(int fd) {
  ::shutdown(fd, SHUT_RDWR);
  ::close(fd);
}

// Whether `buf` holds a whole request: a head, then as many body bytes as Content-Length says.
// Chunked bodies, bodies awaiting "100 Continue", oversized declarations and oversized heads are
// handed over at once; httplib answers them (or reads the body under the request deadline).
// The length of the request head at the start of `buf` (through its blank line), or npos.
std::size_t head_length(const std::string& buf) {
  auto end = buf.find("\r\n\r\n");
  if (end != std::string::npos) return end + 4;
  end = buf.find("\n\n");
  return end == std::string::npos ? std::string::npos : end + 2;
}

// A request with neither Content-Length nor Transfer-Encoding has no body (RFC 9112 6.3), but
// httplib 0.11 reads the body of a POST, PUT, PATCH or DELETE until the peer closes: curl's
// bodyless `-X POST` would wait out the request deadline and get 400, whatever its token.
// Declaring the empty body in the head makes httplib read nothing.
void declare_empty_body(std::string& buf) {
  std::size_t head_len = head_length(buf);
  if (head_len == std::string::npos || head_len > kMaxHeadBytes) return;
  std::string head = to_lower(buf.substr(0, head_len));
  if (head.find("\ncontent-length:") != std::string::npos ||
      head.find("\ntransfer-encoding:") != std::string::npos) {
    return;
  }
  bool crlf = head.ends_with("\r\n\r\n");
  buf.insert(head_len - (crlf ? 2 : 1), crlf ? "Content-Length: 0\r\n" : "Content-Length: 0\n");
}

bool request_complete(const std::string& buf, std::size_t max_body) {
  std::size_t head_len = head_length(buf);
  if (head_len == std::string::npos) return buf.size() > kMaxHeadBytes;
  std::string head = to_lower(buf.substr(0, head_len));
  if (head.find("\ntransfer-encoding:") != std::string::npos) return true;
  // The client sends the body only after httplib's "100 Continue".
  if (head.find("\nexpect:") != std::string::npos) return true;
  auto cl = head.find("\ncontent-length:");
  if (cl == std::string::npos) return true;
  auto value =
      parse_i64(trim(std::string_view(head).substr(cl + 16, head.find('\n', cl + 1) - (cl + 16))));
  if (!value || *value < 0 || static_cast<std::size_t>(*value) > max_body) return true;
  return buf.size() >= head_len + static_cast<std::size_t>(*value);
}

// Reads from the bytes the gate already took, then from the socket until the request's
// deadline; writes with the server's write timeout.
class ConnStream final : public httplib::Stream {
 public:
  ConnStream(Conn& c, milliseconds write_timeout) : c_(c), write_timeout_(write_timeout) {}

  bool is_readable() const override { return !c_.buf.empty() || wait(POLLIN, remaining()); }
  bool is_writable() const override { return wait(POLLOUT, write_timeout_); }

  ssize_t read(char* ptr, size_t size) override {
    if (!c_.buf.empty()) {
      std::size_t n = std::min(size, c_.buf.size());
      c_.buf.copy(ptr, n);
      c_.buf.erase(0, n);
      return static_cast<ssize_t>(n);
    }
    if (!wait(POLLIN, remaining())) return -1;
    ssize_t n;
    do {
      n = ::recv(c_.fd, ptr, size, MSG_DONTWAIT);
    } while (n < 0 && errno == EINTR);
    return n;
  }

  ssize_t write(const char* ptr, size_t size) override {
    if (!wait(POLLOUT, write_timeout_)) return -1;
    ssize_t n;
    do {
      n = ::send(c_.fd, ptr, size, MSG_NOSIGNAL | MSG_DONTWAIT);
    } while (n < 0 && errno == EINTR);
    return n;
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    ip = c_.peer;
    port = c_.peer_port;
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    sockaddr_storage ss{};
    socklen_t len = sizeof(ss);
    ip.clear();
    port = 0;
    if (getsockname(c_.fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return;
    char text[INET6_ADDRSTRLEN] = {};
    if (ss.ss_family == AF_INET) {
      const auto* a = reinterpret_cast<const sockaddr_in*>(&ss);
      inet_ntop(AF_INET, &a->sin_addr, text, sizeof(text));
      port = ntohs(a->sin_port);
    } else if (ss.ss_family == AF_INET6) {
      const auto* a = reinterpret_cast<const sockaddr_in6*>(&ss);
      inet_ntop(AF_INET6, &a->sin6_addr, text, sizeof(text));
      port = ntohs(a->sin6_port);
    }
    ip = text;
  }
  socket_t socket() const override { return c_.fd; }

 private:
  milliseconds remaining() const {
    auto left = std::chrono::duration_cast<milliseconds>(c_.deadline - Clock::now());
    return std::max(left, milliseconds(0));
  }
  bool wait(short events, milliseconds timeout) const {
    pollfd p{c_.fd, events, 0};
    int n;
    do {
      n = ::poll(&p, 1, static_cast<int>(timeout.count()));
    } while (n < 0 && errno == EINTR);
    return n > 0 && (p.revents & (events | POLLHUP | POLLERR)) != 0;
  }

  Conn& c_;
  milliseconds write_timeout_;
};

}  // namespace

struct GuardedServer::Gate {
  GuardedServer& server;
  ConnectionLimits limits;
  int wake[2] = {-1, -1};
  std::mutex mu;
  std::condition_variable cv;
  bool stopping = false;
  std::vector<std::unique_ptr<Conn>> incoming;  // admitted, not yet in the poll set
  std::deque<std::unique_ptr<Conn>> ready;      // complete requests for the workers
  std::map<std::string, std::size_t> per_peer;
  std::size_t total = 0;
  std::thread poller;
  std::vector<std::thread> workers;

  Gate(GuardedServer& s, ConnectionLimits l) : server(s), limits(l) {
    rlimit r{};
    if (getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur != RLIM_INFINITY) {
      // Leave room for the store, the kernel log, pipes and the NVML worker.
      auto room = r.rlim_cur > 256 ? static_cast<std::size_t>(r.rlim_cur - 128) : 64;
      limits.total = std::min(limits.total, room);
    }
    if (pipe2(wake, O_CLOEXEC | O_NONBLOCK) != 0) wake[0] = wake[1] = -1;
    poller = std::thread([this] {
      name_this_thread("cardiac-http");
      poll_loop();
    });
    for (int i = 0; i < std::max(1, limits.workers); ++i) {
      workers.emplace_back([this] {
        name_this_thread("cardiac-http-w");
        work_loop();
      });
    }
  }

  ~Gate() {
    for (int fd : wake) {
      if (fd >= 0) ::close(fd);
    }
  }

  void poke() {
    if (wake[1] >= 0) (void)!::write(wake[1], "w", 1);
  }

  // A new connection: counted against its peer and the total, or answered 503 and closed.
  void admit(int fd) {
    auto c = std::make_unique<Conn>();
    c->fd = fd;
    c->peer = peer_of(fd, &c->peer_port);
    auto now = Clock::now();
    c->deadline = now + span(limits.request_timeout);
    c->idle_deadline = now + span(limits.idle_timeout);
    std::unique_lock lock(mu);
    std::size_t& mine = per_peer[c->peer];
    if (stopping || mine >= limits.per_peer || total >= limits.total) {
      if (mine == 0) per_peer.erase(c->peer);
      bool peer_full = !stopping && mine >= limits.per_peer;
      lock.unlock();
      refuse(fd, peer_full ? "too many connections from this address" : "server busy");
      return;
    }
    ++mine;
    ++total;
    incoming.push_back(std::move(c));
    lock.unlock();
    poke();
  }

  static void refuse(int fd, std::string_view why) {
    answer(fd, "503 Service Unavailable", why);
    close_fd(fd);
  }

  // Best effort (the socket is non-blocking and about to close): a short JSON error.
  static void answer(int fd, std::string_view status, std::string_view why) {
    std::string body = "{\"error\":\"" + std::string(why) + "\"}";
    std::string msg = "HTTP/1.1 " + std::string(status) +
                      "\r\nConnection: close\r\nContent-Type: application/json\r\n"
                      "Content-Length: " +
                      std::to_string(body.size()) + "\r\n\r\n" + body;
    (void)!::send(fd, msg.data(), msg.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  }

  void release(std::unique_ptr<Conn> c) {
    close_fd(c->fd);
    std::lock_guard lock(mu);
    auto it = per_peer.find(c->peer);
    if (it != per_peer.end() && --it->second == 0) per_peer.erase(it);
    --total;
  }

  // After a response on a kept-alive connection: straight back to a worker when the next
  // request is already here (pipelining), otherwise into the poll set.
  void requeue(std::unique_ptr<Conn> c) {
    auto now = Clock::now();
    c->idle_deadline = now + span(limits.idle_timeout);
    c->deadline = now + span(limits.request_timeout);
    std::unique_lock lock(mu);
    if (stopping) {
      lock.unlock();
      release(std::move(c));
      return;
    }
    if (!c->buf.empty() && request_complete(c->buf, kMaxBodyBytes)) {
      ready.push_back(std::move(c));
      cv.notify_one();
      return;
    }
    incoming.push_back(std::move(c));
    lock.unlock();
    poke();
  }

  void poll_loop() {
    std::vector<std::unique_ptr<Conn>> waiting;
    std::vector<pollfd> fds;
    while (true) {
      {
        std::lock_guard lock(mu);
        if (stopping) break;
        for (auto& c : incoming) waiting.push_back(std::move(c));
        incoming.clear();
      }
      auto now = Clock::now();
      auto next = now + std::chrono::hours(1);
      fds.assign(1, pollfd{wake[0], POLLIN, 0});
      for (const auto& c : waiting) {
        fds.push_back(pollfd{c->fd, POLLIN, 0});
        next = std::min(next, c->buf.empty() ? c->idle_deadline : c->deadline);
      }
      auto wait_ms = std::chrono::duration_cast<milliseconds>(next - now).count() + 1;
      int n = ::poll(fds.data(), fds.size(), static_cast<int>(std::max<long long>(wait_ms, 0)));
      if (n < 0 && errno != EINTR) {
        log::error("http: poll: {}", std::strerror(errno));
        break;
      }
      char sink[256];
      while (::read(wake[0], sink, sizeof(sink)) > 0) {
      }
      now = Clock::now();
      std::vector<std::unique_ptr<Conn>> keep;
      for (std::size_t i = 0; i < waiting.size(); ++i) {
        auto& c = waiting[i];
        bool open = true;
        if (n > 0 && fds[i + 1].revents != 0) open = take_bytes(*c, now);
        if (!open) {
          release(std::move(c));
        } else if (!c->buf.empty() && request_complete(c->buf, kMaxBodyBytes)) {
          std::lock_guard lock(mu);
          ready.push_back(std::move(c));
          cv.notify_one();
        } else if (now >= (c->buf.empty() ? c->idle_deadline : c->deadline)) {
          // A request that did not arrive in time; a connection that never started one just
          // closes.
          if (!c->buf.empty()) answer(c->fd, "408 Request Timeout", "request not received in time");
          release(std::move(c));
        } else {
          keep.push_back(std::move(c));
        }
      }
      waiting = std::move(keep);
    }
    for (auto& c : waiting) release(std::move(c));
  }

  // Moves what the socket holds into the connection's buffer. False when the connection is
  // broken; a peer that sent its request and then shut down its side is still answered.
  bool take_bytes(Conn& c, Clock::time_point now) {
    char buf[16384];
    while (c.buf.size() <= kMaxHeadBytes + kMaxBodyBytes) {
      ssize_t n = ::recv(c.fd, buf, sizeof(buf), MSG_DONTWAIT);
      if (n > 0) {
        if (c.buf.empty()) c.deadline = now + span(limits.request_timeout);
        c.buf.append(buf, static_cast<std::size_t>(n));
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
      return !c.buf.empty() && request_complete(c.buf, kMaxBodyBytes);
    }
    return true;
  }

  void work_loop() {
    while (true) {
      std::unique_ptr<Conn> c;
      {
        std::unique_lock lock(mu);
        cv.wait(lock, [&] { return stopping || !ready.empty(); });
        if (ready.empty()) return;
        c = std::move(ready.front());
        ready.pop_front();
      }
      bool keep = false;
      try {
        keep = server.serve_one(c.get());
      } catch (...) {
        keep = false;  // handlers are wrapped; this is httplib itself failing
      }
      if (keep) {
        requeue(std::move(c));
      } else {
        release(std::move(c));
      }
    }
  }

  void shutdown() {
    {
      std::lock_guard lock(mu);
      stopping = true;
    }
    poke();
    cv.notify_all();
    if (poller.joinable()) poller.join();
    for (auto& t : workers) {
      if (t.joinable()) t.join();
    }
    std::vector<std::unique_ptr<Conn>> left;
    {
      std::lock_guard lock(mu);
      for (auto& c : incoming) left.push_back(std::move(c));
      for (auto& c : ready) left.push_back(std::move(c));
      incoming.clear();
      ready.clear();
    }
    for (auto& c : left) release(std::move(c));
  }
};

namespace {

// httplib asks for a task queue per listen() and hands it each accepted socket as a closure
// calling process_and_close_socket. That call only admits the socket to the gate, so it runs
// right on the accept thread.
class GateQueue final : public httplib::TaskQueue {
 public:
  explicit GateQueue(std::shared_ptr<GuardedServer::Gate> gate) : gate_(std::move(gate)) {}
  void enqueue(std::function<void()> fn) override { fn(); }
  void shutdown() override { gate_->shutdown(); }

 private:
  std::shared_ptr<GuardedServer::Gate> gate_;
};

}  // namespace

GuardedServer::GuardedServer(ConnectionLimits limits) : limits_(limits) {
  new_task_queue = [this] {
    // httplib listens with a backlog of 5: a burst of connections (or a few held by an
    // attacker while the accept thread waits for a CPU) overflows it, and the kernel drops
    // the SYNs of everyone else, who retry after 1 s, 3 s, 7 s. Listening again on the bound
    // socket only raises the backlog.
    ::listen(svr_sock_, SOMAXCONN);
    gate_ = std::make_shared<Gate>(*this, limits_);
    return new GateQueue(gate_);
  };
}

GuardedServer::~GuardedServer() = default;

bool GuardedServer::process_and_close_socket(socket_t sock) {
  if (!gate_) {
    close_fd(sock);
    return false;
  }
  gate_->admit(sock);
  return true;
}

bool GuardedServer::serve_one(void* conn) {
  Conn& c = *static_cast<Conn*>(conn);
  auto write_timeout = milliseconds(write_timeout_sec_ * 1000 + write_timeout_usec_ / 1000);
  ConnStream stream(c, write_timeout);
  ++c.served;
  declare_empty_body(c.buf);
  bool last = c.served >= keep_alive_max_count_;
  bool closed = false;
  bool ok = process_request(stream, last, closed, nullptr);
  return ok && !closed && !last && svr_sock_ != INVALID_SOCKET;
}

}  // namespace cardiac::server
