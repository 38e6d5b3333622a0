// SPDX-License-Identifier: Apache-2.0
// Which program the agent starts its NVML workers with: the small worker executable when it is
// installed beside cardiac or in ../libexec/cardiac, else cardiac itself.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "core/tests/temp_dir.h"
#include "telemetry/gpu_worker.h"

namespace cardiac::telemetry {
namespace {

std::string make_program(const std::string& path) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path) << "#!/bin/sh\n";
  ::chmod(path.c_str(), 0755);
  return path;
}

TEST(WorkerExecutable, TheWorkerBesideCardiacIsPreferred) {
  cardiac::testing::TempDir dir;
  const std::string cardiac = make_program(dir.file("bin/cardiac"));
  const std::string worker = make_program(dir.file("bin/cardiac-nvml-worker"));
  make_program(dir.file("libexec/cardiac/cardiac-nvml-worker"));
  EXPECT_EQ(worker_executable(cardiac), worker);
}

TEST(WorkerExecutable, LibexecIsLookedAtNext) {
  cardiac::testing::TempDir dir;
  const std::string cardiac = make_program(dir.file("bin/cardiac"));
  const std::string worker = make_program(dir.file("libexec/cardiac/cardiac-nvml-worker"));
  EXPECT_EQ(worker_executable(cardiac), dir.file("bin/../libexec/cardiac/cardiac-nvml-worker"));
  EXPECT_TRUE(std::filesystem::equivalent(worker_executable(cardiac), worker));
}

TEST(WorkerExecutable, WithoutOneCardiacServesAsItsOwnWorker) {
  cardiac::testing::TempDir dir;
  const std::string cardiac = make_program(dir.file("bin/cardiac"));
  EXPECT_EQ(worker_executable(cardiac), cardiac);
  // A file that cannot be executed is not a worker.
  std::ofstream(dir.file("bin/cardiac-nvml-worker")) << "not a program\n";
  ::chmod(dir.file("bin/cardiac-nvml-worker").c_str(), 0644);
  EXPECT_EQ(worker_executable(cardiac), cardiac);
  EXPECT_EQ(worker_executable("cardiac"), "cardiac");  // no directory to look in
}

}  // namespace
}  // namespace cardiac::telemetry
