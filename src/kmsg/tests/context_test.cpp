// SPDX-License-Identifier: Apache-2.0
// Tests for the lines that belong to an event: AER details, call traces, serials, multi-line.
#include "kmsg/context.h"

#include <gtest/gtest.h>

#include <string>

namespace cardiac::kmsg {
namespace {

TEST(AerDetail, ReferenceLines) {
  auto d = parse_aer_detail("pcieport 0000:00:02.0:    [ 5] Surprise Down Error    (First)");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->device, "0000:00:02.0");
  EXPECT_EQ(d->bit, 5);
  EXPECT_EQ(d->name, "Surprise Down Error");
  EXPECT_TRUE(d->first);
  d = parse_aer_detail("pcieport 0000:00:02.0:    [12] Replay Timer Timeout");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->bit, 12);
  EXPECT_EQ(d->name, "Replay Timer Timeout");
  EXPECT_FALSE(d->first);
  d = parse_aer_detail("pcieport 0000:00:03.1:    [ 6] BadTLP                ");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->name, "BadTLP");
}

TEST(AerDetail, OtherLinesAreNot) {
  for (const char* bad : {
           "pcieport 0000:00:02.0: PCIe Bus Error: severity=Corrected, type=Data Link Layer",
           "pcieport 0000:00:02.0:   device [8086:2f04] error status/mask=00001000/00002000",
           "nvidia 0000:02:00.0: device has no AER-aware driver",
           "pcieport 0000:00:02.0:    [ 5]   ",
           "pcieport 0000:00:02.0:    [x] Name",
           "[ 5] Surprise Down Error",
           "",
           "pcieport",
       }) {
    EXPECT_FALSE(parse_aer_detail(bad)) << bad;
  }
}

TEST(LineDevice, DriverThenBusId) {
  EXPECT_EQ(line_device("nvidia 0000:02:00.0: device has no AER-aware driver"), "0000:02:00.0");
  EXPECT_EQ(line_device("pcieport 0000:00:02.0:    [ 5] Surprise"), "0000:00:02.0");
  EXPECT_EQ(line_device("mlx5_core 0000:5e:00.0 ib0: Link down"), "");
  EXPECT_EQ(line_device("usb 1-1: new high-speed USB device"), "");
  EXPECT_EQ(line_device("NVRM: Xid (PCI:0000:3b:00): 79"), "");
  EXPECT_EQ(line_device(""), "");
}

TEST(Trace, RecognisesHungTaskDumpLines) {
  for (const char* line : {
           "      Tainted: P           OE     5.15.0-89-generic #99-Ubuntu",
           "\"echo 0 > /proc/sys/kernel/hung_task_timeout_secs\" disables this message.",
           "task:nvidia-smi      state:D stack:    0 pid:48213 ppid:  4120 flags:0x00004002",
           "Call Trace:",
           " <TASK>",
           " __schedule+0x2cd/0x890",
           " ? os_acquire_mutex+0x44/0x60 [nvidia]",
           " _nv012345rm+0x1d/0x30 [nvidia]",
           "RIP: 0033:0x7f3d2c91aaff",
           " </TASK>",
           " [<ffffffff8163a909>] schedule+0x29/0x70",
       }) {
    EXPECT_TRUE(is_trace_line(line)) << line;
  }
  for (const char* line : {
           "NVRM: Xid (PCI:0000:3b:00): 79, pid=0, GPU has fallen off the bus.",
           "usb 1-1: new high-speed USB device number 2 using xhci_hcd",
           "INFO: task python:12 blocked for more than 120 seconds.",
           "schedule+0x29",
           "sym+0x1/0x2 trailing words",
           "",
       }) {
    EXPECT_FALSE(is_trace_line(line)) << line;
  }
}

TEST(Trace, NvidiaFrames) {
  EXPECT_TRUE(is_nvidia_frame(" ? os_acquire_mutex+0x44/0x60 [nvidia]"));
  EXPECT_TRUE(is_nvidia_frame(" _nv012345rm+0x1d/0x30 [nvidia]"));
  EXPECT_TRUE(is_nvidia_frame(" rm_ioctl+0x58/0xb0"));
  EXPECT_TRUE(is_nvidia_frame(" nvidia_ioctl+0x5d1/0x870"));
  EXPECT_TRUE(is_nvidia_frame(" uvm_va_block_make_resident+0x1/0x2 [nvidia_uvm]"));
  EXPECT_FALSE(is_nvidia_frame(" __schedule+0x2cd/0x890"));
  EXPECT_FALSE(is_nvidia_frame(" nfs_wait_bit_killable+0x1/0x2 [nfs]"));
  EXPECT_FALSE(is_nvidia_frame("NVRM: nv_ something"));
  EXPECT_FALSE(is_nvidia_frame("Call Trace:"));
}

TEST(BoardSerial, ParsesNumberOnly) {
  EXPECT_EQ(parse_board_serial("NVRM: GPU Board Serial Number: 1654922006536"), "1654922006536");
  EXPECT_EQ(parse_board_serial("NVRM: GPU Board Serial Number:   1321 "), "1321");
  EXPECT_FALSE(parse_board_serial("NVRM: GPU Board Serial Number: "));
  EXPECT_FALSE(parse_board_serial("NVRM: GPU Board Serial Number: a b"));
  EXPECT_FALSE(parse_board_serial("NVRM: GPU at PCI:0000:3b:00: GPU-abc"));
}

TEST(MultiLine, OpenerAndJoin) {
  EXPECT_EQ(multiline_nvrm_gpu("NVRM: The NVIDIA GPU 0000:3b:00.0"), "0000:3b:00.0");
  EXPECT_EQ(multiline_nvrm_gpu("NVRM: The NVIDIA GPU 0000:3b:00.0 (PCI ID: 10de:2330)"),
            "0000:3b:00.0");
  EXPECT_EQ(multiline_nvrm_gpu("NVRM: The NVIDIA probe routine was not called for 1 device(s)."),
            "");
  EXPECT_EQ(join_multiline("NVRM: a\nNVRM: b \n\n c"), "NVRM: a b c");
  EXPECT_EQ(join_multiline("single"), "single");
}

TEST(Context, GarbageNeverCrashes) {
  std::string s;
  for (int i = 0; i < 2000; ++i) {
    s.push_back(static_cast<char>((i * 89 + 3) % 256));
    (void)parse_aer_detail("pcieport 0000:00:02.0: " + s);
    (void)is_trace_line(s);
    (void)is_nvidia_frame(" x+0x1/0x2" + s);
    (void)parse_board_serial("NVRM: GPU Board Serial Number: " + s);
    (void)multiline_nvrm_gpu("NVRM: The NVIDIA GPU " + s);
    (void)join_multiline(s);
    (void)line_device(s);
  }
  SUCCEED();
}

}  // namespace
}  // namespace cardiac::kmsg
