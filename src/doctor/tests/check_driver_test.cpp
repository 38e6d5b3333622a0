// SPDX-License-Identifier: Apache-2.0
// check_driver: NVML missing (with and without a GPU on the bus), driver not loaded, library
// and module mismatch, hung and slow NVML, persistence mode, nvidia-smi stuck in D state (the
// captured HGX host tree), GPU memory held by processes that are gone.
#include <gtest/gtest.h>

#include "core/format.h"
#include "doctor/checks/checks.h"
#include "host/host.h"
#include "platform/fs.h"

namespace cardiac::doctor {
namespace {

constexpr TimeNs kT0 = 1'764'000'000 * kNsPerSec;

std::vector<Finding> run(const DoctorInput& in) {
  std::vector<Finding> out;
  check_driver(in, out);
  return out;
}

const Finding* find(const std::vector<Finding>& fs, std::string_view id) {
  for (const auto& f : fs) {
    if (f.id == id) return &f;
  }
  return nullptr;
}

std::string ids(const std::vector<Finding>& fs) {
  std::string s;
  for (const auto& f : fs) s += f.id + " ";
  return s;
}

void expect_finding(const Finding* f, Category c, Severity s, std::string_view first_action) {
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(category_name(f->category), category_name(c)) << f->id;
  EXPECT_EQ(severity_name(f->severity), severity_name(s)) << f->id;
  ASSERT_FALSE(f->actions.empty()) << f->id;
  EXPECT_TRUE(f->actions.front().starts_with(first_action)) << f->id << ": " << f->actions.front();
}

host::PciDevice bus_gpu(std::string bus_id, std::optional<std::string> driver = "nvidia") {
  host::PciDevice d;
  d.bus_id = std::move(bus_id);
  d.vendor = host::kPciVendorNvidia;
  d.device = 0x2330;
  d.class_code = 0x030200;
  d.driver = std::move(driver);
  return d;
}

// A host whose PCI bus was read: `gpus` NVIDIA GPUs on it (none is a plain machine).
host::HostSnapshot host_with(std::vector<host::PciDevice> gpus) {
  host::HostSnapshot h;
  h.taken_at = kT0;
  h.pci = host::PciScan{};
  h.pci->gpus = std::move(gpus);
  h.system.kernel = "6.1.0-18-amd64";
  return h;
}

nvml::GpuSnapshot failed(std::string kind, std::string error) {
  nvml::GpuSnapshot s;
  s.available = false;
  s.error_kind = std::move(kind);
  s.error = std::move(error);
  s.taken_at = kT0;
  return s;
}

nvml::GpuReading reading(unsigned index) {
  nvml::GpuReading r;
  r.index = index;
  r.name = "NVIDIA H100 80GB HBM3";
  r.uuid = fmt::format("GPU-{}", index);
  r.serial = fmt::format("16549220012{:02}", index);
  r.pci_bus_id = fmt::format("0000:{:02x}:00.0", 0x18 + index);
  r.persistence_mode = true;
  r.sample_duration_us = 20'000;
  r.processes_supported = true;
  return r;
}

nvml::GpuSnapshot sample(std::vector<nvml::GpuReading> gpus, TimeNs t = kT0) {
  nvml::GpuSnapshot s;
  s.available = true;
  s.taken_at = t;
  s.system.driver_version = "550.54.15";
  s.system.device_count = static_cast<unsigned>(gpus.size());
  s.gpus = std::move(gpus);
  for (auto& g : s.gpus) g.sampled_at = t;
  return s;
}

// --- NVML missing.

TEST(CheckDriver, NoLibraryAndNoGpuIsInfoOnly) {
  DoctorInput in;
  in.gpu_samples.push_back(failed("library_not_found", "libnvidia-ml.so.1: not found"));
  in.host_samples.push_back(host_with({}));
  auto out = run(in);
  ASSERT_EQ(out.size(), 1U) << ids(out);
  const Finding& f = out.front();
  expect_finding(&f, Category::kDriver, Severity::kInfo,
                 "Nothing to do if this machine has no GPU");
  EXPECT_EQ(f.id, "driver.nvml_missing");
  EXPECT_EQ(f.title, "No NVIDIA GPU on this machine");

  // A GPU handed to a virtual machine needs no driver on the host.
  in.host_samples = {host_with({bus_gpu("0000:18:00.0", "vfio-pci")})};
  out = run(in);
  ASSERT_EQ(out.size(), 1U) << ids(out);
  EXPECT_EQ(out.front().severity, Severity::kInfo);
  EXPECT_EQ(out.front().title,
            "No NVIDIA GPU for this host (1 passed through to virtual machines)");
}

TEST(CheckDriver, NoLibraryWithAGpuOnTheBusIsCritical) {
  DoctorInput in;
  in.gpu_samples.push_back(failed("library_not_found", "libnvidia-ml.so.1: not found"));
  in.host_samples.push_back(host_with({bus_gpu("0000:18:00.0", std::nullopt)}));
  auto out = run(in);
  const Finding* f = find(out, "driver.nvml_missing");
  expect_finding(f, Category::kDriver, Severity::kCritical, "Install the NVIDIA driver");
  EXPECT_EQ(f->title, "1 NVIDIA GPU(s) on the PCI bus but no NVIDIA driver library");

  // The module is loaded but the library is not there: a container without the toolkit.
  in.host_samples.back().system.nvidia_module_loaded = true;
  in.host_samples.back().system.nvidia_driver_version = "550.54.15";
  expect_finding(find(run(in), "driver.nvml_missing"), Category::kDriver, Severity::kCritical,
                 "Inside a container");
}

TEST(CheckDriver, NoLibraryAndUnreadableBusIsAWarning) {
  DoctorInput in;
  in.gpu_samples.push_back(failed("library_not_found", "libnvidia-ml.so.1: not found"));
  in.host_samples.push_back(host::HostSnapshot{});  // /sys/bus/pci could not be listed
  expect_finding(find(run(in), "driver.nvml_missing"), Category::kDriver, Severity::kWarning,
                 "Install the NVIDIA driver");
}

// --- Driver not loaded.

TEST(CheckDriver, DriverNotLoadedWithGpus) {
  DoctorInput in;
  in.gpu_samples.push_back(failed("driver_not_loaded", "the NVIDIA kernel driver is not loaded"));
  in.host_samples.push_back(host_with({bus_gpu("0000:18:00.0", std::nullopt)}));
  auto out = run(in);
  const Finding* f = find(out, "driver.not_loaded");
  expect_finding(f, Category::kDriver, Severity::kCritical,
                 "Load it and read why it fails: `sudo modprobe nvidia`");
  EXPECT_EQ(out.size(), 1U) << ids(out);

  in.host_samples.back().pci->gpus.front().driver = "nouveau";
  expect_finding(find(run(in), "driver.not_loaded"), Category::kDriver, Severity::kCritical,
                 "The GPU is bound to nouveau");
}

TEST(CheckDriver, DriverNotLoadedWithoutGpuIsInfo) {
  DoctorInput in;
  in.gpu_samples.push_back(failed("driver_not_loaded", "the NVIDIA kernel driver is not loaded"));
  in.host_samples.push_back(host_with({}));
  expect_finding(find(run(in), "driver.not_loaded"), Category::kDriver, Severity::kInfo,
                 "Nothing to do");
}

// --- Library / kernel module mismatch.

TEST(CheckDriver, LibraryModuleMismatchAfterAnUpgrade) {
  auto fs = std::make_shared<MemFs>();
  fs->add_link("/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1", "libnvidia-ml.so.550.90.07");
  DoctorInput in;
  in.fs = fs;
  in.gpu_samples.push_back(failed("version_mismatch", "LIB_RM_VERSION_MISMATCH"));
  auto h = host_with({bus_gpu("0000:18:00.0")});
  h.system.nvidia_module_loaded = true;
  h.system.nvidia_driver_version = "550.54.15";
  in.host_samples.push_back(h);
  auto out = run(in);
  const Finding* f = find(out, "driver.version_mismatch");
  expect_finding(f, Category::kDriver, Severity::kCritical, "Reboot the machine");
  EXPECT_EQ(f->title, "NVIDIA library 550.90.07 does not match the loaded kernel module 550.54.15");
  EXPECT_EQ(out.size(), 1U) << ids(out);
}

TEST(CheckDriver, MismatchSeenWhileNvmlWorks) {
  DoctorInput in;
  in.gpu_samples.push_back(sample({reading(0)}));
  auto h = host_with({bus_gpu("0000:18:00.0")});
  h.system.nvidia_driver_version = "550.90.07";
  in.host_samples.push_back(h);
  const Finding* f = nullptr;
  auto out = run(in);
  f = find(out, "driver.version_mismatch");
  expect_finding(f, Category::kDriver, Severity::kCritical, "Reboot the machine");
  EXPECT_EQ(f->title, "NVIDIA library 550.54.15 does not match the loaded kernel module 550.90.07");
}

TEST(CheckDriver, NoPermission) {
  DoctorInput in;
  in.gpu_samples.push_back(failed("no_permission", "NO_PERMISSION"));
  in.host_samples.push_back(host_with({bus_gpu("0000:18:00.0")}));
  expect_finding(find(run(in), "driver.no_permission"), Category::kDriver, Severity::kWarning,
                 "Run `cardiac doctor` as root");
}

// --- Hung NVML and nvidia-smi in D state.

TEST(CheckDriver, NvidiaSmiStuckInDStateOnTheCapturedHost) {
  RootFs fs(std::string(CARDIAC_FIXTURES_DIR) + "/hosts/debian-gpu-8x");
  DoctorInput in;
  in.host_samples.push_back(host::collect_host(fs, kT0));
  ASSERT_FALSE(in.host_samples.back().dstate_processes.empty());
  auto out = run(in);
  const Finding* f = find(out, "driver.dstate_nvidia");
  expect_finding(f, Category::kDriver, Severity::kCritical, "Drain the machine and reboot it");
  ASSERT_EQ(f->evidence.size(), 1U);
  EXPECT_EQ(f->evidence.front().kind, "process");
  EXPECT_EQ(f->evidence.front().text,
            "pid 48213 nvidia-smi state D wchan nv_wait_for_completion cmdline: nvidia-smi");
  EXPECT_EQ(out.size(), 1U) << ids(out);
}

TEST(CheckDriver, DStateOutsideTheDriverIsLeftToTheResourcesCheck) {
  auto h = host_with({});
  h.dstate_processes.push_back({101, "jbd2/nvme0n1p1-8", "jbd2_journal_commit_transaction", ""});
  h.dstate_processes.push_back({102, "python3", "nvme_poll", "python3 load.py"});
  DoctorInput in;
  in.host_samples.push_back(h);
  EXPECT_TRUE(run(in).empty());
  // A Python job stuck in the nvidia module counts, whatever its name.
  in.host_samples.back().dstate_processes.push_back(
      {103, "python3", "uvm_va_block_make_resident", "python3 train.py"});
  const Finding* f = nullptr;
  auto out = run(in);
  f = find(out, "driver.dstate_nvidia");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->evidence.size(), 1U);
}

TEST(CheckDriver, DStateThatCameAndWentIsAWarning) {
  auto before = host_with({});
  auto after = before;
  after.taken_at = kT0 + 5 * kNsPerSec;
  after.dstate_processes.push_back({48213, "nvidia-smi", "nv_wait_for_completion", "nvidia-smi"});
  DoctorInput in;
  in.host_samples = {before, after};
  expect_finding(find(run(in), "driver.dstate_nvidia"), Category::kDriver, Severity::kWarning,
                 "Drain the machine");
  in.host_samples = {after, after};
  expect_finding(find(run(in), "driver.dstate_nvidia"), Category::kDriver, Severity::kCritical,
                 "Drain the machine");
}

TEST(CheckDriver, HungGpuNamesTheGpuAndTheStuckProcesses) {
  auto hung = reading(3);
  hung.health = nvml::DeviceHealth::kUnresponsive;
  hung.health_detail = "nvmlDeviceGetTemperature did not return within 5.0 s";
  DoctorInput in;
  in.gpu_samples.push_back(sample({reading(0), reading(1), reading(2), hung}));
  auto h = host_with({});
  h.dstate_processes.push_back({48213, "nvidia-smi", "nv_wait_for_completion", "nvidia-smi"});
  in.host_samples.push_back(h);
  auto out = run(in);
  const Finding* f = find(out, "driver.nvml_hung");
  expect_finding(f, Category::kDriver, Severity::kCritical, "Drain the machine and reboot it");
  EXPECT_EQ(f->gpu.index, 3U);
  EXPECT_EQ(f->gpu.pci_bus_id, "0000:1b:00.0");
  EXPECT_NE(f->explanation.find("nvidia-smi will hang too"), std::string::npos);
  bool process = false;
  for (const auto& e : f->evidence) process = process || e.kind == "process";
  EXPECT_TRUE(process);
  // The D-state finding points at the same GPU.
  const Finding* d = find(out, "driver.dstate_nvidia");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->gpu.index, 3U);
}

