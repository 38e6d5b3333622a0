// SPDX-License-Identifier: Apache-2.0
// The API token file.
#include "agent/api_token.h"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>

#include "core/format.h"
#include "core/log.h"
#include "core/strings.h"

namespace cardiac::agent {
namespace {

Result<std::string> random_hex(std::size_t bytes) {
  std::array<unsigned char, 64> buf{};
  std::size_t got = 0;
  while (got < bytes) {
    ssize_t n = getrandom(buf.data() + got, bytes - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail(Error::io("getrandom", errno));
    got += static_cast<std::size_t>(n);
  }
  std::string out;
  for (std::size_t i = 0; i < bytes; ++i) out += fmt::format("{:02x}", buf[i]);
  return out;
}

Result<std::string> read_token(int fd, const std::string& path) {
  struct stat st {};
  if (fstat(fd, &st) != 0) return fail(Error::io(path, errno));
  if (!S_ISREG(st.st_mode)) return fail(Error::invalid("not a regular file", path));
  if (st.st_uid != geteuid()) {
    return fail(Error::invalid(
        fmt::format("owned by uid {}, not by the agent's user (uid {}); remove it and restart",
                    st.st_uid, geteuid()),
        path));
  }
  if ((st.st_mode & 077) != 0) {
    log::warn("{}: was readable by others (mode {:o}); now 0600", path, st.st_mode & 0777);
    if (fchmod(fd, 0600) != 0) return fail(Error::io(path, errno));
  }
  std::string text;
  char buf[256];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof(buf))) > 0 && text.size() < 4096) {
    text.append(buf, static_cast<std::size_t>(n));
  }
  if (n < 0) return fail(Error::io(path, errno));
  std::string token(trim(text));
  if (token.empty()) return fail(Error::invalid("the API token file is empty; remove it", path));
  if (token.find_first_of(" \t\r\n") != std::string::npos) {
    return fail(Error::invalid("the API token must be one word on one line", path));
  }
  return token;
}

}  // namespace

std::string api_token_path(const std::string& state_dir) {
  return state_dir + "/" + kApiTokenFile;
}

Result<std::string> load_or_create_api_token(const std::string& state_dir) {
  const std::string path = api_token_path(state_dir);
  // O_EXCL: two agents starting at once cannot both write; the loser reads the winner's.
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd >= 0) {
    auto token = random_hex(32);
    bool ok = token && fchmod(fd, 0600) == 0;  // whatever the umask
    std::string line = token ? *token + "\n" : std::string();
    ok = ok && ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size()) &&
         fsync(fd) == 0;
    int saved = errno;
    ::close(fd);
    if (!ok) {
      ::unlink(path.c_str());
      return fail(token ? Error::io(path, saved) : token.error());
    }
    log::info("API token written to {}", path);
    return *token;
  }
  if (errno != EEXIST) return fail(Error::io(path, errno));
  fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return fail(Error::io(path, errno));
  auto token = read_token(fd, path);
  ::close(fd);
  return token;
}

}  // namespace cardiac::agent
