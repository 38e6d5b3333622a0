// SPDX-License-Identifier: Apache-2.0
// Tests for the doctor's kernel-log reader: every reference line under every prefix, multi-line
// prints, context lines, boots, user-space filtering, the fixture logs and the live reader.
#include "doctor/kernel_log.h"
#include "doctor/live/kernel_log_source.h"

#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "kmsg/record.h"

namespace cardiac::doctor {
namespace {

const std::string kFixtures = CARDIAC_FIXTURES_DIR "/kmsg/";

struct Golden {
  const char* line;  // verbatim from reference/xid-and-kmsg.md section 8
  const char* kind;
  std::optional<int> xid;
  const char* bus;
  std::optional<int> pid;
  const char* process;
};

constexpr auto kNone = std::nullopt;

// Every single-line entry of section 8 (rows 1-30); the multi-line rows follow as blocks.
const Golden kReference[] = {
    {"[Fri Aug 30 11:43:09 2024] NVRM: Xid (PCI:0000:cb:00): 13, pid='<unknown>', "
     "name=<unknown>, Graphics SM Warp Exception on (GPC 7, TPC 7, SM 0): Illegal Instruction "
     "Parameter",
     "xid", 13, "0000:cb:00.0", kNone, ""},
    {"[Fri Aug 30 11:43:09 2024] NVRM: Xid (PCI:0000:cb:00): 13, pid='<unknown>', "
     "name=<unknown>, Graphics Exception: ESR 0x57c730=0xc04000b 0x57c734=0x24 "
     "0x57c728=0x1f81fb60 0x57c72c=0x1174",
     "xid", 13, "0000:cb:00.0", kNone, ""},
    {"[Fri Aug 30 11:43:14 2024] NVRM: Xid (PCI:0000:cb:00): 109, pid=1797828, "
     "name=pt_main_thread, Ch 00000008, errorString CTX SWITCH TIMEOUT, Info 0x58005",
     "xid", 109, "0000:cb:00.0", 1797828, "pt_main_thread"},
    {"NVRM: Xid (PCI:0000:08:00): 31, pid=169800, name=chrome, Ch 00000023, intr 00000000. MMU "
     "Fault: ENGINE CE0 HUBCLIENT_HSCE0 faulted @ 0x0_0abe0000. Fault is of type FAULT_PTE "
     "ACCESS_TYPE_VIRT_READ",
     "xid", 31, "0000:08:00.0", 169800, "chrome"},
    {"[31543.449443] NVRM: Xid (PCI:0000:01:00): 31, Ch 0000003a, intr 10000000. MMU Fault: "
     "ENGINE GRAPHICS GPCCLIENT_T1_3 faulted @ 0x17_00592000. Fault is of type FAULT_PDE "
     "ACCESS_TYPE_READ",
     "xid", 31, "0000:01:00.0", kNone, ""},
    {"[31609.615231] NVRM: Xid (PCI:0000:01:00): 13, Graphics Exception: ESR 0x4041b0=0x0", "xid",
     13, "0000:01:00.0", kNone, ""},
    {"[31609.615516] NVRM: Xid (PCI:0000:01:00): 32, Channel ID 00000052 intr 02000000", "xid", 32,
     "0000:01:00.0", kNone, ""},
    {"[Sat Oct 12 18:35:32 2024] NVRM: Xid (PCI:0000:61:00): 45, pid=1496200, "
     "name=distprovers-gpu, Ch 0000000a",
     "xid", 45, "0000:61:00.0", 1496200, "distprovers-gpu"},
    {"Dec  2 11:38:47 worker4 kernel: [  219.470994] NVRM: Xid (PCI:0000:07:00): 48, "
     "pid='<unknown>', name=<unknown>, An uncorrectable double bit error (DBE) has been detected "
     "on GPU in the framebuffer at physAddr 0x7fffa8860 partition 7, subpartition 1.",
     "xid", 48, "0000:07:00.0", kNone, ""},
    {"Dec  2 11:38:47 worker4 kernel: [  219.471050] NVRM: Xid (PCI:0000:07:00): 64, "
     "pid='<unknown>', name=<unknown>, Dynamic Page Retirement: Blacklisting failed.  Page "
     "should have been blacklisted on boot(0x00000000007fffa8).",
     "xid", 64, "0000:07:00.0", kNone, ""},
    {"[1084456.074562] NVRM: Xid (PCI:0000:09:00): 79, pid=0, GPU has fallen off the bus.", "xid",
     79, "0000:09:00.0", 0, ""},
    {"NVRM: GPU 0000:09:00.0: GPU has fallen off the bus.", "fallen_off_bus", kNone, "0000:09:00.0",
     kNone, ""},
    {"[74889.644138] NVRM: Xid (PCI:0000:02:00): 79, GPU has fallen off the bus.", "xid", 79,
     "0000:02:00.0", kNone, ""},
    {"[74785.660380] pcieport 0000:00:02.0: PCIe Bus Error: severity=Corrected, type=Data Link "
     "Layer, id=0010(Transmitter ID)",
     "aer", kNone, "0000:00:02.0", kNone, ""},
    {"pcieport 0000:00:03.1: AER: Correctable error message received from 0000:00:00.0", "aer",
     kNone, "0000:00:00.0", kNone, ""},
    {"[Mon Jul 25 16:46:04 2022] NVRM: Xid (PCI:0000:3b:00): 120, pid='<unknown>', "
     "name=<unknown>, GSP Error: Task 1 raised error code 0x5 for reason 0x0 at 0x63f01ac (0 "
     "more errors skipped)",
     "xid", 120, "0000:3b:00.0", kNone, ""},
    {"[Mon Jul 25 16:46:20 2022] NVRM: Xid (PCI:0000:3b:00): 119, pid='<unknown>', "
     "name=<unknown>, Timeout waiting for RPC from GSP! Expected function FREE (0x0 0x0).",
     "xid", 119, "0000:3b:00.0", kNone, ""},
    {"[Sun Feb 23 16:24:18 2025] NVRM: Xid (PCI:0000:9b:00): 119, pid=2024380, name=nvidia-smi, "
     "Timeout after 6s of waiting for RPC response from GPU4 GSP! Expected function 103 "
     "(GSP_RM_ALLOC) (0x2081 0x4).",
     "xid", 119, "0000:9b:00.0", 2024380, "nvidia-smi"},
    {"NVRM: Rate limiting GSP RPC error prints for GPU at PCI:0000:9b:00 (printing 1 of every "
     "30).  The GPU likely needs to be reset.",
     "gsp_timeout", kNone, "0000:9b:00.0", kNone, ""},
    {"[Mon Mar  6 21:34:31 2023] NVRM: Xid (PCI:0000:61:00): 119, pid=977823, name=nvidia-smi, "
     "Timeout waiting for RPC from GSP! Expected function 76 (GSP_RM_CONTROL) (0x2080014b 0x5).",
     "xid", 119, "0000:61:00.0", 977823, "nvidia-smi"},
    {"NVRM: Xid (PCI:0000:00:00): 149, NETIR_LINK_EVT Fatal XC0 i0 Link 00 (0x025001c6 "
     "0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)",
     "xid", 149, "0000:00:00.0", kNone, ""},
    {"NVRM: Xid (PCI:0018:01:00): 145, RLW_RXPIPE Nonfatal XC0 i0 Link 13 (0x0409a0c2 0x00000008 "
     "0x00000001 0x00000000 0x00100000 0x00000004)",
     "xid", 145, "0018:01:00.0", kNone, ""},
    {"NVRM: Xid (PCI:0000:01:00): 144, SAW_MVB Nonfatal XC0 i0 Link 0 (0x00000001 0x00000008 "
     "0x00000000 0x00000000 0x00000000 0x00000000)",
     "xid", 144, "0000:01:00.0", kNone, ""},
    // Documented variants: very old drivers without "PCI:", MIG suffixes.
    {"NVRM: Xid (0000:03:00): 14, Channel exception", "xid", 14, "0000:03:00.0", kNone, ""},
    {"NVRM: Xid (PCI:0000:3b:00 GPU-I:05 GPU-CI:01): 43, pid=77, name=train, Ch 00000001", "xid",
     43, "0000:3b:00.0", 77, "train"},
};

std::string json_escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out.push_back('\\');
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out.push_back(c);
  }
  return out;
}

