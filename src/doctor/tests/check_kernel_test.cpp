// SPDX-License-Identifier: Apache-2.0
// Scenario tests for check_kernel_log: kernel logs (fixtures and inline) → findings with the
// expected id, GPU, category, severity and first action.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "doctor/checks/checks.h"
#include "doctor/kernel_log.h"
#include "doctor/live/kernel_log_source.h"
#include "platform/fs.h"

namespace cardiac::doctor {
namespace {

const std::string kKernelFixtures = CARDIAC_FIXTURES_DIR "/kmsg/";

DoctorInput input_from(const KernelLog& log, std::shared_ptr<const FileSystem> fs = nullptr) {
  DoctorInput in;
  in.events = log.events;
  in.boots = log.boots;
  in.event_context = log.context;
  in.kmsg_source = log.source;
  in.fs = std::move(fs);
  return in;
}

DoctorInput fixture(const std::string& name, std::shared_ptr<const FileSystem> fs = nullptr) {
  KernelLogOptions o;
  o.year_hint = 2024;
  auto log = read_kernel_log_file(kKernelFixtures + name, o);
  EXPECT_TRUE(log) << name << ": " << (log ? "" : log.error().what());
  return log ? input_from(*log, std::move(fs)) : DoctorInput{};
}

DoctorInput inline_log(const std::string& text, std::shared_ptr<const FileSystem> fs = nullptr) {
  KernelLog log = parse_kernel_log(text, {});
  log.source = "test";
  return input_from(log, std::move(fs));
}

std::vector<Finding> run(const DoctorInput& in) {
  std::vector<Finding> out;
  check_kernel_log(in, out);
  return out;
}

const Finding* find(const std::vector<Finding>& fs, const std::string& id,
                    const std::string& bus = {}) {
  for (const auto& f : fs) {
    if (f.id == id && (bus.empty() || f.gpu.pci_bus_id == bus)) return &f;
  }
  return nullptr;
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

std::string ids(const std::vector<Finding>& fs) {
  std::string out;
  for (const auto& f : fs) out += f.id + "[" + f.gpu.pci_bus_id + "] ";
  return out;
}

// The GPUs of the Xid 79 fixture: 0000:02:00.0 behind root port 0000:00:02.0, 0000:03:00.0
// behind 0000:00:03.0.
std::shared_ptr<const FileSystem> two_gpu_sysfs() {
  auto fs = std::make_shared<MemFs>();
  fs->add_link("/sys/bus/pci/devices/0000:02:00.0",
               "../../../devices/pci0000:00/0000:00:02.0/0000:02:00.0");
  fs->add_link("/sys/bus/pci/devices/0000:03:00.0",
               "../../../devices/pci0000:00/0000:00:03.0/0000:03:00.0");
  return fs;
}

TEST(CheckKernel, Xid79WithSurpriseDownLinkedThroughSysfs) {
  auto in = fixture("xid79-aer-surprise-down.dmesg", two_gpu_sysfs());
  auto out = run(in);
  ASSERT_EQ(out.size(), 1u) << ids(out);  // AER and the probe line fold into the Xid 79 story
  const Finding& f = out[0];
  EXPECT_EQ(f.id, "xid.79");
  EXPECT_EQ(f.gpu.pci_bus_id, "0000:02:00.0");
  EXPECT_EQ(f.gpu.uuid, "GPU-2b7f1ab2-6f5c-4b7e-9c1e-0a1b2c3d4e5f");
  EXPECT_EQ(f.gpu.serial, "1654922006536");
  EXPECT_EQ(f.category, Category::kHardware);
  EXPECT_EQ(f.severity, Severity::kCritical);
  EXPECT_EQ(f.confidence, Confidence::kHigh);
  EXPECT_TRUE(contains(f.explanation, "Surprise Down Error (First)")) << f.explanation;
  EXPECT_TRUE(contains(f.explanation, "0000:00:02.0")) << f.explanation;
  EXPECT_TRUE(contains(f.explanation, "sysfs")) << f.explanation;
  ASSERT_FALSE(f.evidence.empty());
  EXPECT_TRUE(contains(f.evidence[0].text, "Surprise") ||
              contains(f.evidence[0].text, "PCIe Bus Error"));
  for (const auto& e : f.evidence) {
    EXPECT_EQ(e.kind, "log");
    EXPECT_EQ(e.source, kKernelFixtures + "xid79-aer-surprise-down.dmesg");
  }
  EXPECT_LE(f.evidence.size(), 6u);
  ASSERT_FALSE(f.actions.empty());
  EXPECT_TRUE(f.actions[0].rfind("Reboot", 0) == 0) << f.actions[0];
}

TEST(CheckKernel, Xid79WithSurpriseDownLinkedByTheDriverLine) {
  auto out = run(fixture("xid79-aer-surprise-down.dmesg"));  // no sysfs at all
  ASSERT_EQ(out.size(), 1u) << ids(out);
  EXPECT_EQ(out[0].id, "xid.79");
  EXPECT_TRUE(contains(out[0].explanation, "Surprise Down")) << out[0].explanation;
  EXPECT_FALSE(contains(out[0].explanation, "sysfs")) << out[0].explanation;
}

TEST(CheckKernel, FatalAerWithoutXidIsItsOwnCriticalFinding) {
  auto in = inline_log(
      "[ 6.0] NVRM: GPU at PCI:0000:02:00: GPU-2b7f1ab2-6f5c-4b7e-9c1e-0a1b2c3d4e5f\n"
      "[ 6.1] NVRM: GPU at PCI:0000:03:00: GPU-9d0e3c41-0b1a-4c2d-8e7f-112233445566\n"
      "[10.0] pcieport 0000:00:03.0: PCIe Bus Error: severity=Uncorrected (Fatal), "
      "type=Transaction Layer, id=0018(Receiver ID)\n"
      "[10.0] pcieport 0000:00:03.0:    [ 5] Surprise Down Error    (First)\n"
      "[10.1] pcieport 0000:80:01.0: AER: Uncorrected (Non-Fatal) error received: 0000:81:00.0\n",
      two_gpu_sysfs());
  auto out = run(in);
  ASSERT_EQ(out.size(), 2u) << ids(out);
  const Finding* gpu = find(out, "kernel.aer", "0000:03:00.0");
  ASSERT_NE(gpu, nullptr) << ids(out);
  EXPECT_EQ(gpu->severity, Severity::kCritical);
  EXPECT_EQ(gpu->category, Category::kHardware);
  EXPECT_EQ(gpu->confidence, Confidence::kHigh);
  EXPECT_TRUE(contains(gpu->title, "fatal")) << gpu->title;
  const Finding* other = nullptr;
  for (const auto& f : out) {
    if (f.gpu.empty()) other = &f;
  }
  ASSERT_NE(other, nullptr);
  EXPECT_EQ(other->severity, Severity::kWarning);
  EXPECT_TRUE(contains(other->title, "0000:81:00.0")) << other->title;
}

TEST(CheckKernel, CorrectedAerByRate) {
  auto single = run(fixture("aer-corrected.dmesg"));
  ASSERT_FALSE(single.empty());
  for (const auto& f : single) {
    EXPECT_EQ(f.id, "kernel.aer");
    EXPECT_EQ(f.severity, Severity::kInfo) << f.title;
    EXPECT_EQ(f.confidence, Confidence::kLow) << f.title;
  }
  // "received" + "PCIe Bus Error" of row 21 are one error, not two findings.
  EXPECT_EQ(single.size(), 2u) << ids(single);

  std::string many;
  for (int i = 0; i < 12; ++i) {
    many += "[" + std::to_string(100 + i * 60) +
            ".000000] pcieport 0000:00:02.0: PCIe Bus Error: severity=Corrected, type=Physical "
            "Layer, (Receiver ID)\n";
  }
  auto fs = std::make_shared<MemFs>();
  fs->add_link("/sys/bus/pci/devices/0000:01:00.0",
               "../../../devices/pci0000:00/0000:00:02.0/0000:01:00.0");
  KernelLogOptions o;
  o.boot_time_ns = 1'700'000'000LL * kNsPerSec;
  KernelLog log = parse_kernel_log(
      "[5.0] NVRM: GPU at PCI:0000:01:00: GPU-01010101-0202-0303-0404-050505050505\n" + many, o);
  auto in = input_from(log, fs);
  auto out = run(in);
  ASSERT_EQ(out.size(), 1u) << ids(out);
  EXPECT_EQ(out[0].gpu.pci_bus_id, "0000:01:00.0");
  EXPECT_EQ(out[0].severity, Severity::kWarning);
  EXPECT_EQ(out[0].confidence, Confidence::kMedium);
  EXPECT_TRUE(contains(out[0].title, "12 corrected PCIe errors")) << out[0].title;
}

TEST(CheckKernel, Xid48DoubleBitError) {
  auto out = run(fixture("xid48-dbe.syslog"));
  ASSERT_EQ(out.size(), 2u) << ids(out);  // 48 and 64; the user-space "Xid 79" is ignored
  const Finding* dbe = find(out, "xid.48");
  ASSERT_NE(dbe, nullptr);
  EXPECT_EQ(dbe->gpu.pci_bus_id, "0000:07:00.0");
  EXPECT_EQ(dbe->gpu.serial, "1321021012345");
  EXPECT_EQ(dbe->category, Category::kHardware);
  EXPECT_EQ(dbe->severity, Severity::kCritical);
  EXPECT_TRUE(dbe->actions[0].rfind("Stop the processes on GPU 0000:07:00.0, then reset it: "
                                    "nvidia-smi -r -i 0000:07:00.0",
                                    0) == 0)
      << dbe->actions[0];
  ASSERT_FALSE(dbe->evidence.empty());
  EXPECT_TRUE(dbe->evidence[0].time);
  const Finding* remap = find(out, "xid.64");
  ASSERT_NE(remap, nullptr);
  EXPECT_EQ(remap->severity, Severity::kCritical);
  EXPECT_TRUE(contains(remap->explanation, "Xid 45")) << remap->explanation;
}

TEST(CheckKernel, Xid119WithNvidiaSmiHung) {
  auto out = run(fixture("xid119-gsp-hung.dmesg-T"));
  EXPECT_EQ(out.size(), 3u) << ids(out);  // xid.119, xid.120, kernel.hung_task
  const Finding* gsp = find(out, "xid.119");
  ASSERT_NE(gsp, nullptr);
  EXPECT_EQ(gsp->category, Category::kDriver);
  EXPECT_EQ(gsp->severity, Severity::kCritical);
  EXPECT_TRUE(contains(gsp->title, "(2 times)")) << gsp->title;
  EXPECT_TRUE(contains(gsp->explanation, "nvidia-smi (pid 48213)")) << gsp->explanation;
  EXPECT_TRUE(contains(gsp->explanation, "Rate limiting GSP RPC")) << gsp->explanation;
  EXPECT_TRUE(contains(gsp->actions[0], "nvidia-smi -r")) << gsp->actions[0];
  EXPECT_EQ(find(out, "kernel.gsp_timeout"), nullptr);  // folded into xid.119

  const Finding* hung = find(out, "kernel.hung_task");
  ASSERT_NE(hung, nullptr);
  EXPECT_EQ(hung->category, Category::kDriver);
  EXPECT_EQ(hung->severity, Severity::kCritical);
  EXPECT_EQ(hung->confidence, Confidence::kHigh);
  EXPECT_EQ(hung->gpu.pci_bus_id, "0000:3b:00.0");
  EXPECT_TRUE(contains(hung->title, "nvidia-smi (pid 48213)")) << hung->title;
  EXPECT_TRUE(hung->actions[0].rfind("Do not start more nvidia-smi", 0) == 0);
  bool frame = false;
  for (const auto& e : hung->evidence) frame = frame || contains(e.text, "[nvidia]");
  EXPECT_TRUE(frame);
}

TEST(CheckKernel, Xid13NamesTheApplication) {
  auto out = run(fixture("xid13-app.journal"));
  ASSERT_EQ(out.size(), 1u) << ids(out);  // the Xid 45 after it is folded in
  const Finding& f = out[0];
  EXPECT_EQ(f.id, "xid.13");
  EXPECT_EQ(f.category, Category::kDriver);
  EXPECT_EQ(f.severity, Severity::kWarning);
  EXPECT_TRUE(contains(f.title, "pt_main_thread (pid 1797828)")) << f.title;
  EXPECT_TRUE(contains(f.actions[0], "pt_main_thread (pid 1797828)")) << f.actions[0];
  EXPECT_TRUE(contains(f.explanation, "Xid 45")) << f.explanation;
}

TEST(CheckKernel, Xid45ChainFoldsIntoTheRootCause) {
  auto out = run(fixture("xid31-45-chain.json"));
  EXPECT_EQ(find(out, "xid.45"), nullptr) << ids(out);
  const Finding* mmu = find(out, "xid.31");
  ASSERT_NE(mmu, nullptr) << ids(out);
  EXPECT_EQ(mmu->category, Category::kDriver);
  EXPECT_TRUE(contains(mmu->explanation,
                       "Xid 45 (preemptive cleanup, due to previous errors) "
                       "followed twice"))
      << mmu->explanation;
  EXPECT_TRUE(contains(mmu->actions[0], "train.py (pid 169800)")) << mmu->actions[0];
  EXPECT_EQ(mmu->evidence.size(), 2u);  // the Xid 31 line and one Xid 45 line

  const Finding* fell = find(out, "kernel.fallen_off_bus", "0000:09:00.0");
  ASSERT_NE(fell, nullptr) << ids(out);
  EXPECT_EQ(fell->severity, Severity::kCritical);
  EXPECT_EQ(fell->category, Category::kHardware);
  EXPECT_EQ(out.size(), 2u) << ids(out);

  // Alone, Xid 45 is its own (informational) finding.
  auto solo =
      run(inline_log("NVRM: Xid (PCI:0000:61:00): 45, pid=1496200, "
                     "name=distprovers-gpu, Ch 0000000a\n"));
  ASSERT_EQ(solo.size(), 1u);
  EXPECT_EQ(solo[0].id, "xid.45");
  EXPECT_EQ(solo[0].severity, Severity::kInfo);
}

// The reference lines of one GPU (0000:61:00, shared/reference/xid-and-kmsg.md rows 27 and 12)
// with an application Xid between them; the last line carries the catalog's "caused by
// previous Xid N" when `cause` is given.
std::string chain_log(const std::string& cause) {
  std::string log =
      "NVRM: Xid (PCI:0000:61:00): 119, pid=977823, name=nvidia-smi, Timeout waiting for RPC "
      "from GSP! Expected function 76 (GSP_RM_CONTROL) (0x2080014b 0x5).\n"
      "NVRM: Xid (PCI:0000:61:00): 13, pid=1496200, name=distprovers-gpu, Graphics Exception: "
      "ESR 0x4041b0=0x0\n"
      "NVRM: Xid (PCI:0000:61:00): 45, pid=1496200, name=distprovers-gpu, Ch 0000000a";
  if (!cause.empty()) log += " (caused by previous Xid " + cause + ")";
  return log + "\n";
}

TEST(CheckKernel, FollowOnNamingItsCauseFoldsIntoThatXid) {
  // Without the reference, Xid 45 joins the Xid just before it (13).
  auto positional = run(inline_log(chain_log("")));
  EXPECT_EQ(find(positional, "xid.45"), nullptr) << ids(positional);
  ASSERT_NE(find(positional, "xid.13"), nullptr) << ids(positional);
  EXPECT_TRUE(contains(find(positional, "xid.13")->explanation, "Xid 45"));
  ASSERT_NE(find(positional, "xid.119"), nullptr) << ids(positional);
  EXPECT_FALSE(contains(find(positional, "xid.119")->explanation, "Xid 45"));

  // With it, the driver's own words win: Xid 45 belongs to the GSP timeout.
  auto named = run(inline_log(chain_log("119")));
  EXPECT_EQ(find(named, "xid.45"), nullptr) << ids(named);
  const Finding* gsp = find(named, "xid.119");
  ASSERT_NE(gsp, nullptr) << ids(named);
  EXPECT_TRUE(contains(gsp->explanation, "Xid 45")) << gsp->explanation;
  ASSERT_NE(find(named, "xid.13"), nullptr) << ids(named);
  EXPECT_FALSE(contains(find(named, "xid.13")->explanation, "Xid 45"))
      << find(named, "xid.13")->explanation;

  // Naming an Xid that is not in the log: no guess, Xid 45 stands alone.
  auto absent = run(inline_log(chain_log("79")));
  EXPECT_NE(find(absent, "xid.45"), nullptr) << ids(absent);
  EXPECT_FALSE(contains(find(absent, "xid.13")->explanation, "Xid 45"));
}

TEST(CheckKernel, SameXidAfterARebootIsEscalated) {
  auto out = run(fixture("xid79-two-boots.kern.log"));
  ASSERT_EQ(out.size(), 1u) << ids(out);
  const Finding& f = out[0];
  EXPECT_EQ(f.id, "xid.79");
  EXPECT_EQ(f.severity, Severity::kCritical);
  EXPECT_EQ(f.category, Category::kHardware);
  EXPECT_EQ(f.gpu.serial, "1654922009999");
  EXPECT_TRUE(contains(f.explanation, "came back after a reboot (in 2 of the boots"))
      << f.explanation;
  EXPECT_TRUE(f.actions[0].rfind("Take GPU 0000:5d:00.0 out of service", 0) == 0) << f.actions[0];

  // A driver-category Xid that survives a reboot becomes a hardware suspect.
  const std::string line = "NVRM: Xid (PCI:0000:3b:00): 109, pid=5, name=x, CTX SWITCH TIMEOUT\n";
  auto once = run(inline_log(line + line));
  ASSERT_EQ(once.size(), 1u);
  EXPECT_EQ(once[0].category, Category::kDriver);
  EXPECT_EQ(once[0].severity, Severity::kWarning);
  auto again = run(inline_log(line + "-- Reboot --\n" + line));
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].category, Category::kHardware);
  EXPECT_EQ(again[0].severity, Severity::kCritical);
}

TEST(CheckKernel, Xid94OnceVersusAcrossBoots) {
  auto once = run(fixture("xid94-once.kmsg"));
  ASSERT_EQ(once.size(), 1u) << ids(once);
  EXPECT_EQ(once[0].id, "xid.94");
  EXPECT_EQ(once[0].severity, Severity::kWarning);
  EXPECT_EQ(once[0].category, Category::kHardware);
  EXPECT_TRUE(once[0].actions[0].rfind("Restart the application", 0) == 0) << once[0].actions[0];

  auto twice = run(fixture("xid94-two-boots.journal"));
  ASSERT_EQ(twice.size(), 1u) << ids(twice);
  EXPECT_EQ(twice[0].id, "xid.94");
  EXPECT_EQ(twice[0].severity, Severity::kCritical);
  EXPECT_EQ(twice[0].category, Category::kHardware);
  EXPECT_EQ(twice[0].confidence, Confidence::kHigh);
  EXPECT_EQ(twice[0].gpu.serial, "1654922004444");
}

TEST(CheckKernel, Mlx5ErrorsAreNetworkFindings) {
  auto out = run(fixture("mlx5-ib.syslog"));
  ASSERT_EQ(out.size(), 2u) << ids(out);
  const Finding* fatal = nullptr;
  const Finding* flap = nullptr;
  for (const auto& f : out) {
    EXPECT_EQ(f.id, "kernel.ib");
    EXPECT_EQ(f.category, Category::kNetwork);
    (contains(f.title, "0000:5e:00.0") ? fatal : flap) = &f;
  }
  ASSERT_NE(fatal, nullptr);
  ASSERT_NE(flap, nullptr);
  EXPECT_EQ(fatal->severity, Severity::kCritical);
  EXPECT_EQ(flap->severity, Severity::kWarning);
  EXPECT_TRUE(contains(flap->title, "went down twice")) << flap->title;
  EXPECT_TRUE(fatal->actions[0].rfind("Check the port: ibstat", 0) == 0);
}

TEST(CheckKernel, OnlyNoiseGivesNoFindings) {
  auto in = fixture("noise-only.dmesg", two_gpu_sysfs());
  EXPECT_TRUE(run(in).empty());
  EXPECT_TRUE(run(DoctorInput{}).empty());
}

TEST(CheckKernel, FallenOffTheBusAtProbeAndInitFailure) {
  auto out = run(fixture("fallen-multiline.dmesg"));
  const Finding* a = find(out, "kernel.fallen_off_bus", "0000:3b:00.0");
  const Finding* b = find(out, "kernel.fallen_off_bus", "0000:5d:00.0");
  ASSERT_NE(a, nullptr) << ids(out);
  ASSERT_NE(b, nullptr) << ids(out);
  EXPECT_EQ(a->severity, Severity::kCritical);
  EXPECT_EQ(a->category, Category::kHardware);
  EXPECT_TRUE(a->actions[0].rfind("Reboot", 0) == 0);
  const Finding* init = find(out, "kernel.init_failure", "0000:3b:00.0");
  ASSERT_NE(init, nullptr) << ids(out);
  EXPECT_EQ(init->severity, Severity::kCritical);
  EXPECT_EQ(init->category, Category::kHardware);  // the same GPU fell off the bus
  EXPECT_EQ(out.size(), 3u) << ids(out);

  auto alone = run(inline_log("NVRM: RmInitAdapter failed! (0x26:0xffff:1463)\n"));
  ASSERT_EQ(alone.size(), 1u);
  EXPECT_EQ(alone[0].id, "kernel.init_failure");
  EXPECT_EQ(alone[0].category, Category::kDriver);
}

TEST(CheckKernel, NonXidGspTimeoutAndResetRequired) {
  auto out = run(inline_log(
      "NVRM: GPU0 _kgspRpcRecvPoll: Timeout waiting for RPC from GSP! Expected function 10\n"
      "NVRM: GPU 0000:3b:00.0: GPU requires reset\n"));
  ASSERT_EQ(out.size(), 2u) << ids(out);
  const Finding* gsp = find(out, "kernel.gsp_timeout");
  ASSERT_NE(gsp, nullptr);
  EXPECT_EQ(gsp->severity, Severity::kCritical);
  EXPECT_EQ(gsp->category, Category::kDriver);
  const Finding* reset = find(out, "kernel.reset_required", "0000:3b:00.0");
  ASSERT_NE(reset, nullptr) << ids(out);
  EXPECT_TRUE(contains(reset->actions[0], "nvidia-smi -r -i 0000:3b:00.0"));
}

TEST(CheckKernel, SxidAndFabricManager) {
  auto out = run(fixture("nvswitch-sxid.dmesg"));
  ASSERT_EQ(out.size(), 2u) << ids(out);
  for (const auto& f : out) {
    EXPECT_EQ(f.id, "kernel.sxid");
    EXPECT_EQ(f.category, Category::kHardware);
    if (contains(f.title, "20034")) {
      EXPECT_EQ(f.severity, Severity::kCritical);
      EXPECT_TRUE(contains(f.title, "fatal"));
      EXPECT_FALSE(contains(f.title, "times")) << f.title;  // one report over three lines
    } else {
      EXPECT_TRUE(contains(f.title, "12028")) << f.title;
      EXPECT_TRUE(contains(f.explanation, "12028 once")) << f.explanation;
      EXPECT_EQ(f.severity, Severity::kWarning);
    }
  }
  auto fm = run(fixture("fabricmanager.log"));
  ASSERT_EQ(fm.size(), 1u) << ids(fm);
  EXPECT_EQ(fm[0].id, "kernel.fabric_manager");
  EXPECT_EQ(fm[0].severity, Severity::kCritical);
  EXPECT_EQ(fm[0].category, Category::kHardware);
  EXPECT_EQ(fm[0].evidence.size(), 2u);
  EXPECT_TRUE(fm[0].evidence[0].time);
}

TEST(CheckKernel, NvlinkErrorsWithoutAnXid) {
  auto out =
      run(inline_log("nvidia-nvlink: GPU 0000:3b:00.0: link training failed on link 3\n"
                     "NVRM: GPU 0000:3b:00.0: NVLink fatal error on link 3\n"
                     "nvidia-nvlink: Nvlink Core is being initialized, major device number 236\n"));
  ASSERT_EQ(out.size(), 1u) << ids(out);
  EXPECT_EQ(out[0].id, "kernel.nvlink");
  EXPECT_EQ(out[0].category, Category::kHardware);
  EXPECT_EQ(out[0].severity, Severity::kCritical);
  EXPECT_EQ(out[0].gpu.pci_bus_id, "0000:3b:00.0");
  EXPECT_TRUE(contains(out[0].actions[0], "nvidia-smi nvlink --status -i 0000:3b:00.0"));
  EXPECT_EQ(out[0].evidence.size(), 2u);
}

TEST(CheckKernel, OtherHungTasksAreResources) {
  auto out = run(fixture("hung-task-nfs.dmesg"));
  ASSERT_EQ(out.size(), 1u) << ids(out);
  EXPECT_EQ(out[0].id, "kernel.hung_task.other");
  EXPECT_EQ(out[0].category, Category::kResources);
  EXPECT_EQ(out[0].severity, Severity::kWarning);
  EXPECT_TRUE(contains(out[0].title, "python3 (pid 4242)")) << out[0].title;
  EXPECT_TRUE(contains(out[0].explanation, "run through: nfs, sunrpc")) << out[0].explanation;
}

TEST(CheckKernel, GpuIdentityFromNvml) {
  auto in = inline_log(
      "NVRM: Xid (PCI:0000:3b:00): 48, pid='<unknown>', name=<unknown>, An uncorrectable double "
      "bit error (DBE) has been detected on GPU in the framebuffer\n");
  nvml::GpuSnapshot snap;
  snap.available = true;
  nvml::GpuReading r;
  r.index = 3;
  r.pci_bus_id = "0000:3b:00.0";
  r.uuid = "GPU-33333333-0000-0000-0000-000000000000";
  r.serial = "1650000000003";
  snap.gpus.push_back(r);
  in.gpu_samples.push_back(snap);
  auto out = run(in);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].gpu.index, 3u);
  EXPECT_EQ(out[0].gpu.serial, "1650000000003");
  // The GPU stands before the title in every report: the title does not name it again.
  EXPECT_EQ(out[0].gpu.pci_bus_id, "0000:3b:00.0");
  EXPECT_FALSE(contains(out[0].title, "GPU 3")) << out[0].title;
  EXPECT_TRUE(contains(out[0].title, "Xid 48: ")) << out[0].title;
  EXPECT_TRUE(contains(out[0].actions[0], "nvidia-smi -r -i 3")) << out[0].actions[0];
}

