// SPDX-License-Identifier: Apache-2.0
// /proc/<pid>/stat parsing, liveness against pid reuse, and job ancestry.
#include "queue/proc.h"

#include <gtest/gtest.h>
#include <unistd.h>

namespace cardiac::queue {
namespace {

TEST(ProcStat, ParsesFieldsAfterTheLastParenthesis) {
  // A command name with a space and a parenthesis, as a job may well have.
  auto s = parse_proc_stat(
      "4242 (my (weird) job) S 4200 4242 4100 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 "
      "987654 1000000 100 18446744073709551615");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->pid, 4242);
  EXPECT_EQ(s->state, 'S');
  EXPECT_EQ(s->ppid, 4200);
  EXPECT_EQ(s->pgrp, 4242);
  EXPECT_EQ(s->session, 4100);
  EXPECT_EQ(s->start_ticks, 987654);
  EXPECT_FALSE(parse_proc_stat(""));
  EXPECT_FALSE(parse_proc_stat("12 (x) S 1 2"));
  EXPECT_FALSE(parse_proc_stat("12 x S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21"));
}

TEST(ProcStat, ReadsOurselvesAndChecksTheStartTime) {
  auto me = read_proc_stat(getpid());
  ASSERT_TRUE(me);
  EXPECT_EQ(me->pid, getpid());
  EXPECT_EQ(me->ppid, getppid());
  EXPECT_TRUE(process_alive(getpid(), me->start_ticks));
  EXPECT_FALSE(process_alive(getpid(), me->start_ticks + 1));  // a reused pid
  EXPECT_FALSE(read_proc_stat(0));
}

TEST(ProcStat, AncestryFindsRunners) {
  EXPECT_TRUE(belongs_to_runner(getpid(), {getppid()}));
  EXPECT_TRUE(belongs_to_runner(getpid(), {getpid()}));
  EXPECT_FALSE(belongs_to_runner(getpid(), {}));
  EXPECT_FALSE(belongs_to_runner(getpid(), {999999999}));
}

}  // namespace
}  // namespace cardiac::queue