// The same kernel message under every prefix the reader knows.
std::vector<std::string> wrappers(std::string_view message) {
  const std::string m(message);
  return {
      m,
      "[  123.456789] " + m,
      "[Tue Mar  5 22:23:56 2024] " + m,
      "Mar  5 22:23:56 gpu01 kernel: [  123.456789] " + m,
      "Mar  5 22:23:56 gpu01 kernel: " + m,
      "2024-03-05T22:23:56+0000 gpu01 kernel: " + m,
      "2024-03-05T22:23:56.123456+00:00 gpu01 kernel: [  123.456789] " + m,
      "<4>[  123.456789] " + m,
      "4,1234,123456789,-;" + m,
      R"({"__REALTIME_TIMESTAMP":"1709677436000000","_TRANSPORT":"kernel","MESSAGE":")" +
          json_escape(m) + R"(","_SOURCE_MONOTONIC_TIMESTAMP":"123456789"})",
  };
}

void expect_golden(const Golden& g, const KernelLog& log, const std::string& text) {
  ASSERT_EQ(log.events.size(), 1u) << text;
  const auto& e = log.events[0];
  EXPECT_EQ(kmsg::event_kind_name(e.kind), g.kind) << text;
  EXPECT_EQ(e.xid, g.xid) << text;
  EXPECT_EQ(e.pci_bus_id, g.bus) << text;
  EXPECT_EQ(e.pid, g.pid) << text;
  EXPECT_EQ(e.process, g.process) << text;
  EXPECT_EQ(log.lines, 1u) << text;
  EXPECT_EQ(log.recognised_lines, 1u) << text;
}

