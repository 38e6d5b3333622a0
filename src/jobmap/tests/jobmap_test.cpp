// SPDX-License-Identifier: Apache-2.0
#include "jobmap/jobmap.h"

#include <set>

#include <gtest/gtest.h>

namespace cardiac::jobmap {
namespace {

using namespace std::string_literals;

TEST(SlurmCgroup, V2StepdScope) {
  EXPECT_EQ(slurm_job_from_cgroup("0::/system.slice/slurmstepd.scope/job_123/step_0/user/task_0\n"),
            "123");
}

TEST(SlurmCgroup, V1AnyControllerLine) {
  const std::string text =
      "12:pids:/user.slice/user-1000.slice\n"
      "11:memory:/slurm/uid_1000/job_4567/step_batch/task_0\n"
      "10:devices:/slurm/uid_1000/job_4567/step_batch\n"
      "1:name=systemd:/user.slice/user-1000.slice/session-3.scope\n";
  EXPECT_EQ(slurm_job_from_cgroup(text), "4567");
}

TEST(SlurmCgroup, NoJob) {
  EXPECT_EQ(slurm_job_from_cgroup("0::/user.slice/user-1000.slice/session-3.scope\n"),
            std::nullopt);
  EXPECT_EQ(slurm_job_from_cgroup(""), std::nullopt);
  // A component that only starts like one, a job_ with no digits, a name in the controllers.
  EXPECT_EQ(slurm_job_from_cgroup("0::/system.slice/job_runner.service\n"), std::nullopt);
  EXPECT_EQ(slurm_job_from_cgroup("0::/a/job_/b\n"), std::nullopt);
  EXPECT_EQ(slurm_job_from_cgroup("3:job_9:/user.slice\n"), std::nullopt);
  EXPECT_EQ(slurm_job_from_cgroup("garbage without colons job_5\n"), std::nullopt);
}

TEST(Environ, SlurmJobId) {
  auto j = job_from_environ("PATH=/usr/bin\0SLURM_JOB_ID=991\0HOME=/root\0"s);
  ASSERT_TRUE(j);
  EXPECT_EQ(*j, (JobRef{"991", "slurm", "environ"}));
}

TEST(Environ, CardiacJobIdWinsOverAnInheritedSlurmOne) {
  auto j = job_from_environ("SLURM_JOB_ID=991\0CARDIAC_JOB_ID=7\0"s);
  ASSERT_TRUE(j);
  EXPECT_EQ(*j, (JobRef{"7", "cardiac", "environ"}));
}

TEST(Environ, NothingOrNotAnId) {
  EXPECT_EQ(job_from_environ("PATH=/usr/bin\0HOME=/root\0"s), std::nullopt);
  EXPECT_EQ(job_from_environ("SLURM_JOB_ID=\0"s), std::nullopt);
  EXPECT_EQ(job_from_environ("SLURM_JOB_ID=12ab\0"s), std::nullopt);
  EXPECT_EQ(job_from_environ("XSLURM_JOB_ID=5\0"s), std::nullopt);
  EXPECT_EQ(job_from_environ(""), std::nullopt);
}

// A MemFs whose listed paths fail as an unreadable file does (EACCES).
class DenyingFs final : public FileSystem {
 public:
  MemFs mem;
  std::set<std::string, std::less<>> denied;
  [[nodiscard]] Result<std::string> read_file(std::string_view path,
                                              std::size_t max_bytes) const override {
    if (denied.count(path)) return fail(Error::io(path, EACCES));
    return mem.read_file(path, max_bytes);
  }
  [[nodiscard]] Result<std::vector<std::string>> list_dir(std::string_view path) const override {
    return mem.list_dir(path);
  }
  [[nodiscard]] Result<std::string> read_link(std::string_view path) const override {
    return mem.read_link(path);
  }
  [[nodiscard]] bool exists(std::string_view path) const override { return mem.exists(path); }
  [[nodiscard]] Result<DiskSpace> disk_space(std::string_view mount_point) const override {
    return mem.disk_space(mount_point);
  }
  [[nodiscard]] std::string root() const override { return "deny:"; }
};

TEST(FindJob, CgroupBeforeEnviron) {
  DenyingFs fs;
  fs.mem.add_file("/proc/10/cgroup", "0::/system.slice/slurmstepd.scope/job_55/step_0\n");
  fs.mem.add_file("/proc/10/environ", "SLURM_JOB_ID=66\0"s);
  auto a = find_job(fs, 10);
  ASSERT_TRUE(a.job);
  EXPECT_EQ(*a.job, (JobRef{"55", "slurm", "cgroup"}));
  EXPECT_EQ(a.note, "");
}

TEST(FindJob, EnvironWhenTheCgroupNamesNoJob) {
  DenyingFs fs;
  fs.mem.add_file("/proc/10/cgroup", "0::/system.slice/cardiac.service\n");
  fs.mem.add_file("/proc/10/environ", "CARDIAC_JOB_ID=3\0"s);
  auto a = find_job(fs, 10);
  ASSERT_TRUE(a.job);
  EXPECT_EQ(*a.job, (JobRef{"3", "cardiac", "environ"}));
}

TEST(FindJob, UnreadableEnvironIsSaidNotGuessed) {
  DenyingFs fs;
  fs.mem.add_file("/proc/10/cgroup", "0::/user.slice/user-1000.slice/session-3.scope\n");
  fs.mem.add_file("/proc/10/environ", "SLURM_JOB_ID=66\0"s);
  fs.denied.insert("/proc/10/environ");
  auto a = find_job(fs, 10);
  EXPECT_FALSE(a.job);
  EXPECT_NE(a.note.find("/proc/10/environ: permission denied"), std::string::npos) << a.note;
}

TEST(FindJob, GoneProcessHasNoJobAndNoNote) {
  DenyingFs fs;
  auto a = find_job(fs, 10);
  EXPECT_FALSE(a.job);
  EXPECT_EQ(a.note, "");
}

TEST(AttributeJobs, FillsEveryProcessOnEveryGpu) {
  DenyingFs fs;
  fs.mem.add_file("/proc/10/cgroup", "0::/slurm/uid_1000/job_55/step_0\n");
  fs.mem.add_file("/proc/11/cgroup", "0::/\n");
  fs.mem.add_file("/proc/11/environ", "A=b\0"s);
  nvml::GpuSnapshot snap;
  snap.gpus.resize(2);
  snap.gpus[0].processes.resize(1);
  snap.gpus[0].processes[0].pid = 10;
  snap.gpus[1].processes.resize(2);
  snap.gpus[1].processes[0].pid = 10;
  snap.gpus[1].processes[1].pid = 11;
  attribute_jobs(fs, snap);
  EXPECT_EQ(snap.gpus[0].processes[0].job, "55");
  EXPECT_EQ(snap.gpus[0].processes[0].job_source, "slurm");
  EXPECT_EQ(snap.gpus[0].processes[0].job_from, "cgroup");
  EXPECT_EQ(snap.gpus[1].processes[0].job, "55");
  EXPECT_EQ(snap.gpus[1].processes[1].job, "");
  EXPECT_EQ(snap.gpus[1].processes[1].job_note, "");
}

TEST(Describe, Names) {
  EXPECT_EQ(describe("slurm", "55"), "slurm job 55");
  EXPECT_EQ(describe("cardiac", "7"), "cardiac queue job 7");
}

}  // namespace
}  // namespace cardiac::jobmap