// A driver line quoted at the end of the explanation keeps its own full stop, no second one.
TEST(CheckKernel, AQuotedDriverLineEndsTheSentenceOnce) {
  auto out = run(inline_log(
      "[  100.000000] NVRM: Xid (PCI:0000:02:00): 79, pid='<unknown>', name=<unknown>, GPU has "
      "fallen off the bus.\n"
      "[  100.000100] NVRM: GPU 0000:02:00.0: GPU has fallen off the bus.\n"));
  ASSERT_FALSE(out.empty());
  for (const auto& f : out) {
    EXPECT_FALSE(contains(f.explanation, ".\".")) << f.explanation;
    EXPECT_FALSE(contains(f.title, "0000:02:00.0")) << f.title;
  }
}

TEST(CheckKernel, CatalogEdgeCases) {
  auto out = run(inline_log(
      "NVRM: Xid (0000:03:00): 14, Channel exception\n"
      "NVRM: Xid (PCI:0000:00:00): 149, NETIR_LINK_EVT Fatal XC0 i0 Link 00 (0x025001c6 "
      "0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)\n"
      "NVRM: Xid (PCI:0018:01:00): 145, RLW_RXPIPE Nonfatal XC0 i0 Link 13 (0x0409a0c2 "
      "0x00000008 0x00000001 0x00000000 0x00100000 0x00000004)\n"
      "NVRM: Xid (PCI:0000:3b:00): 62, pid='<unknown>', name=<unknown>, 0000e804\n"
      "NVRM: Xid (PCI:0000:3b:00): 154, GPU recovery action changed from 0x0 (None) to 0x1 "
      "(GPU Reset Required)\n"));
  const Finding* unknown = find(out, "xid.14");
  ASSERT_NE(unknown, nullptr) << ids(out);
  EXPECT_EQ(unknown->severity, Severity::kWarning);
  EXPECT_EQ(unknown->confidence, Confidence::kMedium);
  EXPECT_EQ(find(out, "xid.149")->severity, Severity::kCritical);
  EXPECT_EQ(find(out, "xid.145")->severity, Severity::kWarning);
  EXPECT_EQ(find(out, "xid.154"), nullptr) << ids(out);
  const Finding* halt = find(out, "xid.62");
  ASSERT_NE(halt, nullptr);
  EXPECT_TRUE(contains(halt->explanation, "GPU Reset Required")) << halt->explanation;
  EXPECT_EQ(out.size(), 4u) << ids(out);
}