TEST(KernelLog, ReferenceLinesVerbatim) {
  for (const auto& g : kReference) {
    KernelLogOptions o;
    o.year_hint = 2024;
    expect_golden(g, parse_kernel_log(g.line, o), g.line);
  }
}

TEST(KernelLog, ReferenceLinesThatAreNoEvent) {
  // Row 18's last line and row 19's detail lines carry nothing on their own.
  for (const char* line : {
           "NVRM: A GPU crash dump has been created. If possible, please run",
           "[74889.542184] pcieport 0000:00:02.0:    [ 5] Surprise Down Error    (First)",
           "[74889.542239] nvidia 0000:02:00.0: device has no AER-aware driver",
       }) {
    auto log = parse_kernel_log(line, {});
    EXPECT_TRUE(log.events.empty()) << line;
    EXPECT_EQ(log.recognised_lines, 0u) << line;
  }
}

TEST(KernelLog, ReferenceLinesUnderEveryPrefix) {
  for (const auto& g : kReference) {
    auto parsed = kmsg::parse_log_line(g.line, 2024);
    ASSERT_TRUE(parsed) << g.line;
    for (const auto& text : wrappers(parsed->message)) {
      KernelLogOptions o;
      o.year_hint = 2024;
      expect_golden(g, parse_kernel_log(text + "\n", o), text);
    }
  }
}

TEST(KernelLog, TimesFromEveryPrefix) {
  constexpr TimeNs kMar5 = 1709677436LL * kNsPerSec;  // 2024-03-05T22:23:56Z
  const std::string m = "NVRM: Xid (PCI:0000:3b:00): 79, pid=0, GPU has fallen off the bus.";
  KernelLogOptions o;
  o.year_hint = 2024;
  o.boot_time_ns = kMar5 - 123'456'789'000LL;
  const auto w = wrappers(m);
  for (std::size_t i = 1; i < w.size(); ++i) {
    auto log = parse_kernel_log(w[i], o);
    ASSERT_EQ(log.events.size(), 1u) << w[i];
    ASSERT_TRUE(log.events[0].time_ns) << w[i];
    // Every prefix agrees within the second the coarsest stamp carries.
    EXPECT_LT(std::llabs(*log.events[0].time_ns - kMar5), kNsPerSec) << w[i];
  }
  EXPECT_FALSE(parse_kernel_log(m, {}).events[0].time_ns);
}

