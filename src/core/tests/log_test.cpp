// SPDX-License-Identifier: Apache-2.0
// Under systemd ($JOURNAL_STREAM naming standard error) log lines carry journald's priority
// prefix and no timestamp; anywhere else they keep cardiac's own format.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "core/log.h"
#include "core/tests/temp_dir.h"

namespace cardiac::log {
namespace {

// Standard error goes to a file for the test's duration; the logger's format is reset after.
class StderrToFile {
 public:
  explicit StderrToFile(const std::string& path) : saved_(::dup(STDERR_FILENO)) {
    std::fflush(stderr);
    FILE* f = std::fopen(path.c_str(), "w");
    ::dup2(::fileno(f), STDERR_FILENO);
    std::fclose(f);
  }
  ~StderrToFile() {
    spdlog::default_logger()->flush();
    std::fflush(stderr);
    ::dup2(saved_, STDERR_FILENO);
    ::close(saved_);
    ::unsetenv("JOURNAL_STREAM");
    spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");
  }
  StderrToFile(const StderrToFile&) = delete;
  StderrToFile& operator=(const StderrToFile&) = delete;

 private:
  int saved_;
};

std::string read_file(const std::string& path) {
  spdlog::default_logger()->flush();
  std::fflush(stderr);
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string device_inode(int fd) {
  struct stat st {};
  ::fstat(fd, &st);
  return std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino);
}

TEST(JournalFormat, PriorityPrefixWithoutTimestampWhenStderrIsTheJournal) {
  testing::TempDir dir;
  const std::string path = dir.file("stderr");
  set_level("info");
  StderrToFile redirect(path);
  ::setenv("JOURNAL_STREAM", device_inode(STDERR_FILENO).c_str(), 1);
  ASSERT_TRUE(use_journal_format_if_connected());
  warn("disk {}", "full");
  error("broken");
  info("started");
  EXPECT_EQ(read_file(path), "<4>warning disk full\n<3>error broken\n<6>info started\n");
}

TEST(JournalFormat, AnotherStreamKeepsTheTimestampedFormat) {
  testing::TempDir dir;
  const std::string path = dir.file("stderr");
  set_level("info");
  StderrToFile redirect(path);
  // A child of the service inherits the variable with its standard error somewhere else.
  ::setenv("JOURNAL_STREAM", "1:2", 1);
  EXPECT_FALSE(use_journal_format_if_connected());
  ::unsetenv("JOURNAL_STREAM");
  EXPECT_FALSE(use_journal_format_if_connected());
  warn("disk full");
  const std::string text = read_file(path);
  EXPECT_EQ(text.find("<4>"), std::string::npos) << text;
  EXPECT_NE(text.find(" warning disk full"), std::string::npos) << text;
  EXPECT_TRUE(text.size() > 4 && text[4] == '-') << text;  // starts with the year
}

}  // namespace
}  // namespace cardiac::log