TEST(CheckDriver, NvmlInitHungIsCritical) {
  DoctorInput in;
  in.gpu_samples.push_back(failed("unresponsive", "NVML did not finish initialising within 5.0 s"));
  in.host_samples.push_back(host_with({bus_gpu("0000:18:00.0")}));
  expect_finding(find(run(in), "driver.nvml_hung"), Category::kDriver, Severity::kCritical,
                 "Drain the machine and reboot it");
}

TEST(CheckDriver, SlowNvml) {
  auto r = reading(0);
  r.sample_duration_us = 2'500'000;
  r.persistence_mode = false;
  DoctorInput in;
  in.gpu_samples = {sample({r}), sample({r}, kT0 + 5 * kNsPerSec)};
  auto out = run(in);
  expect_finding(find(out, "driver.nvml_slow"), Category::kDriver, Severity::kWarning,
                 "Turn persistence mode on: `sudo nvidia-smi -pm 1`");
  // One slow read among fast ones (a worker start): not slow.
  auto fast = r;
  fast.sample_duration_us = 30'000;
  in.gpu_samples = {sample({r}), sample({fast}), sample({fast})};
  EXPECT_EQ(find(run(in), "driver.nvml_slow"), nullptr);
}

TEST(CheckDriver, NvmlListsNoGpu) {
  DoctorInput in;
  in.gpu_samples.push_back(sample({}));
  in.host_samples.push_back(host_with({}));
  expect_finding(find(run(in), "driver.zero_gpus"), Category::kDriver, Severity::kWarning,
                 "In a container, pass the GPUs in");
  // GPUs on the bus: the hardware check names each one missing from NVML instead.
  in.host_samples = {host_with({bus_gpu("0000:18:00.0")})};
  EXPECT_EQ(find(run(in), "driver.zero_gpus"), nullptr);
}