TEST(KernelLog, MultiLineFallenOffTheBusInEveryShape) {
  const std::string expected =
      "The NVIDIA GPU 0000:3b:00.0 (PCI ID: 10de:2330) installed in this system has fallen off "
      "the bus and is not responding to commands.";
  // dmesg: one record, later lines indented.
  const std::string dmesg =
      "[    6.100000] NVRM: The NVIDIA GPU 0000:3b:00.0\n"
      "               NVRM: (PCI ID: 10de:2330) installed in this system has\n"
      "               NVRM: fallen off the bus and is not responding to commands.\n";
  // Separate records, each with its prefix.
  const std::string records =
      "[    6.100000] NVRM: The NVIDIA GPU 0000:3b:00.0\n"
      "[    6.100001] NVRM: (PCI ID: 10de:2330) installed in this system has\n"
      "[    6.100002] NVRM: fallen off the bus and is not responding to commands.\n";
  // /dev/kmsg: one record, newlines escaped.
  const std::string kmsg =
      "3,120,6100000,-;NVRM: The NVIDIA GPU 0000:3b:00.0\\x0aNVRM: (PCI ID: 10de:2330) "
      "installed in this system has\\x0aNVRM: fallen off the bus and is not responding to "
      "commands.\n";
  // journalctl -o json: one record with "\n".
  const std::string json =
      R"({"_TRANSPORT":"kernel","MESSAGE":"NVRM: The NVIDIA GPU 0000:3b:00.0\nNVRM: (PCI ID: )"
      R"(10de:2330) installed in this system has\nNVRM: fallen off the bus and is not )"
      R"(responding to commands."})";
  // rsyslog: newlines written as #012.
  const std::string rsyslog =
      "Mar  5 22:23:56 gpu01 kernel: NVRM: The NVIDIA GPU 0000:3b:00.0#012NVRM: (PCI ID: "
      "10de:2330) installed in this system has#012NVRM: fallen off the bus and is not responding "
      "to commands.\n";
  for (const auto& text : {dmesg, records, kmsg, json, rsyslog}) {
    auto log = parse_kernel_log(text, {});
    ASSERT_EQ(log.events.size(), 1u) << text;
    EXPECT_EQ(log.events[0].kind, kmsg::EventKind::kFallenOffBus) << text;
    EXPECT_EQ(log.events[0].pci_bus_id, "0000:3b:00.0") << text;
    EXPECT_EQ(log.events[0].message, expected) << text;
    EXPECT_EQ(log.recognised_lines, log.lines) << text;
  }
}

TEST(KernelLog, SplitOpenerWithoutTheEndIsNoEvent) {
  auto log = parse_kernel_log(
      "NVRM: The NVIDIA GPU 0000:3b:00.0\nNVRM: installed in this system is not supported\n"
      "usb 1-1: new device\n",
      {});
  EXPECT_TRUE(log.events.empty());
  // Far from its opener, a bare "fallen off the bus" line names no GPU.
  std::string far = "NVRM: The NVIDIA GPU 0000:3b:00.0\n";
  for (int i = 0; i < 6; ++i) far += "usb 1-1: new device\n";
  far += "NVRM: fallen off the bus and is not responding to commands.\n";
  auto lone = parse_kernel_log(far, {});
  ASSERT_EQ(lone.events.size(), 1u);
  EXPECT_EQ(lone.events[0].pci_bus_id, "");
}

TEST(KernelLog, BoardSerialJoinsItsGpuLine) {
  auto log = parse_kernel_log(
      "[6.9] NVRM: GPU at PCI:0000:3b:00: GPU-2b7f1ab2-6f5c-4b7e-9c1e-0a1b2c3d4e5f\n"
      "[6.9] NVRM: GPU Board Serial Number: 1654922006536\n"
      "[7.0] NVRM: GPU at PCI:0000:5d:00: GPU-11112222-3333-4444-5555-666677778888\n"
      "[7.0] usb 1-1: new device\n"
      "[7.1] NVRM: GPU Board Serial Number: 99\n",
      {});
  ASSERT_EQ(log.events.size(), 2u);
  EXPECT_EQ(log.events[0].serial, "1654922006536");
  EXPECT_EQ(log.events[1].serial, "99");  // an unrelated line in between is fine
  EXPECT_EQ(log.recognised_lines, 4u);
  // A serial with no GPU line before it belongs to nobody.
  auto lone = parse_kernel_log("NVRM: GPU Board Serial Number: 5\n", {});
  EXPECT_TRUE(lone.events.empty());
  EXPECT_EQ(lone.recognised_lines, 0u);
}

