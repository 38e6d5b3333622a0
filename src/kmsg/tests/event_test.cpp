// SPDX-License-Identifier: Apache-2.0
// Tests for the kernel-message classifier: fields, MIG, garbage and bus-id normalisation.
#include "kmsg/event.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace cardiac::kmsg {
namespace {

TEST(Classify, AerSeverityAndReporter) {
  auto e = classify(
      "pcieport 0000:00:03.1: AER: Uncorrected (Non-Fatal) error received: "
      "0000:3b:00.0");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->aer_severity, AerSeverity::kUncorrectedNonFatal);
  EXPECT_EQ(e->reporter, "0000:00:03.1");
  EXPECT_EQ(classify("pcieport 0000:00:02.0: PCIe Bus Error: severity=Uncorrected (Fatal), "
                     "type=Transaction Layer")
                ->aer_severity,
            AerSeverity::kUncorrectedFatal);
  EXPECT_EQ(classify("pcieport 0000:00:03.1: AER: Correctable error message received from "
                     "0000:00:00.0")
                ->aer_severity,
            AerSeverity::kCorrected);
}

TEST(Classify, MigSuffix) {
  auto e = classify(
      "NVRM: Xid (PCI:0000:3b:00 GPU-I:05 GPU-CI:01): 43, pid=77, name=train, "
      "Ch 00000001");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->xid, 43);
  EXPECT_EQ(e->pci_bus_id, "0000:3b:00.0");
  EXPECT_EQ(e->gpu_instance, 5);
  EXPECT_EQ(e->compute_instance, 1);
  EXPECT_EQ(e->pid, 77);
  EXPECT_EQ(e->process, "train");
  EXPECT_EQ(e->message, "Ch 00000001");
}

TEST(Classify, GpuMapCarriesUuid) {
  auto e = classify("NVRM: GPU at PCI:0000:3b:00: GPU-2b7f1ab2-6f5c-4b7e-9c1e-0a1b2c3d4e5f");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->kind, EventKind::kGpuMap);
  EXPECT_EQ(e->pci_bus_id, "0000:3b:00.0");
  EXPECT_EQ(e->uuid, "GPU-2b7f1ab2-6f5c-4b7e-9c1e-0a1b2c3d4e5f");
  e = classify("NVRM: GPU at PCI:1018:01:00: GPU-00000000-1111-2222-3333-444444444444");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->pci_bus_id, "1018:01:00.0");
}

TEST(Classify, SxidSeverity) {
  auto e = classify("nvidia-nvswitch3: SXid (PCI:0000:c2:00.0): 20034, Fatal, Link 46 LTSSM");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->severity, "fatal");
  EXPECT_EQ(e->xid, 20034);
}

TEST(Classify, FabricManagerErrors) {
  auto e = classify_line(
      "[Jun 13 2023 06:08:36] [ERROR] [tid 1008] detected NVSwitch fatal error 20034 on fid 0 on "
      "NVSwitch pci bus id 00000000:c4:00.0 physical id 3 port 42");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->kind, EventKind::kFabricManager);
  EXPECT_EQ(e->severity, "fatal");
  EXPECT_EQ(e->xid, 20034);
  EXPECT_EQ(e->pci_bus_id, "0000:c4:00.0");
  EXPECT_EQ(e->message.substr(0, 30), "detected NVSwitch fatal error ");
  e = classify("[ERROR] [tid 7] detected NVSwitch non-fatal error 12028 on fid 0");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->severity, "error");
  EXPECT_EQ(e->xid, 12028);
  e = classify(
      "[ERROR] [tid 2418] request to query NVSwitch device information from NVSwitch driver "
      "failed with error:WARNING Nothing to do [NV_WARN_NOTHING_TO_DO]");
  ASSERT_TRUE(e);
  EXPECT_FALSE(e->xid);
  EXPECT_EQ(e->pci_bus_id, "");
  EXPECT_FALSE(classify("[INFO] [tid 7] Fabric Manager started"));
  EXPECT_FALSE(classify("[ERROR] no tid"));
  EXPECT_FALSE(classify("[drm] Initialized nvidia-drm 0.0.0"));
}

TEST(Classify, TimeFromPrefixOrBoot) {
  auto e = classify_line("[  10.000000] NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off", 0,
                         1'000'000'000'000LL);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->monotonic_us, 10'000'000);
  EXPECT_EQ(e->time_ns, 1'000'000'000'000LL + 10'000'000'000LL);
}

TEST(Classify, HugeMonotonicStampGetsNoWallTime) {
  // fuzz/crashes-found/kmsg-monotonic-stamp-overflow: the sum used to overflow int64.
  auto e = classify_line(
      "[35678905678.901234] NVRM: Xid (PCI:0000:3b:00): 79, pid=0, GPU has fallen off the bus.", 0,
      1'704'067'200'000'000'000);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->monotonic_us, 35678905678901234);
  EXPECT_FALSE(e->time_ns);
}