// --- Configuration and leftovers.

TEST(CheckDriver, PersistenceOffOnDatacenterGpus) {
  auto a = reading(0);
  auto b = reading(1);
  a.persistence_mode = false;
  b.persistence_mode = false;
  DoctorInput in;
  in.gpu_samples.push_back(sample({a, b, reading(2)}));
  auto out = run(in);
  const Finding* f = find(out, "driver.persistence_off");
  expect_finding(f, Category::kConfiguration, Severity::kWarning, "Enable the persistence daemon");
  EXPECT_EQ(f->title, "Persistence mode is off on GPU 0 (0000:18:00.0), GPU 1 (0000:19:00.0)");
  EXPECT_TRUE(f->gpu.empty()) << "several GPUs: one host-wide finding";

  // A desktop card runs without persistence by design.
  a.name = "NVIDIA GeForce RTX 4090";
  in.gpu_samples = {sample({a})};
  EXPECT_EQ(find(run(in), "driver.persistence_off"), nullptr);
}

TEST(CheckDriver, OrphanedGpuMemory) {
  auto r = reading(0);
  r.processes.push_back({4242, 10ULL << 30, "", "compute"});
  r.processes.push_back({4243, 1ULL << 30, "python3", "compute"});
  DoctorInput in;
  in.gpu_samples.push_back(sample({r}));
  ProcessActivity gone;
  gone.pid = 4242;
  gone.exists = false;
  ProcessActivity alive;
  alive.pid = 4243;
  in.gpu_processes = {gone, alive};
  auto out = run(in);
  const Finding* f = find(out, "driver.orphaned_gpu_memory");
  expect_finding(f, Category::kDriver, Severity::kWarning,
                 "Find what still holds the GPU: `sudo fuser -v /dev/nvidia*`");
  EXPECT_EQ(f->title,
            "10.0 GiB of GPU memory on GPU 0 (0000:18:00.0, serial 1654922001200) is held by "
            "process(es) that no longer exist");
  EXPECT_EQ(f->confidence, Confidence::kMedium);
  ASSERT_EQ(f->evidence.size(), 1U);
  EXPECT_NE(f->evidence.front().text.find("pid 4242"), std::string::npos);

  // Without process activity, /proc decides; in a container its /proc is not the host's.
  auto fs = std::make_shared<MemFs>();
  fs->add_file("/proc/4243/stat", "4243 (python3) S");
  in.gpu_processes.clear();
  in.fs = fs;
  out = run(in);
  f = find(out, "driver.orphaned_gpu_memory");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->evidence.size(), 1U);
  fs->add_file("/.dockerenv", "");
  out = run(in);
  f = find(out, "driver.orphaned_gpu_memory");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->confidence, Confidence::kLow);
  fs->add_file("/proc/4242/stat", "4242 (python3) S");
  EXPECT_EQ(find(run(in), "driver.orphaned_gpu_memory"), nullptr);
}

TEST(CheckDriver, HealthyMachineHasNoDriverFindings) {
  DoctorInput in;
  in.gpu_samples.push_back(sample({reading(0), reading(1)}));
  auto h = host_with({bus_gpu("0000:18:00.0"), bus_gpu("0000:19:00.0")});
  h.system.nvidia_module_loaded = true;
  h.system.nvidia_driver_version = "550.54.15";
  in.host_samples.push_back(h);
  auto out = run(in);
  EXPECT_TRUE(out.empty()) << ids(out);
  // Offline (no NVML asked): nothing about NVML either.
  in.gpu_samples.clear();
  EXPECT_TRUE(run(in).empty());
}

}  // namespace
}  // namespace cardiac::doctor