TEST(KernelLog, AerDetailLinesAreContext) {
  // Reference row 19.
  auto log = parse_kernel_log(
      "[74889.542044] pcieport 0000:00:02.0: PCIe Bus Error: severity=Uncorrected (Fatal), "
      "type=Transaction Layer, id=0010(Receiver ID)\n"
      "[74889.542184] pcieport 0000:00:02.0:    [ 5] Surprise Down Error    (First)\n"
      "[74889.542239] nvidia 0000:02:00.0: device has no AER-aware driver\n"
      "[74889.644138] NVRM: Xid (PCI:0000:02:00): 79, GPU has fallen off the bus.\n",
      {});
  ASSERT_EQ(log.events.size(), 2u);
  EXPECT_EQ(log.events[0].kind, kmsg::EventKind::kAer);
  EXPECT_EQ(log.events[0].aer_severity, kmsg::AerSeverity::kUncorrectedFatal);
  EXPECT_EQ(log.events[1].xid, 79);
  ASSERT_EQ(log.context.size(), 1u);
  EXPECT_EQ(log.context[0].first, 0u);
  ASSERT_EQ(log.context[0].second.size(), 2u);
  EXPECT_EQ(log.context[0].second[0],
            "[74889.542184] pcieport 0000:00:02.0:    [ 5] Surprise Down Error    (First)");
  EXPECT_EQ(log.recognised_lines, 4u);
}

TEST(KernelLog, AerNewFormatCarriesTheReportingPort) {
  // Reference row 21: "received" names the port, the Bus Error line follows, then the detail.
  auto log = parse_kernel_log(
      "pcieport 0000:00:03.1: AER: Correctable error message received from 0000:00:00.0\n"
      "pcieport 0000:00:03.1: PCIe Bus Error: severity=Correctable, type=Data Link Layer, "
      "(Receiver ID)\n"
      "pcieport 0000:00:03.1:    [ 6] BadTLP\n",
      {});
  ASSERT_EQ(log.events.size(), 2u);
  EXPECT_EQ(log.events[0].reporter, "0000:00:03.1");
  EXPECT_EQ(log.events[1].reporter, "0000:00:03.1");
  EXPECT_EQ(log.events[1].aer_severity, kmsg::AerSeverity::kCorrected);
  ASSERT_EQ(log.context.size(), 1u);
  EXPECT_EQ(log.context[0].first, 1u);
  // Row 20: the corrected form with its detail.
  auto row20 = parse_kernel_log(
      "[74785.660380] pcieport 0000:00:02.0: PCIe Bus Error: severity=Corrected, type=Data Link "
      "Layer, id=0010(Transmitter ID)\n"
      "[74785.660559] pcieport 0000:00:02.0:    [12] Replay Timer Timeout\n",
      {});
  ASSERT_EQ(row20.events.size(), 1u);
  ASSERT_EQ(row20.context.size(), 1u);
  EXPECT_EQ(row20.context[0].second.size(), 1u);
}

TEST(KernelLog, HungTaskTraceIsContextUntilAnUnrelatedLine) {
  auto log = read_kernel_log_file(kFixtures + "xid119-gsp-hung.dmesg-T", {});
  ASSERT_TRUE(log) << log.error().what();
  std::optional<std::size_t> hung;
  for (std::size_t i = 0; i < log->events.size(); ++i) {
    if (log->events[i].kind == kmsg::EventKind::kHungTask) hung = i;
  }
  ASSERT_TRUE(hung);
  EXPECT_EQ(log->events[*hung].process, "nvidia-smi");
  EXPECT_EQ(log->events[*hung].pid, 48213);
  const auto* ctx = context_of(log->context, *hung);
  ASSERT_NE(ctx, nullptr);
  EXPECT_EQ(ctx->size(), 19u);  // "Tainted:" … "</TASK>", not the IPv6 line after it
  EXPECT_NE(ctx->back().find("</TASK>"), std::string::npos);
  EXPECT_TRUE(trace_through_nvidia(*ctx));

  auto nfs = read_kernel_log_file(kFixtures + "hung-task-nfs.dmesg", {});
  ASSERT_TRUE(nfs);
  ASSERT_EQ(nfs->events.size(), 1u);
  const auto* nfs_ctx = context_of(nfs->context, 0);
  ASSERT_NE(nfs_ctx, nullptr);
  EXPECT_EQ(nfs_ctx->size(), 11u);
  EXPECT_FALSE(trace_through_nvidia(*nfs_ctx));
  EXPECT_EQ(context_of(nfs->context, 5), nullptr);
}

