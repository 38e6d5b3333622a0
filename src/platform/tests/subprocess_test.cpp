// SPDX-License-Identifier: Apache-2.0
// Tests for child processes with deadlines.
#include "platform/subprocess.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

namespace cardiac {
namespace {

TimeNs in_seconds(double s) {
  return io_deadline(static_cast<DurationNs>(s * kNsPerSec));
}

TEST(Subprocess, EchoesLinesThroughPipes) {
  auto child = Child::spawn({.argv = {"/bin/cat"}});
  ASSERT_TRUE(child) << child.error().what();
  ASSERT_TRUE(child->write_all("hello\nworld\n"));
  EXPECT_EQ(*child->read_line(in_seconds(10)), "hello");
  EXPECT_EQ(*child->read_line(in_seconds(10)), "world");
}

TEST(Subprocess, DeadlineReturnsTimeoutWhileChildIsSilent) {
  // `cat` with nothing written stays silent: the read must give up at the deadline, which is
  // already in the past here, so the test does not wait.
  auto child = Child::spawn({.argv = {"/bin/cat"}});
  ASSERT_TRUE(child);
  auto line = child->read_line(io_deadline(0));
  ASSERT_FALSE(line);
  EXPECT_EQ(line.error().code, ErrorCode::kTimeout);
  child->kill_and_abandon();
  EXPECT_FALSE(child->running());
}

TEST(Subprocess, EndOfFileIsUnavailable) {
  auto child = Child::spawn({.argv = {"/bin/true"}});
  ASSERT_TRUE(child);
  auto line = child->read_line(in_seconds(10));
  ASSERT_FALSE(line);
  EXPECT_EQ(line.error().code, ErrorCode::kUnavailable);
}

TEST(Subprocess, PassesEnvironment) {
  auto child = Child::spawn({.argv = {"/bin/sh", "-c", "echo $CARDIAC_TEST_VALUE"},
                             .env = {{"CARDIAC_TEST_VALUE", "42"}}});
  ASSERT_TRUE(child);
  EXPECT_EQ(*child->read_line(in_seconds(10)), "42");
}

TEST(Subprocess, MissingProgramFails) {
  auto child = Child::spawn({.argv = {"/nonexistent/cardiac-test"}});
  EXPECT_FALSE(child);
}

TEST(Subprocess, SelfExecutableExists) {
  auto self = self_executable();
  ASSERT_TRUE(self);
  EXPECT_NE(self->find("platform_tests"), std::string::npos);
}

}  // namespace
}  // namespace cardiac
