// SPDX-License-Identifier: Apache-2.0
// The agent's controls end to end (docs/security.md): the API token file, mutations refused
// without it or from another site, acks and silences from the CLI recorded under the caller's
// real user, another Unix user refused, and /healthz and /metrics answering while 256
// connections hang open.
#include <arpa/inet.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <pwd.h>
#include <sys/stat.h>

#include <cstdlib>
#include <vector>

#include "core/strings.h"
#include "tests/e2e/run_cardiac.h"
#include "tests/e2e/support.h"

namespace cardiac::e2e {
namespace {

std::string current_user() {
  passwd* pw = getpwuid(geteuid());
  return pw ? pw->pw_name : std::to_string(geteuid());
}

httplib::Result post(const AgentProcess& agent, const std::string& path, const std::string& body,
                     const httplib::Headers& headers) {
  httplib::Client cli("127.0.0.1", agent.port());
  cli.set_connection_timeout(2, 0);
  cli.set_read_timeout(10, 0);
  return cli.Post(path.c_str(), headers, body, "application/json");
}

TEST(AgentSecurity, MutationsNeedTheTokenFromTheRootOnlyFile) {
  AgentProcess agent(scenario("healthy-8xh100.json").dump(), "");
  ASSERT_TRUE(agent.start());
  const std::string path = agent.state_dir() + "/api-token";
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0) << path;
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(st.st_uid, geteuid());
  std::string token(trim(read_text(path)));
  ASSERT_EQ(token.size(), 64u);

  const std::string silence = R"({"matcher":"rule=x","duration":"1h","by":"mallory"})";
  // Loopback is not a credential.
  auto none = post(agent, "/api/v1/silences", silence, {});
  ASSERT_TRUE(none);
  EXPECT_EQ(none->status, 401);
  auto wrong = post(agent, "/api/v1/silences", silence, {{"Authorization", "Bearer nope"}});
  ASSERT_TRUE(wrong);
  EXPECT_EQ(wrong->status, 403);
  // Another site's page, even one holding the token, is refused.
  auto cross = post(agent, "/api/v1/silences", silence,
                    {{"Authorization", "Bearer " + token}, {"Origin", "http://evil.example"}});
  ASSERT_TRUE(cross);
  EXPECT_EQ(cross->status, 403);
  auto ok = post(agent, "/api/v1/silences", silence, {{"Authorization", "bearer " + token}});
  ASSERT_TRUE(ok);
  ASSERT_EQ(ok->status, 200) << ok->body;
  // Recorded under the token, not under the name the caller wrote.
  EXPECT_EQ(nlohmann::json::parse(ok->body).value("created_by", ""), "api-token (says mallory)");
  // Reads stay open on loopback.
  EXPECT_EQ(agent.get("/api/v1/alerts").first, 200);

