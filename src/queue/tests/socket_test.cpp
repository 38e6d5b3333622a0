// SPDX-License-Identifier: Apache-2.0
// The queue socket: peer credentials, bounds, a stale socket file, a second server.
#include "queue/socket_server.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "queue/client.h"
#include "queue/protocol.h"
#include "queue/tests/support.h"

namespace cardiac::queue {
namespace {

using testing::TempDir;

// The servers answer at once: the client's clock only bounds a wait that never runs out.
const ManualClock manual_clock;

nlohmann::json echo(const Principal& who, const nlohmann::json& req) {
  if (req["op"] == "fail") return error_response(Error::not_found("no such thing"));
  return ok_response({{"uid", who.uid}, {"user", who.user}, {"op", req["op"]}});
}

TEST(Socket, AnswersWithThePeersIdentity) {
  TempDir dir;
  SocketServer server(socket_path(dir.path()), echo);
  ASSERT_TRUE(server.start());
  struct stat st {};
  ASSERT_EQ(::stat(socket_path(dir.path()).c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0666u);
  auto r = call_agent(manual_clock, dir.path(), {{"op", "ping"}});
  ASSERT_TRUE(r) << r.error().what();
  EXPECT_EQ((*r)["uid"], getuid());
  EXPECT_EQ((*r)["op"], "ping");
  auto e = call_agent(manual_clock, dir.path(), {{"op", "fail"}});
  ASSERT_FALSE(e);
  EXPECT_EQ(e.error().code, ErrorCode::kNotFound);
  server.stop();
  EXPECT_FALSE(std::filesystem::exists(socket_path(dir.path())));
  auto gone = call_agent(manual_clock, dir.path(), {{"op", "ping"}});
  ASSERT_FALSE(gone);
  EXPECT_EQ(gone.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(gone.error().what().find("cardiac agent"), std::string::npos);
}

// Raw exchange, for what the client would never send.
std::string raw(const std::string& path, const std::string& bytes) {
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::snprintf(a.sun_path, sizeof(a.sun_path), "%s", path.c_str());
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) return "connect failed";
  std::size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = send(fd, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
    if (n <= 0) break;
    done += static_cast<std::size_t>(n);
  }
  shutdown(fd, SHUT_WR);
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = recv(fd, buf, sizeof(buf), 0)) > 0) out.append(buf, static_cast<std::size_t>(n));
  close(fd);
  return out;
}

TEST(Socket, BadRequestsGetClearErrors) {
  TempDir dir;
  SocketServer server(socket_path(dir.path()), echo);
  ASSERT_TRUE(server.start());
  std::string path = socket_path(dir.path());
  EXPECT_NE(raw(path, "hello\n").find("not JSON"), std::string::npos);
  EXPECT_NE(raw(path, "{\"x\":1}\n").find("no \\\"op\\\""), std::string::npos);
  EXPECT_NE(raw(path, "{\"op\":\"ping\"}").find("not terminated"), std::string::npos);
  std::string big(kMaxRequestBytes + 10, 'x');
  EXPECT_NE(raw(path, big).find("over the limit"), std::string::npos);
  // The server still serves after all that.
  EXPECT_TRUE(call_agent(manual_clock, dir.path(), {{"op", "ping"}}));
}

TEST(Socket, AStaleSocketFileIsReplacedALiveOneIsNot) {
  TempDir dir;
  std::string path = socket_path(dir.path());
  {
    // A socket file nobody listens on, as a kill -9 leaves it.
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::snprintf(a.sun_path, sizeof(a.sun_path), "%s", path.c_str());
    ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
    close(fd);
  }
  SocketServer first(path, echo);
  ASSERT_TRUE(first.start());
  SocketServer second(path, echo);
  auto st = second.start();
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().what().find("another cardiac agent"), std::string::npos);
  EXPECT_TRUE(call_agent(manual_clock, dir.path(), {{"op", "ping"}}));
}

}  // namespace
}  // namespace cardiac::queue
