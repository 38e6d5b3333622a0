// SPDX-License-Identifier: Apache-2.0
// Signs of compromise end to end: a real process run from /dev/shm, and then with its file
// deleted, captured with scripts/capture-host.sh and judged by `cardiac doctor --offline
// --root` on the capture; the captured HGX tree stays clean.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "src/core/tests/temp_dir.h"
#include "tests/e2e/run_cardiac.h"

namespace cardiac::e2e {
namespace {

constexpr std::string_view kSecurityFixtures = CARDIAC_FIXTURES_DIR;

std::string fixture(std::string_view path) {
  return std::string(kSecurityFixtures) + "/" + std::string(path);
}

nlohmann::json doctor_offline(const std::string& root, std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"doctor",    "--offline", "--json", "--quiet",
                                   "--no-kmsg", "--root",    root};
  args.insert(args.end(), extra.begin(), extra.end());
  auto r = run_cardiac(args);
  EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 1) << r.err;
  return nlohmann::json::parse(r.out, nullptr, false);
}

// The evidence texts of the finding `id`, or nullopt when there is none.
std::optional<std::string> evidence_of(const nlohmann::json& j, const std::string& id) {
  if (!j.contains("findings")) return std::nullopt;
  for (const auto& f : j["findings"]) {
    if (f["id"] != id) continue;
    std::string s;
    for (const auto& e : f["evidence"]) s += e["text"].get<std::string>() + "\n";
    return s;
  }
  return std::nullopt;
}

std::string capture(const testing::TempDir& dir, const std::string& name) {
  const std::string out = dir.file(name);
  auto r = run_program({"/bin/bash", fixture("../../scripts/capture-host.sh"), out});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return out;
}

class ShmProcess {
 public:
  ShmProcess() {
    char tmpl[] = "/dev/shm/cardiac-sec-XXXXXX";
    if (mkdtemp(tmpl) != nullptr) dir_ = tmpl;
    exe_ = dir_ + "/sleeper";
    std::filesystem::copy_file("/bin/sleep", exe_);
    SpawnOptions o;
    o.argv = {exe_, "300"};
    o.pipe_stdin = false;
    auto c = Child::spawn(o);
    if (c) child_.emplace(std::move(*c));
  }
  ~ShmProcess() {
    if (child_) {
      child_->signal(SIGKILL);
      child_->wait();
    }
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  ShmProcess(const ShmProcess&) = delete;
  ShmProcess& operator=(const ShmProcess&) = delete;
  [[nodiscard]] bool running() const { return child_.has_value(); }
  [[nodiscard]] pid_t pid() const { return child_->pid(); }
  [[nodiscard]] const std::string& exe() const { return exe_; }

 private:
  std::string dir_;
  std::string exe_;
  std::optional<Child> child_;
};

TEST(DoctorSecurity, ACapturedProcessRunFromDevShmAndThenDeleted) {
  ShmProcess p;
  ASSERT_TRUE(p.running());
  testing::TempDir dir;
  const std::string pid = "pid " + std::to_string(p.pid()) + " (sleeper";

  auto j = doctor_offline(capture(dir, "before"));
  auto tmp = evidence_of(j, "security.tmp_executable");
  ASSERT_TRUE(tmp) << j.dump();
  EXPECT_NE(tmp->find(pid), std::string::npos) << *tmp;
  EXPECT_NE(tmp->find("executable " + p.exe()), std::string::npos) << *tmp;
  EXPECT_EQ(tmp->find(p.exe() + " (deleted)"), std::string::npos) << *tmp;

  std::filesystem::remove(p.exe());
  j = doctor_offline(capture(dir, "after"));
  auto deleted = evidence_of(j, "security.deleted_executable");
  ASSERT_TRUE(deleted) << j.dump();
  EXPECT_NE(deleted->find(pid), std::string::npos) << *deleted;
  EXPECT_NE(deleted->find(p.exe() + " (deleted)"), std::string::npos) << *deleted;
  EXPECT_TRUE(evidence_of(j, "security.tmp_executable"));  // still run from /dev/shm
}

TEST(DoctorSecurity, TheCapturedHgxTreeIsClean) {
  auto j = doctor_offline(fixture("hosts/debian-gpu-8x"));
  ASSERT_TRUE(j.contains("findings")) << j.dump();
  for (const auto& f : j["findings"]) EXPECT_NE(f["category"], "security") << f.dump();
}

TEST(DoctorSecurity, TheAllowListComesFromTheConfiguration) {
  const std::string root = fixture("hosts/sec-listen");
  auto j = doctor_offline(root, {"--config", root + "/etc/cardiac/cardiac.toml"});
  auto e = evidence_of(j, "security.new_listening_port");
  ASSERT_TRUE(e) << j.dump();
  EXPECT_NE(e->find("tcp 0.0.0.0:4444 listening, pid 5150 (nc"), std::string::npos) << *e;
  EXPECT_EQ(e->find(":22 "), std::string::npos) << *e;
  // Without a list and without a store there is nothing to call "new".
  EXPECT_FALSE(evidence_of(doctor_offline(root), "security.new_listening_port"));
}

}  // namespace
}  // namespace cardiac::e2e