  // The next start reuses the token.
  agent.kill9();
  ASSERT_TRUE(agent.start());
  EXPECT_EQ(std::string(trim(read_text(path))), token);
}

TEST(AgentSecurity, StartMessageNamesTheAddress) {
  AgentProcess agent(scenario("healthy-8xh100.json").dump(), "");
  agent.capture_stderr();
  ASSERT_TRUE(agent.start());
  std::string err;
  std::string want = "serving on http://127.0.0.1:" + std::to_string(agent.port());
  EXPECT_TRUE(eventually([&] {
    err = read_text(agent.dir() + "/agent.stderr");
    return err.find(want) != std::string::npos;
  })) << err;
  EXPECT_NE(err.find(agent.state_dir() + "/api-token"), std::string::npos) << err;
}

TEST(AgentSecurity, CliSilenceAndAckAreRecordedUnderTheCallersUser) {
  AgentProcess agent(scenario("healthy-8xh100.json").dump(), "");
  ASSERT_TRUE(agent.start());
  auto r = run_cardiac({"alerts", "silence", "rule=gpu_thermal", "--for", "2h", "--by",
                        "someone else", "--json", "--state-dir", agent.state_dir()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.value("created_by", ""), current_user() + " (says someone else)");
  auto api = nlohmann::json::parse(agent.get("/api/v1/alerts").second);
  EXPECT_TRUE(api.is_array());

  auto missing = run_cardiac({"alerts", "ack", "999", "--state-dir", agent.state_dir()});
  EXPECT_EQ(missing.exit_code, 2) << missing.err;
  EXPECT_NE(missing.err.find("999"), std::string::npos) << missing.err;
}

TEST(AgentSecurity, CliChangesNeedTheAgent) {
  char tmpl[] = "/tmp/cardiac-noagent-XXXXXX";
  std::string dir = mkdtemp(tmpl);
  auto r = run_cardiac({"alerts", "silence", "rule=x", "--for", "1h", "--state-dir", dir});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("agent.sock"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir + "/cardiac.db"));
  std::filesystem::remove_all(dir);
}

// Another local user reaches the control socket (the directories are opened up for the test)
// and is refused by its credentials; nothing is recorded.
TEST(AgentSecurity, AnotherUserCannotSilenceOrAck) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to act as another Unix user";
  const std::string name = "cdsec" + std::to_string(getpid() % 100000);
  ASSERT_EQ(std::system(("useradd -M -N -s /bin/sh " + name + " 2>/dev/null").c_str()), 0);
  struct Cleanup {
    std::string n;
    ~Cleanup() { (void)!std::system(("userdel " + n + " 2>/dev/null").c_str()); }
  } cleanup{name};
  passwd* pw = getpwnam(name.c_str());
  ASSERT_NE(pw, nullptr);
  uid_t uid = pw->pw_uid;
  gid_t gid = pw->pw_gid;

  AgentProcess agent(scenario("healthy-8xh100.json").dump(), "");
  ASSERT_TRUE(agent.start());
  std::string binary = agent.dir() + "/cardiac";
  std::filesystem::copy_file(CARDIAC_BINARY, binary);
  ::chmod(binary.c_str(), 0755);
  ::chmod(agent.dir().c_str(), 0755);
  ::chmod(agent.state_dir().c_str(), 0755);

  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"alerts", "silence", "rule=gpu_thermal", "--for", "2h"},
        std::vector<std::string>{"alerts", "ack", "1"}}) {
    std::vector<std::string> argv_s = {binary};
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    argv_s.insert(argv_s.end(), {"--state-dir", agent.state_dir()});
    char err_t[] = "/tmp/cardiac-e2e-err-XXXXXX";
    int err_fd = mkstemp(err_t);
    unlink(err_t);
    pid_t pid = fork();
    if (pid == 0) {
      dup2(err_fd, 2);
      if (setgroups(0, nullptr) != 0 || setgid(gid) != 0 || setuid(uid) != 0) _exit(120);
      std::vector<char*> argv;
      for (auto& a : argv_s) argv.push_back(a.data());
      argv.push_back(nullptr);
      char* envp[] = {nullptr};
      execve(argv[0], argv.data(), envp);
      _exit(122);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    lseek(err_fd, 0, SEEK_SET);
    std::string err = read_all(err_fd);
    close(err_fd);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 3) << args[1] << ": " << err;
    EXPECT_NE(err.find("may not change alerts"), std::string::npos) << err;
  }
  EXPECT_EQ(agent.get("/api/v1/status").first, 200);
}

// Connections that never finish a request (or never start one) do not keep anyone else out.
TEST(AgentSecurity, HealthzAndMetricsAnswerWhile256ConnectionsHangOpen) {
  AgentProcess agent(scenario("healthy-8xh100.json").dump(), "");
  ASSERT_TRUE(agent.start());
  std::vector<int> held;
  for (int i = 0; i < 256; ++i) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ASSERT_GE(fd, 0);
    held.push_back(fd);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<std::uint16_t>(agent.port()));
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0) << i;
    if (i % 2 == 0) {
      std::string half = "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n";
      (void)!::send(fd, half.data(), half.size(), MSG_NOSIGNAL);
    }
  }
  // get() allows 5 s for an answer that takes milliseconds when nothing is starved.
  EXPECT_EQ(agent.get("/healthz").first, 200);
  auto metrics = agent.get("/metrics");
  EXPECT_EQ(metrics.first, 200);
  EXPECT_NE(metrics.second.find("cardiac_agent_samples_total"), std::string::npos);
  for (int fd : held) ::close(fd);
}

}  // namespace
}  // namespace cardiac::e2e