TEST(KernelLog, HungTaskInPlainLogWithIndentedTrace) {
  auto log = parse_kernel_log(
      "INFO: task nvidia-smi:77 blocked for more than 122 seconds.\n"
      "      Tainted: P           OE     5.15.0-89-generic #99-Ubuntu\n"
      "Call Trace:\n"
      " ? os_acquire_mutex+0x44/0x60 [nvidia]\n"
      " schedule+0x69/0x110\n"
      "usb 1-1: new device\n"
      " schedule+0x69/0x110\n",
      {});
  ASSERT_EQ(log.events.size(), 1u);
  const auto* ctx = context_of(log.context, 0);
  ASSERT_NE(ctx, nullptr);
  EXPECT_EQ(ctx->size(), 4u);
  EXPECT_TRUE(trace_through_nvidia(*ctx));
}

TEST(KernelLog, BootsFromLinuxVersionClockResetMarkersAndBootIds) {
  auto two = read_kernel_log_file(kFixtures + "xid79-two-boots.kern.log", {2024, {}});
  ASSERT_TRUE(two);
  ASSERT_EQ(two->boots.size(), 2u);
  EXPECT_EQ(two->boots[0].first_event, 0u);
  EXPECT_EQ(two->boots[1].first_event, 3u);
  EXPECT_EQ(two->boots[1].time, 1709519470LL * kNsPerSec);  // Mar 4 02:31:10 UTC

  // A monotonic clock that goes back means a reboot, even without a "Linux version" line.
  auto reset = parse_kernel_log(
      "[5000.0] NVRM: Xid (PCI:0000:3b:00): 94, x\n[3.0] usb 1-1: new device\n"
      "[9.0] NVRM: Xid (PCI:0000:3b:00): 94, x\n[9.5] NVRM: Xid (PCI:0000:3b:00): 94, x\n",
      {});
  ASSERT_EQ(reset.boots.size(), 1u);
  EXPECT_EQ(reset.boots[0].first_event, 1u);

  auto journal = read_kernel_log_file(kFixtures + "xid94-two-boots.journal", {});
  ASSERT_TRUE(journal);
  ASSERT_EQ(journal->boots.size(), 1u);  // "-- Boot … --" and "Linux version" are one boot
  EXPECT_EQ(journal->boots[0].first_event, 2u);

  const std::string a = R"({"_BOOT_ID":"aaa","_TRANSPORT":"kernel","MESSAGE":"NVRM: Xid )"
                        R"((PCI:0000:3b:00): 94, x","__REALTIME_TIMESTAMP":"5"})";
  const std::string b = R"({"_BOOT_ID":"bbb","_TRANSPORT":"kernel","MESSAGE":"NVRM: Xid )"
                        R"((PCI:0000:3b:00): 94, x","__REALTIME_TIMESTAMP":"6"})";
  auto ids = parse_kernel_log(a + "\n" + a + "\n" + b + "\n", {});
  ASSERT_EQ(ids.boots.size(), 1u);
  EXPECT_EQ(ids.boots[0].first_event, 2u);

  auto marker = parse_kernel_log(
      "NVRM: Xid (PCI:0000:3b:00): 94, x\n-- Reboot --\n"
      "NVRM: Xid (PCI:0000:3b:00): 94, x\n",
      {});
  ASSERT_EQ(marker.boots.size(), 1u);
  EXPECT_EQ(marker.boots[0].first_event, 1u);
}

TEST(KernelLog, EarlierBootsUseTheirOwnBootTime) {
  KernelLogOptions o;
  o.boot_time_ns = 1'000'000 * kNsPerSec;
  auto log = parse_kernel_log(
      "Mar  5 10:00:00 h kernel: [    0.000000] Linux version 6.1\n"
      "[  10.000000] NVRM: Xid (PCI:0000:3b:00): 94, x\n"
      "[   0.000000] Linux version 6.1\n"
      "[  20.000000] NVRM: Xid (PCI:0000:3b:00): 94, x\n",
      {2024, o.boot_time_ns});
  ASSERT_EQ(log.events.size(), 2u);
  EXPECT_EQ(log.events[0].time_ns, 1709632800LL * kNsPerSec + 10 * kNsPerSec);
  EXPECT_EQ(log.events[1].time_ns, *o.boot_time_ns + 20 * kNsPerSec);
}

