// SPDX-License-Identifier: Apache-2.0
// Tests for the /proc/<pid> readers and the D-state scan.
#include "host/processes.h"

#include <gtest/gtest.h>

#include <string>

namespace cardiac::host {
namespace {

constexpr const char* kBashStat =
    "1219 (bash) S 1218 1219 1219 0 -1 4194560 7824 154675 0 72 2 6 107 50 20 0 1 0 4349 "
    "5476352 1066 18446744073709551615 1 1 0 0 0 0 0 4 1132560123 1 0 0 17 1 0 0 0 0 0\n";

TEST(HostPidStat, ParsesFields) {
  auto s = parse_proc_pid_stat(kBashStat);
  ASSERT_TRUE(s) << s.error().what();
  EXPECT_EQ(s->pid, 1219);
  EXPECT_EQ(s->comm, "bash");
  EXPECT_EQ(s->state, 'S');
  EXPECT_EQ(s->ppid, 1218);
  EXPECT_EQ(s->utime, 2u);
  EXPECT_EQ(s->stime, 6u);
  EXPECT_EQ(s->num_threads, 1u);
}

TEST(HostPidStat, CommWithSpacesAndParentheses) {
  auto s = parse_proc_pid_stat(
      "123 (my (weird) proc) D 1 123 123 0 -1 4194560 0 0 0 0 7 9 0 0 20 0 12 0 100 0 0\n");
  ASSERT_TRUE(s) << s.error().what();
  EXPECT_EQ(s->comm, "my (weird) proc");
  EXPECT_EQ(s->state, 'D');
  EXPECT_EQ(s->utime, 7u);
  EXPECT_EQ(s->stime, 9u);
  EXPECT_EQ(s->num_threads, 12u);
}

TEST(HostPidStat, CommEndingInParenthesisAndSpace) {
  auto s = parse_proc_pid_stat("7 ()) S) R 1 7 7 0 -1 0 0 0 0 0 1 2 0 0 20 0 3 0 100 0 0\n");
  ASSERT_TRUE(s) << s.error().what();
  EXPECT_EQ(s->comm, ")) S");
  EXPECT_EQ(s->state, 'R');
  EXPECT_EQ(s->num_threads, 3u);
}

TEST(HostPidStat, EmptyTruncatedGarbage) {
  EXPECT_FALSE(parse_proc_pid_stat(""));
  EXPECT_FALSE(parse_proc_pid_stat("1219 (bash) S 1218 1219"));
  EXPECT_FALSE(parse_proc_pid_stat("1219 bash S 1218"));
  EXPECT_FALSE(parse_proc_pid_stat("x (bash) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18"));
  EXPECT_FALSE(parse_proc_pid_stat(std::string("\x00\xff(\x01)", 5)));
}

TEST(HostPidStat, OversizedLine) {
  std::string text = std::string(kBashStat);
  text.pop_back();
  for (int i = 0; i < 10000; ++i) text += " 0";
  auto s = parse_proc_pid_stat(text);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->comm, "bash");
}

TEST(HostCmdline, NulsBecomeSpaces) {
  EXPECT_EQ(parse_cmdline(std::string("nvidia-smi\0-q\0", 14)), "nvidia-smi -q");
  EXPECT_EQ(parse_cmdline(""), "");
  EXPECT_EQ(parse_cmdline(std::string("a\0\0", 3)), "a");
}

MemFs proc_fs() {
  MemFs fs;
  fs.add_file("/proc/1/stat", "1 (systemd) S 0 1 1 0 -1 0 0 0 0 0 5 6 0 0 20 0 1 0 26 0 0\n");
  fs.add_file("/proc/48213/stat",
              "48213 (nvidia-smi) D 1219 48213 1219 0 -1 0 0 0 0 0 3 41 0 0 20 0 1 0 5 0 0\n");
  fs.add_file("/proc/48213/wchan", "nv_wait_for_completion");
  fs.add_file("/proc/48213/cmdline", std::string("nvidia-smi\0", 11));
  fs.add_file("/proc/48213/comm", "nvidia-smi\n");
  fs.add_file("/proc/99/stat", "99 (kworker/u8:1) D 2 0 0 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5 0 0\n");
  fs.add_file("/proc/99/wchan", "0");
  fs.add_file("/proc/77/stat", "garbage");
  // A name that reads like a D state: only the field after the last ')' is the state.
  fs.add_file("/proc/55/stat", "55 (x) D (y) S 1 55 55 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5 0 0\n");
  fs.add_file("/proc/56/stat", "56 (z) D\n");  // in D but cut short: not a process to report
  fs.add_file("/proc/stat", "cpu 1 2 3 4\n");
  return fs;
}

TEST(HostDState, ScanFindsUninterruptibleTasks) {
  MemFs fs = proc_fs();
  auto d = collect_dstate_processes(fs);
  ASSERT_TRUE(d) << d.error().what();
  ASSERT_EQ(d->size(), 2u);
  EXPECT_EQ((*d)[0].pid, 99);
  EXPECT_FALSE((*d)[0].wchan);  // "0": hidden
  EXPECT_EQ((*d)[0].cmdline, "");
  EXPECT_EQ((*d)[1].pid, 48213);
  EXPECT_EQ((*d)[1].comm, "nvidia-smi");
  EXPECT_EQ((*d)[1].wchan, "nv_wait_for_completion");
  EXPECT_EQ((*d)[1].cmdline, "nvidia-smi");
}

TEST(HostDState, NoProcIsAnError) {
  MemFs fs;
  EXPECT_FALSE(collect_dstate_processes(fs));
}

TEST(HostProcess, NameAndCpu) {
  MemFs fs = proc_fs();
  EXPECT_EQ(read_process_name(fs, 48213).value(), "nvidia-smi");
  auto cpu = read_process_cpu(fs, 48213);
  ASSERT_TRUE(cpu);
  EXPECT_EQ(cpu->cpu_jiffies, 44u);
  EXPECT_EQ(cpu->num_threads, 1u);
  auto gone = read_process_name(fs, 5);
  ASSERT_FALSE(gone);
  EXPECT_EQ(gone.error().code, ErrorCode::kNotFound);
  auto bad = read_process_cpu(fs, 77);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().context, "/proc/77/stat line 1");
}

}  // namespace
}  // namespace cardiac::host