TEST(CheckKernel, EveryFindingIsComplete) {
  const char* files[] = {"xid79-aer-surprise-down.dmesg",
                         "xid48-dbe.syslog",
                         "xid119-gsp-hung.dmesg-T",
                         "xid13-app.journal",
                         "xid31-45-chain.json",
                         "xid79-two-boots.kern.log",
                         "xid94-once.kmsg",
                         "xid94-two-boots.journal",
                         "mlx5-ib.syslog",
                         "fallen-multiline.dmesg",
                         "nvswitch-sxid.dmesg",
                         "fabricmanager.log",
                         "hung-task-nfs.dmesg",
                         "aer-corrected.dmesg"};
  for (const char* file : files) {
    auto out = run(fixture(file, two_gpu_sysfs()));
    EXPECT_FALSE(out.empty()) << file;
    for (const auto& f : out) {
      EXPECT_FALSE(f.id.empty()) << file;
      EXPECT_FALSE(f.title.empty()) << file << " " << f.id;
      EXPECT_FALSE(f.explanation.empty()) << file << " " << f.id;
      EXPECT_FALSE(f.evidence.empty()) << file << " " << f.id;
      EXPECT_LE(f.evidence.size(), 6u) << file << " " << f.id;
      EXPECT_FALSE(f.actions.empty()) << file << " " << f.id;
      for (const auto& a : f.actions) {
        EXPECT_FALSE(a.empty()) << file << " " << f.id;
        EXPECT_FALSE(contains(a, "{gpu}") || contains(a, "{id}")) << a;
      }
    }
  }
}

}  // namespace
}  // namespace cardiac::doctor
