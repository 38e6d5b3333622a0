// SPDX-License-Identifier: Apache-2.0
// Unix-socket server for the queue protocol.
#include "queue/socket_server.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/format.h"
#include "core/log.h"
#include "core/thread_name.h"
#include "queue/protocol.h"

namespace cardiac::queue {
namespace {

constexpr int kMaxConnections = 32;
constexpr int kReadTimeoutSeconds = 10;

Result<sockaddr_un> unix_address(const std::string& path) {
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  if (path.size() >= sizeof(a.sun_path)) {
    return fail(Error::invalid(
        fmt::format("socket path is {} bytes; Unix sockets allow {}: use a shorter state "
                    "directory",
                    path.size(), sizeof(a.sun_path) - 1),
        path));
  }
  std::memcpy(a.sun_path, path.c_str(), path.size() + 1);
  return a;
}

bool someone_answers(const sockaddr_un& a) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  bool ok = connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof(a)) == 0;
  close(fd);
  return ok;
}

void write_all(int fd, const std::string& s) {
  std::size_t done = 0;
  while (done < s.size()) {
    ssize_t n = send(fd, s.data() + done, s.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<std::size_t>(n);
  }
}

}  // namespace

SocketServer::SocketServer(std::string path, RequestHandler handler)
    : path_(std::move(path)), handler_(std::move(handler)) {}

SocketServer::~SocketServer() {
  stop();
}

Status SocketServer::start() {
  auto addr = unix_address(path_);
  if (!addr) return fail(addr.error());
  if (someone_answers(*addr)) {
    return fail(
        Error::unavailable("another cardiac agent already serves this state directory", path_));
  }
  ::unlink(path_.c_str());
  listen_fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) return fail(Error::io(path_, errno));
  if (bind(listen_fd_, reinterpret_cast<const sockaddr*>(&*addr), sizeof(*addr)) != 0 ||
      listen(listen_fd_, 64) != 0) {
    int saved = errno;
    close(listen_fd_);
    listen_fd_ = -1;
    return fail(Error::io(path_, saved));
  }
  // Anyone may connect; SO_PEERCRED says who they are.
  ::chmod(path_.c_str(), 0666);
  if (pipe2(stop_pipe_, O_CLOEXEC) != 0) return fail(Error::io("pipe", errno));
  thread_ = std::thread([this] {
    name_this_thread("cardiac-socket");
    accept_loop();
  });
  return {};
}

void SocketServer::stop() {
  {
    std::lock_guard lock(mu_);
    if (stopping_ || listen_fd_ < 0) {
      stopping_ = true;
      return;
    }
    stopping_ = true;
    for (int fd : open_fds_) shutdown(fd, SHUT_RDWR);
  }
  (void)!write(stop_pipe_[1], "x", 1);
  if (thread_.joinable()) thread_.join();
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return active_ == 0; });
  close(listen_fd_);
  close(stop_pipe_[0]);
  close(stop_pipe_[1]);
  ::unlink(path_.c_str());
  listen_fd_ = -1;
}

void SocketServer::accept_loop() {
  while (true) {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {stop_pipe_[0], POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      log::error("queue socket: poll: {}", std::strerror(errno));
      return;
    }
    if (fds[1].revents != 0) return;
    if ((fds[0].revents & POLLIN) == 0) continue;
    int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    std::unique_lock lock(mu_);
    if (stopping_) {
      close(fd);
      return;
    }
    if (active_ >= kMaxConnections) {
      lock.unlock();
      write_all(fd, dump_line(error_response(
                        Error::unavailable("the agent is busy (too many connections); retry"))));
      close(fd);
      continue;
    }
    ++active_;
    open_fds_.insert(fd);
    lock.unlock();
    std::thread([this, fd] {
      name_this_thread("cardiac-sockcon");
      serve(fd);
      std::lock_guard done(mu_);
      open_fds_.erase(fd);
      close(fd);
      --active_;
      cv_.notify_all();
    }).detach();
  }
}

void SocketServer::serve(int fd) {
  ucred cred{};
  socklen_t len = sizeof(cred);
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return;
  timeval tv{kReadTimeoutSeconds, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  std::string line;
  char buf[65536];
  while (line.find('\n') == std::string::npos) {
    if (line.size() > kMaxRequestBytes) break;
    ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    line.append(buf, static_cast<std::size_t>(n));
  }
  auto nl = line.find('\n');
  if (nl == std::string::npos && line.size() <= kMaxRequestBytes) {
    if (!line.empty()) {
      write_all(fd, dump_line(error_response(Error::parse("request line not terminated"))));
    }
    return;
  }
  auto request = parse_request(nl == std::string::npos ? line : line.substr(0, nl));
  nlohmann::json answer;
  if (!request) {
    answer = error_response(request.error());
  } else {
    Principal who = resolve_principal(cred.uid, cred.gid, cred.pid);
    try {
      answer = handler_(who, *request);
    } catch (const std::exception& e) {
      answer = error_response(Error::internal(e.what()));
    }
  }
  write_all(fd, dump_line(answer));
}

}  // namespace cardiac::queue