TEST(KernelLog, UserSpaceNeverBecomesAnEvent) {
  auto log = parse_kernel_log(
      "Mar  5 22:23:56 gpu01 logger: NVRM: Xid (PCI:0000:3b:00): 79, fake\n"
      "14,5,6,-;NVRM: Xid (PCI:0000:3b:00): 79, fake\n"
      R"({"_TRANSPORT":"syslog","SYSLOG_IDENTIFIER":"kernel","MESSAGE":"NVRM: Xid )"
      R"((PCI:0000:3b:00): 79, fake"})"
      "\n",
      {});
  EXPECT_TRUE(log.events.empty());
  EXPECT_EQ(log.lines, 3u);
}

TEST(KernelLog, KmsgEscapesAreUndoneOnce) {
  auto log = parse_kernel_log(
      "4,1,2,-;NVRM: Xid (PCI:0000:3b:00): 13, pid=5, name=caf\\xc3\\xa9, bad \\x5cx41\n"
      " SUBSYSTEM=pci\n DEVICE=+pci:0000:3b:00.0\n",
      {});
  ASSERT_EQ(log.events.size(), 1u);
  EXPECT_EQ(log.events[0].process, "caf\xc3\xa9");
  EXPECT_EQ(log.events[0].message, "bad \\x41");
  EXPECT_EQ(log.events[0].monotonic_us, 2);
}

struct FixtureCase {
  const char* file;
  std::size_t events;
  std::size_t boots;
};

TEST(KernelLog, FixturesParseToTheirEvents) {
  const FixtureCase cases[] = {
      {"xid79-aer-surprise-down.dmesg", 5, 1},
      {"xid48-dbe.syslog", 4, 0},
      {"xid119-gsp-hung.dmesg-T", 6, 0},
      {"xid13-app.journal", 4, 0},
      {"xid31-45-chain.json", 5, 0},
      {"xid79-two-boots.kern.log", 5, 2},
      {"xid94-once.kmsg", 2, 1},
      {"xid94-two-boots.journal", 4, 1},
      {"mlx5-ib.syslog", 5, 0},
      {"noise-only.dmesg", 0, 1},
      {"fallen-multiline.dmesg", 4, 0},
      {"nvswitch-sxid.dmesg", 5, 0},
      {"fabricmanager.log", 2, 0},
      {"hung-task-nfs.dmesg", 1, 0},
      {"aer-corrected.dmesg", 3, 0},
  };
  for (const auto& c : cases) {
    auto log = read_kernel_log_file(kFixtures + c.file, {2024, {}});
    ASSERT_TRUE(log) << c.file << ": " << log.error().what();
    EXPECT_EQ(log->events.size(), c.events) << c.file;
    EXPECT_EQ(log->boots.size(), c.boots) << c.file;
    EXPECT_EQ(log->source, kFixtures + c.file);
    EXPECT_GE(log->lines, log->recognised_lines) << c.file;
    if (c.events == 0) {
      EXPECT_EQ(log->recognised_lines, 0u) << c.file;
    }
    for (const auto& e : log->events) EXPECT_FALSE(e.raw.empty()) << c.file;
  }
}

TEST(KernelLog, FileErrorsNameThePath) {
  auto missing = read_kernel_log_file("/nonexistent/kern.log", {});
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().what().find("/nonexistent/kern.log"), std::string::npos);
  auto dir = read_kernel_log_file(kFixtures, {});
  ASSERT_FALSE(dir);
  EXPECT_NE(dir.error().what().find(kFixtures), std::string::npos);
}

TEST(KernelLog, GarbageNeverCrashes) {
  std::string s;
  for (int i = 0; i < 20000; ++i) {
    s.push_back(static_cast<char>((i * 131 + 17) % 256));
    if (i % 97 == 0) s += "\nNVRM: The NVIDIA GPU 0000:3b:00.0\n {\"MESSAGE\":\"x\\n";
    if (i % 89 == 0) s += "\n4,1,2,-;\\x0a\\x\n[ 1.0] INFO: task a:1 blocked for more than 1 s\n";
  }
  auto log = parse_kernel_log(s, {2024, 0});
  EXPECT_GT(log.lines, 0u);
}

}  // namespace
}  // namespace cardiac::doctor