TEST(Classify, UninterestingAndGarbageLinesAreNullopt) {
  using namespace std::string_literals;
  for (const std::string& bad : {
           ""s,
           "NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.54.15"s,
           "NVRM: Xid"s,
           "NVRM: Xid ("s,
           "NVRM: Xid (PCI:0000:3b:00)"s,
           "NVRM: Xid (PCI:0000:3b:00): "s,
           "NVRM: Xid (PCI:0000:3b:00): abc, x"s,
           "NVRM: Xid (PCI:zzzz:3b:00): 79, x"s,
           "NVRM: Xid (PCI:0000:3b:40): 79, x"s,
           "NVRM: Xid (PCI:0000:3b:00): 123456789, x"s,
           "NVRM: Xid (PCI:0000:3b:00: 79, x"s,
           "NVRM: GPU at PCI:0000:3b:00: "s,
           "NVRM: GPU at PCI:0000:3b:00: GPU-"s,
           "pcieport 0000:00:03.1: AER: enabled with IRQ 26"s,
           "pcieport 0000:00:02.0:    [ 5] Surprise Down Error    (First)"s,
           "nvidia 0000:02:00.0: device has no AER-aware driver"s,
           "INFO: task python:abc blocked for more than 120 seconds."s,
           "INFO: task python blocked for more than 120 seconds."s,
           "INFO: task "s,
           "nvidia-nvswitch0: SXid (PCI:0000:05:00.0"s,
           "mlx5_core 0000:5e:00.0: firmware version: 20.31.1014"s,
           "mlx5_core"s,
           "usb 1-1: new high-speed USB device number 2 using xhci_hcd"s,
           "\x01\x02\x03\xff\xfe"s,
           "\0\0\0NVRM: \0"s,
       }) {
    EXPECT_FALSE(classify(bad)) << bad;
  }
}

TEST(Classify, BinaryGarbageAndTruncationNeverCrash) {
  const std::string line =
      "[Fri Aug 30 11:43:14 2024] NVRM: Xid (PCI:0000:cb:00 GPU-I:01): 109, pid=1797828, "
      "name=pt_main_thread, Ch 00000008";
  for (std::size_t n = 0; n <= line.size(); ++n) (void)classify_line(line.substr(0, n), 2024);
  std::string noise;
  for (int i = 0; i < 3000; ++i) {
    noise.push_back(static_cast<char>((i * 97 + 13) % 256));
    (void)classify(noise);
    (void)classify("NVRM: Xid (" + noise);
    (void)classify("pcieport " + noise + ": AER: " + noise);
  }
  SUCCEED();
}

TEST(Classify, NormalizeKernelBusId) {
  EXPECT_EQ(normalize_kernel_bus_id("0000:3B:00"), "0000:3b:00.0");
  EXPECT_EQ(normalize_kernel_bus_id("00000000:3b:00.0"), "0000:3b:00.0");
  EXPECT_EQ(normalize_kernel_bus_id("0018:01:00"), "0018:01:00.0");
  EXPECT_EQ(normalize_kernel_bus_id("garbage"), "");
  EXPECT_EQ(normalize_kernel_bus_id(""), "");
  EXPECT_EQ(normalize_kernel_bus_id("0000:3b:40.0"), "");
}

// The names are what JSON, the store and reports carry: each kind has its own, read back. The
// enumerators are in name order, which the doctor's grouping relies on for its report order.
TEST(AerSeverityName, EverySeverityReadsBackMildestFirst) {
  const AerSeverity all[] = {AerSeverity::kCorrected, AerSeverity::kUncorrectedNonFatal,
                             AerSeverity::kUncorrectedFatal};
  for (AerSeverity s : all) EXPECT_EQ(parse_aer_severity(aer_severity_name(s)), s);
  EXPECT_EQ(aer_severity_name(AerSeverity::kUncorrectedNonFatal), "uncorrected_non_fatal");
  EXPECT_LT(AerSeverity::kCorrected, AerSeverity::kUncorrectedNonFatal);
  EXPECT_LT(AerSeverity::kUncorrectedNonFatal, AerSeverity::kUncorrectedFatal);
  EXPECT_EQ(parse_aer_severity("fatal"), std::nullopt);
}

TEST(EventKindName, EveryKindHasItsOwnNameReadBackInNameOrder) {
  const EventKind all[] = {EventKind::kAer,          EventKind::kFabricManager,
                           EventKind::kFallenOffBus, EventKind::kGpuMap,
                           EventKind::kGspTimeout,   EventKind::kHungTask,
                           EventKind::kIb,           EventKind::kInitFailure,
                           EventKind::kNvlink,       EventKind::kResetRequired,
                           EventKind::kSxid,         EventKind::kXid};
  std::set<std::string_view> names;
  for (std::size_t i = 0; i < std::size(all); ++i) {
    const EventKind k = all[i];
    EXPECT_EQ(static_cast<std::size_t>(k), i) << event_kind_name(k);
    EXPECT_EQ(parse_event_kind(event_kind_name(k)), k) << event_kind_name(k);
    EXPECT_TRUE(names.insert(event_kind_name(k)).second) << event_kind_name(k);
    if (i > 0) {
      EXPECT_LT(event_kind_name(all[i - 1]), event_kind_name(k));
    }
  }
  EXPECT_EQ(event_kind_name(EventKind::kFallenOffBus), "fallen_off_bus");
  EXPECT_EQ(parse_event_kind("kmsg"), std::nullopt);
  EXPECT_EQ(parse_event_kind("XID"), std::nullopt);
}

}  // namespace
}  // namespace cardiac::kmsg
