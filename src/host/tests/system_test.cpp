// SPDX-License-Identifier: Apache-2.0
// Tests for uptime, kernel release and NVIDIA driver version readers.
#include "host/system.h"

#include <gtest/gtest.h>

#include <string>

namespace cardiac::host {
namespace {

TEST(HostUptime, Parses) {
  auto u = parse_uptime("483.59 936.66\n");
  ASSERT_TRUE(u);
  EXPECT_DOUBLE_EQ(u->up_s, 483.59);
  EXPECT_DOUBLE_EQ(u->idle_s, 936.66);
}

TEST(HostUptime, EmptyTruncatedGarbage) {
  EXPECT_FALSE(parse_uptime(""));
  EXPECT_FALSE(parse_uptime("483.59"));
  EXPECT_FALSE(parse_uptime("abc 1.0"));
  EXPECT_FALSE(parse_uptime("-5 1.0"));
  EXPECT_FALSE(parse_uptime(std::string(5000, '9') + "x 1"));
}

TEST(HostProcVersion, Release) {
  EXPECT_EQ(parse_proc_version("Linux version 6.1.0-18-amd64 (debian-kernel@lists.debian.org) "
                               "(gcc-12 (Debian 12.2.0-14) 12.2.0) #1 SMP PREEMPT_DYNAMIC")
                .value(),
            "6.1.0-18-amd64");
  EXPECT_FALSE(parse_proc_version(""));
  EXPECT_FALSE(parse_proc_version("Linux"));
  EXPECT_FALSE(parse_proc_version("FreeBSD 14.0"));
}

TEST(HostNvidiaVersion, ProprietaryModule) {
  auto v = parse_nvidia_driver_version(
      "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024\n"
      "GCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n");
  ASSERT_TRUE(v) << v.error().what();
  EXPECT_EQ(*v, "550.54.15");
}

TEST(HostNvidiaVersion, OpenKernelModule) {
  auto v = parse_nvidia_driver_version(
      "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.54.15  Release Build  "
      "(dvs-builder@U16-I3-B03-4-3)  Tue Mar  5 22:32:03 UTC 2024\n"
      "GCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n");
  ASSERT_TRUE(v) << v.error().what();
  EXPECT_EQ(*v, "550.54.15");
}

TEST(HostNvidiaVersion, Aarch64AndTwoPartVersions) {
  EXPECT_EQ(parse_nvidia_driver_version(
                "NVRM version: NVIDIA UNIX aarch64 Kernel Module  535.104.05  Sat Aug 19 01:13:54 "
                "UTC 2023\n")
                .value(),
            "535.104.05");
  EXPECT_EQ(parse_nvidia_driver_version(
                "NVRM version: NVIDIA UNIX x86_64 Kernel Module  470.42  Tue Jun 15 2021\n")
                .value(),
            "470.42");
}

TEST(HostNvidiaVersion, EmptyTruncatedGarbage) {
  EXPECT_FALSE(parse_nvidia_driver_version(""));
  auto t = parse_nvidia_driver_version("NVRM version: NVIDIA UNIX x86_64 Kernel Module  ");
  ASSERT_FALSE(t);
  EXPECT_EQ(t.error().context, "line 1");
  EXPECT_FALSE(parse_nvidia_driver_version("NVRM version: something else 1.2\n"));
  EXPECT_FALSE(parse_nvidia_driver_version(std::string("\xff\x00\x01", 3)));
}

TEST(HostSystemInfo, CollectsWithFallbacks) {
  MemFs fs;
  fs.add_file("/proc/uptime", "100.5 200.0\n");
  fs.add_file("/proc/version", "Linux version 2.6.9-89.ELsmp (mockbuild@x) #1 SMP\n");
  fs.add_file("/proc/sys/kernel/hostname", "gpu-node-01\n");
  fs.add_file("/sys/module/nvidia/version", "550.54.15\n");
  std::vector<std::string> errors;
  SystemInfo s = collect_system_info(fs, &errors);
  EXPECT_TRUE(errors.empty());
  EXPECT_EQ(s.uptime_s, 100.5);
  EXPECT_EQ(s.kernel, "2.6.9-89.ELsmp");
  EXPECT_EQ(s.hostname, "gpu-node-01");
  EXPECT_TRUE(s.nvidia_module_loaded);
  EXPECT_FALSE(s.nvidia_driver_version);
}

TEST(HostSystemInfo, NothingThereIsAllAbsent) {
  MemFs fs;
  std::vector<std::string> errors;
  SystemInfo s = collect_system_info(fs, &errors);
  EXPECT_TRUE(errors.empty());
  EXPECT_FALSE(s.uptime_s);
  EXPECT_FALSE(s.kernel);
  EXPECT_FALSE(s.hostname);
  EXPECT_FALSE(s.nvidia_module_loaded);
}

TEST(HostSystemInfo, GarbageIsRecordedWithTheFile) {
  MemFs fs;
  fs.add_file("/proc/uptime", "garbage\n");
  fs.add_file("/proc/driver/nvidia/version", "nonsense\n");
  std::vector<std::string> errors;
  SystemInfo s = collect_system_info(fs, &errors);
  EXPECT_FALSE(s.uptime_s);
  EXPECT_TRUE(s.nvidia_module_loaded);
  ASSERT_EQ(errors.size(), 2u);
  EXPECT_EQ(errors[0].rfind("/proc/uptime line 1: ", 0), 0u) << errors[0];
  EXPECT_EQ(errors[1].rfind("/proc/driver/nvidia/version: ", 0), 0u) << errors[1];
}

}  // namespace
}  // namespace cardiac::host
