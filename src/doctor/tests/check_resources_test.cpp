// SPDX-License-Identifier: Apache-2.0
// The "why is it slow" triage and the host resource checks, on hand-built inputs and on the
// iowait-bottleneck fixture host.
#include <gtest/gtest.h>

#include <algorithm>

#include "doctor/checks/checks.h"
#include "platform/fs.h"

namespace cardiac::doctor {
namespace {

const std::string kIowait = std::string(CARDIAC_FIXTURES_DIR) + "/hosts/iowait-bottleneck";
const std::string kHost8x = std::string(CARDIAC_FIXTURES_DIR) + "/hosts/debian-gpu-8x";

nvml::GpuReading gpu(unsigned index, unsigned util, std::uint32_t pid = 0) {
  nvml::GpuReading g;
  g.index = index;
  g.pci_bus_id = "0000:18:00.0";
  g.uuid = "GPU-26a72a14-4d39-f4c4-fb53-83b3364dfcb3";
  g.utilization_gpu = util;
  g.memory_total = 80ULL << 30;
  g.memory_used = 30ULL << 30;
  g.clock_event_reasons = 0;
  if (pid != 0) {
    nvml::GpuProcess p;
    p.pid = pid;
    p.name = "python3";
    p.type = "compute";
    p.used_memory_bytes = 30ULL << 30;
    g.processes.push_back(p);
  }
  return g;
}

DoctorInput with_gpus(std::vector<nvml::GpuReading> gpus, int samples = 3) {
  DoctorInput in;
  in.now = 1700000001000000000;
  for (int i = 0; i < samples; ++i) {
    nvml::GpuSnapshot s;
    s.available = true;
    s.taken_at = in.now - (samples - i) * kNsPerSec;
    s.gpus = gpus;
    for (auto& g : s.gpus) g.sampled_at = s.taken_at;
    in.gpu_samples.push_back(s);
  }
  in.host_samples.emplace_back();
  return in;
}

// The two captured snapshots of the starved host: iowait 45 %, nvme0n1 98.5 % busy.
void add_iowait_host(DoctorInput& in) {
  RootFs t0(kIowait + "/t0");
  RootFs t1(kIowait + "/t1");
  in.host_samples = {host::collect_host(t0, 1700000000000000000),
                     host::collect_host(t1, 1700000001000000000)};
  in.rates = host::compute_rates(in.host_samples[0], in.host_samples[1]);
}

ProcessActivity activity(std::uint32_t pid, double top_thread_pct) {
  ProcessActivity a;
  a.pid = pid;
  a.comm = "python3";
  a.cpu_percent = top_thread_pct + 3;
  a.threads = {{.tid = pid, .comm = "python3", .state = 'R', .cpu_percent = top_thread_pct},
               {.tid = pid + 14, .comm = "pt_pin_memory", .state = 'S', .cpu_percent = 3}};
  a.gpus = {0};
  return a;
}

std::vector<Finding> run_resources(const DoctorInput& in) {
  std::vector<Finding> out;
  check_resources(in, out);
  return out;
}

const Finding* find_resource(const std::vector<Finding>& fs, std::string_view id) {
  auto it = std::find_if(fs.begin(), fs.end(), [&](const Finding& f) { return f.id == id; });
  return it == fs.end() ? nullptr : &*it;
}

TEST(CheckResources, IdleGpuWithSaturatedDiskIsADataLoadingBottleneck) {
  auto in = with_gpus({gpu(0, 9, 51820)});
  add_iowait_host(in);
  in.gpu_processes = {activity(51820, 12)};
  auto out = run_resources(in);
  const Finding* f = find_resource(out, "resources.gpu_starved");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->category, Category::kResources);
  EXPECT_EQ(f->severity, Severity::kWarning);
  EXPECT_NE(f->title.find("data loading"), std::string::npos) << f->title;
  EXPECT_NE(f->explanation.find("nvme0n1"), std::string::npos) << f->explanation;
  ASSERT_FALSE(f->actions.empty());
  EXPECT_NE(f->actions[0].find("iostat"), std::string::npos);
  // The utilization series is there for a chart, and the disk evidence names the mount.
  ASSERT_FALSE(f->evidence.empty());
  EXPECT_EQ(f->evidence[0].series.size(), 3U);
  bool disk = std::any_of(f->evidence.begin(), f->evidence.end(), [](const Evidence& e) {
    return e.text.find("nvme0n1") != std::string::npos &&
           e.text.find("98.5 %") != std::string::npos;
  });
  EXPECT_TRUE(disk);
  // Reported once, as the GPU's cause, not again as plain host iowait.
  EXPECT_EQ(find_resource(out, "resources.io_wait"), nullptr);
}

TEST(CheckResources, BusyFeedingThreadIsCpuBoundEvenWithIoWait) {
  auto in = with_gpus({gpu(0, 20, 51820)});
  add_iowait_host(in);
  in.gpu_processes = {activity(51820, 99)};
  auto out = run_resources(in);
  const Finding* f = find_resource(out, "resources.gpu_starved");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->title.find("CPU-bound"), std::string::npos) << f->title;
  EXPECT_NE(f->actions[0].find("py-spy"), std::string::npos);
}

