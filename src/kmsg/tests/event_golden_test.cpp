// SPDX-License-Identifier: Apache-2.0
// Golden tests for the kernel-message classifier, using the real lines of xid-and-kmsg.md.
#include <gtest/gtest.h>

#include <optional>

#include "kmsg/event.h"

namespace cardiac::kmsg {
namespace {

struct Golden {
  const char* line;
  const char* kind;
  std::optional<int> xid;
  const char* bus;
  std::optional<int> pid;
  const char* process;
  const char* message;  // exact expected message
};

// Lines 1-30 of reference/xid-and-kmsg.md section 8, verbatim, plus the documented variants.
const Golden kGolden[] = {
    {"[Fri Aug 30 11:43:09 2024] NVRM: Xid (PCI:0000:cb:00): 13, pid='<unknown>', "
     "name=<unknown>, Graphics SM Warp Exception on (GPC 7, TPC 7, SM 0): Illegal Instruction "
     "Parameter",
     "xid",
     13,
     "0000:cb:00.0",
     {},
     "",
     "Graphics SM Warp Exception on (GPC 7, TPC 7, SM 0): Illegal Instruction Parameter"},
    {"[Fri Aug 30 11:43:09 2024] NVRM: Xid (PCI:0000:cb:00): 13, pid='<unknown>', "
     "name=<unknown>, Graphics Exception: ESR 0x57c730=0xc04000b 0x57c734=0x24 "
     "0x57c728=0x1f81fb60 0x57c72c=0x1174",
     "xid",
     13,
     "0000:cb:00.0",
     {},
     "",
     "Graphics Exception: ESR 0x57c730=0xc04000b 0x57c734=0x24 0x57c728=0x1f81fb60 "
     "0x57c72c=0x1174"},
    {"[Fri Aug 30 11:43:14 2024] NVRM: Xid (PCI:0000:cb:00): 109, pid=1797828, "
     "name=pt_main_thread, Ch 00000008, errorString CTX SWITCH TIMEOUT, Info 0x58005",
     "xid", 109, "0000:cb:00.0", 1797828, "pt_main_thread",
     "Ch 00000008, errorString CTX SWITCH TIMEOUT, Info 0x58005"},
    {"NVRM: Xid (PCI:0000:08:00): 31, pid=169800, name=chrome, Ch 00000023, intr 00000000. MMU "
     "Fault: ENGINE CE0 HUBCLIENT_HSCE0 faulted @ 0x0_0abe0000. Fault is of type FAULT_PTE "
     "ACCESS_TYPE_VIRT_READ",
     "xid", 31, "0000:08:00.0", 169800, "chrome",
     "Ch 00000023, intr 00000000. MMU Fault: ENGINE CE0 HUBCLIENT_HSCE0 faulted @ 0x0_0abe0000. "
     "Fault is of type FAULT_PTE ACCESS_TYPE_VIRT_READ"},
    {"[31543.449443] NVRM: Xid (PCI:0000:01:00): 31, Ch 0000003a, intr 10000000. MMU Fault: "
     "ENGINE GRAPHICS GPCCLIENT_T1_3 faulted @ 0x17_00592000. Fault is of type FAULT_PDE "
     "ACCESS_TYPE_READ",
     "xid",
     31,
     "0000:01:00.0",
     {},
     "",
     "Ch 0000003a, intr 10000000. MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_3 faulted @ "
     "0x17_00592000. Fault is of type FAULT_PDE ACCESS_TYPE_READ"},
    {"[31609.615231] NVRM: Xid (PCI:0000:01:00): 13, Graphics Exception: ESR 0x4041b0=0x0",
     "xid",
     13,
     "0000:01:00.0",
     {},
     "",
     "Graphics Exception: ESR 0x4041b0=0x0"},
    {"[31609.615516] NVRM: Xid (PCI:0000:01:00): 32, Channel ID 00000052 intr 02000000",
     "xid",
     32,
     "0000:01:00.0",
     {},
     "",
     "Channel ID 00000052 intr 02000000"},
    {"[Sat Oct 12 18:35:32 2024] NVRM: Xid (PCI:0000:61:00): 45, pid=1496200, "
     "name=distprovers-gpu, Ch 0000000a",
     "xid", 45, "0000:61:00.0", 1496200, "distprovers-gpu", "Ch 0000000a"},
    {"Dec  2 11:38:47 worker4 kernel: [  219.470994] NVRM: Xid (PCI:0000:07:00): 48, "
     "pid='<unknown>', name=<unknown>, An uncorrectable double bit error (DBE) has been detected "
     "on GPU in the framebuffer at physAddr 0x7fffa8860 partition 7, subpartition 1.",
     "xid",
     48,
     "0000:07:00.0",
     {},
     "",
     "An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at "
     "physAddr 0x7fffa8860 partition 7, subpartition 1."},
    {"Dec  2 11:38:47 worker4 kernel: [  219.471050] NVRM: Xid (PCI:0000:07:00): 64, "
     "pid='<unknown>', name=<unknown>, Dynamic Page Retirement: Blacklisting failed.  Page "
     "should have been blacklisted on boot(0x00000000007fffa8).",
     "xid",
     64,
     "0000:07:00.0",
     {},
     "",
     "Dynamic Page Retirement: Blacklisting failed.  Page should have been blacklisted on "
     "boot(0x00000000007fffa8)."},
    {"[1084456.074562] NVRM: Xid (PCI:0000:09:00): 79, pid=0, GPU has fallen off the bus.", "xid",
     79, "0000:09:00.0", 0, "", "GPU has fallen off the bus."},
    {"NVRM: GPU 0000:09:00.0: GPU has fallen off the bus.",
     "fallen_off_bus",
     {},
     "0000:09:00.0",
     {},
     "",
     "GPU has fallen off the bus."},
    {"[74889.542044] pcieport 0000:00:02.0: PCIe Bus Error: severity=Uncorrected (Fatal), "
     "type=Transaction Layer, id=0010(Receiver ID)",
     "aer",
     {},
     "0000:00:02.0",
     {},
     "",
     "PCIe Bus Error: severity=Uncorrected (Fatal), type=Transaction Layer, id=0010(Receiver ID)"},
    {"[74889.644138] NVRM: Xid (PCI:0000:02:00): 79, GPU has fallen off the bus.",
     "xid",
     79,
     "0000:02:00.0",
     {},
     "",
     "GPU has fallen off the bus."},
    {"[74785.660380] pcieport 0000:00:02.0: PCIe Bus Error: severity=Corrected, type=Data Link "
     "Layer, id=0010(Transmitter ID)",
     "aer",
     {},
     "0000:00:02.0",
     {},
     "",
     "PCIe Bus Error: severity=Corrected, type=Data Link Layer, id=0010(Transmitter ID)"},
    {"pcieport 0000:00:03.1: AER: Correctable error message received from 0000:00:00.0",
     "aer",
     {},
     "0000:00:00.0",
     {},
     "",
     "Correctable error message received from 0000:00:00.0"},
    {"pcieport 0000:00:03.1: PCIe Bus Error: severity=Correctable, type=Data Link Layer, "
     "(Receiver ID)",
     "aer",
     {},
     "0000:00:03.1",
     {},
     "",
     "PCIe Bus Error: severity=Correctable, type=Data Link Layer, (Receiver ID)"},
    {"[Mon Jul 25 16:46:04 2022] NVRM: Xid (PCI:0000:3b:00): 120, pid='<unknown>', "
     "name=<unknown>, GSP Error: Task 1 raised error code 0x5 for reason 0x0 at 0x63f01ac (0 "
     "more errors skipped)",
     "xid",
     120,
     "0000:3b:00.0",
     {},
     "",
     "GSP Error: Task 1 raised error code 0x5 for reason 0x0 at 0x63f01ac (0 more errors "
     "skipped)"},
    {"[Mon Jul 25 16:46:20 2022] NVRM: Xid (PCI:0000:3b:00): 119, pid='<unknown>', "
     "name=<unknown>, Timeout waiting for RPC from GSP! Expected function FREE (0x0 0x0).",
     "xid",
     119,
     "0000:3b:00.0",
     {},
     "",
     "Timeout waiting for RPC from GSP! Expected function FREE (0x0 0x0)."},
    {"[Sun Feb 23 16:24:18 2025] NVRM: Xid (PCI:0000:9b:00): 119, pid=2024380, name=nvidia-smi, "
     "Timeout after 6s of waiting for RPC response from GPU4 GSP! Expected function 103 "
     "(GSP_RM_ALLOC) (0x2081 0x4).",
     "xid", 119, "0000:9b:00.0", 2024380, "nvidia-smi",
     "Timeout after 6s of waiting for RPC response from GPU4 GSP! Expected function 103 "
     "(GSP_RM_ALLOC) (0x2081 0x4)."},
    {"NVRM: Rate limiting GSP RPC error prints for GPU at PCI:0000:9b:00 (printing 1 of every "
     "30).  The GPU likely needs to be reset.",
     "gsp_timeout",
     {},
     "0000:9b:00.0",
     {},
     "",
     "Rate limiting GSP RPC error prints for GPU at PCI:0000:9b:00 (printing 1 of every 30).  "
     "The GPU likely needs to be reset."},
    {"[Mon Mar  6 21:34:31 2023] NVRM: Xid (PCI:0000:61:00): 119, pid=977823, name=nvidia-smi, "
     "Timeout waiting for RPC from GSP! Expected function 76 (GSP_RM_CONTROL) (0x2080014b 0x5).",
     "xid", 119, "0000:61:00.0", 977823, "nvidia-smi",
     "Timeout waiting for RPC from GSP! Expected function 76 (GSP_RM_CONTROL) (0x2080014b 0x5)."},
    {"NVRM: Xid (PCI:0000:00:00): 149, NETIR_LINK_EVT Fatal XC0 i0 Link 00 (0x025001c6 "
     "0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)",
     "xid",
     149,
     "0000:00:00.0",
     {},
     "",
     "NETIR_LINK_EVT Fatal XC0 i0 Link 00 (0x025001c6 0x00000000 0x00000000 0x00000000 "
     "0x00000000 0x00000000)"},
    {"NVRM: Xid (PCI:0018:01:00): 145, RLW_RXPIPE Nonfatal XC0 i0 Link 13 (0x0409a0c2 0x00000008 "
     "0x00000001 0x00000000 0x00100000 0x00000004)",
     "xid",
     145,
     "0018:01:00.0",
     {},
     "",
     "RLW_RXPIPE Nonfatal XC0 i0 Link 13 (0x0409a0c2 0x00000008 0x00000001 0x00000000 "
     "0x00100000 0x00000004)"},
    {"NVRM: Xid (PCI:0000:01:00): 144, SAW_MVB Nonfatal XC0 i0 Link 0 (0x00000001 0x00000008 "
     "0x00000000 0x00000000 0x00000000 0x00000000)",
     "xid",
     144,
     "0000:01:00.0",
     {},
     "",
     "SAW_MVB Nonfatal XC0 i0 Link 0 (0x00000001 0x00000008 0x00000000 0x00000000 0x00000000 "
     "0x00000000)"},
    // Brief / documented variants.
    {"NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has fallen off the bus.", "xid",
     79, "0000:3b:00.0", 1234, "python", "GPU has fallen off the bus."},
    {"NVRM: Xid (0000:03:00): 14, Channel exception",
     "xid",
     14,
     "0000:03:00.0",
     {},
     "",
     "Channel exception"},
    {"NVRM: Xid (PCI:0000:02:00): 79, GPU has fallen off the bus.",
     "xid",
     79,
     "0000:02:00.0",
     {},
     "",
     "GPU has fallen off the bus."},
    {"pcieport 0000:00:03.1: AER: Uncorrected (Non-Fatal) error received: 0000:3b:00.0",
     "aer",
     {},
     "0000:3b:00.0",
     {},
     "",
     "Uncorrected (Non-Fatal) error received: 0000:3b:00.0"},
    {"pcieport 0000:00:1c.0: AER: Corrected error received: 0000:00:1c.0",
     "aer",
     {},
     "0000:00:1c.0",
     {},
     "",
     "Corrected error received: 0000:00:1c.0"},
    {"pcieport 0000:80:01.0: AER: Multiple Uncorrected (Fatal) error received: 0000:81:00.0",
     "aer",
     {},
     "0000:81:00.0",
     {},
     "",
     "Uncorrected (Fatal) error received: 0000:81:00.0"},
    {"INFO: task python:1234 blocked for more than 120 seconds.",
     "hung_task",
     {},
     "",
     1234,
     "python",
     "blocked for more than 120 seconds"},
    {"[ 4000.1] INFO: task kworker/u8:2:99 blocked for more than 122 seconds.",
     "hung_task",
     {},
     "",
     99,
     "kworker/u8:2",
     "blocked for more than 122 seconds"},
    {"nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 12028, Non-fatal, Link 46 egress non-posted PRIV "
     "error (First)",
     "sxid",
     12028,
     "0000:05:00.0",
     {},
     "",
     "Non-fatal, Link 46 egress non-posted PRIV error (First)"},
    {"NVRM: GPU 0000:3b:00.0: RmInitAdapter failed! (0x22:0x38:744)",
     "init_failure",
     {},
     "0000:3b:00.0",
     {},
     "",
     "RmInitAdapter failed! (0x22:0x38:744)"},
    {"NVRM: RmInitAdapter failed! (0x26:0xffff:1463)",
     "init_failure",
     {},
     "",
     {},
     "",
     "RmInitAdapter failed! (0x26:0xffff:1463)"},
    {"NVRM: GPU0 _kgspRpcRecvPoll: Timeout waiting for RPC from GSP! Expected function 10",
     "gsp_timeout",
     {},
     "",
     {},
     "",
     "GPU0 _kgspRpcRecvPoll: Timeout waiting for RPC from GSP! Expected function 10"},
    {"mlx5_core 0000:5e:00.0: mlx5_health_check:812: fatal error detected",
     "ib",
     {},
     "0000:5e:00.0",
     {},
     "",
     "mlx5_health_check:812: fatal error detected"},
    {"mlx5_core 0000:af:00.0 ib0: Link down", "ib", {}, "0000:af:00.0", {}, "", "Link down"},
};

TEST(Classify, GoldenReferenceLines) {
  for (const auto& g : kGolden) {
    auto e = classify_line(g.line, 2024);
    ASSERT_TRUE(e) << g.line;
    EXPECT_EQ(event_kind_name(e->kind), g.kind) << g.line;
    EXPECT_EQ(e->xid, g.xid) << g.line;
    EXPECT_EQ(e->pci_bus_id, g.bus) << g.line;
    EXPECT_EQ(e->pid, g.pid) << g.line;
    EXPECT_EQ(e->process, g.process) << g.line;
    EXPECT_EQ(e->message, g.message) << g.line;
    EXPECT_EQ(e->raw, g.line);
  }
}

}  // namespace
}  // namespace cardiac::kmsg
