// SPDX-License-Identifier: Apache-2.0
// A Unix user made for one test, and running a program as that user (with the supplementary
// groups /etc/group gives it, as a login would). Creating users needs root.
#pragma once

#include <grp.h>
#include <pwd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "tests/e2e/run_cardiac.h"

namespace cardiac::e2e {

class TestUser {
 public:
  explicit TestUser(std::string name) : name_(std::move(name)) {
    std::string cmd = "useradd -M -N -s /bin/sh " + name_ + " 2>/dev/null";
    created_ = std::system(cmd.c_str()) == 0;
    if (passwd* pw = getpwnam(name_.c_str())) {
      uid_ = pw->pw_uid;
      gid_ = pw->pw_gid;
    }
  }
  ~TestUser() {
    if (created_) std::system(("userdel " + name_ + " 2>/dev/null").c_str());
  }
  TestUser(const TestUser&) = delete;
  TestUser& operator=(const TestUser&) = delete;
  [[nodiscard]] bool ok() const { return uid_ != 0; }
  [[nodiscard]] const std::string& name() const { return name_; }
  [[nodiscard]] uid_t uid() const { return uid_; }
  [[nodiscard]] gid_t gid() const { return gid_; }

 private:
  std::string name_;
  bool created_ = false;
  uid_t uid_ = 0;
  gid_t gid_ = 0;
};

// Runs `binary args...` as `user` (nullptr: as ourselves, root) in `cwd` with a small
// environment naming `state_dir` (and `cwd` as $WORK, for job scripts).
inline RunResult run_as(const TestUser* user, const std::string& binary, const std::string& cwd,
                        const std::string& state_dir, const std::vector<std::string>& args) {
  char out_t[] = "/tmp/cardiac-e2e-out-XXXXXX";
  char err_t[] = "/tmp/cardiac-e2e-err-XXXXXX";
  int out_fd = mkstemp(out_t);
  int err_fd = mkstemp(err_t);
  unlink(out_t);
  unlink(err_t);
  std::vector<std::string> argv_s = {binary};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_s = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/",
                                    "USER=" + std::string(user ? user->name() : "root"),
                                    "CARDIAC_STATE_DIR=" + state_dir, "WORK=" + cwd};
  std::vector<char*> envp;
  for (auto& e : env_s) envp.push_back(e.data());
  envp.push_back(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(out_fd, 1);
    dup2(err_fd, 2);
    if (user && (initgroups(user->name().c_str(), user->gid()) != 0 || setgid(user->gid()) != 0 ||
                 setuid(user->uid()) != 0)) {
      _exit(120);
    }
    if (chdir(cwd.c_str()) != 0) _exit(121);
    execve(argv[0], argv.data(), envp.data());
    _exit(122);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  RunResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  lseek(out_fd, 0, SEEK_SET);
  lseek(err_fd, 0, SEEK_SET);
  r.out = read_all(out_fd);
  r.err = read_all(err_fd);
  close(out_fd);
  close(err_fd);
  return r;
}

}  // namespace cardiac::e2e