TEST(CheckResources, ThrottlingExplainsAnIdleGpuFirst) {
  auto g = gpu(0, 30, 4242);
  g.clock_event_reasons = 0x40;  // HW thermal slowdown
  auto in = with_gpus({g});
  in.gpu_processes = {activity(4242, 99)};
  auto out = run_resources(in);
  const Finding* f = find_resource(out, "resources.gpu_starved");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->title.find("slowed down"), std::string::npos) << f->title;
}

TEST(CheckResources, NoVisibleCauseSaysSoWithLowConfidence) {
  auto in = with_gpus({gpu(0, 10, 4242)});
  in.gpu_processes = {activity(4242, 20)};
  auto out = run_resources(in);
  const Finding* f = find_resource(out, "resources.gpu_starved");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->confidence, Confidence::kLow);
  EXPECT_NE(f->title.find("no local bottleneck"), std::string::npos);
}

TEST(CheckResources, ShortWindowLowersConfidenceAndSaysSo) {
  auto in = with_gpus({gpu(0, 9, 51820)}, 1);
  add_iowait_host(in);
  auto out = run_resources(in);
  const Finding* f = find_resource(out, "resources.gpu_starved");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->confidence, Confidence::kMedium);
  EXPECT_NE(f->explanation.find("--window"), std::string::npos);
}

TEST(CheckResources, BusyOrUnheldGpusAreNotStarved) {
  auto in = with_gpus({gpu(0, 97, 4242), gpu(1, 0)});
  add_iowait_host(in);
  auto out = run_resources(in);
  EXPECT_EQ(find_resource(out, "resources.gpu_starved"), nullptr);
  // The host still waits on its disk: that is reported on its own.
  EXPECT_NE(find_resource(out, "resources.io_wait"), nullptr);
}

TEST(CheckResources, SaturatedPcieLinkIsNamed) {
  auto g = gpu(0, 25, 4242);
  g.pcie_gen_current = 4;
  g.pcie_width_current = 16;
  g.pcie_rx_kb_per_s = 29000000;  // 29 GB/s of ~31.5
  auto in = with_gpus({g});
  auto out = run_resources(in);
  const Finding* f = find_resource(out, "resources.gpu_starved");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->title.find("PCIe"), std::string::npos) << f->title;
}

TEST(CheckResources, NearlyFullVramAdvisesBatchSizeAndMixedPrecision) {
  auto g = gpu(0, 95, 4242);
  g.memory_used = g.memory_total.value() / 100 * 97;
  auto in = with_gpus({g});
  auto out = run_resources(in);
  const Finding* f = find_resource(out, "resources.vram_full");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kWarning);
  EXPECT_NE(f->actions[0].find("batch size"), std::string::npos);
  bool mixed = std::any_of(f->actions.begin(), f->actions.end(), [](const std::string& a) {
    return a.find("mixed precision") != std::string::npos;
  });
  EXPECT_TRUE(mixed);

  // Two processes on one full GPU: sharing is the first thing to fix.
  nvml::GpuProcess other;
  other.pid = 4300;
  other.type = "compute";
  g.processes.push_back(other);
  auto shared = run_resources(with_gpus({g}));
  const Finding* s = find_resource(shared, "resources.vram_full");
  ASSERT_NE(s, nullptr);
  EXPECT_NE(s->actions[0].find("Several processes"), std::string::npos);
}

TEST(CheckResources, HostDiskMemoryAndSwap) {
  DoctorInput in;
  host::HostSnapshot h;
  host::FilesystemUsage full;
  full.mount_point = "/data";
  full.device = "/dev/nvme0n1p1";
  full.fs_type = "xfs";
  full.total = 1000;
  full.free = 10;
  full.available = 10;
  h.filesystems.push_back(full);
  host::MemInfo m;
  m.total = 1000;
  m.available = 5;
  m.swap_total = 1000;
  m.swap_free = 400;
  h.memory = m;
  in.host_samples.push_back(h);
  auto out = run_resources(in);
  const Finding* disk = find_resource(out, "resources.disk_full");
  ASSERT_NE(disk, nullptr);
  EXPECT_EQ(disk->severity, Severity::kCritical);
  EXPECT_NE(disk->title.find("/data"), std::string::npos);
  const Finding* mem = find_resource(out, "resources.memory_low");
  ASSERT_NE(mem, nullptr);
  EXPECT_EQ(mem->severity, Severity::kCritical);  // 0.5 % left
  EXPECT_NE(find_resource(out, "resources.swapping"), nullptr);
}

TEST(CheckResources, HealthyCapturedHostHasNoResourceFindings) {
  DoctorInput in;
  RootFs fs(kHost8x);
  in.host_samples.push_back(host::collect_host(fs, 1700000000000000000));
  auto out = run_resources(in);
  for (const auto& f : out) ADD_FAILURE() << f.id << ": " << f.title;
}

}  // namespace
}  // namespace cardiac::doctor
