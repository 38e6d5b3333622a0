// SPDX-License-Identifier: Apache-2.0
// One request/answer exchange over the queue socket.
#include "queue/client.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/format.h"
#include "queue/protocol.h"

namespace cardiac::queue {
namespace {

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  [[nodiscard]] int get() const { return fd_; }

 private:
  int fd_;
};

int remaining_ms(const Clock& clock, TimeNs deadline) {
  return static_cast<int>(std::max<TimeNs>(0, (deadline - clock.monotonic()) / kNsPerMs));
}

}  // namespace

Result<nlohmann::json> call_agent(const Clock& clock, const std::string& state_dir,
                                  const nlohmann::json& request, DurationNs timeout,
                                  const std::string& socket_name) {
  const std::string path = state_dir + "/" + socket_name;
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  if (path.size() >= sizeof(a.sun_path)) {
    return fail(Error::invalid("socket path too long for a Unix socket", path));
  }
  std::memcpy(a.sun_path, path.c_str(), path.size() + 1);
  Fd fd(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (fd.get() < 0) return fail(Error::io("socket", errno));
  if (connect(fd.get(), reinterpret_cast<const sockaddr*>(&a), sizeof(a)) != 0) {
    int err = errno;
    if (err == ENOENT || err == ECONNREFUSED) {
      return fail(Error::unavailable(
          fmt::format("no {}agent answers at {} ({}): start `cardiac agent`, or point at "
                      "its state directory with --state-dir or CARDIAC_STATE_DIR",
                      socket_name == kSocketName ? "queue " : "", path, std::strerror(err))));
    }
    if (err == EACCES) {
      Error e = Error::io(path, err);
      e.code = ErrorCode::kPermission;
      return fail(e);
    }
    return fail(Error::io(path, err));
  }
  const TimeNs deadline = clock.monotonic() + timeout;
  std::string out = dump_line(request);
  std::size_t done = 0;
  while (done < out.size()) {
    ssize_t n = send(fd.get(), out.data() + done, out.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return fail(Error::io(path, errno).with_context("sending the request"));
    done += static_cast<std::size_t>(n);
  }
  std::string in;
  char buf[65536];
  while (in.find('\n') == std::string::npos) {
    pollfd p{fd.get(), POLLIN, 0};
    int ms = remaining_ms(clock, deadline);
    if (ms == 0) return fail(Error::timeout("the agent did not answer in time", path));
    int r = poll(&p, 1, ms);
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) return fail(Error::timeout("the agent did not answer in time", path));
    ssize_t n = recv(fd.get(), buf, sizeof(buf), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail(Error::io(path, errno));
    if (n == 0) return fail(Error::unavailable("the agent closed the connection", path));
    in.append(buf, static_cast<std::size_t>(n));
    if (in.size() > kMaxResponseBytes) return fail(Error::parse("answer too large", path));
  }
  return parse_response(std::string_view(in).substr(0, in.find('\n')));
}

}  // namespace cardiac::queue
